"""The pieces of next-tensor prediction: overlapping token windows (the "tensors"), discrete
tensor noising of the input windows, the tensor input encoder (window -> one hidden state) and
the tensor output decoder (one hidden state -> k slot logits). Encoder and decoder are
residual around the base model's embedding and LM head and zero-initialised, so a freshly
wrapped model computes exactly what the base model computes."""

from __future__ import annotations

import math

import torch
from torch import nn

from iclr26 import validation as V

SCHEDULES = ("exponential", "linear", "sine", "sqrt", "constant")
KERNELS = ("uniform", "absorbing")


def build_windows(tokens: torch.Tensor, k: int, pad_id: int):
    """Input and target windows for teacher forcing, both ``(B, T, k)``.

    Target window of step t (1-based) is ``x_{t,k} = [x_t, ..., x_{t+k-1}]``; its input is the
    previous window ``x_{t-1,k}``, whose slot 0 is the committed token ``x_{t-1}`` (the class
    slot, id ``pad_id``, for t = 1) and whose slots j >= 1 overlap the targets (the leakage the
    noiser breaks). Positions past T are ``pad_id`` (their targets carry no loss)."""
    V.check_tensor(tokens, "tokens", ndim=2, integer=True, low=0)
    k = V.check_int(k, "k", low=1)
    pad_id = V.check_int(pad_id, "pad_id", low=0)
    b, t = tokens.shape
    pad = torch.full((b, 1), pad_id, dtype=tokens.dtype, device=tokens.device)
    tail = pad.expand(b, k - 1)
    padded = torch.cat([pad, tokens, tail], 1)  # position p holds x_p (p = 1..T)
    idx = torch.arange(t, device=tokens.device)[:, None] + torch.arange(k, device=tokens.device)
    return padded[:, idx], padded[:, idx + 1]


