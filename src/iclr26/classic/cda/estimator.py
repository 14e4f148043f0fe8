"""``CDAClassifier``: Centroid Discriminant Analysis as a scikit-learn estimator.

Binary problems train one CDA; K > 2 classes train one CDA per class pair and decode with
one-vs-one ECOC. ``kernel="rbf"`` trains kernel CDA in the RKHS of a Gaussian kernel whose
bandwidth is ``sqrt(kernel_c)`` times the median pairwise distance of each pair's samples.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from iclr26.classic.cda.binary import fit_binary
from iclr26.classic.cda.ecoc import coding_matrix, hinge_loss, ovo_pairs
from iclr26.classic.cda.geometry import KernelSpace, LinearSpace
from iclr26.classic.cda.kernel import rbf_from_squared, rbf_gram, squared_distances


class CDAClassifier(ClassifierMixin, BaseEstimator):
    """Centroid Discriminant Analysis (linear or Gaussian-kernel), any number of classes.

    Parameters
    ----------
    kernel : {"linear", "rbf"}
    max_iter : int, rotation iterations per binary model (50).
    cv_threshold : float, stop when std/mean of the last ``ps_trace_length`` scores is below.
    ps_trace_length : int, window of the early-stopping rule (10).
    n_null : int, random angles of the null-model check (0 disables the check).
    n_folds : int, folds of the cross-validated cut (5).
    angle_search : {"bo", "golden"}, Bayesian optimisation or golden-section search.
    kernel_c : float, squared bandwidth factor of the rbf kernel (sigma = sqrt(c) * median).
    random_state : int, Generator-compatible seed or None.

    Attributes
    ----------
    classes_ : labels; the binary model's positive class is ``classes_[1]``.
    coef_, intercept_ : (P, M) unit directions and (P,) ``-oop`` (linear kernel only), one row
        per class pair ``pairs_``; P = 1 for binary problems.
    dual_coef_, sigma_, support_ : per pair, RKHS coefficients, kernel bandwidth and the
        indices of the training samples they weigh (rbf kernel only).
    n_iter_, ps_, p_value_ : (P,) iterations run, cross-validated training performance score,
        and null-model p-value of each pair's model.
    """

    def __init__(
        self,
        kernel: str = "linear",
        max_iter: int = 50,
        cv_threshold: float = 1e-3,
        ps_trace_length: int = 10,
        n_null: int = 100,
        n_folds: int = 5,
        angle_search: str = "bo",
        kernel_c: float = 1.0,
        random_state=None,
    ):
        self.kernel = kernel
        self.max_iter = max_iter
        self.cv_threshold = cv_threshold
        self.ps_trace_length = ps_trace_length
        self.n_null = n_null
        self.n_folds = n_folds
        self.angle_search = angle_search
        self.kernel_c = kernel_c
        self.random_state = random_state

    def _check_params(self) -> None:
        choices = {"kernel": ("linear", "rbf"), "angle_search": ("bo", "golden")}
        for name, valid in choices.items():
            if getattr(self, name) not in valid:
                raise ValueError(f"{name} must be one of {valid}, got {getattr(self, name)!r}")
        minimum = {"max_iter": 0, "n_null": 0, "n_folds": 2, "ps_trace_length": 2}
        for name, low in minimum.items():
            value = getattr(self, name)
            if not isinstance(value, Integral) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, strict in (("cv_threshold", False), ("kernel_c", True)):
            value = getattr(self, name)
            if not isinstance(value, Real) or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
            if strict and value == 0:
                raise ValueError(f"{name} must be > 0")

    def fit(self, X, y):
        """Train one binary CDA per class pair (one for two classes)."""
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"CDAClassifier needs samples of at least 2 classes; got 1 class "
                f"({self.classes_[0]!r})"
            )
        seeds = check_random_state(self.random_state).randint(0, 2**31 - 1, size=2)
        self.pairs_ = ovo_pairs(self.classes_.size)
        models, supports, sigmas = [], [], []
        for p, (i, j) in enumerate(self.pairs_):
            support = np.flatnonzero((y_index == i) | (y_index == j))
            X_pair, y_pair = X[support], y_index[support] == j
            if self.kernel == "linear":
                space = LinearSpace(X_pair)
            else:
                gram, sigma = rbf_gram(X_pair, self.kernel_c)
                space = KernelSpace(gram)
                sigmas.append(sigma)
            models.append(
                fit_binary(
                    space,
                    y_pair,
                    max_iter=self.max_iter,
                    cv_threshold=self.cv_threshold,
                    ps_trace_length=self.ps_trace_length,
                    n_null=self.n_null,
                    n_folds=self.n_folds,
                    angle_search=self.angle_search,
                    seed=int(seeds[0]) + p,
                )
            )
            supports.append(support)
        oop = np.array([m.oop for m in models])
        if self.kernel == "linear":
            self.coef_ = np.vstack([m.direction for m in models])
            self.intercept_ = -oop
        else:
            self.X_fit_ = X
            self.support_ = supports
            self.dual_coef_ = [m.direction for m in models]
            self.sigma_ = np.array(sigmas)
            self.oop_ = oop
        self.n_iter_ = np.array([m.n_iter for m in models])
        self.ps_ = np.array([m.ps for m in models])
        self.p_value_ = np.array([m.p_value for m in models])
        self.finalization_ = [m.finalization for m in models]
        return self

    def pair_scores(self, X) -> np.ndarray:
        """f_p(x) = <direction_p, phi(x)> - oop_p for every class pair; shape (n, P)."""
        check_is_fitted(self, "n_iter_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.kernel == "linear":
            return X @ self.coef_.T + self.intercept_
        squared = squared_distances(X, self.X_fit_)
        scores = np.empty((X.shape[0], len(self.pairs_)))
        for p, (support, beta, sigma) in enumerate(
            zip(self.support_, self.dual_coef_, self.sigma_)
        ):
            scores[:, p] = rbf_from_squared(squared[:, support], sigma) @ beta - self.oop_[p]
        return scores

    def decision_function(self, X) -> np.ndarray:
        """Binary: f(x) (positive favours ``classes_[1]``), shape (n,). K > 2: minus the
        ECOC hinge loss of each class, shape (n, K)."""
        scores = self.pair_scores(X)
        if self.classes_.size == 2:
            return scores[:, 0]
        return -hinge_loss(scores, coding_matrix(self.classes_.size))

    def predict(self, X) -> np.ndarray:
        decision = self.decision_function(X)
        if self.classes_.size == 2:
            return self.classes_[(decision >= 0).astype(int)]
        return self.classes_[np.argmax(decision, axis=1)]
