"""``TinyViT``: a small Vision Transformer written to the timm attribute protocol.

Pre-norm blocks (LayerNorm, multi-head self-attention with a fused ``qkv`` projection,
LayerNorm, GELU MLP), a learned class token, optional register tokens and learned position
embeddings over the prefix tokens and the patches (timm's default layout). Any token count
works in every block, so rooms may insert tokens between blocks or replace
``block.attn.forward``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


def conv_stem(patch_size: int, in_chans: int, embed_dim: int) -> nn.Sequential:
    """A convolutional stem with the output grid of a ``patch_size`` patchify (Xiao et al.,
    "Early convolutions help transformers see better", 2021): ``log2(patch_size)`` 3x3
    stride-2 convolutions, each followed by batch norm and ReLU, with the channel count doubling
    up to ``embed_dim``, then a 1x1 convolution to ``embed_dim``."""
    k = patch_size.bit_length() - 1
    if patch_size < 2 or 1 << k != patch_size:
        raise ValueError(f"stem='conv' needs a patch size that is a power of 2, got {patch_size}")
    if embed_dim % (1 << (k - 1)):
        raise ValueError(
            f"stem='conv' needs dim divisible by {1 << (k - 1)} (patch {patch_size}), got {embed_dim}"
        )
    layers: list[nn.Module] = []
    c_in = in_chans
    for i in range(k):
        c_out = embed_dim >> (k - 1 - i)
        layers += [
            nn.Conv2d(c_in, c_out, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        ]
        c_in = c_out
    layers.append(nn.Conv2d(c_in, embed_dim, 1))
    return nn.Sequential(*layers)


class PatchEmbed(nn.Module):
    """(B, C, H, W) -> (B, N, D) on a ``patch`` x ``patch`` grid: a non-overlapping
    ``patch`` x ``patch`` convolution (``stem="patch"``, timm's) or :func:`conv_stem`
    (``stem="conv"``)."""

    def __init__(
        self, img_size: int, patch_size: int, in_chans: int, embed_dim: int, stem: str = "patch"
    ):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.patch_size = (patch_size, patch_size)
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.stem = stem
        if stem == "conv":
            self.proj = conv_stem(patch_size, in_chans, embed_dim)
        else:
            self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    """Multi-head self-attention with timm's names (``qkv``, ``num_heads``, ``scale``,
    ``proj``)."""

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool = True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.q_norm = None
        self.k_norm = None
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int, act: type[nn.Module] = nn.GELU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class LayerScale(nn.Module):
    """Per-channel scale ``gamma`` (timm/DINOv2 layer scale)."""

    def __init__(self, dim: int, init: float = 1.0):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class Block(nn.Module):
    """Pre-norm transformer block: ``x + ls1(attn(norm1(x)))``, ``x + ls2(mlp(norm2(x)))``."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, eps: float = 1e-6):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, num_heads)
        self.ls1 = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class TinyViT(nn.Module):
    """A ViT with timm's attribute names (see :mod:`iclr26.models.vision.protocol`).

    ``forward(x)`` returns the class-token feature (B, D) when ``num_classes == 0`` and the
    logits otherwise; ``forward_features(x)`` returns all normalised tokens
    (B, 1 + n_reg + N, D)."""

    def __init__(
        self,
        img_size: int = 32,
        patch: int = 4,
        dim: int = 96,
        depth: int = 6,
        heads: int = 4,
        mlp_ratio: float = 4.0,
        n_reg: int = 0,
        in_chans: int = 3,
        num_classes: int = 0,
        global_pool: str = "token",
        stem: str = "patch",
    ):
        super().__init__()
        img_size = V.check_int(img_size, "img_size", low=1)
        patch = V.check_int(patch, "patch", low=1, high=img_size)
        if img_size % patch:
            raise ValueError(f"img_size ({img_size}) must be a multiple of patch ({patch})")
        dim = V.check_int(dim, "dim", low=1)
        depth = V.check_int(depth, "depth", low=1)
        heads = V.check_int(heads, "heads", low=1)
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        mlp_ratio = V.check_scalar(mlp_ratio, "mlp_ratio", low=0.0, low_open=True)
        n_reg = V.check_int(n_reg, "n_reg", low=0)
        in_chans = V.check_int(in_chans, "in_chans", low=1)
        num_classes = V.check_int(num_classes, "num_classes", low=0)
        self.global_pool = V.check_choice(global_pool, "global_pool", ("token", "avg"))
        stem = V.check_choice(stem, "stem", ("patch", "conv"))
        self.embed_dim = self.num_features = dim
        self.num_classes = num_classes
        self.patch_embed = PatchEmbed(img_size, patch, in_chans, dim, stem)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.reg_token = nn.Parameter(torch.zeros(1, n_reg, dim)) if n_reg else None
        self.num_reg_tokens = n_reg
        self.num_prefix_tokens = 1 + n_reg
        self.no_embed_class = False
        self.pos_embed = nn.Parameter(
            torch.zeros(1, self.num_prefix_tokens + self.patch_embed.num_patches, dim)
        )
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes) if num_classes else nn.Identity()
        self._init_weights()

    def _init_weights(self) -> None:
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        if self.reg_token is not None:
            nn.init.normal_(self.reg_token, std=1e-6)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def reset_classifier(self, num_classes: int) -> None:
        """A new (randomly initialised) head with ``num_classes`` outputs (0: identity)."""
        num_classes = V.check_int(num_classes, "num_classes", low=0)
        self.num_classes = num_classes
        self.head = nn.Linear(self.embed_dim, num_classes) if num_classes else nn.Identity()

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        from iclr26.models.vision.protocol import forward_tokens

        return forward_tokens(self, x)

    def forward_head(self, tokens: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        if self.global_pool == "avg":
            feat = tokens[:, self.num_prefix_tokens :].mean(1)
        else:
            feat = tokens[:, 0]
        return feat if pre_logits else self.head(feat)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))
