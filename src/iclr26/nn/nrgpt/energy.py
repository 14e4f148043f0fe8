"""Per-token energies of NRGPT and their closed-form gradients (Sec. 2 of the paper).

Token ``A`` carries an energy ``E_A = E^AT_A + E^FF_A`` of its normalised state ``g_A``:

* attention (a causal dense associative memory, log-sum-exp over the earlier tokens)::

      E^AT_A = -(1/beta) sum_h alpha_h log sum_{B <= A} exp(beta g_B^T J_h g_A),
      J_h = W_K,h^T W_Q,h

* feed-forward, ``FF1``: ``E = -1/2 ||sigma(W g)||^2``; ``FF2W``: ``E = -g^T W2 sigma(W1 g)``.

The gradients w.r.t. the token's own ``g_A`` are what a transformer block computes: attention
with query ``W_Q g_A``, key and value ``W_K g_B`` and output projection ``alpha_h W_Q^T``.
With ``include_self`` the key of token ``A`` itself also depends on ``g_A``; that term,
``p_AA J_h g_A``, is added so the update is the exact gradient of the token's own energy.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr26 import validation as V

ACTIVATIONS = ("gelu", "relu", "tanh")
SQRT_2PI = math.sqrt(2.0 * math.pi)


def activation_and_derivative(u: torch.Tensor, act: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``sigma(u)`` and ``sigma'(u)`` in closed form (no autograd inside the forward pass)."""
    if act == "gelu":
        cdf = 0.5 * (1.0 + torch.erf(u / math.sqrt(2.0)))
        pdf = torch.exp(-0.5 * u * u) / SQRT_2PI
        return u * cdf, cdf + u * pdf
    if act == "relu":
        return F.relu(u), (u > 0).to(u.dtype)
    if act == "tanh":
        t = torch.tanh(u)
        return t, 1.0 - t * t
    raise ValueError(f"act must be one of 'gelu', 'relu', 'tanh'; got {act!r}")


def _causal_mask(n: int, include_self: bool, device) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool, device=device).tril(0 if include_self else -1)


