"""``CDAClassifier``: Centroid Discriminant Analysis as a scikit-learn estimator.

Binary problems train one CDA; K > 2 classes train one CDA per class pair and decode with
one-vs-one ECOC. ``kernel="rbf"`` trains kernel CDA in the RKHS of a Gaussian kernel whose
bandwidth is ``sqrt(kernel_c)`` times the median pairwise distance of each pair's samples.
``predict_proba`` is a temperature-scaled logistic/softmax of the decision function, the
temperature fitted by maximum likelihood on the training samples.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from iclr26 import validation as V
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
    n_projections_, n_scored_ : (P,) load-free work counts of each pair's training: products of
        the data with a direction (O(NM) each, O(N^2) for the kernel) and candidate projections
        scored by the cut search (O(K N log N) each, K folds).
    temperature_ : float, the scale s of ``predict_proba`` (see there).

    Probabilities
    -------------
    ``predict_proba`` is calibrated by temperature scaling (Platt scaling without an intercept):
    binary p(classes_[1] | x) = sigmoid(s f(x) / c), K > 2 p = softmax(s D(x) / c) with D the
    decision function (minus the ECOC hinge loss of each class) and c its standard deviation on
    the training set; s > 0 maximises the training log-likelihood (bounded search over
    [1e-3, 1e3]). A monotone map of the decision, so ``argmax predict_proba`` equals
    ``predict`` and ROC rankings are unchanged. It is fitted on the training samples, so a
    model that overfits them gets over-confident probabilities; for held-out calibration wrap
    it in ``sklearn.calibration.CalibratedClassifierCV``.

    Input checks follow scikit-learn (``validate_data``: finite, 2-D, non-empty, numeric;
    hyperparameters checked in ``fit`` through :mod:`iclr26.validation`). A class pair whose
    centroids coincide (for example a constant feature matrix) has no centroid direction: fit
    raises ``ValueError`` naming X.

    ``sklearn.utils.estimator_checks.check_estimator`` passes in full (tested).
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
        V.check_choice(self.kernel, "kernel", ("linear", "rbf"))
        V.check_choice(self.angle_search, "angle_search", ("bo", "golden"))
        V.check_int(self.max_iter, "max_iter", low=0)
        V.check_int(self.n_null, "n_null", low=0)
        V.check_int(self.n_folds, "n_folds", low=2)
        V.check_int(self.ps_trace_length, "ps_trace_length", low=2)
        V.check_scalar(self.cv_threshold, "cv_threshold", low=0.0)
        V.check_scalar(self.kernel_c, "kernel_c", low=0.0, low_open=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = True
        tags.classifier_tags.multi_label = False
        tags.non_deterministic = False
        return tags

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
            _check_pair(X_pair, y_pair, self.classes_[i], self.classes_[j], self.kernel)
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
        self.n_projections_ = np.array([m.n_projections for m in models])
        self.n_scored_ = np.array([m.n_scored for m in models])
        self.temperature_ = 1.0
        self.decision_scale_ = 1.0
        self._fit_temperature(X, y_index)
        return self

    def _fit_temperature(self, X: np.ndarray, y_index: np.ndarray) -> None:
        """Maximum-likelihood temperature of ``predict_proba`` on the training samples."""
        decision = self.decision_function(X)
        spread = float(np.std(decision))
        self.decision_scale_ = spread if spread > 0 else 1.0
        z = decision / self.decision_scale_
        if self.classes_.size == 2:
            sign = np.where(y_index == 1, 1.0, -1.0)

            def nll(log_s: float) -> float:
                return -float(np.sum(log_expit(sign * np.exp(log_s) * z)))
        else:
            rows = np.arange(y_index.size)

            def nll(log_s: float) -> float:
                return -float(np.sum(log_softmax(np.exp(log_s) * z, axis=1)[rows, y_index]))

        found = minimize_scalar(nll, bounds=(np.log(1e-3), np.log(1e3)), method="bounded")
        self.temperature_ = float(np.exp(found.x))

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, K): temperature-scaled logistic (binary) or softmax
        (K > 2) of the decision function; see the class docstring for the calibration."""
        check_is_fitted(self, "temperature_")
        z = self.temperature_ * self.decision_function(X) / self.decision_scale_
        if self.classes_.size == 2:
            positive = expit(z)
            return np.column_stack([1.0 - positive, positive])
        return softmax(z, axis=1)

    def predict_log_proba(self, X) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably."""
        check_is_fitted(self, "temperature_")
        z = self.temperature_ * self.decision_function(X) / self.decision_scale_
        if self.classes_.size == 2:
            return np.column_stack([log_expit(-z), log_expit(z)])
        return log_softmax(z, axis=1)

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


def _check_pair(X: np.ndarray, positive: np.ndarray, neg_label, pos_label, kernel: str) -> None:
    """Refuse a class pair without a centroid direction: constant samples (both kernels), or
    coinciding class centroids (linear CDA; in the RKHS the centroids may still differ)."""
    if np.all(np.ptp(X, axis=0) == 0):
        raise ValueError(
            f"X is constant over classes {neg_label!r} and {pos_label!r} (every feature has "
            "zero variance): CDA's centroid direction is undefined"
        )
    if kernel != "linear":
        return
    difference = X[positive].mean(axis=0) - X[~positive].mean(axis=0)
    scale = max(float(np.abs(X).max()), 1.0)
    if not np.abs(difference).max() > 1e-12 * scale:
        raise ValueError(
            f"X: the centroids of classes {neg_label!r} and {pos_label!r} coincide, so "
            "CDA's centroid direction is undefined"
        )
