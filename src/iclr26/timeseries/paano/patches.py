"""Series in, patches out, and patch scores back onto time steps.

PaAno works on all overlapping windows (stride 1) of a z-scored series; a time step's anomaly
score is the mean score of every patch that covers it, so a step near either end, covered by
fewer patches, averages over fewer values.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def as_series(X, name: str = "X") -> np.ndarray:
    """A float64 array of shape (T, C) from a 1-D/2-D numpy array, list or pandas object.

    Raises ``TypeError`` for non-numeric input and ``ValueError`` for a wrong shape, an empty
    series or NaN/infinite values (PaAno has no rule for missing data: impute first).
    """
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    a = V.check_array(X, name, ndim=(1, 2), dtype=None, allow_nan=True, allow_inf=True)
    if a.dtype.kind not in "biuf":
        try:
            a = a.astype(float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric (array-like of floats): {exc}") from None
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if not np.all(np.isfinite(a)):
        steps = np.flatnonzero((~np.isfinite(a)).any(axis=1))
        shown = ", ".join(str(int(i)) for i in steps[:10]) + (" ..." if len(steps) > 10 else "")
        raise ValueError(
            f"{name} contains NaN or infinite values at {len(steps)} time step(s) "
            f"(index {shown}); impute first"
        )
    return a


def sliding_patches(x: np.ndarray, patch_size: int) -> np.ndarray:
    """All stride-1 windows of a (T, C) series as a (T - w + 1, C, w) float32 array."""
    if x.shape[0] < patch_size:
        raise ValueError(
            f"series of length {x.shape[0]} is shorter than the patch size {patch_size}"
        )
    windows = np.lib.stride_tricks.sliding_window_view(x, patch_size, axis=0)  # (P, C, w)
    return np.ascontiguousarray(windows, dtype=np.float32)


def positive_indices(
    anchors: np.ndarray, n_patches: int, radius: int, rng: np.random.Generator
) -> np.ndarray:
    """For each anchor start index i, a positive start ``i + delta`` with delta drawn uniformly
    from the valid offsets in {-r, .., -1, 1, .., r}. An anchor with no valid offset (only when
    there is a single patch) is its own positive."""
    offsets = np.concatenate([np.arange(-radius, 0), np.arange(1, radius + 1)])
    candidates = anchors[:, None] + offsets[None, :]
    valid = (candidates >= 0) & (candidates < n_patches)
    noise = np.where(valid, rng.random(candidates.shape), -1.0)
    chosen = candidates[np.arange(len(anchors)), noise.argmax(axis=1)]
    return np.where(valid.any(axis=1), chosen, anchors)


def spread_to_time_steps(patch_scores: np.ndarray, patch_size: int) -> np.ndarray:
    """Mean of the scores of every patch covering each time step; length P + w - 1."""
    s = np.asarray(patch_scores, dtype=float)
    kernel = np.ones(patch_size)
    total = np.convolve(s, kernel, mode="full")
    count = np.convolve(np.ones_like(s), kernel, mode="full")
    return total / count
