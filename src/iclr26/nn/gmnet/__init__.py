"""GmNet: gating mechanisms from a frequency view (the self-gate ``act(x) * x`` backbone)."""

from iclr26.nn.gmnet.block import ACTIVATIONS, GATES, ConvBN, DropPath, GmBlock
from iclr26.nn.gmnet.data import PATCH_IMAGES, texture_patches
from iclr26.nn.gmnet.network import GmNet, GmNetTiny, convert_for_inference, gmnet_s3
from iclr26.nn.gmnet.spectral import (
    band_limited_signals,
    gate_spectrum_demo,
    high_freq_energy_fraction,
    radial_highpass,
    radial_lowpass,
)
from iclr26.nn.gmnet.training import accuracy, stage_features, train_classifier

__all__ = [
    "ACTIVATIONS",
    "GATES",
    "PATCH_IMAGES",
    "ConvBN",
    "DropPath",
    "GmBlock",
    "GmNet",
    "GmNetTiny",
    "accuracy",
    "band_limited_signals",
    "convert_for_inference",
    "gate_spectrum_demo",
    "gmnet_s3",
    "high_freq_energy_fraction",
    "radial_highpass",
    "radial_lowpass",
    "stage_features",
    "texture_patches",
    "train_classifier",
]
