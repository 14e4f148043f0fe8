"""Claim checks of FlexRL on the small analogue: a real on-disk multimodal corpus (scikit-image
photos as PNG/JPEG images and motion-JPEG clips, heavy-tailed token lengths), TinyVLM policies
on Ray worker actors, the same GRPO step on the veRL-like :class:`CentralizedPipeline` and on
:class:`FlexRLPipeline`, same batches and seeds, in one run.

C1 load balance (measured per-worker CPU busy time in log-prob inference), C2 end-to-end
throughput (samples/s, wall clock and the load-free critical path; plus a workers 1 -> 2
scaling table), C3 controller bytes per step. The three claims share one measured run."""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from iclr26.claims import Context, Result, claim  # noqa: E402
from iclr26.rl.flexrl.data import build_multimodal_corpus  # noqa: E402
from iclr26.rl.flexrl.model import TinyVLM  # noqa: E402
from iclr26.rl.flexrl.pipeline import (  # noqa: E402
    CentralizedPipeline,
    FlexRLPipeline,
    ensure_ray,
)
from iclr26.rl.flexrl.planner import flops_cost_model, plan_equal_count  # noqa: E402
from iclr26.rl.grpo import GRPOConfig  # noqa: E402

SLUG = "flexrl"
T_NEW = 8


def settings(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(corpus=8, batch=4, steps=1, warmup=0, workers=2, scaling=()),
        quick=dict(corpus=64, batch=16, steps=3, warmup=1, workers=2, scaling=(1, 2)),
        full=dict(
            corpus=256, batch=128, steps=20, warmup=1, workers=4, scaling=(1, 2, 4), ablation=True
        ),
    )


def _model() -> TinyVLM:
    return TinyVLM(d_model=64, n_layers=2, n_heads=4, seed=0)


def _grpo(seed: int) -> GRPOConfig:
    return GRPOConfig(group_size=4, lr=1e-3, entropy_coef=0.0, kl_coef=1e-2, seed=seed)


def _critical_path(summary: dict, driver_cpu_per_step: float) -> float:
    """Load-free step time: the controller's own CPU time plus, per stage, the busiest worker's
    CPU time (what a step takes with one idle core per process)."""
    per = []
    for s in summary["per_step"]:
        per.append(sum(max(s["busy_s"][k]) for k in ("rollout", "infer", "update")))
    return float(np.mean(per)) + driver_cpu_per_step


def _order(corpus, s: dict, seed: int) -> tuple[list, int, float]:
    """The corpus in a seed-shuffled order (the run takes consecutive batches, wrapping
    around). The spec's rule: if the baseline's *predicted* imbalance over those batches is
    below 1.3 the check is not applicable and the next seed's order is drawn (<= 3 times)."""
    cost = flops_cost_model(_model())
    n = len(corpus)
    for k in range(3):
        order = [corpus[i] for i in np.random.default_rng(seed + k).permutation(n)]
        preds = []
        for step in range(s["steps"] + s["warmup"]):
            batch = [order[(step * s["batch"] + j) % n] for j in range(s["batch"])]
            lengths = [m.est_tokens + T_NEW for m in batch]
            preds.append(plan_equal_count(lengths, s["workers"], cost).predicted_imbalance)
        if float(np.mean(preds)) >= 1.3:
            break
    return order, k, float(np.mean(preds))


def _measure(ctx: Context, cls, workers: int, order: list, s: dict, **options) -> dict:
    pipe = cls(model_fn=_model, n_workers=workers, grpo=_grpo(ctx.seed), max_new_tokens=T_NEW,
               seed=ctx.seed, **options)  # fmt: skip
    try:
        timing = ctx.timeit(
            lambda: pipe.run(
                order, n_steps=s["steps"], global_batch=s["batch"], warmup_steps=s["warmup"]
            ),  # fmt: skip
            repeat=1,
            warmup=0,
            threads=1,
        )
    finally:
        pipe.close()
    summary = timing.value
    n_total = s["steps"] + s["warmup"]
    driver_cpu = timing.cpu_s / n_total  # the controller process's CPU time per step
    crit = _critical_path(summary, driver_cpu)
    timing.count(
        samples=summary["samples"],
        flops_per_step=summary["flops_per_step"],
        driver_bytes_per_step=summary["driver_bytes_per_step"],
    )
    summary.update(
        driver_cpu_s_per_step=driver_cpu,
        critical_path_s_per_step=crit,
        critical_path_samples_per_s=s["batch"] / crit,
        timing=timing.to_dict(),
    )
    return summary


