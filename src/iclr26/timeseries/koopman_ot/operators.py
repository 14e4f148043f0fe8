"""Finite-rank Koopman operator estimation by reduced-rank regression (RRR) in a shared
feature space, and the spectral decomposition read as a measure of (eigenvalue, eigenspace) atoms.

With features Phi_X, Phi_Y of consecutive snapshots, C_X = Phi_X^T Phi_X / N,
C_XY = Phi_X^T Phi_Y / N and C_g = C_X + gamma I, the RRR estimator (Kostic et al., in finite
dimension) is G = C_g^{-1/2} U_r U_r^T C_g^{-1/2} C_XY with U_r the top-r left singular vectors of
C_g^{-1/2} C_XY. Its non-zero eigenvalues mu_j come from the r x r matrix Q P with G = P Q;
continuous-time eigenvalues lambda_j = log(mu_j) / dt make the comparison sampling-rate invariant.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.spatial

from iclr26 import validation as V


@dataclass
class SpectralMeasure:
    """Atoms (lambda_j, r_j, l_j) with weights; ``mu`` discrete eigenvalues, ``G`` the operator.

    ``R`` and ``L`` are (D, r) right / left eigenvectors with L^H R = I (bi-orthogonal).
    ``factors`` (P, Q) with G = P Q, when known, let distances avoid D x D algebra.
    ``feature_space`` names the feature space the eigenvectors live in (the fingerprint of
    the :class:`FeatureMap` that :func:`estimate_operator` used; ``None``: the user's own
    coordinates). Distances refuse two measures from different non-linear feature spaces,
    whose eigenvectors cannot be compared.
    """

    lam: np.ndarray
    R: np.ndarray
    L: np.ndarray
    weights: np.ndarray
    dt: float
    mu: np.ndarray | None = None
    G: np.ndarray | None = field(default=None, repr=False)
    factors: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    feature_space: str | None = field(default=None, repr=False)

    def __post_init__(self):
        self.lam = _complex_array(self.lam, "lam").ravel()
        self.R = _complex_array(self.R, "R")
        self.L = _complex_array(self.L, "L")
        self.weights = V.check_array(self.weights, "weights", dtype=np.float64, low=0.0).ravel()
        r = self.lam.shape[0]
        if self.R.shape != self.L.shape or self.R.ndim != 2 or self.R.shape[1] != r:
            raise ValueError(
                f"R and L must both be (D, r) with r = {r} eigenvalues, got R {self.R.shape} "
                f"and L {self.L.shape}"
            )
        if self.weights.shape != (r,) or self.weights.sum() <= 0:
            raise ValueError("weights must be r non-negative numbers with a positive sum")
        self.weights = self.weights / self.weights.sum()
        self.dt = V.check_scalar(self.dt, "dt", low=0.0, low_open=True)
        if self.mu is None:
            self.mu = discrete_eigs(self.lam, self.dt)
        else:
            self.mu = _complex_array(self.mu, "mu").ravel()
            if self.mu.shape != (r,):
                raise ValueError(f"mu must hold {r} eigenvalues, got {self.mu.shape[0]}")

    @property
    def rank(self) -> int:
        return int(self.lam.shape[0])

    def operator(self) -> np.ndarray:
        """G = sum_j mu_j r_j l_j^H built from the atoms (acts on feature coefficients)."""
        return (self.R * self.mu[None, :]) @ self.L.conj().T


def _complex_array(value, name: str) -> np.ndarray:
    """A non-empty, finite array of complex numbers."""
    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    try:
        arr = np.asarray(value, dtype=complex)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must hold (complex) numbers") from None
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def same_feature_space(A: SpectralMeasure, B: SpectralMeasure, names=("A", "B")) -> None:
    """Refuse two measures whose eigenvectors live in different feature spaces."""
    if A.R.shape[0] != B.R.shape[0]:
        raise ValueError(
            f"{names[0]} and {names[1]} live in feature spaces of different dimension "
            f"({A.R.shape[0]} vs {B.R.shape[0]})"
        )
    fa, fb = A.feature_space, B.feature_space
    if fa != fb and (_nonlinear(fa) or _nonlinear(fb)):
        raise ValueError(
            f"{names[0]} and {names[1]} were estimated in different feature spaces "
            f"({fa} vs {fb}): their eigenvectors are not comparable. Fit one FeatureMap on "
            "pooled data of all systems and pass it to estimate_operator(..., features=...)"
        )


def _nonlinear(space: str | None) -> bool:
    return space is not None and space != "linear"


def continuous_eigs(mu, dt: float, floor: float = 1e-8) -> np.ndarray:
    """lambda = log(mu) / dt (principal branch); |mu| below ``floor`` is capped to ``floor``.

    Warns when an eigenvalue's angle is within 0.05 rad of pi (aliasing: the sampling cannot
    distinguish that frequency)."""
    dt = V.check_scalar(dt, "dt", low=0.0, low_open=True)
    floor = V.check_scalar(floor, "floor", low=0.0, low_open=True)
    mu = _complex_array(mu, "mu")
    if np.any(np.abs(np.abs(np.angle(mu)) - np.pi) < 0.05):
        warnings.warn(
            "an eigenvalue lies near the negative real axis: possible aliasing",
            RuntimeWarning,
            stacklevel=2,
        )
    mag = np.maximum(np.abs(mu), floor)
    return (np.log(mag) + 1j * np.angle(mu)) / dt


def discrete_eigs(lam, dt: float) -> np.ndarray:
    """mu = exp(lambda dt)."""
    return np.exp(np.asarray(lam, dtype=complex) * dt)


def _as_trajectories(trajectories) -> list[np.ndarray]:
    if trajectories is None or isinstance(trajectories, str | bytes):
        raise TypeError("trajectories must be an array or a list of arrays")
    if hasattr(trajectories, "ndim"):
        trajectories = np.asarray(trajectories)
        if trajectories.ndim == 2:
            trajectories = [trajectories]
        elif trajectories.ndim == 3:
            trajectories = list(trajectories)
        else:
            raise ValueError(
                "trajectories must be (T, d), (n, T, d) or a list of (T_i, d), got "
                f"{trajectories.ndim} dimension(s)"
            )
    out = [
        V.check_array(t, f"trajectories[{i}]", ndim=2, dtype=np.float64, min_rows=2)
        for i, t in enumerate(trajectories)
    ]
    if not out:
        raise ValueError("trajectories is empty: no trajectory given")
    d = out[0].shape[1]
    for i, t in enumerate(out):
        if t.shape[1] != d:
            raise ValueError(
                f"trajectories[{i}] has {t.shape[1]} coordinates, trajectories[0] has {d}"
            )
    return out


class FeatureMap:
    """Shared feature space: identity (``kernel="linear"``) or a Nystroem RBF map fitted once
    on pooled data from all systems (median-heuristic length-scale)."""

    def __init__(
        self, kernel: str = "linear", n_landmarks: int = 200, length_scale=None, random_state=0
    ):
        self.kernel = V.check_choice(kernel, "kernel", ("linear", "rbf"))
        self.n_landmarks = V.check_int(n_landmarks, "n_landmarks", low=1)
        self.length_scale = V.check_scalar(
            length_scale, "length_scale", low=0.0, low_open=True, allow_none=True
        )
        self.random_state = V.check_int(random_state, "random_state", low=0, allow_none=True)

    def fit(self, pooled: np.ndarray) -> FeatureMap:
        pooled = V.check_array(pooled, "pooled", ndim=2, dtype=np.float64)
        self.dim_in_ = pooled.shape[1]
        self.fingerprint_ = "linear"
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
            digest = hashlib.sha256(np.ascontiguousarray(self.nystroem_.components_).tobytes())
            digest.update(repr(self.length_scale_).encode())
            self.fingerprint_ = "rbf:" + digest.hexdigest()[:16]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "fingerprint_"):
            raise ValueError("the feature map is not fitted; call fit(pooled) first")
        X = V.check_array(X, "X", ndim=2, dtype=np.float64, shape=(None, self.dim_in_))
        if self.kernel == "linear":
            return X
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
    eigenvectors with the RBF kernel; fitted on these trajectories alone when omitted, and then
    the measure's ``feature_space`` is private to it: distances to measures from another
    map are refused). ``reg`` defaults to 1e-6 (linear) / 1e-4 (RBF). Returns a
    :class:`SpectralMeasure` with uniform weights, continuous eigenvalues and the operator ``G``.
    """
    dt = V.check_scalar(dt, "dt", low=0.0, low_open=True)
    trajs = _as_trajectories(trajectories)
    rank = V.check_int(rank, "rank", low=1)
    if features is None:
        V.check_choice(kernel, "kernel", ("linear", "rbf"))
        features = FeatureMap(kernel, n_landmarks).fit(np.concatenate(trajs))
    else:
        V.check_module_attrs(features, "features", ("transform", "kernel", "fingerprint_"))
    if reg is None:
        reg = 1e-6 if features.kernel == "linear" else 1e-4
    reg = V.check_scalar(reg, "reg", low=0.0)
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
        feature_space=features.fingerprint_,
    )
