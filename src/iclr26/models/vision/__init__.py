"""The shared tiny vision stack: protocol, backbones, "pretrained" cache, HF adapter.

- :mod:`~iclr26.models.vision.protocol`: the timm ``VisionTransformer`` attribute protocol
  (``patch_embed``, ``pos_embed``, ``cls_token``, ``reg_token``, ``num_prefix_tokens``,
  ``blocks`` with ``attn.qkv``/``num_heads``/``proj``, ``norm``, ``embed_dim``) and helpers
  written against it only.
- :class:`TinyViT` (written to the protocol), :class:`TinyConvNet` (stride 1-8).
- :class:`HFViTAdapter`: Hugging Face ``ViTModel``/``Dinov2Model`` on the protocol.
- :func:`pretrained_tiny`: fixed recipes, trained once and cached under
  ``$ICLR26_CACHE/vision`` keyed by recipe hash and torch version; :func:`warmup` trains all.

The synthetic image data live in :mod:`iclr26.data.vision` (``shapes``, ``scenes``,
``parts``, ``spurious``, ``hierarchy``, ``real``; the spec's ``iclr26.data.synthetic.*``,
moved because ``iclr26.data.synthetic`` is an existing module), the augmentations in
:mod:`iclr26.vision.augment` and the metrics in :mod:`iclr26.metrics.vision`.
"""

from iclr26.models.vision.convnet import TinyConvNet
from iclr26.models.vision.hf import HFViTAdapter
from iclr26.models.vision.pretrained import (
    RECIPES,
    Recipe,
    cache_path,
    get_recipe,
    pretrained_tiny,
    recipe_hash,
    warmup,
)
from iclr26.models.vision.protocol import (
    PROTOCOL_ATTRS,
    check_images,
    check_vit,
    embed_tokens,
    feature_map,
    forward_tokens,
    patch_tokens,
    pooled,
)
from iclr26.models.vision.train import nt_xent
from iclr26.models.vision.vit import TinyViT

__all__ = [
    "PROTOCOL_ATTRS",
    "RECIPES",
    "HFViTAdapter",
    "Recipe",
    "TinyConvNet",
    "TinyViT",
    "cache_path",
    "check_images",
    "check_vit",
    "embed_tokens",
    "feature_map",
    "forward_tokens",
    "get_recipe",
    "nt_xent",
    "patch_tokens",
    "pooled",
    "pretrained_tiny",
    "recipe_hash",
    "warmup",
]
