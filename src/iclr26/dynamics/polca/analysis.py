"""What the paper does with projected losses: drop oscillatory directions, cluster examples per
direction by their trajectories (HDBSCAN), time breakthroughs and find hidden ones."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.cluster import HDBSCAN

REMOVED = -2  # examples whose loss did not decrease along the direction


def filter_oscillatory(L: np.ndarray) -> np.ndarray:
    """Indices of basis vectors whose mean projected loss does not increase from the first to
    the last checkpoint (the paper drops the others)."""
    L = np.asarray(L)
    if L.ndim != 3:
        raise ValueError("L must be (n_basis, T, n_examples)")
    mean = L.mean(axis=2)
    return np.flatnonzero(mean[:, -1] <= mean[:, 0])


def cluster_trajectories(
    curves: np.ndarray, min_cluster_size: int = 20, drop_increasing: bool = True
) -> np.ndarray:
    """HDBSCAN labels of per-example trajectories ``curves`` (T, n_examples); examples whose
    curve ends above its start get ``REMOVED`` (-2) when ``drop_increasing``, outliers -1."""
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim != 2:
        raise ValueError("curves must be (T, n_examples)")
    labels = np.full(curves.shape[1], REMOVED, dtype=np.int64)
    keep = curves[-1] < curves[0] if drop_increasing else np.ones(curves.shape[1], dtype=bool)
    if keep.sum() < max(2, min_cluster_size):
        return labels
    labels[keep] = (
        HDBSCAN(min_cluster_size=min_cluster_size, copy=True).fit(curves[:, keep].T).labels_
    )
    return labels


def breakthrough_time(curves: np.ndarray, delta: int) -> np.ndarray:
    """Eq. 9 with the sign chosen so that *drops* count: the checkpoint t maximising
    -([f(t+D) - f(t)] - [f(t) - f(t-D)]), the sharpest onset of a decrease. ``curves`` is
    (T,) or (T, n)."""
    f = np.asarray(curves, dtype=np.float64)
    squeeze = f.ndim == 1
    if squeeze:
        f = f[:, None]
    T = f.shape[0]
    if not isinstance(delta, (int, np.integer)) or delta < 1 or T < 2 * delta + 1:
        raise ValueError(f"delta must be a positive integer with 2*delta < T={T}")
    t = np.arange(delta, T - delta)
    accel = (f[t + delta] - f[t]) - (f[t] - f[t - delta])
    out = t[np.argmax(-accel, axis=0)]
    return out[0] if squeeze else out


def flat_after(aggregate: np.ndarray, fraction: float = 0.9, window: int = 3) -> int:
    """tau: first checkpoint where the smoothed aggregate loss has completed ``fraction`` of its
    total decrease."""
    a = np.asarray(aggregate, dtype=np.float64)
    smooth = np.convolve(
        np.pad(a, (window // 2, window // 2), mode="edge"), np.ones(window) / window, mode="valid"
    )
    drop = smooth[0] - smooth.min()
    if drop <= 0:
        return 0
    return int(np.argmax(smooth[0] - smooth >= fraction * drop))


def hidden_clusters(
    curves: np.ndarray, labels: np.ndarray, tau: int, delta: int
) -> dict[int, bool]:
    """Eq. 10: cluster -> whether the mean breakthrough time of its members is after tau."""
    times = breakthrough_time(curves, delta)
    return {int(c): bool(times[labels == c].mean() > tau) for c in np.unique(labels) if c >= 0}


def max_homogeneity(
    label_sets: Sequence[np.ndarray],
    attribute: np.ndarray,
    eligible: np.ndarray,
    min_members: int = 20,
) -> tuple[float, int]:
    """Max over clusters (of all label arrays) with at least ``min_members`` eligible members of
    the fraction of eligible members with ``attribute`` = 1; also the number of clusters scored."""
    best, scored = 0.0, 0
    attribute, eligible = np.asarray(attribute), np.asarray(eligible, dtype=bool)
    for labels in label_sets:
        for c in np.unique(labels):
            if c < 0:
                continue
            members = (labels == c) & eligible
            if members.sum() >= min_members:
                scored += 1
                best = max(best, float(attribute[members].mean()))
    return best, scored
