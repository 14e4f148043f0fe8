"""Pool-based active learners with version spaces, and the passive / heuristic baselines.

:class:`MultiplicativeActiveLearner` follows the paper's Algorithm 2 as summarised by its
authors (our reconstruction of constants and confidence radii): rounds of uniform sampling from
the disagreement region D_i, elimination of hypotheses whose conditional empirical error exceeds
the empirical minimiser's by more than an empirical-Bernstein radius, and a progress test on the
version-space radius. When the radius fails to halve, the optimum's conditional error on D_i is
large, and one final sample of size ~ c0 L / eps^2 from D_i turns an additive estimate into a
(1 + eps) multiplicative one (Theorem 1.2). :class:`StumpActiveLearner` is Algorithm 1, the
same learner over 1-D thresholds.
"""

from __future__ import annotations

import math

import numpy as np

from iclr26 import validation as V
from iclr26.classic.dt_active_learning.hypotheses import EnumeratedClass, GridTreeClass, StumpClass


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
            raise TypeError(f"oracle must be a callable idx -> labels, got {type(oracle).__name__}")
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


class _VersionSpaceLearner:
    """Shared machinery: rounds of sampling from DIS(H_i), ERM, elimination."""

    def __init__(self, hypotheses, delta: float = 0.1, c0: float = 64.0, random_state=None):
        if not isinstance(hypotheses, (StumpClass, GridTreeClass, EnumeratedClass)):
            raise TypeError(
                "hypotheses must be a StumpClass, GridTreeClass or EnumeratedClass, got "
                f"{type(hypotheses).__name__}"
            )
        self.hypotheses = hypotheses
        self.delta = V.check_probability(delta, "delta", open_low=True, open_high=True)
        self.c0 = V.check_scalar(c0, "c0", low=0.0, low_open=True)
        self.random_state = random_state

    def _setup(self, X, oracle):
        cls = self.hypotheses
        self.cells_ = _pool_cells(cls, X)
        n = self.cells_.shape[0]
        self.n_pool_ = n
        self.max_rounds_ = math.ceil(math.log2(n)) + 1
        self.conf_log_ = math.log(4.0 * cls.size * self.max_rounds_ / self.delta)
        self.cache_ = _LabelCache(oracle, n)
        self.rng_ = np.random.default_rng(self.random_state)
        self.trace_ = []
        self.n_cells_ = int(np.prod(cls.cell_shape))

    def _sample_stats(self, idx: np.ndarray):
        labels = self.cache_(idx)
        cells = self.cells_[idx]
        c0 = np.bincount(cells[labels == 0], minlength=self.n_cells_).reshape(
            self.hypotheses.cell_shape
        )
        c1 = np.bincount(cells[labels == 1], minlength=self.n_cells_).reshape(
            self.hypotheses.cell_shape
        )
        return c0, c1, cells

    def _erm(self, idx: np.ndarray, mask: np.ndarray):
        cls = self.hypotheses
        c0, c1, cells = self._sample_stats(idx)
        m = idx.size
        err = cls.errors(c0, c1)
        err = err.astype(np.promote_types(err.dtype, np.float32), copy=False)
        err /= m
        best = cls.argmin(err, mask)
        return err, best, cells

    def _eliminate(self, idx: np.ndarray, mask: np.ndarray):
        """One round of Algorithm 2's steps c-d on the sample ``idx`` drawn from D_i."""
        cls = self.hypotheses
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
        dis = np.ravel(self.hypotheses.disagreement_region(mask))
        return np.flatnonzero(dis[self.cells_])

    def _finish(self, best):
        cls = self.hypotheses
        self.best_ = tuple(int(i) for i in best)
        self.n_labels_ = self.cache_.n_labels
        self.n_queries_ = self.cache_.n_queries
        if isinstance(cls, GridTreeClass):
            self.best_tree_ = cls.to_dict(self.best_)
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "best_"):
            raise ValueError("call fit first")
        cls = self.hypotheses
        X = V.check_array(X, "X", ndim=2)
        if isinstance(cls, GridTreeClass):
            return cls.predict(self.best_, X)
        if X.shape[1] != 1 or not np.all(np.mod(X, 1) == 0):
            raise ValueError(f"X must be an (m, 1) array of integer positions, got {X.shape}")
        pos = X[:, 0].astype(int)
        if pos.min() < 0 or pos.max() >= np.ravel(cls.weights).size:
            raise ValueError("X: points outside the pool")
        return np.ravel(cls.predict_cells(self.best_))[pos]


