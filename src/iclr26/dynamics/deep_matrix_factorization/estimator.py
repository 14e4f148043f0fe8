"""A scikit-learn style estimator around the deep factorisation and its gradient flow."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .coupling import coupling_index
from .factorization import (
    INITS,
    factor_shapes,
    gradient_descent,
    initialize,
    integrate_ode,
    product,
)
from .metrics import relative_error

SOLVERS = ("gd", "adaptive", "ode")


def check_problem(M, mask) -> tuple[np.ndarray, np.ndarray]:
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D matrix, got shape {M.shape}")
    mask = np.asarray(mask)
    if mask.shape != M.shape:
        raise ValueError(f"mask shape {mask.shape} differs from M's {M.shape}")
    if mask.dtype != bool:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError("mask must be boolean (or 0/1)")
        mask = mask.astype(bool)
    if not mask.any():
        raise ValueError("the observation mask has no entries")
    if not np.isfinite(M[mask]).all():
        raise ValueError("observed entries of M must be finite")
    return np.where(mask, M, 0.0), mask


def check_depth(depth) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 2:
        raise ValueError(f"depth must be an integer >= 2 (a factorisation), got {depth!r}")
    return int(depth)


class DeepMatrixFactorization(BaseEstimator):
    """Matrix completion by W = W_L ... W_1 trained with gradient flow on the observed entries.

    ``solver``: ``"gd"`` (constant step ``lr``, default), ``"adaptive"`` (GD whose step grows on
    the small-init plateau; same flow path, fewer steps for deep models), ``"ode"`` (scipy RK45
    up to flow time ``lr * max_steps``).
    """

    def __init__(
        self,
        depth: int = 3,
        width: int | None = None,
        init: str = "gaussian",
        init_scale: float = 1e-2,
        lr: float = 0.1,
        max_steps: int = 200_000,
        tol: float = 1e-10,
        solver: str = "gd",
        record_every: int = 100,
        random_state: int | None = 0,
    ):
        self.depth = depth
        self.width = width
        self.init = init
        self.init_scale = init_scale
        self.lr = lr
        self.max_steps = max_steps
        self.tol = tol
        self.solver = solver
        self.record_every = record_every
        self.random_state = random_state

    def _validate(self):
        depth = check_depth(self.depth)
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if not (self.init_scale > 0 and self.lr > 0 and self.max_steps >= 1 and self.tol > 0):
            raise ValueError("init_scale, lr, max_steps and tol must be positive")
        return depth

    def fit(self, M, mask, initial_factors=None):
        """Fit to the observed entries ``M[mask]``; ``initial_factors`` resumes from given
        factors (e.g. after pre-training on fewer observations)."""
        depth = self._validate()
        M, mask = check_problem(M, mask)
        n, m = M.shape
        width = max(n, m) if self.width is None else int(self.width)
        if width < 1:
            raise ValueError("width must be positive")
        if initial_factors is None:
            rng = np.random.default_rng(self.random_state)
            shapes = factor_shapes(n, m, depth, width)
            factors = initialize(shapes, self.init, self.init_scale, rng)
        else:
            factors = [np.array(F, dtype=np.float64) for F in initial_factors]
            if len(factors) != depth or product(factors).shape != (n, m):
                raise ValueError("initial_factors do not match depth and M's shape")
        if self.solver == "ode":
            out = integrate_ode(factors, M, mask, t_max=self.lr * self.max_steps, tol=self.tol)
            self.factors_ = out["factors"]
            self.n_iter_ = out["n_evaluations"]
            self.flow_time_ = out["flow_time"]
            self.history_ = []
            self.loss_ = out["loss"]
        else:
            out = gradient_descent(
                [F[None] for F in factors],
                M,
                mask,
                lr=self.lr,
                max_steps=self.max_steps,
                tol=self.tol,
                adaptive=self.solver == "adaptive",
                record_every=self.record_every,
            )
            self.factors_ = [F[0] for F in out["factors"]]
            self.n_iter_ = int(out["steps"][0])
            self.flow_time_ = float(out["flow_time"][0])
            self.history_ = [(s, float(loss[0]), sv[0]) for s, loss, sv in out["history"]]
            self.loss_ = float(out["loss"][0])
        self.converged_ = self.loss_ < self.tol * 1.01
        self.completed_ = product(self.factors_)
        self.singular_values_ = np.linalg.svd(self.completed_, compute_uv=False)
        self.mask_ = mask
        return self

    def predict(self, X=None) -> np.ndarray:
        """The completed matrix (``X`` is ignored; present for the scikit-learn signature)."""
        check_is_fitted(self, "completed_")
        return self.completed_

    def score(self, M_true, test_mask) -> float:
        """Negative relative RMSE on held-out entries (higher is better)."""
        check_is_fitted(self, "completed_")
        M_true, test_mask = check_problem(M_true, test_mask)
        return -float(relative_error(self.completed_, M_true, test_mask))

    def coupling_index(self, between_blocks: bool = True) -> float:
        check_is_fitted(self, "factors_")
        return coupling_index(self.factors_, self.mask_, between_blocks)
