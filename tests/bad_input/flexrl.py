"""Bad-input cases of the flexrl room (corpus, metadata, preprocessing, planner, cost models,
TinyVLM, sequence-parallel group, pipelines). None of them starts Ray: every check fires at the
public boundary before any worker exists."""

import torch

from iclr26.rl.flexrl import (
    CentralizedPipeline,
    CostModel,
    FlexRLPipeline,
    GRPOConfig,
    MediaSample,
    SequenceParallelGroup,
    TinyVLM,
    answer_reward,
    build_multimodal_corpus,
    causal_attention,
    decode_text,
    encode_text,
    ensure_ray,
    equal_chunks,
    flops_cost_model,
    make_sample,
    plan_equal_count,
    plan_hybrid_shards,
    preprocess_sample,
    profile_cost_model,
)

NAN, INF = float("nan"), float("inf")
COST = CostModel(1.0, 0.01)
_MODEL = []


def _model():
    if not _MODEL:
        _MODEL.append(TinyVLM(d_model=8, n_layers=1, n_heads=2, max_len=32))
    return _MODEL[0]


def _text(**kw):
    base = dict(
        sample_id=0, modality="text", uris=(), prompt="digits: 1 2. sum mod 10? answer:",
        answer=3, est_tokens=32,
    )  # fmt: skip
    base.update(kw)
    return MediaSample(**base)


def _wide():
    return TinyVLM(d_model=8, n_layers=1, n_heads=2, max_len=64)


def _step(pipe_cls, batch, model_fn=_model, **kw):
    return pipe_cls(model_fn=model_fn, **kw).step(batch)


