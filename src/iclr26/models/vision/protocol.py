"""The timm ``VisionTransformer`` attribute protocol that every vision room is written against.

A backbone exposes ``patch_embed`` (images -> (B, N, D)), ``pos_embed`` (1, P + N, D) or
(1, N, D), ``cls_token`` (1, 1, D) or None, ``reg_token`` (1, R, D) or None,
``num_prefix_tokens``, ``no_embed_class`` (True when ``pos_embed`` covers only the patches),
``blocks`` (each with ``.attn.qkv``, ``.attn.num_heads``, ``.attn.proj``, callable on any token
count), ``norm`` and ``embed_dim``. timm models satisfy it natively (timm itself is optional);
:class:`~iclr26.models.vision.TinyViT` is written to it, and
:class:`~iclr26.models.vision.HFViTAdapter` maps Hugging Face ViT/DINOv2 models onto it.

The helpers below use only these names, so a method that calls them (or the names directly)
runs unchanged on a timm, Hugging Face or project model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

PROTOCOL_ATTRS: tuple[str, ...] = (
    "patch_embed",
    "pos_embed",
    "cls_token",
    "reg_token",
    "num_prefix_tokens",
    "blocks",
    "norm",
    "embed_dim",
)
ATTENTION_ATTRS: tuple[str, ...] = ("qkv", "num_heads", "proj")


def check_vit(model, name: str = "backbone"):
    """``model`` if it meets the protocol; otherwise a ``TypeError`` naming the missing
    attribute (also checked on the first block's ``attn``)."""
    V.check_module_attrs(model, name, PROTOCOL_ATTRS)
    blocks = model.blocks
    if not isinstance(blocks, nn.ModuleList | nn.Sequential) or len(blocks) == 0:
        raise TypeError(f"{name}.blocks must be a non-empty nn.ModuleList")
    V.check_module_attrs(blocks[0], f"{name}.blocks[0]", ("attn",))
    V.check_module_attrs(blocks[0].attn, f"{name}.blocks[0].attn", ATTENTION_ATTRS)
    return model


def check_images(x, name: str = "x", channels: int | None = 3, unit_range: bool = False):
    """A float tensor (B, C, H, W), finite, with ``channels`` channels (None: any), and
    values in [0, 1] when ``unit_range``."""
    V.check_tensor(x, name, ndim=4, floating=True)
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channels (B, C, H, W), got {x.shape[1]}")
    if unit_range:
        V.check_tensor(x, name, low=0.0, high=1.0)
    return x


def resample_pos_embed(
    pos_embed: torch.Tensor, n_prefix: int, grid: tuple[int, int]
) -> torch.Tensor:
    """Bicubic interpolation of the patch part of ``pos_embed`` to ``grid`` (rows, cols);
    the first ``n_prefix`` entries (class/register positions) are kept as they are."""
    prefix, patches = pos_embed[:, :n_prefix], pos_embed[:, n_prefix:]
    n_old = patches.shape[1]
    side = int(math.isqrt(n_old))
    if side * side != n_old:
        raise ValueError(f"pos_embed has {n_old} patch positions, not a square grid")
    if (side, side) == tuple(grid):
        return pos_embed
    d = patches.shape[-1]
    patches = patches.reshape(1, side, side, d).permute(0, 3, 1, 2)
    patches = F.interpolate(patches, size=grid, mode="bicubic", align_corners=False)
    return torch.cat([prefix, patches.permute(0, 2, 3, 1).reshape(1, -1, d)], 1)


def patch_grid(model, x: torch.Tensor) -> tuple[int, int]:
    """(rows, cols) of the patch grid for images ``x``."""
    pe = model.patch_embed
    patch = getattr(pe, "patch_size", None)
    if patch is None:
        patch = pe.proj.kernel_size
    patch = (patch, patch) if isinstance(patch, int) else tuple(patch)
    return x.shape[-2] // patch[0], x.shape[-1] // patch[1]


def embed_tokens(model, x: torch.Tensor) -> torch.Tensor:
    """Patch tokens, prefix tokens and position embeddings in timm's ``_pos_embed`` order:
    with ``no_embed_class`` the positions cover the patches only and the prefix tokens are
    prepended afterwards; otherwise the prefix is prepended first and ``pos_embed`` covers
    prefix and patches. Returns (B, num_prefix_tokens + N, D), ready for ``blocks``."""
    tokens = model.patch_embed(x)
    if tokens.dim() == 4:  # a (B, H, W, D) patch embed output (timm's flatten=False)
        tokens = tokens.flatten(1, 2)
    b = tokens.shape[0]
    prefix = [t.expand(b, -1, -1) for t in (model.cls_token, model.reg_token) if t is not None]
    pos = model.pos_embed
    if getattr(model, "no_embed_class", False):
        if pos is not None:
            tokens = tokens + resample_pos_embed(pos, 0, patch_grid(model, x))
        return torch.cat(prefix + [tokens], 1)
    tokens = torch.cat(prefix + [tokens], 1)
    if pos is not None:
        tokens = tokens + resample_pos_embed(pos, model.num_prefix_tokens, patch_grid(model, x))
    return tokens


def forward_tokens(model, x: torch.Tensor, norm: bool = True) -> torch.Tensor:
    """All tokens after the last block (and ``norm``): (B, num_prefix_tokens + N, D)."""
    tokens = embed_tokens(model, x)
    for block in model.blocks:
        tokens = block(tokens)
    return model.norm(tokens) if norm else tokens


def patch_tokens(model, x: torch.Tensor) -> torch.Tensor:
    """The normalised patch tokens only: (B, N, D)."""
    return forward_tokens(model, x)[:, model.num_prefix_tokens :]


def feature_map(model, x: torch.Tensor) -> torch.Tensor:
    """The patch tokens as a dense map (B, D, rows, cols)."""
    rows, cols = patch_grid(model, x)
    tokens = patch_tokens(model, x)
    return tokens.transpose(1, 2).reshape(tokens.shape[0], tokens.shape[-1], rows, cols)


def pooled(model, x: torch.Tensor, pool: str = "token") -> torch.Tensor:
    """A global feature (B, D): the class token (``"token"``) or the mean patch token
    (``"avg"``; also used when the model has no class token)."""
    tokens = forward_tokens(model, x)
    if pool == "token" and model.cls_token is not None:
        return tokens[:, 0]
    return tokens[:, model.num_prefix_tokens :].mean(1)


def attention_qkv(attn: nn.Module, tokens: torch.Tensor):
    """q, k, v of a protocol attention module, each (B, heads, T, head_dim)."""
    b, t, d = tokens.shape
    qkv = attn.qkv(tokens).reshape(b, t, 3, attn.num_heads, d // attn.num_heads)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    if getattr(attn, "q_norm", None) is not None:
        q, k = attn.q_norm(q), attn.k_norm(k)
    return q, k, v
