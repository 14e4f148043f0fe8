"""Claim checks of CoGuide on synthetic homes: C1 free-space accuracy against guidance through
a differentiable planner, C2 trajectory consistency against the unguided prior, C3 failure
rate, C4 the surrogate tracking re-planned consistency, C5 Adam against plain gradient descent,
C6 the intersection penalty, and the sampling cost against unguided DDIM.

All claims share one experiment per (scale, seed): one data set, one prior, one pair of
encoders, and every sampler on the same test walks and noise seeds."""

from __future__ import annotations

import functools

import numpy as np
import torch
from scipy import stats

from iclr26.claims import Context, Result, claim, shared_experiment
from iclr26.generative.coguide.floorplan import (
    REGIMES,
    FloorplanGenerator,
    PathPlanner,
    free_space_scores,
    rasterize,
    trajectory_consistency,
)
from iclr26.generative.coguide.likelihood import ContrastiveLikelihood
from iclr26.generative.coguide.prior import FloorplanPrior
from iclr26.generative.coguide.sampler import (
    CoGuideSampler,
    DDIMSampler,
    InpaintingSampler,
    PlannerGuidedSampler,
)

PAPER = "coguide"
METHODS = ("coguide", "unguided", "dps_planner", "adam_planner", "inpainting")


def _setting(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(
            size=16,
            min_room=3,
            n_train=12,
            prior_steps=5,
            width=8,
            T=50,
            lik_steps=5,
            lik_width=8,
            dim=16,
            n_test=1,
            n=1,
            steps=4,
            vi_iters=8,
            n_pert=8,
            n_c4=1,
            time_ys=1,
            batch=8,
        ),
        quick=dict(
            size=16,
            min_room=3,
            n_train=600,
            prior_steps=700,
            width=16,
            T=100,
            lik_steps=300,
            lik_width=16,
            dim=64,
            n_test=12,
            n=2,
            steps=20,
            vi_iters=32,
            n_pert=48,
            n_c4=8,
            time_ys=4,
            batch=32,
        ),
        full=dict(
            size=32,
            min_room=5,
            n_train=4000,
            prior_steps=4000,
            width=32,
            T=200,
            lik_steps=1500,
            lik_width=32,
            dim=128,
            n_test=32,
            n=2,
            steps=50,
            vi_iters=60,
            n_pert=200,
            n_c4=32,
            time_ys=8,
            batch=64,
        ),
    )


def _device(ctx: Context) -> str:
    """Quick and smoke scale run on the CPU (the README's numbers); full scale on
    ``ctx.device``."""
    return str(ctx.device) if ctx.scale.value == "full" else "cpu"


def _samplers(s, prior, lik) -> dict:
    common = dict(steps=s["steps"])
    return {
        "coguide": CoGuideSampler(prior, lik, **common),
        "unguided": DDIMSampler(prior, s["steps"]),
        "dps_planner": PlannerGuidedSampler(prior, iters=s["vi_iters"], optimizer="dps", **common),
        "adam_planner": PlannerGuidedSampler(
            prior, iters=s["vi_iters"], optimizer="adam", **common
        ),
        "inpainting": InpaintingSampler(prior, s["steps"]),
    }


def _evaluate(samples, truths, ys, n, planner) -> dict:
    iou, f1, m1, feas = [], [], [], []
    for i, y in enumerate(ys):
        for j in range(n):
            x_hat = samples[i * n + j]
            sc = free_space_scores(x_hat, truths[i])
            iou.append(sc["iou"])
            f1.append(sc["f1"])
            m1.append(trajectory_consistency(x_hat, y, planner))
            feas.append(float((x_hat[y.cells[:, 0], y.cells[:, 1]] < 0).mean()))
    m1 = np.asarray(m1)
    return {
        "iou": float(np.mean(iou)),
        "f1": float(np.mean(f1)),
        "m1": float(m1.mean()),
        "feasibility": float(np.mean(feas)),
        "failure_rate": float((m1 < 0.5).mean()),
    }


@functools.lru_cache(maxsize=2)
def _experiment(scale: str, seed: int, device: str = "cpu") -> dict:
    """The one experiment every claim reads. The runner gives each claim its own process, so
    beyond smoke scale it is shared on disk: the first claim trains the prior and the encoders
    and runs the samplers, claims started beside it wait on a file lock and then load it."""
    if scale == "smoke":
        return _run_experiment(scale, seed, device)
    ctx = Context(scale=scale, seed=seed, device=device)
    return shared_experiment(
        PAPER,
        dict(scale=scale, seed=seed, setting=_setting(ctx), device=device),
        lambda: _run_experiment(scale, seed, device),
        source=__file__,
        weights_only=False,
    )


