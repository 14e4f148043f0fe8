"""Pool-based active learners with version spaces, and the passive / heuristic baselines.

:class:`MultiplicativeActiveLearner` follows the paper's Algorithm 2 as summarised by its
authors (our reconstruction of constants and confidence radii): rounds of uniform sampling from
the disagreement region D_i, elimination of hypotheses whose conditional empirical error exceeds
the empirical minimiser's by more than an empirical-Bernstein radius, and a progress test on the
version-space radius. When the radius fails to halve, the optimum's conditional error on D_i is
large, and one final sample of size ~ c0 L / eps^2 from D_i turns an additive estimate into a
(1 + eps) multiplicative one (Theorem 1.2). :class:`StumpActiveLearner` is Algorithm 1, the
same learner over 1-D thresholds.

Every learner is a scikit-learn classifier (``BaseEstimator`` + ``ClassifierMixin``):
``fit(X, y)`` takes the pool ``X`` and either the pool's labels ``y`` (any two class values;
a label is revealed to the learner only when it queries that point, and ``n_labels_`` counts
the distinct points it asked for) or an oracle ``y(idx) -> 0/1 labels``. Hyperparameters are
stored as given and checked in ``fit`` (scikit-learn's convention), so ``clone``,
``get_params``/``set_params`` and ``GridSearchCV`` work. The version-space learners' pool must
be the hypothesis class's grid (integer cells whose counts equal the class's ``weights``), so
they cannot pass the checks of ``check_estimator`` that fit random real-valued matrices
(:data:`SKLEARN_EXPECTED_FAILED_CHECKS`); :class:`UncertaintySamplingTree` takes any real X
and passes ``check_estimator``.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from iclr26 import validation as V
from iclr26.classic.dt_active_learning.hypotheses import EnumeratedClass, GridTreeClass, StumpClass
from iclr26.sklearn_contract import expected_failed_checks

SKLEARN_EXPECTED_FAILED_CHECKS = expected_failed_checks(
    "the pool X must be the hypothesis class's integer grid, each cell as often as the class's "
    "weights say; random real-valued matrices are not such a pool"
) | {
    "check_classifiers_train": "needs a pool of random real-valued points",
    "check_classifiers_regression_target": "needs a pool of random real-valued points",
    "check_supervised_y_2d": "needs a pool of random real-valued points",
    "check_classifiers_classes": "needs a pool of random real-valued points",
    "check_classifiers_one_label": "needs a pool of random real-valued points",
    "check_classifiers_one_label_sample_weights": "needs a pool of random real-valued points",
    "check_classifier_data_not_an_array": "needs a pool of random real-valued points",
    "check_estimators_partial_fit_n_features": "needs a pool of random real-valued points",
    "check_decision_proba_consistency": "needs a pool of random real-valued points",
    "check_requires_y_none": "needs a pool of random real-valued points",
    "check_estimators_unfitted": "needs a pool of random real-valued points",
    "check_non_transformer_estimators_n_iter": "needs a pool of random real-valued points",
    "check_supervised_y_no_nan": "needs a pool of random real-valued points",
    "check_fit_non_negative": "needs a pool of random real-valued points",
    "check_sample_weight_equivalence_on_dense_data": "needs a pool of random real-valued points",
    "check_sample_weights_not_an_array": "needs a pool of random real-valued points",
    "check_sample_weights_list": "needs a pool of random real-valued points",
    "check_sample_weights_shape": "needs a pool of random real-valued points",
    "check_sample_weights_not_overwritten": "needs a pool of random real-valued points",
    "check_estimators_dtypes": "needs a pool of random real-valued points",
    "check_classifier_not_supporting_multiclass": "needs a pool of random real-valued points",
}


def _label_source(y, n: int):
    """``(oracle, classes)`` from ``y``: an oracle callable (classes 0 and 1) or the pool's
    labels (two distinct values, encoded 0/1 in sorted order; revealed one query at a time)."""
    if callable(y):
        return y, np.array([0, 1])
    if y is None:
        raise ValueError(
            "y: this estimator requires y to be passed, but the target y is None (give the "
            "pool's labels or an oracle callable idx -> 0/1 labels)"
        )
    y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=n)
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y must not contain NaN or infinity")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size > 2:
        raise ValueError(
            f"y: Only binary classification is supported. The target has {classes.size} classes."
        )
    if classes.size < 2:
        raise ValueError("y must hold two classes, got 1 class")
    codes = codes.astype(np.int8)
    return (lambda idx: codes[idx]), classes


def _pool_cells(cls, X) -> np.ndarray:
    """Flat cell index of each pool point; the pool must fill ``cls.weights`` exactly."""
    X = V.check_array(X, "X", ndim=2)
    if not np.all(np.equal(np.mod(X, 1), 0)):
        raise ValueError("X: pool coordinates must be integers")
    X = X.astype(int)
    if isinstance(cls, StumpClass):
        if X.shape[1] != 1:
            raise ValueError(f"X: a stump pool has one feature, got {X.shape[1]}")
        cells = X[:, 0]
    elif isinstance(cls, GridTreeClass):
        if X.shape[1] != 2:
            raise ValueError(f"X: a grid-tree pool has two features, got {X.shape[1]}")
        cells = X[:, 0] * cls.w + X[:, 1]
    elif isinstance(cls, EnumeratedClass):
        cells = X[:, 0]
    else:
        raise TypeError(f"unsupported hypothesis class {type(cls).__name__}")
    n_cells = int(np.prod(cls.cell_shape))
    if cells.min() < 0 or cells.max() >= n_cells:
        raise ValueError("X: pool coordinates outside the hypothesis class's grid")
    if not np.array_equal(np.bincount(cells, minlength=n_cells), np.ravel(cls.weights)):
        raise ValueError("X: the pool does not match the class's cell weights")
    return cells


class _LabelCache:
    """Labels are per pool point: a repeated query costs nothing and returns the same label."""

    def __init__(self, oracle, n: int):
        if not callable(oracle):
            raise TypeError(
                f"oracle (y) must be a callable idx -> labels, got {type(oracle).__name__}"
            )
        self.oracle = oracle
        self.labels = np.full(n, -1, dtype=np.int8)
        self.n_queries = 0

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        self.n_queries += idx.size
        new = np.unique(idx[self.labels[idx] < 0])
        if new.size:
            got = np.asarray(self.oracle(new)).ravel()
            if got.shape[0] != new.size or not np.isin(got, (0, 1)).all():
                raise ValueError("the oracle must return one 0/1 label per queried index")
            self.labels[new] = got
        return self.labels[idx]

    @property
    def n_labels(self) -> int:
        return int(np.sum(self.labels >= 0))


class _VersionSpaceLearner(ClassifierMixin, BaseEstimator):
    """Shared machinery: rounds of sampling from DIS(H_i), ERM, elimination."""

    def __init__(self, hypotheses, delta: float = 0.1, c0: float = 64.0, random_state=None):
        self.hypotheses = hypotheses
        self.delta = delta
        self.c0 = c0
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = False
        return tags

    def _hypothesis_class(self):
        cls = self.hypotheses
        if not isinstance(cls, (StumpClass, GridTreeClass, EnumeratedClass)):
            raise TypeError(
                "hypotheses must be a StumpClass, GridTreeClass or EnumeratedClass, got "
                f"{type(cls).__name__}"
            )
        return cls

    def _check_params(self) -> None:
        self.hypotheses_ = self._hypothesis_class()
        self._delta = V.check_probability(self.delta, "delta", open_low=True, open_high=True)
        self._c0 = V.check_scalar(self.c0, "c0", low=0.0, low_open=True)

    def _setup(self, X, y):
        self._check_params()
        cls = self.hypotheses_
        self.cells_ = _pool_cells(cls, X)
        n = self.cells_.shape[0]
        oracle, self.classes_ = _label_source(y, n)
        self.n_features_in_ = int(np.shape(X)[1])
        self.n_pool_ = n
        self.max_rounds_ = math.ceil(math.log2(n)) + 1
        self.conf_log_ = math.log(4.0 * cls.size * self.max_rounds_ / self._delta)
        self.cache_ = _LabelCache(oracle, n)
        self.rng_ = np.random.default_rng(self.random_state)
        self.trace_ = []
        self.n_cells_ = int(np.prod(cls.cell_shape))

    def _sample_stats(self, idx: np.ndarray):
        labels = self.cache_(idx)
        cells = self.cells_[idx]
        c0 = np.bincount(cells[labels == 0], minlength=self.n_cells_).reshape(
            self.hypotheses_.cell_shape
        )
        c1 = np.bincount(cells[labels == 1], minlength=self.n_cells_).reshape(
            self.hypotheses_.cell_shape
        )
        return c0, c1, cells

    def _erm(self, idx: np.ndarray, mask: np.ndarray):
        cls = self.hypotheses_
        c0, c1, cells = self._sample_stats(idx)
        m = idx.size
        err = cls.errors(c0, c1)
        err = err.astype(np.promote_types(err.dtype, np.float32), copy=False)
        err /= m
        best = cls.argmin(err, mask)
        return err, best, cells

    def _eliminate(self, idx: np.ndarray, mask: np.ndarray):
        """One round of Algorithm 2's steps c-d on the sample ``idx`` drawn from D_i."""
        cls = self.hypotheses_
        m = idx.size
        err, best, cells = self._erm(idx, mask)
        pred_best = np.ravel(cls.predict_cells(best))[cells]
        d0 = np.bincount(cells[pred_best == 0], minlength=self.n_cells_).reshape(cls.cell_shape)
        d1 = np.bincount(cells[pred_best == 1], minlength=self.n_cells_).reshape(cls.cell_shape)
        L = self.conf_log_
        # beta = sqrt(2 rho L / m) + 7 L / (3 m), rho = empirical disagreement with h_hat;
        # computed in place because the tree pair table has tens of millions of entries
        beta = cls.errors(d0, d1)
        beta = beta.astype(np.promote_types(beta.dtype, np.float32), copy=False)
        beta *= 2.0 * L / m**2
        np.sqrt(beta, out=beta)
        beta += 7.0 * L / (3.0 * m)
        beta += err[best]
        survive = np.less_equal(err, beta, out=np.empty(mask.shape, dtype=bool))
        survive &= mask
        return survive, best, err

    def _dis_points(self, mask: np.ndarray) -> np.ndarray:
        dis = np.ravel(self.hypotheses_.disagreement_region(mask))
        return np.flatnonzero(dis[self.cells_])

    def _finish(self, best):
        cls = self.hypotheses_
        self.best_ = tuple(int(i) for i in best)
        self.n_labels_ = self.cache_.n_labels
        self.n_queries_ = self.cache_.n_queries
        if isinstance(cls, GridTreeClass):
            self.best_tree_ = cls.to_dict(self.best_)
        return self

    def predict(self, X) -> np.ndarray:
        """The learned hypothesis' labels (values of ``classes_``) at pool points ``X``."""
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "best_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        cls = self.hypotheses_
        X = V.check_array(X, "X", ndim=2)
        if isinstance(cls, GridTreeClass):
            return self.classes_[np.asarray(cls.predict(self.best_, X), dtype=int)]
        if X.shape[1] != 1 or not np.all(np.mod(X, 1) == 0):
            raise ValueError(f"X must be an (m, 1) array of integer positions, got {X.shape}")
        pos = X[:, 0].astype(int)
        if pos.min() < 0 or pos.max() >= np.ravel(cls.weights).size:
            raise ValueError("X: points outside the pool")
        return self.classes_[np.ravel(cls.predict_cells(self.best_))[pos].astype(int)]


