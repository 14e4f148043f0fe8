"""A minimal class-conditional LlamaGen GPT (Sun et al., 2024), the base model TensorAR is
evaluated on, written so that a LlamaGen ``c2i`` checkpoint loads into it with strict key
matching and computes what LlamaGen computes: a Llama body (RMSNorm computed in float32,
fused ``wqkv`` attention with optional grouped KV heads, SwiGLU feed-forward), 2-D rotary
position embeddings over the token grid whose class-token rows are zero, a label embedding
with one extra row for the null class, and an untied output layer.

Parameter names follow LlamaGen's ``autoregressive/models/gpt.py``: ``cls_embedding.
embedding_table``, ``tok_embeddings``, ``layers.{i}.attention.{wqkv,wo}``,
``layers.{i}.feed_forward.{w1,w2,w3}``, ``layers.{i}.{attention_norm,ffn_norm}``, ``norm``,
``output``. The rotary table is recomputed from the config, not stored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

# LlamaGen's class-conditional and text-conditional sizes: (n_layer, n_head, dim)
PRESETS = {
    "GPT-B": (12, 12, 768),
    "GPT-L": (24, 16, 1024),
    "GPT-XL": (36, 20, 1280),
    "GPT-XXL": (48, 24, 1536),
    "GPT-XXXL": (48, 40, 2560),
    "GPT-1B": (22, 32, 2048),
    "GPT-3B": (24, 32, 3200),
    "GPT-7B": (32, 32, 4096),
}


@dataclass
class LlamaGenConfig:
    """The fields of LlamaGen's ``ModelArgs`` that shape a class-conditional model (LlamaGen's
    defaults). ``block_size`` is the number of image tokens (a square grid, e.g. 256 for
    16 x 16); ``vocab_size`` the VQ codebook size."""

    dim: int = 4096
    n_layer: int = 32
    n_head: int = 32
    n_kv_head: int | None = None
    multiple_of: int = 256
    ffn_dim_multiplier: float | None = None
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    token_dropout_p: float = 0.1
    attn_dropout_p: float = 0.0
    resid_dropout_p: float = 0.1
    ffn_dropout_p: float = 0.1
    drop_path_rate: float = 0.0
    num_classes: int = 1000
    class_dropout_prob: float = 0.1
    model_type: str = "c2i"
    vocab_size: int = 16384
    cls_token_num: int = 1
    block_size: int = 256

    @classmethod
    def preset(cls, name: str, **overrides) -> LlamaGenConfig:
        """A named LlamaGen size (``"GPT-B"``, ``"GPT-L"``, ...) with field overrides, e.g.
        ``LlamaGenConfig.preset("GPT-B", block_size=256, vocab_size=16384)``."""
        V.check_choice(name, "name", tuple(PRESETS))
        n_layer, n_head, dim = PRESETS[name]
        return cls.from_dict({"n_layer": n_layer, "n_head": n_head, "dim": dim, **overrides})

    @classmethod
    def from_dict(cls, fields: dict) -> LlamaGenConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(f"config has unknown LlamaGen fields: {', '.join(unknown)}")
        return cls(**fields).validated()

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __post_init__(self):
        self.validated()

    def validated(self) -> LlamaGenConfig:
        """Check every field (messages name ``config.<field>``) and normalise its type."""
        V.check_choice(self.model_type, "config.model_type", ("c2i",))
        for name in (
            "dim",
            "n_layer",
            "n_head",
            "multiple_of",
            "num_classes",
            "vocab_size",
            "block_size",
        ):
            setattr(self, name, V.check_int(getattr(self, name), f"config.{name}", low=1))
        self.n_kv_head = V.check_int(self.n_kv_head, "config.n_kv_head", low=1, allow_none=True)
        self.cls_token_num = V.check_int(self.cls_token_num, "config.cls_token_num", low=1, high=1)
        self.ffn_dim_multiplier = V.check_scalar(
            self.ffn_dim_multiplier,
            "config.ffn_dim_multiplier",
            low=0.0,
            low_open=True,
            allow_none=True,
        )
        self.rope_base = V.check_scalar(self.rope_base, "config.rope_base", low=0.0, low_open=True)
        self.norm_eps = V.check_scalar(self.norm_eps, "config.norm_eps", low=0.0, low_open=True)
        for name in (
            "token_dropout_p",
            "attn_dropout_p",
            "resid_dropout_p",
            "ffn_dropout_p",
            "drop_path_rate",
        ):
            setattr(self, name, V.check_probability(getattr(self, name), f"config.{name}"))
        self.class_dropout_prob = V.check_probability(
            self.class_dropout_prob, "config.class_dropout_prob", open_low=True
        )
        if self.dim % self.n_head:
            raise ValueError(f"config.dim={self.dim} must be divisible by n_head={self.n_head}")
        if self.n_head % self.kv_heads:
            raise ValueError(f"config.n_head={self.n_head} must be divisible by n_kv_head")
        if (self.dim // self.n_head) % 4:
            raise ValueError("config.dim / n_head must be divisible by 4 (2-D rotary embedding)")
        grid = round(self.block_size**0.5)
        if grid * grid != self.block_size:
            raise ValueError(f"config.block_size={self.block_size} must be a square grid")
        return self

    @property
    def kv_heads(self) -> int:
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    @property
    def ffn_hidden(self) -> int:
        hidden = int(2 * (4 * self.dim) / 3)
        if self.ffn_dim_multiplier is not None:
            hidden = int(self.ffn_dim_multiplier * hidden)
        return -(-hidden // self.multiple_of) * self.multiple_of  # next multiple


def rope_table_2d(grid: int, head_dim: int, base: float, cls_tokens: int) -> torch.Tensor:
    """``(cls_tokens + grid**2, head_dim // 2, 2)`` cos/sin pairs: half the rotary pairs carry
    the row index, half the column index (raster order); the class-token rows are zero, as in
    LlamaGen."""
    half = head_dim // 2
    freqs = 1.0 / (base ** (torch.arange(0, half, 2)[: half // 2].float() / half))
    angles = torch.outer(torch.arange(grid).float(), freqs)  # (grid, head_dim // 4)
    grid_angles = torch.cat(
        [angles[:, None].expand(-1, grid, -1), angles[None].expand(grid, -1, -1)], -1
    ).flatten(0, 1)
    table = torch.stack([grid_angles.cos(), grid_angles.sin()], -1)
    return torch.cat([torch.zeros(cls_tokens, head_dim // 2, 2), table])


def apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive pairs of ``x`` (B, L, H, D) by ``table`` (L, D/2, 2), in float32."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    cos, sin = table[None, :, None, :, 0], table[None, :, None, :, 1]
    out = torch.stack(
        [pairs[..., 0] * cos - pairs[..., 1] * sin, pairs[..., 1] * cos + pairs[..., 0] * sin], -1
    )
    return out.flatten(3).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * (
            self.weight
        )


class DropPath(nn.Module):
    """Stochastic depth: drop a sample's residual branch with probability ``p`` (training)."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(1 - self.p)
        return x * keep / (1 - self.p)


class LabelEmbedder(nn.Module):
    """Class labels ``0..num_classes-1`` plus the null class ``num_classes`` (CFG)."""

    def __init__(self, num_classes: int, dim: int):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + 1, dim)


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaGenConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_hidden, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.ffn_hidden, bias=False)
        self.w2 = nn.Linear(cfg.ffn_hidden, cfg.dim, bias=False)
        self.ffn_dropout = nn.Dropout(cfg.ffn_dropout_p)

    def forward(self, x):
        return self.ffn_dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class Attention(nn.Module):
    def __init__(self, cfg: LlamaGenConfig):
        super().__init__()
        self.dim, self.n_head, self.n_kv = cfg.dim, cfg.n_head, cfg.kv_heads
        self.head_dim = cfg.dim // cfg.n_head
        self.wqkv = nn.Linear(cfg.dim, (self.n_head + 2 * self.n_kv) * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.attn_dropout_p = cfg.attn_dropout_p
        self.resid_dropout = nn.Dropout(cfg.resid_dropout_p)

    def forward(self, x, rope, past=None):
        b, n, _ = x.shape
        kv = self.n_kv * self.head_dim
        q, k, v = self.wqkv(x).split([self.dim, kv, kv], -1)
        q = apply_rope(q.view(b, n, self.n_head, self.head_dim), rope).transpose(1, 2)
        k = apply_rope(k.view(b, n, self.n_kv, self.head_dim), rope).transpose(1, 2)
        v = v.view(b, n, self.n_kv, self.head_dim).transpose(1, 2)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        rep = self.n_head // self.n_kv
        keys, values = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        drop = self.attn_dropout_p if self.training else 0.0
        if past is None:
            a = F.scaled_dot_product_attention(q, keys, values, is_causal=True, dropout_p=drop)
        else:  # new positions see every cached one and the new ones up to themselves
            seen = keys.shape[2]
            mask = torch.ones(n, seen, dtype=torch.bool, device=x.device).tril(seen - n)
            a = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, dropout_p=drop)
        out = self.resid_dropout(self.wo(a.transpose(1, 2).reshape(b, n, self.dim)))
        return out, (k, v)


