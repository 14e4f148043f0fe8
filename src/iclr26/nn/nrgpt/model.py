"""NRGPT and its baselines as causal language models on token ids.

``NRGPT`` applies one weight-shared energy block ``T`` times: ``x <- x - eta (dE^AT/dg +
dE^FF/dg)`` at ``g = norm(x)`` (Eq. for the inference dynamics, Prop. 2.1/2.2 for descent).
``GPTRecParallel`` is the same recurrence with an ordinary, untied GPT-J parallel block;
``GPT`` is a standard pre-norm GPT with independent layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.nn.nrgpt.energy import ACTIVATIONS
from iclr26.nn.nrgpt.energy import _attention_energy as attention_energy
from iclr26.nn.nrgpt.energy import _attention_energy_grad as attention_energy_grad
from iclr26.nn.nrgpt.energy import _ff1_energy as ff1_energy
from iclr26.nn.nrgpt.energy import _ff1_energy_grad as ff1_energy_grad
from iclr26.nn.nrgpt.energy import _ff2w_energy as ff2w_energy
from iclr26.nn.nrgpt.energy import _ff2w_energy_grad as ff2w_energy_grad

FF_KINDS = ("ff1", "ff2w")
ETA_KINDS = ("diag_gamma", "psd", "free")
NORMS = ("layernorm", "rmsnorm", "none")


@dataclass
class NRGPTConfig:
    vocab_size: int = 96
    d_model: int = 64
    n_heads: int = 4
    head_dim: int | None = None
    steps: int = 8
    ff: str = "ff2w"
    ff_mult: int = 4
    act: str = "gelu"
    eta: str = "diag_gamma"
    eta_init: float = 0.5
    per_step_eta: bool = False
    norm: str = "layernorm"
    beta: float | None = None
    include_self: bool = True
    context: int = 128

    def __post_init__(self) -> None:
        self.vocab_size = V.check_int(self.vocab_size, "vocab_size", low=2)
        self.d_model = V.check_int(self.d_model, "d_model", low=1)
        self.n_heads = V.check_int(self.n_heads, "n_heads", low=1)
        self.head_dim = V.check_int(self.head_dim, "head_dim", low=1, allow_none=True)
        self.steps = V.check_int(self.steps, "steps", low=1)
        self.ff_mult = V.check_int(self.ff_mult, "ff_mult", low=1)
        self.context = V.check_int(self.context, "context", low=1)
        V.check_choice(self.ff, "ff", FF_KINDS)
        V.check_choice(self.act, "act", ACTIVATIONS)
        V.check_choice(self.eta, "eta", ETA_KINDS)
        V.check_choice(self.norm, "norm", NORMS)
        if self.eta == "diag_gamma" and self.norm == "none":
            raise ValueError("eta='diag_gamma' needs a norm with a scale gamma; use eta='psd'")
        self.eta_init = V.check_scalar(self.eta_init, "eta_init", low=0.0, low_open=True)
        self.per_step_eta = V.check_bool(self.per_step_eta, "per_step_eta")
        self.include_self = V.check_bool(self.include_self, "include_self")
        if self.head_dim is None:
            self.head_dim = max(1, self.d_model // self.n_heads)
        if self.beta is None:
            self.beta = 1.0 / math.sqrt(self.head_dim)
        # the inverse temperature of the log-sum-exp energy: beta <= 0 flips or kills it
        self.beta = V.check_scalar(self.beta, "beta", low=0.0, low_open=True)


def _make_norm(kind: str, d: int) -> nn.Module:
    if kind == "layernorm":
        return nn.LayerNorm(d)
    if kind == "rmsnorm":
        return nn.RMSNorm(d)
    return nn.Identity()


def _check_tokens(idx: torch.Tensor, vocab: int, context: int) -> None:
    V.check_tensor(idx, "idx", ndim=2, integer=True)
    if idx.dtype not in (torch.long, torch.int32):  # what nn.Embedding accepts
        raise TypeError(f"idx must be an int64 or int32 tensor, got {idx.dtype}")
    if idx.shape[1] > context:
        raise ValueError(f"idx: sequence length {idx.shape[1]} exceeds the context {context}")
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= vocab:
        raise ValueError(f"idx must hold token ids in [0, {vocab}), got [{lo}, {hi}]")


def _check_steps(steps: int | None, default: int) -> int:
    """``None`` -> the trained number of steps; otherwise a non-negative integer."""
    return default if steps is None else V.check_int(steps, "steps", low=0)


class _Embedding(nn.Module):
    def __init__(self, vocab: int, d: int, context: int) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab, d)
        self.position = nn.Embedding(context, d)
        nn.init.normal_(self.token.weight, std=0.02)
        nn.init.normal_(self.position.weight, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.token(idx) + self.position(torch.arange(idx.shape[1], device=idx.device))


class NRGPT(nn.Module):
    """Energy-based GPT: one shared energy block applied ``cfg.steps`` times."""

    def __init__(self, cfg: NRGPTConfig) -> None:
        super().__init__()
        if not isinstance(cfg, NRGPTConfig):
            raise TypeError(f"cfg must be an NRGPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        d, h, e = cfg.d_model, cfg.n_heads, cfg.head_dim
        self.embed = _Embedding(cfg.vocab_size, d, cfg.context)
        self.norm = _make_norm(cfg.norm, d)
        self.w_q = nn.Parameter(torch.randn(h, e, d) / math.sqrt(d))
        self.w_k = nn.Parameter(torch.randn(h, e, d) / math.sqrt(d))
        self.alpha = nn.Parameter(torch.ones(h))
        m = cfg.ff_mult * d
        self.w1 = nn.Parameter(torch.randn(m, d) / math.sqrt(d))
        self.w2 = nn.Parameter(torch.randn(d, m) / math.sqrt(m)) if cfg.ff == "ff2w" else None
        n_eta = cfg.steps if cfg.per_step_eta else 1
        if cfg.eta == "diag_gamma":
            # eta = c * diag(gamma), c = softplus(raw) > 0
            raw = math.log(math.expm1(cfg.eta_init))
            self.eta_raw = nn.Parameter(torch.full((n_eta,), raw))
        else:  # "psd": eta = A A^T (PSD); "free": any matrix
            scale = math.sqrt(cfg.eta_init) if cfg.eta == "psd" else cfg.eta_init
            self.eta_matrix = nn.Parameter(scale * torch.eye(d).repeat(n_eta, 1, 1))
        self.final_norm = _make_norm("layernorm" if cfg.norm == "none" else cfg.norm, d)

    # --- the energy and its gradient -------------------------------------------------------
    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)

    # the model's own states and weights: the unchecked energy functions (the public ones
    # validate their arguments, which would cost a pass over the states at every step)
    def token_energy(self, g: torch.Tensor) -> torch.Tensor:
        """``E_A`` of every token given the normalised states ``g`` (B, N, D) -> (B, N)."""
        c = self.cfg
        e = attention_energy(g, self.w_q, self.w_k, self.alpha, c.beta, c.include_self)
        if c.ff == "ff1":
            return e + ff1_energy(g, self.w1, c.act)
        return e + ff2w_energy(g, self.w1, self.w2, c.act)

    def energy_grad(self, g: torch.Tensor) -> torch.Tensor:
        """``dE_A/dg_A`` for every token, in closed form (B, N, D)."""
        c = self.cfg
        grad = attention_energy_grad(g, self.w_q, self.w_k, self.alpha, c.beta, c.include_self)
        if c.ff == "ff1":
            return grad + ff1_energy_grad(g, self.w1, c.act)
        return grad + ff2w_energy_grad(g, self.w1, self.w2, c.act)

    def inference_rate(self, step: int) -> torch.Tensor:
        """``eta^(t)``: a (D,) diagonal for ``diag_gamma``, else a (D, D) matrix."""
        i = step if self.cfg.per_step_eta else 0
        if self.cfg.eta == "diag_gamma":
            return F.softplus(self.eta_raw[i]) * self.norm.weight
        a = self.eta_matrix[i]
        return a @ a.T if self.cfg.eta == "psd" else a

    def step(self, x: torch.Tensor, t: int, steps: int | None = None) -> torch.Tensor:
        """One inference step ``x - eta dE/dg`` (gradient w.r.t. g, applied to x)."""
        grad = self.energy_grad(self.normalise(x))
        eta = self.inference_rate(min(t, (steps or self.cfg.steps) - 1))
        if eta.ndim == 1:
            return x - grad * eta
        return x - grad @ eta.T

    def hidden(self, idx: torch.Tensor, steps: int | None = None) -> torch.Tensor:
        _check_tokens(idx, self.cfg.vocab_size, self.cfg.context)
        steps = _check_steps(steps, self.cfg.steps)
        x = self.embed(idx)
        for t in range(steps):
            x = self.step(x, min(t, self.cfg.steps - 1))
        return x

    def forward(self, idx: torch.Tensor, steps: int | None = None) -> torch.Tensor:
        """Next-token logits (B, N, vocab), tied unembedding."""
        return self.final_norm(self.hidden(idx, steps)) @ self.embed.token.weight.T

    @torch.no_grad()
    def energy_trace(self, idx: torch.Tensor, steps: int | None = None) -> torch.Tensor:
        """``E_A^(t)`` for every step t = 0..steps and token: shape (steps + 1, B, N).

        Beyond the trained number of steps the last step's inference rate is reused.
        """
        _check_tokens(idx, self.cfg.vocab_size, self.cfg.context)
        steps = _check_steps(steps, self.cfg.steps)
        x = self.embed(idx)
        energies = [self.token_energy(self.normalise(x))]
        for t in range(steps):
            x = self.step(x, min(t, self.cfg.steps - 1))
            energies.append(self.token_energy(self.normalise(x)))
        return torch.stack(energies)


class _Attention(nn.Module):
    def __init__(self, d: int, n_heads: int) -> None:
        super().__init__()
        n_heads = V.check_int(n_heads, "n_heads", low=1)
        if d % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got {d} and {n_heads}")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class _MLP(nn.Sequential):
    def __init__(self, d: int, mult: int) -> None:
        super().__init__(nn.Linear(d, mult * d), nn.GELU(), nn.Linear(mult * d, d))


class _GPTModel(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, context: int) -> None:
        super().__init__()
        vocab_size = V.check_int(vocab_size, "vocab_size", low=2)
        d_model = V.check_int(d_model, "d_model", low=1)
        context = V.check_int(context, "context", low=1)
        self.vocab_size, self.context = vocab_size, context
        self.embed = _Embedding(vocab_size, d_model, context)
        self.final_norm = nn.LayerNorm(d_model)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        _check_tokens(idx, self.vocab_size, self.context)
        hidden = self.hidden(self.embed(idx))  # defined by each subclass
        return self.final_norm(hidden) @ self.embed.token.weight.T


class GPTRecParallel(_GPTModel):
    """GPT-J parallel block ``x + Attn(LN x) + MLP(LN x)`` shared across ``steps`` applications."""

    def __init__(
        self,
        vocab_size: int = 96,
        d_model: int = 64,
        n_heads: int = 4,
        steps: int = 8,
        ff_mult: int = 4,
        context: int = 128,
    ) -> None:
        super().__init__(vocab_size, d_model, context)
        self.steps = V.check_int(steps, "steps", low=1)
        ff_mult = V.check_int(ff_mult, "ff_mult", low=1)
        self.norm = nn.LayerNorm(d_model)
        self.attn = _Attention(d_model, n_heads)
        self.mlp = _MLP(d_model, ff_mult)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            g = self.norm(x)
            x = x + self.attn(g) + self.mlp(g)
        return x


class _GPTBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, ff_mult: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = _Attention(d, n_heads), _MLP(d, ff_mult)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(_GPTModel):
    """Standard pre-norm GPT with ``n_layers`` independent blocks."""

    def __init__(
        self,
        vocab_size: int = 96,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 4,
        ff_mult: int = 4,
        context: int = 128,
    ) -> None:
        super().__init__(vocab_size, d_model, context)
        n_layers = V.check_int(n_layers, "n_layers", low=1)
        ff_mult = V.check_int(ff_mult, "ff_mult", low=1)
        self.blocks = nn.ModuleList(_GPTBlock(d_model, n_heads, ff_mult) for _ in range(n_layers))

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def n_params(model: nn.Module) -> int:
    """Trainable parameters of ``model``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
