"""The Spectral-Grassmann Wasserstein distance (SGOT) and the baselines it is compared with.

Ground cost between atoms (lambda, V) and (lambda', V'):
d_eta = eta |lambda - lambda'| + (1 - eta) d_G(V, V'), with d_G a Grassmann distance computed
from delta = |<r, r'> <l, l'>| of unit-normalised right/left eigenvectors ("chordal"
sqrt(1 - delta^2), "geodesic" arccos delta, "procrustes" sqrt(2 (1 - delta))). SGOT is the
p-Wasserstein distance between the two spectral measures under d_eta, solved exactly with POT.
"""

from __future__ import annotations

import math

import numpy as np
import ot
from scipy.optimize import linear_sum_assignment

from iclr26 import validation as V
from iclr26.timeseries.koopman_ot.operators import SpectralMeasure, same_feature_space

GRASSMANN = ("chordal", "geodesic", "procrustes")


def eta_heuristic(dt: float) -> float:
    """The paper's default eta = (1 + f_samp / (2 sqrt 2))^{-1}, f_samp = 1 / dt."""
    dt = V.check_scalar(dt, "dt", low=0.0, low_open=True)
    return 1.0 / (1.0 + (1.0 / dt) / (2.0 * math.sqrt(2.0)))


def pair_eta(A: SpectralMeasure, B: SpectralMeasure) -> float:
    """The default eta of a pair, symmetric in A and B: the heuristic of their common dt, or
    for two sampling steps the mean of the two heuristics (so that d(A, B) = d(B, A))."""
    if A.dt == B.dt:
        return eta_heuristic(A.dt)
    return 0.5 * (eta_heuristic(A.dt) + eta_heuristic(B.dt))


def _check_measure(m, name: str = "A") -> SpectralMeasure:
    if not isinstance(m, SpectralMeasure):
        raise TypeError(f"{name} must be a SpectralMeasure, got {type(m).__name__}")
    return m


def _check_pair(A, B) -> None:
    _check_measure(A, "A")
    _check_measure(B, "B")
    same_feature_space(A, B)


def _check_measures(measures, name: str) -> list[SpectralMeasure]:
    if isinstance(measures, SpectralMeasure) or not hasattr(measures, "__len__"):
        raise TypeError(f"{name} must be a list of SpectralMeasure objects")
    measures = list(measures)
    if not measures:
        raise ValueError(f"{name} is empty: it needs at least one SpectralMeasure")
    for i, m in enumerate(measures):
        _check_measure(m, f"{name}[{i}]")
    return measures


def _check_all_comparable(measures, name: str) -> None:
    first = measures[0]
    for i, m in enumerate(measures[1:], start=1):
        same_feature_space(first, m, (f"{name}[0]", f"{name}[{i}]"))


def _check_p(p) -> float:
    return V.check_scalar(p, "p", low=1.0)


def _check_eta(eta) -> float:
    return V.check_probability(eta, "eta")


def subspace_similarity(A: SpectralMeasure, B: SpectralMeasure) -> np.ndarray:
    """delta_ij = |<r_i, r'_j> <l_i, l'_j>| for unit-normalised right and left eigenvectors."""
    _check_pair(A, B)
    ra = A.R / np.linalg.norm(A.R, axis=0, keepdims=True)
    rb = B.R / np.linalg.norm(B.R, axis=0, keepdims=True)
    la = A.L / np.linalg.norm(A.L, axis=0, keepdims=True)
    lb = B.L / np.linalg.norm(B.L, axis=0, keepdims=True)
    return np.clip(np.abs((ra.conj().T @ rb) * (la.T @ lb.conj())), 0.0, 1.0)


def grassmann_distance(delta: np.ndarray, grassmann: str = "chordal") -> np.ndarray:
    """Grassmann distance from subspace similarities ``delta`` in [0, 1]."""
    V.check_choice(grassmann, "grassmann", GRASSMANN)
    delta = V.check_array(delta, "delta", dtype=np.float64, low=0.0, high=1.0 + 1e-9)
    if grassmann == "chordal":
        return np.sqrt(np.clip(1.0 - delta**2, 0.0, None))
    if grassmann == "geodesic":
        return np.arccos(np.clip(delta, 0.0, 1.0))
    if grassmann == "procrustes":
        return np.sqrt(np.clip(2.0 * (1.0 - delta), 0.0, None))
    raise ValueError(f"grassmann must be one of {GRASSMANN}, got {grassmann!r}")


