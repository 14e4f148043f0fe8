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

from iclr26 import validation as V

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
    """Lower and upper bounds, each shaped like ``q_tail`` ([R, S, A]).

    These intervals are for Q* only as far as the tail average is centred on it: with a tail
    window that is a fixed fraction of the run and near-tied optimal actions, the tail
    average keeps a bias that does not shrink with n while the intervals do, so coverage
    falls as n grows (see :class:`SynchronousQLearning`)."""
    q_tail = V.check_array(q_tail, "q_tail", ndim=3, dtype=np.float64)
    level = V.check_scalar(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    V.check_choice(method, "method", CI_METHODS)
    V.check_choice(kind, "kind", ("basic", "percentile"))
    R, S, A = q_tail.shape
    a = 1.0 - level
    if method == "multiplier_bootstrap":
        if bootstrap_tails is None:
            raise ValueError("bootstrap_tails is needed by the multiplier bootstrap")
        bootstrap_tails = V.check_array(
            bootstrap_tails, "bootstrap_tails", shape=(R, None, S, A), dtype=np.float64
        )
        if bootstrap_tails.shape[1] < 2:
            raise ValueError("bootstrap_tails needs at least 2 copies (n_bootstrap >= 2)")
        delta = bootstrap_tails - q_tail[:, None]
        lo_q, hi_q = np.quantile(delta, [a / 2, 1 - a / 2], axis=1)
        if kind == "basic":
            return q_tail - hi_q, q_tail - lo_q
        if kind == "percentile":
            return q_tail + lo_q, q_tail + hi_q
        raise ValueError(f"kind must be 'basic' or 'percentile', got {kind!r}")
    z = stats.norm.ppf(1 - a / 2)
    if method == "batch_means":
        if batch_means is None:
            raise ValueError("batch_means is needed by the batch-means interval")
        batch_means = V.check_array(
            batch_means, "batch_means", shape=(None, R, S, A), dtype=np.float64
        )
        if batch_means.shape[0] < 2:
            raise ValueError("batch_means needs at least 2 batches")
        k = batch_means.shape[0]
        half = z * batch_means.std(axis=0, ddof=1) / np.sqrt(k)
        return q_tail - half, q_tail + half
    if method == "naive_iid":
        if tail_sq_mean is None or tail_length is None:
            raise ValueError("tail_sq_mean and tail_length are needed by the naive interval")
        tail_sq_mean = V.check_array(
            tail_sq_mean, "tail_sq_mean", shape=(R, S, A), dtype=np.float64
        )
        tail_length = V.check_int(tail_length, "tail_length", low=2)
        var = np.maximum(tail_sq_mean - q_tail**2, 0.0) * tail_length / (tail_length - 1)
        half = z * np.sqrt(var / tail_length)
        return q_tail - half, q_tail + half
    raise ValueError(f"unknown method {method!r}; choose one of {CI_METHODS}")


def coverage(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None):
    """Fraction of replications whose interval holds the truth, per entry, and its mean over
    the entries selected by ``mask`` ([S, A] bool); also the mean width there."""
    truth = V.check_array(truth, "truth", ndim=2, dtype=np.float64)
    lo = V.check_array(lo, "lo", ndim=3, dtype=np.float64, allow_inf=True)
    hi = V.check_array(hi, "hi", shape=lo.shape, dtype=np.float64, allow_inf=True)
    if lo.shape[1:] != truth.shape:
        raise ValueError(f"lo must have shape [R, *{truth.shape}], got {lo.shape}")
    if mask is not None:
        mask = V.check_array(mask, "mask", shape=truth.shape, dtype=None)
        if mask.dtype.kind != "b":
            raise TypeError(f"mask must hold booleans, got {mask.dtype}")
        if not mask.any():
            raise ValueError("mask selects no entry")
    inside = (lo <= truth) & (truth <= hi)  # [R, S, A]
    per_entry = inside.mean(axis=0)
    width = (hi - lo).mean(axis=0)
    if mask is None:
        mask = np.ones(truth.shape, dtype=bool)
    return float(per_entry[mask].mean()), float(width[mask].mean()), per_entry
