"""Finite-rank Koopman operator estimation by reduced-rank regression (RRR) in a shared
feature space, and the spectral decomposition read as a measure of (eigenvalue, eigenspace) atoms.

With features Phi_X, Phi_Y of consecutive snapshots, C_X = Phi_X^T Phi_X / N,
C_XY = Phi_X^T Phi_Y / N and C_g = C_X + gamma I, the RRR estimator (Kostic et al., in finite
dimension) is G = C_g^{-1/2} U_r U_r^T C_g^{-1/2} C_XY with U_r the top-r left singular vectors of
C_g^{-1/2} C_XY. Its non-zero eigenvalues mu_j come from the r x r matrix Q P with G = P Q;
continuous-time eigenvalues lambda_j = log(mu_j) / dt make the comparison sampling-rate invariant.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.spatial


@dataclass
class SpectralMeasure:
    """Atoms (lambda_j, r_j, l_j) with weights; ``mu`` discrete eigenvalues, ``G`` the operator.

    ``R`` and ``L`` are (D, r) right / left eigenvectors with L^H R = I (bi-orthogonal).
    ``factors`` (P, Q) with G = P Q, when known, let distances avoid D x D algebra.
    """

    lam: np.ndarray
    R: np.ndarray
    L: np.ndarray
    weights: np.ndarray
    dt: float
    mu: np.ndarray | None = None
    G: np.ndarray | None = field(default=None, repr=False)
    factors: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self):
        self.lam = np.asarray(self.lam, dtype=complex).ravel()
        self.R = np.asarray(self.R, dtype=complex)
        self.L = np.asarray(self.L, dtype=complex)
        self.weights = np.asarray(self.weights, dtype=float).ravel()
        r = self.lam.shape[0]
        if r == 0:
            raise ValueError("a spectral measure needs at least one atom")
        if self.R.shape != self.L.shape or self.R.ndim != 2 or self.R.shape[1] != r:
            raise ValueError("R and L must both be (D, r) with r = number of eigenvalues")
        if self.weights.shape != (r,) or np.any(self.weights < 0) or self.weights.sum() <= 0:
            raise ValueError("weights must be r non-negative numbers with a positive sum")
        self.weights = self.weights / self.weights.sum()
        if not self.dt > 0:
            raise ValueError("dt must be positive")
        if self.mu is None:
            self.mu = discrete_eigs(self.lam, self.dt)

    @property
    def rank(self) -> int:
        return int(self.lam.shape[0])

    def operator(self) -> np.ndarray:
        """G = sum_j mu_j r_j l_j^H built from the atoms (acts on feature coefficients)."""
        return (self.R * self.mu[None, :]) @ self.L.conj().T


def continuous_eigs(mu, dt: float, floor: float = 1e-8) -> np.ndarray:
    """lambda = log(mu) / dt (principal branch); |mu| below ``floor`` is capped to ``floor``.

    Warns when an eigenvalue's angle is within 0.05 rad of pi (aliasing: the sampling cannot
    distinguish that frequency)."""
    if not dt > 0:
        raise ValueError("dt must be positive")
    mu = np.asarray(mu, dtype=complex)
    if np.any(np.abs(np.abs(np.angle(mu)) - np.pi) < 0.05):
        warnings.warn(
            "an eigenvalue lies near the negative real axis: possible aliasing",
            RuntimeWarning,
            stacklevel=2,
        )
    mag = np.maximum(np.abs(mu), floor)
    return (np.log(mag) + 1j * np.angle(mu)) / dt


def discrete_eigs(lam, dt: float) -> np.ndarray:
    return np.exp(np.asarray(lam, dtype=complex) * dt)


def _as_trajectories(trajectories) -> list[np.ndarray]:
    if isinstance(trajectories, np.ndarray):
        if trajectories.ndim == 2:
            trajectories = [trajectories]
        elif trajectories.ndim == 3:
            trajectories = list(trajectories)
        else:
            raise ValueError("trajectories must be (T, d), (n, T, d) or a list of (T_i, d)")
    out = [np.asarray(t, dtype=float) for t in trajectories]
    if not out:
        raise ValueError("no trajectories given")
    d = out[0].shape[-1] if out[0].ndim == 2 else None
    for t in out:
        if t.ndim != 2 or t.shape[1] != d:
            raise ValueError("every trajectory must be a (T_i, d) array with the same d")
        if t.shape[0] < 2:
            raise ValueError("a trajectory needs at least two snapshots")
        if not np.all(np.isfinite(t)):
            raise ValueError("trajectories contain NaN or inf")
    return out


class FeatureMap:
    """Shared feature space: identity (``kernel="linear"``) or a Nystroem RBF map fitted once
    on pooled data from all systems (median-heuristic length-scale)."""

    def __init__(
        self, kernel: str = "linear", n_landmarks: int = 200, length_scale=None, random_state=0
    ):
        if kernel not in ("linear", "rbf"):
            raise ValueError("kernel must be 'linear' or 'rbf'")
        self.kernel = kernel
        self.n_landmarks = int(n_landmarks)
        self.length_scale = length_scale
        self.random_state = random_state

    def fit(self, pooled: np.ndarray) -> FeatureMap:
        pooled = np.asarray(pooled, dtype=float)
        if pooled.ndim != 2:
            raise ValueError("pooled data must be (N, d)")
        self.dim_in_ = pooled.shape[1]
        if self.kernel == "rbf":
            from sklearn.kernel_approximation import Nystroem

            rng = np.random.default_rng(self.random_state)
            sub = pooled[rng.choice(len(pooled), min(len(pooled), 1000), replace=False)]
            scale = self.length_scale
            if scale is None:
                dists = scipy.spatial.distance.pdist(sub)
                scale = float(np.median(dists[dists > 0])) if np.any(dists > 0) else 1.0
            self.length_scale_ = scale
            self.nystroem_ = Nystroem(
                kernel="rbf",
                gamma=1.0 / (2 * scale**2),
                n_components=min(self.n_landmarks, len(pooled)),
                random_state=self.random_state,
            ).fit(pooled)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if self.kernel == "linear":
            return np.asarray(X, dtype=float)
        if not hasattr(self, "nystroem_"):
            raise ValueError("fit the RBF feature map on pooled data first")
        return self.nystroem_.transform(X)


def _inv_sqrt(C: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(0.5 * (C + C.T))
    return (vecs / np.sqrt(np.maximum(vals, 1e-300))) @ vecs.T


def estimate_operator(
    trajectories,
    dt: float,
    rank: int = 10,
    kernel: str = "linear",
    reg: float | None = None,
    features: FeatureMap | None = None,
    n_landmarks: int = 200,
) -> SpectralMeasure:
    """RRR estimate of the transfer operator from snapshot pairs (x_t, x_{t+1}).

    ``features``: a fitted :class:`FeatureMap` shared across systems (required for comparable
    eigenvectors with the RBF kernel; fitted on these trajectories alone when omitted).
    ``reg`` defaults to 1e-6 (linear) / 1e-4 (RBF). Returns a :class:`SpectralMeasure` with
    uniform weights, continuous eigenvalues and the operator ``G``.
    """
    if not dt > 0:
        raise ValueError("dt must be positive")
    trajs = _as_trajectories(trajectories)
    if int(rank) < 1:
        raise ValueError("rank must be >= 1")
    rank = int(rank)
    if features is None:
        features = FeatureMap(kernel, n_landmarks).fit(np.concatenate(trajs))
    if reg is None:
        reg = 1e-6 if features.kernel == "linear" else 1e-4
    if reg < 0:
        raise ValueError("reg must be >= 0")
    X = np.concatenate([features.transform(t[:-1]) for t in trajs])
    Y = np.concatenate([features.transform(t[1:]) for t in trajs])
    n_pairs, dim = X.shape
    if rank > min(dim, n_pairs):
        raise ValueError(
            f"rank {rank} exceeds min(feature dim {dim}, snapshot pairs {n_pairs}):"
            " the trajectory is too short (or too low-dimensional) for this rank"
        )
    cx = X.T @ X / n_pairs
    cxy = X.T @ Y / n_pairs
    w = _inv_sqrt(cx + reg * np.eye(dim))
    M = w @ cxy
    U = np.linalg.svd(M, full_matrices=False)[0][:, :rank]
    P = w @ U  # G = P Q
    Q = U.T @ M
    small = Q @ P
    mu, left, right = scipy.linalg.eig(small, left=True, right=True)
    R = P @ right
    L = Q.conj().T @ left
    keep = np.abs(mu) > 1e-8
    if not np.any(keep):
        raise ValueError("the estimated operator has no non-zero eigenvalue")
    mu, R, L = mu[keep], R[:, keep], L[:, keep]
    R = R / np.linalg.norm(R, axis=0, keepdims=True)
    L = L / np.conj(np.sum(L.conj() * R, axis=0, keepdims=True))  # l_j^H r_j = 1
    lam = continuous_eigs(mu, dt)
    return SpectralMeasure(
        lam=lam,
        R=R,
        L=L,
        weights=np.ones(mu.shape[0]),
        dt=dt,
        mu=mu,
        G=P @ Q,
        factors=(P, Q),
    )
