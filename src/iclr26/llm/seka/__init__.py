"""SEKA / AdaSEKA: prompt highlighting by spectral editing of the highlighted tokens' keys.

SEKA learns, without training, a per-head "relevance subspace" from the keys of answer spans
under relevant vs irrelevant questions, and at inference pushes the highlighted tokens' pre-RoPE
keys along it (``k' = k + g P k``) through removable forward hooks, so any attention kernel
runs unchanged. AdaSEKA mixes several such expert subspaces by how well the prompt's last query
aligns with each. PASTA (post-softmax attention reweighting) is the baseline.
"""

from iclr26.llm.seka.adaptive import AdaSEKA, routing_weights
from iclr26.llm.seka.markers import MarkedBatch, encode_with_markers, span_token_indices
from iclr26.llm.seka.pasta import PASTA, select_pasta_heads
from iclr26.llm.seka.projections import (
    SEKAProjections,
    Triplet,
    build_seka_projections,
    cumulative_rank,
    extract_span_keys,
    random_projections,
)
from iclr26.llm.seka.steering import SEKA, continuation_logprobs

__all__ = [
    "PASTA",
    "SEKA",
    "AdaSEKA",
    "MarkedBatch",
    "SEKAProjections",
    "Triplet",
    "build_seka_projections",
    "continuation_logprobs",
    "cumulative_rank",
    "encode_with_markers",
    "extract_span_keys",
    "random_projections",
    "routing_weights",
    "select_pasta_heads",
    "span_token_indices",
]
