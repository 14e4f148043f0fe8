"""FlexRL: load-balanced RL training of vision-language models on Ray. A ShadowLoader moves
data decode off the single controller onto the workers (the controller passes metadata and
object references, never tensors), and FlexUlysses' cost-aware hybrid sequence sharding splits
long sequences over sequence-parallel worker groups and LPT-packs the rest; the same GRPO step
runs on a veRL-like centralized baseline."""

from iclr26.rl.grpo import GRPOConfig

from .data import (
    MediaSample,
    answer_reward,
    build_multimodal_corpus,
    decode_text,
    encode_text,
    make_sample,
    preprocess_sample,
)
from .model import TinyVLM, causal_attention
from .parallel import SequenceParallelGroup
from .pipeline import CentralizedPipeline, FlexRLPipeline, WorkerFailure, ensure_ray
from .planner import (
    CostModel,
    Plan,
    equal_chunks,
    flops_cost_model,
    plan_equal_count,
    plan_hybrid_shards,
    profile_cost_model,
)

__all__ = [
    "CentralizedPipeline",
    "CostModel",
    "FlexRLPipeline",
    "GRPOConfig",
    "MediaSample",
    "Plan",
    "SequenceParallelGroup",
    "TinyVLM",
    "WorkerFailure",
    "answer_reward",
    "build_multimodal_corpus",
    "causal_attention",
    "decode_text",
    "encode_text",
    "ensure_ray",
    "equal_chunks",
    "flops_cost_model",
    "make_sample",
    "plan_equal_count",
    "plan_hybrid_shards",
    "preprocess_sample",
    "profile_cost_model",
]
