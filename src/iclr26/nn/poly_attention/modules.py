"""Multi-head poly-attention layer and a pre-norm transformer block around it."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

from .functional import BACKENDS, poly_attention, resolve_scale
from .polynomial import parse_polynomial


class PolyAttention(nn.Module):
    """Multi-head poly-attention: per-slot projections, the polynomial's score, output projection.

    Slot 1 (the query slot) has a projection ``W^(1)`` only; every slot ``j >= 2`` has a
    projection ``W^(j)`` and a value projection ``U^(j)``. Values of different slots are combined
    by element-wise product. ``backend="auto"`` picks the quadratic ``tree`` algorithm for tree
    polynomials, ``strassen`` for the triangle and ``brute`` otherwise.

    With ``per_monomial_projections=True`` (ours) every (monomial, slot) pair has its own
    projection, so a slot that appears in two monomials (slot 2 of ``x1 x2 + x2 x3``) can match
    its two neighbours on different features; ``monomial_proj[m][k]`` is the projection of the
    k-th slot (in increasing slot order) of monomial m. With one projection per slot (the
    default) the same ``Q^(j)`` serves every monomial containing slot j.

    Value biases of a head with several value slots start at 1 (ours), so at initialisation the
    product of values is close to a sum of small terms rather than a product of small numbers.
    """

    def __init__(
        self,
        dim: int,
        polynomial: str = "self",
        heads: int = 1,
        head_dim: int | None = None,
        scale: str | float = "1/d",
        causal: bool = False,
        backend: str = "auto",
        bias: bool = True,
        per_monomial_projections: bool = False,
    ) -> None:
        super().__init__()
        dim = V.check_int(dim, "dim", low=1)
        heads = V.check_int(heads, "heads", low=1)
        head_dim = V.check_int(head_dim, "head_dim", low=1, allow_none=True)
        V.check_choice(backend, "backend", BACKENDS)
        V.check_bool(causal, "causal")
        V.check_bool(bias, "bias")
        V.check_bool(per_monomial_projections, "per_monomial_projections")
        self.poly = parse_polynomial(polynomial)
        self.dim, self.heads = dim, heads
        self.head_dim = head_dim or dim // heads
        if self.head_dim <= 0:
            raise ValueError(f"head_dim must be positive: dim {dim} // heads {heads} is 0")
        self.scale = resolve_scale(scale, self.head_dim)
        self.causal, self.backend = causal, backend
        inner = heads * self.head_dim
        t = self.poly.num_slots
        self.per_monomial_projections = bool(per_monomial_projections)
        if self.per_monomial_projections:
            self.monomial_proj = nn.ModuleList(
                nn.ModuleList(nn.Linear(dim, inner, bias=bias) for _ in mono)
                for mono in self.poly.monomials
            )
        else:
            self.query_proj = nn.ModuleList(nn.Linear(dim, inner, bias=bias) for _ in range(t))
        self.value_proj = nn.ModuleList(nn.Linear(dim, inner, bias=bias) for _ in range(t - 1))
        if bias and t > 2:
            for layer in self.value_proj:
                nn.init.ones_(layer.bias)
        self.out = nn.Linear(inner, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        batch, n, _ = x.shape
        return x.reshape(batch, n, self.heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x``: ``(batch, n, dim)``. ``attn_mask``: ``(n, n)`` or ``(batch * heads, n, n)``;
        ``key_padding_mask``: ``(batch, n)``; both as in ``nn.MultiheadAttention`` (bool
        ``True`` = not allowed, float = added to the scores)."""
        V.check_tensor(x, "x", ndim=3, shape=(None, None, self.dim), floating=True)
        batch, n, _ = x.shape
        if attn_mask is not None:
            if not isinstance(attn_mask, torch.Tensor):
                raise TypeError(f"attn_mask must be a torch.Tensor, got {type(attn_mask).__name__}")
            if attn_mask.dim() == 3 and attn_mask.shape[0] == batch * self.heads:
                attn_mask = attn_mask.reshape(batch, self.heads, *attn_mask.shape[1:])
            elif attn_mask.dim() != 2:
                raise ValueError(
                    f"attn_mask must be (n, n) or (batch * heads, n, n) = ({batch * self.heads}, "
                    f"{n}, {n}), got {tuple(attn_mask.shape)}"
                )
        if key_padding_mask is not None:
            if not isinstance(key_padding_mask, torch.Tensor):
                raise TypeError(
                    f"key_padding_mask must be a torch.Tensor, got {type(key_padding_mask).__name__}"
                )
            V.check_tensor(key_padding_mask, "key_padding_mask", shape=(batch, n), allow_inf=True)
            key_padding_mask = key_padding_mask.unsqueeze(1)  # broadcast over heads
        if self.per_monomial_projections:
            q = [[self._split(p(x)) for p in group] for group in self.monomial_proj]
        else:
            q = [self._split(p(x)) for p in self.query_proj]
        v = [None] + [self._split(p(x)) for p in self.value_proj]
        att = poly_attention(
            q,
            v,
            self.poly,
            self.scale,
            self.causal,
            self.backend,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
        )
        return self.out(att.transpose(1, 2).reshape(batch, n, -1))


class PolyTransformerBlock(nn.Module):
    """Pre-norm residual block: ``x + Att(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(
        self,
        dim: int,
        polynomial: str = "self",
        heads: int = 1,
        head_dim: int | None = None,
        mlp_ratio: float = 4.0,
        scale: str | float = "1/d",
        causal: bool = False,
        backend: str = "auto",
        per_monomial_projections: bool = False,
    ) -> None:
        super().__init__()
        mlp_ratio = V.check_scalar(mlp_ratio, "mlp_ratio", low=0.0, low_open=True)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = PolyAttention(
            dim,
            polynomial,
            heads,
            head_dim,
            scale,
            causal,
            backend,
            per_monomial_projections=per_monomial_projections,
        )
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(
        self,
        x: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), attn_mask=attn_mask, key_padding_mask=key_padding_mask)
        return x + self.mlp(self.norm2(x))
