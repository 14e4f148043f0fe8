"""IVPT: interpretable visual prompt tuning with cross-layer concept prototypes.

Wang et al. (ICLR 2026) replace VPT's free prompt tokens by prompts pooled from the regions of
category-agnostic concept prototypes at several deep layers of a frozen ViT, link the finer
prototype sets to the final parts by a learned soft assignment with a cross-layer consistency
loss, and classify from part-pooled final features (PDiscoFormer's head). Written against the
timm ViT attribute protocol (:mod:`iclr26.models.vision.protocol`).
"""

from iclr26.vision.ivpt.baselines import PartPrototypeHead, VPTDeep, VPTShallow
from iclr26.vision.ivpt.evaluation import consistency_rate, evaluate, predict_parts
from iclr26.vision.ivpt.losses import (
    IVPTLoss,
    consistency_loss,
    enforced_presence_loss,
    equivariance_loss,
    invert_affine,
    orthogonality_loss,
    pixel_entropy_loss,
    presence_loss,
    total_variation_loss,
)
from iclr26.vision.ivpt.model import IVPT, aggregate_maps, prototype_maps, region_features
from iclr26.vision.ivpt.training import FitResult, cross_entropy_objective, fit, train_step

__all__ = [
    "IVPT",
    "FitResult",
    "IVPTLoss",
    "PartPrototypeHead",
    "VPTDeep",
    "VPTShallow",
    "aggregate_maps",
    "consistency_loss",
    "consistency_rate",
    "cross_entropy_objective",
    "enforced_presence_loss",
    "equivariance_loss",
    "evaluate",
    "fit",
    "invert_affine",
    "orthogonality_loss",
    "pixel_entropy_loss",
    "predict_parts",
    "presence_loss",
    "prototype_maps",
    "region_features",
    "total_variation_loss",
    "train_step",
]
