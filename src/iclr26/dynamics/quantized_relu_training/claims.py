"""Claim checks: the exact solvers agree, and the signature DP's measured running time behaves
as the paper's parameterized analysis predicts (linear in n and depth, explosive in alpha),
next to brute force on the same instances."""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from iclr26.claims import Context, Result, claim  # noqa: E402

from .instance import QNNTInstance, planted_instance, random_labels_instance  # noqa: E402
from .solvers import solve_brute_force, solve_cpsat, solve_signature_dp  # noqa: E402

SLUG = "quantized_relu_training"


def _have_ortools() -> bool:
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except ImportError:
        return False
    return True


def _median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def _fresh(inst: QNNTInstance) -> QNNTInstance:
    """A new instance on the same data, so that timings include deduplication."""
    return QNNTInstance(inst.architecture, inst.X, inst.Y, inst.d, inst.ell, inst.output_activation)


def _slope(x, y) -> float:
    return float(np.polyfit(np.log10(x), np.log10(y), 1)[0])


@claim(
    paper=SLUG,
    name="exactness",
    statement="The FPT signature DP is an exact d-QNNT solver: on random tiny instances it returns "
    "the same minimum error as brute force (and CP-SAT), with witnesses that re-evaluate to it",
    paper_value="Theorems 5-6 / Corollary 2: exact FPT algorithm (no experiments in the paper)",
    criterion="100% agreement of minimum error DP = brute force (= CP-SAT when installed) and every "
    "witness re-evaluates to its reported error; d in {2,3}, alpha in {1,2}, widths in "
    "{[1],[2],[2,1]}, omega in {1,2}, n in [3,10], random labels",
)
def exactness(ctx: Context) -> Result:
    n_instances = ctx.pick(smoke=8, quick=200, full=500)
    d_choices = ctx.pick(smoke=[2], quick=[2, 3])
    width_choices = ctx.pick(smoke=[[1], [2]], quick=[[1], [2], [2, 1]])
    use_cpsat = _have_ortools()
    agree = witnesses_ok = cp_agree = 0
    bf_err, dp_err, bf_time, dp_time = [], [], [], []
    for i in range(n_instances):
        d = int(ctx.rng.choice(d_choices))
        alpha = int(ctx.rng.integers(1, 3))
        widths = width_choices[int(ctx.rng.integers(len(width_choices)))]
        omega = int(ctx.rng.integers(1, 3))
        n = int(ctx.rng.integers(3, 11))
        inst = random_labels_instance(alpha, widths, omega, n, d=d, seed=ctx.seed * 100_003 + i)
        bf = solve_brute_force(inst)
        dp = solve_signature_dp(inst)
        bf_err.append(bf.min_error)
        dp_err.append(dp.min_error)
        bf_time.append(bf.stats["seconds"])
        dp_time.append(dp.stats["seconds"])
        agree += bf.min_error is not None and bf.min_error == dp.min_error
        witnesses_ok += (
            inst.evaluate(dp.weights, dp.biases) == dp.error
            and inst.evaluate(bf.weights, bf.biases) == bf.error
        )
        if use_cpsat:
            cp = solve_cpsat(inst)
            cp_agree += (
                cp.min_error == bf.min_error and inst.evaluate(cp.weights, cp.biases) == cp.error
            )
        ctx.report((i + 1) / n_instances, f"instance {i + 1}/{n_instances}")
    fig, ax = plt.subplots(figsize=(4.5, 4))
    jitter = ctx.rng.normal(0, 0.08, size=(2, n_instances))
    ax.scatter(np.array(bf_err) + jitter[0], np.array(dp_err) + jitter[1], s=10, alpha=0.6)
    top = max(bf_err) + 1
    ax.plot([0, top], [0, top], "k--", lw=0.8)
    ax.set_xlabel("brute-force minimum error")
    ax.set_ylabel("signature-DP minimum error")
    ax.set_title(f"{agree}/{n_instances} instances agree")
    path = ctx.save_figure(fig, SLUG, "exactness")
    required = {
        "DP = brute force on all instances": agree == n_instances,
        "all witnesses re-evaluate": witnesses_ok == n_instances,
    }
    if use_cpsat:
        required["CP-SAT = brute force on all instances"] = cp_agree == n_instances
    return Result.judge(
        metrics={
            "instances": n_instances,
            "dp_agrees_with_brute_force": agree,
            "witnesses_ok": witnesses_ok,
            "dp_total_s": float(np.sum(dp_time)),
        },
        baseline={
            "brute_force": {"total_s": float(np.sum(bf_time))},
            "cpsat": {"agrees": cp_agree} if use_cpsat else {"skipped": "ortools not installed"},
        },
        required=required,
        figures=[path],
    )