def _run(ctx: Context) -> dict:
    """The one measured run the three claims share: in this process (cached), or from the file
    a sibling claim of the same ``reproduce`` run (same parent process, < 1 h old) wrote."""
    path = ctx.out_dir / f".flexrl-run-{ctx.scale.value}-seed{ctx.seed}-{os.getppid()}.json"
    if path.is_file() and time.time() - path.stat().st_mtime < 3600:
        return json.loads(path.read_text())
    out = _measure_all(ctx.scale.value, ctx.seed)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, default=float))
    return out


@functools.lru_cache(maxsize=4)
def _measure_all(scale: str, seed: int) -> dict:
    ctx = Context(scale=scale, seed=seed)
    s = settings(ctx)
    ensure_ray(num_cpus=max(2, s["workers"], *s["scaling"]))
    root = tempfile.mkdtemp(prefix="flexrl-corpus-")
    corpus = build_multimodal_corpus(root, s["corpus"], seed=seed)
    order, resamples, pred_base = _order(corpus, s, seed)
    out = {"resamples": resamples, "predicted_baseline_imbalance": pred_base, "settings": s}
    out["baseline"] = _measure(ctx, CentralizedPipeline, s["workers"], order, s)
    out["flexrl"] = _measure(ctx, FlexRLPipeline, s["workers"], order, s)
    scaling = {}
    for w in s["scaling"]:
        if w == s["workers"]:
            scaling[w] = {"flexrl": out["flexrl"], "baseline": out["baseline"]}
        else:
            scaling[w] = {
                "flexrl": _measure(ctx, FlexRLPipeline, w, order, s),
                "baseline": _measure(ctx, CentralizedPipeline, w, order, s),
            }
    out["scaling"] = scaling
    if s.get("ablation"):  # full scale: each half of FlexRL on its own
        out["ablation"] = {
            "shadowloader_only": _measure(
                ctx, FlexRLPipeline, s["workers"], order, s, shard_threshold=float("inf")
            ),
            "flexulysses_only": _measure(
                ctx, CentralizedPipeline, s["workers"], order, s, shard_threshold=0.5
            ),
        }
    return out


def _brief(summary: dict) -> dict:
    keys = (
        "samples_per_s",
        "critical_path_samples_per_s",
        "critical_path_s_per_step",
        "driver_cpu_s_per_step",
        "imbalance",
        "predicted_imbalance",
        "driver_bytes_per_step",
        "driver_data_bytes_per_step",
        "stage_s",
        "load_fraction",
        "reward_mean",
        "n_split_per_step",
        "flops_per_step",
        "timing",
    )
    return {k: summary[k] for k in keys}


# ---------------------------------------------------------------- C1


