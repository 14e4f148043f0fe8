"""Bad-input cases for the SEKA room (read by tests/framework/test_bad_input.py).

A tiny word-level fast tokenizer and a random two-layer Llama are built lazily (well under a
second), so the cases stay cheap."""

import dataclasses
import functools

import torch

from iclr26.llm.seka import (
    PASTA,
    SEKA,
    AdaSEKA,
    SEKAProjections,
    Triplet,
    build_seka_projections,
    continuation_logprobs,
    cumulative_rank,
    encode_with_markers,
    extract_span_keys,
    random_projections,
    routing_weights,
    select_pasta_heads,
    span_token_indices,
)

NAN = float("nan")
INF = float("inf")
_WORDS = (
    "P1 P2 : . ? the code colour of is Zarl Mobek red blue Lima Oslo was born in where what "
    "question context answer 1 2 3 4 5 6 7 8 9 0 a b c"
).split()


@functools.cache
def _tok():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", *_WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")


@functools.cache
def _model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


@functools.cache
def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(
        GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=32)
    ).eval()


_TRIPLETS = [
    (
        "the colour of Zarl is red .",
        "what is the colour of Zarl ?",
        "red",
        "where was Mobek born ?",
    ),
    ("Mobek was born in Lima .", "where was Mobek born ?", "Lima", "what is the colour of Zarl ?"),
]


@functools.cache
def _proj():
    return build_seka_projections(_model(), _tok(), _TRIPLETS, min_diff=0.0, save_svd=True)


def _ids():
    return encode_with_markers(_tok(), "P1 : the code is 4 . **P2 : the code is 7 .** answer")


def _seka(**kw):
    return SEKA(_model(), _tok(), _proj(), **kw)


def _proj_with(**change):
    return dataclasses.replace(_proj(), **change)


def _highlight_bad_mask():
    batch = _ids()
    with _seka(gain_pos=1.0).highlight(batch.input_ids, batch.steer_mask[:, 1:]):
        pass


def _highlight_float_mask():
    batch = _ids()
    with _seka(gain_pos=1.0).highlight(batch.input_ids, batch.steer_mask.float() * 0.5):
        pass


def _route(**change):
    args = dict(
        query=torch.randn(1, 2, 8),
        U=torch.randn(1, 2, 8, 8),
        S=torch.rand(1, 2, 8),
        valid=torch.ones(1, 2, dtype=torch.bool),
        top_k=3,
    )
    args.update(change)
    return routing_weights(**args)


