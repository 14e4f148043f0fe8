"""Claim checks for poly-attention: function composition, exactness, quadratic scaling."""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from iclr26.claims import Context, Result, claim, slope_guide  # noqa: E402

from .experiments import PolyadicClassifier, train_classifier  # noqa: E402
from .functional import poly_attention  # noqa: E402
from .tasks import function_composition  # noqa: E402

SLUG = "poly_attention"


# name: (polynomial, heads, layers)
MODELS = {
    "tree_1layer": ("tree:path:2", 1, 1),
    "self_attention_1layer": ("self", 4, 1),
    "self_attention_2layer": ("self", 4, 2),
    "strassen_1layer": ("strassen", 1, 1),
}


def _epochs_to(curve: list[float], level: float) -> float:
    hits = [k + 1 for k, acc in enumerate(curve) if acc >= level]
    return float(hits[0]) if hits else float("inf")


@claim(
    paper=SLUG,
    name="function-composition",
    statement="One layer of tree-attention (x1 x2 + x2 x3) learns 2-fold function composition, "
    "which one layer of self-attention cannot, and learns it in no more epochs than two layers "
    "of self-attention",
    paper_value="1-layer tree-attention learns 2-fold composition (length 25) faster in epochs "
    "than 2-layer self-attention; 1-layer self-attention fails (numbers not retrieved)",
    criterion="mean test acc(tree) >= 0.95 and mean acc(1-layer SA) <= 0.40 and "
    "epochs to 95% (tree) <= epochs to 95% (2-layer SA); partial if the first two hold",
    timeout_s={"quick": 900},
)
def function_composition_claim(ctx: Context) -> Result:
    # Quick sizes come from a CPU budget (about 75 single-thread CPU seconds for the three
    # models); full scale keeps the reference protocol (20k samples, 30 epochs, d_model 64,
    # two seeds).
    n_train, epochs, seeds = ctx.pick((128, 1, (0,)), (16384, 20, (0,)), (20000, 30, (0, 1)))
    n_test, dim = ctx.pick(64, 1000, 2000), ctx.pick(16, 32, 64)
    names = ["tree_1layer", "self_attention_1layer", "self_attention_2layer"]
    if ctx.scale.value == "full":
        names.append("strassen_1layer")
    runs: dict[str, list] = {k: [] for k in names}
    jobs = [(k, s) for s in seeds for k in names]
    for j, (name, seed) in enumerate(jobs):
        train = [torch.from_numpy(a) for a in function_composition(12, n_train, seed=seed)]
        test = [torch.from_numpy(a) for a in function_composition(12, n_test, seed=seed + 500)]
        polynomial, heads, layers = MODELS[name]
        torch.manual_seed(ctx.seed + seed)
        model = PolyadicClassifier([3, 12, 13], 12, polynomial, heads, layers, dim=dim)
        curve, sec = train_classifier(
            model, train, test, epochs, batch_size=256, lr=1e-3, seed=ctx.seed + seed
        )
        runs[name].append(
            {
                "curve": curve,
                "final": curve[-1],
                "epochs_to_95": _epochs_to(curve, 0.95),
                "seconds_per_epoch": sec,
            }
        )
        ctx.report((j + 1) / len(jobs), f"{name} seed {seed}: {curve[-1]:.3f}")
    summary = {
        name: {
            "acc_mean": float(np.mean([r["final"] for r in rs])),
            "acc_std": float(np.std([r["final"] for r in rs])),
            "epochs_to_95": float(np.mean([r["epochs_to_95"] for r in rs])),
            "seconds_per_epoch": float(np.mean([r["seconds_per_epoch"] for r in rs])),
            "curves": [r["curve"] for r in rs],
        }
        for name, rs in runs.items()
    }
    tree, sa1, sa2 = (summary[k] for k in names[:3])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, s in summary.items():
        ax.plot(range(1, epochs + 1), np.mean(s["curves"], axis=0), marker=".", label=name)
    ax.axhline(1 / 12, color="gray", ls=":", label="chance")
    ctx.mark_threshold(ax, 0.95, "tree: final >= 0.95 (and reach it first)", color="tab:blue")
    ctx.mark_threshold(ax, 0.40, "1-layer SA: final <= 0.40", color="tab:orange")
    ax.set(xlabel="epoch", ylabel="test accuracy", title="2-fold function composition, n = 25")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "tree": tree,
            "n_train": n_train,
            "n_test": n_test,
            "epochs": epochs,
            "d_model": dim,
            "batch_size": 256,
            "seeds": list(seeds),
        },
        baseline={k: v for k, v in summary.items() if k != "tree_1layer"},
        required={
            "acc(tree) >= 0.95": tree["acc_mean"] >= 0.95,
            "acc(1-layer SA) <= 0.40": sa1["acc_mean"] <= 0.40,
            # a tree that never reaches 95 % fails this too (inf <= inf would pass)
            "epochs95(tree) finite and <= epochs95(2-layer SA)": bool(
                np.isfinite(tree["epochs_to_95"]) and tree["epochs_to_95"] <= sa2["epochs_to_95"]
            ),
        },
        partial={
            "acc(tree) >= 0.95": tree["acc_mean"] >= 0.95,
            "acc(1-layer SA) <= 0.40": sa1["acc_mean"] <= 0.40,
        },
    )
    return ctx.save_judged(fig, SLUG, "function-composition", result)


