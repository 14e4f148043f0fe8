"""Group-fairness metrics of a binary classifier and the paper's bound.

DPD = max_g P(ŷ=1|g) − min_g P(ŷ=1|g); EOD = max(TPR gap, FPR gap) over groups (the worst-case
aggregation of fairlearn's ``equalized_odds_difference`` and of the official script). Groups
that lack positives (TPR undefined) or negatives (FPR undefined) are left out of that gap and
reported. The bound (paper, Sec. 4): with a balanced reference θ̄ of DPD(θ̄)=0,
U(λ) = 2L Σ_g |λ_g − 1| ‖τ_g‖₂, DPD(θ(λ)) ≤ U(λ), EOD(θ(λ)) ≤ EOD(θ̄) + 4 √((B0+B1) U(λ)).
"""

from __future__ import annotations

import warnings

import numpy as np

from iclr26 import validation as V


def _check_labels(value, name: str, n: int | None = None) -> np.ndarray:
    arr = V.check_array(value, name, ndim=1, dtype=None)
    if arr.dtype.kind == "f":
        V.check_finite(arr, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold 0/1 labels, got dtype {arr.dtype}")
    if not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must hold 0/1 labels only")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries, y_true has {n}")
    return arr.astype(np.int64)


def check_groups(groups, n: int, name: str = "groups") -> tuple[np.ndarray, np.ndarray]:
    """Subgroup labels: one hashable label per example, none missing, at least two groups.
    Returns (the distinct labels, integer codes)."""
    if groups is None:
        raise ValueError(f"{name} is missing: fairness needs one subgroup label per example")
    try:
        arr = np.asarray(groups)
    except ValueError as exc:
        raise ValueError(f"{name} could not be read as one label per example: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries for {n} examples")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} has missing (NaN) subgroup labels")
    if arr.dtype.kind == "O":
        bad = [g is None or (isinstance(g, float) and np.isnan(g)) for g in arr]
        if any(bad):
            raise ValueError(f"{name} has {sum(bad)} missing (None/NaN) subgroup labels")
        arr = arr.astype(str)
    levels, codes = np.unique(arr, return_inverse=True)
    if len(levels) < 2:
        raise ValueError(f"{name} must hold at least 2 subgroups, got {len(levels)}")
    return levels, codes


def _rates(y_true, y_pred, codes, n_groups):
    """Per-group selection rate, TPR and FPR, vectorised over a leading bootstrap axis."""
    count = np.stack([np.sum(codes == g, axis=-1) for g in range(n_groups)], -1)
    pos = np.stack([np.sum((codes == g) & (y_true == 1), axis=-1) for g in range(n_groups)], -1)
    sel = np.stack([np.sum((codes == g) & (y_pred == 1), axis=-1) for g in range(n_groups)], -1)
    tp = np.stack(
        [np.sum((codes == g) & (y_true == 1) & (y_pred == 1), -1) for g in range(n_groups)], -1
    )
    fp = sel - tp
    neg = count - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            np.where(count > 0, sel / count, np.nan),
            np.where(pos > 0, tp / pos, np.nan),
            np.where(neg > 0, fp / neg, np.nan),
            count,
        )