@claim(
    paper=SLUG,
    name="load-balance",
    statement="Cost-aware hybrid sequence sharding (FlexUlysses) removes cross-worker workload "
    "skew in log-prob inference that equal-count dispatch suffers on mixed text/image/video "
    "batches",
    paper_value="cross-GPU skew removed in rollout, inference and training (stated "
    "qualitatively); 4.2-7.7x end-to-end on 128 GPUs",
    criterion="mean over steps of max/mean per-worker measured CPU busy time in log-prob "
    "inference: FlexRL <= 1.2 and baseline >= 1.5 (same batches; batches whose predicted "
    "baseline imbalance < 1.3 are redrawn, at most 3 times)",
    timeout_s={"smoke": 180, "quick": 600},
    exclusive=True,
    cpus=2,
    headline=("flexrl_infer_imbalance", "baseline_infer_imbalance"),
)
def load_balance(ctx: Context) -> Result:
    run = _run(ctx)
    flex, base = run["flexrl"], run["baseline"]
    fi, bi = flex["imbalance"]["infer"], base["imbalance"]["infer"]
    applicable = run["predicted_baseline_imbalance"] >= 1.3
    fig, ax = plt.subplots(figsize=(5, 3.2))
    stages = ("rollout", "infer", "update")
    x = np.arange(len(stages))
    ax.bar(x - 0.2, [base["imbalance"][k] for k in stages], 0.4, label="baseline (equal count)")
    ax.bar(x + 0.2, [flex["imbalance"][k] for k in stages], 0.4, label="FlexRL")
    ctx.mark_threshold(ax, 1.2, "FlexRL target 1.2")
    ctx.mark_threshold(ax, 1.5, "baseline skew 1.5", color="red")
    ax.set_xticks(x, stages)
    ax.set_ylabel("max / mean worker busy time")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "flexrl_infer_imbalance": fi,
            "flexrl_predicted_imbalance": flex["predicted_imbalance"],
            "flexrl_imbalance_by_stage": flex["imbalance"],
            "split_sequences_per_step": flex["n_split_per_step"],
            "resamples": run["resamples"],
            "predicted_baseline_imbalance_of_draw": run["predicted_baseline_imbalance"],
        },
        baseline={
            "centralized": {
                "baseline_infer_imbalance": bi,
                "predicted_imbalance": base["predicted_imbalance"],
                "imbalance_by_stage": base["imbalance"],
            }
        },
        required={
            "FlexRL inference imbalance <= 1.2": fi <= 1.2,
            "baseline inference imbalance >= 1.5": bi >= 1.5,
            "applicable: predicted baseline imbalance >= 1.3 (<= 3 draws)": applicable,
        },
        # batches that stay balanced for the baseline after 3 draws: "not applicable"
        partial={
            "not applicable, FlexRL inference imbalance <= 1.2": (not applicable) and fi <= 1.2
        },  # fmt: skip
    )
    return ctx.save_judged(fig, SLUG, "load-balance", result)


# ---------------------------------------------------------------- C2


