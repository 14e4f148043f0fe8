"""Running detectors side by side on labelled series, TSB-AD protocol.

Each detector is fitted on the anomaly-free training prefix and scores the full series; the
VUS sliding window is the period of the full series (first channel), computed once per series
and shared by every detector.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np

from iclr26 import validation as V
from iclr26.claims import timeit
from iclr26.metrics.tsad import find_period, get_metrics
from iclr26.timeseries.paano.baselines import (
    CNNForecastAD,
    MatrixProfileAD,
    SubIForest,
    SubKNN,
    SubPCA,
)
from iclr26.timeseries.paano.data import LabelledSeries
from iclr26.timeseries.paano.detector import PaAno

#: the configuration of the official TSB-AD run scripts (univariate and multivariate alike)
PAPER_CONFIG = {
    "patch_size": 96,
    "n_iters": 200,
    "batch_size": 512,
    "width_mult": 1.0,
    "revin": True,
}
#: the reduced configuration of the quick claim checks (half width, fewer and smaller batches)
QUICK_CONFIG = {"patch_size": 96, "n_iters": 40, "batch_size": 96, "width_mult": 0.5, "revin": True}
#: a tiny configuration for tests
SMOKE_CONFIG = {"patch_size": 32, "n_iters": 3, "batch_size": 32, "width_mult": 0.25, "revin": True}

DETECTORS: dict[str, Callable[..., object]] = {
    "paano": PaAno,
    "iforest": SubIForest,
    "matrix_profile": MatrixProfileAD,
    "pca": SubPCA,
    "knn": SubKNN,
    "cnn_forecast": CNNForecastAD,
}


def make_detector(name: str, seed: int = 0, paano_config: dict | None = None, **kwargs):
    """A detector of this room by name (see :data:`DETECTORS`)."""
    V.check_choice(name, "name", tuple(DETECTORS))
    seed = V.check_int(seed, "seed", low=0)
    if paano_config is not None and not isinstance(paano_config, dict):
        raise TypeError(f"paano_config must be a dict, got {type(paano_config).__name__}")
    if name == "paano":
        return PaAno(**{**(paano_config or {}), **kwargs}, random_state=seed)
    if name == "matrix_profile":
        return MatrixProfileAD(**kwargs)
    return DETECTORS[name](**kwargs, random_state=seed)


@contextlib.contextmanager
def limited_threads(n: int = 1) -> Iterator[None]:
    """Run torch and BLAS/OpenMP pools with ``n`` threads, restoring the settings after."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        torch.set_num_threads(before)


def evaluate(detector, series: LabelledSeries, window: int | None = None) -> dict:
    """Fit on the training prefix, score the full series; the metrics, and the wall and CPU
    seconds of the fit and of the scoring (each run once, through :func:`iclr26.claims.timeit`
    with the caller's thread settings), with the points each step handled (``count_*``)."""
    V.check_module_attrs(detector, "detector", ("fit", "decision_function"))
    if not isinstance(series, LabelledSeries):
        raise TypeError(f"series must be a LabelledSeries, got {type(series).__name__}")
    if series.labels.min() == series.labels.max():
        raise ValueError("series must have both normal (0) and anomalous (1) labels")
    window = find_period(series.values) if window is None else V.check_int(window, "window", low=1)
    fit = timeit(lambda: detector.fit(series.train), repeat=1, warmup=0, threads=None)
    score = timeit(
        lambda: detector.decision_function(series.values), repeat=1, warmup=0, threads=None
    )
    out = get_metrics(score.value, series.labels, sliding_window=window)
    out.update(fit_s=fit.wall_s, score_s=score.wall_s, fit_cpu_s=fit.cpu_s, score_cpu_s=score.cpu_s)
    out.update(count_train_points=len(series.train), count_scored_points=len(series.values))
    return out


def mean_ranks(table: dict[str, list[float]]) -> dict[str, float]:
    """Mean rank (1 = best, ties averaged) of each method over the series of ``table``."""
    from scipy.stats import rankdata

    names = list(table)
    values = np.array([table[n] for n in names])  # (methods, series)
    ranks = np.apply_along_axis(lambda col: rankdata(-col), 0, values)
    return {n: float(r) for n, r in zip(names, ranks.mean(axis=1))}