def _run_experiment(scale: str, seed: int, device: str) -> dict:
    ctx = Context(scale=scale, seed=seed, device=device)
    s = _setting(ctx)
    torch.manual_seed(seed)
    gen = FloorplanGenerator(s["size"], min_room=s["min_room"])
    planner = PathPlanner()
    rng = np.random.default_rng(seed)
    X = gen.sample(s["n_train"], seed=seed)
    coverages = list(REGIMES.values())
    Y = [
        [planner(x, coverage=float(rng.choice(coverages)), seed=2 * i + j) for j in range(2)]
        for i, x in enumerate(X)
    ]
    prior = FloorplanPrior(T=s["T"], width=s["width"]).fit(
        X, steps=s["prior_steps"], batch_size=s["batch"], seed=seed, device=device
    )
    lik = ContrastiveLikelihood(dim=s["dim"], width=s["lik_width"]).fit(
        X, Y, steps=s["lik_steps"], batch_size=s["batch"], seed=seed, device=device
    )
    X_test = gen.sample(s["n_test"], seed=10_000 + seed)
    tests = {
        name: [planner(x, coverage=c, seed=50_000 + i) for i, x in enumerate(X_test)]
        for name, c in REGIMES.items()
    }
    samplers = _samplers(s, prior, lik)
    results = {m: {} for m in METHODS}
    for regime, ys in tests.items():
        for m, smp in samplers.items():
            out = smp.sample(ys, n=s["n"], seed=seed)
            results[m][regime] = _evaluate(out, X_test, ys, s["n"], planner)
    ablations = {
        "coguide_gd": CoGuideSampler(prior, lik, steps=s["steps"], optimizer="gd"),
        "coguide_no_penalty": CoGuideSampler(prior, lik, steps=s["steps"], lambda_int=0.0),
    }
    for m, smp in ablations.items():
        out = smp.sample(tests["sparse"], n=s["n"], seed=seed)
        results[m] = {"sparse": _evaluate(out, X_test, tests["sparse"], s["n"], planner)}
    return dict(
        setting=s,
        prior=prior,
        lik=lik,
        X_test=X_test,
        tests=tests,
        results=results,
        planner=planner,
        samplers=samplers,
        train_loss=lik.history[-1]["loss"],
        device=device,
    )


def _regime_table(results, methods, key) -> dict:
    return {m: {r: results[m][r][key] for r in results[m]} for m in methods}


def _bar_figure(ctx, exp, key, name, result, needed: dict, needed_label: str, methods=METHODS):
    """Bars of ``key`` per regime and method, with CoGuide's threshold ``needed[regime]`` drawn
    over each judged regime's group; titled with the verdict and attached to ``result``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    regimes = list(REGIMES)
    w = 0.8 / len(methods)
    for i, m in enumerate(methods):
        vals = [exp["results"][m].get(r, {}).get(key, np.nan) for r in regimes]
        ax.bar(np.arange(len(regimes)) + i * w, vals, w, label=m)
    x = np.arange(len(regimes))
    ax.hlines([needed.get(r, np.nan) for r in regimes], x - w / 2, x + 0.8 - w / 2,
              colors="black", linestyles="--", linewidth=1.0, label=needed_label)  # fmt: skip
    ax.set_xticks(x + 0.4 - w / 2, regimes)
    ax.margins(y=0.4)  # room for the legend above the bars
    ax.set_ylabel(key)
    ax.legend(fontsize=7, ncol=2)
    return ctx.save_judged(fig, PAPER, name, result)


def _judged_bars(ctx, name, result, values: dict, lines: list, ylabel: str, points=None):
    """One bar per arm (the method first, in red) of the judged number, the criterion's
    thresholds ``lines`` = [(value, label)] as dashed lines, and optional per-item ``points``
    {arm: values} over the bars; titled with the verdict and attached to ``result``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    names = list(values)
    ax.bar(names, [values[k] for k in names], color=["tab:red"] + ["C0"] * (len(names) - 1))
    for i, k in enumerate(names):
        pts = np.asarray((points or {}).get(k, []), dtype=float)
        if len(pts):
            ax.plot(np.full(len(pts), i), pts, "k.", ms=4, label="per walk" if i == 0 else None)
    for j, (value, label) in enumerate(lines):
        ctx.mark_threshold(ax, value, label, linestyle=("--", ":")[j % 2])
    ax.margins(y=0.25)  # room for the legend above the bars
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", labelsize=7, rotation=15)
    ax.legend(fontsize=7)
    return ctx.save_judged(fig, PAPER, name, result)