class MultiplicativeActiveLearner(_VersionSpaceLearner):
    """(1 + eps)-multiplicative active learner (paper's Algorithm 2, reconstructed constants).

    ``constants="practical"``: m_i = ceil(c0 L), final ceil(c0 L / eps^2), L = ln(4|H| R / delta).
    ``constants="theory"``: m_i = ceil(c0 theta^2 (V ln theta + ln(ln n / delta))), final
    ceil(c0 theta^2 / eps^2 (V ln(theta/eps) + ln(1/delta))) with ``theta`` given or "auto"
    (the analytic bound: 2 for stumps, ln(n)^2 for depth-2 trees).
    ``regime_test``: "radius" (default: switch to the final phase when the version-space radius
    fails to halve) or "error" (switch when the conditional empirical error of the round's ERM
    is >= 1/(16 theta), the condition the analysis names).
    ``fit(X, y)`` with the pool's labels ``y`` or an oracle ``y(idx) -> labels``; then ``best_``,
    ``n_labels_`` (distinct points queried), ``n_queries_`` (with repeats), ``trace_`` (per
    round), ``predict(X)``.
    """

    def __init__(
        self,
        hypotheses,
        epsilon: float = 1.0,
        delta: float = 0.1,
        constants: str = "practical",
        c0: float = 64.0,
        theta="auto",
        regime_test: str = "radius",
        random_state=None,
    ):
        super().__init__(hypotheses, delta, c0, random_state)
        self.epsilon = epsilon
        self.constants = constants
        self.theta = theta
        self.regime_test = regime_test

    def _check_params(self) -> None:
        super()._check_params()
        self._epsilon = V.check_scalar(self.epsilon, "epsilon", low=0.0, low_open=True)
        V.check_choice(self.constants, "constants", ("practical", "theory"))
        V.check_choice(self.regime_test, "regime_test", ("radius", "error"))
        if not (isinstance(self.theta, str) and self.theta == "auto"):
            V.check_scalar(self.theta, "theta", low=0.0, low_open=True)

    def _theta(self) -> float:
        if not (isinstance(self.theta, str) and self.theta == "auto"):
            return float(self.theta)
        if isinstance(self.hypotheses_, StumpClass):
            return 2.0
        return math.log(self.n_pool_) ** 2

    def round_size(self) -> int:
        if self.constants == "practical":
            return math.ceil(self._c0 * self.conf_log_)
        th, v = max(self._theta(), math.e), self.hypotheses_.vc_dim
        return math.ceil(
            self._c0 * th**2 * (v * math.log(th) + math.log(math.log(self.n_pool_) / self._delta))
        )

    def final_size(self) -> int:
        eps = self._epsilon
        if self.constants == "practical":
            return math.ceil(self._c0 * self.conf_log_ / eps**2)
        th, v = max(self._theta(), math.e), self.hypotheses_.vc_dim
        return math.ceil(
            self._c0 * th**2 / eps**2 * (v * math.log(th / eps) + math.log(1.0 / self._delta))
        )

    def fit(self, X, y):
        self._setup(X, y)
        cls = self.hypotheses_
        mask = cls.full_mask()
        best = None
        for i in range(self.max_rounds_):
            dis = self._dis_points(mask)
            if dis.size == 0:  # all survivors agree on the pool
                best = cls.argmin(np.zeros(cls.shape), mask)
                self.trace_.append({"round": i, "dis_mass": 0.0, "stop": "agree"})
                return self._finish(best)
            m = self.round_size()
            idx = dis[self.rng_.integers(0, dis.size, m)]
            new_mask, best, err = self._eliminate(idx, mask)
            r_old, r_new = cls.radius(mask, best), cls.radius(new_mask, best)
            row = {
                "round": i,
                "dis_mass": dis.size / self.n_pool_,
                "m": m,
                "radius_before": r_old,
                "radius_after": r_new,
                "cond_error": float(err[best]),
                "labels": self.cache_.n_labels,
            }
            self.trace_.append(row)
            if self.regime_test == "radius":
                regime_two = r_new > r_old / 2
            else:  # the theorem's condition: conditional error of the optimum >= 1/(16 theta)
                regime_two = err[best] >= 1.0 / (16.0 * self._theta())
            if regime_two:  # regime 2: direct estimation on D_i
                m_final = self.final_size()
                idx = dis[self.rng_.integers(0, dis.size, m_final)]
                _, best, _ = self._erm(idx, mask)
                row["stop"] = "final"
                row["m_final"] = m_final
                return self._finish(best)
            mask = new_mask
        self.trace_.append({"round": self.max_rounds_, "stop": "round cap"})
        return self._finish(best)


