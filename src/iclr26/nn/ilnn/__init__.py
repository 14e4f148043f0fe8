"""Intrinsic Lorentz Neural Network: every layer (point-to-hyperplane FC, GyroLBN, gyro bias,
log-radius concatenation, activation, dropout) maps Lorentz-hyperboloid points to
hyperboloid points."""

from . import ops
from .layers import (
    GyroAdd,
    LorentzConv1d,
    LorentzConv2d,
    LorentzDropout,
    LorentzFC,
    LorentzGlobalPool,
    LorentzReLU,
    signed_distance,
)
from .models import ILNNSeqCNN, LorentzBasicBlock, LorentzResNet18, ResNet18, SeqCNN
from .norm import GyroBN, GyroLBN, LorentzBN
from .ops import lorentz_concat
from .tasks import load_cifar10, phylo_dna

__all__ = [
    "GyroAdd",
    "GyroBN",
    "GyroLBN",
    "ILNNSeqCNN",
    "LorentzBN",
    "LorentzBasicBlock",
    "LorentzConv1d",
    "LorentzConv2d",
    "LorentzDropout",
    "LorentzFC",
    "LorentzGlobalPool",
    "LorentzReLU",
    "LorentzResNet18",
    "ResNet18",
    "SeqCNN",
    "load_cifar10",
    "lorentz_concat",
    "ops",
    "phylo_dna",
    "signed_distance",
]
