"""Centroid Discriminant Analysis (CDA) and the geometric discriminant analysis framework."""

from iclr26.classic.cda.angle_search import bo_angle, golden_angle
from iclr26.classic.cda.binary import BinaryCDA, fit_binary
from iclr26.classic.cda.cut import best_cut, cv_cut, fold_masks, performance_score
from iclr26.classic.cda.ecoc import coding_matrix, hinge_loss, ovo_pairs
from iclr26.classic.cda.estimator import CDAClassifier
from iclr26.classic.cda.gda import gda_lda_decomposition
from iclr26.classic.cda.geometry import (
    KernelSpace,
    LinearSpace,
    rotate,
    rotation_plane,
    soft_centroid_direction,
    update_weights,
)

__all__ = [
    "BinaryCDA",
    "CDAClassifier",
    "KernelSpace",
    "LinearSpace",
    "best_cut",
    "bo_angle",
    "coding_matrix",
    "cv_cut",
    "fit_binary",
    "fold_masks",
    "gda_lda_decomposition",
    "golden_angle",
    "hinge_loss",
    "ovo_pairs",
    "performance_score",
    "rotate",
    "rotation_plane",
    "soft_centroid_direction",
    "update_weights",
]