CASES = [
    # markers
    (
        "encode_with_markers",
        "other",
        lambda: encode_with_markers(_tok(), "a **b c"),
        ValueError,
        "text",
    ),
    ("encode_with_markers", "empty", lambda: encode_with_markers(_tok(), []), ValueError, "texts"),
    (
        "encode_with_markers",
        "other",
        lambda: encode_with_markers(_tok(), "a b c"),
        ValueError,
        "texts",
    ),
    (
        "encode_with_markers",
        "range",
        lambda: encode_with_markers(_tok(), "**a**", marker=("", "*")),
        ValueError,
        "marker",
    ),
    ("encode_with_markers", "type", lambda: encode_with_markers(_tok(), [3]), ValueError, "texts"),
    (
        "span_token_indices",
        "other",
        lambda: span_token_indices(_tok(), "the code is 4", "Lima"),
        ValueError,
        "span",
    ),
    (
        "span_token_indices",
        "empty",
        lambda: span_token_indices(_tok(), "the code", ""),
        ValueError,
        "span",
    ),
    # projections
    (
        "build_seka_projections",
        "nan",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, top_pct=NAN),
        ValueError,
        "top_pct",
    ),
    (
        "build_seka_projections",
        "range",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, top_pct=0.0),
        ValueError,
        "top_pct",
    ),
    (
        "build_seka_projections",
        "inf",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, min_diff=INF),
        ValueError,
        "min_diff",
    ),
    (
        "build_seka_projections",
        "range",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, min_diff=-0.1),
        ValueError,
        "min_diff",
    ),
    (
        "build_seka_projections",
        "range",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, feature="relu"),
        ValueError,
        "feature",
    ),
    (
        "build_seka_projections",
        "range",
        lambda: build_seka_projections(_model(), _tok(), _TRIPLETS, layers=[5]),
        ValueError,
        "layers",
    ),
    (
        "build_seka_projections",
        "empty",
        lambda: build_seka_projections(_model(), _tok(), []),
        ValueError,
        "triplets",
    ),
    (
        "build_seka_projections",
        "other",
        lambda: build_seka_projections(_model(), _tok(), [("the code is 4", "q ?", "Lima", "r ?")]),
        ValueError,
        "span",
    ),
    (
        "build_seka_projections",
        "type",
        lambda: build_seka_projections(_gpt2(), _tok(), _TRIPLETS),
        TypeError,
        "model.*cannot be hooked",
    ),
    (
        "extract_span_keys",
        "other",
        lambda: extract_span_keys(_model(), _tok(), "the code is 4", "Lima"),
        ValueError,
        "span",
    ),
    (
        "extract_span_keys",
        "range",
        lambda: extract_span_keys(_model(), _tok(), "the code is 4", "4", layers="last9"),
        ValueError,
        "layers",
    ),
    (
        "extract_span_keys",
        "type",
        lambda: extract_span_keys(_gpt2(), _tok(), "the code", "code"),
        TypeError,
        "model",
    ),
    ("Triplet", "other", lambda: Triplet("the code is 4", "q", "Lima", "r"), ValueError, "span"),
    ("Triplet", "empty", lambda: Triplet("", "q", "a", "r"), ValueError, "context"),
    (
        "SEKAProjections",
        "nan",
        lambda: _proj_with(P_pos_raw=torch.full_like(_proj().P_pos_raw, NAN)),
        ValueError,
        "P_pos_raw",
    ),
    ("SEKAProjections", "shape", lambda: _proj_with(D=torch.zeros(3)), ValueError, "D"),
    (
        "SEKAProjections",
        "dtype",
        lambda: SEKAProjections(
            layers=[0],
            P_pos_raw=torch.zeros(1, 1, 4, 4, dtype=torch.long),
            P_neg_raw=None,
            D=torch.zeros(1, 1),
            k_pos=torch.zeros(1, 1, dtype=torch.long),
            k_neg=None,
            min_diff=0.0,
            top_pct=0.9,
        ),
        TypeError,
        "P_pos_raw",
    ),
    ("SEKAProjections", "range", lambda: _proj_with(top_pct=1.5), ValueError, "top_pct"),
    ("SEKAProjections", "shape", lambda: _proj_with(layers=[0]), ValueError, "layers"),
    (
        "cumulative_rank",
        "nan",
        lambda: cumulative_rank(torch.tensor([1.0, NAN]), 0.9),
        ValueError,
        "singular_values",
    ),
    (
        "cumulative_rank",
        "range",
        lambda: cumulative_rank(torch.tensor([1.0, 0.5]), 1.2),
        ValueError,
        "top_pct",
    ),
    (
        "cumulative_rank",
        "empty",
        lambda: cumulative_rank(torch.tensor([]), 0.9),
        ValueError,
        "singular_values",
    ),
    ("random_projections", "type", lambda: random_projections("proj"), TypeError, "proj"),
    (
        "random_projections",
        "range",
        lambda: random_projections(_proj(), seed=-1),
        ValueError,
        "seed",
    ),
    # steering
    ("SEKA", "nan", lambda: _seka(gain_pos=NAN), ValueError, "gain_pos"),
    ("SEKA", "inf", lambda: _seka(gain_pos=INF), ValueError, "gain_pos"),
    ("SEKA", "range", lambda: _seka(gain_neg=-0.5), ValueError, "gain_neg"),
    ("SEKA", "type", lambda: SEKA(_model(), _tok(), "proj.safetensors"), TypeError, "projections"),
    (
        "SEKA",
        "shape",
        lambda: SEKA(
            _model(),
            _tok(),
            _proj_with(
                P_pos_raw=torch.zeros(2, 1, 8, 8),
                P_neg_raw=None,
                D=torch.zeros(2, 1),
                k_pos=torch.zeros(2, 1, dtype=torch.long),
                U_pos=None,
                S_pos=None,
            ),
        ),
        ValueError,
        "projections",
    ),
    ("SEKA", "type", lambda: SEKA(_gpt2(), _tok(), _proj()), TypeError, "model.*cannot be hooked"),
    ("SEKA", "shape", _highlight_bad_mask, ValueError, "steer_mask"),
    ("SEKA", "dtype", _highlight_float_mask, TypeError, "steer_mask"),
    ("SEKA", "other", lambda: _seka().generate("no highlight here"), ValueError, "texts"),
    (
        "SEKA",
        "range",
        lambda: _seka().generate("**P1 : a**", max_new_tokens=0),
        ValueError,
        "max_new_tokens",
    ),
    ("AdaSEKA", "empty", lambda: AdaSEKA(_model(), _tok(), {}), ValueError, "experts"),
    (
        "AdaSEKA",
        "other",
        lambda: AdaSEKA(_model(), _tok(), {"a": _proj_with(U_pos=None, S_pos=None)}),
        ValueError,
        "experts",
    ),
    (
        "AdaSEKA",
        "range",
        lambda: AdaSEKA(_model(), _tok(), {"a": _proj()}, top_k=0),
        ValueError,
        "top_k",
    ),
    (
        "AdaSEKA",
        "nan",
        lambda: AdaSEKA(_model(), _tok(), {"a": _proj()}, gain=NAN),
        ValueError,
        "gain",
    ),
    (
        "AdaSEKA",
        "range",
        lambda: AdaSEKA(_model(), _tok(), {"a": _proj()}, combination="softmax"),
        ValueError,
        "combination",
    ),
    ("AdaSEKA", "type", lambda: AdaSEKA(_gpt2(), _tok(), {"a": _proj()}), TypeError, "model"),
    (
        "routing_weights",
        "nan",
        lambda: _route(query=torch.full((1, 2, 8), NAN)),
        ValueError,
        "query",
    ),
    ("routing_weights", "shape", lambda: _route(query=torch.randn(1, 3, 8)), ValueError, "query"),
    ("routing_weights", "range", lambda: _route(top_k=0), ValueError, "top_k"),
    ("routing_weights", "range", lambda: _route(combination="max"), ValueError, "combination"),
    # PASTA
    ("PASTA", "range", lambda: PASTA(_model(), _tok(), [(0, 1)], alpha=0.0), ValueError, "alpha"),
    ("PASTA", "nan", lambda: PASTA(_model(), _tok(), [(0, 1)], alpha=NAN), ValueError, "alpha"),
    ("PASTA", "range", lambda: PASTA(_model(), _tok(), [(0, 1)], alpha=2.0), ValueError, "alpha"),
    ("PASTA", "range", lambda: PASTA(_model(), _tok(), [(3, 0)]), ValueError, "heads"),
    ("PASTA", "empty", lambda: PASTA(_model(), _tok(), []), ValueError, "heads"),
    ("PASTA", "type", lambda: PASTA(_gpt2(), _tok(), [(0, 0)]), TypeError, "model"),
    (
        "select_pasta_heads",
        "range",
        lambda: select_pasta_heads(_model(), _tok(), lambda p: 0.0, k=0),
        ValueError,
        "k",
    ),
    (
        "select_pasta_heads",
        "range",
        lambda: select_pasta_heads(_model(), _tok(), lambda p: 0.0, k=99),
        ValueError,
        "k",
    ),
    (
        "select_pasta_heads",
        "type",
        lambda: select_pasta_heads(_model(), _tok(), 0.5),
        TypeError,
        "score",
    ),
    # scoring
    (
        "continuation_logprobs",
        "shape",
        lambda: continuation_logprobs(_model(), _tok(), ["a b", "c"], [" a"]),
        ValueError,
        "prompts",
    ),
    (
        "continuation_logprobs",
        "empty",
        lambda: continuation_logprobs(_model(), _tok(), [], []),
        ValueError,
        "prompts",
    ),
    (
        "continuation_logprobs",
        "empty",
        lambda: continuation_logprobs(_model(), _tok(), ["a b"], [""]),
        ValueError,
        "continuations",
    ),
    (
        "continuation_logprobs",
        "type",
        lambda: continuation_logprobs(_model(), _tok(), "a b", " c"),
        TypeError,
        "prompts",
    ),
]

EXEMPT = {
    "MarkedBatch": "a record returned by encode_with_markers; it takes no user data",
}
