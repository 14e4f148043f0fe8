"""IE-CL: maximising incremental information entropy for contrastive learning.

The paper adds two plug-ins to a two-view contrastive framework: a learnable transformation
that *generates* entropy in one view while the pair stays matched, and an encoder
regulariser that *preserves* it through the encoder (which otherwise acts as a tight
information bottleneck). The published text gives no estimator equations or
hyperparameters, so the estimators, the transform's parameterisation and the regulariser
here are the project's instantiation of that design, each marked as such and each a
constructor argument.
"""

from iclr26.vision.iecl.byol import BYOLLite
from iclr26.vision.iecl.entropy import (
    DescriptorProjection,
    gaussian_entropy,
    histogram_entropy,
    incremental_entropy,
)
from iclr26.vision.iecl.extractor import IECLFeatureExtractor, make_framework, train_ssl
from iclr26.vision.iecl.losses import InfoNCELoss, queue_infonce
from iclr26.vision.iecl.moco import MoCo
from iclr26.vision.iecl.model import IECL, IECLWrapper
from iclr26.vision.iecl.regularizer import EntropyPreservingRegularizer, coding_rate
from iclr26.vision.iecl.simclr import SimCLR, TwoViewFramework
from iclr26.vision.iecl.transform import LearnableEntropyTransform

__all__ = [
    "BYOLLite",
    "DescriptorProjection",
    "EntropyPreservingRegularizer",
    "IECL",
    "IECLFeatureExtractor",
    "IECLWrapper",
    "InfoNCELoss",
    "LearnableEntropyTransform",
    "MoCo",
    "SimCLR",
    "TwoViewFramework",
    "coding_rate",
    "gaussian_entropy",
    "histogram_entropy",
    "incremental_entropy",
    "make_framework",
    "queue_infonce",
    "train_ssl",
]
