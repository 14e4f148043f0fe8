"""Bad-input cases for the MixKV room (read by tests/framework/test_bad_input.py)."""

import functools

import torch

from iclr26.llm.mixkv import (
    AdaKV,
    CompressedCache,
    FullKV,
    KVCompressionConfig,
    KVPolicy,
    MixKV,
    PyramidKV,
    RandomKV,
    Selection,
    SnapKV,
    StreamingKV,
    adakv_capacities,
    attention_modules,
    cache_nbytes,
    calibrate_redundancy,
    capture_prompt_kv,
    continuation_nll,
    decode_throughput,
    diversity_scores,
    enable_kv_compression,
    head_redundancy,
    make_policy,
    mixkv_scores,
    pyramid_budgets,
    snapkv_scores,
    value_norm_scores,
)

NAN = float("nan")
_g = torch.Generator().manual_seed(0)
Q = torch.randn(1, 4, 8, 16, generator=_g)  # 8 window queries
K = torch.randn(1, 2, 40, 16, generator=_g)
VV = torch.randn(1, 2, 40, 16, generator=_g)
ATT = torch.rand(1, 2, 32, generator=_g)


def _with(tensor, value):
    out = tensor.clone()
    out.view(-1)[3] = value
    return out


@functools.cache
def _llama():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    cfg = tiny_llama_config("test", num_hidden_layers=1, vocab_size=64)
    return LlamaForCausalLM(cfg).eval()


@functools.cache
def _mamba():
    from transformers import MambaConfig, MambaForCausalLM

    return MambaForCausalLM(
        MambaConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1, state_size=2)
    )


def _enter(model, config, **kw):
    with enable_kv_compression(model, config, **kw):
        pass


def _generate_short_prompt():
    model = _llama()
    with enable_kv_compression(model, SnapKV(32, 8)):
        model.generate(input_ids=torch.randint(3, 60, (1, 12)), max_new_tokens=1, do_sample=False)


IDS = torch.randint(3, 60, (2, 24), generator=_g)


def _sliding_config():
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=0,
    )