class DiscreteTensorNoiser:
    """Categorical corruption of input windows: slot j is corrupted with probability
    ``beta(j)``, a fixed non-decreasing schedule over the slot index with ``beta(0) = 0`` (the
    committed token stays clean, as in plain AR). With ``u = j / (k-1)``: ``linear`` u,
    ``sine`` sin(pi u / 2), ``sqrt`` sqrt(u), ``exponential`` (e^{j / (k/2)} - 1) /
    (e^{(k-1) / (k/2)} - 1), i.e. the paper's exponent j / (k/2), rescaled to run from 0 to 1
    (the rescaling is ours); a float ``lam`` instead gives (e^{lam u} - 1) / (e^lam - 1). All
    end at ``beta(k-1) = 1``; ``constant`` is ``level`` on every slot j >= 1 (an ablation
    without the rise). ``kernel="uniform"`` (the paper's, D3PM-uniform) replaces a
    corrupted slot by a uniform draw over the ``V`` codebook entries; ``kernel="absorbing"``
    (D3PM-absorbing) replaces it by a mask token ``mask_id`` outside the codebook (default
    ``pad_id + 1``; the wrapper gives it an embedding of its own). ``tau_max`` (off by default)
    scales beta per sequence by tau ~ U(0, tau_max). PAD is never noised and never drawn."""

    def __init__(
        self,
        schedule: str = "exponential",
        kernel: str = "uniform",
        tau_max: float | None = None,
        lam: float | None = None,
        level: float = 0.5,
    ):
        self.schedule = V.check_choice(schedule, "schedule", SCHEDULES)
        self.kernel = V.check_choice(kernel, "kernel", KERNELS)
        self.tau_max = V.check_scalar(tau_max, "tau_max", low=0.0, high=1.0, allow_none=True)
        self.lam = V.check_scalar(lam, "lam", low=0.0, low_open=True, allow_none=True)
        self.level = V.check_scalar(level, "level", low=0.0, high=1.0, low_open=True)

    def __repr__(self) -> str:
        return (
            f"DiscreteTensorNoiser(schedule={self.schedule!r}, kernel={self.kernel!r}, "
            f"tau_max={self.tau_max}, lam={self.lam}, level={self.level})"
        )

    def beta(self, k: int) -> torch.Tensor:
        """Corruption probability per slot, shape ``(k,)``."""
        k = V.check_int(k, "k", low=1)
        if k == 1:
            return torch.zeros(1)
        u = torch.arange(k, dtype=torch.float64) / (k - 1)
        if self.schedule == "constant":
            b = torch.full((k,), self.level, dtype=torch.float64)
            b[0] = 0.0
            return b.float()
        if self.schedule == "linear":
            b = u
        elif self.schedule == "sine":
            b = torch.sin(math.pi * u / 2)
        elif self.schedule == "sqrt":
            b = torch.sqrt(u)
        else:  # lam = None: exponent j / (k/2), so lam = (k-1) / (k/2) in units of u
            lam = 2.0 * (k - 1) / k if self.lam is None else self.lam
            b = torch.expm1(lam * u) / math.expm1(lam)
        b[0], b[-1] = 0.0, 1.0  # exact ends (sin(pi/2) etc. in floating point)
        return b.float()

    def always_corrupted(self, k: int) -> torch.Tensor:
        """Slots ``(k,)`` that training always corrupts (``beta = 1`` and no ``tau_max``)."""
        k = V.check_int(k, "k", low=1)
        if self.tau_max is not None:
            return torch.zeros(k, dtype=torch.bool)
        return self.beta(k) >= 1.0

    def _mask_id(self, vocab: int, pad_id: int, mask_id) -> int:
        pad_id = V.check_int(pad_id, "pad_id", low=0)
        mask_id = V.check_int(pad_id + 1 if mask_id is None else mask_id, "mask_id", low=vocab)
        if mask_id == pad_id:
            raise ValueError(f"mask_id must differ from pad_id={pad_id}")
        return mask_id

    def prior(self, shape, vocab: int, pad_id: int, generator=None, mask_id=None, device=None):
        """Fully corrupted tokens of ``shape``: uniform codebook draws (``uniform``) or the mask
        token everywhere (``absorbing``); what a draft slot holds before any draft exists."""
        vocab = V.check_int(vocab, "vocab", low=1)
        if self.kernel == "absorbing":
            fill = self._mask_id(vocab, pad_id, mask_id)
            return torch.full(tuple(shape), fill, dtype=torch.long, device=device)
        return torch.randint(0, vocab, tuple(shape), generator=generator).to(device)

    def __call__(
        self, windows, vocab: int, pad_id: int, generator=None, mask_id: int | None = None
    ) -> torch.Tensor:
        w = V.check_tensor(windows, "windows", ndim=3, integer=True, low=0)
        vocab = V.check_int(vocab, "vocab", low=1)
        b, t, k = w.shape
        beta = self.beta(k).to(w.device)
        if self.tau_max is not None:
            tau = torch.rand(b, 1, 1, generator=generator) * self.tau_max
            beta = beta * tau.to(w.device)
        hit = torch.rand(w.shape, generator=generator).to(w.device) < beta
        hit &= w != pad_id
        if self.kernel == "absorbing":
            return w.masked_fill(hit, self._mask_id(vocab, pad_id, mask_id))
        draw = torch.randint(0, vocab, w.shape, generator=generator).to(w.device)
        return torch.where(hit, draw, w)


