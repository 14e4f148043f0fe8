"""PASTA (Zhang et al., 2024), the post-hoc attention-steering baseline SEKA is compared with.

For chosen (layer, query head) pairs, after the softmax, the attention weights of the
*non-highlighted* prompt tokens are multiplied by ``alpha`` and each row is renormalised
(``scale_position="exclude"``). This needs the materialised attention matrix, so it runs as an
eager attention function registered in transformers' attention registry; the layers without a
steered head keep using SDPA. Heads come from PASTA's model profiling, done here cheaply by
scoring every single head on a dev set (:func:`select_pasta_heads`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.seka.hooks import check_steer_mask
from iclr26.llm.seka.sites import attention_sites, kv_geometry
from iclr26.llm.seka.steering import _Highlighter

IMPLEMENTATION = "seka_pasta"
_ACTIVE: dict = {}  # id(model config) -> steering state of the PASTA call in progress


def _pasta_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    state = _ACTIVE.get(id(module.config))
    heads = None if state is None else state["heads"].get(getattr(module, "layer_idx", -1))
    if not heads:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    groups = query.shape[1] // key.shape[1]
    if groups > 1:  # GQA: repeat the KV heads for the materialised attention matrix
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask[..., : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    mask = state["mask"].to(weights.device)  # (B, T_prompt): True = highlighted
    B, _, _, Tk = weights.shape
    if mask.shape[0] == B and Tk >= mask.shape[1]:
        scale = torch.ones(B, Tk, device=weights.device, dtype=weights.dtype)
        scale[:, : mask.shape[1]] = torch.where(mask, 1.0, state["alpha"]).to(weights.dtype)
        idx = torch.tensor(heads, device=weights.device)
        sub = weights[:, idx] * scale[:, None, None, :]
        weights = weights.clone()
        weights[:, idx] = sub / sub.sum(-1, keepdim=True).clamp_min(1e-30)
        state["rows_checked"] = (weights[:, idx].sum(-1) - 1).abs().max().detach()
    out = torch.matmul(weights.to(value.dtype), value).transpose(1, 2).contiguous()
    return out, weights


def register_pasta_attention() -> str:
    """Register the PASTA attention function (and its eager-style mask) once; returns its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(IMPLEMENTATION, _pasta_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)
    return IMPLEMENTATION


def _configs(model) -> list:
    seen, out = set(), []
    for module in model.modules():
        config = getattr(module, "config", None)
        if (
            config is not None
            and hasattr(config, "_attn_implementation")
            and id(config) not in seen
        ):
            seen.add(id(config))
            out.append(config)
    return out


@contextmanager
def attention_implementation(model, name: str):
    """Switch every config of ``model`` to attention ``name`` for a block, then restore."""
    configs = _configs(model)
    before = [c._attn_implementation for c in configs]
    try:
        for c in configs:
            c._attn_implementation = name
        yield
    finally:
        for c, b in zip(configs, before):
            c._attn_implementation = b


def _check_heads(heads, n_layers: int, n_heads: int) -> dict[int, list[int]]:
    if isinstance(heads, dict):
        pairs = [(int(ell), int(h)) for ell, hs in heads.items() for h in hs]
    else:
        try:
            pairs = [(int(ell), int(h)) for ell, h in heads]
        except (TypeError, ValueError):
            raise TypeError(
                "heads must be (layer, head) pairs or a {layer: [heads]} dict"
            ) from None
    if not pairs:
        raise ValueError("heads is empty")
    bad = [p for p in pairs if not (0 <= p[0] < n_layers and 0 <= p[1] < n_heads)]
    if bad:
        raise ValueError(f"heads {bad} are outside {n_layers} layers x {n_heads} heads")
    out: dict[int, list[int]] = {}
    for ell, h in sorted(set(pairs)):
        out.setdefault(ell, []).append(h)
    return out


class PASTA(_Highlighter):
    """``PASTA(model, tok, heads=[(layer, head), ...], alpha=0.01)``: post-softmax reweighting
    of the chosen query heads toward the highlighted tokens."""

    def __init__(
        self,
        model,
        tok,
        heads,
        alpha: float = 0.01,
        scale_position: str = "exclude",
        marker=("**", "**"),
    ):
        super().__init__(model, tok, marker)
        g = kv_geometry(model)
        self.heads = _check_heads(heads, len(attention_sites(model)), g.n_heads)
        self.alpha = V.check_scalar(alpha, "alpha", low=0.0, high=1.0, low_open=True)
        V.check_choice(scale_position, "scale_position", ("exclude",))
        self.scale_position = scale_position
        self.last_row_error: float | None = None
        register_pasta_attention()

    def attention_bytes(self, batch: int, length: int, dtype_bytes: int = 4) -> int:
        """Load-free count: bytes of the attention matrices PASTA materialises per forward."""
        n = sum(len(h) for h in self.heads.values())
        layers = len(self.heads)
        g = kv_geometry(self.model)
        return int(batch * length * length * dtype_bytes * (layers * g.n_heads + n))

    @contextmanager
    def highlight(self, input_ids, steer_mask, attention_mask=None, prompt_end=None):
        mask = check_steer_mask(steer_mask, input_ids)
        key = id(self.model.config)
        if key in _ACTIVE:
            raise RuntimeError("model is already under a PASTA highlight")
        state = {"heads": self.heads, "mask": mask, "alpha": self.alpha}
        _ACTIVE[key] = state
        try:
            with attention_implementation(self.model, IMPLEMENTATION):
                yield
        finally:
            _ACTIVE.pop(key, None)
            checked = state.get("rows_checked")
            self.last_row_error = None if checked is None else float(checked)


def select_pasta_heads(
    model,
    tok,
    score: Callable[[PASTA], float],
    k: int = 4,
    alpha: float = 0.01,
    candidates: Sequence[tuple[int, int]] | None = None,
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """PASTA's head profiling, cheaply: steer one (layer, head) at a time, ``score`` it (e.g.
    the efficacy on dev prompts) and keep the ``k`` best. Returns the heads and the score of
    every candidate (layers x heads, NaN where not a candidate)."""
    V.check_int(k, "k", low=1)
    if not callable(score):
        raise TypeError("score must be callable")
    n_layers = len(attention_sites(model))
    n_heads = kv_geometry(model).n_heads
    pool = (
        list(candidates)
        if candidates is not None
        else [(ell, h) for ell in range(n_layers) for h in range(n_heads)]
    )
    _check_heads(pool, n_layers, n_heads)
    if k > len(pool):
        raise ValueError(f"k must be <= the {len(pool)} candidate heads, got {k}")
    table = np.full((n_layers, n_heads), np.nan)
    for ell, h in pool:
        table[ell, h] = float(score(PASTA(model, tok, [(ell, h)], alpha=alpha)))
    order = sorted(pool, key=lambda p: -table[p])
    return sorted(order[:k]), table