def _gap(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: undefined rates
        return np.nanmax(values, axis=-1) - np.nanmin(values, axis=-1)


def fairness_report(
    y_true,
    y_pred,
    groups,
    n_bootstrap: int = 0,
    seed: int = 0,
) -> dict:
    """Accuracy, DPD, EOD (= max of TPR and FPR gaps), the per-group one-vs-rest gaps
    DPD_g = |P(ŷ=1|g) − P(ŷ=1|¬g)| (and EOD_g) with their macro average and worst group, the
    per-group rates, the ground-truth DPD of the labels, and with ``n_bootstrap > 0`` bootstrap
    95 % intervals of accuracy, DPD and EOD."""
    y_true = _check_labels(y_true, "y_true")
    n = y_true.shape[0]
    y_pred = _check_labels(y_pred, "y_pred", n)
    levels, codes = check_groups(groups, n)
    n_bootstrap = V.check_int(n_bootstrap, "n_bootstrap", low=0)
    seed = V.check_int(seed, "seed", low=0)
    G = len(levels)
    sel, tpr, fpr, count = _rates(y_true, y_pred, codes, G)
    tpr_gap, fpr_gap = float(_gap(tpr)), float(_gap(fpr))
    dpd = float(_gap(sel))
    eod = float(np.nanmax([tpr_gap, fpr_gap]))
    label_rate = np.array([y_true[codes == g].mean() for g in range(G)])

    per_group = {}
    ovr_dpd, ovr_eod = [], []
    for g, level in enumerate(levels):
        inside = codes == g
        rest = ~inside
        d = abs(y_pred[inside].mean() - y_pred[rest].mean())
        gaps = []
        for cls in (1, 0):  # TPR (positives), FPR (negatives)
            a, b = inside & (y_true == cls), rest & (y_true == cls)
            if a.any() and b.any():
                gaps.append(abs(y_pred[a].mean() - y_pred[b].mean()))
        e = max(gaps) if gaps else float("nan")
        ovr_dpd.append(d)
        ovr_eod.append(e)
        per_group[str(level)] = {
            "n": int(count[g]),
            "selection_rate": float(sel[g]),
            "tpr": float(tpr[g]),
            "fpr": float(fpr[g]),
            "accuracy": float((y_pred[inside] == y_true[inside]).mean()),
            "label_rate": float(label_rate[g]),
            "dpd_vs_rest": float(d),
            "eod_vs_rest": float(e),
        }
    report = {
        "accuracy": float((y_pred == y_true).mean()),
        "dpd": dpd,
        "eod": eod,
        "tpr_gap": tpr_gap,
        "fpr_gap": fpr_gap,
        "dpd_macro": float(np.mean(ovr_dpd)),
        "dpd_worst": float(np.max(ovr_dpd)),
        "eod_macro": float(np.nanmean(ovr_eod)) if np.isfinite(ovr_eod).any() else float("nan"),
        "eod_worst": float(np.nanmax(ovr_eod)) if np.isfinite(ovr_eod).any() else float("nan"),
        "label_dpd": float(label_rate.max() - label_rate.min()),
        "groups": per_group,
        "tpr_undefined": [str(levels[g]) for g in range(G) if np.isnan(tpr[g])],
        "fpr_undefined": [str(levels[g]) for g in range(G) if np.isnan(fpr[g])],
    }
    if n_bootstrap:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_bootstrap, n))
        yt, yp, cd = y_true[idx], y_pred[idx], codes[idx]
        bsel, btpr, bfpr, _ = _rates(yt, yp, cd, G)
        stats = {
            "accuracy": (yt == yp).mean(axis=1),
            "dpd": _gap(bsel),
            "eod": np.fmax(_gap(btpr), _gap(bfpr)),
        }
        report["ci95"] = {
            k: [float(np.nanpercentile(v, 2.5)), float(np.nanpercentile(v, 97.5))]
            for k, v in stats.items()
        }
    return report


def fairness_bound(
    coeffs,
    tau_norms,
    L: float,
    B0: float,
    B1: float,
    eod_bar: float = 0.0,
) -> dict[str, float]:
    """The paper's bound at per-group coefficients ``coeffs`` (relative to the balanced point:
    λ_g = 1 there; in the sum convention λ_g = G·λ) and task-vector norms ``tau_norms``:
    ``U`` = 2L Σ_g |λ_g − 1| ‖τ_g‖, ``dpd_bound`` = U, ``eod_bound`` = eod_bar + 4√((B0+B1)U).
    L, B0, B1 are the Lipschitz constant of the score and the score-density bounds."""
    coeffs = V.check_array(coeffs, "coeffs", ndim=1, dtype=np.float64)
    tau_norms = V.check_array(tau_norms, "tau_norms", ndim=1, dtype=np.float64, low=0.0)
    if tau_norms.shape != coeffs.shape:
        raise ValueError(
            f"tau_norms has {tau_norms.shape[0]} entries, coeffs has {coeffs.shape[0]}"
        )
    L = V.check_scalar(L, "L", low=0.0)
    B0 = V.check_scalar(B0, "B0", low=0.0)
    B1 = V.check_scalar(B1, "B1", low=0.0)
    eod_bar = V.check_scalar(eod_bar, "eod_bar", low=0.0, high=1.0)
    U = float(2.0 * L * np.sum(np.abs(coeffs - 1.0) * tau_norms))
    return {
        "U": U,
        "dpd_bound": U,
        "eod_bound": float(eod_bar + 4.0 * np.sqrt((B0 + B1) * U)),
    }