class TensorInputEncoder(nn.Module):
    """Compress a window ``[w_0, ..., w_{k-1}]`` into one hidden state, residually around the
    base embedding of ``w_0``: ``e = e_0 + P_out(QT(q; [e_0 + p_0, E(w_1) + p_1, ...]))``.
    ``kind="query"``: one learnable query, one attention + MLP block (the paper's 1-layer Query
    Transformer); ``kind="linear"``: ``e = e_0 + W_in concat(E(w_1), ..., E(w_{k-1}))``.
    ``P_out`` / ``W_in`` start at zero."""

    def __init__(self, d: int, k: int, kind: str = "query", heads: int = 4, mlp_ratio: int = 2):
        super().__init__()
        self.d = V.check_int(d, "d", low=1)
        self.k = V.check_int(k, "k", low=1)
        self.kind = V.check_choice(kind, "kind", ("query", "linear"))
        heads = V.check_int(heads, "heads", low=1)
        mlp_ratio = V.check_int(mlp_ratio, "mlp_ratio", low=1)
        if kind == "query":
            if d % heads:
                raise ValueError(f"d={d} must be divisible by heads={heads}")
            self.query = nn.Parameter(0.02 * torch.randn(d))
            self.slot_pos = nn.Parameter(0.02 * torch.randn(k, d))
            self.ln_q, self.ln_kv, self.ln_mlp = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(
                nn.Linear(d, mlp_ratio * d), nn.GELU(), nn.Linear(mlp_ratio * d, d)
            )
            self.out = nn.Linear(d, d)
            nn.init.zeros_(self.out.weight)
            nn.init.zeros_(self.out.bias)
        elif k > 1:
            self.out = nn.Linear((k - 1) * d, d, bias=False)
            nn.init.zeros_(self.out.weight)

    def forward(self, e0: torch.Tensor, slot_emb: torch.Tensor) -> torch.Tensor:
        """``e0`` (B, T, d): base embeddings of slot 0; ``slot_emb`` (B, T, k-1, d): token
        embeddings of slots 1..k-1. Returns (B, T, d)."""
        b, t, d = e0.shape
        if self.kind == "linear":
            if self.k == 1:
                return e0
            return e0 + self.out(slot_emb.reshape(b, t, -1))
        kv = torch.cat([e0[:, :, None], slot_emb], 2) + self.slot_pos
        kv = self.ln_kv(kv.reshape(b * t, self.k, d))
        q = self.query.expand(b * t, 1, d)
        z = q + self.attn(self.ln_q(q), kv, kv, need_weights=False)[0]
        z = z + self.mlp(self.ln_mlp(z))
        return e0 + self.out(z).view(b, t, d)


class TensorOutputDecoder(nn.Module):
    """Expand one hidden state into k slot logits, residually around the base LM head:
    ``logits_j = head(h + U_j(h))`` with ``U_0 = 0`` (slot 0 is the base model's own output).
    ``kind="mlp"``: ``U_j`` a 2-layer MLP whose last layer starts at zero; ``"linear"``: ``U_j``
    one zero-initialised linear map (``hidden`` unused)."""

    def __init__(self, d: int, k: int, hidden: int | None = None, kind: str = "mlp"):
        super().__init__()
        self.d = V.check_int(d, "d", low=1)
        self.k = V.check_int(k, "k", low=1)
        self.kind = V.check_choice(kind, "decoder", ("mlp", "linear"))
        hidden = V.check_int(hidden if hidden is not None else d, "hidden", low=1)
        if k > 1 and self.kind == "mlp":
            self.w1 = nn.Parameter(torch.randn(k - 1, d, hidden) / math.sqrt(d))
            self.b1 = nn.Parameter(torch.zeros(k - 1, hidden))
            self.w2 = nn.Parameter(torch.zeros(k - 1, hidden, d))
            self.b2 = nn.Parameter(torch.zeros(k - 1, d))
        elif k > 1:
            self.w = nn.Parameter(torch.zeros(k - 1, d, d))
            self.b = nn.Parameter(torch.zeros(k - 1, d))

    def forward(self, h: torch.Tensor, head) -> torch.Tensor:
        """``h`` (B, T, d) -> logits (B, T, k, V)."""
        first = head(h)[:, :, None]
        if self.k == 1:
            return first
        if self.kind == "linear":
            drafts = h[:, :, None] + torch.einsum("btd,jde->btje", h, self.w) + self.b
            return torch.cat([first, head(drafts)], 2)
        z = torch.nn.functional.gelu(torch.einsum("btd,jdh->btjh", h, self.w1) + self.b1)
        drafts = h[:, :, None] + torch.einsum("btjh,jhd->btjd", z, self.w2) + self.b2
        return torch.cat([first, head(drafts)], 2)
