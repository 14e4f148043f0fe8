"""Thin adapters over the parts of the Hugging Face ``transformers`` API that moved in 5.x.

Rooms call these instead of touching version-specific names, so one place absorbs the
differences: how RoPE settings are passed to a config, how an empty KV cache is made, and how
the attention implementation is switched.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch


def transformers_version() -> tuple[int, int]:
    """(major, minor) of the installed ``transformers``."""
    import transformers

    major, minor = transformers.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def rope_kwargs(theta: float) -> dict[str, Any]:
    """Keyword arguments that set a default RoPE with base ``theta`` on a Llama config."""
    from transformers import LlamaConfig

    params = inspect.signature(LlamaConfig.__init__).parameters
    if "rope_parameters" in params:
        return {"rope_parameters": {"rope_type": "default", "rope_theta": float(theta)}}
    return {"rope_theta": float(theta)}


def empty_cache(config: Any | None = None) -> Any:
    """A fresh dynamic KV cache for a causal LM."""
    from transformers import DynamicCache

    if config is not None and "config" in inspect.signature(DynamicCache.__init__).parameters:
        return DynamicCache(config=config)
    return DynamicCache()


def set_attention(model: torch.nn.Module, implementation: str) -> torch.nn.Module:
    """Switch the attention implementation (``"eager"``, ``"sdpa"``, ...) in place."""
    setter = getattr(model, "set_attn_implementation", None)
    if callable(setter):
        setter(implementation)
    else:
        model.config._attn_implementation = implementation
    return model


def causal_lm_logits(
    model: torch.nn.Module, input_ids: torch.Tensor, **kwargs: Any
) -> torch.Tensor:
    """Logits ``[batch, seq, vocab]`` of any HF causal LM (or a module returning logits)."""
    out = model(input_ids=input_ids, **kwargs)
    return out.logits if hasattr(out, "logits") else out


def cache_kwarg(model: torch.nn.Module) -> str:
    """The forward keyword that takes a KV cache (``cache`` in 5.x, ``past_key_values`` before)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def forward_with_cache(model: torch.nn.Module, input_ids: torch.Tensor, cache: Any):
    """One forward step reusing ``cache``; returns ``(logits, updated_cache)``."""
    out = model(input_ids=input_ids, use_cache=True, **{cache_kwarg(model): cache})
    new_cache = getattr(out, "cache", None)
    if new_cache is None:
        new_cache = getattr(out, "past_key_values", None)
    return out.logits, new_cache