class StumpActiveLearner(MultiplicativeActiveLearner):
    """Algorithm 1: the multiplicative learner over thresholds on a 1-D pool of ``n`` points."""

    def __init__(
        self,
        n: int,
        epsilon: float = 1.0,
        delta: float = 0.1,
        constants: str = "practical",
        c0: float = 64.0,
        regime_test: str = "radius",
        random_state=None,
    ):
        self.n = n
        self.epsilon = epsilon
        self.delta = delta
        self.constants = constants
        self.c0 = c0
        self.regime_test = regime_test
        self.random_state = random_state

    # the threshold class is built from ``n`` at fit time; ``theta`` is the analytic 2
    theta = "auto"

    def _hypothesis_class(self):
        return StumpClass(self.n)


class AdditiveDisagreementLearner(_VersionSpaceLearner):
    """Classical disagreement-based (A^2 / DHM-style) learner with an additive target.

    Same sampling and elimination as the multiplicative learner, no regime switch: it stops
    once the disagreement region's mass is at most ``epsilon_add`` (every survivor is then
    within epsilon_add of the others), or at the round cap.
    """

    def __init__(
        self,
        hypotheses,
        epsilon_add: float = 0.01,
        delta: float = 0.1,
        c0: float = 64.0,
        random_state=None,
    ):
        super().__init__(hypotheses, delta, c0, random_state)
        self.epsilon_add = epsilon_add

    def _check_params(self) -> None:
        super()._check_params()
        self._epsilon_add = V.check_probability(
            self.epsilon_add, "epsilon_add", open_low=True, open_high=True
        )

    def fit(self, X, y):
        self._setup(X, y)
        cls = self.hypotheses_
        mask = cls.full_mask()
        best = cls.argmin(np.zeros(cls.shape), mask)
        for i in range(self.max_rounds_):
            dis = self._dis_points(mask)
            mass = dis.size / self.n_pool_
            self.trace_.append({"round": i, "dis_mass": mass, "labels": self.cache_.n_labels})
            if mass <= self._epsilon_add:
                if i == 0 or dis.size == 0:
                    best = cls.argmin(np.zeros(cls.shape), mask)
                return self._finish(best)
            m = math.ceil(self._c0 * self.conf_log_)
            idx = dis[self.rng_.integers(0, dis.size, m)]
            mask, best, _ = self._eliminate(idx, mask)
        return self._finish(best)