def _check_scaling(eigen_scaling):
    if eigen_scaling is None:
        return None
    scaling = V.check_array(eigen_scaling, "eigen_scaling", shape=(2,), low=0.0)
    return float(scaling[0]), float(scaling[1])


def eigenvalue_distance(A: SpectralMeasure, B: SpectralMeasure, eigen_scaling=None) -> np.ndarray:
    a, b = A.lam, B.lam
    if eigen_scaling is not None:
        sr, si = eigen_scaling
        a = sr * a.real + 1j * si * a.imag
        b = sr * b.real + 1j * si * b.imag
    return np.abs(a[:, None] - b[None, :])


def sgot_cost(
    A: SpectralMeasure,
    B: SpectralMeasure,
    eta: float,
    grassmann: str = "chordal",
    eigen_scaling=None,
) -> np.ndarray:
    """Ground distance matrix d_eta between the atoms of A and B."""
    eta = _check_eta(eta)
    _check_pair(A, B)
    V.check_choice(grassmann, "grassmann", GRASSMANN)
    eigen_scaling = _check_scaling(eigen_scaling)
    d_lam = eigenvalue_distance(A, B, eigen_scaling)
    d_sub = grassmann_distance(subspace_similarity(A, B), grassmann)
    return eta * d_lam + (1.0 - eta) * d_sub


def wasserstein(cost: np.ndarray, a: np.ndarray, b: np.ndarray, p: float = 2.0) -> float:
    """W_p for a ground-distance matrix: exact OT (POT ``emd2``); for two uniform measures with
    the same number of atoms the optimal plan is a permutation (Birkhoff), solved as an
    assignment problem with identical value."""
    cost = V.check_array(cost, "cost", ndim=2, dtype=np.float64, low=0.0)
    n, m = cost.shape
    a = V.check_array(a, "a", ndim=1, dtype=np.float64, shape=(n,), low=0.0)
    b = V.check_array(b, "b", ndim=1, dtype=np.float64, shape=(m,), low=0.0)
    p = _check_p(p)
    if not np.isclose(a.sum(), b.sum(), rtol=1e-6):
        raise ValueError(f"a and b must have the same total mass, got {a.sum()} and {b.sum()}")
    cp = cost**p
    n, m = cp.shape
    if n == m and np.allclose(a, 1.0 / n) and np.allclose(b, 1.0 / m):
        rows, cols = linear_sum_assignment(cp)
        value = float(cp[rows, cols].mean())
    else:
        value = float(ot.emd2(a, b, cp))
    return max(value, 0.0) ** (1.0 / p)


def sgot_distance(
    A: SpectralMeasure,
    B: SpectralMeasure,
    eta: float | None = None,
    p: float = 2.0,
    grassmann: str = "chordal",
    eigen_scaling=None,
    backend: str = "numpy",
) -> float:
    """SGOT: W_p between the spectral measures of A and B under d_eta. ``eta=None`` takes the
    paper's heuristic (1 + f_samp / (2 sqrt 2))^-1 from the pair's sampling step, symmetric in
    A and B (:func:`pair_eta`). ``backend="pot"`` calls ``ot.sgot.sgot_metric`` instead
    (POT's squared-cost convention; equal to ours at eta in {0, 1}, p = 2). Measures from
    different non-linear feature spaces are refused."""
    _check_pair(A, B)
    p = _check_p(p)
    eta = pair_eta(A, B) if eta is None else _check_eta(eta)
    V.check_choice(backend, "backend", ("numpy", "pot"))
    V.check_choice(grassmann, "grassmann", GRASSMANN)
    if backend == "pot":
        from ot.sgot import sgot_metric

        return float(
            sgot_metric(
                A.lam,
                A.R,
                A.L,
                B.lam,
                B.R,
                B.L,
                eta=eta,
                p=p,
                q=2,
                r=1,
                grassmann_metric=grassmann,
                eigen_scaling=eigen_scaling,
                Ws=A.weights,
                Wt=B.weights,
            )
        )
    return wasserstein(sgot_cost(A, B, eta, grassmann, eigen_scaling), A.weights, B.weights, p)


