"""Seeded synthetic helpers shared by claim checks and tests."""

from __future__ import annotations

import numpy as np


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A numpy Generator from a seed, or the Generator itself."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def gaussian_classes(
    n: int,
    means: np.ndarray,
    cov: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    seed: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Samples from Gaussian classes with shared covariance ``cov`` (identity by default)."""
    rng = as_rng(seed)
    means = np.atleast_2d(np.asarray(means, dtype=float))
    k, dim = means.shape
    if n < k:
        raise ValueError(f"n={n} is smaller than the number of classes {k}")
    cov = np.eye(dim) if cov is None else np.asarray(cov, dtype=float)
    if cov.shape != (dim, dim):
        raise ValueError(f"cov must be {dim}x{dim}, got {cov.shape}")
    weights = np.full(k, 1.0 / k) if weights is None else np.asarray(weights, float)
    y = rng.choice(k, size=n, p=weights / weights.sum())
    chol = np.linalg.cholesky(cov)
    X = means[y] + rng.standard_normal((n, dim)) @ chol.T
    return X, y


def train_test_indices(
    n: int, test_fraction: float = 0.2, seed: int | np.random.Generator | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of ``range(n)``."""
    if not 0 < test_fraction < 1:
        raise ValueError("test_fraction must lie in (0, 1)")
    perm = as_rng(seed).permutation(n)
    n_test = max(1, int(round(n * test_fraction)))
    return perm[n_test:], perm[:n_test]