class PassiveERM(_VersionSpaceLearner):
    """``n_labels`` uniformly random distinct pool points, then exact ERM over the class."""

    def __init__(self, hypotheses, n_labels: int, random_state=None):
        self.hypotheses = hypotheses
        self.n_labels = n_labels
        self.random_state = random_state

    delta, c0 = 0.1, 1.0  # only used for the (unused) confidence radius of the shared setup

    def fit(self, X, y):
        n_labels = V.check_int(self.n_labels, "n_labels", low=1)
        self._setup(X, y)
        if n_labels > self.n_pool_:
            raise ValueError(f"n_labels ({n_labels}) exceeds the pool size ({self.n_pool_})")
        idx = self.rng_.choice(self.n_pool_, n_labels, replace=False)
        _, best, _ = self._erm(idx, self.hypotheses_.full_mask())
        return self._finish(best)


class UncertaintySamplingTree(ClassifierMixin, BaseEstimator):
    """Practitioner's heuristic: a depth-``depth`` scikit-learn tree retrained after each batch,
    querying the points where a bootstrap committee of trees disagrees most.

    ``fit(X, y)``: any real-valued pool ``X`` with its labels ``y`` (two classes, revealed only
    when queried) or an oracle ``y(idx) -> 0/1``; ``n_labels_`` distinct points are labelled.
    Passes scikit-learn's ``check_estimator`` (binary classification only).
    """

    def __init__(
        self,
        depth: int = 2,
        budget: int = 200,
        batch: int = 20,
        initial: int = 20,
        committee: int = 5,
        random_state=None,
    ):
        self.depth = depth
        self.budget = budget
        self.batch = batch
        self.initial = initial
        self.committee = committee
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = False
        return tags

    def fit(self, X, y):
        from sklearn.tree import DecisionTreeClassifier

        depth = V.check_int(self.depth, "depth", low=1)
        budget = V.check_int(self.budget, "budget", low=1)
        batch = V.check_int(self.batch, "batch", low=1)
        initial = V.check_int(self.initial, "initial", low=1)
        committee = V.check_int(self.committee, "committee", low=1)
        if callable(y):
            X = V.check_array(X, "X", ndim=2, dtype=np.float64)
        else:  # scikit-learn's own checks and messages for (X, y) data
            from sklearn.utils.multiclass import check_classification_targets
            from sklearn.utils.validation import validate_data

            if y is None:
                _label_source(y, 0)
            X, y = validate_data(self, X, y, dtype=np.float64)
            check_classification_targets(y)
        n = X.shape[0]
        oracle, self.classes_ = _label_source(y, n)
        self.n_features_in_ = X.shape[1]
        rng = np.random.default_rng(self.random_state)
        cache = _LabelCache(oracle, n)
        chosen = rng.choice(n, min(initial, n), replace=False)
        cache(chosen)
        while True:
            known = np.flatnonzero(cache.labels >= 0)
            labels = cache.labels[known]
            self.tree_ = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(
                X[known], labels
            )
            if known.size >= min(budget, n):
                break
            votes = np.zeros(n)
            for _ in range(committee):
                boot = rng.choice(known, known.size, replace=True)
                if np.unique(cache.labels[boot]).size < 2:
                    votes += cache.labels[boot][0]
                    continue
                member = DecisionTreeClassifier(max_depth=depth, random_state=0)
                votes += member.fit(X[boot], cache.labels[boot]).predict(X)
            frac = votes / committee
            score = frac * (1 - frac) + 1e-9 * rng.random(n)
            score[known] = -1.0
            take = min(batch, min(budget, n) - known.size)
            cache(np.argsort(score)[::-1][:take])
        self.n_labels_ = cache.n_labels
        return self

    def predict(self, X) -> np.ndarray:
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "tree_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        from sklearn.utils.validation import validate_data

        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.classes_[self.tree_.predict(X).astype(int)]