@claim(
    paper=SLUG,
    name="throughput",
    statement="FlexRL's decentralised loading and load balancing raise end-to-end RL training "
    "throughput over a single-controller (veRL-like) pipeline on the same hardware",
    paper_value="4.2-7.7x end-to-end speed-up on 128 GPUs (up to 8.47x in the final version); "
    "data loading up to 57.1% of veRL's step time",
    criterion="samples/s FlexRL >= 1.3 x baseline, both on the wall clock and on the load-free "
    "critical path (controller CPU + busiest worker's CPU per stage), same batches and seeds",
    timeout_s={"smoke": 180, "quick": 600},
    exclusive=True,
    cpus=2,
    headline=("flexrl_samples_per_s", "baseline_samples_per_s"),
)
def throughput(ctx: Context) -> Result:
    run = _run(ctx)
    flex, base = run["flexrl"], run["baseline"]
    wall_ratio = flex["samples_per_s"] / base["samples_per_s"]
    crit_ratio = flex["critical_path_samples_per_s"] / base["critical_path_samples_per_s"]
    table = {
        str(w): {
            sysname: {
                "samples_per_s": r["samples_per_s"],
                "critical_path_samples_per_s": r["critical_path_samples_per_s"],
            }
            for sysname, r in v.items()
        }
        for w, v in run["scaling"].items()
    }
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    names = ("baseline", "FlexRL")
    bottoms = np.zeros(2)
    for stage in ("load", "rollout", "infer", "update"):
        vals = np.array([base["stage_s"][stage], flex["stage_s"][stage]])
        a1.bar(names, vals, bottom=bottoms, label=stage)
        bottoms += vals
    a1.set_ylabel("seconds per step (wall)")
    a1.set_title(
        f"speed-up wall {wall_ratio:.2f}, critical path {crit_ratio:.2f} (each >= 1.3)", fontsize=8
    )
    a1.legend(fontsize=7)
    if table:
        ws = sorted(int(w) for w in table)
        for sysname in ("baseline", "flexrl"):
            a2.plot(ws, [table[str(w)][sysname]["samples_per_s"] for w in ws], "o-",
                    label=f"{sysname} wall")  # fmt: skip
            a2.plot(ws, [table[str(w)][sysname]["critical_path_samples_per_s"] for w in ws],
                    "s--", label=f"{sysname} critical path")  # fmt: skip
        a2.set_xlabel("workers")
        a2.set_ylabel("samples / s")
        a2.legend(fontsize=7)
    else:
        a2.axis("off")
    result = Result.judge(
        metrics={
            "flexrl_samples_per_s": flex["samples_per_s"],
            "speedup_wall": wall_ratio,
            "speedup_critical_path": crit_ratio,
            "flexrl": _brief(flex),
            "scaling_table": table,
            "ablation": {
                k: {
                    "samples_per_s": v["samples_per_s"],
                    "critical_path_samples_per_s": v["critical_path_samples_per_s"],
                    "infer_imbalance": v["imbalance"]["infer"],
                }
                for k, v in run.get("ablation", {}).items()
            },  # fmt: skip
        },
        baseline={
            "centralized": {
                "baseline_samples_per_s": base["samples_per_s"],
                "load_fraction_of_step": base["load_fraction"],
                **_brief(base),
            }
        },
        required={
            "wall-clock speed-up >= 1.3": wall_ratio >= 1.3,
            "critical-path speed-up >= 1.3": crit_ratio >= 1.3,
        },  # fmt: skip
        note="2 CPU workers on a shared machine: the small-scale analogue, not 128 GPUs",
    )
    return ctx.save_judged(fig, SLUG, "throughput", result)


# ---------------------------------------------------------------- C3


@claim(
    paper=SLUG,
    name="controller-bytes",
    statement="The ShadowLoader removes the controller's data bottleneck: the driver schedules "
    "metadata and passes references, so the bytes it materialises and serialises per step "
    "collapse",
    paper_value="controller CPU/memory no longer grows with the batch's visual volume",
    criterion="driver bytes (materialised tensors + serialised messages) per step: FlexRL <= "
    "0.05 x baseline",
    timeout_s={"smoke": 180, "quick": 600},
    exclusive=True,
    cpus=2,
    headline=("flexrl_driver_bytes_per_step", "baseline_driver_bytes_per_step"),
)
def controller_bytes(ctx: Context) -> Result:
    run = _run(ctx)
    flex, base = run["flexrl"], run["baseline"]
    fb, bb = flex["driver_bytes_per_step"], base["driver_bytes_per_step"]
    ratio = fb / bb
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["baseline", "FlexRL"], [bb, fb])
    ax.set_yscale("log")
    ctx.mark_threshold(ax, 0.05 * bb, "0.05 x baseline")
    ax.set_ylabel("driver bytes per step")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "flexrl_driver_bytes_per_step": fb,
            "flexrl_driver_data_bytes_per_step": flex["driver_data_bytes_per_step"],
            "flexrl_driver_cpu_s_per_step": flex["driver_cpu_s_per_step"],
            "ratio": ratio,
        },
        baseline={
            "centralized": {
                "baseline_driver_bytes_per_step": bb,
                "driver_data_bytes_per_step": base["driver_data_bytes_per_step"],
                "driver_cpu_s_per_step": base["driver_cpu_s_per_step"],
            }
        },
        required={"FlexRL driver bytes <= 0.05 x baseline": ratio <= 0.05},
    )
    return ctx.save_judged(fig, SLUG, "controller-bytes", result)
