"""SMoPE: one shared prefix as a sparse mixture of prompt experts (Le et al., ICLR 2026).

In layer l and head h the prefix holds E experts, each one key and one value vector of the
head's width. The router needs no query pass: the aggregated query q̄ = mean_i q_i of the
layer's own tokens scores every expert, s_j = q̄ · p^k_j (the mean over tokens of the
per-token prefix logits), and each sample keeps its top-K experts per head. Selection (only)
uses s̃_j = s_j - ε_j (max s - min s): during training ε_j = ε for experts that earlier tasks
used frequently (the adaptive noise), at inference ε_j = 2 for experts never used, so they
are never chosen. Every token attends to the selected experts with the same logit s_j / √d_h.
Two small losses keep routing stable: the router loss (a margin ε (max - min) on the
non-selected experts) and the prototype loss (old keys of frequently used experts must keep
routing to the experts they routed to when the task ended). Frequencies are counted on the
task's training images after training and flags and key snapshots change only at task end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images
from iclr26.vision.smope.prefix import PromptedViT, uniform_prompt

UNUSED_PENALTY = 2.0  # ε of never-used experts at inference (the official value)


def _aggregated_scores(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    return torch.einsum("bhd,hed->bhe", q.mean(dim=2), keys)


def _spread(scores: torch.Tensor) -> torch.Tensor:
    return (scores.amax(-1, keepdim=True) - scores.amin(-1, keepdim=True)).detach()


def _noisy(scores: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    return scores - penalty * _spread(scores)


def _router_loss(scores: torch.Tensor, selected: torch.Tensor, eps: float) -> torch.Tensor:
    chosen = torch.zeros_like(scores).scatter(-1, selected, 1.0)
    logits = scores + eps * (1.0 - chosen) * _spread(scores)
    nll = -logits.log_softmax(-1).gather(-1, selected)  # (B, H, K)
    return nll.mean(0).sum()


def _prototype_loss(keys, old_keys, frequent, top_k: int) -> torch.Tensor:
    old_logits = torch.einsum("lhid,lhjd->lhij", old_keys, old_keys)
    targets = old_logits.topk(top_k, dim=-1).indices  # (L, H, E, K)
    current = torch.einsum("lhid,lhjd->lhij", old_keys, keys)
    nll = -current.log_softmax(-1).gather(-1, targets)  # (L, H, E, K)
    weight = frequent.to(nll.dtype).unsqueeze(-1)
    per_head = (nll * weight).sum(2) / weight.sum(2).clamp(min=1.0)  # (L, H, K)
    return per_head.sum()


def aggregated_scores(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Expert scores s (B, H, E) from token queries q (B, H, T, d_h) and expert keys
    (H, E, d_h): the aggregated query q̄ = mean_i q_i times each key."""
    V.check_tensor(q, "q", ndim=4, floating=True)
    V.check_tensor(keys, "keys", ndim=3, floating=True, shape=(q.shape[1], None, q.shape[3]))
    return _aggregated_scores(q, keys)


