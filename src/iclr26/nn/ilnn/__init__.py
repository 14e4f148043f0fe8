"""Intrinsic Lorentz Neural Network: every layer (point-to-hyperplane FC, GyroLBN, gyro bias,
log-radius concatenation, activation, dropout) maps Lorentz-hyperboloid points to
hyperboloid points."""

from . import ops
from .layers import (
    LorentzConv1d,
    LorentzConv2d,
    LorentzDropout,
    LorentzFC,
    LorentzReLU,
    signed_distance,
)
from .models import ILNNSeqCNN, SeqCNN
from .norm import GyroBN, GyroLBN, LorentzBN
from .ops import lorentz_concat
from .tasks import phylo_dna

__all__ = [
    "GyroBN",
    "GyroLBN",
    "ILNNSeqCNN",
    "LorentzBN",
    "LorentzConv1d",
    "LorentzConv2d",
    "LorentzDropout",
    "LorentzFC",
    "LorentzReLU",
    "SeqCNN",
    "lorentz_concat",
    "ops",
    "phylo_dna",
    "signed_distance",
]