class TransformerBlock(nn.Module):
    def __init__(self, cfg: LlamaGenConfig, drop_path: float):
        super().__init__()
        self.attention = Attention(cfg)
        self.feed_forward = FeedForward(cfg)
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.drop_path = DropPath(drop_path)

    def forward(self, x, rope, past=None):
        a, kv = self.attention(self.attention_norm(x), rope, past)
        h = x + self.drop_path(a)
        return h + self.drop_path(self.feed_forward(self.ffn_norm(h))), kv


class LlamaGenGPT(nn.Module):
    """LlamaGen's class-conditional GPT with the piece-wise interface TensorAR wraps.

    Sequence layout (as LlamaGen trains it): position 0 is the class embedding, positions
    1..T-1 the image tokens x_1..x_{T-1}; the output at position t predicts x_{t+1}.
    ``forward(labels, tokens)`` gives those next-token logits ``(B, T, vocab_size)``."""

    def __init__(self, config: LlamaGenConfig, seed: int = 0):
        super().__init__()
        if not isinstance(config, LlamaGenConfig):
            raise TypeError(f"config must be a LlamaGenConfig, got {type(config).__name__}")
        cfg = config.validated()
        self.config = cfg
        torch.manual_seed(V.check_int(seed, "seed", low=0))
        self.cls_embedding = LabelEmbedder(cfg.num_classes, cfg.dim)
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.tok_dropout = nn.Dropout(cfg.token_dropout_p)
        rates = torch.linspace(0, cfg.drop_path_rate, cfg.n_layer).tolist()
        self.layers = nn.ModuleList(TransformerBlock(cfg, p) for p in rates)
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        grid = round(cfg.block_size**0.5)
        table = rope_table_2d(grid, cfg.dim // cfg.n_head, cfg.rope_base, cfg.cls_token_num)
        self._rope = table  # float32 on purpose (not a buffer: ``.to(dtype)`` leaves it)
        for m in self.modules():  # LlamaGen's init (its output layer starts at zero)
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
        nn.init.zeros_(self.output.weight)

    def embed(self, labels, tokens, start: int = 0):
        """Inputs for positions ``start..start+L-1``: the class embedding at position 0, the
        token embedding of ``tokens`` (B, L) elsewhere."""
        pos = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        e = self.tok_embeddings(tokens.clamp(0, self.config.vocab_size - 1))
        cls = self.cls_embedding.embedding_table(labels)[:, None, :]
        return torch.where((pos == 0)[None, :, None], cls, e)

    def body(self, h, cache=None):
        """Token dropout, the transformer blocks and the final norm; ``cache`` is a per-layer
        list of (k, v). Returns ``(normed hidden, new cache)``."""
        start = 0 if cache is None else cache[0][0].shape[2]
        if self._rope.device != h.device:
            self._rope = self._rope.to(h.device)
        rope = self._rope[start : start + h.shape[1]]
        h = self.tok_dropout(h)
        new = []
        for i, layer in enumerate(self.layers):
            h, kv = layer(h, rope, None if cache is None else cache[i])
            new.append(kv)
        return self.norm(h), new

    def head(self, h):
        return self.output(h).float()

    def forward(self, labels, tokens):
        """Next-token logits ``(B, T, vocab_size)`` for ``tokens`` (B, T) (teacher forcing)."""
        inputs = torch.cat([torch.zeros_like(tokens[:, :1]), tokens[:, :-1]], 1)
        h, _ = self.body(self.embed(labels, inputs))
        return self.head(h)