@claim(
    paper=SLUG,
    name="linear-in-n",
    statement="The FPT algorithm's running time is linear in the number of data points "
    "(after deduplication the state space does not depend on n)",
    paper_value="FPT running time f(alpha, width, omega) * poly(n)",
    criterion="log-log slope of DP time vs n <= 1.15 and DP time at the largest n <= 5 s "
    "(alpha=3, widths [2,2], omega=1, d=2, planted labels with 10% noise, median of 3 runs)",
    exclusive=True,  # its verdict rests on timings: nothing runs beside it
)
def linear_in_n(ctx: Context) -> Result:
    sizes = ctx.pick(smoke=[300, 3_000], quick=[10**3, 10**4, 10**5, 10**6])
    repeats = ctx.pick(smoke=1, quick=3)
    dp_t, bf_t, cp_t, states = [], [], [], []
    for i, n in enumerate(sizes):
        inst = planted_instance(3, [2, 2], 1, n, d=2, noise=0.1, seed=ctx.seed)
        t, res = _median_time(lambda inst=inst: solve_signature_dp(_fresh(inst)), repeats)
        dp_t.append(t)
        states.append(res.stats["max_states"])
        bf_t.append(_median_time(lambda inst=inst: solve_brute_force(_fresh(inst)), 1)[0])
        if _have_ortools() and n <= 10**4:
            cp_t.append(_median_time(lambda inst=inst: solve_cpsat(_fresh(inst)), 1)[0])
        ctx.report((i + 1) / len(sizes), f"n={n}")
    dp_slope, bf_slope = _slope(sizes, dp_t), _slope(sizes, bf_t)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(sizes, dp_t, "o-", label=f"signature DP (slope {dp_slope:.2f})")
    ax.loglog(sizes, bf_t, "s-", label=f"brute force (slope {bf_slope:.2f})")
    if cp_t:
        ax.loglog(sizes[: len(cp_t)], cp_t, "^-", label="CP-SAT")
    ax.loglog(sizes, dp_t[0] * np.asarray(sizes) / sizes[0], "k:", lw=0.8, label="linear")
    ax.set_xlabel("n (data points)")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    path = ctx.save_figure(fig, SLUG, "linear-in-n")
    return Result.judge(
        metrics={
            "n": sizes,
            "dp_seconds": dp_t,
            "dp_slope": dp_slope,
            "dp_states": states,
            "dp_seconds_at_max_n": dp_t[-1],
        },
        baseline={
            "brute_force": {"seconds": bf_t, "slope": bf_slope},
            "cpsat": {"seconds": cp_t} if cp_t else {"skipped": "ortools not installed"},
        },
        required={"DP slope <= 1.15": dp_slope <= 1.15, "DP time at max n <= 5 s": dp_t[-1] <= 5.0},
        figures=[path],
    )


@claim(
    paper=SLUG,
    name="alpha-in-exponent",
    statement="Hardness comes from the input dimension: the DP's time explodes with alpha "
    "(the number p <= d^alpha of distinct inputs), not with n",
    paper_value="W[2]-hard in alpha alone; FPT in alpha + width + omega",
    criterion="median DP time(alpha=5) / time(alpha=2) >= 50 (n=2000, widths [2,2], omega=1, d=2)",
    exclusive=True,  # its verdict rests on timings: nothing runs beside it
)
def alpha_in_exponent(ctx: Context) -> Result:
    alphas = ctx.pick(smoke=[2, 3, 4, 5], quick=[2, 3, 4, 5, 6], full=[2, 3, 4, 5, 6, 7])
    bf_alphas = ctx.pick(smoke=[2, 3], quick=[2, 3, 4], full=[2, 3, 4, 5])
    repeats = ctx.pick(smoke=3, quick=5)
    dp_t, bf_t, states, p_values = [], [], [], []
    for i, alpha in enumerate(alphas):
        inst = planted_instance(alpha, [2, 2], 1, 2000, d=2, noise=0.1, seed=ctx.seed)
        t, res = _median_time(lambda inst=inst: solve_signature_dp(_fresh(inst)), repeats)
        dp_t.append(t)
        states.append(res.stats["max_states"])
        p_values.append(res.stats["distinct_inputs"])
        if alpha in bf_alphas:
            bf_t.append(_median_time(lambda inst=inst: solve_brute_force(_fresh(inst)), 1)[0])
        ctx.report((i + 1) / len(alphas), f"alpha={alpha}")
    ratio = dp_t[alphas.index(5)] / dp_t[alphas.index(2)]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.semilogy(alphas, dp_t, "o-", label="signature DP")
    ax.semilogy(bf_alphas, bf_t, "s-", label="brute force")
    for a, t, s in zip(alphas, dp_t, states):
        ax.annotate(f"{s} states", (a, t), fontsize=7, textcoords="offset points", xytext=(3, -10))
    ax.set_xlabel("input dimension alpha")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    path = ctx.save_figure(fig, SLUG, "alpha-in-exponent")
    return Result.judge(
        metrics={
            "alpha": alphas,
            "dp_seconds": dp_t,
            "dp_max_states": states,
            "distinct_inputs": p_values,
            "ratio_alpha5_over_alpha2": ratio,
            # Second, named criterion (ours, reported, not the verdict): the same threshold on the
            # DP's largest state table, which is machine-independent; at small alpha the wall
            # time is dominated by fixed per-call costs.
            "states_ratio_alpha5_over_alpha2": states[alphas.index(5)] / states[alphas.index(2)],
            "states_criterion_holds": states[alphas.index(5)] / states[alphas.index(2)] >= 50,
            "dp_log10_growth_per_alpha": float(np.polyfit(alphas, np.log10(dp_t), 1)[0]),
        },
        baseline={
            "brute_force": {
                "alpha": bf_alphas,
                "seconds": bf_t,
                "log10_growth_per_alpha": float(np.polyfit(bf_alphas, np.log10(bf_t), 1)[0]),
            }
        },
        required={"DP time(alpha=5)/time(alpha=2) >= 50": ratio >= 50},
        figures=[path],
    )


