"""Tiny Llama configurations (``transformers.LlamaConfig``) used across the LLM rooms.

RMSNorm, RoPE (theta 10000), SwiGLU, tied embeddings, vocabulary 4096 and grouped-query
attention (fewer KV heads than query heads) so the KV-head code paths are exercised.
"""

from __future__ import annotations

from typing import Any

from iclr26.models import hf_compat

VOCAB_SIZE = 4096
SPECIAL_TOKENS = (
    "<pad>",
    "<bos>",
    "<eos>",
    "<sep>",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
)
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2

# size -> (hidden, layers, q heads, kv heads, head_dim, ffn, max positions)
SIZES: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "test": (64, 2, 4, 2, 16, 176, 512),
    "quick": (128, 4, 4, 2, 32, 352, 1024),
    "full": (256, 6, 8, 4, 32, 704, 2048),
}
# Fixed pretraining step counts per size (not time-boxed).
PRETRAIN_STEPS = {"test": 30, "quick": 800, "full": 4000}


def check_size(size: str) -> str:
    if not isinstance(size, str) or size not in SIZES:
        raise ValueError(f"unknown tiny LM size {size!r}; valid: {', '.join(SIZES)}")
    return size


def tiny_llama_config(size: str = "quick", **overrides: Any):
    """The ``LlamaConfig`` of a named size; keyword overrides replace single fields
    (e.g. ``num_hidden_layers=6``)."""
    from transformers import LlamaConfig

    hidden, layers, heads, kv_heads, head_dim, ffn, max_pos = SIZES[check_size(size)]
    kwargs: dict[str, Any] = dict(
        vocab_size=VOCAB_SIZE,
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_pos,
        hidden_act="silu",
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        attention_dropout=0.0,
        **hf_compat.rope_kwargs(10000.0),
    )
    kwargs.update(overrides)
    return LlamaConfig(**kwargs)


def config_signature(config) -> dict[str, Any]:
    """The architecture fields of a config that change a trained model (for cache keys)."""
    fields = (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "hidden_act",
        "rms_norm_eps",
        "tie_word_embeddings",
        "rope_parameters",
        "rope_theta",
        "model_type",
    )
    return {f: getattr(config, f, None) for f in fields}
