"""A scikit-learn classifier that is the exact empirical-risk minimiser over a quantized
ReLU network: fit solves d-QNNT to optimality."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

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
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {self.solver!r}")
        X = np.asarray(X)
        y = np.asarray(y)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ValueError("X must be 2-D and y 1-D with one label per row")
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(f"need exactly two classes, got {self.classes_.size}")
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
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n, {self.n_features_in_})")
        if not QuantizedDomain(self.d).contains(X):
            raise ValueError(f"X entries must lie in Z_{self.d}")
        out = self.instance_.predict(self.weights_, self.biases_, X)[:, 0]
        return self.classes_[(out >= 1).astype(int)]
