"""Claim checks for lmKAN: FLOPs and CPU throughput at matched accuracy, O(1) lookup cost."""

from __future__ import annotations

import math
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from iclr26.claims import Context, Result, claim  # noqa: E402

from .layer import LMKAN2d  # noqa: E402
from .models import LMKANMLP, train_regressor  # noqa: E402
from .tasks import displaced_methane, random_teacher  # noqa: E402

SLUG = "lmkan"
MLP_WIDTHS = (16, 32, 64, 128, 256)
LMKAN_WIDTHS = (4, 8, 16, 32)
REFERENCE_WIDTH = 128


class MLP(nn.Module):
    """Baseline: two hidden GELU layers."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int = 1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def flops(self, batch: int = 1) -> int:
        """``2 * in * out + out`` per Linear, 1 per element per GELU."""
        total = 0
        for m in self.net:
            if isinstance(m, nn.Linear):
                total += 2 * m.in_features * m.out_features + m.out_features
            else:
                total += self.net[0].out_features
        return batch * total


def _fit_families(ctx: Context, x_tr, y_tr, x_te, y_te, epochs: int, mlp_widths, kan_widths):
    """Train both families with the same loop, epochs, batch size and seed; test MSE each."""
    torch.set_num_threads(2)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr).unsqueeze(1)
    xe, ye = torch.from_numpy(x_te), torch.from_numpy(y_te).unsqueeze(1)
    rows = []
    jobs = [("mlp", w) for w in mlp_widths] + [("lmkan", w) for w in kan_widths]
    for k, (family, width) in enumerate(jobs):
        torch.manual_seed(ctx.seed)
        if family == "mlp":
            model = MLP(x_tr.shape[1], width)
        else:
            model = LMKANMLP(x_tr.shape[1], width, 1, depth=2, num_grids=8)
        train_regressor(model, xt, yt, epochs, batch_size=256, lr=1e-3, seed=ctx.seed)
        with torch.no_grad():
            mse = float(((model(xe) - ye) ** 2).mean())
        rows.append(
            {
                "family": family,
                "width": width,
                "flops": model.flops(),
                "mse": mse,
                "params": sum(p.numel() for p in model.parameters()),
                "model": model,
            }
        )
        ctx.report((k + 1) / len(jobs), f"{family} width {width}: mse {mse:.4f}")
    return rows


def flops_to_reach(points: list[tuple[float, float]], target: float) -> float | None:
    """FLOPs a family needs to reach ``target`` error: log-log interpolation on its Pareto front
    (running minimum of the error over increasing FLOPs); ``None`` if never reached."""
    front: list[tuple[float, float]] = []
    for flops, err in sorted(points):
        if not front or err < front[-1][1]:
            front.append((flops, err))
    for k, (flops, err) in enumerate(front):
        if err <= target:
            if k == 0:
                return flops
            f0, e0 = front[k - 1]
            frac = (math.log(e0) - math.log(target)) / (math.log(e0) - math.log(err))
            return math.exp(math.log(f0) + frac * (math.log(flops) - math.log(f0)))
    return None


def _throughput(model: nn.Module, x: torch.Tensor, warmup: int, repeats: int) -> float:
    """Samples per CPU second of this process (median over repeats, all its threads): unlike
    wall-clock time, CPU time does not count time given to other jobs on a shared machine."""
    model.eval()
    times = []
    with torch.no_grad():
        for k in range(warmup + repeats):
            start = time.process_time()
            model(x)
            if k >= warmup:
                times.append(time.process_time() - start)
    return x.shape[0] / max(float(np.median(times)), 1e-9)


def _front_figure(ctx: Context, name: str, rows, target: float, ylabel: str) -> str:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for family, marker in (("mlp", "o"), ("lmkan", "s")):
        pts = sorted((r["flops"], r["mse"]) for r in rows if r["family"] == family)
        ax.plot(*zip(*pts), marker=marker, label=family)
    ax.axhline(target, color="gray", ls="--", label=f"target (MLP width {REFERENCE_WIDTH})")
    ax.set(xscale="log", yscale="log", xlabel="inference FLOPs / sample", ylabel=ylabel)
    ax.legend()
    fig.tight_layout()
    path = ctx.figure_path(SLUG, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def _table(rows) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "model"} for r in rows]


@claim(
    paper=SLUG,
    name="flops-at-matched-accuracy",
    statement="lmKAN networks need fewer inference FLOPs than MLPs to reach the same accuracy "
    "on general high-dimensional function approximation",
    paper_value="up to 6.0x fewer FLOPs than MLPs at matched accuracy",
    criterion="FLOPs_MLP(m*) / FLOPs_lmKAN(m*) >= 2.0 with m* = test MSE of the width-128 MLP "
    "(random tanh-teacher regression, R^32 -> R); partial if in [1.0, 2.0)",
)
def flops_at_matched_accuracy(ctx: Context) -> Result:
    n_train, n_test, epochs = ctx.pick((300, 200, 1), (10000, 3000, 15), (100000, 20000, 100))
    mlp_widths = ctx.pick((16, 128), MLP_WIDTHS, MLP_WIDTHS)
    kan_widths = ctx.pick((4,), LMKAN_WIDTHS, LMKAN_WIDTHS)
    x_tr, y_tr = random_teacher(n_train, seed=ctx.seed)
    x_te, y_te = random_teacher(n_test, seed=ctx.seed + 1000)
    rows = _fit_families(ctx, x_tr, y_tr, x_te, y_te, epochs, mlp_widths, kan_widths)
    target = next(r["mse"] for r in rows if r["family"] == "mlp" and r["width"] == REFERENCE_WIDTH)
    f_mlp = flops_to_reach([(r["flops"], r["mse"]) for r in rows if r["family"] == "mlp"], target)
    f_kan = flops_to_reach([(r["flops"], r["mse"]) for r in rows if r["family"] == "lmkan"], target)
    ratio = f_mlp / f_kan if f_kan else 0.0
    figure = _front_figure(ctx, "flops-at-matched-accuracy", rows, target, "test MSE")
    return Result.judge(
        metrics={
            "target_mse": target,
            "lmkan_flops_at_target": f_kan,
            "flops_ratio_mlp_over_lmkan": ratio,
            "epochs": epochs,
            "n_train": n_train,
            "lmkan_runs": [r for r in _table(rows) if r["family"] == "lmkan"],
        },
        baseline={
            "mlp_flops_at_target": f_mlp,
            "mlp_runs": [r for r in _table(rows) if r["family"] == "mlp"],
        },
        required={"FLOPs ratio MLP/lmKAN >= 2.0": ratio >= 2.0},
        partial={"FLOPs ratio MLP/lmKAN >= 1.0": ratio >= 1.0},
        figures=[figure],
    )


@claim(
    paper=SLUG,
    name="cpu-throughput-at-matched-accuracy",
    statement="At equal accuracy on randomly displaced methane, lmKAN networks have higher "
    "inference throughput than MLPs (CPU analogue of the H100 claim)",
    paper_value=">10x higher H100 throughput at equal accuracy (custom CUDA kernels)",
    criterion="throughput(smallest lmKAN with RMSE <= RMSE of the width-128 MLP) / "
    "throughput(smallest such MLP) >= 2.0 (batch 8192, no_grad, 2 threads, median); "
    "partial if in [1.0, 2.0)",
)
def cpu_throughput(ctx: Context) -> Result:
    n_train, n_test, epochs = ctx.pick((300, 200, 1), (10000, 3000, 15), (30000, 5000, 100))
    mlp_widths = ctx.pick((16, 128), MLP_WIDTHS, MLP_WIDTHS)
    kan_widths = ctx.pick((4,), LMKAN_WIDTHS, LMKAN_WIDTHS)
    warmup, repeats, batch = ctx.pick((1, 2, 256), (5, 20, 8192), (5, 20, 8192))
    x_tr, y_tr = displaced_methane(n_train, seed=ctx.seed)
    x_te, y_te = displaced_methane(n_test, seed=ctx.seed + 1000)
    x_tr, x_te = np.pad(x_tr, ((0, 0), (0, 1))), np.pad(x_te, ((0, 0), (0, 1)))
    rows = _fit_families(ctx, x_tr, y_tr, x_te, y_te, epochs, mlp_widths, kan_widths)
    for r in rows:
        r["rmse"] = math.sqrt(r["mse"])
    target = next(r["rmse"] for r in rows if r["family"] == "mlp" and r["width"] == REFERENCE_WIDTH)
    x_bench = torch.randn(batch, x_tr.shape[1])
    chosen = {}
    for family in ("mlp", "lmkan"):
        ok = [r for r in rows if r["family"] == family and r["rmse"] <= target]
        if ok:
            best = min(ok, key=lambda r: r["flops"])
            best["throughput"] = _throughput(best["model"], x_bench, warmup, repeats)
            chosen[family] = best
    kan, mlp = chosen.get("lmkan"), chosen["mlp"]
    ratio = kan["throughput"] / mlp["throughput"] if kan else 0.0
    flops_ratio = mlp["flops"] / kan["flops"] if kan else 0.0
    figure = _front_figure(
        ctx, "cpu-throughput-at-matched-accuracy", rows, target**2, "test MSE (standardised energy)"
    )
    summary = {k: {key: v for key, v in r.items() if key != "model"} for k, r in chosen.items()}
    return Result.judge(
        metrics={
            "target_rmse": target,
            "throughput_ratio_lmkan_over_mlp": ratio,
            "flops_ratio_mlp_over_lmkan": flops_ratio,
            "lmkan_chosen": summary.get("lmkan"),
            "lmkan_runs": [r for r in _table(rows) if r["family"] == "lmkan"],
            "threads": torch.get_num_threads(),
            "batch": batch,
        },
        baseline={
            "mlp_chosen": summary["mlp"],
            "mlp_runs": [r for r in _table(rows) if r["family"] == "mlp"],
        },
        required={"throughput ratio lmKAN/MLP >= 2.0": ratio >= 2.0},
        partial={"throughput ratio lmKAN/MLP >= 1.0": ratio >= 1.0},
        figures=[figure],
        note="CPU analogue; the paper's >10x is an H100 custom-kernel number",
    )


@claim(
    paper=SLUG,
    name="lookup-cost-independent-of-grid",
    statement="An lmKAN layer's evaluation cost does not depend on the grid size (O(1) lookup), "
    "while its parameter count grows as (G+1)^2",
    paper_value="inference FLOPs 2x a linear layer of the same shape, independent of NUM_GRIDS",
    criterion="forward time of LMKAN2d(256, 256) at G=26 / at G=4 <= 1.5 (batch 4096, 2 threads); "
    "lmKAN/Linear and dense-evaluation/lookup times reported",
)
def lookup_cost(ctx: Context) -> Result:
    torch.set_num_threads(2)
    width = ctx.pick(64, 256, 256)
    batch, dense_batch, repeats = ctx.pick((256, 16, 2), (4096, 256, 7), (4096, 512, 15))
    grids = (4, 10, 26)
    x = torch.randn(batch, width)
    x_dense = torch.randn(dense_batch, width)

    def per_sample(module: nn.Module, inputs: torch.Tensor) -> float:
        return 1.0 / _throughput(module, inputs, 2, repeats)

    t_linear = per_sample(nn.Linear(width, width), x)
    lookup, dense, params = {}, {}, {}
    for k, grid in enumerate(grids):
        layer = LMKAN2d(width, width, grid)
        lookup[grid] = per_sample(layer, x)
        layer.backend = "dense"
        dense[grid] = per_sample(layer, x_dense)
        params[grid] = layer.table.numel()
        ctx.report((k + 1) / len(grids), f"G={grid}")
    growth = lookup[26] / lookup[4]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(grids, [lookup[g] * 1e6 for g in grids], "s-", label="lmKAN lookup (embedding_bag)")
    ax.plot(grids, [dense[g] * 1e6 for g in grids], "^-", label="lmKAN naive dense basis")
    ax.axhline(t_linear * 1e6, color="gray", ls="--", label="nn.Linear")
    ax.set(
        yscale="log",
        xlabel="grid intervals G",
        ylabel="forward CPU time per sample (us)",
        title=f"{width}x{width} layer, 2 threads",
    )
    ax.legend()
    fig.tight_layout()
    path = ctx.figure_path(SLUG, "lookup-cost-independent-of-grid")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Result.judge(
        metrics={
            "time_ratio_G26_over_G4": growth,
            "lookup_us_per_sample": {str(g): lookup[g] * 1e6 for g in grids},
            "dense_over_lookup": {str(g): dense[g] / lookup[g] for g in grids},
            "lmkan_over_linear": {str(g): lookup[g] / t_linear for g in grids},
            "table_params": {str(g): params[g] for g in grids},
            "flops_lmkan_over_linear": LMKAN2d(width, width).flops() / (2 * width * width),
        },
        baseline={"linear_us_per_sample": t_linear * 1e6, "linear_params": width * width + width},
        required={"t(G=26) / t(G=4) <= 1.5": growth <= 1.5},
        figures=[str(path)],
    )