@claim(
    paper=SLUG,
    name="depth-linear",
    statement="Depth costs the DP linearly (its state space depends on width, not depth) but "
    "brute force exponentially (each width-2 layer multiplies assignments by 2^6)",
    paper_value="FPT in alpha + width + omega (Cor. 2), independent of depth",
    criterion="median DP time(k=4)/time(k=1) <= 10 and brute-force time(k=3)/time(k=2) >= 20 "
    "(alpha=2, width 2, omega=1, d=2, random labels, n=200)",
    exclusive=True,  # its verdict rests on timings: nothing runs beside it
)
def depth_linear(ctx: Context) -> Result:
    depths = ctx.pick(smoke=[1, 2, 3, 4], quick=[1, 2, 3, 4, 6, 8])
    repeats = ctx.pick(smoke=3, quick=5)
    bf_depths = [1, 2, 3, 4]
    cap = ctx.pick(smoke=0.3, quick=20.0, full=60.0)
    dp_t, bf_t, bf_capped = [], [], []
    for i, k in enumerate(depths):
        inst = random_labels_instance(2, [2] * k, 1, 200, d=2, seed=ctx.seed)
        dp_t.append(_median_time(lambda inst=inst: solve_signature_dp(_fresh(inst)), repeats)[0])
        if k in bf_depths:
            start = time.perf_counter()
            res = solve_brute_force(inst, time_limit=cap)
            bf_t.append(time.perf_counter() - start)
            bf_capped.append(res.status == "time_limit")
        ctx.report((i + 1) / len(depths), f"depth={k}")
    dp_ratio = dp_t[depths.index(4)] / dp_t[depths.index(1)]
    bf_ratio = bf_t[2] / bf_t[1]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.semilogy(depths, dp_t, "o-", label="signature DP")
    ax.semilogy(bf_depths, bf_t, "s-", label="brute force")
    for k, t, c in zip(bf_depths, bf_t, bf_capped):
        if c:
            ax.annotate(">= cap", (k, t), fontsize=8, textcoords="offset points", xytext=(3, 3))
    ax.set_xlabel("hidden layers k (width 2)")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    path = ctx.save_figure(fig, SLUG, "depth-linear")
    return Result.judge(
        metrics={
            "depth": depths,
            "dp_seconds": dp_t,
            "dp_ratio_k4_over_k1": dp_ratio,
            "dp_slope_seconds_per_layer": float(np.polyfit(depths, dp_t, 1)[0]),
        },
        baseline={
            "brute_force": {
                "depth": bf_depths,
                "seconds": bf_t,
                "capped_at_s": cap,
                "capped": bf_capped,
                "ratio_k3_over_k2": bf_ratio,
                "log10_growth_per_layer": float(
                    np.polyfit(bf_depths[:3], np.log10(bf_t[:3]), 1)[0]
                ),
            }
        },
        required={
            "DP time(k=4)/time(k=1) <= 10": dp_ratio <= 10,
            "brute force time(k=3)/time(k=2) >= 20": bf_ratio >= 20,
        },
        figures=[path],
    )
