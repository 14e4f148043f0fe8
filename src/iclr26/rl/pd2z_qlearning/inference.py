"""Confidence intervals for Q* from the tail Polyak-Ruppert average.

``multiplier_bootstrap``: the spread of bootstrap tail averages around the main one, which
the time-uniform Gaussian approximation of the partial-sum process justifies (basic interval
[Q - q_{1-a/2}, Q - q_{a/2}] or percentile interval [Q + q_{a/2}, Q + q_{1-a/2}] with q the
quantiles of Q^(b) - Q). ``batch_means``: between-batch spread of tail batch means.
``naive_iid``: treats the tail iterates as independent (a baseline that ignores their
autocorrelation and under-covers).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

CI_METHODS = ("multiplier_bootstrap", "batch_means", "naive_iid")


def confidence_intervals(
    q_tail: np.ndarray,
    *,
    level: float = 0.95,
    method: str = "multiplier_bootstrap",
    kind: str = "basic",
    bootstrap_tails: np.ndarray | None = None,
    batch_means: np.ndarray | None = None,
    tail_sq_mean: np.ndarray | None = None,
    tail_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds, each shaped like ``q_tail`` ([R, S, A])."""
    if not (0.0 < level < 1.0):
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    a = 1.0 - level
    if method == "multiplier_bootstrap":
        if bootstrap_tails is None or bootstrap_tails.shape[1] < 2:
            raise ValueError("the multiplier bootstrap needs n_bootstrap >= 2 copies")
        delta = bootstrap_tails - q_tail[:, None]
        lo_q, hi_q = np.quantile(delta, [a / 2, 1 - a / 2], axis=1)
        if kind == "basic":
            return q_tail - hi_q, q_tail - lo_q
        if kind == "percentile":
            return q_tail + lo_q, q_tail + hi_q
        raise ValueError(f"kind must be 'basic' or 'percentile', got {kind!r}")
    z = stats.norm.ppf(1 - a / 2)
    if method == "batch_means":
        if batch_means is None or batch_means.shape[0] < 2:
            raise ValueError("batch means need at least 2 batches")
        k = batch_means.shape[0]
        half = z * batch_means.std(axis=0, ddof=1) / np.sqrt(k)
        return q_tail - half, q_tail + half
    if method == "naive_iid":
        if tail_sq_mean is None or tail_length is None or tail_length < 2:
            raise ValueError("the naive interval needs the tail second moment and length >= 2")
        var = np.maximum(tail_sq_mean - q_tail**2, 0.0) * tail_length / (tail_length - 1)
        half = z * np.sqrt(var / tail_length)
        return q_tail - half, q_tail + half
    raise ValueError(f"unknown method {method!r}; choose one of {CI_METHODS}")


def coverage(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None):
    """Fraction of replications whose interval holds the truth, per entry, and its mean over
    the entries selected by ``mask`` ([S, A] bool); also the mean width there."""
    inside = (lo <= truth) & (truth <= hi)  # [R, S, A]
    per_entry = inside.mean(axis=0)
    width = (hi - lo).mean(axis=0)
    if mask is None:
        mask = np.ones(truth.shape, dtype=bool)
    return float(per_entry[mask].mean()), float(width[mask].mean()), per_entry