class MultiplicativeActiveLearner(_VersionSpaceLearner):
    """(1 + eps)-multiplicative active learner (paper's Algorithm 2, reconstructed constants).

    ``constants="practical"``: m_i = ceil(c0 L), final ceil(c0 L / eps^2), L = ln(4|H| R / delta).
    ``constants="theory"``: m_i = ceil(c0 theta^2 (V ln theta + ln(ln n / delta))), final
    ceil(c0 theta^2 / eps^2 (V ln(theta/eps) + ln(1/delta))) with ``theta`` given or "auto"
    (the analytic bound: 2 for stumps, ln(n)^2 for depth-2 trees).
    ``regime_test``: "radius" (default: switch to the final phase when the version-space radius
    fails to halve) or "error" (switch when the conditional empirical error of the round's ERM
    is >= 1/(16 theta), the condition the analysis names).
    ``fit(X, oracle)`` with ``oracle(idx) -> labels``; then ``best_``, ``n_labels_`` (distinct
    points queried), ``n_queries_`` (with repeats), ``trace_`` (per round), ``predict(X)``.
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
        self.epsilon = V.check_scalar(epsilon, "epsilon", low=0.0, low_open=True)
        V.check_choice(constants, "constants", ("practical", "theory"))
        V.check_choice(regime_test, "regime_test", ("radius", "error"))
        if not (isinstance(theta, str) and theta == "auto"):
            V.check_scalar(theta, "theta", low=0.0, low_open=True)
        self.constants = constants
        self.theta = theta
        self.regime_test = regime_test

    def _theta(self) -> float:
        if self.theta != "auto":
            return float(self.theta)
        if isinstance(self.hypotheses, StumpClass):
            return 2.0
        return math.log(self.n_pool_) ** 2

    def round_size(self) -> int:
        if self.constants == "practical":
            return math.ceil(self.c0 * self.conf_log_)
        th, v = max(self._theta(), math.e), self.hypotheses.vc_dim
        return math.ceil(
            self.c0 * th**2 * (v * math.log(th) + math.log(math.log(self.n_pool_) / self.delta))
        )

    def final_size(self) -> int:
        eps = self.epsilon
        if self.constants == "practical":
            return math.ceil(self.c0 * self.conf_log_ / eps**2)
        th, v = max(self._theta(), math.e), self.hypotheses.vc_dim
        return math.ceil(
            self.c0 * th**2 / eps**2 * (v * math.log(th / eps) + math.log(1.0 / self.delta))
        )

    def fit(self, X, oracle):
        self._setup(X, oracle)
        cls = self.hypotheses
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
        super().__init__(
            StumpClass(n), epsilon, delta, constants, c0, "auto", regime_test, random_state
        )


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
        self.epsilon_add = V.check_probability(
            epsilon_add, "epsilon_add", open_low=True, open_high=True
        )

    def fit(self, X, oracle):
        self._setup(X, oracle)
        cls = self.hypotheses
        mask = cls.full_mask()
        best = cls.argmin(np.zeros(cls.shape), mask)
        for i in range(self.max_rounds_):
            dis = self._dis_points(mask)
            mass = dis.size / self.n_pool_
            self.trace_.append({"round": i, "dis_mass": mass, "labels": self.cache_.n_labels})
            if mass <= self.epsilon_add:
                if i == 0 or dis.size == 0:
                    best = cls.argmin(np.zeros(cls.shape), mask)
                return self._finish(best)
            m = math.ceil(self.c0 * self.conf_log_)
            idx = dis[self.rng_.integers(0, dis.size, m)]
            mask, best, _ = self._eliminate(idx, mask)
        return self._finish(best)


class PassiveERM(_VersionSpaceLearner):
    """``n_labels`` uniformly random distinct pool points, then exact ERM over the class."""

    def __init__(self, hypotheses, n_labels: int, random_state=None):
        super().__init__(hypotheses, 0.1, 1.0, random_state)
        self.n_labels = V.check_int(n_labels, "n_labels", low=1)

    def fit(self, X, oracle):
        self._setup(X, oracle)
        if self.n_labels > self.n_pool_:
            raise ValueError("n_labels exceeds the pool size")
        idx = self.rng_.choice(self.n_pool_, self.n_labels, replace=False)
        _, best, _ = self._erm(idx, self.hypotheses.full_mask())
        return self._finish(best)


class UncertaintySamplingTree:
    """Practitioner's heuristic: a depth-``depth`` scikit-learn tree retrained after each batch,
    querying the points where a bootstrap committee of trees disagrees most."""

    def __init__(
        self,
        depth: int = 2,
        budget: int = 200,
        batch: int = 20,
        initial: int = 20,
        committee: int = 5,
        random_state=None,
    ):
        self.depth = V.check_int(depth, "depth", low=1)
        self.budget = V.check_int(budget, "budget", low=1)
        self.batch = V.check_int(batch, "batch", low=1)
        self.initial = V.check_int(initial, "initial", low=1)
        self.committee = V.check_int(committee, "committee", low=1)
        self.random_state = random_state

    def fit(self, X, oracle):
        from sklearn.tree import DecisionTreeClassifier

        X = V.check_array(X, "X", ndim=2, dtype=np.float64)
        n = X.shape[0]
        rng = np.random.default_rng(self.random_state)
        cache = _LabelCache(oracle, n)
        chosen = rng.choice(n, min(self.initial, n), replace=False)
        cache(chosen)
        while True:
            known = np.flatnonzero(cache.labels >= 0)
            y = cache.labels[known]
            self.tree_ = DecisionTreeClassifier(max_depth=self.depth, random_state=0).fit(
                X[known], y
            )
            if known.size >= min(self.budget, n):
                break
            votes = np.zeros(n)
            for _ in range(self.committee):
                boot = rng.choice(known, known.size, replace=True)
                if np.unique(cache.labels[boot]).size < 2:
                    votes += cache.labels[boot][0]
                    continue
                member = DecisionTreeClassifier(max_depth=self.depth, random_state=0)
                votes += member.fit(X[boot], cache.labels[boot]).predict(X)
            frac = votes / self.committee
            score = frac * (1 - frac) + 1e-9 * rng.random(n)
            score[known] = -1.0
            take = min(self.batch, min(self.budget, n) - known.size)
            cache(np.argsort(score)[::-1][:take])
        self.n_labels_ = cache.n_labels
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "tree_"):
            raise ValueError("call fit first")
        X = V.check_array(X, "X", ndim=2, dtype=np.float64, shape=(None, self.tree_.n_features_in_))
        return self.tree_.predict(X)