@claim(
    paper=PAPER,
    name="free-space-accuracy",
    statement="CoGuide reconstructs the free space more accurately than DPS guidance through a "
    "differentiable planner (sparse and medium trajectories)",
    paper_value="free-space IoU sparse 0.84 vs 0.67, medium 0.89 vs 0.66 (DPS + Neural A*)",
    criterion="free-space IoU of CoGuide >= DPS-through-soft-planner IoU + 0.05 in the sparse "
    "and in the medium regime",
    headline=("iou_sparse", "iou_medium"),
)
def free_space_accuracy(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed, _device(ctx))
    res = exp["results"]
    metrics = {f"iou_{r}": res["coguide"][r]["iou"] for r in REGIMES}
    metrics.update({f"f1_{r}": res["coguide"][r]["f1"] for r in REGIMES})
    metrics.update({f"m1_{r}": res["coguide"][r]["m1"] for r in REGIMES})
    baseline = {
        m: {f"iou_{r}": res[m][r]["iou"] for r in REGIMES}
        | {f"f1_{r}": res[m][r]["f1"] for r in REGIMES}
        | {f"m1_{r}": res[m][r]["m1"] for r in REGIMES}
        for m in METHODS[1:]
    }
    required = {
        f"{r}: CoGuide IoU >= DPS-planner IoU + 0.05": res["coguide"][r]["iou"]
        >= res["dps_planner"][r]["iou"] + 0.05
        for r in ("sparse", "medium")
    }
    result = Result.judge(metrics=metrics, required=required, baseline=baseline)
    needed = {r: res["dps_planner"][r]["iou"] + 0.05 for r in ("sparse", "medium")}
    return _bar_figure(ctx, exp, "iou", "free-space-accuracy", result, needed,
                       "CoGuide needs DPS-planner + 0.05")  # fmt: skip


@claim(
    paper=PAPER,
    name="trajectory-consistency",
    statement="Contrastive guidance makes the samples consistent with the observed walk",
    paper_value="guided samples explain the trajectory; unguided prior samples do not",
    criterion="re-planned path IoU (M1) of CoGuide >= unguided + 0.10 in all three regimes",
    headline=("m1_sparse", "m1_dense"),
)
def consistency(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed, _device(ctx))
    res = exp["results"]
    metrics = {f"m1_{r}": res["coguide"][r]["m1"] for r in REGIMES}
    metrics.update({f"feasibility_{r}": res["coguide"][r]["feasibility"] for r in REGIMES})
    baseline = {m: {f"m1_{r}": res[m][r]["m1"] for r in REGIMES} for m in METHODS[1:]}
    required = {
        f"{r}: M1 CoGuide >= unguided + 0.10": res["coguide"][r]["m1"]
        >= res["unguided"][r]["m1"] + 0.10
        for r in REGIMES
    }
    result = Result.judge(metrics=metrics, required=required, baseline=baseline)
    needed = {r: res["unguided"][r]["m1"] + 0.10 for r in REGIMES}
    return _bar_figure(ctx, exp, "m1", "trajectory-consistency", result, needed,
                       "CoGuide needs unguided + 0.10")  # fmt: skip


@claim(
    paper=PAPER,
    name="robustness",
    statement="CoGuide fails less often than planner guidance and inpainting",
    paper_value="stable guidance where planner gradients jump",
    criterion="share of samples with M1 < 0.5 for CoGuide <= min(DPS-planner, inpainting), "
    "pooled over the three regimes",
    headline=("failure_rate",),
)
def robustness(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed, _device(ctx))
    res = exp["results"]

    def pooled(m):
        return float(np.mean([res[m][r]["failure_rate"] for r in REGIMES]))

    metrics = {"failure_rate": pooled("coguide")}
    metrics.update({f"failure_rate_{r}": res["coguide"][r]["failure_rate"] for r in REGIMES})
    baseline = {m: {"failure_rate": pooled(m)} for m in METHODS[1:]}
    needed = min(pooled("dps_planner"), pooled("inpainting"))
    required = {
        "CoGuide failure rate <= min(DPS-planner, inpainting)": metrics["failure_rate"] <= needed
    }
    result = Result.judge(metrics=metrics, required=required, baseline=baseline)
    return _judged_bars(
        ctx,
        "robustness",
        result,
        {m: pooled(m) for m in METHODS},
        [(needed, "CoGuide <= min(DPS-planner, inpainting)")],
        "share of samples with M1 < 0.5 (pooled)",
    )


