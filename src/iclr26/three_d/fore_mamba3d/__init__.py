"""Fore-Mamba3D: foreground-enhanced Mamba encoding for LiDAR 3-D detection (ICLR 2026)."""

from iclr26.three_d.fore_mamba3d.backbone import (
    ForeMamba3DBackbone,
    SparseDownsample,
    SubmConv3d,
    VoxelMambaBackbone,
    rgsw_patches,
)
from iclr26.three_d.fore_mamba3d.head import (
    CenterHead,
    average_precision,
    center_distance_map,
    center_targets,
    decode,
)
from iclr26.three_d.fore_mamba3d.openpcdet import OpenPCDetForeMamba3D
from iclr26.three_d.fore_mamba3d.scenes import CLASSES, LidarScene, SyntheticLidarScenes
from iclr26.three_d.fore_mamba3d.serialize import hilbert_index, hilbert_order, rotate_coords
from iclr26.three_d.fore_mamba3d.ssm import SASFMamba, SparseNeighbours, axis_sparse_conv
from iclr26.three_d.fore_mamba3d.train import detection_loss, evaluate_map, train_detector

__all__ = [
    "CLASSES",
    "CenterHead",
    "ForeMamba3DBackbone",
    "LidarScene",
    "OpenPCDetForeMamba3D",
    "SASFMamba",
    "SparseDownsample",
    "SparseNeighbours",
    "SubmConv3d",
    "SyntheticLidarScenes",
    "VoxelMambaBackbone",
    "average_precision",
    "axis_sparse_conv",
    "center_distance_map",
    "center_targets",
    "decode",
    "detection_loss",
    "evaluate_map",
    "hilbert_index",
    "hilbert_order",
    "rgsw_patches",
    "rotate_coords",
    "train_detector",
]
