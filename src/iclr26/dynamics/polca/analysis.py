"""What the paper does with projected losses: drop oscillatory directions, cluster examples per
direction by their trajectories (HDBSCAN), time breakthroughs and find hidden ones.

Labels: ``>= 0`` a cluster, ``NOISE`` (-1, HDBSCAN's outliers), ``REMOVED`` (-10, an example
whose projected loss did not decrease, dropped before clustering) and ``NOT_CLUSTERED`` (-11, too
few examples were kept to form one cluster). The negative codes are distinct from each other and
from HDBSCAN's own special labels (-1 noise, -2 infinite entries, -3 missing entries).

Clustering compares trajectory *shapes*: by default every kept curve is divided by its largest
absolute value before HDBSCAN, so that examples sharing a learning event at the same time, but
with different amplitudes, are close (see the room README, Deviations).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.cluster import HDBSCAN

from iclr26 import validation as V

NOISE = -1  # HDBSCAN's outliers
REMOVED = -10  # examples whose loss did not decrease along the direction
NOT_CLUSTERED = -11  # too few kept examples to form a single cluster
NORMALIZE = ("max", None)


def filter_oscillatory(L: np.ndarray) -> np.ndarray:
    """Indices of basis vectors whose mean projected loss does not increase from the first to
    the last checkpoint (the paper drops the others)."""
    L = V.check_array(L, "L", ndim=3)
    mean = L.mean(axis=2)
    return np.flatnonzero(mean[:, -1] <= mean[:, 0])


def resolve_min_cluster_size(min_cluster_size, n: int) -> int:
    """An integer ``>= 2`` as given, or a fraction in (0, 1) of ``n`` examples (rounded up, at
    least 2): a skill shared by that share of the examples can form a cluster."""
    if isinstance(min_cluster_size, float) and 0.0 < min_cluster_size < 1.0:
        return max(2, int(np.ceil(min_cluster_size * n)))
    if isinstance(min_cluster_size, float) and not np.isfinite(min_cluster_size):
        raise ValueError(f"min_cluster_size must be a number, got {min_cluster_size}")
    return V.check_int(min_cluster_size, "min_cluster_size", low=2)


def cluster_trajectories(
    curves: np.ndarray,
    min_cluster_size: int | float = 20,
    drop_increasing: bool = True,
    *,
    normalize: str | None = "max",
    min_samples: int | None = None,
) -> np.ndarray:
    """HDBSCAN labels of per-example trajectories ``curves`` (T, n_examples).

    Examples whose curve ends at or above its start get ``REMOVED`` when ``drop_increasing``;
    HDBSCAN's outliers keep ``NOISE`` (-1); if fewer than ``min_cluster_size`` examples are
    kept, the kept ones get ``NOT_CLUSTERED``. ``min_cluster_size`` is a count, or a fraction in
    (0, 1) of the examples (the paper's 20 of 5,000 tokens is 0.004). ``normalize="max"``
    divides each kept curve by its largest absolute value (clusters are then groups of a common
    shape and timing); ``None`` clusters the raw curves. ``min_samples`` is HDBSCAN's density
    parameter (default: ``min_cluster_size``)."""
    curves = V.check_array(curves, "curves", ndim=2, dtype=np.float64)
    drop_increasing = V.check_bool(drop_increasing, "drop_increasing")
    V.check_choice(normalize, "normalize", NORMALIZE)
    size = resolve_min_cluster_size(min_cluster_size, curves.shape[1])
    min_samples = V.check_int(min_samples, "min_samples", low=1, allow_none=True)
    labels = np.full(curves.shape[1], REMOVED, dtype=np.int64)
    keep = curves[-1] < curves[0] if drop_increasing else np.ones(curves.shape[1], dtype=bool)
    if keep.sum() < size:
        labels[keep] = NOT_CLUSTERED
        return labels
    points = curves[:, keep].T
    if normalize == "max":
        points = points / np.maximum(np.abs(points).max(axis=1, keepdims=True), 1e-300)
    labels[keep] = (
        HDBSCAN(min_cluster_size=size, min_samples=min_samples, copy=True).fit(points).labels_
    )
    return labels


def breakthrough_time(curves: np.ndarray, delta: int) -> np.ndarray:
    """Eq. 9 with the sign chosen so that *drops* count: the checkpoint t maximising
    -([f(t+D) - f(t)] - [f(t) - f(t-D)]), the sharpest onset of a decrease. ``curves`` is
    (T,) or (T, n)."""
    f = V.check_array(curves, "curves", ndim=(1, 2), dtype=np.float64)
    squeeze = f.ndim == 1
    if squeeze:
        f = f[:, None]
    T = f.shape[0]
    delta = V.check_int(delta, "delta", low=1)
    if T < 2 * delta + 1:
        raise ValueError(f"delta must satisfy 2*delta < T={T}, got {delta}")
    t = np.arange(delta, T - delta)
    accel = (f[t + delta] - f[t]) - (f[t] - f[t - delta])
    out = t[np.argmax(-accel, axis=0)]
    return out[0] if squeeze else out


def flat_after(aggregate: np.ndarray, fraction: float = 0.9, window: int = 3) -> int:
    """tau: first checkpoint where the smoothed aggregate loss has completed ``fraction`` of its
    total decrease."""
    a = V.check_array(aggregate, "aggregate", ndim=1, dtype=np.float64)
    fraction = V.check_probability(fraction, "fraction", open_low=True)
    window = V.check_int(window, "window", low=1)
    if window % 2 == 0:
        raise ValueError(f"window must be odd (a centred average), got {window}")
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
    curves = V.check_array(curves, "curves", ndim=2, dtype=np.float64)
    labels = V.check_array(labels, "labels", ndim=1, n_rows=curves.shape[1])
    if labels.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
    tau = V.check_int(tau, "tau", low=0, high=curves.shape[0] - 1)
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
    if isinstance(label_sets, np.ndarray) or not isinstance(label_sets, Sequence):
        raise TypeError("label_sets must be a list of label arrays")
    attribute = V.check_array(attribute, "attribute", ndim=1, low=0.0, high=1.0)
    eligible = V.check_array(eligible, "eligible", ndim=1, n_rows=attribute.shape[0], dtype=bool)
    min_members = V.check_int(min_members, "min_members", low=1)
    label_sets = [
        V.check_array(labels, f"label_sets[{i}]", ndim=1, n_rows=attribute.shape[0])
        for i, labels in enumerate(label_sets)
    ]
    best, scored = 0.0, 0
    for labels in label_sets:
        for c in np.unique(labels):
            if c < 0:
                continue
            members = (labels == c) & eligible
            if members.sum() >= min_members:
                scored += 1
                best = max(best, float(attribute[members].mean()))
    return best, scored
