"""Centroid discriminant bases and the rotation plane in which CDA searches.

CDB0 is the unit vector from the negative-class centroid to the positive-class centroid. CDA
re-weights the samples (those near the current threshold weigh more), takes the weighted
("soft") centroid direction, orthogonalises it against the current direction, and rotates the
current direction inside the plane the two span. Every quantity the angle search needs is a
combination of two precomputed projections, ``Q(theta) = cos(theta) Q1 + sin(theta) Q2``.

The same algebra serves linear and kernel CDA through a small "space" object: a direction is
a vector of R^M (linear) or a coefficient vector of R^N in the RKHS of a Gaussian kernel, with
the matching inner product (``v . v'`` or ``beta^T K beta'``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from iclr26 import validation as V

# Squared norm below which the orthogonal part of the new centroid direction is treated as 0.
_PARALLEL_TOL = 1e-12


def centroid_weights(y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Signed sample weights s_i alpha_i / A_{y_i} whose combination of samples is the
    weighted centroid difference (positive minus negative)."""
    y = np.asarray(y, dtype=bool)
    alpha = np.asarray(alpha, dtype=float)
    mass_pos, mass_neg = alpha[y].sum(), alpha[~y].sum()
    if mass_pos <= 0 or mass_neg <= 0:
        raise ValueError("each class needs positive total sample weight")
    return np.where(y, alpha / mass_pos, -alpha / mass_neg)


def soft_centroid_direction(X: np.ndarray, y: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Unit weighted-centroid direction v = sum_i s_i alpha_i / A_{y_i} x_i / ||.||.

    With uniform ``alpha`` this is CDB0, the nearest-centroid direction.
    """
    X = V.check_array(X, "X", ndim=2, dtype=np.float64)
    y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=X.shape[0])
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must be binary with values 0 (negative) and 1 (positive)")
    alpha = V.check_array(alpha, "alpha", ndim=1, dtype=np.float64, n_rows=X.shape[0], low=0.0)
    v = X.T @ centroid_weights(y, alpha)
    norm = np.linalg.norm(v)
    if norm == 0:
        raise ValueError("the two class centroids coincide; no centroid direction exists")
    return v / norm


def rotation_plane(v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    """Unit vector of the plane (v1, v2) orthogonal to unit ``v1`` (Gram-Schmidt).

    Sign convention: the result has a positive inner product with ``v2``, so a positive angle
    rotates ``v1`` towards ``v2``.
    """
    v1 = V.check_array(v1, "v1", ndim=1, dtype=np.float64)
    v2 = V.check_array(v2, "v2", ndim=1, dtype=np.float64, shape=v1.shape)
    if not np.linalg.norm(v1) > 0:
        raise ValueError("v1 must be a non-zero vector")
    v1 = v1 / np.linalg.norm(v1)
    orthogonal = v2 - (v1 @ v2) * v1
    norm = np.linalg.norm(orthogonal)
    if norm**2 <= _PARALLEL_TOL * (v2 @ v2):
        raise ValueError("v1 and v2 are parallel; they span no plane")
    return orthogonal / norm


def rotate(v1: np.ndarray, v2_orth: np.ndarray, theta_deg: float) -> np.ndarray:
    """cos(theta) v1 + sin(theta) v2_orth, theta in degrees (works for projections too)."""
    v1 = V.check_array(v1, "v1", ndim=1, dtype=np.float64)
    v2_orth = V.check_array(v2_orth, "v2_orth", ndim=1, dtype=np.float64, shape=v1.shape)
    theta = np.deg2rad(V.check_scalar(theta_deg, "theta_deg"))
    return np.cos(theta) * v1 + np.sin(theta) * v2_orth


def update_weights(alpha: np.ndarray, Q1: np.ndarray, oop: float) -> np.ndarray:
    """Re-weight samples by reversed distance to the threshold, then L2-normalise.

    d = |Q1 - oop|, d1 = d / sum d, d2 = |d1 - min d1 - max d1|, alpha <- alpha d2 / ||alpha d2||:
    the sample nearest the boundary gets the largest factor, the farthest the smallest.
    """
    alpha = V.check_array(alpha, "alpha", ndim=1, dtype=np.float64, low=0.0)
    Q1 = V.check_array(Q1, "Q1", ndim=1, dtype=np.float64, n_rows=alpha.shape[0])
    oop = V.check_scalar(oop, "oop")
    distance = np.abs(Q1 - oop)
    total = distance.sum()
    if total == 0:
        return alpha
    d1 = distance / total
    factor = np.abs(d1 - d1.min() - d1.max())
    new = alpha * factor
    norm = np.linalg.norm(new)
    return alpha if norm == 0 else new / norm


class Space(Protocol):
    """Where directions live: how to build one from centroid weights, project the training
    samples on it, and take inner products."""

    def direction(self, weights: np.ndarray) -> np.ndarray: ...

    def project(self, direction: np.ndarray) -> np.ndarray: ...

    def inner(self, a: np.ndarray, a_projection: np.ndarray, b: np.ndarray) -> float: ...


class LinearSpace:
    """Directions v in R^M; projections X v; Euclidean inner product."""

    def __init__(self, X: np.ndarray):
        self.X = V.check_array(X, "X", ndim=2, dtype=np.float64)

    def direction(self, weights: np.ndarray) -> np.ndarray:
        return self.X.T @ weights

    def project(self, direction: np.ndarray) -> np.ndarray:
        return self.X @ direction

    def inner(self, a: np.ndarray, a_projection: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b)


class KernelSpace:
    """Directions beta in R^N (RKHS coefficients); projections K beta; <a, b> = b^T K a.

    The inner product reuses the projection K a that is already at hand, so orthogonalising
    costs O(N) and each new direction one O(N^2) product.
    """

    def __init__(self, gram: np.ndarray):
        self.gram = V.check_square(gram, "gram", dtype=np.float64)

    def direction(self, weights: np.ndarray) -> np.ndarray:
        return weights

    def project(self, direction: np.ndarray) -> np.ndarray:
        return self.gram @ direction

    def inner(self, a: np.ndarray, a_projection: np.ndarray, b: np.ndarray) -> float:
        return float(b @ a_projection)


def unit_centroid(space: Space, y: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unit soft-centroid direction in ``space`` and its projections."""
    direction = space.direction(centroid_weights(y, alpha))
    projection = space.project(direction)
    squared = space.inner(direction, projection, direction)
    if not squared > 0:
        raise ValueError("the two class centroids coincide; no centroid direction exists")
    norm = np.sqrt(squared)
    return direction / norm, projection / norm


def orthonormal_partner(
    space: Space, d1: np.ndarray, Q1: np.ndarray, d2: np.ndarray, Q2: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Gram-Schmidt of unit ``d2`` against unit ``d1`` in ``space`` (with projections), or
    None when the two are parallel and span no plane. Sign: positive inner product with d2."""
    overlap = space.inner(d1, Q1, d2)
    d_orth = d2 - overlap * d1
    Q_orth = Q2 - overlap * Q1
    squared = space.inner(d_orth, Q_orth, d_orth)
    if not squared > _PARALLEL_TOL:
        return None
    norm = np.sqrt(squared)
    return d_orth / norm, Q_orth / norm