def attention_scores(
    g: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, beta: float, include_self: bool
):
    """Queries (B,H,N,d), keys (B,H,N,d), masked scores beta q_A.k_B and the mask."""
    q = torch.einsum("bnd,hed->bhne", g, w_q)
    k = torch.einsum("bnd,hed->bhne", g, w_k)
    scores = beta * q @ k.transpose(-1, -2)
    mask = _causal_mask(g.shape[1], include_self, g.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    return q, k, scores, mask


def _check_attention_args(g, w_q, w_k, alpha, beta, include_self) -> float:
    """States ``g (B, N, D)``, projections ``w_q, w_k (H, E, D)``, head weights ``alpha (H,)``,
    inverse temperature ``beta > 0``; returns ``beta`` as a float."""
    V.check_tensor(g, "g", ndim=3, floating=True)
    d = g.shape[-1]
    V.check_tensor(w_q, "w_q", ndim=3, shape=(None, None, d), floating=True)
    V.check_tensor(w_k, "w_k", ndim=3, shape=tuple(w_q.shape), floating=True)
    V.check_tensor(alpha, "alpha", ndim=1, shape=(w_q.shape[0],), floating=True)
    V.check_bool(include_self, "include_self")
    return V.check_scalar(beta, "beta", low=0.0, low_open=True)


def _check_ff_args(g, w1, w2=None, act="gelu") -> None:
    V.check_tensor(g, "g", min_ndim=1, floating=True)
    V.check_tensor(
        w1, "w" if w2 is None else "w1", ndim=2, shape=(None, g.shape[-1]), floating=True
    )
    if w2 is not None:
        V.check_tensor(w2, "w2", ndim=2, shape=(g.shape[-1], w1.shape[0]), floating=True)
    V.check_choice(act, "act", ACTIVATIONS)


def attention_energy(
    g: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    alpha: torch.Tensor,
    beta: float,
    include_self: bool = True,
) -> torch.Tensor:
    """``E^AT_A`` for every token, shape (B, N); a token with no context has energy 0."""
    beta = _check_attention_args(g, w_q, w_k, alpha, beta, include_self)
    return _attention_energy(g, w_q, w_k, alpha, beta, include_self)


def _attention_energy(g, w_q, w_k, alpha, beta, include_self):
    _, _, scores, _ = attention_scores(g, w_q, w_k, beta, include_self)
    lse = torch.logsumexp(scores, dim=-1)  # (B, H, N)
    lse = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    return -(alpha.view(1, -1, 1) * lse).sum(1) / beta


def attention_energy_grad(
    g: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    alpha: torch.Tensor,
    beta: float,
    include_self: bool = True,
) -> torch.Tensor:
    """``dE^AT_A / dg_A`` for every token (own state only), shape (B, N, D)."""
    beta = _check_attention_args(g, w_q, w_k, alpha, beta, include_self)
    return _attention_energy_grad(g, w_q, w_k, alpha, beta, include_self)


def _attention_energy_grad(g, w_q, w_k, alpha, beta, include_self):
    q, k, scores, _ = attention_scores(g, w_q, w_k, beta, include_self)
    p = torch.softmax(scores, dim=-1)
    p = torch.nan_to_num(p, nan=0.0)  # rows with no context (first token, include_self off)
    context = p @ k  # (B, H, N, d): attention with value = key
    out = torch.einsum("bhne,hed->bhnd", context, w_q)  # J_h^T g_B = W_Q^T W_K g_B
    if include_self:
        p_self = torch.diagonal(p, dim1=-2, dim2=-1).unsqueeze(-1)  # (B, H, N, 1)
        out = out + p_self * torch.einsum("bhne,hed->bhnd", q, w_k)  # J_h g_A = W_K^T W_Q g_A
    return -(alpha.view(1, -1, 1, 1) * out).sum(1)


def ff1_energy(g: torch.Tensor, w: torch.Tensor, act: str = "gelu") -> torch.Tensor:
    """``-1/2 ||sigma(W g)||^2`` per token."""
    _check_ff_args(g, w, act=act)
    return _ff1_energy(g, w, act)


def _ff1_energy(g, w, act):
    s, _ = activation_and_derivative(g @ w.T, act)
    return -0.5 * (s * s).sum(-1)


def ff1_energy_grad(g: torch.Tensor, w: torch.Tensor, act: str = "gelu") -> torch.Tensor:
    """``dE^FF1/dg = -W^T (sigma(W g) sigma'(W g))``."""
    _check_ff_args(g, w, act=act)
    return _ff1_energy_grad(g, w, act)


def _ff1_energy_grad(g, w, act):
    s, ds = activation_and_derivative(g @ w.T, act)
    return -(s * ds) @ w


def ff2w_energy(
    g: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, act: str = "gelu"
) -> torch.Tensor:
    """``-g^T W2 sigma(W1 g)`` per token."""
    _check_ff_args(g, w1, w2, act)
    return _ff2w_energy(g, w1, w2, act)


def _ff2w_energy(g, w1, w2, act):
    s, _ = activation_and_derivative(g @ w1.T, act)
    return -((s @ w2.T) * g).sum(-1)


def ff2w_energy_grad(
    g: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, act: str = "gelu"
) -> torch.Tensor:
    """``dE^FF2W/dg = -(W2 sigma(W1 g) + W1^T (sigma'(W1 g) (W2^T g)))``."""
    _check_ff_args(g, w1, w2, act)
    return _ff2w_energy_grad(g, w1, w2, act)


def _ff2w_energy_grad(g, w1, w2, act):
    s, ds = activation_and_derivative(g @ w1.T, act)
    return -(s @ w2.T + (ds * (g @ w2)) @ w1)
