"""A scikit-learn style estimator around the deep factorisation and its gradient flow."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V

from .coupling import coupling_index
from .factorization import (
    INITS,
    check_factors,
    check_target,
    factor_shapes,
    gradient_descent,
    initialize,
    integrate_ode,
    product,
)
from .metrics import relative_error

SOLVERS = ("gd", "adaptive", "ode")


def check_problem(M, mask) -> tuple[np.ndarray, np.ndarray]:
    """A 2-D target M, finite on the observed entries (unobserved ones may be NaN), and a 0/1
    mask of the same shape with at least one observed entry."""
    M = V.check_array(M, "M", ndim=2, dtype=np.float64, allow_nan=True, allow_inf=True)
    return check_target(M, mask, M.shape)


def check_depth(depth) -> int:
    return V.check_int(depth, "depth", low=2)


class DeepMatrixFactorization(BaseEstimator):
    """Matrix completion by W = W_L ... W_1 trained with gradient flow on the observed entries.

    ``solver``: ``"gd"`` (constant step ``lr``, default), ``"adaptive"`` (GD whose step grows on
    the small-init plateau; same flow path, fewer steps for deep models), ``"ode"`` (scipy's
    LSODA, which switches to a stiff method once some entries have converged while others are
    still on their plateau, up to flow time ``lr * max_steps``).

    A step size for which gradient descent diverges raises a ``ValueError`` naming ``lr``
    (never a NaN completion).
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
        V.check_int(self.width, "width", low=1, allow_none=True)
        V.check_choice(self.init, "init", INITS)
        V.check_choice(self.solver, "solver", SOLVERS)
        V.check_scalar(self.init_scale, "init_scale", low=0.0, low_open=True)
        V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        V.check_int(self.max_steps, "max_steps", low=1)
        V.check_scalar(self.tol, "tol", low=0.0, low_open=True)
        V.check_int(self.record_every, "record_every", low=0)
        return depth

    def fit(self, M, mask, initial_factors=None):
        """Fit to the observed entries ``M[mask]``; ``initial_factors`` resumes from given
        factors (e.g. after pre-training on fewer observations)."""
        depth = self._validate()
        M, mask = check_problem(M, mask)
        n, m = M.shape
        width = max(n, m) if self.width is None else int(self.width)
        if initial_factors is None:
            rng = np.random.default_rng(self.random_state)
            shapes = factor_shapes(n, m, depth, width)
            factors = initialize(shapes, self.init, self.init_scale, rng)
        else:
            factors = check_factors(initial_factors, "initial_factors", batched=False)
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
            if out["diverged"][0]:
                raise ValueError(
                    f"lr={self.lr} makes gradient descent diverge (the loss left every bound "
                    f"after {int(out['diverged_at'][0])} steps); use a smaller lr"
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
        return coupling_index(
            self.factors_, self.mask_, V.check_bool(between_blocks, "between_blocks")
        )
