"""The detectors a practitioner would pick instead of PaAno, behind the same interface.

Each works on sliding windows of length ``window`` (None: the TSB-AD period of the training
data, :func:`iclr26.metrics.tsad.find_period`), is fitted on the anomaly-free training series
and gives each time step the mean score of the windows covering it:

- :class:`SubIForest` - scikit-learn IsolationForest on flattened windows (TSB-AD's Sub-IForest).
- :class:`MatrixProfileAD` - the z-normalised matrix profile (discord distance) of the full
  series, a self-join; per channel and summed for multivariate input.
- :class:`SubPCA` - PCA reconstruction error of windows, PCA fitted on training windows.
- :class:`SubKNN` - mean distance of a window to its k nearest training windows.
- :class:`CNNForecastAD` - a small 1-D CNN next-step forecaster (DeepAnT-like); the score is the
  norm of the forecast residual.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest
from sklearn.neighbors import NearestNeighbors
from torch import nn

from iclr26 import validation as V
from iclr26.metrics.tsad import find_period
from iclr26.timeseries.paano.base import SeriesDetector
from iclr26.timeseries.paano.patches import sliding_patches, spread_to_time_steps


class _WindowDetector(SeriesDetector):
    """Shared window handling: the window is fixed at fit time from the training series."""

    def _check_params(self) -> None:
        super()._check_params()
        if self.window is not None:
            V.check_int(self.window, "window", low=2)
        if hasattr(self, "random_state") and self.random_state is not None:
            V.check_int(self.random_state, "random_state", low=0)

    def _window_for(self, z: np.ndarray) -> int:
        if self.window is not None:
            w = int(self.window)
        else:
            w = find_period(z[:, 0])
        # a window can never exceed half of the training data
        return int(max(2, min(w, z.shape[0] // 2)))

    def _min_length(self) -> int:
        return int(getattr(self, "window_", None) or self.window or 4)

    def _flat_windows(self, z: np.ndarray) -> np.ndarray:
        return sliding_patches(z, self.window_).reshape(z.shape[0] - self.window_ + 1, -1)


class SubIForest(_WindowDetector):
    """Isolation Forest on sliding windows; score = -score_samples (higher = more anomalous)."""

    def __init__(
        self, window=None, n_estimators=100, max_samples="auto", contamination=0.01, random_state=0
    ):
        self.window = window
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.contamination = contamination
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        V.check_int(self.n_estimators, "n_estimators", low=1)
        if self.max_samples != "auto":
            if isinstance(self.max_samples, float):
                V.check_scalar(self.max_samples, "max_samples", low=0.0, high=1.0, low_open=True)
            else:
                V.check_int(self.max_samples, "max_samples", low=1)

    def _fit(self, z):
        self.window_ = self._window_for(z)
        self.forest_ = IsolationForest(
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
            random_state=self.random_state,
        ).fit(self._flat_windows(z))

    def _score(self, z):
        windows = self._flat_windows(z)
        return spread_to_time_steps(-self.forest_.score_samples(windows), self.window_)


class SubPCA(_WindowDetector):
    """PCA reconstruction error of sliding windows; components keep ``variance`` of the
    training windows' variance."""

    def __init__(self, window=None, variance=0.9, contamination=0.01, random_state=0):
        self.window = window
        self.variance = variance
        self.contamination = contamination
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        V.check_scalar(self.variance, "variance", low=0.0, high=1.0, low_open=True, high_open=True)

    def _fit(self, z):
        self.window_ = self._window_for(z)
        windows = self._flat_windows(z)
        self.pca_ = PCA(n_components=self.variance, svd_solver="full").fit(windows)

    def _score(self, z):
        windows = self._flat_windows(z)
        recon = self.pca_.inverse_transform(self.pca_.transform(windows))
        return spread_to_time_steps(np.linalg.norm(windows - recon, axis=1), self.window_)


class SubKNN(_WindowDetector):
    """Mean Euclidean distance of each window to its ``n_neighbors`` nearest training windows
    (training windows subsampled to at most ``max_train`` for speed)."""

    def __init__(
        self, window=None, n_neighbors=5, max_train=4000, contamination=0.01, random_state=0
    ):
        self.window = window
        self.n_neighbors = n_neighbors
        self.max_train = max_train
        self.contamination = contamination
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        V.check_int(self.n_neighbors, "n_neighbors", low=1)
        V.check_int(self.max_train, "max_train", low=1)

    def _fit(self, z):
        self.window_ = self._window_for(z)
        windows = self._flat_windows(z)
        index = np.arange(len(windows))
        if len(windows) > self.max_train:
            rng = np.random.default_rng(self.random_state)
            index = np.sort(rng.choice(len(windows), self.max_train, replace=False))
        self.train_windows_ = windows[index]
        self.train_index_ = index
        k = min(self.n_neighbors, len(index))
        self.nn_ = NearestNeighbors(n_neighbors=k).fit(self.train_windows_)

    def _score(self, z):
        dist, _ = self.nn_.kneighbors(self._flat_windows(z))
        return spread_to_time_steps(dist.mean(axis=1), self.window_)

    def _training_scores(self, z):
        # each training window against the training windows that do not overlap it (a
        # window's nearest neighbours are otherwise itself and its one-step shifts)
        from iclr26.timeseries.paano.memory import MemoryBank

        bank = MemoryBank(min(self.n_neighbors, len(self.train_index_)))
        bank.entries_ = self.train_windows_
        bank.indices_ = self.train_index_
        scores = bank.held_out_score(self._flat_windows(z), exclusion=self.window_)
        return spread_to_time_steps(scores, self.window_)


