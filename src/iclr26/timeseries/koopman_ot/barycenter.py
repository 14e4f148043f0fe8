"""Free-support Frechet mean (barycentre) of spectral measures in the SGOT metric.

Coordinate descent in the finite-feature setting: (a) with the atoms fixed, solve the OT plan
to every input measure; (b) move each atom's eigenvalue to the plan-weighted average of the
eigenvalues it is coupled with and its right (left) eigenvector to the leading eigenvector of
the plan-weighted sum of right (left) projectors -- the chordal Grassmann mean; (c) rescale the
left vectors so that l^H r = 1. The paper optimises RKHS control points under the same
constraints by gradient steps; this is its finite-dimensional special case.
"""

from __future__ import annotations

import numpy as np
import ot

from iclr26 import validation as V
from iclr26.timeseries.koopman_ot.metric import eta_heuristic, sgot_cost
from iclr26.timeseries.koopman_ot.operators import SpectralMeasure, same_feature_space


def _leading_vector(M: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(0.5 * (M + M.conj().T))
    return vecs[:, -1]


def sgot_barycenter(
    measures,
    weights=None,
    n_atoms: int | None = None,
    eta: float | None = None,
    n_iter: int = 50,
    init: int = 0,
    tol: float = 1e-10,
) -> SpectralMeasure:
    """Barycentre of ``measures`` with barycentric ``weights`` (uniform by default).

    The barycentre starts from measure ``init`` (truncated / padded to ``n_atoms``) and returns
    a :class:`SpectralMeasure` whose ``operator()`` can be simulated. Measures must share dt and
    the feature dimension.
    """
    if isinstance(measures, SpectralMeasure) or not hasattr(measures, "__iter__"):
        raise TypeError("measures must be a list of SpectralMeasure objects")
    measures = list(measures)
    if not measures:
        raise ValueError("measures is empty: need at least one SpectralMeasure")
    for i, m in enumerate(measures):
        if not isinstance(m, SpectralMeasure):
            raise TypeError(f"measures[{i}] must be a SpectralMeasure, got {type(m).__name__}")
    dt = measures[0].dt
    if any(abs(m.dt - dt) > 1e-12 for m in measures):
        raise ValueError("measures must all share dt (convert before averaging)")
    for i, m in enumerate(measures[1:], start=1):
        same_feature_space(measures[0], m, ("measures[0]", f"measures[{i}]"))
    k = len(measures)
    if weights is None:
        gamma = np.full(k, 1.0 / k)
    else:
        gamma = V.check_array(weights, "weights", ndim=1, dtype=np.float64, shape=(k,), low=0.0)
        if gamma.sum() <= 0:
            raise ValueError("weights must have a positive sum")
    gamma = gamma / gamma.sum()
    eta = eta_heuristic(dt) if eta is None else V.check_probability(eta, "eta")
    n_iter = V.check_int(n_iter, "n_iter", low=1)
    init = V.check_int(init, "init", low=0, high=k - 1)
    tol = V.check_scalar(tol, "tol", low=0.0)
    start = measures[init]
    n_atoms = start.rank if n_atoms is None else V.check_int(n_atoms, "n_atoms", low=1)
    pick = np.arange(n_atoms) % start.rank
    space = start.feature_space
    bary = SpectralMeasure(
        start.lam[pick],
        start.R[:, pick],
        start.L[:, pick],
        np.ones(n_atoms),
        dt,
        feature_space=space,
    )
    for _ in range(n_iter):
        lam_num = np.zeros(n_atoms, dtype=complex)
        mass = np.zeros(n_atoms)
        dim = bary.R.shape[0]
        proj_r = np.zeros((n_atoms, dim, dim), dtype=complex)
        proj_l = np.zeros((n_atoms, dim, dim), dtype=complex)
        for g, m in zip(gamma, measures):
            cost = sgot_cost(bary, m, eta) ** 2
            plan = ot.emd(bary.weights, m.weights, cost)
            lam_num += g * plan @ m.lam
            mass += g * plan.sum(axis=1)
            rn = m.R / np.linalg.norm(m.R, axis=0, keepdims=True)
            ln = m.L / np.linalg.norm(m.L, axis=0, keepdims=True)
            proj_r += g * np.einsum("ij,aj,bj->iab", plan, rn, rn.conj())
            proj_l += g * np.einsum("ij,aj,bj->iab", plan, ln, ln.conj())
        new_lam = lam_num / np.maximum(mass, 1e-300)
        R = np.stack([_leading_vector(p) for p in proj_r], axis=1)
        L = np.stack([_leading_vector(p) for p in proj_l], axis=1)
        inner = np.sum(L.conj() * R, axis=0)
        L = L / np.conj(np.where(np.abs(inner) > 1e-12, inner, 1e-12))
        shift = float(np.max(np.abs(new_lam - bary.lam)))
        bary = SpectralMeasure(new_lam, R, L, np.ones(n_atoms), dt, feature_space=space)
        if shift < tol:
            break
    return bary
