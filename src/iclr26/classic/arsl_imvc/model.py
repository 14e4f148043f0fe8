"""ARSL-IMVC: latent-aligned view recovery and tensorial subspace learning for incomplete
multi-view clustering.

One latent matrix H (k x n) recovers every view, X_c^v = P^v H + E_1^v with orthonormal P^v and
view-specific residuals E_1^v made mutually independent by an HSIC penalty, while the observed
columns are kept exactly. H and the completed views are both self-expressed (H = H Z + E_H,
X_c^v = X_c^v Z^v + E_2^v, l2,1 noise), and the stacked tensor Phi(Z^1..Z^V, Z), rotated to
n x (V+1) x n, carries a t-SVD nuclear norm coupling global and view-specific structure. One ADMM
loop solves the objective; spectral clustering runs on the averaged |Z| affinities.

Reconstructed steps (the official code was not available): the H-update's Sylvester equation
reduces to one n x n linear system because P^v^T P^v = I; the HSIC term counts unordered view pairs
once; observed columns of X_c are fixed by parametrisation (no separate multiplier); defaults
mu0 = 1e-4, rho = 1.3, mu_max = 1e8, tol = 1e-6, lambda1 = lambda2 = 10, k = 15; initialisation
by mean imputation, per-view column normalisation and an SVD of the stacked completed views.

An addition of ours: a ridge penalty (lambda3 / 2) ||E_1^v||_F^2 on the view-specific estimator,
so the E_1 update solves E_1 ((mu + lambda3) I + 2 lambda2 M_v / (n-1)^2) = mu A_v. Without it
(``lambda3=0``, the objective as summarised) E_1 is free wherever HSIC is weak, X_c = P H + E_1
then holds for any H, the latent never learns from the data and a missing column stays where
mean imputation put it. With it, P^v H must explain the views and an unseen column is recovered
from the sample's latent code, that is from its other views.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import SpectralClustering

from iclr26 import validation as V
from iclr26.classic.arsl_imvc.tensor import procrustes, shrink21, tsvt


def check_views(views, mask=None) -> tuple[list[np.ndarray], np.ndarray]:
    """Validate a list of (n, d_v) views; missing rows are NaN (or given by ``mask``).

    Observed rows must be finite; with ``mask`` the unobserved rows may hold anything. Returns
    the float arrays and the (n, V) boolean observed mask."""
    if not isinstance(views, (list, tuple)) or len(views) < 2:
        raise TypeError(
            f"views must be a list of at least two (n, d_v) arrays, got {type(views).__name__}"
            + (f" of length {len(views)}" if isinstance(views, (list, tuple)) else "")
        )
    arrays = [
        V.check_array(a, f"views[{v}]", ndim=2, dtype=np.float64, allow_nan=True, allow_inf=True)
        for v, a in enumerate(views)
    ]
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"views have different numbers of samples: {[a.shape[0] for a in arrays]}")
    if mask is None:
        for v, a in enumerate(arrays):
            partial = np.isnan(a).any(axis=1) & ~np.isnan(a).all(axis=1)
            if partial.any():
                raise ValueError(
                    f"views[{v}] has {int(partial.sum())} partly NaN row(s) (first: row "
                    f"{int(np.argmax(partial))}): a missing view is an all-NaN row; pass mask "
                    "to mark missing rows explicitly"
                )
        mask = np.stack([~np.isnan(a).any(axis=1) for a in arrays], axis=1)
    else:
        mask = V.check_array(mask, "mask", shape=(n, len(arrays)), dtype=None)
        if mask.dtype != bool and not np.isin(mask, (0, 1)).all():
            raise ValueError("mask must be boolean (True = observed)")
    mask = np.asarray(mask, dtype=bool)
    for v, a in enumerate(arrays):
        if not mask[:, v].any():
            raise ValueError(f"views[{v}] has no observed sample")
        observed = a[mask[:, v]]
        if not np.all(np.isfinite(observed)):
            bad = "NaN" if np.isnan(observed).any() else "infinity"
            raise ValueError(
                f"views[{v}] contains {bad} in observed rows (a missing row must be all NaN, "
                "or pass mask)"
            )
    if not mask.any(axis=1).all():
        raise ValueError("views: some samples are missing in every view")
    return arrays, mask


def _recovered_norms(norms: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Norm to give each recovered (unit) column: a sample's norm in an unseen view v is its
    relative size in the views it has (norm over that view's mean observed norm), times view
    v's mean observed norm. Observed entries keep their own norms."""
    typical = np.array([norms[mask[:, v], v].mean() for v in range(mask.shape[1])])
    relative = np.where(mask, norms / typical, 0.0).sum(axis=1) / mask.sum(axis=1)
    return np.where(mask, norms, relative[:, None] * typical[None, :])