def _slope(ns, ts) -> float:
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def counted_flops(fn) -> int:
    """FLOPs of one call as torch's dispatcher-level counter sees them (matrix products:
    ``mm``, ``bmm``, and the products ``einsum`` lowers to), independent of machine load."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


@claim(
    paper=SLUG,
    name="exact-quadratic-tree-attention",
    statement="Tree-attention is computed exactly in quadratic time, while 3-tensor attention "
    "needs cubic time",
    paper_value="tree polynomials: exact n^(2+o(1)); tensor/Strassen: superquadratic lower bounds",
    criterion="max |tree - brute| <= 1e-9 (float64) and <= 1e-4 (float32) at n in {8, 16}; "
    "log-log slope of counted FLOPs (torch FlopCounterMode, load-free) over n: tree <= 2.3 and "
    "tensor3 (brute) >= 2.7 (d = 32, batch 1); wall-clock and CPU-time slopes (ctx.timeit, "
    "2 threads, minimum over repeats) reported beside them",
    timeout_s={"quick": 300},
    cpus=2,  # times 2-thread calls: run without another claim beside it
)
def exact_quadratic(ctx: Context) -> Result:
    gen = ctx.torch_generator()
    errors = {}
    for dtype, name in ((torch.float64, "float64"), (torch.float32, "float32")):
        worst = 0.0
        for n in ctx.pick((6,), (8, 16), (8, 16)):
            for poly in ("tree:path:2", "tree:path:3", "tree:star:3"):
                t = 1 + int(poly.rsplit(":", 1)[1])
                q = [torch.randn(2, n, 8, generator=gen, dtype=dtype) * 2 for _ in range(t)]
                v = [None] + [
                    torch.randn(2, n, 4, generator=gen, dtype=dtype) for _ in range(t - 1)
                ]
                for causal in (False, True):
                    a = poly_attention(q, v, poly, causal=causal, backend="tree")
                    b = poly_attention(q, v, poly, causal=causal, backend="brute")
                    worst = max(worst, float((a - b).abs().max()))
        errors[name] = worst
    d, repeats = 32, ctx.pick(1, 5, 5)
    sizes = {
        "tree:path:2": ctx.pick((16, 32), (128, 256, 512, 1024), (128, 256, 512, 1024, 2048)),
        "self": ctx.pick((16, 32), (128, 256, 512, 1024), (128, 256, 512, 1024, 2048)),
        "tensor3": ctx.pick((8, 16), (64, 96, 128, 192, 256), (64, 96, 128, 192, 256, 384)),
        "strassen": ctx.pick((8, 16), (64, 96, 128, 192, 256), (64, 96, 128, 192, 256, 384)),
    }
    series = {}
    for k, (poly, ns) in enumerate(sizes.items()):
        t = 2 if poly == "self" else 3
        backend = "brute" if poly == "tensor3" else "auto"
        flops, walls, cpus, timings = [], [], [], []
        for n in ns:
            q = [torch.randn(1, n, d, generator=gen) for _ in range(t)]
            v = [None] + [torch.randn(1, n, d, generator=gen) for _ in range(t - 1)]
            call = functools.partial(poly_attention, q, v, poly, backend=backend)

            def fn(call=call):
                with torch.no_grad():
                    return call()

            flops.append(counted_flops(fn))
            timing = ctx.timeit(fn, repeat=repeats, warmup=1, threads=2, max_total_s=30.0)
            timing.count(flops=flops[-1], n=n)
            walls.append(timing.wall_s)
            cpus.append(timing.cpu_s)
            timings.append(timing.to_dict())
        series[poly] = {
            "n": list(ns),
            "flops": flops,
            "wall_s": walls,
            "cpu_s": cpus,
            "slope_flops": _slope(ns, flops),
            "slope_wall": _slope(ns, walls),
            "slope_cpu": _slope(ns, cpus),
            "timings": timings,
        }
        ctx.report((k + 1) / len(sizes), poly)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    panels = (
        (axes[0], "flops", "slope_flops", "counted FLOPs per forward", "decides: load-free count"),
        (axes[1], "wall_s", "slope_wall", "wall-clock seconds (min)", "reported: 2 threads"),
    )
    for ax, key, slope_key, ylabel, title in panels:
        for poly, rec in series.items():
            ax.plot(rec["n"], rec[key], marker="o", label=f"{poly} ({rec[slope_key]:.2f})")
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel=ylabel)
        ax.set_title(f"forward, d = 32, batch 1 — {title}", fontsize=9)
    tree, t3 = series["tree:path:2"], series["tensor3"]
    # the judged slopes (counted FLOPs): tree at most 2.3, tensor3 at least 2.7
    slope_guide(axes[0], tree["n"], tree["flops"], 2.3, "tree slope <= 2.3")
    slope_guide(axes[0], t3["n"], t3["flops"], 2.7, "tensor3 slope >= 2.7", linestyle=":")
    for ax in axes:
        ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "max_err_float64": errors["float64"],
            "max_err_float32": errors["float32"],
            "slope_flops_tree": tree["slope_flops"],
            "slope_wall_tree": tree["slope_wall"],
            "slope_cpu_tree": tree["slope_cpu"],
            "tree": tree,
            # The spec's wall-clock protocol, reported beside the count that decides.
            "wall_criterion_holds": bool(tree["slope_wall"] <= 2.3 and t3["slope_wall"] >= 2.7),
        },
        baseline={
            "slope_flops_tensor3": t3["slope_flops"],
            "slope_wall_tensor3": t3["slope_wall"],
            "slope_flops_self": series["self"]["slope_flops"],
            "slope_flops_strassen": series["strassen"]["slope_flops"],
            "series": {k: v for k, v in series.items() if k != "tree:path:2"},
        },
        required={
            "float64 error <= 1e-9": errors["float64"] <= 1e-9,
            "float32 error <= 1e-4": errors["float32"] <= 1e-4,
            "FLOPs slope(tree) <= 2.3": tree["slope_flops"] <= 2.3,
            "FLOPs slope(tensor3) >= 2.7": t3["slope_flops"] >= 2.7,
        },
    )
    return ctx.save_judged(fig, SLUG, "exact-quadratic-tree-attention", result)
