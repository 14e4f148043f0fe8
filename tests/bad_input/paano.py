"""Bad-input cases for the PaAno room (read by tests/framework/test_bad_input.py)."""

import tempfile
from pathlib import Path

import numpy as np
import torch

from iclr26.timeseries.paano import (
    CNNForecastAD,
    LabelledSeries,
    MatrixProfileAD,
    MemoryBank,
    PaAno,
    PatchEncoder,
    SubIForest,
    SubKNN,
    SubPCA,
    evaluate,
    kmeans_coreset,
    load_tsb_ad_csv,
    load_tsb_ad_dir,
    make_detector,
    make_series,
    make_tsad_suite,
    matrix_profile,
    pretext_loss,
    pretext_weight,
    triplet_loss,
)

_T = np.sin(np.arange(200) / 5.0)
_NAN = _T.copy()
_NAN[17] = np.nan
_INF = _T.copy()
_INF[3] = np.inf
_TINY = {"patch_size": 16, "n_iters": 1, "batch_size": 8, "width_mult": 0.125}


def _csv_with_blank_line():
    folder = Path(tempfile.mkdtemp())
    path = folder / "001_Demo_id_1_Sensor_tr_50_1st_60.csv"
    rows = [f"{v:.3f},0" for v in _T]
    rows[5] = ""
    path.write_text("Data,Label\n" + "\n".join(rows) + "\n")
    return path


def _bank():
    return MemoryBank(top_k=2).fit(np.random.default_rng(0).normal(size=(20, 4)), 1.0, 0)


def _series(values=_T, labels=None, train_len=50):
    labels = np.r_[np.zeros(150), np.ones(50)] if labels is None else labels
    return LabelledSeries("s", values, labels, train_len)


_H = torch.randn(4, 8)
_ENC = PatchEncoder(1, 0.125)
_GEN = torch.Generator().manual_seed(0)
_MASK = torch.ones(4, dtype=torch.bool)