def _solve_identity_plus_gram(F: np.ndarray, rhs: np.ndarray, a: float, c: float) -> np.ndarray:
    """(a I_n + c F^T F)^{-1} rhs for a wide F (r x n, r << n) by the Woodbury identity:
    (a I + c F^T F)^{-1} = (I - F^T (a/c I_r + F F^T)^{-1} F) / a. O(n^2 r) instead of O(n^3)."""
    r = F.shape[0]
    if c == 0:
        return rhs / a
    inner = (a / c) * np.eye(r) + F @ F.T
    return (rhs - F.T @ scipy.linalg.solve(inner, F @ rhs, assume_a="pos")) / a


class ARSLIMVC(ClusterMixin, BaseEstimator):
    """Incomplete multi-view clusterer (scikit-learn style; samples are rows).

    ``fit(views, mask=None)``: ``views`` a list of (n, d_v) arrays with NaN rows for missing
    samples (or an explicit (n, V) observed ``mask``). After fit: ``labels_``, ``affinity_``,
    ``recovered_views_`` (observed rows equal the input), ``latent_`` (n, k), ``n_iter_``,
    ``history_`` (max-abs constraint residual per iteration).
    ``use_latent_subspace=False`` is the paper's ablation ARSL-IMVC-1 (no H = H Z + E_H term,
    no Z slice; affinity from the Z^v only). ``lambda3`` weighs the ridge penalty on the
    view-specific estimator E_1 (our addition, see the module docstring; 0 reproduces the
    objective as summarised, whose view recovery is no better than mean imputation).

    Hyperparameters are checked in ``fit``: ``n_clusters`` an integer in [2, n],
    ``latent_dim`` an integer in [1, min d_v] (refused, not capped, above it), non-negative
    lambdas and ``tol``, ``mu > 0``, ``rho >= 1``, ``mu_max >= mu``.

    scikit-learn contract: ``BaseEstimator`` + ``ClusterMixin`` (``fit``, ``fit_predict``,
    ``labels_``, ``get_params``/``set_params``, ``clone``). Its tags declare
    ``two_d_array=False`` and ``allow_nan=True``: ``fit`` takes a list of at least two
    (n, d_v) views with NaN rows for missing ones, not one 2-D array. ``check_estimator``
    therefore runs only its cloning check and skips every data check (each calls ``fit(X)``
    with one 2-D array, which :func:`check_views` refuses with a TypeError); the API checks
    that need no data (``check_get_params_invariance``, ``check_no_attributes_set_in_init``,
    ``check_parameters_default_constructible``, ``check_estimator_repr``) pass (tested). It is
    transductive (no ``predict`` for new samples), so ``cross_val_score`` does not apply.
    """

    def __init__(
        self,
        n_clusters: int = 8,
        latent_dim: int = 15,
        lambda1: float = 10.0,
        lambda2: float = 10.0,
        lambda3: float = 1.0,
        mu: float = 1e-4,
        rho: float = 1.3,
        mu_max: float = 1e8,
        max_iter: int = 150,
        tol: float = 1e-6,
        use_latent_subspace: bool = True,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.latent_dim = latent_dim
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.lambda3 = lambda3
        self.mu = mu
        self.rho = rho
        self.mu_max = mu_max
        self.max_iter = max_iter
        self.tol = tol
        self.use_latent_subspace = use_latent_subspace
        self.random_state = random_state

    def _check_params(self, n: int, dims: list[int]) -> None:
        V.check_int(self.n_clusters, "n_clusters", low=2, high=n)
        V.check_int(self.latent_dim, "latent_dim", low=1)
        if self.latent_dim > min(dims):
            raise ValueError(
                f"latent_dim must be <= the smallest view dimension {min(dims)} (P^v is "
                f"d_v x k with orthonormal columns), got {self.latent_dim}"
            )
        for name in ("lambda1", "lambda2", "lambda3"):
            V.check_scalar(getattr(self, name), name, low=0.0)
        V.check_scalar(self.mu, "mu", low=0.0, low_open=True)
        V.check_scalar(self.rho, "rho", low=1.0)
        V.check_scalar(self.mu_max, "mu_max", low=float(self.mu))
        V.check_int(self.max_iter, "max_iter", low=1)
        V.check_scalar(self.tol, "tol", low=0.0)
        V.check_bool(self.use_latent_subspace, "use_latent_subspace")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # fit takes a list of (n, d_v) views
        tags.input_tags.allow_nan = True  # NaN rows mark missing views
        tags.non_deterministic = False
        return tags

    def fit(self, views, y=None, mask=None):
        arrays, mask = check_views(views, mask)
        n, n_views = mask.shape
        self._check_params(n, [a.shape[1] for a in arrays])
        k = int(self.latent_dim)
        lam1, lam2, lam3 = float(self.lambda1), float(self.lambda2), float(self.lambda3)
        latent_sub = bool(self.use_latent_subspace)

        # ---- initialisation: mean-impute, normalise columns, SVD of the stacked views ----
        X, norms_by_view = [], []
        for v, a in enumerate(arrays):
            obs = mask[:, v]
            full = np.where(obs[:, None], np.nan_to_num(a), a[obs].mean(axis=0))
            norms = np.linalg.norm(full, axis=1)
            norms[norms == 0] = 1.0
            norms_by_view.append(norms)
            X.append((full / norms[:, None]).T)  # d_v x n, unit columns
        sample_norms = _recovered_norms(np.stack(norms_by_view, axis=1), mask)
        Xc = [x.copy() for x in X]
        _, s, vt = np.linalg.svd(np.vstack(Xc), full_matrices=False)
        H = s[:k, None] * vt[:k]
        P = [procrustes(x, H) for x in Xc]
        E1 = [np.zeros_like(x) for x in Xc]
        E2 = [np.zeros_like(x) for x in Xc]
        EH = np.zeros_like(H)
        n_slices = n_views + 1 if latent_sub else n_views
        Zs = np.zeros((n_slices, n, n))  # Z^1..Z^V (and Z)
        G = np.zeros_like(Zs)
        W = np.zeros_like(Zs)
        Y1 = [np.zeros_like(x) for x in Xc]
        Y3 = [np.zeros_like(x) for x in Xc]
        Y4 = np.zeros_like(H)
        mu = float(self.mu)
        eye = np.eye(n)
        history = []
        for _ in range(int(self.max_iter)):
            # 1. P^v by orthogonal Procrustes
            A = [Xc[v] - E1[v] + Y1[v] / mu for v in range(n_views)]
            P = [procrustes(A[v], H) for v in range(n_views)]
            # 2. H: H (V I + B) = sum_v P^vT A_v + (E_H - Y4/mu)(I - Z)^T
            rhs = sum(P[v].T @ A[v] for v in range(n_views))
            if latent_sub:
                D = eye - Zs[n_views]
                lhs = n_views * eye + D @ D.T
                rhs = rhs + (EH - Y4 / mu) @ D.T
                H = scipy.linalg.solve(lhs, rhs.T, assume_a="pos").T
            else:
                H = rhs / n_views
            # 3. E_1^v (Gauss-Seidel over views): E (mu I + 2 lam2 M_v / (n-1)^2) = mu A_v
            for v in range(n_views):
                target = Xc[v] - P[v] @ H + Y1[v] / mu
                E1[v] = self._update_e1(E1, v, target, mu, lam2, lam3, n)
            # 4. missing columns of X_c^v (observed columns stay fixed)
            for v in range(n_views):
                miss = ~mask[:, v]
                if miss.any():
                    Xc[v] = self._update_missing(
                        Xc[v], miss, P[v] @ H + E1[v] - Y1[v] / mu, eye - Zs[v], E2[v] - Y3[v] / mu
                    )
            # 5. Z^v and Z
            for v in range(n_views):
                rhs = Xc[v].T @ (Xc[v] - E2[v] + Y3[v] / mu) + G[v] - W[v] / mu
                Zs[v] = _solve_identity_plus_gram(Xc[v], rhs, 1.0, 1.0)
            if latent_sub:
                rhs = H.T @ (H - EH + Y4 / mu) + G[n_views] - W[n_views] / mu
                Zs[n_views] = _solve_identity_plus_gram(H, rhs, 1.0, 1.0)
            # 6. tensor G by t-SVT on the rotated n x (V+1) x n tensor
            rotated = np.transpose(Zs + W / mu, (1, 0, 2))  # [i, v, j]
            G = np.transpose(tsvt(rotated, 1.0 / mu), (1, 0, 2))
            # 7. l2,1 noise terms
            for v in range(n_views):
                E2[v] = shrink21(Xc[v] - Xc[v] @ Zs[v] + Y3[v] / mu, lam1 / mu)
            if latent_sub:
                EH = shrink21(H - H @ Zs[n_views] + Y4 / mu, lam1 / mu)
            # 8. multipliers
            res = []
            for v in range(n_views):
                r1 = Xc[v] - P[v] @ H - E1[v]
                r3 = Xc[v] - Xc[v] @ Zs[v] - E2[v]
                Y1[v] += mu * r1
                Y3[v] += mu * r3
                res += [np.abs(r1).max(), np.abs(r3).max()]
            if latent_sub:
                r4 = H - H @ Zs[n_views] - EH
                Y4 += mu * r4
                res.append(np.abs(r4).max())
            rz = Zs - G
            W += mu * rz
            res.append(np.abs(rz).max())
            history.append(float(max(res)))
            mu = min(self.rho * mu, self.mu_max)
            if history[-1] < self.tol:
                break
        self.n_iter_ = len(history)
        self.history_ = np.array(history)
        abs_sum = sum(np.abs(z) + np.abs(z.T) for z in Zs)
        self.affinity_ = abs_sum / n_slices
        self.latent_ = H.T
        self.recovered_views_ = []
        for v in range(n_views):
            rec = Xc[v].T * sample_norms[:, v : v + 1]
            rec[mask[:, v]] = arrays[v][mask[:, v]]
            self.recovered_views_.append(rec)
        self.mask_ = mask
        self.labels_ = SpectralClustering(
            n_clusters=int(self.n_clusters),
            affinity="precomputed",
            random_state=self.random_state,
            assign_labels="kmeans",
        ).fit_predict(self.affinity_)
        return self

    def fit_predict(self, views, y=None, mask=None):
        return self.fit(views, mask=mask).labels_

    @staticmethod
    def _update_e1(E1, v, target, mu, lam2, lam3, n):
        """argmin_E lam2 sum_w HSIC(E, E_w) + lam3/2 ||E||^2 + mu/2 ||E - target||^2:
        E ((mu + lam3) I + c M_v) = mu target, M_v = C (sum_w E_w^T E_w) C, c = 2 lam2/(n-1)^2."""
        others = [E1[w] for w in range(len(E1)) if w != v]
        if lam2 == 0 or not others:
            return target * (mu / (mu + lam3))
        F = np.vstack([e - e.mean(axis=1, keepdims=True) for e in others])  # rows of E_w C
        c = 2.0 * lam2 / (n - 1) ** 2
        return _solve_identity_plus_gram(F, mu * target.T, mu + lam3, c).T

    @staticmethod
    def _update_missing(xc, miss, anchor, D, T):
        """Missing block Xm minimising ||Xm - anchor_m||^2 + ||Xc D - T||^2 (observed fixed)."""
        obs = ~miss
        d_m, d_o = D[miss], D[obs]
        lhs = np.eye(int(miss.sum())) + d_m @ d_m.T
        rhs = anchor[:, miss] - (xc[:, obs] @ d_o - T) @ d_m.T
        out = xc.copy()
        out[:, miss] = scipy.linalg.solve(lhs, rhs.T, assume_a="pos").T
        return out