def _perturb(x, rng, k):
    """``k`` random local edits: drop a 3-cell wall bar or open a 3-cell gap."""
    out = x.copy()
    s = x.shape[0]
    for _ in range(k):
        r, c = rng.integers(1, s - 1, 2)
        value = 1.0 if rng.random() < 0.6 else -1.0
        if rng.random() < 0.5:
            out[max(1, r - 1) : min(s - 1, r + 2), c] = value
        else:
            out[r, max(1, c - 1) : min(s - 1, c + 2)] = value
    return out


@claim(
    paper=PAPER,
    name="surrogate-tracks-likelihood",
    statement="The contrastive score s(x, y) tracks how well a plan explains the walk",
    paper_value="<f, g>/tau = log p(y|x) - log p(y) + C at the InfoNCE optimum",
    criterion="median over walks of Spearman rho between s(x, y) and re-planned consistency "
    "M1 over perturbed plans >= 0.5",
    headline=("median_spearman",),
)
def surrogate(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed, _device(ctx))
    s = exp["setting"]
    rng = np.random.default_rng(ctx.seed + 7)
    torch.manual_seed(ctx.seed + 7)
    untrained = ContrastiveLikelihood(dim=s["dim"], width=s["lik_width"]).eval()
    untrained.to(exp["device"])
    rhos, rhos_untrained, rhos_feas = [], [], []
    ys = exp["tests"]["medium"][: s["n_c4"]]
    for x, y in zip(exp["X_test"], ys):
        perturbed = np.stack(
            [_perturb(x, rng, int(rng.integers(0, 8))) for _ in range(s["n_pert"])]
        )
        m1 = np.array([trajectory_consistency(p, y, exp["planner"]) for p in perturbed])
        mask = np.repeat(rasterize(y, s["size"])[None], len(perturbed), 0)
        score = exp["lik"].score(perturbed, mask).numpy()
        score0 = untrained.score(perturbed, mask).numpy()
        feas = -(mask * (perturbed > 0)).sum((1, 2))  # the penalty alone
        for arr, out in ((score, rhos), (score0, rhos_untrained), (feas, rhos_feas)):
            rho = stats.spearmanr(arr, m1).statistic if np.ptp(m1) > 0 else np.nan
            out.append(rho)
    med = float(np.nanmedian(rhos)) if np.isfinite(rhos).any() else float("nan")
    metrics = {"median_spearman": med, "spearman_per_walk": rhos}
    baseline = {
        "untrained_encoders": {"median_spearman": float(np.nanmedian(rhos_untrained))},
        "negative_intersection_penalty": {"median_spearman": float(np.nanmedian(rhos_feas))},
    }
    result = Result.judge(
        metrics=metrics,
        required={"median Spearman rho >= 0.5": bool(med >= 0.5)},
        baseline=baseline,
    )
    arms = {
        "trained s(x, y)": rhos,
        "untrained encoders": rhos_untrained,
        "-penalty alone": rhos_feas,
    }
    medians = {
        k: float(np.nanmedian(v)) if np.isfinite(v).any() else np.nan for k, v in arms.items()
    }
    return _judged_bars(
        ctx,
        "surrogate-tracks-likelihood",
        result,
        medians,
        [(0.5, "median rho >= 0.5 (trained)")],
        "Spearman rho with M1 (bar: median)",
        points=arms,
    )