def noisy_selection_scores(scores: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    """s̃ = s - ε (max_j s - min_j s) with ε (H, E) per expert (or broadcastable); the range
    is per sample and head and carries no gradient."""
    V.check_tensor(scores, "scores", ndim=3, floating=True)
    V.check_tensor(penalty, "penalty", floating=True, low=0.0)
    return _noisy(scores, penalty)


def router_loss(scores: torch.Tensor, selected: torch.Tensor, eps: float) -> torch.Tensor:
    """Σ_heads Σ_{j* ∈ 𝒦} mean_batch CE(s + ε (max s - min s) 1[j ∉ 𝒦], j*): the selected
    experts must beat the others by a margin. ``scores`` (B, H, E), ``selected`` (B, H, K)."""
    V.check_tensor(scores, "scores", ndim=3, floating=True)
    V.check_tensor(selected, "selected", ndim=3, integer=True, shape=(*scores.shape[:2], None))
    if int(selected.min()) < 0 or int(selected.max()) >= scores.shape[-1]:
        raise ValueError(f"selected must hold expert indices in [0, {scores.shape[-1] - 1}]")
    eps = V.check_scalar(eps, "eps", low=0.0)
    return _router_loss(scores, selected, eps)


def prototype_loss(
    keys: torch.Tensor, old_keys: torch.Tensor, frequent: torch.Tensor, top_k: int
) -> torch.Tensor:
    """Σ_layers Σ_heads Σ_{K targets} mean over prototypes of CE(Π p^kᵀ, TopK(Π p^{k,old}ᵀ)),
    with Π the old keys of the frequently used experts. ``keys``/``old_keys`` (L, H, E, d_h),
    ``frequent`` (L, H, E) bool."""
    V.check_tensor(keys, "keys", ndim=4, floating=True)
    V.check_tensor(old_keys, "old_keys", ndim=4, floating=True, shape=tuple(keys.shape))
    V.check_tensor(frequent, "frequent", ndim=3, shape=tuple(keys.shape[:3]))
    if frequent.dtype != torch.bool:
        raise TypeError(f"frequent must be a bool tensor, got {frequent.dtype}")
    top_k = V.check_int(top_k, "top_k", low=1, high=keys.shape[2])
    return _prototype_loss(keys, old_keys, frequent, top_k)


def usage_entropy(counts: torch.Tensor) -> float:
    """Mean over (layer, head) of the entropy of the expert-usage distribution, divided by
    log E (1 = perfectly balanced, 0 = one expert; NaN when nothing was counted).
    ``counts`` (L, H, E), non-negative."""
    V.check_tensor(counts, "counts", ndim=3, low=0.0)
    if counts.shape[-1] < 2:
        raise ValueError("counts needs at least 2 experts along its last axis")
    counts = counts.to(torch.float64)
    total = counts.sum(-1, keepdim=True)
    p = counts / total.clamp(min=1e-12)
    h = -(p * p.clamp(min=1e-300).log()).sum(-1)
    valid = total.squeeze(-1) > 0
    if not bool(valid.any()):
        return float("nan")
    return float((h[valid] / np.log(counts.shape[-1])).mean())


class SMoPE(PromptedViT):
    """Sparse mixture of prompt experts over a frozen protocol ViT ``vit``.

    ``layers`` are the prompted blocks, ``n_experts`` (E) and ``top_k`` (K) are per layer and
    head, ``alpha_router``/``alpha_proto`` weight the router and prototype losses, ``eps`` is
    the adaptive noise. ``dense=True`` (the first task's warm-up in the official schedule)
    activates every expert with its aggregated logit and no router loss."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        layers: Sequence[int] = range(6),
        n_experts: int = 25,
        top_k: int = 5,
        alpha_router: float = 1e-5,
        alpha_proto: float = 1e-5,
        eps: float = 0.4,
        classifier_alignment: bool = False,
    ):
        super().__init__(vit, num_classes, layers)
        self.n_experts = V.check_int(n_experts, "n_experts", low=1)
        self.top_k = V.check_int(top_k, "top_k", low=1, high=self.n_experts)
        self.alpha_router = V.check_scalar(alpha_router, "alpha_router", low=0.0)
        self.alpha_proto = V.check_scalar(alpha_proto, "alpha_proto", low=0.0)
        self.eps = V.check_scalar(eps, "eps", low=0.0, high=1.0)
        self.classifier_alignment = V.check_bool(classifier_alignment, "classifier_alignment")
        shape = (len(self.layers), self.num_heads, self.n_experts, self.head_dim)
        self.prompt_keys = uniform_prompt(*shape)
        self.prompt_values = uniform_prompt(*shape)
        self.register_buffer("old_keys", torch.zeros(shape))
        self.register_buffer("old_values", torch.zeros(shape))
        self.register_buffer("frequency", torch.zeros(shape[:3]))
        self.register_buffer("frequent", torch.zeros(shape[:3], dtype=torch.bool))
        self.dense = False
        self._records: list[tuple[torch.Tensor, torch.Tensor | None]] = []
        self.task_usage: list[torch.Tensor] = []

    # ------------------------------------------------------------------ routing
    def selection_penalty(self, position: int) -> torch.Tensor:
        """ε_j per (head, expert) of one prompted layer for the current mode."""
        if self.training:
            return self.frequent[position].to(self.prompt_keys.dtype) * self.eps
        unused = self.frequency[position] == 0
        return unused.to(self.prompt_keys.dtype) * UNUSED_PENALTY

    def route(self, position: int, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw scores s (B, H, E) and the selected experts (B, H, K) of one layer."""
        scores = _aggregated_scores(q, self.prompt_keys[position].to(q.dtype))
        noisy = _noisy(scores, self.selection_penalty(position).to(q.dtype))
        return scores, noisy.topk(self.top_k, dim=-1).indices

    def _prefix(self, position: int, q: torch.Tensor, scale: float):
        b, h, t, _ = q.shape
        values = self.prompt_values[position].to(q.dtype).unsqueeze(0).expand(b, -1, -1, -1)
        if self.dense:
            scores = _aggregated_scores(q, self.prompt_keys[position].to(q.dtype))
            self._records.append((scores, None))
            logits = (scores * scale).unsqueeze(2).expand(b, h, t, self.n_experts)
            return logits, values
        scores, selected = self.route(position, q)
        self._records.append((scores, selected))
        chosen_scores = scores.gather(-1, selected)  # the raw s_j: ε is for selection only
        index = selected.unsqueeze(-1).expand(-1, -1, -1, self.head_dim)
        chosen_values = values.gather(2, index)
        logits = (chosen_scores * scale).unsqueeze(2).expand(b, h, t, self.top_k)
        return logits, chosen_values

    def _prepare(self, x: torch.Tensor) -> None:
        self._records = []

    # ------------------------------------------------------------------ losses
    def prompt_loss(self) -> torch.Tensor:
        """α_router · router loss of the last forward (sparse mode only) + α_proto ·
        prototype loss (from the second task on)."""
        loss = self.prompt_keys.new_zeros(())
        if self.alpha_router > 0 and not self.dense:
            for scores, selected in self._records:
                if selected is not None:
                    loss = loss + self.alpha_router * _router_loss(scores, selected, self.eps)
        if self.alpha_proto > 0 and self.task_count > 0 and bool(self.frequent.any()):
            loss = loss + self.alpha_proto * _prototype_loss(
                self.prompt_keys, self.old_keys, self.frequent, self.top_k
            )
        return loss

    # ------------------------------------------------------------------ task boundaries
    @torch.no_grad()
    def count_usage(self, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
        """Add to the usage frequencies how often each (layer, head, expert) is among the
        top-K raw scores on images ``x`` (eval mode, no gradient); returns the counts added."""
        check_images(x, "x", channels=self.in_chans)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        was_training, was_dense = self.training, self.dense
        self.eval()
        self.dense = False
        added = torch.zeros_like(self.frequency)
        try:
            for start in range(0, len(x), batch_size):
                self.features(x[start : start + batch_size])
                for position, (scores, _) in enumerate(self._records):
                    top = scores.topk(self.top_k, dim=-1).indices  # (B, H, K)
                    added[position].scatter_add_(
                        1, top.transpose(0, 1).reshape(self.num_heads, -1),
                        torch.ones(self.num_heads, top.numel() // self.num_heads,
                                   device=added.device),
                    )  # fmt: skip
        finally:
            self.train(was_training)
            self.dense = was_dense
            self._records = []
        self.frequency += added
        self.task_usage.append(added.cpu())
        return added

    @torch.no_grad()
    def end_task(self, x: torch.Tensor | None = None) -> None:
        """Close a task: count usage on its training images ``x`` (when given), flag the
        experts whose cumulative count is at least the mean non-zero count of their head as
        frequently used (flags are kept), and snapshot the keys and values."""
        if x is not None:
            self.count_usage(x)
        counts = self.frequency
        nonzero = (counts > 0).sum(-1, keepdim=True).clamp(min=1)
        mean = counts.sum(-1, keepdim=True) / nonzero
        self.frequent |= (counts >= mean) & (counts > 0)
        self.old_keys.copy_(self.prompt_keys)
        self.old_values.copy_(self.prompt_values)
        self.task_count += 1

    def usage_entropy(self) -> list[float]:
        """Normalised expert-usage entropy of every finished task (1 = balanced)."""
        return [usage_entropy(c) for c in self.task_usage]
