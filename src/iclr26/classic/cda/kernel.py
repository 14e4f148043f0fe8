"""The Gaussian kernel of kernel CDA and its median-distance bandwidth."""

from __future__ import annotations

import numpy as np
from sklearn.metrics.pairwise import euclidean_distances


def median_bandwidth(squared: np.ndarray, kernel_c: float) -> float:
    """sigma = sqrt(kernel_c) * median pairwise distance, from the (N, N) squared distances
    (over distinct pairs)."""
    n = squared.shape[0]
    upper = squared[np.triu_indices(n, k=1)]
    distances = np.sqrt(np.maximum(upper, 0.0))
    median = float(np.median(distances)) if distances.size else 0.0
    if median == 0.0:
        positive = distances[distances > 0]
        if positive.size == 0:
            raise ValueError("all training samples are identical; the kernel has no bandwidth")
        median = float(np.median(positive))
    return float(np.sqrt(kernel_c) * median)


def rbf_gram(X: np.ndarray, kernel_c: float) -> tuple[np.ndarray, float]:
    """Training Gram matrix K = exp(-||x - x'||^2 / (2 sigma^2)) and its bandwidth sigma."""
    squared = squared_distances(X, X)
    sigma = median_bandwidth(squared, kernel_c)
    return rbf_from_squared(squared, sigma), sigma


def squared_distances(X: np.ndarray, X_train: np.ndarray) -> np.ndarray:
    """||x - x'||^2 between the rows of X and of X_train."""
    return euclidean_distances(X, X_train, squared=True)


def rbf_from_squared(squared: np.ndarray, sigma: float) -> np.ndarray:
    """exp(-d^2 / (2 sigma^2)) of squared distances."""
    return np.exp(-squared / (2.0 * sigma**2))
