"""Claim checks for the Spectral-Grassmann Wasserstein metric (SGOT) between Koopman operators."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from iclr26.claims import Context, Result, claim  # noqa: E402
from iclr26.timeseries.koopman_ot.barycenter import sgot_barycenter  # noqa: E402
from iclr26.timeseries.koopman_ot.classifier import KoopmanOTClassifier, knn_vote  # noqa: E402
from iclr26.timeseries.koopman_ot.data import (  # noqa: E402
    damped_oscillator,
    load_uea,
    plane_rotation,
    random_orthogonal,
)
from iclr26.timeseries.koopman_ot.metric import (  # noqa: E402
    eta_heuristic,
    got_distance,
    hs_distance,
    martin_distance,
    operator_norm_distance,
    sgot_distance,
    sot_distance,
)
from iclr26.timeseries.koopman_ot.operators import (  # noqa: E402
    SpectralMeasure,
    continuous_eigs,
    estimate_operator,
)

SLUG = "koopman_ot"
FREQS, DECAYS = (1.0, 2.0, 3.0), (0.1, 0.2, 0.3)
NAMES = ("sgot", "hs", "operator", "sot", "got")
REPORTED = NAMES + ("martin",)  # Martin is reported next to the judged distances
MARTIN_HORIZON_UEA = 50  # real series may give |mu| >= 1: a finite observability horizon


def _distances(a, b, eta: float) -> dict[str, float]:
    return {
        "sgot": sgot_distance(a, b, eta=eta),
        "hs": hs_distance(a, b),
        "operator": operator_norm_distance(a, b),
        "sot": sot_distance(a, b),
        "got": got_distance(a, b),
    }


@claim(
    paper=SLUG,
    name="invariance-and-monotonicity",
    statement="SGOT grows monotonically with frequency and subspace shifts and is nearly "
    "constant under a change of sampling rate; HS and operator-norm distances are not invariant",
    paper_value="SGOT monotone in every shift and ~constant under sampling change; HS, operator "
    "norm, Martin saturate/oscillate and change with sampling",
    criterion="SGOT Spearman rho >= 0.95 on the frequency and subspace sweeps and invariance "
    "ratio I <= 0.1, while HS and operator norm have I >= 0.5 (partial: SGOT holds but a "
    "baseline is also invariant)",
)
def invariance_and_monotonicity(ctx: Context) -> Result:
    shifts = ctx.pick(smoke=np.linspace(0, 2, 5), quick=np.linspace(0, 2, 21))
    angles = ctx.pick(smoke=np.linspace(0, np.pi / 2, 4), quick=np.linspace(0, np.pi / 2, 9))
    dts = (0.05, 0.1, 0.2)
    repeats = ctx.pick(smoke=1, quick=3, full=10)
    n_traj = ctx.pick(smoke=5, quick=20)
    eta = eta_heuristic(0.1)
    Q = random_orthogonal(6, ctx.seed)
    rng = np.random.default_rng(ctx.seed)

    def system(shift=0.0, dt=0.1, angle=0.0):
        freqs = (FREQS[0] + shift,) + FREQS[1:]
        x = damped_oscillator(
            freqs,
            DECAYS,
            dt=dt,
            T=200,
            n_traj=n_traj,
            noise=0.01,
            mixing=Q @ plane_rotation(6, angle),
            random_state=int(rng.integers(2**31)),
        )
        return estimate_operator(x, dt, rank=6)

    distance_fns = {
        "sgot": lambda a, c: sgot_distance(a, c, eta=eta),
        "hs": hs_distance,
        "operator": operator_norm_distance,
        "sot": sot_distance,
        "got": got_distance,
        "martin": martin_distance,  # infinite horizon: the systems are stable
    }

    def mean_dist(make_b, ref):
        acc = {k: [] for k in REPORTED}
        for _ in range(repeats):
            b = make_b()
            for k, fn in distance_fns.items():
                acc[k].append(fn(ref, b))
        return {k: float(np.mean(v)) for k, v in acc.items()}

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = system()
        sweep_a = [mean_dist(lambda s=s: system(shift=s), ref) for s in shifts]
        ctx.report(0.4, "frequency sweep")
        sweep_c = [mean_dist(lambda a=a: system(angle=a), ref) for a in angles]
        ctx.report(0.7, "subspace sweep")
        sweep_b = {dt: mean_dist(lambda dt=dt: system(dt=dt), ref) for dt in dts}
        shifted = mean_dist(lambda: system(shift=0.5), ref)
        # the cost of one distance, timed on one pair (reported, not judged)
        probe = system(shift=0.5)
        timed = {
            k: ctx.timeit(lambda fn=fn: fn(ref, probe), repeat=5, number=10).count(
                atoms=ref.rank, feature_dim=ref.R.shape[0]
            )
            for k, fn in distance_fns.items()
        }
    timing = {k: t.cpu_s for k, t in timed.items()}
    rho_a = {k: float(spearmanr(shifts, [d[k] for d in sweep_a])[0]) for k in REPORTED}
    rho_c = {k: float(spearmanr(angles, [d[k] for d in sweep_c])[0]) for k in REPORTED}
    invariance = {k: max(sweep_b[dt][k] for dt in dts) / max(shifted[k], 1e-12) for k in REPORTED}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for k in REPORTED:
        top_a = max(d[k] for d in sweep_a) or 1.0
        axes[0].plot(shifts, [d[k] / top_a for d in sweep_a], label=k)
        top_c = max(d[k] for d in sweep_c) or 1.0
        axes[1].plot(angles, [d[k] / top_c for d in sweep_c], label=k)
        axes[2].plot(dts, [sweep_b[dt][k] / max(shifted[k], 1e-12) for dt in dts], "o-", label=k)
    axes[0].set_xlabel("frequency shift of mode 1 (rad/s)")
    axes[1].set_xlabel("subspace rotation angle (rad)")
    axes[2].set_xlabel("sampling step dt")
    axes[0].set_ylabel("distance / max")
    axes[2].set_ylabel("d(sys@dt, sys@0.1) / d(shift 0.5)")
    axes[2].set_yscale("log")
    axes[0].set_title(f"SGOT Spearman rho {rho_a['sgot']:.3f} (>= 0.95)", fontsize=9)
    axes[1].set_title(f"SGOT Spearman rho {rho_c['sgot']:.3f} (>= 0.95)", fontsize=9)
    # the invariance ratio I is the largest point of each curve here
    ctx.mark_threshold(axes[2], 0.1, "SGOT: I <= 0.1", color="tab:blue")
    ctx.mark_threshold(axes[2], 0.5, "HS, operator: I >= 0.5", color="tab:red")
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=6)
    sgot_ok = rho_a["sgot"] >= 0.95 and rho_c["sgot"] >= 0.95 and invariance["sgot"] <= 0.1
    baselines_variant = invariance["hs"] >= 0.5 and invariance["operator"] >= 0.5
    result = Result.judge(
        metrics={
            "spearman_frequency": rho_a,
            "spearman_subspace": rho_c,
            "invariance_ratio": invariance,
            "eta": eta,
            "repeats": repeats,
            "time_ratio_sgot_over_hs": timing["sgot"] / max(timing["hs"], 1e-12),
            "time_ratio_sgot_over_martin": timing["sgot"] / max(timing["martin"], 1e-12),
            "distance_cpu_s_per_call": timing,
            "distance_timing": {k: t.to_dict() for k, t in timed.items()},
        },
        baseline={
            k: {"rho_frequency": rho_a[k], "rho_subspace": rho_c[k], "invariance": invariance[k]}
            for k in REPORTED
            if k != "sgot"
        },
        required={
            "SGOT rho >= 0.95 (frequency)": rho_a["sgot"] >= 0.95,
            "SGOT rho >= 0.95 (subspace)": rho_c["sgot"] >= 0.95,
            "SGOT invariance ratio <= 0.1": invariance["sgot"] <= 0.1,
            "HS and operator norm invariance ratio >= 0.5": baselines_variant,
        },
        partial={"SGOT conditions hold": sgot_ok},
    )
    return ctx.save_judged(fig, SLUG, "invariance-and-monotonicity", result)


def _zscore_resample(series, mean, std, length):
    out = []
    for s in series:
        z = (s - mean) / std
        grid = np.linspace(0, z.shape[0] - 1, length)
        out.append(
            np.stack(
                [np.interp(grid, np.arange(z.shape[0]), z[:, c]) for c in range(z.shape[1])], axis=1
            ).ravel()
        )
    return np.array(out)


def _stratified(y, size, rng):
    idx = []
    classes, counts = np.unique(y, return_counts=True)
    for c, cnt in zip(classes, counts):
        take = max(1, round(size * cnt / len(y)))
        idx.extend(rng.choice(np.flatnonzero(y == c), min(take, cnt), replace=False))
    return np.sort(np.array(idx))


@claim(
    paper=SLUG,
    name="uea-1nn-classification",
    statement="1-NN classification with SGOT between estimated Koopman operators beats HS, "
    "operator-norm, SOT and GOT distances on UEA multivariate series",
    paper_value="mean rank 1.34 (linear) / 1.48 (RBF) over 14 UEA sets; BasicMotions RBF 0.95",
    criterion="SGOT ranks first (ties allowed) among the 5 operator distances in >= 3 of the "
    "4 (dataset x kernel) cells and has the lowest mean rank (partial: lowest mean rank only)",
    timeout_s={"quick": 900},
)
def uea_classification(ctx: Context) -> Result:
    cells = ctx.pick(
        smoke=[("BasicMotions", "linear")],
        quick=[
            ("BasicMotions", "linear"),
            ("BasicMotions", "rbf"),
            ("JapaneseVowels", "linear"),
            ("JapaneseVowels", "rbf"),
        ],
    )
    # quick: JapaneseVowels on a stratified half of each split (135 + 185 series)
    subset = ctx.pick(smoke={"BasicMotions": 12}, quick={"JapaneseVowels": 0.5}, full={})
    rng = np.random.default_rng(ctx.seed)
    results, ranks, rank6, euclid, times = {}, {}, {}, {}, {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ci, (name, kernel) in enumerate(cells):
            Xtr, ytr = load_uea(name, "train")
            Xte, yte = load_uea(name, "test")
            if name in subset:
                size = subset[name]
                tr = _stratified(ytr, size if size >= 1 else round(size * len(ytr)), rng)
                te = _stratified(yte, size if size >= 1 else round(size * len(yte)), rng)
                Xtr, ytr = [Xtr[i] for i in tr], ytr[tr]
                Xte, yte = [Xte[i] for i in te], yte[te]
            rank = (6 if name == "BasicMotions" else 8) if kernel == "linear" else 10
            landmarks = 200 if name == "BasicMotions" else 100
            accs = {}
            clf = KoopmanOTClassifier(
                rank=rank,
                kernel=kernel,
                metric="sgot",
                eta="loo",
                n_landmarks=landmarks,
                martin_horizon=MARTIN_HORIZON_UEA,
                random_state=ctx.seed,
            )

            def estimate(clf=clf, Xtr=Xtr, ytr=ytr, Xte=Xte):
                return clf.fit(Xtr, ytr).transform_measures(Xte)

            # one timed run each (reported, not judged): CPU seconds, pair counts beside
            timed = ctx.timeit(estimate, repeat=1, warmup=0).count(series=len(Xtr) + len(Xte))
            test = timed.value
            times[f"{name}/{kernel}/estimation+eta"] = timed.cpu_s
            accs["sgot_eta"] = clf.eta_
            for metric in REPORTED:  # every distance on the same estimated operators
                timed = ctx.timeit(
                    lambda metric=metric, test=test, clf=clf: clf.distances(test, metric=metric),
                    repeat=1,
                    warmup=0,
                ).count(pairs=len(test) * len(ytr))
                dist = timed.value
                accs[metric] = float(np.mean(knn_vote(dist, ytr, 1) == yte))
                times[f"{name}/{kernel}/{metric}"] = timed.cpu_s
            order = sorted(NAMES, key=lambda k: -accs[k])
            cell_rank = {k: 1 + sum(accs[j] > accs[k] for j in NAMES) for k in NAMES}
            key = f"{name}/{kernel}"
            # reported only: ranks with Martin as a sixth distance (the paper's table has it)
            rank6[key] = {k: 1 + sum(accs[j] > accs[k] for j in REPORTED) for k in REPORTED}
            results[key] = accs
            ranks[key] = cell_rank
            if name not in euclid:
                pooled = np.concatenate(Xtr)
                mean, std = pooled.mean(0), pooled.std(0) + 1e-12
                length = max(s.shape[0] for s in Xtr)
                a = _zscore_resample(Xtr, mean, std, length)
                b = _zscore_resample(Xte, mean, std, length)
                d = ((b[:, None, :] - a[None, :, :]) ** 2).sum(-1)
                euclid[name] = float(np.mean(knn_vote(d, ytr, 1) == yte))
            ctx.report((ci + 1) / len(cells), f"{key}: best {order[0]}")
    mean_rank = {k: float(np.mean([r[k] for r in ranks.values()])) for k in NAMES}
    wins = sum(r["sgot"] == 1 for r in ranks.values())
    need = min(3, len(ranks))
    lowest = all(mean_rank["sgot"] <= mean_rank[k] for k in NAMES)
    mean_rank6 = {k: float(np.mean([r[k] for r in rank6.values()])) for k in REPORTED}
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    keys = list(results)
    width = 0.13
    for i, k in enumerate(REPORTED):
        ax.bar(
            np.arange(len(keys)) + (i - 2.5) * width, [results[c][k] for c in keys], width, label=k
        )
    # SGOT ranks first in a cell when its bar reaches the best of the other judged distances
    i_s = REPORTED.index("sgot")
    ax.hlines([max(results[c][k] for k in NAMES if k != "sgot") for c in keys],
              np.arange(len(keys)) + (i_s - 3) * width, np.arange(len(keys)) + (i_s - 2) * width,
              colors="black", linestyles="--", linewidth=1.4,
              label=f"best other distance (SGOT first in {wins}/{len(keys)}; >= {need})")  # fmt: skip
    ax.set_xticks(np.arange(len(keys)), keys, fontsize=7)
    ax.set_ylabel("1-NN test accuracy")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=4)
    sgot_time = sum(v for k, v in times.items() if k.endswith("/sgot"))
    hs_time = sum(v for k, v in times.items() if k.endswith("/hs"))
    result = Result.judge(
        metrics={
            "accuracy": results,
            "ranks": ranks,
            "mean_rank": mean_rank,
            "mean_rank_with_martin": mean_rank6,
            "martin_horizon": MARTIN_HORIZON_UEA,
            "sgot_cells_won": wins,
            "cpu_seconds": times,
            "time_ratio_sgot_over_hs_pipeline": sgot_time / max(hs_time, 1e-12),
        },
        baseline={
            "euclidean_1nn": euclid,
            "martin_1nn": {c: results[c]["martin"] for c in results},
        },
        required={f"SGOT first in >= {need} cells": wins >= need, "SGOT lowest mean rank": lowest},
        partial={"SGOT lowest mean rank": lowest},
    )
    return ctx.save_judged(fig, SLUG, "uea-1nn-classification", result)


def _modes(lam: np.ndarray, n_modes: int) -> np.ndarray | None:
    """(decay, frequency) of the ``n_modes`` oscillating modes, sorted by frequency; None when
    the spectrum has fewer complex-conjugate pairs (e.g. a pair collapsed onto the real axis)."""
    upper = lam[lam.imag > 1e-6]
    if len(upper) < n_modes:
        return None
    upper = upper[np.argsort(upper.imag)][-n_modes:]
    return np.stack([-upper.real, upper.imag], axis=1)


def _relative_deviation(lam: np.ndarray, target: np.ndarray) -> float:
    got = _modes(lam, len(target))
    if got is None:
        return float("inf")
    return float(np.max(np.abs(got - target) / np.abs(target)))


def _frechet_objective(X, ends, t: float, eta: float) -> float:
    (a, b) = ends
    return (1 - t) * sgot_distance(X, a, eta=eta) ** 2 + t * sgot_distance(X, b, eta=eta) ** 2


# two damped modes per system: (decay, frequency) of A's and of B's, mode k of A moving to
# mode k of B; B is observed through A's mixing turned by ROTATION in a plane that leaves the
# modes' span
MODES_A = ((0.1, 1.0), (0.2, 2.0))
MODES_B = ((0.5, 3.0), (0.3, 5.0))
ROTATION = np.pi / 6


@claim(
    paper=SLUG,
    name="barycenter-interpolation",
    statement="SGOT Frechet means interpolate decay rate and frequency linearly between two "
    "oscillating systems, unlike linear (HS) interpolation of the operators",
    paper_value="barycentres interpolate decay rate and frequency linearly; HS gets stuck",
    criterion="two systems of two damped modes each (rank 4), observed through different "
    "random mixings: at t in {0.25, 0.5, 0.75} the SGOT barycentre's modes (sorted by "
    "frequency) are within 5% (relative) of the linear interpolation of the endpoints' modes "
    "AND the barycentre's Frechet objective (1-t) SGOT^2(X, A) + t SGOT^2(X, B) is no larger "
    "than the HS interpolant's; the HS interpolation (1-t) G_A + t G_B deviates >= 20% at "
    "t = 0.5",
)
def barycenter_interpolation(ctx: Context) -> Result:
    dt = 0.1
    ts = (0.25, 0.5, 0.75)
    repeats = ctx.pick(smoke=1, quick=5, full=20)
    rng = np.random.default_rng(ctx.seed)
    eta = eta_heuristic(dt)
    rows = {t: {"sgot": [], "hs": [], "objective_sgot": [], "objective_hs": []} for t in ts}
    curves = []
    bary_timings, hs_timings = [], []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for r in range(repeats):
            mixing_a = random_orthogonal(4, int(rng.integers(2**31)))
            mixing_b = mixing_a @ plane_rotation(4, ROTATION, axes=(1, 2))
            ends = []
            for modes, mixing in ((MODES_A, mixing_a), (MODES_B, mixing_b)):
                x = damped_oscillator(
                    [m[1] for m in modes],
                    [m[0] for m in modes],
                    dt=dt,
                    T=200,
                    n_traj=20,
                    noise=0.01,
                    mixing=mixing,
                    random_state=int(rng.integers(2**31)),
                )
                ends.append(estimate_operator(x, dt, rank=4))
            a, b = ends
            modes_a, modes_b = _modes(a.lam, 2), _modes(b.lam, 2)
            for t in ts:
                target = (1 - t) * modes_a + t * modes_b
                timed = ctx.timeit(
                    lambda t=t, ends=ends: sgot_barycenter(ends, [1 - t, t], eta=eta)
                )
                bary = timed.value
                bary_timings.append(timed.cpu_s)
                g_t = (1 - t) * a.G + t * b.G
                timed_hs = ctx.timeit(lambda g_t=g_t: np.linalg.eig(g_t))
                hs_timings.append(timed_hs.cpu_s)
                mu, vecs = timed_hs.value
                keep = np.abs(mu) > 1e-8
                left = np.linalg.inv(vecs).conj().T
                hs = SpectralMeasure(
                    continuous_eigs(mu[keep], dt),
                    vecs[:, keep],
                    left[:, keep],
                    np.ones(int(keep.sum())),
                    dt,
                    mu=mu[keep],
                )
                rows[t]["sgot"].append(_relative_deviation(bary.lam, target))
                rows[t]["hs"].append(_relative_deviation(hs.lam, target))
                rows[t]["objective_sgot"].append(_frechet_objective(bary, ends, t, eta))
                rows[t]["objective_hs"].append(_frechet_objective(hs, ends, t, eta))
                if r == 0:
                    curves.append((t, _modes(bary.lam, 2), _modes(hs.lam, 2), target))
    dev = {t: {k: float(np.mean(v)) for k, v in rows[t].items()} for t in ts}
    objective_ok = {
        t: all(s <= h + 1e-9 for s, h in zip(rows[t]["objective_sgot"], rows[t]["objective_hs"]))
        for t in ts
    }
    fig, (ax, ax_dev) = plt.subplots(1, 2, figsize=(9.5, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    for k, style in ((0, "-"), (1, "--")):
        ax.plot([c[3][k, 0] for c in curves], [c[3][k, 1] for c in curves], "k:")
        ax.plot(
            [c[1][k, 0] for c in curves if c[1] is not None],
            [c[1][k, 1] for c in curves if c[1] is not None],
            "o" + style,
            color="C0",
            label="SGOT barycentre" if k == 0 else None,
        )
        ax.plot(
            [c[2][k, 0] for c in curves if c[2] is not None],
            [c[2][k, 1] for c in curves if c[2] is not None],
            "s" + style,
            color="C1",
            label="HS (linear G)" if k == 0 else None,
        )
    ax.set_xlabel("decay rate")
    ax.set_ylabel("frequency (rad/s)")
    ax.set_title("dotted: linear interpolation of each mode", fontsize=8)
    ax.legend(fontsize=7)
    xt = np.arange(len(ts))
    ax_dev.bar(xt - 0.2, [dev[t]["sgot"] for t in ts], 0.4, color="C0", label="SGOT")
    ax_dev.bar(xt + 0.2, [dev[t]["hs"] for t in ts], 0.4, color="C1", label="HS")
    ctx.mark_threshold(ax_dev, 0.05, "SGOT <= 5% at every t", color="C0")
    ax_dev.hlines(0.20, ts.index(0.5) + 0.0, ts.index(0.5) + 0.4, colors="C1", linestyles="--",
                  label="HS >= 20% at t = 0.5")  # fmt: skip
    ax_dev.set_xticks(xt, [f"t={t}" for t in ts])
    ax_dev.set(ylabel="relative deviation of the modes", title="mode deviation from interpolation")
    ax_dev.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "relative_deviation": {t: dev[t]["sgot"] for t in ts},
            "frechet_objective": {t: dev[t]["objective_sgot"] for t in ts},
            "repeats": repeats,
            "eta": eta,
            "modes_a": MODES_A,
            "modes_b": MODES_B,
            "rotation_rad": ROTATION,
            "barycentre_cpu_s_per_call": float(np.min(bary_timings)),
            "count_barycentre_calls": repeats * len(ts),
            "count_atoms": 4,
        },
        baseline={
            "hs_relative_deviation": {t: dev[t]["hs"] for t in ts},
            "hs_frechet_objective": {t: dev[t]["objective_hs"] for t in ts},
            "hs_eig_cpu_s_per_call": float(np.min(hs_timings)),
        },
        required={
            "SGOT deviation <= 5% at every t": all(dev[t]["sgot"] <= 0.05 for t in ts),
            "SGOT objective <= HS interpolant's at every t": all(objective_ok.values()),
            "HS deviation >= 20% at t = 0.5": dev[0.5]["hs"] >= 0.20,
        },
        partial={
            "SGOT conditions hold": all(dev[t]["sgot"] <= 0.05 for t in ts)
            and all(objective_ok.values())
        },
    )
    return ctx.save_judged(fig, SLUG, "barycenter-interpolation", result)
