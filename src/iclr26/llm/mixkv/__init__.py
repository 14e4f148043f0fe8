"""MixKV: mixing importance with diversity for KV-cache compression (Liu et al., ICLR 2026).

Importance-only eviction (SnapKV, AdaKV) keeps the prompt KV pairs the last queries attend to
most, and in redundant heads spends its budget on near-duplicates. MixKV scores every prefix
token per KV head by ``r_h * diversity + (1 - r_h) * (attention + value norm)``, where the head
redundancy ``r_h`` is the mean pairwise key cosine of the head, and keeps the top tokens under
that score. It plugs into SnapKV, AdaKV and PyramidKV; :func:`enable_kv_compression` runs any of them
inside a Hugging Face model's forward passes and ``generate()``.
"""

from iclr26.llm.mixkv.evaluate import (
    calibrate_redundancy,
    capture_prompt_kv,
    continuation_nll,
    decode_throughput,
)
from iclr26.llm.mixkv.integration import (
    CompressedCache,
    KVCompressionConfig,
    KVCompressionState,
    attention_modules,
    cache_nbytes,
    enable_kv_compression,
    make_policy,
)
from iclr26.llm.mixkv.policies import (
    AdaKV,
    FullKV,
    KVPolicy,
    MixKV,
    PyramidKV,
    RandomKV,
    Selection,
    SnapKV,
    StreamingKV,
    adakv_capacities,
    pyramid_budgets,
)
from iclr26.llm.mixkv.scoring import (
    diversity_scores,
    head_redundancy,
    mixkv_scores,
    snapkv_scores,
    value_norm_scores,
)

__all__ = [
    "AdaKV",
    "CompressedCache",
    "FullKV",
    "KVCompressionConfig",
    "KVCompressionState",
    "KVPolicy",
    "MixKV",
    "PyramidKV",
    "RandomKV",
    "Selection",
    "SnapKV",
    "StreamingKV",
    "adakv_capacities",
    "attention_modules",
    "cache_nbytes",
    "calibrate_redundancy",
    "capture_prompt_kv",
    "continuation_nll",
    "decode_throughput",
    "diversity_scores",
    "enable_kv_compression",
    "head_redundancy",
    "make_policy",
    "mixkv_scores",
    "pyramid_budgets",
    "snapkv_scores",
    "value_norm_scores",
]
