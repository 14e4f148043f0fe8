"""The detector interface every model in this room shares (the PyOD / TSB-AD convention).

``fit(X)`` on an anomaly-free stretch, ``decision_function(X)`` -> one score per time step
(higher = more anomalous), ``predict(X, threshold=None)`` -> 0/1 per time step, and after fit
``decision_scores_`` (scores of the training data) and ``threshold_``. Input: a numpy array,
list or pandas Series/DataFrame of shape (T,) or (T, C). Channels are z-scored with the
training mean and standard deviation; a channel that is constant in the training data is only
centred (its standard deviation is taken as 1), and training data that is constant in every
channel is rejected, since there is nothing to learn from it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator

from iclr26 import validation as V
from iclr26.timeseries.paano.patches import as_series


class SeriesDetector(BaseEstimator, ABC):
    """Base class: input checks, z-scoring, training scores and thresholding.

    ``threshold_`` is the ``1 - contamination`` quantile of ``decision_scores_``, the scores
    of the training data computed so that no training step is scored against a model of
    itself (each detector says how: PaAno and Sub-kNN leave out the overlapping patches), so
    that on clean data like the training prefix about ``contamination`` of the steps are
    flagged."""

    #: fraction of training steps allowed above the default threshold
    contamination: float = 0.01

    def _min_length(self) -> int:
        return 2

    def _check_params(self) -> None:
        """Validate the hyperparameters (scikit-learn convention: at fit time)."""
        self.contamination = V.check_scalar(
            self.contamination, "contamination", low=0.0, high=1.0, high_open=True
        )

    def fit(self, X, y=None):
        self._check_params()
        x = as_series(X, "X")
        if x.shape[0] < self._min_length():
            raise ValueError(
                f"training series of length {x.shape[0]} is too short for "
                f"{type(self).__name__}: needs at least {self._min_length()} steps"
            )
        std = x.std(axis=0)
        if np.all(std == 0):
            raise ValueError("training series is constant in every channel; nothing to learn")
        self.n_channels_ = x.shape[1]
        self.mean_ = x.mean(axis=0)
        self.std_ = np.where(std == 0, 1.0, std)
        z = self._standardise(x)
        self._fit(z)
        self.decision_scores_ = self._training_scores(z)
        q = 100.0 * (1.0 - self.contamination)
        self.threshold_ = float(np.percentile(self.decision_scores_, q))
        return self

    def _standardise(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean_) / self.std_

    def _check_fitted(self) -> None:
        if not hasattr(self, "mean_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(train) first")

    def decision_function(self, X) -> np.ndarray:
        """Anomaly score of every time step of X, shape (T,)."""
        self._check_fitted()
        x = as_series(X, "X")
        if x.shape[1] != self.n_channels_:
            raise ValueError(
                f"X has {x.shape[1]} channels but the detector was fitted on {self.n_channels_}"
            )
        if x.shape[0] < self._min_length():
            raise ValueError(
                f"series of length {x.shape[0]} is too short for {type(self).__name__}: "
                f"needs at least {self._min_length()} steps"
            )
        scores = self._score(self._standardise(x))
        if scores.shape != (x.shape[0],) or not np.all(np.isfinite(scores)):
            raise RuntimeError(f"{type(self).__name__} produced invalid scores")
        return scores

    def predict(self, X, threshold: float | None = None) -> np.ndarray:
        """1 where the score exceeds ``threshold`` (default ``threshold_``: the
        ``1 - contamination`` quantile of the training scores), else 0."""
        scores = self.decision_function(X)
        thr = (
            self.threshold_
            if threshold is None
            else V.check_scalar(threshold, "threshold", allow_inf=True)
        )
        return (scores > thr).astype(int)

    def _training_scores(self, z: np.ndarray) -> np.ndarray:
        """Scores of the training data (subclasses may reuse what fit computed)."""
        return self._score(z)

    @abstractmethod
    def _fit(self, z: np.ndarray) -> None:
        """Learn from the z-scored (T, C) training series."""

    @abstractmethod
    def _score(self, z: np.ndarray) -> np.ndarray:
        """Scores (T,) of a z-scored (T, C) series."""
