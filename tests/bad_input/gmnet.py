"""Bad-input cases of the GmNet room (tiny tensors; every call fails at the boundary)."""

import numpy as np
import torch

from iclr26.nn.gmnet import (
    ConvBN,
    DropPath,
    GmBlock,
    GmNet,
    GmNetTiny,
    accuracy,
    band_limited_signals,
    convert_for_inference,
    gate_spectrum_demo,
    gmnet_s3,
    high_freq_energy_fraction,
    radial_highpass,
    radial_lowpass,
    stage_features,
    texture_patches,
    train_classifier,
)

NAN, INF = float("nan"), float("inf")
IMG = torch.randn(2, 1, 16, 16)
IMG_NAN = IMG.clone()
IMG_NAN[0, 0, 3, 3] = NAN
IMG_INF = IMG.clone()
IMG_INF[1, 0, 0, 0] = INF
FEATS = torch.randn(2, 8, 4, 4)
FEATS_NAN = FEATS.clone()
FEATS_NAN[0, 1, 1, 1] = NAN
Y = torch.tensor([0, 1])


def _tiny():
    return GmNet(
        num_classes=2, in_chans=1, widths=(4,), depths=(1,), kernel_size=3, stem_channels=4
    )


CASES = [
    # GmBlock, ConvBN, DropPath
    ("GmBlock", "nan", lambda: GmBlock(8)(FEATS_NAN), ValueError, "x contains NaN"),
    ("GmBlock", "empty", lambda: GmBlock(8)(FEATS[:0]), ValueError, "x is empty"),
    ("GmBlock", "shape", lambda: GmBlock(8)(FEATS[0]), ValueError, "x must have 4 dimension"),
    ("GmBlock", "range", lambda: GmBlock(8, kernel_size=4), ValueError, "kernel_size"),
    ("GmBlock", "range", lambda: GmBlock(8, gate="bogus"), ValueError, "gate"),
    ("GmBlock", "range", lambda: GmBlock(8, layer_scale=NAN), ValueError, "layer_scale"),
    ("ConvBN", "range", lambda: ConvBN(0, 4), ValueError, "in_ch"),
    ("ConvBN", "type", lambda: ConvBN(4, 4, kernel_size=1.5), TypeError, "kernel_size"),
    ("DropPath", "range", lambda: DropPath(1.0), ValueError, "p"),
    ("DropPath", "nan", lambda: DropPath(NAN), ValueError, "p"),
    # networks
    ("GmNet", "nan", lambda: _tiny()(IMG_NAN), ValueError, "x contains NaN"),
    ("GmNet", "inf", lambda: _tiny()(IMG_INF), ValueError, "x contains infinity"),
    ("GmNet", "empty", lambda: _tiny()(IMG[:0]), ValueError, "x is empty"),
    ("GmNet", "shape", lambda: _tiny()(IMG[0]), ValueError, "x must have 4 dimension"),
    ("GmNet", "dtype", lambda: _tiny()(IMG.long()), TypeError, "x must be a floating"),
    ("GmNet", "empty", lambda: GmNet(widths=(), depths=()), ValueError, "widths"),
    ("GmNet", "range", lambda: GmNet(drop_path_rate=NAN), ValueError, "drop_path_rate"),
    ("GmNet", "range", lambda: GmNet(stem_stride=3), ValueError, "stem_stride"),
    ("GmNetTiny", "nan", lambda: GmNetTiny(in_chans=1)(IMG_NAN), ValueError, "x contains"),
    ("GmNetTiny", "range", lambda: GmNetTiny(num_classes=0), ValueError, "num_classes"),
    ("gmnet_s3", "range", lambda: gmnet_s3(num_classes=0), ValueError, "num_classes"),
    ("gmnet_s3", "range", lambda: gmnet_s3(drop_path_rate=-0.1), ValueError, "drop_path_rate"),
    ("convert_for_inference", "type", lambda: convert_for_inference("net"), TypeError, "model"),
    # training and measurements
    ("train_classifier", "nan", lambda: train_classifier(_tiny(), IMG_NAN, Y), ValueError, "x"),
    (
        "train_classifier",
        "shape",
        lambda: train_classifier(_tiny(), IMG, Y[:1]),
        ValueError,
        "same",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(_tiny(), IMG, Y, lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(_tiny(), IMG, Y, epochs=0),
        ValueError,
        "epochs",
    ),
    ("accuracy", "nan", lambda: accuracy(_tiny(), IMG_NAN, Y), ValueError, "x contains"),
    ("accuracy", "empty", lambda: accuracy(_tiny(), IMG[:0], Y[:0]), ValueError, "x is empty"),
    ("accuracy", "dtype", lambda: accuracy(_tiny(), IMG, Y.float()), TypeError, "y"),
    ("stage_features", "nan", lambda: stage_features(_tiny(), IMG_NAN), ValueError, "x contains"),
    ("stage_features", "type", lambda: stage_features("net", IMG), TypeError, "model"),
    ("texture_patches", "range", lambda: texture_patches(4, 8), ValueError, "n_train"),
    ("texture_patches", "range", lambda: texture_patches(size=2), ValueError, "size"),
    # spectral tools
    ("radial_highpass", "nan", lambda: radial_highpass(IMG_NAN, 2), ValueError, "images"),
    ("radial_highpass", "range", lambda: radial_highpass(IMG, -1), ValueError, "r"),
    ("radial_highpass", "range", lambda: radial_highpass(IMG, NAN), ValueError, "r"),
    ("radial_lowpass", "inf", lambda: radial_lowpass(IMG_INF, 2), ValueError, "images"),
    ("radial_lowpass", "shape", lambda: radial_lowpass(torch.randn(5), 2), ValueError, "images"),
    (
        "high_freq_energy_fraction",
        "nan",
        lambda: high_freq_energy_fraction(np.array([1.0, NAN, 2.0]), 0.5),
        ValueError,
        "x contains NaN",
    ),
    (
        "high_freq_energy_fraction",
        "empty",
        lambda: high_freq_energy_fraction(torch.zeros(0), 0.5),
        ValueError,
        "x is empty",
    ),
    (
        "high_freq_energy_fraction",
        "range",
        lambda: high_freq_energy_fraction(torch.randn(16), NAN),
        ValueError,
        "cutoff",
    ),
    (
        "high_freq_energy_fraction",
        "type",
        lambda: high_freq_energy_fraction([1.0, 2.0], 0.1),
        TypeError,
        "x must be",
    ),
    ("band_limited_signals", "range", lambda: band_limited_signals(band=0.0), ValueError, "band"),
    ("band_limited_signals", "range", lambda: band_limited_signals(n=4), ValueError, "n"),
    ("gate_spectrum_demo", "type", lambda: gate_spectrum_demo("relu"), TypeError, "act"),
    (
        "gate_spectrum_demo",
        "range",
        lambda: gate_spectrum_demo(torch.relu, band=NAN),
        ValueError,
        "band",
    ),
]

EXEMPT = {}
