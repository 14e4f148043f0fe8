"""Where SEKA reaches into a Hugging Face causal LM: the key projection of each decoder layer.

SEKA edits the *pre-RoPE* keys, i.e. the output of ``self_attn.k_proj`` (or of
``self_attn.k_norm`` where the family normalises keys per head, as Qwen3 and Gemma3 do), so it
needs a decoder stack whose attention modules expose those projections. Llama, Mistral, Qwen2,
Qwen3 and Gemma-style models do; families with a fused QKV projection (GPT-2's ``c_attn``,
Falcon's ``query_key_value``) do not, and are refused here with a clear error before anything
is attached.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class AttentionSite:
    """One decoder layer's attention as SEKA sees it."""

    layer: int
    attention: nn.Module
    key_module: nn.Module  # k_norm when present (its output is the pre-RoPE key), else k_proj
    key_is_norm: bool
    q_proj: nn.Module
    q_norm: nn.Module | None
    input_norm: nn.Module | None


@dataclass(frozen=True)
class KVGeometry:
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int

    @property
    def group(self) -> int:
        return self.n_heads // self.n_kv_heads


def decoder_stack(model: nn.Module) -> tuple[nn.Module, nn.ModuleList] | tuple[None, None]:
    """The module that runs the decoder layers and the layer list (``model.model.layers`` and
    its usual variants), or ``(None, None)``."""
    for path in ("model", "model.model", "model.language_model", ""):
        owner = model
        for part in filter(None, path.split(".")):
            owner = getattr(owner, part, None)
            if owner is None:
                break
        layers = getattr(owner, "layers", None) if owner is not None else None
        if isinstance(layers, nn.ModuleList) and len(layers):
            return owner, layers
    return None, None


def kv_geometry(model: nn.Module) -> KVGeometry:
    """Heads, KV heads and head size from the model's config (raises if it has none)."""
    config = getattr(model, "config", None)
    text = getattr(config, "text_config", None) or config
    if text is None or not hasattr(text, "num_attention_heads"):
        raise TypeError(
            f"model must be a Hugging Face causal LM with a config, got {type(model).__name__}"
        )
    n_heads = int(text.num_attention_heads)
    n_kv = int(getattr(text, "num_key_value_heads", None) or n_heads)
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // n_heads
    return KVGeometry(int(text.num_hidden_layers), n_heads, n_kv, int(head_dim))


def attention_sites(model: nn.Module) -> list[AttentionSite]:
    """Every decoder layer's attention, or a ``TypeError`` naming why the model's attention
    cannot be hooked. Nothing is attached here; this is the check run before any hook is."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _, layers = decoder_stack(model)
    family = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    if layers is None or len(layers) == 0:
        raise TypeError(
            f"model: the attention of model family {family!r} cannot be hooked: no decoder "
            "layer list (model.model.layers) was found"
        )
    geometry = kv_geometry(model)
    sites = []
    for index, layer in enumerate(layers):
        attn = getattr(layer, "self_attn", None)
        k_proj = getattr(attn, "k_proj", None)
        q_proj = getattr(attn, "q_proj", None)
        if not isinstance(k_proj, nn.Linear) or not isinstance(q_proj, nn.Linear):
            raise TypeError(
                f"model: the attention of model family {family!r} cannot be hooked: layer "
                f"{index} has no separate self_attn.k_proj / q_proj linear maps (SEKA edits "
                "pre-RoPE keys, which a fused QKV projection does not expose)"
            )
        if k_proj.out_features != geometry.n_kv_heads * geometry.head_dim:
            raise TypeError(
                f"model: layer {index}'s k_proj has {k_proj.out_features} outputs, not "
                f"num_key_value_heads x head_dim = {geometry.n_kv_heads} x {geometry.head_dim}"
            )
        k_norm = getattr(attn, "k_norm", None)
        sites.append(
            AttentionSite(
                layer=index,
                attention=attn,
                key_module=k_norm if isinstance(k_norm, nn.Module) else k_proj,
                key_is_norm=isinstance(k_norm, nn.Module),
                q_proj=q_proj,
                q_norm=getattr(attn, "q_norm", None),
                input_norm=getattr(layer, "input_layernorm", None),
            )
        )
    return sites


def parse_layers(layers, n_layers: int) -> list[int]:
    """``"all"``, ``"lastN"``, ``"firstN"`` or a list of layer indices -> sorted unique list."""
    if isinstance(layers, str):
        spec = layers.strip().lower()
        if spec == "all":
            return list(range(n_layers))
        for prefix in ("last", "first"):
            if spec.startswith(prefix) and spec[len(prefix) :].isdigit():
                k = int(spec[len(prefix) :])
                if not 1 <= k <= n_layers:
                    raise ValueError(f"layers: {layers!r} asks for {k} of {n_layers} layers")
                return list(range(n_layers - k, n_layers)) if prefix == "last" else list(range(k))
        raise ValueError(
            f"layers must be 'all', 'lastN', 'firstN' or a list of ints; got {layers!r}"
        )
    try:
        picked = [int(i) for i in layers]
    except (TypeError, ValueError):
        raise TypeError(f"layers must be a string or a list of ints, got {layers!r}") from None
    if not picked:
        raise ValueError("layers is empty")
    if any(isinstance(i, bool) for i in layers):
        raise TypeError("layers must hold ints, not bools")
    bad = [i for i in picked if not 0 <= i < n_layers]
    if bad:
        raise ValueError(f"layers {bad} are outside 0..{n_layers - 1}")
    return sorted(set(picked))


def as_heads(keys: torch.Tensor, n_kv_heads: int, head_dim: int) -> torch.Tensor:
    """A key module's output as (B, T, H_kv, d), whatever its layout (k_proj: (B, T, H*d);
    k_norm: (B, T, H, d))."""
    return keys.reshape(*keys.shape[:2], n_kv_heads, head_dim)


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device
