"""AnyUp: universal, feature-agnostic feature upsampling.

An image-guided upsampler whose first feature layer (the learned feature unification)
processes every input channel with a shared filter basis and averages over channels, so it
takes features of any channel count from any encoder; windowed cross-attention with RoPE
then combines the raw input features (values = features). It is trained once with a
crop-based self-supervised objective and applied to unseen encoders without retraining.
Baselines (bilinear, bicubic, joint bilateral, a feature-specific learned upsampler) are in
:mod:`iclr26.vision.anyup.baselines`.
"""

from iclr26.vision.anyup.baselines import (
    JointBilateralUpsampler,
    SpecificUpsampler,
    bicubic,
    bilinear,
)
from iclr26.vision.anyup.evaluation import feature_fidelity, probe_miou, upsample_batched
from iclr26.vision.anyup.layers import LearnedFeatureUnification, window_mask
from iclr26.vision.anyup.model import AnyUp
from iclr26.vision.anyup.training import (
    as_feature_map,
    load_official,
    reconstruction_loss,
    train_anyup,
)

__all__ = [
    "AnyUp",
    "JointBilateralUpsampler",
    "LearnedFeatureUnification",
    "SpecificUpsampler",
    "as_feature_map",
    "bicubic",
    "bilinear",
    "feature_fidelity",
    "load_official",
    "probe_miou",
    "reconstruction_loss",
    "train_anyup",
    "upsample_batched",
    "window_mask",
]