CASES = [
    # the detector
    ("PaAno", "nan", lambda: PaAno(**_TINY).fit(_NAN), ValueError, "X contains NaN"),
    ("PaAno", "inf", lambda: PaAno(**_TINY).fit(_INF), ValueError, "X contains NaN or inf"),
    ("PaAno", "empty", lambda: PaAno(**_TINY).fit(np.array([])), ValueError, "X is empty"),
    ("PaAno", "shape", lambda: PaAno(**_TINY).fit(np.zeros((4, 4, 4))), ValueError, "X must"),
    ("PaAno", "dtype", lambda: PaAno(**_TINY).fit(["a", "b"]), TypeError, "X must be numeric"),
    ("PaAno", "range", lambda: PaAno(patch_size=1).fit(_T), ValueError, "patch_size"),
    ("PaAno", "range", lambda: PaAno(lr=float("nan")).fit(_T), ValueError, "lr"),
    ("PaAno", "range", lambda: PaAno(bank_ratio=0).fit(_T), ValueError, "bank_ratio"),
    ("PaAno", "range", lambda: PaAno(contamination=1.0).fit(_T), ValueError, "contamination"),
    ("PaAno", "range", lambda: PaAno(margin=-1).fit(_T), ValueError, "margin"),
    ("PaAno", "type", lambda: PaAno(revin=1).fit(_T), TypeError, "revin"),
    ("PaAno", "range", lambda: PaAno(metric="nope").fit(_T), ValueError, "metric"),
    (
        "PaAno",
        "nan",
        lambda: PaAno(**_TINY).fit(_T).predict(_T, threshold=float("nan")),
        ValueError,
        "threshold",
    ),
    ("PaAno", "nan", lambda: PaAno(**_TINY).fit(_T).decision_function(_NAN), ValueError, "X"),
    # baselines
    ("SubIForest", "nan", lambda: SubIForest().fit(_NAN), ValueError, "X contains NaN"),
    ("SubIForest", "range", lambda: SubIForest(n_estimators=0).fit(_T), ValueError, "n_estim"),
    ("SubIForest", "range", lambda: SubIForest(window=1).fit(_T), ValueError, "window"),
    ("SubPCA", "inf", lambda: SubPCA().fit(_INF), ValueError, "X contains"),
    ("SubPCA", "range", lambda: SubPCA(variance=1.5).fit(_T), ValueError, "variance"),
    ("SubKNN", "empty", lambda: SubKNN().fit([]), ValueError, "X is empty"),
    ("SubKNN", "range", lambda: SubKNN(n_neighbors=0).fit(_T), ValueError, "n_neighbors"),
    ("MatrixProfileAD", "nan", lambda: MatrixProfileAD().fit(_NAN), ValueError, "X contains"),
    ("MatrixProfileAD", "range", lambda: MatrixProfileAD(engine="x").fit(_T), ValueError, "eng"),
    ("CNNForecastAD", "nan", lambda: CNNForecastAD().fit(_NAN), ValueError, "X contains"),
    ("CNNForecastAD", "range", lambda: CNNForecastAD(n_epochs=0).fit(_T), ValueError, "n_epoch"),
    ("CNNForecastAD", "range", lambda: CNNForecastAD(lr=float("nan")).fit(_T), ValueError, "lr"),
    (
        "CNNForecastAD",
        "range",
        lambda: CNNForecastAD(contamination=-0.1).fit(_T),
        ValueError,
        "contamination",
    ),
    ("matrix_profile", "nan", lambda: matrix_profile(_NAN, 10), ValueError, "x contains NaN"),
    ("matrix_profile", "empty", lambda: matrix_profile([], 10), ValueError, "x is empty"),
    ("matrix_profile", "shape", lambda: matrix_profile(np.ones((5, 5)), 2), ValueError, "x must"),
    ("matrix_profile", "range", lambda: matrix_profile(_T, 1), ValueError, "m must"),
    ("matrix_profile", "range", lambda: matrix_profile(_T, 500), ValueError, "x must be longer"),
    # building blocks
    ("MemoryBank", "range", lambda: MemoryBank(top_k=0), ValueError, "top_k"),
    ("MemoryBank", "range", lambda: MemoryBank(top_k=2.5), TypeError, "top_k"),
    ("MemoryBank", "nan", lambda: MemoryBank().fit(np.full((5, 2), np.nan)), ValueError, "embed"),
    ("MemoryBank", "shape", lambda: MemoryBank().fit(np.ones(5)), ValueError, "embeddings"),
    ("MemoryBank", "shape", lambda: _bank().score(np.ones((3, 5))), ValueError, "embeddings"),
    ("MemoryBank", "inf", lambda: _bank().score(np.full((3, 4), np.inf)), ValueError, "embed"),
    ("MemoryBank", "range", lambda: MemoryBank().fit(np.ones((5, 2)), ratio=2), ValueError, "rat"),
    (
        "kmeans_coreset",
        "nan",
        lambda: kmeans_coreset(np.full((4, 2), np.nan), 0.5),
        ValueError,
        "em",
    ),
    ("kmeans_coreset", "empty", lambda: kmeans_coreset(np.ones((0, 2)), 0.5), ValueError, "embed"),
    ("kmeans_coreset", "range", lambda: kmeans_coreset(np.ones((4, 2)), 0.0), ValueError, "ratio"),
    (
        "kmeans_coreset",
        "range",
        lambda: kmeans_coreset(np.ones((4, 2)), float("nan")),
        ValueError,
        "ratio",
    ),
    ("PatchEncoder", "range", lambda: PatchEncoder(0), ValueError, "in_channels"),
    ("PatchEncoder", "range", lambda: PatchEncoder(1, float("nan")), ValueError, "width_mult"),
    ("PatchEncoder", "range", lambda: PatchEncoder(1, projection_dim=0), ValueError, "projection"),
    ("PatchEncoder", "shape", lambda: _ENC(torch.randn(2, 3, 16)), ValueError, "x must have"),
    (
        "PatchEncoder",
        "nan",
        lambda: _ENC(torch.full((2, 1, 16), float("nan"))),
        ValueError,
        "x contains NaN",
    ),
    ("PatchEncoder", "empty", lambda: _ENC(torch.zeros(0, 1, 16)), ValueError, "x is empty"),
    ("triplet_loss", "shape", lambda: triplet_loss(_H, torch.randn(3, 8)), ValueError, "z_pos"),
    (
        "triplet_loss",
        "nan",
        lambda: triplet_loss(torch.full((4, 8), float("nan")), _H),
        ValueError,
        "z_anchor contains NaN",
    ),
    ("triplet_loss", "range", lambda: triplet_loss(_H, _H, margin=-1.0), ValueError, "margin"),
    (
        "pretext_loss",
        "shape",
        lambda: pretext_loss(_ENC, _H, torch.randn(3, 8), _MASK, 2, _GEN),
        ValueError,
        "h_previous",
    ),
    (
        "pretext_loss",
        "inf",
        lambda: pretext_loss(_ENC, torch.full((4, 8), float("inf")), _H, _MASK, 2, _GEN),
        ValueError,
        "h_anchor contains inf",
    ),
    (
        "pretext_loss",
        "range",
        lambda: pretext_loss(_ENC, _H, _H, _MASK, -1, _GEN),
        ValueError,
        "n_negatives",
    ),
    (
        "pretext_loss",
        "dtype",
        lambda: pretext_loss(_ENC, _H, _H, torch.ones(4), 2, _GEN),
        TypeError,
        "has_previous",
    ),
    ("pretext_weight", "range", lambda: pretext_weight(-1, 10), ValueError, "iteration"),
    ("pretext_weight", "range", lambda: pretext_weight(0, 0), ValueError, "n_iters"),
    ("pretext_weight", "nan", lambda: pretext_weight(0, 10, float("nan")), ValueError, "warm"),
    # data and protocol
    ("LabelledSeries", "nan", lambda: _series(values=_NAN), ValueError, "values contains NaN"),
    ("LabelledSeries", "shape", lambda: _series(labels=np.zeros(10)), ValueError, "labels must"),
    ("LabelledSeries", "range", lambda: _series(train_len=0), ValueError, "train_len"),
    ("LabelledSeries", "range", lambda: _series(labels=np.full(200, 2)), ValueError, "labels"),
    ("make_series", "range", lambda: make_series("nope"), ValueError, "family"),
    ("make_series", "range", lambda: make_series("sine", length=10), ValueError, "length"),
    ("make_series", "nan", lambda: make_series("sine", train_frac=float("nan")), ValueError, "tr"),
    ("make_series", "type", lambda: make_series("sine", length=600.5), TypeError, "length"),
    ("make_tsad_suite", "range", lambda: make_tsad_suite(0), ValueError, "n_series"),
    ("make_tsad_suite", "empty", lambda: make_tsad_suite(2, families=()), ValueError, "families"),
    ("make_tsad_suite", "range", lambda: make_tsad_suite(2, families=("x",)), ValueError, "famil"),
    ("make_detector", "range", lambda: make_detector("nope"), ValueError, "name must be one of"),
    ("make_detector", "range", lambda: make_detector("pca", seed=-1), ValueError, "seed"),
    ("evaluate", "type", lambda: evaluate(SubPCA(), _T), TypeError, "series must be"),
    ("evaluate", "type", lambda: evaluate(object(), _series()), TypeError, "detector must"),
    ("evaluate", "range", lambda: evaluate(SubPCA(), _series(), window=0), ValueError, "window"),
    (
        "evaluate",
        "other",
        lambda: evaluate(SubPCA(), _series(labels=np.zeros(200))),
        ValueError,
        "series must have both",
    ),
    ("load_tsb_ad_csv", "nan", lambda: load_tsb_ad_csv(_csv_with_blank_line()), ValueError, "line"),
    (
        "load_tsb_ad_csv",
        "other",
        lambda: load_tsb_ad_csv("does-not-exist_tr_5_1st_6.csv"),
        FileNotFoundError,
        "path",
    ),
    ("load_tsb_ad_dir", "other", lambda: load_tsb_ad_dir("does-not-exist"), ValueError, "direct"),
    (
        "load_tsb_ad_dir",
        "nan",
        lambda: load_tsb_ad_dir(_csv_with_blank_line().parent),
        ValueError,
        "missing values",
    ),
]

EXEMPT = {
    "SeriesDetector": "abstract base class of the detectors; it cannot be instantiated, and "
    "its fit/decision_function checks are exercised through every concrete detector above",
    "load_ucr_internal_bleeding": "takes no arguments: it reads a file bundled with aeon",
}