@claim(
    paper=PAPER,
    name="adam-beats-gd",
    statement="Adam updates inside DDIM beat plain gradient descent",
    paper_value="F1/IoU 0.86/0.76 (GD) -> 0.92/0.85 (Adam)",
    criterion="sparse free-space IoU of CoGuide-Adam >= CoGuide-GD + 0.03",
    headline=("iou_sparse",),
)
def adam_vs_gd(ctx: Context) -> Result:
    res = _experiment(ctx.scale.value, ctx.seed, _device(ctx))["results"]
    a, g = res["coguide"]["sparse"]["iou"], res["coguide_gd"]["sparse"]["iou"]
    result = Result.judge(
        metrics={"iou_sparse": a, "m1_sparse": res["coguide"]["sparse"]["m1"]},
        baseline={"coguide_gd": {"iou_sparse": g, "m1_sparse": res["coguide_gd"]["sparse"]["m1"]}},
        required={"IoU Adam >= IoU GD + 0.03": a >= g + 0.03},
    )
    return _judged_bars(
        ctx,
        "adam-beats-gd",
        result,
        {"CoGuide, Adam": a, "CoGuide, GD": g},
        [(g + 0.03, "Adam >= GD + 0.03")],
        "sparse free-space IoU",
    )


@claim(
    paper=PAPER,
    name="intersection-penalty-helps",
    statement="The no-walking-through-walls penalty improves sparse reconstructions",
    paper_value="sparse IoU 0.78 without, 0.83-0.84 with the penalty",
    criterion="sparse free-space IoU with lambda_int > 0 >= with lambda_int = 0 + 0.02",
    headline=("iou_sparse",),
)
def penalty(ctx: Context) -> Result:
    res = _experiment(ctx.scale.value, ctx.seed, _device(ctx))["results"]
    a, b = res["coguide"]["sparse"]["iou"], res["coguide_no_penalty"]["sparse"]["iou"]
    result = Result.judge(
        metrics={"iou_sparse": a, "feasibility_sparse": res["coguide"]["sparse"]["feasibility"]},
        baseline={
            "lambda_int_0": {
                "iou_sparse": b,
                "feasibility_sparse": res["coguide_no_penalty"]["sparse"]["feasibility"],
            }
        },
        required={"IoU with penalty >= without + 0.02": a >= b + 0.02},
    )
    return _judged_bars(
        ctx,
        "intersection-penalty-helps",
        result,
        {"lambda_int > 0": a, "lambda_int = 0": b},
        [(b + 0.02, "with >= without + 0.02")],
        "sparse free-space IoU",
    )


@claim(
    paper=PAPER,
    name="sampling-cost",
    statement="Guiding through the learned embedding costs less than guiding through a "
    "differentiable planner",
    paper_value="one encoder pass per step instead of a planner (no number given)",
    criterion="CoGuide sampling CPU time <= DPS-through-soft-planner sampling CPU time "
    "(same walks, steps and batch); the ratio to unguided DDIM is reported",
    headline=("coguide_s", "ratio_vs_unguided"),
)
def sampling_cost(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed, _device(ctx))
    s = exp["setting"]
    ys = exp["tests"]["medium"][: s["time_ys"]]
    timings = {}
    for m in ("coguide", "unguided", "dps_planner"):
        smp = _samplers(s, exp["prior"], exp["lik"])[m]

        def run(smp=smp):
            smp.counts = {k: 0 for k in smp.counts}
            return smp.sample(ys, n=1, seed=ctx.seed)

        sync = torch.cuda.synchronize if exp["device"].startswith("cuda") else None
        t = ctx.timeit(run, repeat=2, warmup=0, threads=1, sync=sync)
        t.count(**{f"{k}_passes": v for k, v in smp.counts.items()}, samples=len(ys))
        timings[m] = t
    ratio = timings["coguide"].cpu_s / timings["unguided"].cpu_s
    metrics = {
        "coguide_s": timings["coguide"].cpu_s,
        "ratio_vs_unguided": ratio,
        "ratio_vs_dps_planner": timings["coguide"].cpu_s / timings["dps_planner"].cpu_s,
        "coguide": timings["coguide"].to_dict(),
    }
    baseline = {m: timings[m].to_dict() for m in ("unguided", "dps_planner")}
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={
            "CoGuide CPU time <= DPS-planner CPU time": timings["coguide"].cpu_s
            <= timings["dps_planner"].cpu_s
        },
    )

    def label(m):
        c = timings[m].counts
        return f"{m}\n{c.get('forward_passes', 0):g} fwd / {c.get('backward_passes', 0):g} bwd"

    return _judged_bars(
        ctx,
        "sampling-cost",
        result,
        {label(m): timings[m].cpu_s for m in ("coguide", "unguided", "dps_planner")},
        [(timings["dps_planner"].cpu_s, "CoGuide <= DPS-planner")],
        f"CPU s to sample {len(ys)} plans",
    )
