"""SMoPE: one shared prompt as a sparse mixture of prompt experts for continual learning.

Le et al. (ICLR 2026) read prefix tuning as a mixture of experts (each prefix key/value pair
is an expert gated by its attention score) and make one shared prefix sparse: each input
routes to its top-K experts per head by the aggregated query score of the layer it is in (no
extra backbone pass), an adaptive noise steers new tasks away from experts earlier tasks used
heavily, and a prototype loss on the old keys keeps earlier routing stable. Written against
the timm ViT attribute protocol (:mod:`iclr26.models.vision.protocol`); it patches
``block.attn.forward`` of the prompted blocks and nothing else.
"""

from iclr26.vision.smope.baselines import (
    CODAPromptLite,
    DualPromptLite,
    L2PLite,
    NCMClassifier,
    SharedPrefix,
)
from iclr26.vision.smope.model import (
    SMoPE,
    aggregated_scores,
    noisy_selection_scores,
    prototype_loss,
    router_loss,
    usage_entropy,
)
from iclr26.vision.smope.prefix import PassCounter, PromptedViT, patch_attention
from iclr26.vision.smope.streams import Task, class_incremental
from iclr26.vision.smope.trainer import ContinualResult, ContinualTrainer, average_forgetting

__all__ = [
    "CODAPromptLite",
    "ContinualResult",
    "ContinualTrainer",
    "DualPromptLite",
    "L2PLite",
    "NCMClassifier",
    "PassCounter",
    "PromptedViT",
    "SMoPE",
    "SharedPrefix",
    "Task",
    "aggregated_scores",
    "average_forgetting",
    "class_incremental",
    "noisy_selection_scores",
    "patch_attention",
    "prototype_loss",
    "router_loss",
    "usage_entropy",
]
