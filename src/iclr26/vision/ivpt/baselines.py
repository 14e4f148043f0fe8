"""The baselines IVPT is compared with.

- :class:`VPTDeep` (Jia et al., 2022): free prompt tokens, a fresh set inserted before each
  prompted block (the previous block's prompts are dropped), a linear head on the normalised
  class token. Its "part maps" for the interpretability metrics are the last prompted block's
  prompt -> patch attention, averaged over heads.
- :class:`PartPrototypeHead`: the PDiscoFormer-lite interpretable baseline, IVPT's final level
  alone (prototypes, spatial prior, part pooling, part-wise head and the same regularisers), no
  prompts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import attention_qkv, check_images, check_vit, embed_tokens
from iclr26.vision.ivpt.model import _grid_size, _PartModel

__all__ = ["PartPrototypeHead", "VPTDeep", "VPTShallow"]


def _check_layers(layers, depth: int) -> tuple[int, ...]:
    if isinstance(layers, int | float) and not isinstance(layers, bool):
        k = V.check_int(layers, "layers", low=1, high=depth)
        return tuple(range(depth - k, depth))
    if not isinstance(layers, Sequence) or isinstance(layers, str):
        raise TypeError(f"layers must be an int or a sequence of block indices, got {layers!r}")
    if len(layers) == 0:
        raise ValueError("layers must name at least one block")
    out = tuple(sorted({V.check_int(i, "layers", low=0, high=depth - 1) for i in layers}))
    return out


class VPTDeep(nn.Module):
    """VPT-deep on a frozen timm-protocol ViT: ``n_prompts`` learnable tokens before each block
    in ``layers`` (an int ``k``: the last ``k`` blocks; or block indices), a linear head on the
    final normalised class token (the mean patch token without one)."""

    def __init__(self, vit: nn.Module, num_classes: int, n_prompts: int = 4, layers=2):
        super().__init__()
        check_vit(vit, "vit")
        self.num_classes = V.check_int(num_classes, "num_classes", low=2)
        self.n_prompts = V.check_int(n_prompts, "n_prompts", low=1)
        self.layers = _check_layers(layers, len(vit.blocks))
        self.vit = vit
        for p in vit.parameters():
            p.requires_grad_(False)
        self.embed_dim = d = int(vit.embed_dim)
        self.grid = _grid_size(vit)
        self.first_prompted = self.layers[0]
        self.attention_block = self.layers[-1]  # the block whose prompt attention is the map
        patch = getattr(vit.patch_embed, "patch_size", (16, 16))
        patch = patch if isinstance(patch, int) else int(patch[0])
        bound = math.sqrt(6.0 / float(3 * patch * patch + d))  # VPT's uniform init
        self.prompts = nn.Parameter(torch.empty(len(self.layers), self.n_prompts, d))
        nn.init.uniform_(self.prompts, -bound, bound)
        self.head = nn.Linear(d, self.num_classes)
        nn.init.trunc_normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        return self

    def param_count(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_x(self, x):
        check_images(x, "x", channels=None)
        return x

    @torch.no_grad()
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Embeddings and the frozen blocks before the first prompted one."""
        self._check_x(x)
        tokens = embed_tokens(self.vit, x)
        for block in self.vit.blocks[: self.first_prompted]:
            tokens = block(tokens)
        return tokens

    def forward(self, x: torch.Tensor, return_attention: bool = False) -> dict:
        """``{"logits"}``, and ``"part_maps"`` (B, n_prompts, H, W) when ``return_attention``."""
        return self._forward_from(self.embed(x), return_attention)

    def forward_from(self, tokens: torch.Tensor, return_attention: bool = False) -> dict:
        V.check_tensor(tokens, "tokens", ndim=3, floating=True)
        if tokens.shape[-1] != self.embed_dim:
            raise ValueError(f"tokens must have width {self.embed_dim}, got {tokens.shape[-1]}")
        return self._forward_from(tokens, return_attention)

    def _forward_from(self, tokens: torch.Tensor, return_attention: bool) -> dict:
        n_tok, b = tokens.shape[1], tokens.shape[0]
        attention = None
        for i in range(self.first_prompted, len(self.vit.blocks)):
            block = self.vit.blocks[i]
            if i in self.layers:
                slot = self.layers.index(i)
                tokens = torch.cat([tokens[:, :n_tok], self.prompts[slot].expand(b, -1, -1)], 1)
            if return_attention and i == self.attention_block:
                attention = self._prompt_attention(block, tokens, n_tok)
            tokens = block(tokens)
        tokens = self.vit.norm(tokens)
        feat = (
            tokens[:, 0]
            if self.vit.cls_token is not None
            else tokens[:, self.vit.num_prefix_tokens : n_tok].mean(1)
        )
        out = {"logits": self.head(feat)}
        if return_attention:
            out["part_maps"] = attention
        return out

    def _prompt_attention(self, block, tokens, n_tok):
        """Prompt -> patch attention of ``block``, averaged over heads: (B, n_prompts, H, W)."""
        q, k, _ = attention_qkv(block.attn, block.norm1(tokens))
        scale = q.shape[-1] ** -0.5
        attn = torch.softmax((q[:, :, n_tok:] @ k.transpose(-2, -1)) * scale, dim=-1)
        patches = attn[..., self.vit.num_prefix_tokens : n_tok].mean(1)  # (B, n_prompts, HW)
        return patches.reshape(tokens.shape[0], self.n_prompts, *self.grid)

    @torch.no_grad()
    def part_maps(self, x: torch.Tensor) -> torch.Tensor:
        """The prompt -> patch attention maps used as VPT's parts, (B, n_prompts, H, W)."""
        was = self.training
        self.eval()
        try:
            return self.forward(x, return_attention=True)["part_maps"]
        finally:
            self.train(was)


class VPTShallow(VPTDeep):
    """VPT-shallow (Jia et al., 2022): one set of ``n_prompts`` learnable tokens inserted after
    the embeddings, before the first block, and carried through every block (never replaced);
    a linear head on the final normalised class token. Its part maps are the prompt -> patch
    attention of the last block (where the prompts have passed the whole network), averaged
    over heads."""

    def __init__(self, vit: nn.Module, num_classes: int, n_prompts: int = 4):
        super().__init__(vit, num_classes, n_prompts=n_prompts, layers=(0,))
        self.attention_block = len(self.vit.blocks) - 1


class PartPrototypeHead(_PartModel):
    """PDiscoFormer-lite: ``n_parts`` foreground prototypes and one background prototype on the
    frozen backbone's final features, spatial prior, hard-weighted part pooling, modulation and a
    part-wise linear head averaged over parts; trained with :class:`IVPTLoss` (its
    consistency term is absent: there are no finer levels)."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        n_parts: int = 4,
        part_dropout: float = 0.3,
        freeze_backbone: bool = True,
    ):
        check_vit(vit, "vit")
        n_parts = V.check_int(n_parts, "n_parts", low=1)
        _grid_size(vit)
        super().__init__(
            vit, num_classes, (n_parts + 1,), part_dropout, 1.0, False, False, freeze_backbone,
            min_levels=1,
        )  # fmt: skip