CASES = [
    # scoring
    ("snapkv_scores", "nan", lambda: snapkv_scores(_with(Q, NAN), K), ValueError, "q_win"),
    ("snapkv_scores", "inf", lambda: snapkv_scores(Q, _with(K, float("inf"))), ValueError, "keys"),
    ("snapkv_scores", "shape", lambda: snapkv_scores(Q[:, :3], K), ValueError, "q_win"),
    ("snapkv_scores", "range", lambda: snapkv_scores(Q, K, kernel=4), ValueError, "kernel"),
    (
        "snapkv_scores",
        "range",
        lambda: snapkv_scores(Q, K, pooling="median"),
        ValueError,
        "pooling",
    ),
    ("snapkv_scores", "dtype", lambda: snapkv_scores(Q.long(), K), TypeError, "q_win"),
    ("head_redundancy", "nan", lambda: head_redundancy(_with(K, NAN)), ValueError, "keys"),
    ("head_redundancy", "shape", lambda: head_redundancy(K[..., :1, :]), ValueError, "keys"),
    ("head_redundancy", "type", lambda: head_redundancy([[1.0, 2.0]]), TypeError, "keys"),
    (
        "mixkv_scores",
        "shape",
        lambda: mixkv_scores(ATT[..., :1], K[..., :1, :], VV),
        ValueError,
        "values",
    ),
    ("mixkv_scores", "shape", lambda: mixkv_scores(ATT[0], K, VV), ValueError, "attention"),
    ("mixkv_scores", "range", lambda: mixkv_scores(ATT, K, VV, 2.0), ValueError, "redundancy"),
    ("mixkv_scores", "nan", lambda: mixkv_scores(ATT, K, VV, NAN), ValueError, "redundancy"),
    ("mixkv_scores", "nan", lambda: mixkv_scores(_with(ATT, NAN), K, VV), ValueError, "attention"),
    ("diversity_scores", "range", lambda: diversity_scores(K, 40), ValueError, "window"),
    ("diversity_scores", "nan", lambda: diversity_scores(_with(K, NAN), 8), ValueError, "keys"),
    ("value_norm_scores", "range", lambda: value_norm_scores(VV, -1), ValueError, "window"),
    (
        "value_norm_scores",
        "empty",
        lambda: value_norm_scores(VV[..., :0, :], 0),
        ValueError,
        "values",
    ),
    # policies
    ("KVPolicy", "range", lambda: KVPolicy(8, 8), ValueError, "budget"),
    ("SnapKV", "range", lambda: SnapKV(16, 16), ValueError, "budget"),
    ("SnapKV", "nan", lambda: SnapKV(NAN, 8), TypeError, "budget"),
    ("SnapKV", "range", lambda: SnapKV(16, 0), ValueError, "window"),
    ("SnapKV", "range", lambda: SnapKV(64, 8).select(Q, K, VV), ValueError, "budget"),
    ("SnapKV", "nan", lambda: SnapKV(16, 8).select(Q, _with(K, NAN), VV), ValueError, "keys"),
    ("SnapKV", "shape", lambda: SnapKV(16, 4).select(Q, K, VV), ValueError, "q_win"),
    ("SnapKV", "range", lambda: SnapKV(16, 8, gqa="sum"), ValueError, "gqa"),
    ("AdaKV", "range", lambda: AdaKV(16, 8, floor=1.5), ValueError, "floor"),
    ("AdaKV", "nan", lambda: AdaKV(16, 8, floor=NAN), ValueError, "floor"),
    ("AdaKV", "shape", lambda: AdaKV(16, 8).select(Q, K, VV[..., :30, :]), ValueError, "values"),
    ("MixKV", "type", lambda: MixKV(RandomKV(16, 8)), TypeError, "base"),
    ("MixKV", "range", lambda: MixKV(SnapKV(16, 8), redundancy=1.5), ValueError, "redundancy"),
    ("MixKV", "range", lambda: MixKV(SnapKV(16, 8), redundancy="cosine"), ValueError, "redundancy"),
    ("MixKV", "other", lambda: MixKV(SnapKV(16, 8), "calibrated"), TypeError, "table"),
    (
        "MixKV",
        "nan",
        lambda: MixKV(SnapKV(16, 8), "calibrated", table=torch.full((1, 2), NAN)),
        ValueError,
        "table",
    ),
    (
        "MixKV",
        "range",
        lambda: MixKV(SnapKV(16, 8), "calibrated", table=torch.zeros(1, 2)).select(
            Q, K, VV, layer=3
        ),
        ValueError,
        "layer",
    ),
    ("AdaKV", "range", lambda: AdaKV(16, 8, skip=-1), ValueError, "skip"),
    ("AdaKV", "type", lambda: AdaKV(16, 8, skip=1).select(Q, K, VV), TypeError, "layer"),
    ("PyramidKV", "range", lambda: PyramidKV(16, 8, beta=0.0), ValueError, "beta"),
    ("PyramidKV", "range", lambda: PyramidKV(16, 8, beta=-2.0), ValueError, "beta"),
    ("PyramidKV", "range", lambda: PyramidKV(16, 8, beta=0.5), ValueError, "beta"),
    ("PyramidKV", "nan", lambda: PyramidKV(16, 8, beta=NAN), ValueError, "beta"),
    ("PyramidKV", "range", lambda: PyramidKV(9, 8, num_layers=4), ValueError, "budget"),
    ("PyramidKV", "range", lambda: PyramidKV(16, 8, num_layers=0), ValueError, "num_layers"),
    (
        "PyramidKV",
        "range",
        lambda: PyramidKV(24, 8, num_layers=2).select(Q, K, VV, layer=2),
        ValueError,
        "layer",
    ),
    (
        "PyramidKV",
        "other",
        lambda: PyramidKV(24, 8, num_layers=2).select(Q, K, VV),
        TypeError,
        "layer",
    ),
    (
        "PyramidKV",
        "other",
        lambda: PyramidKV(16, 8).select(Q, K, VV, layer=0),
        TypeError,
        "num_layers",
    ),  # fmt: skip
    (
        "PyramidKV",
        "nan",
        lambda: PyramidKV(24, 8, num_layers=2).select(Q, _with(K, NAN), VV, layer=0),
        ValueError,
        "keys",
    ),
    (
        "PyramidKV",
        "other",
        lambda: _enter(_llama(), PyramidKV(24, 8, num_layers=3)),
        ValueError,
        "num_layers",
    ),
    ("pyramid_budgets", "range", lambda: pyramid_budgets(16, 8, 4, beta=0.0), ValueError, "beta"),
    ("pyramid_budgets", "nan", lambda: pyramid_budgets(16, 8, 4, beta=NAN), ValueError, "beta"),
    ("pyramid_budgets", "range", lambda: pyramid_budgets(9, 8, 2), ValueError, "budget"),
    ("pyramid_budgets", "range", lambda: pyramid_budgets(8, 8, 2), ValueError, "budget"),
    ("pyramid_budgets", "range", lambda: pyramid_budgets(16, 8, 0), ValueError, "num_layers"),
    (
        "pyramid_budgets",
        "range",
        lambda: pyramid_budgets(16, 8, 2, prompt_len=12),
        ValueError,
        "prompt_len",
    ),
    ("pyramid_budgets", "nan", lambda: pyramid_budgets(NAN, 8, 2), TypeError, "budget"),
    ("RandomKV", "range", lambda: RandomKV(16, 8, seed=-1), ValueError, "seed"),
    ("StreamingKV", "range", lambda: StreamingKV(16, 8, sinks=9), ValueError, "sinks"),
    ("FullKV", "nan", lambda: FullKV().select(None, _with(K, NAN), VV), ValueError, "keys"),
    ("Selection", "dtype", lambda: Selection(torch.ones(1, 2, 4)), TypeError, "keep"),
    ("Selection", "shape", lambda: Selection(torch.ones(4, dtype=torch.bool)), ValueError, "keep"),
    ("adakv_capacities", "nan", lambda: adakv_capacities(_with(ATT, NAN), 8), ValueError, "scores"),
    ("adakv_capacities", "range", lambda: adakv_capacities(ATT, 40), ValueError, "capacity"),
    (
        "adakv_capacities",
        "range",
        lambda: adakv_capacities(ATT, 8, floor=-0.1),
        ValueError,
        "floor",
    ),
    # configuration and integration
    (
        "KVCompressionConfig",
        "range",
        lambda: KVCompressionConfig(budget=8, window=16),
        ValueError,
        "budget",
    ),
    (
        "KVCompressionConfig",
        "range",
        lambda: KVCompressionConfig(method="h2o"),
        ValueError,
        "method",
    ),
    ("KVCompressionConfig", "range", lambda: KVCompressionConfig(mode="drop"), ValueError, "mode"),
    (
        "KVCompressionConfig",
        "range",
        lambda: KVCompressionConfig(method="pyramidkv", budget=9, window=8, num_layers=4),
        ValueError,
        "budget",
    ),
    (
        "KVCompressionConfig",
        "range",
        lambda: KVCompressionConfig(base="h2o"),
        ValueError,
        "base",
    ),
    (
        "KVCompressionConfig",
        "range",
        lambda: KVCompressionConfig(method="adakv", adakv_skip=-1),
        ValueError,
        "skip",
    ),
    ("make_policy", "range", lambda: make_policy("snapkv", 0, 8), ValueError, "budget"),
    ("make_policy", "range", lambda: make_policy("h2o", 32, 8), ValueError, "method"),
    (
        "make_policy",
        "range",
        lambda: make_policy("pyramidkv+mixkv", 32, 8, pyramid_beta=0.0),
        ValueError,
        "beta",
    ),
    (
        "enable_kv_compression",
        "type",
        lambda: _enter(torch.nn.Linear(2, 2), SnapKV(16, 8)),
        TypeError,
        "model",
    ),
    (
        "enable_kv_compression",
        "other",
        lambda: _enter(_mamba(), SnapKV(16, 8)),
        ValueError,
        "model",
    ),
    (
        "enable_kv_compression",
        "range",
        lambda: _enter(_llama(), SnapKV(16, 8), mode="drop"),
        ValueError,
        "mode",
    ),
    ("enable_kv_compression", "type", lambda: _enter(_llama(), "snapkv"), TypeError, "config"),
    ("enable_kv_compression", "range", _generate_short_prompt, ValueError, "budget"),
    ("attention_modules", "other", lambda: attention_modules(_mamba()), ValueError, "model"),
    ("attention_modules", "type", lambda: attention_modules(object()), TypeError, "model"),
    ("CompressedCache", "other", lambda: CompressedCache(_sliding_config()), ValueError, "config"),
    ("CompressedCache", "type", lambda: CompressedCache(object()), TypeError, "config"),
    ("cache_nbytes", "type", lambda: cache_nbytes(object()), TypeError, "cache"),
    # measurements
    (
        "capture_prompt_kv",
        "range",
        lambda: capture_prompt_kv(_llama(), IDS, window=0),
        ValueError,
        "window",
    ),
    (
        "capture_prompt_kv",
        "dtype",
        lambda: capture_prompt_kv(_llama(), IDS.float()),
        TypeError,
        "input_ids",
    ),
    (
        "capture_prompt_kv",
        "range",
        lambda: capture_prompt_kv(_llama(), IDS + 100),
        ValueError,
        "input_ids",
    ),
    (
        "calibrate_redundancy",
        "empty",
        lambda: calibrate_redundancy(_llama(), IDS[:, :0]),
        ValueError,
        "input_ids",
    ),
    (
        "calibrate_redundancy",
        "range",
        lambda: calibrate_redundancy(_llama(), IDS, batch=0),
        ValueError,
        "batch",
    ),
    (
        "continuation_nll",
        "shape",
        lambda: continuation_nll(_llama(), IDS, IDS[:1, :4], {"s": SnapKV(16, 8)}),
        ValueError,
        "cont_ids",
    ),
    (
        "continuation_nll",
        "empty",
        lambda: continuation_nll(_llama(), IDS, IDS[:, :4], {}),
        TypeError,
        "policies",
    ),
    (
        "continuation_nll",
        "range",
        lambda: continuation_nll(_llama(), IDS, -IDS[:, :4], {"f": FullKV()}),
        ValueError,
        "cont_ids",
    ),
    (
        "decode_throughput",
        "range",
        lambda: decode_throughput(_llama(), IDS, None, new_tokens=0),
        ValueError,
        "new_tokens",
    ),
    (
        "decode_throughput",
        "type",
        lambda: decode_throughput(_llama(), IDS, "mixkv"),
        TypeError,
        "config",
    ),
]

EXEMPT = {
    "KVCompressionState": "the record enable_kv_compression yields (policy, mode, per-layer "
    "selections); users do not construct it, and its inputs are checked by the context manager",
}