def matrix_profile(x: np.ndarray, m: int, block: int = 2048) -> np.ndarray:
    """Exact z-normalised self-join matrix profile of a 1-D series (blocked numpy).

    Same definition as ``stumpy.stump(x, m)[:, 0]``: exclusion zone ``ceil(m / 4)`` around the
    diagonal; two constant subsequences are at distance 0, a constant and a varying one at
    ``sqrt(m)``.
    """
    x = V.check_array(x, "x", ndim=1, dtype=np.float64)
    m = V.check_int(m, "m", low=2)
    block = V.check_int(block, "block", low=1)
    if x.size < m + 1:
        raise ValueError(f"x must be longer than m={m}, got {x.size} points")
    sub = np.lib.stride_tricks.sliding_window_view(x, m)
    mu = sub.mean(axis=1, keepdims=True)
    sd = sub.std(axis=1, keepdims=True)
    const = sd[:, 0] < 1e-8
    unit = np.where(const[:, None], 0.0, (sub - mu) / np.where(const[:, None], 1.0, sd))
    n = unit.shape[0]
    excl = int(math.ceil(m / 4))
    profile = np.empty(n)
    cols = np.arange(n)
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        corr = unit[rows] @ unit.T / m
        dist2 = 2 * m * (1 - corr)
        both_const = const[rows][:, None] & const[None, :]
        one_const = const[rows][:, None] ^ const[None, :]
        dist2 = np.where(both_const, 0.0, np.where(one_const, float(m), dist2))
        dist2[np.abs(rows[:, None] - cols[None, :]) <= excl] = np.inf
        profile[rows] = np.sqrt(np.maximum(dist2.min(axis=1), 0.0))
    return profile


class MatrixProfileAD(_WindowDetector):
    """Discord score: the matrix profile of the (whole) scored series, a self-join.

    ``engine="numpy"`` (default) uses the exact blocked computation above; ``"stumpy"`` calls
    ``stumpy.stump`` (first call JIT-compiles for a while). Multivariate input: the per-channel
    profiles are summed. ``fit`` only fixes the window and the z-scoring.
    """

    def __init__(self, window=None, engine="numpy", contamination=0.01):
        self.window = window
        self.engine = engine
        self.contamination = contamination

    def _check_params(self) -> None:
        super()._check_params()
        V.check_choice(self.engine, "engine", ("numpy", "stumpy"))

    def _fit(self, z):
        self.window_ = self._window_for(z)

    def _min_length(self) -> int:
        return int(getattr(self, "window_", None) or self.window or 4) + 1

    def _profile(self, x: np.ndarray) -> np.ndarray:
        if self.engine == "stumpy":
            import stumpy

            return np.asarray(stumpy.stump(x, self.window_)[:, 0], dtype=float)
        return matrix_profile(x, self.window_)

    def _score(self, z):
        total = sum(self._profile(z[:, c]) for c in range(z.shape[1]))
        total = np.where(np.isfinite(total), total, 0.0)
        return spread_to_time_steps(total, self.window_)


class _Forecaster(nn.Module):
    def __init__(self, channels: int, history: int, hidden: int = 32):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(channels, hidden, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(hidden, hidden, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool1d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(hidden * (history // 4), 64), nn.ReLU(), nn.Linear(64, channels)
        )

    def forward(self, x):
        return self.head(self.body(x))


class CNNForecastAD(_WindowDetector):
    """DeepAnT-like detector: a small CNN forecasts the next step from ``history`` steps
    (None: the window); the anomaly score is the norm of the forecast error. The first
    ``history`` steps, which have no forecast, take the first available score."""

    def __init__(
        self, history=None, n_epochs=20, batch_size=128, lr=1e-3, contamination=0.01, random_state=0
    ):
        self.history = history
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.contamination = contamination
        self.random_state = random_state

    @property
    def window(self):
        return self.history

    def _min_length(self) -> int:
        return int(getattr(self, "window_", None) or self.history or 8) + 1

    def _check_params(self) -> None:
        SeriesDetector._check_params(self)
        if self.history is not None:
            V.check_int(self.history, "history", low=8)
        V.check_int(self.n_epochs, "n_epochs", low=1)
        V.check_int(self.batch_size, "batch_size", low=1)
        V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        if self.random_state is not None:
            V.check_int(self.random_state, "random_state", low=0)

    def _pairs(self, z):
        inputs = sliding_patches(z[:-1], self.window_)
        targets = z[self.window_ :].astype(np.float32)
        return torch.from_numpy(inputs), torch.from_numpy(targets)

    def _fit(self, z):
        self.window_ = max(8, min(self._window_for(z), 64, z.shape[0] // 2))
        self.window_ -= self.window_ % 4
        inputs, targets = self._pairs(z)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.random_state or 0)
            model = _Forecaster(z.shape[1], self.window_)
        opt = torch.optim.Adam(model.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(self.random_state or 0)
        n = len(inputs)
        for _ in range(self.n_epochs):
            order = torch.randperm(n, generator=gen)
            for i in range(0, n, self.batch_size):
                idx = order[i : i + self.batch_size]
                loss = nn.functional.mse_loss(model(inputs[idx]), targets[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.model_ = model.eval()

    @torch.no_grad()
    def _score(self, z):
        inputs, targets = self._pairs(z)
        pred = torch.cat([self.model_(inputs[i : i + 4096]) for i in range(0, len(inputs), 4096)])
        err = (pred - targets).norm(dim=1).numpy().astype(float)
        return np.concatenate([np.full(self.window_, err[0]), err])