CASES = [
    # corpus builder
    (
        "build_multimodal_corpus",
        "range",
        lambda: build_multimodal_corpus("/nonexistent-x", 0),
        ValueError,
        "n",
    ),  # fmt: skip
    (
        "build_multimodal_corpus",
        "range",
        lambda: build_multimodal_corpus("/nonexistent-x", 4, mix=(0.5, 0.5, 0.5)),
        ValueError,
        "mix",
    ),
    (
        "build_multimodal_corpus",
        "nan",
        lambda: build_multimodal_corpus("/nonexistent-x", 4, mix=(NAN, 0.5, 0.5)),
        ValueError,
        "mix",
    ),
    (
        "build_multimodal_corpus",
        "shape",
        lambda: build_multimodal_corpus("/nonexistent-x", 4, mix=(0.5, 0.5)),
        ValueError,
        "mix",
    ),
    (
        "build_multimodal_corpus",
        "range",
        lambda: build_multimodal_corpus("/nonexistent-x", 4, seed=-1),
        ValueError,
        "seed",
    ),
    # metadata
    ("MediaSample", "empty", lambda: _text(prompt="", est_tokens=0), ValueError, "no tokens"),
    ("MediaSample", "range", lambda: _text(answer=12), ValueError, "answer"),
    ("MediaSample", "other", lambda: _text(modality="audio"), ValueError, "modality"),
    ("MediaSample", "range", lambda: _text(est_tokens=3), ValueError, "est_tokens"),
    ("MediaSample", "other", lambda: _text(modality="image"), ValueError, "uris"),
    ("make_sample", "empty", lambda: make_sample(0, "text", (), "", 0), ValueError, "no tokens"),
    (
        "make_sample",
        "other",
        lambda: make_sample(0, "image", ("/no/such.png",), "x", 0),
        FileNotFoundError,
        "uris",
    ),  # fmt: skip
    (
        "make_sample",
        "other",
        lambda: make_sample(0, "text", (), "caf\u00e9", 0),
        ValueError,
        "text",
    ),
    ("preprocess_sample", "type", lambda: preprocess_sample({"prompt": "x"}), TypeError, "sample"),
    ("encode_text", "type", lambda: encode_text(12), TypeError, "text"),
    ("encode_text", "other", lambda: encode_text("\u00e9"), ValueError, "text"),
    ("decode_text", "type", lambda: decode_text(None), TypeError, "ids"),
    ("decode_text", "dtype", lambda: decode_text([1.5]), TypeError, "ids"),
    ("answer_reward", "type", lambda: answer_reward(None, 3), TypeError, "ids"),
    ("answer_reward", "range", lambda: answer_reward([4], 10), ValueError, "answer"),
    ("GRPOConfig", "range", lambda: GRPOConfig(lr=-1.0), ValueError, "lr"),
    ("GRPOConfig", "range", lambda: GRPOConfig(group_size=1), ValueError, "group_size"),
    # planner and cost models
    ("plan_hybrid_shards", "empty", lambda: plan_hybrid_shards([], 2), ValueError, "lengths"),
    (
        "plan_hybrid_shards",
        "empty",
        lambda: plan_hybrid_shards([4, 0], 2),
        ValueError,
        "no tokens",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "nan",
        lambda: plan_hybrid_shards([4.0, NAN], 2),
        (ValueError, TypeError),
        "lengths",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "dtype",
        lambda: plan_hybrid_shards([4.5, 2.0], 2),
        TypeError,
        "lengths",
    ),  # fmt: skip
    ("plan_hybrid_shards", "shape", lambda: plan_hybrid_shards([[4, 2]], 2), ValueError, "lengths"),
    ("plan_hybrid_shards", "range", lambda: plan_hybrid_shards([4], 0), ValueError, "n_workers"),
    (
        "plan_hybrid_shards",
        "range",
        lambda: plan_hybrid_shards([4], 2, shard_threshold=NAN),
        ValueError,
        "shard_threshold",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "range",
        lambda: plan_hybrid_shards([4], 2, shard_threshold=0.0),
        ValueError,
        "shard_threshold",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "type",
        lambda: plan_hybrid_shards([4], 2, cost=(1.0, 0.1)),
        TypeError,
        "cost",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "range",
        lambda: plan_hybrid_shards([4], 2, memory_limit=0),
        ValueError,
        "memory_limit",
    ),  # fmt: skip
    (
        "plan_hybrid_shards",
        "range",
        lambda: plan_hybrid_shards([900], 2, memory_limit=100),
        ValueError,
        "memory_limit",
    ),  # fmt: skip
    ("plan_equal_count", "empty", lambda: plan_equal_count([], 2), ValueError, "lengths"),
    (
        "plan_equal_count",
        "inf",
        lambda: plan_equal_count([4.0, INF], 2),
        (ValueError, TypeError),
        "lengths",
    ),  # fmt: skip
    ("plan_equal_count", "range", lambda: plan_equal_count([4], -1), ValueError, "n_workers"),
    ("CostModel", "nan", lambda: CostModel(NAN, 1.0), ValueError, "a"),
    ("CostModel", "range", lambda: CostModel(1.0, -1.0), ValueError, "b"),
    ("CostModel", "range", lambda: CostModel(0.0, 0.0), ValueError, "a and b"),
    ("equal_chunks", "range", lambda: equal_chunks(0, 2, COST), ValueError, "length"),
    ("equal_chunks", "range", lambda: equal_chunks(10, 0, COST), ValueError, "k"),
    ("equal_chunks", "type", lambda: equal_chunks(10, 2, None), TypeError, "cost"),
    (
        "profile_cost_model",
        "type",
        lambda: profile_cost_model(torch.nn.Linear(2, 2)),
        TypeError,
        "model",
    ),  # fmt: skip
    (
        "profile_cost_model",
        "empty",
        lambda: profile_cost_model(_model(), lengths=[]),
        ValueError,
        "lengths",
    ),  # fmt: skip
    (
        "profile_cost_model",
        "range",
        lambda: profile_cost_model(_model(), lengths=[4, 64]),
        ValueError,
        "lengths",
    ),  # fmt: skip
    (
        "profile_cost_model",
        "range",
        lambda: profile_cost_model(_model(), lengths=[4, 8], rows=0),
        ValueError,
        "rows",
    ),  # fmt: skip
    ("flops_cost_model", "type", lambda: flops_cost_model("tiny"), TypeError, "model"),
    # model
    ("TinyVLM", "range", lambda: TinyVLM(d_model=10, n_heads=4), ValueError, "n_heads"),
    ("TinyVLM", "range", lambda: TinyVLM(n_layers=0), ValueError, "n_layers"),
    ("TinyVLM", "type", lambda: TinyVLM(d_model=64.5), TypeError, "d_model"),
    (
        "TinyVLM",
        "nan",
        lambda: _model()(torch.full((2, 192), NAN), torch.ones(1, 3).long()),
        ValueError,
        "patches",
    ),  # fmt: skip
    (
        "TinyVLM",
        "shape",
        lambda: _model()(torch.zeros(2, 5), torch.ones(1, 3).long()),
        ValueError,
        "patches",
    ),  # fmt: skip
    (
        "TinyVLM",
        "dtype",
        lambda: _model()(torch.zeros(0, 192), torch.ones(1, 3)),
        TypeError,
        "ids",
    ),  # fmt: skip
    (
        "TinyVLM",
        "empty",
        lambda: _model()(torch.zeros(0, 192), torch.ones(1, 0).long()),
        ValueError,
        "no tokens",
    ),  # fmt: skip
    (
        "TinyVLM",
        "range",
        lambda: _model()(torch.zeros(0, 192), torch.full((1, 3), 999)),
        ValueError,
        "ids",
    ),  # fmt: skip
    (
        "TinyVLM",
        "range",
        lambda: _model()(torch.zeros(30, 192), torch.ones(1, 5).long()),
        ValueError,
        "max_len",
    ),  # fmt: skip
    (
        "causal_attention",
        "shape",
        lambda: causal_attention(
            torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 4, 4), 0
        ),
        ValueError,
        "v",
    ),  # fmt: skip
    (
        "causal_attention",
        "nan",
        lambda: causal_attention(
            torch.full((1, 1, 2, 2), NAN), torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 0
        ),
        ValueError,
        "q",
    ),  # fmt: skip
    (
        "causal_attention",
        "range",
        lambda: causal_attention(
            torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 1
        ),
        ValueError,
        "q_start",
    ),  # fmt: skip
    (
        "SequenceParallelGroup",
        "other",
        lambda: SequenceParallelGroup(None, [3, 3], 0, "ring"),
        ValueError,
        "sp_mode",
    ),  # fmt: skip
    (
        "SequenceParallelGroup",
        "empty",
        lambda: SequenceParallelGroup(None, [], 0),
        ValueError,
        "lengths",
    ),  # fmt: skip
    (
        "SequenceParallelGroup",
        "range",
        lambda: SequenceParallelGroup(None, [3, 3], 2),
        ValueError,
        "index",
    ),  # fmt: skip
    # pipelines (validated before any worker starts)
    (
        "FlexRLPipeline",
        "range",
        lambda: FlexRLPipeline(model_fn=_model, n_workers=0),
        ValueError,
        "n_workers",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "range",
        lambda: FlexRLPipeline(model_fn=_model, shard_threshold=NAN),
        ValueError,
        "shard_threshold",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "other",
        lambda: FlexRLPipeline(model_fn=_model, sp_mode="ring"),
        ValueError,
        "sp_mode",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "type",
        lambda: FlexRLPipeline(model_fn=_model, prefetch=1),
        TypeError,
        "prefetch",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "type",
        lambda: FlexRLPipeline(model_fn=_model, grpo={"lr": 1}),
        TypeError,
        "grpo",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "type",
        lambda: FlexRLPipeline(model_fn=lambda: torch.nn.Linear(2, 2)),
        TypeError,
        "model_fn",
    ),  # fmt: skip
    ("FlexRLPipeline", "empty", lambda: _step(FlexRLPipeline, []), ValueError, "batch"),
    ("FlexRLPipeline", "type", lambda: _step(FlexRLPipeline, ["a prompt"]), TypeError, "batch"),
    (
        "FlexRLPipeline",
        "range",
        lambda: _step(FlexRLPipeline, [_text()], max_new_tokens=8),
        ValueError,
        "max_len",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "range",
        lambda: FlexRLPipeline(model_fn=_model, max_new_tokens=0),
        ValueError,
        "max_new_tokens",
    ),  # fmt: skip
    (
        "FlexRLPipeline",
        "other",
        lambda: _step(FlexRLPipeline, [_text(), _text()], _wide),
        ValueError,
        "repeated sample ids",
    ),  # fmt: skip
    (
        "CentralizedPipeline",
        "range",
        lambda: CentralizedPipeline(model_fn=_model, temperature=NAN),
        ValueError,
        "temperature",
    ),  # fmt: skip
    (
        "CentralizedPipeline",
        "range",
        lambda: CentralizedPipeline(model_fn=_model, max_retries=-1),
        ValueError,
        "max_retries",
    ),  # fmt: skip
    (
        "CentralizedPipeline",
        "range",
        lambda: CentralizedPipeline(model_fn=_model, grpo=GRPOConfig(minibatches=2)),
        ValueError,
        "minibatches",
    ),  # fmt: skip
    (
        "CentralizedPipeline",
        "range",
        lambda: CentralizedPipeline(model_fn=_model, shard_threshold=-1.0),
        ValueError,
        "shard_threshold",
    ),  # fmt: skip
    (
        "CentralizedPipeline",
        "other",
        lambda: CentralizedPipeline(model_fn=_model, sp_mode="x"),
        ValueError,
        "sp_mode",
    ),  # fmt: skip
    ("CentralizedPipeline", "empty", lambda: _step(CentralizedPipeline, ()), ValueError, "batch"),
    ("ensure_ray", "range", lambda: ensure_ray(num_cpus=0), ValueError, "num_cpus"),
]

EXEMPT = {
    "Plan": "a record returned by the planners; takes no user data",
    "WorkerFailure": "an exception type raised by the pipelines",
}
