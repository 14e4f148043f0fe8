"""PaAno: patch-based representation learning for time-series anomaly detection (ICLR 2026)."""

from iclr26.timeseries.paano.base import SeriesDetector
from iclr26.timeseries.paano.baselines import (
    CNNForecastAD,
    MatrixProfileAD,
    SubIForest,
    SubKNN,
    SubPCA,
    matrix_profile,
)
from iclr26.timeseries.paano.benchmark import (
    DETECTORS,
    PAPER_CONFIG,
    QUICK_CONFIG,
    evaluate,
    make_detector,
)
from iclr26.timeseries.paano.data import (
    LabelledSeries,
    load_tsb_ad_csv,
    load_tsb_ad_dir,
    load_ucr_internal_bleeding,
    make_series,
    make_tsad_suite,
)
from iclr26.timeseries.paano.detector import PaAno
from iclr26.timeseries.paano.encoder import PatchEncoder
from iclr26.timeseries.paano.losses import pretext_loss, pretext_weight, triplet_loss
from iclr26.timeseries.paano.memory import MemoryBank, kmeans_coreset

__all__ = [
    "DETECTORS",
    "PAPER_CONFIG",
    "QUICK_CONFIG",
    "CNNForecastAD",
    "LabelledSeries",
    "MatrixProfileAD",
    "MemoryBank",
    "PaAno",
    "PatchEncoder",
    "SeriesDetector",
    "SubIForest",
    "SubKNN",
    "SubPCA",
    "evaluate",
    "kmeans_coreset",
    "load_tsb_ad_csv",
    "load_tsb_ad_dir",
    "load_ucr_internal_bleeding",
    "make_detector",
    "make_series",
    "make_tsad_suite",
    "matrix_profile",
    "pretext_loss",
    "pretext_weight",
    "triplet_loss",
]
