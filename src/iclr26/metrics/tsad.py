"""Threshold-free evaluation of time-series anomaly scores, as the TSB-AD benchmark defines it.

TSB-AD (Liu & Paparrizos, NeurIPS 2024 D&B) ranks detectors by VUS-PR: the volume under the
range-precision/recall surface, i.e. the range-based average precision averaged over label
buffers of width ``0 .. L`` where ``L`` is the period found by :func:`find_period`. Around each
labelled anomaly range the binary labels are softened by ramps ``sqrt(1 - d / l)`` of half-width
``l // 2``; recall is weighted by an existence reward (how many extended ranges got a hit).
Everything here is our own vectorised implementation of those definitions (version "opt",
250 thresholds at evenly spaced ranks of the sorted scores); it agrees with TSB-AD's reference
code to floating-point precision.

Conventions: ``scores`` are one finite float per time step, higher = more anomalous; ``labels``
are 0/1 of the same length with at least one anomalous and one normal step.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import argrelextrema
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

__all__ = [
    "anomaly_ranges",
    "auc_pr",
    "auc_roc",
    "find_period",
    "get_metrics",
    "point_f1",
    "range_f1",
    "range_precision_recall",
    "soft_labels",
    "vus",
]


def _check_scores_labels(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    if s.ndim != 1:
        s = s.squeeze()
        if s.ndim != 1:
            raise ValueError(
                f"scores must be one value per time step, got shape {np.shape(scores)}"
            )
    y = y.squeeze() if y.ndim > 1 else y
    if y.ndim != 1 or y.shape[0] != s.shape[0]:
        raise ValueError(
            f"labels must be a vector of the same length as scores: got {np.shape(labels)} "
            f"for {s.shape[0]} scores"
        )
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or infinite values")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0/1")
    y = y.astype(int)
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.shape[0]:
        raise ValueError("labels need at least one anomalous and one normal time step")
    return s, y


def anomaly_ranges(labels) -> np.ndarray:
    """The maximal runs of 1s in a 0/1 vector as an (R, 2) array of inclusive [start, end]."""
    y = np.asarray(labels).astype(int).ravel()
    edges = np.diff(np.concatenate([[0], y, [0]]))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) - 1
    return np.stack([starts, ends], axis=1) if starts.size else np.zeros((0, 2), dtype=int)


def find_period(x, max_lag: int = 400, default: int = 125) -> int:
    """TSB-AD's sliding-window heuristic: the lag of the highest local ACF maximum.

    Uses the first channel and the first 20,000 points; lags below 3 are skipped. Returns the
    lag (>= 6 and <= 303) or ``default`` (125) when no local maximum qualifies.
    """
    a = np.asarray(x, dtype=float)
    if a.ndim == 2:
        a = a[:, 0]
    elif a.ndim != 1:
        raise ValueError(f"find_period expects (T,) or (T, C), got shape {a.shape}")
    a = a[:20000]
    if a.size < 8 or not np.all(np.isfinite(a)):
        if not np.all(np.isfinite(a)):
            raise ValueError("find_period: the series contains NaN or infinite values")
        return default
    acf = _acf_fft(a, max_lag)
    base = 3
    tail = acf[base:]
    peaks = argrelextrema(tail, np.greater)[0]
    if peaks.size == 0:
        return default
    best = peaks[np.argmax(tail[peaks])]
    if best < 3 or best > 300:
        return default
    return int(best + base)


def _acf_fft(a: np.ndarray, nlags: int) -> np.ndarray:
    """Biased sample autocorrelation via FFT (what ``statsmodels.acf(fft=True)`` returns)."""
    n = a.size
    d = a - a.mean()
    size = 1 << int(np.ceil(np.log2(2 * n - 1)))
    spec = np.fft.rfft(d, size)
    acov = np.fft.irfft(spec * np.conj(spec), size)[:n] / n
    if acov[0] <= 0:
        return np.zeros(min(nlags, n - 1) + 1)
    return acov[: min(nlags, n - 1) + 1] / acov[0]


def auc_roc(scores, labels) -> float:
    s, y = _check_scores_labels(scores, labels)
    return float(roc_auc_score(y, s))


def auc_pr(scores, labels) -> float:
    s, y = _check_scores_labels(scores, labels)
    return float(average_precision_score(y, s))


def point_f1(scores, labels) -> float:
    """Best point-wise F1 over all thresholds (TSB-AD's "Standard-F1")."""
    s, y = _check_scores_labels(scores, labels)
    precision, recall, _ = precision_recall_curve(y, s)
    return float(np.max(2 * precision * recall / (precision + recall + 1e-5)))


def _merged_segments(ranges: np.ndarray, half: int, length: int) -> np.ndarray:
    """Anomaly ranges widened by ``half`` on both sides, merged where they meet (TSB-AD rule:
    two neighbours stay apart only if ``end_i + half < start_{i+1} - half``)."""
    starts = ranges[:, 0] - half
    ends = ranges[:, 1] + half
    split = ends[:-1] < starts[1:]
    seg_starts = np.concatenate([[starts[0]], starts[1:][split]])
    seg_ends = np.concatenate([ends[:-1][split], [ends[-1]]])
    seg_starts = np.maximum(seg_starts, 0)
    seg_ends = np.minimum(seg_ends, length - 1)
    return np.stack([seg_starts, seg_ends], axis=1)


def soft_labels(labels, buffer: int) -> np.ndarray:
    """Labels softened around every anomaly range by ramps ``sqrt(1 - d / buffer)`` over
    ``d = 1 .. buffer // 2`` steps on both sides, clipped at 1 (TSB-AD's ``sequencing``)."""
    y = np.asarray(labels).astype(float).ravel()
    ranges = anomaly_ranges(y)
    return _soft_from_ranges(y, ranges, int(buffer))


def _soft_from_ranges(y: np.ndarray, ranges: np.ndarray, buffer: int) -> np.ndarray:
    out = y.astype(float).copy()
    half = buffer // 2
    if half == 0 or ranges.shape[0] == 0:
        return np.minimum(out, 1.0)
    d = np.arange(1, half + 1)
    ramp = np.sqrt(1.0 - d / buffer)
    n = out.shape[0]
    after = ranges[:, 1:2] + d[None, :]
    before = ranges[:, 0:1] - d[None, :]
    vals = np.broadcast_to(ramp, after.shape)
    for idx in (after, before):
        ok = (idx >= 0) & (idx < n)
        np.add.at(out, idx[ok], vals[ok])
    return np.minimum(out, 1.0)


def _segment_max(s: np.ndarray, segs: np.ndarray) -> np.ndarray:
    """Maximum of ``s`` over each disjoint, sorted inclusive segment."""
    padded = np.concatenate([s, [-np.inf]])
    bounds = np.stack([segs[:, 0], segs[:, 1] + 1], axis=1).ravel()
    return np.maximum.reduceat(padded, bounds)[::2]


def vus(scores, labels, sliding_window: int, n_thresholds: int = 250) -> dict[str, float]:
    """VUS-ROC and VUS-PR (TSB-AD version "opt"): range AUC-ROC / range AP averaged over
    buffers ``l = 0 .. sliding_window``.

    Returns ``{"VUS-ROC": ..., "VUS-PR": ...}``.
    """
    s, y = _check_scores_labels(scores, labels)
    window = int(sliding_window)
    if window < 0:
        raise ValueError(f"sliding_window must be >= 0, got {sliding_window}")
    if n_thresholds < 2:
        raise ValueError("n_thresholds must be >= 2")
    n = s.shape[0]
    ranges = anomaly_ranges(y)
    p_count = float(y.sum())
    # Thresholds at evenly spaced ranks of the descending scores; predictions are nested.
    order_desc = -np.sort(-s)
    thresholds = order_desc[np.linspace(0, n - 1, n_thresholds).astype(int)]
    n_pred = (s[:, None] >= thresholds[None, :]).sum(axis=0).astype(float)
    # Only steps inside the widest extended ranges can carry a soft label.
    support = _merged_segments(ranges, window // 2, n)
    idx = np.concatenate([np.arange(a, b + 1) for a, b in support])
    pred_support = (s[idx, None] >= thresholds[None, :]).astype(float)  # (|S|, K)
    hits_original = pred_support[y[idx] == 1].sum(axis=0)  # predicted anomalous steps, per K

    auc_l = np.empty(window + 1)
    ap_l = np.empty(window + 1)
    for buffer in range(window + 1):
        soft = _soft_from_ranges(y, ranges, buffer)[idx]
        tp = soft @ pred_support
        n_labels = p_count + tp - hits_original  # TSB-AD counts masked soft labels
        segs = _merged_segments(ranges, buffer // 2, n)
        seg_max = _segment_max(s, segs)
        existence = (seg_max[:, None] >= thresholds[None, :]).sum(axis=0) / segs.shape[0]
        p_new = (p_count + n_labels) / 2.0
        recall = np.minimum(tp / p_new, 1.0)
        tpr = recall * existence
        fpr = (n_pred - tp) / (n - p_new)
        precision = tp / n_pred
        tpr_c = np.concatenate([[0.0], tpr, [1.0]])
        fpr_c = np.concatenate([[0.0], fpr, [1.0]])
        auc_l[buffer] = np.dot(np.diff(fpr_c), (tpr_c[1:] + tpr_c[:-1]) / 2)
        ap_l[buffer] = np.dot(np.diff(tpr_c[:-1]), precision)
    return {"VUS-ROC": float(auc_l.mean()), "VUS-PR": float(ap_l.mean())}


def range_precision_recall(pred, labels, alpha: float = 0.2) -> tuple[float, float]:
    """Range-based precision and recall of Tatbul et al. (2018), flat positional bias.

    Recall per real range = ``alpha * existence + (1 - alpha) * overlap * cardinality``, overlap
    being the fraction of the range predicted and cardinality ``1 / #predicted ranges touching
    it``; precision is the same with the roles swapped and ``alpha = 0``.
    """
    p = np.asarray(pred).astype(int).ravel()
    y = np.asarray(labels).astype(int).ravel()
    if p.shape != y.shape:
        raise ValueError("pred and labels must have the same length")
    recall = _range_recall(y, p, alpha)
    precision = _range_recall(p, y, 0.0)
    return precision, recall


def _range_recall(real: np.ndarray, pred: np.ndarray, alpha: float) -> float:
    real_r = anomaly_ranges(real)
    pred_r = anomaly_ranges(pred)
    if real_r.shape[0] == 0:
        return 0.0
    csum = np.concatenate([[0], np.cumsum(pred)])
    covered = csum[real_r[:, 1] + 1] - csum[real_r[:, 0]]
    existence = (covered > 0).astype(float)
    overlap = covered / (real_r[:, 1] - real_r[:, 0] + 1)
    if pred_r.shape[0]:
        touching = (pred_r[None, :, 0] <= real_r[:, None, 1]) & (
            pred_r[None, :, 1] >= real_r[:, None, 0]
        )
        n_touch = touching.sum(axis=1)
    else:
        n_touch = np.zeros(real_r.shape[0])
    cardinality = np.where(n_touch > 0, 1.0 / np.maximum(n_touch, 1), 0.0)
    score = alpha * existence + (1 - alpha) * overlap * cardinality
    return float(score.mean())


def range_f1(scores, labels, n_thresholds: int = 100) -> float:
    """Best range-based F1 (Tatbul et al., flat bias, alpha 0.2) over ``n_thresholds`` evenly
    spaced score thresholds (prediction = score > threshold), as TSB-AD's "R-based-F1"."""
    s, y = _check_scores_labels(scores, labels)
    best = 0.0
    for thr in np.linspace(s.min(), s.max(), n_thresholds):
        precision, recall = range_precision_recall(s > thr, y)
        if precision + recall > 0:
            best = max(best, 2 * precision * recall / (precision + recall))
    return float(best)


def get_metrics(scores, labels, sliding_window: int = 100, n_thresholds: int = 250) -> dict:
    """AUC-PR, AUC-ROC, VUS-PR, VUS-ROC, Standard-F1 and R-based-F1 of one scored series.

    Use ``sliding_window=find_period(series)`` as TSB-AD does, computed once per series and
    shared by every detector.
    """
    s, y = _check_scores_labels(scores, labels)
    out = {"AUC-PR": auc_pr(s, y), "AUC-ROC": auc_roc(s, y)}
    out.update(vus(s, y, sliding_window, n_thresholds))
    out["Standard-F1"] = point_f1(s, y)
    out["R-based-F1"] = range_f1(s, y)
    return out