def sot_distance(A: SpectralMeasure, B: SpectralMeasure, p: float = 2.0) -> float:
    """Spectral OT: eigenvalues only (eta = 1); continuous-time eigenvalues do not depend on
    the feature space, so measures from different feature maps can be compared."""
    _check_measure(A, "A")
    _check_measure(B, "B")
    return wasserstein(eigenvalue_distance(A, B), A.weights, B.weights, _check_p(p))


def got_distance(
    A: SpectralMeasure, B: SpectralMeasure, p: float = 2.0, grassmann: str = "chordal"
) -> float:
    """Grassmann OT: eigenspaces only (eta = 0)."""
    return sgot_distance(A, B, eta=0.0, p=p, grassmann=grassmann)


def _operators(A: SpectralMeasure, B: SpectralMeasure) -> tuple[np.ndarray, np.ndarray]:
    _check_pair(A, B)
    ga = A.G if A.G is not None else A.operator()
    gb = B.G if B.G is not None else B.operator()
    if ga.shape != gb.shape:
        raise ValueError("operators of different shapes: use a shared feature space")
    return ga, gb


def hs_distance(A: SpectralMeasure, B: SpectralMeasure) -> float:
    """Hilbert-Schmidt (Frobenius) distance ||G_A - G_B|| in the shared feature space."""
    ga, gb = _operators(A, B)
    return float(np.linalg.norm(ga - gb))


def operator_norm_distance(A: SpectralMeasure, B: SpectralMeasure) -> float:
    """Spectral-norm distance ||G_A - G_B||_2."""
    ga, gb = _operators(A, B)
    return float(np.linalg.norm(ga - gb, 2))


# ----- Martin distance (principal angles between extended observability subspaces) ----------


def _observability_gram(mu_a, C_a, mu_b, C_b, horizon: int | None) -> np.ndarray:
    """Gram blocks O_a^H O_b of the extended observability matrices O = [C; C A; C A^2; ...]
    of modal realisations (A = diag(mu), C = modes), batched over leading axes:
    (C_a^H C_b)_ij * sum_{k < horizon} (conj(mu_a,i) mu_b,j)^k (closed-form geometric sums)."""
    z = np.conj(mu_a)[..., :, None] * mu_b[..., None, :]
    cross = np.swapaxes(C_a.conj(), -1, -2) @ C_b
    if horizon is None:
        return cross / (1.0 - z)
    near_one = np.abs(1.0 - z) < 1e-12
    safe = np.where(near_one, 0.5, z)
    series = np.where(near_one, float(horizon), (1.0 - safe**horizon) / (1.0 - safe))
    return cross * series


