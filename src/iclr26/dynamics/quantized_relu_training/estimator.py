"""A scikit-learn classifier that is the exact empirical-risk minimiser over a quantized
ReLU network: fit solves d-QNNT to optimality."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V

from .architecture import layered
from .domain import QuantizedDomain
from .instance import QNNTInstance
from .solvers import solve_brute_force, solve_signature_dp

SOLVERS = {"dp": solve_signature_dp, "brute_force": solve_brute_force}


class QuantizedReLUClassifier(ClassifierMixin, BaseEstimator):
    """Binary classifier on features in Z_d: the quantized network (hidden ``widths``,
    one output) with the fewest training errors. Class ``classes_[1]`` is output 1."""

    def __init__(self, widths: Sequence[int] = (2,), d: int = 2, solver: str = "dp"):
        self.widths = widths
        self.d = d
        self.solver = solver

    def fit(self, X, y):
        V.check_choice(self.solver, "solver", sorted(SOLVERS))
        domain = QuantizedDomain(self.d)
        X = V.check_array(X, "X", ndim=2)
        if not domain.contains(X):
            raise ValueError(f"X must hold integers in Z_{domain.d} = [{domain.lo}, {domain.hi}]")
        y = V.check_array(y, "y", ndim=1, n_rows=X.shape[0], dtype=None)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(f"y must hold exactly two classes, got {self.classes_.size}")
        target = (y == self.classes_[1]).astype(np.int64)
        arch = layered(X.shape[1], list(self.widths), 1)
        self.instance_ = QNNTInstance(arch, X, target, d=self.d)
        result = SOLVERS[self.solver](self.instance_)
        self.weights_, self.biases_ = result.weights, result.biases
        self.training_errors_ = result.error
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        check_is_fitted(self, "weights_")
        X = V.check_array(X, "X", ndim=2, shape=(None, self.n_features_in_))
        if not QuantizedDomain(self.d).contains(X):
            raise ValueError(f"X entries must lie in Z_{self.d}")
        out = self.instance_.predict(self.weights_, self.biases_, X)[:, 0]
        return self.classes_[(out >= 1).astype(int)]
