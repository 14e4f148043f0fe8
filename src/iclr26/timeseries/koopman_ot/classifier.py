"""k-NN classification of multivariate time series by the distance between their estimated
Koopman operators (SGOT or a baseline), as a scikit-learn classifier."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from iclr26 import validation as V
from iclr26.timeseries.koopman_ot.metric import (
    METRICS,
    distance_matrix,
    eta_heuristic,
    sgot_blocks,
    sgot_matrix_from_blocks,
)
from iclr26.timeseries.koopman_ot.operators import FeatureMap, estimate_operator


def _as_series_list(X, n_channels: int | None = None) -> list[np.ndarray]:
    if isinstance(X, np.ndarray) and X.ndim == 3:
        X = list(X)
    if not isinstance(X, list | tuple):
        raise ValueError("X must be an (n, T, C) array or a list of (T_i, C) arrays with equal C")
    if len(X) == 0:
        raise ValueError("X is empty: it needs at least one series")
    out = [
        V.check_array(x, f"X[{i}]", ndim=2, dtype=np.float64, min_rows=2) for i, x in enumerate(X)
    ]
    channels = out[0].shape[1] if n_channels is None else n_channels
    for i, x in enumerate(out):
        if x.shape[1] != channels:
            raise ValueError(f"X[{i}] has {x.shape[1]} channels, expected {channels}")
    return out


def knn_vote(dist: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    votes = labels[order]
    out = []
    for row in votes:
        vals, counts = np.unique(row, return_counts=True)
        out.append(vals[np.argmax(counts)])
    return np.array(out)


class KoopmanOTClassifier(ClassifierMixin, BaseEstimator):
    """k-NN on operator distances. One RRR operator per series (snapshots x_t -> x_{t+1}) in a
    feature space fitted once on the pooled training series (per-channel z-scoring on train).

    ``eta``: a number, None (the paper's heuristic for ``dt``) or "loo" (leave-one-out 1-NN on
    the training set over ``eta_grid`` plus the heuristic). ``rank`` is capped per series at
    min(feature dim, snapshot pairs). ``martin_horizon``: observability horizon of the Martin
    distance (None: infinite, stable operators only).
    """

    def __init__(
        self,
        rank: int = 10,
        kernel: str = "linear",
        metric: str = "sgot",
        eta=None,
        eta_grid=(0.1, 0.3, 0.5),
        k: int = 1,
        dt: float = 1.0,
        reg: float | None = None,
        n_landmarks: int = 200,
        martin_horizon: int | None = None,
        random_state=0,
    ):
        self.rank = rank
        self.kernel = kernel
        self.metric = metric
        self.eta = eta
        self.eta_grid = eta_grid
        self.k = k
        self.dt = dt
        self.reg = reg
        self.n_landmarks = n_landmarks
        self.martin_horizon = martin_horizon
        self.random_state = random_state

    def _measures(self, series):
        out = []
        for s in series:
            z = (s - self.mean_) / self.std_
            dim = self.features_.transform(z[:1]).shape[1]
            rank = min(self.rank, dim, z.shape[0] - 1)
            out.append(
                estimate_operator(z, self.dt, rank=rank, reg=self.reg, features=self.features_)
            )
        return out

    def _check_params(self) -> None:
        V.check_int(self.rank, "rank", low=1)
        V.check_choice(self.kernel, "kernel", ("linear", "rbf"))
        V.check_choice(self.metric, "metric", sorted(METRICS))
        if self.eta is not None and self.eta != "loo":
            V.check_probability(self.eta, "eta")
        if self.eta == "loo":
            V.check_array(self.eta_grid, "eta_grid", ndim=1, low=0.0, high=1.0)
        V.check_int(self.k, "k", low=1)
        V.check_scalar(self.dt, "dt", low=0.0, low_open=True)
        V.check_scalar(self.reg, "reg", low=0.0, allow_none=True)
        V.check_int(self.n_landmarks, "n_landmarks", low=1)
        V.check_int(self.martin_horizon, "martin_horizon", low=1, allow_none=True)

    def fit(self, X, y):
        self._check_params()
        series = _as_series_list(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != len(series):
            raise ValueError(
                f"y must hold one label per series: {len(series)} series, y has shape {y.shape}"
            )
        pooled = np.concatenate(series)
        self.mean_ = pooled.mean(axis=0)
        self.std_ = pooled.std(axis=0) + 1e-12
        self.features_ = FeatureMap(
            self.kernel, self.n_landmarks, random_state=self.random_state
        ).fit((pooled - self.mean_) / self.std_)
        self.train_ = self._measures(series)
        self.classes_ = np.unique(y)
        self.y_ = y
        self.eta_ = self._choose_eta()
        return self

    def _choose_eta(self):
        if self.metric != "sgot":
            return None
        if self.eta is None:
            return eta_heuristic(self.dt)
        if self.eta != "loo":
            return float(self.eta)
        grid = sorted(set(float(e) for e in self.eta_grid) | {eta_heuristic(self.dt)})
        blocks = sgot_blocks(self.train_, self.train_)
        shape = (len(self.train_), len(self.train_))
        best, best_acc = grid[0], -1.0
        self.loo_accuracy_ = {}
        for eta in grid:
            dist = sgot_matrix_from_blocks(blocks, shape, eta)
            np.fill_diagonal(dist, np.inf)
            acc = float(np.mean(knn_vote(dist, self.y_, 1) == self.y_))
            self.loo_accuracy_[eta] = acc
            if acc > best_acc:
                best, best_acc = eta, acc
        return best

    def transform_measures(self, X) -> list:
        """Spectral measures of new series in the fitted feature space."""
        if not hasattr(self, "train_"):
            raise ValueError("call fit first")
        return self._measures(_as_series_list(X, len(self.mean_)))

    def distances(self, X, metric: str | None = None) -> np.ndarray:
        """Distances (n_test, n_train) between the operators of X and the training operators
        (``metric`` overrides the fitted one; SGOT uses the fitted ``eta_``)."""
        test = (
            X
            if isinstance(X, list) and X and hasattr(X[0], "lam")
            else (self.transform_measures(X))
        )
        metric = self.metric if metric is None else metric
        eta = self.eta_ if self.eta_ is not None else eta_heuristic(self.dt)
        return distance_matrix(test, self.train_, metric, eta=eta, horizon=self.martin_horizon)

    def predict(self, X) -> np.ndarray:
        return knn_vote(self.distances(X), self.y_, int(self.k))