def _whitener(gram: np.ndarray) -> np.ndarray:
    """gram^{-1/2} for a batch of Hermitian positive (semi)definite matrices."""
    vals, vecs = np.linalg.eigh(0.5 * (gram + np.swapaxes(gram.conj(), -1, -2)))
    floor = 1e-12 * np.max(vals, axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(np.maximum(vals, floor))
    return (vecs * inv[..., None, :]) @ np.swapaxes(vecs.conj(), -1, -2)


def _modal_realisation(m: SpectralMeasure) -> tuple[np.ndarray, np.ndarray]:
    """(mu, C): features evolve as phi_{t+1} = G^T phi_t (the RRR fit Y ~ X G), and
    G^T = conj(L) diag(mu) R^T, so the state s = R^T phi has A = diag(mu) and output C = conj(L)."""
    return m.mu, np.conj(m.L)


def _check_horizon(measures, horizon):
    if horizon is None:
        unstable = [m for m in measures if np.any(np.abs(m.mu) >= 1.0)]
        if unstable:
            raise ValueError(
                "the infinite-horizon Martin distance needs stable systems (|mu| < 1); "
                "pass a finite horizon"
            )
        return None
    return V.check_int(horizon, "horizon", low=1)


def martin_distance(A: SpectralMeasure, B: SpectralMeasure, horizon: int | None = None) -> float:
    """Martin distance between the linear models of A and B (De Cock and De Moor):
    d^2 = -log prod_i cos^2 theta_i, theta_i the principal angles between the extended
    observability subspaces of the modal realisations (A = diag(mu), C = Koopman modes).
    ``horizon=None`` is the infinite-horizon subspace (stable systems only); an integer keeps
    that many steps. With different ranks, the min(r_A, r_B) principal angles are used."""
    _check_pair(A, B)
    horizon = _check_horizon((A, B), horizon)
    (mu_a, c_a), (mu_b, c_b) = _modal_realisation(A), _modal_realisation(B)
    w_a = _whitener(_observability_gram(mu_a, c_a, mu_a, c_a, horizon))
    w_b = _whitener(_observability_gram(mu_b, c_b, mu_b, c_b, horizon))
    cos = np.linalg.svd(
        w_a @ _observability_gram(mu_a, c_a, mu_b, c_b, horizon) @ w_b, False, False
    )
    cos = np.clip(cos, 1e-300, 1.0)
    return float(np.sqrt(max(-2.0 * np.sum(np.log(cos)), 0.0)))


def martin_distance_matrix(measures_a, measures_b, horizon: int | None = None) -> np.ndarray:
    """All-pairs Martin distances, batched per group of equal ranks."""
    measures_a = _check_measures(measures_a, "measures_a")
    measures_b = _check_measures(measures_b, "measures_b")
    _check_all_comparable(measures_a + measures_b, "measures")
    horizon = _check_horizon(list(measures_a) + list(measures_b), horizon)
    out = np.zeros((len(measures_a), len(measures_b)))
    ga, gb = _groups(measures_a), _groups(measures_b)
    for rows in ga.values():
        mu_a = np.stack([measures_a[i].mu for i in rows])
        c_a = np.stack([np.conj(measures_a[i].L) for i in rows])
        w_a = _whitener(_observability_gram(mu_a, c_a, mu_a, c_a, horizon))
        for cols in gb.values():
            mu_b = np.stack([measures_b[j].mu for j in cols])
            c_b = np.stack([np.conj(measures_b[j].L) for j in cols])
            w_b = _whitener(_observability_gram(mu_b, c_b, mu_b, c_b, horizon))
            for s in range(0, len(rows), 32):  # chunks keep the (na, nb, r, r) blocks small
                sl = slice(s, s + 32)
                cross = _observability_gram(
                    mu_a[sl, None], c_a[sl, None], mu_b[None], c_b[None], horizon
                )
                core = w_a[sl, None] @ cross @ w_b[None]
                cos = np.clip(np.linalg.svd(core, compute_uv=False), 1e-300, 1.0)
                d2 = np.maximum(-2.0 * np.sum(np.log(cos), axis=-1), 0.0)
                out[np.ix_(rows[sl], cols)] = np.sqrt(d2)
    return out


METRICS = {
    "sgot": sgot_distance,
    "hs": hs_distance,
    "operator": operator_norm_distance,
    "sot": sot_distance,
    "got": got_distance,
    "martin": martin_distance,
}


def pairwise_distances(measures_a, measures_b=None, metric: str = "sgot", **kwargs) -> np.ndarray:
    """Distance matrix between two lists of measures, one pair at a time (symmetric fill when
    ``measures_b`` is None); :func:`distance_matrix` is the batched equivalent."""
    V.check_choice(metric, "metric", sorted(METRICS))
    fn = METRICS[metric]
    same = measures_b is None
    measures_a = _check_measures(measures_a, "measures_a")
    measures_b = measures_a if same else _check_measures(measures_b, "measures_b")
    if metric != "sot":  # eigenvalues alone compare across feature spaces
        _check_all_comparable(measures_a + measures_b, "measures")
    out = np.zeros((len(measures_a), len(measures_b)))
    for i, a in enumerate(measures_a):
        for j, b in enumerate(measures_b):
            if same and j < i:
                out[i, j] = out[j, i]
            elif not (same and i == j):
                out[i, j] = fn(a, b, **kwargs)
    return out


# ----- batched distance matrices (many small problems: vectorise everything but the OT solve) ----


def _groups(measures) -> dict[int, np.ndarray]:
    ranks = np.array([m.rank for m in measures])
    return {int(r): np.flatnonzero(ranks == r) for r in np.unique(ranks)}


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def sgot_blocks(measures_a, measures_b, chunk: int = 64) -> list[tuple]:
    """Ground-distance ingredients for every pair, grouped by atom counts: a list of
    (rows, cols, |lambda - lambda'| (na, nb, ra, rb), chordal d_G (na, nb, ra, rb))."""
    measures_a = _check_measures(measures_a, "measures_a")
    measures_b = _check_measures(measures_b, "measures_b")
    _check_all_comparable(measures_a + measures_b, "measures")
    blocks = []
    ga, gb = _groups(measures_a), _groups(measures_b)
    for rows in ga.values():
        lam_a = np.stack([measures_a[i].lam for i in rows])
        rn_a = _unit(np.stack([measures_a[i].R for i in rows]))
        ln_a = _unit(np.stack([measures_a[i].L for i in rows]))
        for cols in gb.values():
            lam_b = np.stack([measures_b[j].lam for j in cols])
            rn_b = _unit(np.stack([measures_b[j].R for j in cols]))
            ln_b = _unit(np.stack([measures_b[j].L for j in cols]))
            if rn_a.shape[1] != rn_b.shape[1]:
                raise ValueError("measures live in feature spaces of different dimension")
            d_lam = np.abs(lam_a[:, None, :, None] - lam_b[None, :, None, :])
            d_sub = np.empty(d_lam.shape)
            for s in range(0, len(rows), chunk):
                cr = np.einsum("adi,bdj->abij", rn_a[s : s + chunk].conj(), rn_b)
                cl = np.einsum("adi,bdj->abij", ln_a[s : s + chunk], ln_b.conj())
                delta = np.clip(np.abs(cr * cl), 0.0, 1.0)
                d_sub[s : s + chunk] = np.sqrt(np.clip(1.0 - delta**2, 0.0, None))
            blocks.append((rows, cols, d_lam, d_sub))
    return blocks


def sgot_matrix_from_blocks(
    blocks, shape, eta: float, p: float = 2.0, weights_a=None, weights_b=None
) -> np.ndarray:
    """SGOT distance matrix from :func:`sgot_blocks` (uniform atom weights unless given).
    ``eta`` is one number or a ``shape`` array (one eta per pair)."""
    eta = np.asarray(eta, dtype=float)
    if eta.ndim == 0:
        eta = np.full(shape, float(_check_eta(float(eta))))
    else:
        eta = V.check_array(eta, "eta", shape=shape, low=0.0, high=1.0)
    out = np.zeros(shape)
    for rows, cols, d_lam, d_sub in blocks:
        e = eta[np.ix_(rows, cols)][:, :, None, None]
        cost = (e * d_lam + (1.0 - e) * d_sub) ** p
        ra, rb = cost.shape[2], cost.shape[3]
        for a, i in enumerate(rows):
            wa = np.full(ra, 1.0 / ra) if weights_a is None else weights_a[i]
            for b, j in enumerate(cols):
                wb = np.full(rb, 1.0 / rb) if weights_b is None else weights_b[j]
                c = cost[a, b]
                if ra == rb and weights_a is None and weights_b is None:
                    r_idx, c_idx = linear_sum_assignment(c)
                    value = c[r_idx, c_idx].mean()
                else:
                    value = ot.emd2(wa, wb, c)
                out[i, j] = max(float(value), 0.0) ** (1.0 / p)
    return out


def _factor_stack(measures):
    facs = []
    for m in measures:
        if m.factors is not None:
            facs.append(m.factors)
        else:  # G = R diag(mu) L^H
            facs.append((m.R * m.mu[None, :], m.L.conj().T))
    return facs


def operator_distance_matrix(measures_a, measures_b, kind: str = "hs") -> np.ndarray:
    """HS or spectral-norm distances for all pairs from low-rank factors G = P Q:
    G_a - G_b = U V with U = [P_a, -P_b], V = [Q_a; Q_b]; ||UV||_F^2 = tr(S T) and
    ||UV||_2^2 = lambda_max(S T) with S = U^H U, T = V V^H (2r x 2r, batched)."""
    V.check_choice(kind, "kind", ("hs", "operator"))
    dims = {m.R.shape[0] for m in list(measures_a) + list(measures_b)}
    if len(dims) != 1:
        raise ValueError("operators of different shapes: use a shared feature space")
    dim = dims.pop()
    if dim <= 32:  # small feature spaces: work with the D x D operators directly
        Ga = np.stack([m.G if m.G is not None else m.operator() for m in measures_a])
        Gb = np.stack([m.G if m.G is not None else m.operator() for m in measures_b])
        if kind == "hs":
            fa_, fb_ = Ga.reshape(len(Ga), -1), Gb.reshape(len(Gb), -1)
            sq = (
                np.sum(np.abs(fa_) ** 2, 1)[:, None]
                + np.sum(np.abs(fb_) ** 2, 1)[None]
                - 2 * np.real(fa_.conj() @ fb_.T)
            )
            return np.sqrt(np.maximum(sq, 0.0))
        out = np.empty((len(Ga), len(Gb)))
        for i, g in enumerate(Ga):
            out[i] = np.linalg.norm(g[None] - Gb, ord=2, axis=(1, 2))
        return out
    fa, fb = _factor_stack(measures_a), _factor_stack(measures_b)
    out = np.zeros((len(fa), len(fb)))
    ga, gb = _groups(measures_a), _groups(measures_b)
    for ra, rows in ga.items():
        Pa = np.stack([fa[i][0] for i in rows]).astype(complex)
        Qa = np.stack([fa[i][1] for i in rows]).astype(complex)
        for rb, cols in gb.items():
            Pb = np.stack([fb[j][0] for j in cols]).astype(complex)
            Qb = np.stack([fb[j][1] for j in cols]).astype(complex)
            if Pa.shape[1] != Pb.shape[1]:
                raise ValueError("operators of different shapes: use a shared feature space")
            saa = np.einsum("adi,adj->aij", Pa.conj(), Pa)
            sbb = np.einsum("bdi,bdj->bij", Pb.conj(), Pb)
            sab = np.einsum("adi,bdj->abij", Pa.conj(), Pb)
            taa = np.einsum("aid,ajd->aij", Qa, Qa.conj())
            tbb = np.einsum("bid,bjd->bij", Qb, Qb.conj())
            tab = np.einsum("aid,bjd->abij", Qa, Qb.conj())
            na, nb = len(rows), len(cols)
            S = np.empty((na, nb, ra + rb, ra + rb), dtype=complex)
            T = np.empty_like(S)
            S[:, :, :ra, :ra] = saa[:, None]
            S[:, :, ra:, ra:] = sbb[None]
            S[:, :, :ra, ra:] = -sab
            S[:, :, ra:, :ra] = -np.conj(np.swapaxes(sab, 2, 3))
            T[:, :, :ra, :ra] = taa[:, None]
            T[:, :, ra:, ra:] = tbb[None]
            T[:, :, :ra, ra:] = tab
            T[:, :, ra:, :ra] = np.conj(np.swapaxes(tab, 2, 3))
            ST = S @ T
            if kind == "hs":
                val = np.real(np.trace(ST, axis1=2, axis2=3))
            else:
                val = np.max(np.real(np.linalg.eigvals(ST)), axis=2)
            out[np.ix_(rows, cols)] = np.sqrt(np.maximum(val, 0.0))
    return out


def distance_matrix(
    measures_a,
    measures_b,
    metric: str = "sgot",
    eta: float | None = None,
    p: float = 2.0,
    horizon: int | None = None,
) -> np.ndarray:
    """All-pairs distances between two lists of measures, batched (see :func:`sgot_blocks`);
    ``horizon`` is the Martin distance's observability horizon (None: infinite). ``eta=None``
    gives each pair its symmetric default (:func:`pair_eta`)."""
    V.check_choice(metric, "metric", sorted(METRICS))
    measures_a = _check_measures(measures_a, "measures_a")
    measures_b = _check_measures(measures_b, "measures_b")
    if metric != "sot":  # eigenvalues alone compare across feature spaces
        _check_all_comparable(measures_a + measures_b, "measures")
    p = _check_p(p)
    shape = (len(measures_a), len(measures_b))
    if metric in ("hs", "operator"):
        return operator_distance_matrix(measures_a, measures_b, metric)
    if metric == "martin":
        return martin_distance_matrix(measures_a, measures_b, horizon)
    if metric == "sot":
        try:
            _check_all_comparable(measures_a + measures_b, "measures")
        except ValueError:  # eigenvalues alone still compare across feature spaces
            return np.array([[sot_distance(a, b, p=p) for b in measures_b] for a in measures_a])
        eta = 1.0
    elif metric == "got":
        eta = 0.0
    elif eta is None:
        eta = np.array([[pair_eta(a, b) for b in measures_b] for a in measures_a])
    else:
        eta = _check_eta(eta)
    wa = [m.weights for m in measures_a]
    wb = [m.weights for m in measures_b]
    uniform = all(np.allclose(w, w[0]) for w in wa + wb)
    return sgot_matrix_from_blocks(
        sgot_blocks(measures_a, measures_b),
        shape,
        eta,
        p,
        None if uniform else wa,
        None if uniform else wb,
    )
