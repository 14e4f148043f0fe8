"""Claim checks of the CDA paper: accuracy across real sets, fit-time scaling, kernel CDA."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import rankdata  # noqa: E402
from sklearn.datasets import make_circles, make_classification, make_moons  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import StratifiedShuffleSplit  # noqa: E402
from sklearn.neighbors import NearestCentroid  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from iclr26.claims import Context, Result, claim, mark_threshold, slope_guide  # noqa: E402
from iclr26.classic.cda.estimator import CDAClassifier  # noqa: E402
from iclr26.classic.cda.kernel import median_bandwidth, squared_distances  # noqa: E402
from iclr26.data import load  # noqa: E402

SLUG = "cda"


def auroc(y: np.ndarray, scores: np.ndarray, classes: np.ndarray) -> float:
    """Binary AUROC, or the macro one-vs-rest AUROC of per-class decision scores.

    For K > 2 a class is ranked by its margin s_c - max_{c' != c} s_c' rather than by its raw
    score: the raw score of a linear model cannot rank a "middle" class against both of its
    neighbours (LDA's raw versicolor score on iris has one-vs-rest AUROC 0.5), while the
    margin is what the prediction uses and is invariant to rescaling the scores.
    """
    if scores.ndim == 1:
        return float(roc_auc_score(y == classes[1], scores))
    values = []
    for k, c in enumerate(classes):
        margin = scores[:, k] - np.delete(scores, k, axis=1).max(axis=1)
        values.append(roc_auc_score(y == c, margin))
    return float(np.mean(values))


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # NearestCentroid notes constant pixels (digits, lfw); harmless for its centroids
        warnings.filterwarnings("ignore", message=".*zero standard deviation", category=UserWarning)
        return model.fit(X, y)


# ---------------------------------------------------------------- C1: accuracy across sets

C1_DATASETS = ("digits", "breast_cancer", "wine", "iris", "lfw_subset", "synthetic")
C1_BASELINES = ("lda", "logreg", "linear_svc")


def _c1_data(name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "synthetic":
        return make_classification(
            n_samples=1500,
            n_features=300,
            n_informative=30,
            n_classes=3,
            class_sep=0.8,
            random_state=seed,
        )
    data = load(name)
    return data.X, data.y


def _c1_models(max_iter: int, n_null: int, seed: int) -> dict:
    return {
        "cda": CDAClassifier(max_iter=max_iter, n_null=n_null, random_state=seed),
        "lda": LinearDiscriminantAnalysis(solver="svd"),
        "logreg": LogisticRegression(max_iter=2000),
        "linear_svc": LinearSVC(random_state=seed),
        "nearest_centroid": NearestCentroid(),
    }


@claim(
    paper=SLUG,
    name="accuracy-ranks",
    statement=(
        "Across real datasets (multiclass via one-vs-one ECOC) CDA ranks at least as well as "
        "LDA, logistic regression and linear SVM on test AUROC, and beats the centroid "
        "direction it starts from"
    ),
    paper_value=(
        "mean AUROC rank over 27 datasets: CDA 3.3, SVM 3.8, LDA 4.0, LR 4.5; top-2 on 17/27"
    ),
    criterion=(
        "reproduced if CDA's mean AUROC rank among {CDA, LDA, LR, LinearSVC} <= the best "
        "baseline's and CDA's mean AUROC > NearestCentroid's on >= 5/6 of the datasets; "
        "partial if CDA's mean AUROC is within 0.01 of the best baseline's"
    ),
    timeout_s={"smoke": 120, "quick": 300, "full": 3600},
)
def accuracy_ranks(ctx: Context) -> Result:
    datasets = ctx.pick(smoke=("iris", "breast_cancer"), quick=C1_DATASETS)
    n_splits = ctx.pick(smoke=1, quick=3, full=5)
    max_iter = ctx.pick(smoke=3, quick=30, full=50)
    n_null = ctx.pick(smoke=20, quick=100)
    methods = ("cda",) + C1_BASELINES + ("nearest_centroid",)
    auc = {m: np.zeros((len(datasets), n_splits)) for m in methods}
    acc = {m: np.zeros((len(datasets), n_splits)) for m in methods}
    with threadpool_limits(1):
        for d, name in enumerate(datasets):
            X, y = _c1_data(name, ctx.seed)
            splitter = StratifiedShuffleSplit(n_splits, test_size=0.2, random_state=ctx.seed)
            for s, (train, test) in enumerate(splitter.split(X, y)):
                scaler = StandardScaler().fit(X[train])
                X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
                for m, model in _c1_models(max_iter, n_null, ctx.seed + s).items():
                    _quiet_fit(model, X_train, y[train])
                    scores = model.decision_function(X_test)
                    auc[m][d, s] = auroc(y[test], scores, model.classes_)
                    acc[m][d, s] = float(np.mean(model.predict(X_test) == y[test]))
                ctx.report((d * n_splits + s + 1) / (len(datasets) * n_splits), name)

    ranked = ("cda",) + C1_BASELINES
    scores = np.stack([auc[m] for m in ranked])  # (methods, datasets, splits)
    ranks = rankdata(-scores, axis=0)  # 1 = best, ties averaged
    mean_rank = {m: float(ranks[i].mean()) for i, m in enumerate(ranked)}
    mean_auc = {m: float(auc[m].mean()) for m in methods}
    best_baseline = min(C1_BASELINES, key=lambda m: mean_rank[m])
    best_auc_baseline = max(C1_BASELINES, key=lambda m: mean_auc[m])
    per_dataset = {m: auc[m].mean(axis=1) for m in methods}
    beats_nc = int(np.sum(per_dataset["cda"] > per_dataset["nearest_centroid"]))

    metrics = {
        "cda_mean_rank": mean_rank["cda"],
        "cda_mean_auroc": mean_auc["cda"],
        "cda_mean_accuracy": float(acc["cda"].mean()),
        "cda_beats_nearest_centroid": f"{beats_nc}/{len(datasets)}",
        "cda_auroc_per_dataset": dict(zip(datasets, per_dataset["cda"])),
        "cda_auroc_std_per_dataset": dict(zip(datasets, auc["cda"].std(axis=1))),
        "n_splits": n_splits,
        "max_iter": max_iter,
    }
    baseline = {
        m: {
            "mean_rank": mean_rank.get(m),
            "mean_auroc": mean_auc[m],
            "mean_accuracy": float(acc[m].mean()),
            "auroc_per_dataset": dict(zip(datasets, per_dataset[m])),
        }
        for m in methods
        if m != "cda"
    }
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={
            f"CDA mean rank <= best baseline ({best_baseline})": mean_rank["cda"]
            <= mean_rank[best_baseline],
            "CDA beats NearestCentroid on >= 5/6 of datasets": beats_nc
            >= np.ceil(5 * len(datasets) / 6),
        },
        partial={
            f"CDA mean AUROC within 0.01 of the best baseline ({best_auc_baseline})": mean_auc[
                "cda"
            ]
            >= mean_auc[best_auc_baseline] - 0.01,
        },
    )
    fig = _plot_c1(datasets, per_dataset, mean_rank, methods, best_baseline)
    return ctx.save_judged(fig, SLUG, "accuracy-ranks", result)


def _plot_c1(datasets, per_dataset, mean_rank, methods, best_baseline):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(3, 1))
    width = 0.8 / len(methods)
    x = np.arange(len(datasets))
    for k, m in enumerate(methods):
        left.bar(x + k * width, per_dataset[m], width, label=m)
    # CDA's bar must exceed NearestCentroid's on >= 5/6 of the datasets
    left.hlines(per_dataset["nearest_centroid"], x - width / 2, x + 0.8 - width / 2,
                colors="black", linestyles="--", linewidth=1.0, alpha=0.7,
                label="NearestCentroid (CDA above on >= 5/6)")  # fmt: skip
    left.set_xticks(x + 0.4 - width / 2, datasets, rotation=20)
    low = min(float(np.min(v)) for v in per_dataset.values())
    left.set_ylim(max(0.0, low - 0.05), 1.0)
    left.set_ylabel("test AUROC (mean over splits)")
    left.legend(fontsize=8, ncol=len(methods), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    ranked = list(mean_rank)
    right.bar(ranked, [mean_rank[m] for m in ranked], color="tab:gray")
    mark_threshold(right, mean_rank[best_baseline], f"CDA <= best baseline ({best_baseline})")
    right.set_ylabel("mean AUROC rank (1 = best)")
    right.tick_params(axis="x", rotation=30)
    right.legend(fontsize=7)
    return fig


# ---------------------------------------------------------------- C2: fit-time scaling


def _slope(sizes, values) -> float:
    """Least-squares log-log slope through the finite (size, value) pairs (NaN with < 2)."""
    sizes, values = np.asarray(sizes, float), np.asarray(values, float)
    ok = np.isfinite(values) & (values > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(sizes[ok]), np.log(values[ok]), 1)[0])


def _extrapolate(sizes, times, size) -> float:
    """Time expected at ``size`` from a log-log line through the measured (size, time) pairs;
    0 when fewer than two finite measurements exist."""
    slope = _slope(sizes, times)
    if not np.isfinite(slope):
        return 0.0
    return float(times[-1] * (size / sizes[-1]) ** slope)


def _c2_factories(max_iter: int, n_null: int, seed: int) -> dict:
    return {
        "cda": lambda: CDAClassifier(max_iter=max_iter, n_null=n_null, random_state=seed),
        "lda": lambda: LinearDiscriminantAnalysis(solver="svd"),
        "svc_linear": lambda: SVC(kernel="linear"),
        "linear_svc": lambda: LinearSVC(random_state=seed),
        "logreg": lambda: LogisticRegression(max_iter=1000),
    }


def _work_count(method: str, model, n: int, m: int) -> float:
    """Load-free operation count of one fit (multiply-adds), from what the fit itself did.

    CDA: products of the data with a direction (N M each) plus candidate projections scored by
    the K-fold cut search (K N log2 N each): O(NM + N log N) per iteration, times the
    iterations it ran. SVC (libsvm SMO): each iteration touches up to two kernel rows of N
    entries, M multiply-adds each, so 2 n_iter N M (an upper bound: the kernel cache saves some).
    LDA (SVD solver): the SVD of the N x M centred data, 4 N M^2 + 8 M^3 (the textbook count,
    a formula, not a measurement). LIBLINEAR and L-BFGS: n_iter passes over the data, N M each.
    """
    n, m = float(n), float(m)  # numpy integer counts would overflow at full scale
    if method == "cda":
        projections = float(np.sum(model.n_projections_, dtype=np.float64))
        scored = float(np.sum(model.n_scored_, dtype=np.float64))
        return projections * n * m + scored * model.n_folds * n * np.log2(max(n, 2.0))
    if method == "svc_linear":
        return 2.0 * float(np.sum(model.n_iter_, dtype=np.float64)) * n * m
    if method == "lda":
        return 4.0 * n * m**2 + 8.0 * m**3
    return float(np.max(np.atleast_1d(model.n_iter_))) * n * m


def _timed_fit(ctx: Context, factory, X, y, method: str) -> dict:
    """One fit timed by ``ctx.timeit`` (one thread, minimum of up to 3 runs, a fit longer than
    1 s is run once) with its load-free operation count beside the times."""
    timing = ctx.timeit(
        lambda: _quiet_fit(factory(), X, y), repeat=3, warmup=0, threads=1, max_total_s=1.0
    )
    model = timing.value
    record = timing.count(ops=_work_count(method, model, *X.shape)).to_dict()
    if method == "cda":
        record["count_n_iter"] = int(model.n_iter_[0])
        record["count_n_projections"] = int(model.n_projections_[0])
        record["count_n_scored"] = int(model.n_scored_[0])
    elif hasattr(model, "n_iter_"):
        record["count_n_iter"] = int(np.max(np.atleast_1d(model.n_iter_)))
    return record


@claim(
    paper=SLUG,
    name="fit-time-scaling",
    statement=(
        "CDA's training cost grows about linearly in the number of features and samples, "
        "unlike LDA (quadratic-cubic in features) and kernel/dual SVM (super-linear in samples), "
        "and CDA trains faster than both at the largest sizes"
    ),
    paper_value="CDA O(NM + N log N) vs LDA O(NM^2 + M^3) and SVM O(N^2-N^3)",
    criterion=(
        "reproduced if the log-log slopes of the load-free operation counts satisfy CDA vs M "
        "<= 1.2, CDA vs N <= 1.3 and SVC(linear) (2 x SMO iterations x N x M) vs N >= 1.5; "
        "the CPU-time slopes (ctx.timeit, one thread, minimum of runs) satisfy CDA vs M <= 1.2, "
        "CDA vs N <= 1.3 and LDA vs M >= 1.5 (LDA's SVD has no measured count); CDA's CPU time "
        "is below LDA's at the largest M and below SVC(linear)'s at the largest N; and every "
        "size was measured (none skipped past the CPU cap); "
        "partial if only the slope conditions hold"
    ),
    timeout_s={"smoke": 120, "quick": 300, "full": 7200},
    exclusive=True,  # its verdict rests partly on timings: nothing runs beside it
)
def fit_time_scaling(ctx: Context) -> Result:
    n_fixed = ctx.pick(smoke=300, quick=4000)
    m_values = ctx.pick(smoke=[20, 40, 80], quick=[250, 500, 1000, 2000])
    m_fixed = ctx.pick(smoke=20, quick=100)
    # the largest N is the one whose SVC(linear) fit stays well inside the CPU cap (about 11 s
    # of CPU at N = 8000 on one core), so no size of the sweep is truncated
    n_values = ctx.pick(
        smoke=[200, 400, 800],
        quick=[1000, 2000, 4000, 8000],
        full=[2000, 4000, 8000, 16000, 32000],
    )
    svc_cap = ctx.pick(smoke=20.0, quick=60.0, full=1200.0)
    factories = _c2_factories(ctx.pick(smoke=3, quick=50), ctx.pick(smoke=20, quick=100), ctx.seed)
    # LIBLINEAR is timed in the N sweep only: on the wide (N=4000, M=2000) set its solver needs
    # 45-65 s of CPU, more than the whole quick budget of this check.
    sweep_m_methods = ("cda", "lda", "logreg")
    sweep_n_methods = ("cda", "lda", "svc_linear", "linear_svc", "logreg")

    X_wide, y_wide = make_classification(
        n_samples=n_fixed,
        n_features=max(m_values),
        n_informative=20,
        n_redundant=0,
        shuffle=False,
        random_state=ctx.seed,
    )
    X_tall, y_tall = make_classification(
        n_samples=max(n_values),
        n_features=m_fixed,
        n_informative=20,
        n_redundant=0,
        random_state=ctx.seed + 1,
    )
    runs_m = {m: [] for m in sweep_m_methods}
    runs_n = {m: [] for m in sweep_n_methods}
    skipped = []
    steps = len(m_values) + len(n_values)
    for k, m_features in enumerate(m_values):
        X = np.ascontiguousarray(X_wide[:, :m_features])
        for method in sweep_m_methods:
            runs_m[method].append(_timed_fit(ctx, factories[method], X, y_wide, method))
        ctx.report((k + 1) / steps, f"M={m_features}")
    for k, n_samples in enumerate(n_values):
        X, y = X_tall[:n_samples], y_tall[:n_samples]
        for method in sweep_n_methods:
            if method == "svc_linear":
                done = [r["cpu_s"] for r in runs_n[method]]
                expected = _extrapolate(n_values[:k], done, n_samples)
                if expected > svc_cap:  # do not spend the budget on a fit known to pass the cap
                    skipped.append(f"SVC(linear) at N={n_samples}: extrapolated {expected:.0f} s")
                    runs_n[method].append({"cpu_s": float("inf"), "count_ops": float("nan")})
                    continue
            runs_n[method].append(_timed_fit(ctx, factories[method], X, y, method))
        ctx.report((len(m_values) + k + 1) / steps, f"N={n_samples}")

    def column(runs, key):
        return [r.get(key, float("nan")) for r in runs]

    times_m = {m: column(runs_m[m], "cpu_s") for m in sweep_m_methods}
    times_n = {m: column(runs_n[m], "cpu_s") for m in sweep_n_methods}
    ops_m = {m: column(runs_m[m], "count_ops") for m in sweep_m_methods}
    ops_n = {m: column(runs_n[m], "count_ops") for m in sweep_n_methods}
    time_slope_m = {m: _slope(m_values, times_m[m]) for m in sweep_m_methods}
    time_slope_n = {m: _slope(n_values, times_n[m]) for m in sweep_n_methods}
    ops_slope_m = {m: _slope(m_values, ops_m[m]) for m in sweep_m_methods}
    ops_slope_n = {m: _slope(n_values, ops_n[m]) for m in sweep_n_methods}
    cda_m, lda_m = times_m["cda"][-1], times_m["lda"][-1]
    cda_n, svc_n = times_n["cda"][-1], times_n["svc_linear"][-1]

    slope_checks = {
        "CDA operation-count slope vs M <= 1.2": ops_slope_m["cda"] <= 1.2,
        "CDA operation-count slope vs N <= 1.3": ops_slope_n["cda"] <= 1.3,
        "SVC(linear) operation-count slope vs N >= 1.5": ops_slope_n["svc_linear"] >= 1.5,
        "CDA CPU-time slope vs M <= 1.2": time_slope_m["cda"] <= 1.2,
        "CDA CPU-time slope vs N <= 1.3": time_slope_n["cda"] <= 1.3,
        "LDA CPU-time slope vs M >= 1.5": time_slope_m["lda"] >= 1.5,
    }
    loads = [
        r[key]
        for runs in (*runs_m.values(), *runs_n.values())
        for r in runs
        for key in ("load_before", "load_after")
        if r.get(key) is not None
    ]
    metrics = {
        "cda_ops_slope_vs_M": ops_slope_m["cda"],
        "cda_ops_slope_vs_N": ops_slope_n["cda"],
        "cda_cpu_slope_vs_M": time_slope_m["cda"],
        "cda_cpu_slope_vs_N": time_slope_n["cda"],
        f"lda_over_cda_cpu_at_M{m_values[-1]}": lda_m / cda_m,
        f"svc_over_cda_cpu_at_N{n_values[-1]}": svc_n / cda_n,
        f"liblinear_over_cda_cpu_at_N{n_values[-1]}": times_n["linear_svc"][-1] / cda_n,
        "cda_cpu_s_vs_M": dict(zip(map(str, m_values), times_m["cda"])),
        "cda_cpu_s_vs_N": dict(zip(map(str, n_values), times_n["cda"])),
        "cda_ops_vs_M": dict(zip(map(str, m_values), ops_m["cda"])),
        "cda_ops_vs_N": dict(zip(map(str, n_values), ops_n["cda"])),
        "cda_timings_vs_M": dict(zip(map(str, m_values), runs_m["cda"])),
        "cda_timings_vs_N": dict(zip(map(str, n_values), runs_n["cda"])),
        "skipped": skipped,
        "max_load1": max(loads) if loads else None,
        "fixed_N": n_fixed,
        "fixed_M": m_fixed,
        "threads": 1,
    }
    baseline = {}
    for method in ("lda", "svc_linear", "linear_svc", "logreg"):
        entry = {}
        if method in runs_m:
            entry["cpu_slope_vs_M"] = time_slope_m[method]
            entry["ops_slope_vs_M"] = ops_slope_m[method]
            entry["cpu_s_vs_M"] = dict(zip(map(str, m_values), times_m[method]))
            entry["ops_vs_M"] = dict(zip(map(str, m_values), ops_m[method]))
        entry["cpu_slope_vs_N"] = time_slope_n[method]
        entry["ops_slope_vs_N"] = ops_slope_n[method]
        entry["cpu_s_vs_N"] = dict(zip(map(str, n_values), times_n[method]))
        entry["ops_vs_N"] = dict(zip(map(str, n_values), ops_n[method]))
        entry["timings_vs_N"] = dict(zip(map(str, n_values), runs_n[method]))
        baseline[method] = entry
    required = dict(slope_checks)
    required[f"CDA faster than LDA at M={m_values[-1]}"] = cda_m < lda_m
    required[f"CDA faster than SVC(linear) at N={n_values[-1]}"] = cda_n < svc_n and np.isfinite(
        svc_n
    )
    required["every size measured (none skipped past the CPU cap)"] = not skipped
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required=required,
        partial=slope_checks,
        note="; ".join(skipped),
    )
    fig = _plot_c2(m_values, times_m, ops_m, n_values, times_n, ops_n, n_fixed, m_fixed)
    return ctx.save_judged(fig, SLUG, "fit-time-scaling", result)


# the slope criteria of C2: (row, column) -> [(method, slope, "<=" or ">=")]
C2_SLOPE_BOUNDS = {
    (0, 0): [("cda", 1.2, "<="), ("lda", 1.5, ">=")],
    (1, 0): [("cda", 1.2, "<=")],
    (0, 1): [("cda", 1.3, "<=")],
    (1, 1): [("cda", 1.3, "<="), ("svc_linear", 1.5, ">=")],
}


def _plot_c2(m_values, times_m, ops_m, n_values, times_n, ops_n, n_fixed, m_fixed):
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex="col")
    panels = (
        (0, m_values, times_m, ops_m, f"features M (N = {n_fixed})"),
        (1, n_values, times_n, ops_n, f"samples N (M = {m_fixed})"),
    )
    for col, sizes, times, ops, label in panels:
        for row, values_by_method, ylabel in (
            (0, times, "fit CPU time (s, one thread, min of runs)"),
            (1, ops, "operation count (multiply-adds)"),
        ):
            ax = axes[row, col]
            colours = {}
            for method, values in values_by_method.items():
                values = np.asarray(values, float)
                ok = np.isfinite(values) & (values > 0)
                (line,) = ax.loglog(np.asarray(sizes)[ok], values[ok], "o-", label=method)
                colours[method] = line.get_color()
            for method, slope, side in C2_SLOPE_BOUNDS[(row, col)]:
                slope_guide(ax, sizes, values_by_method[method], slope,
                             f"{method} slope {side} {slope}", color=colours[method])  # fmt: skip
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=6)
        axes[1, col].set_xlabel(label)
    return fig


# ---------------------------------------------------------------- C3: kernel CDA

C3_DATASETS = ("moons", "circles", "digits_3v5_noisy")


def _c3_data(name: str, n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "moons":
        return make_moons(n_samples=n_samples, noise=0.25, random_state=seed)
    if name == "circles":
        return make_circles(n_samples=n_samples, factor=0.5, noise=0.1, random_state=seed)
    digits = load("digits")
    keep = np.isin(digits.y, (3, 5))
    X, y = digits.X[keep].copy(), (digits.y[keep] == 5).astype(int)
    noisy = rng.random(X.shape) < 0.2  # 20% of pixels replaced, independently of the label
    X[noisy] = rng.integers(0, 17, size=int(noisy.sum()))
    return X, y


@claim(
    paper=SLUG,
    name="kernel-vs-linear",
    statement=(
        "Kernel CDA (Gaussian kernel, coefficients in the RKHS) improves on linear CDA on "
        "nonlinear tasks and is comparable with a kernel SVM"
    ),
    paper_value=(
        "test AUROC: SVHN subset kernel CDA 0.777 vs linear CDA 0.671 vs linear SVM 0.663; "
        "Fracture3D kernel CDA 0.625 vs kernel SVM 0.624"
    ),
    criterion=(
        "reproduced if kernel-CDA AUROC >= linear-CDA AUROC + 0.05 on moons and circles, and "
        "kernel-CDA AUROC is no more than 0.02 below RBF-SVC (same median-distance bandwidth) "
        "on moons, circles and noisy digits 3-vs-5"
    ),
    timeout_s={"smoke": 120, "quick": 300, "full": 3600},
)
def kernel_vs_linear(ctx: Context) -> Result:
    n_samples = ctx.pick(smoke=200, quick=1000)
    repeats = ctx.pick(smoke=1, quick=2, full=5)
    max_iter = ctx.pick(smoke=3, quick=30, full=50)
    n_null = ctx.pick(smoke=20, quick=100)
    methods = ("kernel_cda", "linear_cda", "rbf_svc")
    auc = {m: np.zeros((len(C3_DATASETS), repeats)) for m in methods}
    with threadpool_limits(1):
        for d, name in enumerate(C3_DATASETS):
            for r in range(repeats):
                seed = ctx.seed + r
                X, y = _c3_data(name, n_samples, seed)
                splitter = StratifiedShuffleSplit(1, test_size=0.2, random_state=seed)
                train, test = next(splitter.split(X, y))
                scaler = StandardScaler().fit(X[train])
                X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
                sigma = median_bandwidth(squared_distances(X_train, X_train), 1.0)
                models = {
                    "kernel_cda": CDAClassifier(
                        kernel="rbf", max_iter=max_iter, n_null=n_null, random_state=seed
                    ),
                    "linear_cda": CDAClassifier(
                        max_iter=max_iter, n_null=n_null, random_state=seed
                    ),
                    "rbf_svc": SVC(kernel="rbf", gamma=1.0 / (2.0 * sigma**2)),
                }
                for m, model in models.items():
                    model.fit(X_train, y[train])
                    auc[m][d, r] = roc_auc_score(y[test], model.decision_function(X_test))
                ctx.report((d * repeats + r + 1) / (len(C3_DATASETS) * repeats), name)

    mean = {m: dict(zip(C3_DATASETS, auc[m].mean(axis=1))) for m in methods}
    required = {}
    for name in ("moons", "circles"):
        required[f"kernel CDA >= linear CDA + 0.05 on {name}"] = (
            mean["kernel_cda"][name] >= mean["linear_cda"][name] + 0.05
        )
    for name in C3_DATASETS:
        required[f"kernel CDA >= RBF-SVC - 0.02 on {name}"] = (
            mean["kernel_cda"][name] >= mean["rbf_svc"][name] - 0.02
        )
    result = Result.judge(
        metrics={
            "kernel_cda_auroc": mean["kernel_cda"],
            "kernel_cda_auroc_std": dict(zip(C3_DATASETS, auc["kernel_cda"].std(axis=1))),
            "repeats": repeats,
        },
        baseline={
            "linear_cda": {"auroc": mean["linear_cda"]},
            "rbf_svc": {"auroc": mean["rbf_svc"]},
        },
        required=required,
    )
    fig = _plot_c3(auc, methods, mean)
    return ctx.save_judged(fig, SLUG, "kernel-vs-linear", result)


def _plot_c3(auc, methods, mean):
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(methods)
    x = np.arange(len(C3_DATASETS))
    for k, m in enumerate(methods):
        values = auc[m]
        ax.bar(x + k * width, values.mean(axis=1), width, yerr=values.std(axis=1), label=m)
    # kernel CDA's bar must reach both lines of its dataset (linear + 0.05 on moons/circles)
    lo, hi = x - width / 2, x + 0.8 - width / 2
    linear = [mean["linear_cda"][n] + 0.05 if n in ("moons", "circles") else np.nan
              for n in C3_DATASETS]  # fmt: skip
    ax.hlines(linear, lo, hi, colors="black", linestyles="--", linewidth=1.0,
              label="linear CDA + 0.05")  # fmt: skip
    ax.hlines([mean["rbf_svc"][n] - 0.02 for n in C3_DATASETS], lo, hi, colors="tab:red",
              linestyles=":", linewidth=1.2, label="RBF-SVC - 0.02")  # fmt: skip
    ax.set_xticks(x + 0.4 - width / 2, C3_DATASETS)
    ax.set_ylabel("test AUROC")
    ax.set_ylim(0.4, 1.0)
    ax.legend(fontsize=7, ncol=len(methods) + 2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return fig
