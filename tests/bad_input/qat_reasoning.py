"""Bad-input cases for the QAT-for-reasoning room (read by tests/framework/test_bad_input.py)."""

import copy

import numpy as np
import torch
from torch import nn

from iclr26.llm.qat_reasoning import (
    EvalSuite,
    MixedDomainCalibration,
    QuantLinear,
    ReasoningQAT,
    RewardRectificationLoss,
    arithmetic_problems,
    awq_clip_search,
    awq_quantize,
    awq_scale,
    awq_search_scale,
    blockwise_calibrate,
    dequantize_model,
    folder_bytes,
    gptq_layer,
    gptq_quantize,
    lm_scores,
    load_quantized,
    pack_bits,
    parse_answer,
    quant_layers,
    quantize_model,
    reasoning_exact_match,
    reasoning_teacher,
    rtn_quantize,
    save_quantized,
    storage_bits,
    teacher_examples,
    unpack_bits,
)

NAN = float("nan")
INF = float("inf")


def _model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(cfg).eval()


def _nan_model():
    m = _model()
    with torch.no_grad():
        m.model.layers[0].mlp.up_proj.weight[0, 0] = NAN
    return m


def _qmodel():
    return quantize_model(_model(), 4, 8)


def _ids(n=2, t=8, high=32):
    return torch.randint(0, high, (n, t), generator=torch.Generator().manual_seed(0))


class _Tok:
    eos_token_id, pad_token_id = 1, 0

    def encode(self, text, add_special_tokens=False):
        return [2 + ord(c) % 20 for c in text]

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(65 + i % 26) for i in ids)


def _logits(nan=False):
    z = torch.randn(2, 4, 8)
    if nan:
        z[0, 0, 0] = NAN
    return z


_LABELS = torch.randint(0, 8, (2, 4))


def _calibrate_half_modified():
    """Token ids beyond the vocabulary are refused before any block is touched."""
    fp = _model()
    q = quantize_model(copy.deepcopy(fp), 2, 8)
    blockwise_calibrate(q, fp, _ids(high=99))


CASES = [
    # the quantizer and the module swap
    ("QuantLinear", "range", lambda: QuantLinear(16, 4, bits=5), ValueError, "bits"),
    ("QuantLinear", "range", lambda: QuantLinear(16, 4, bits=1), ValueError, "bits"),
    ("QuantLinear", "type", lambda: QuantLinear(16, 4, bits=2.5), TypeError, "bits"),
    ("QuantLinear", "range", lambda: QuantLinear(16, 4, group_size=0), ValueError, "group_size"),
    ("QuantLinear", "range", lambda: QuantLinear(0, 4), ValueError, "in_features"),
    (
        "QuantLinear",
        "type",
        lambda: QuantLinear.from_linear(nn.Conv1d(2, 2, 1)),
        TypeError,
        "linear",
    ),
    (
        "QuantLinear",
        "shape",
        lambda: QuantLinear(16, 4, 4, 8).load_export(
            torch.zeros(4, 15, dtype=torch.uint8), torch.ones(4, 2), torch.zeros(4, 2)
        ),
        ValueError,
        "codes",
    ),
    (
        "QuantLinear",
        "range",
        lambda: QuantLinear(16, 4, 2, 8).load_export(
            torch.full((4, 16), 9, dtype=torch.uint8), torch.ones(4, 2), torch.zeros(4, 2)
        ),
        ValueError,
        "codes",
    ),
    (
        "QuantLinear",
        "nan",
        lambda: QuantLinear(16, 4, 4, 8).load_export(
            torch.zeros(4, 16, dtype=torch.uint8), torch.full((4, 2), NAN), torch.zeros(4, 2)
        ),
        ValueError,
        "scale",
    ),
    ("quantize_model", "range", lambda: quantize_model(_model(), 6, 8), ValueError, "bits"),
    ("quantize_model", "range", lambda: quantize_model(_model(), 16, 8), ValueError, "bits"),
    ("quantize_model", "range", lambda: quantize_model(_model(), 2, 0), ValueError, "group_size"),
    ("quantize_model", "type", lambda: quantize_model("llama", 2, 8), TypeError, "model"),
    ("quantize_model", "type", lambda: quantize_model(nn.Linear(4, 4), 2, 8), TypeError, "model"),
    (
        "quantize_model",
        "other",
        lambda: quantize_model(_model(), 2, 8, targets=["model.layers.0.mlp.up_proj", "nope"]),
        ValueError,
        "targets",
    ),
    (
        "quantize_model",
        "type",
        lambda: quantize_model(_model(), 2, 8, targets=["model.layers.0.input_layernorm"]),
        TypeError,
        "targets",
    ),
    (
        "quantize_model",
        "empty",
        lambda: quantize_model(_model(), 2, 8, targets=[]),
        ValueError,
        "targets",
    ),
    ("quantize_model", "nan", lambda: quantize_model(_nan_model(), 2, 8), ValueError, "targets"),
    ("quantize_model", "other", lambda: quantize_model(_qmodel(), 2, 8), ValueError, "targets"),
    ("rtn_quantize", "range", lambda: rtn_quantize(_model(), 7, 8), ValueError, "bits"),
    ("rtn_quantize", "type", lambda: rtn_quantize(None, 2, 8), TypeError, "model"),
    ("dequantize_model", "other", lambda: dequantize_model(_model()), ValueError, "model"),
    ("quant_layers", "type", lambda: quant_layers("model"), TypeError, "model"),
    # GPTQ
    ("gptq_quantize", "range", lambda: gptq_quantize(_model(), _ids(), 5, 8), ValueError, "bits"),
    (
        "gptq_quantize",
        "range",
        lambda: gptq_quantize(_model(), _ids(), 2, 8, damp=0),
        ValueError,
        "damp",
    ),
    (
        "gptq_quantize",
        "range",
        lambda: gptq_quantize(_model(), _ids(), 2, 8, damp=NAN),
        ValueError,
        "damp",
    ),
    (
        "gptq_quantize",
        "range",
        lambda: gptq_quantize(_model(), _ids(high=99), 2, 8),
        ValueError,
        "calib_ids",
    ),
    (
        "gptq_quantize",
        "shape",
        lambda: gptq_quantize(_model(), _ids()[0], 2, 8),
        ValueError,
        "calib_ids",
    ),
    (
        "gptq_quantize",
        "dtype",
        lambda: gptq_quantize(_model(), _ids().float(), 2, 8),
        TypeError,
        "calib_ids",
    ),
    (
        "gptq_quantize",
        "empty",
        lambda: gptq_quantize(_model(), torch.zeros(0, 8, dtype=torch.long), 2, 8),
        ValueError,
        "calib_ids",
    ),
    (
        "gptq_layer",
        "nan",
        lambda: gptq_layer(torch.full((2, 4), NAN), torch.eye(4), 2, 4),
        ValueError,
        "weight",
    ),
    (
        "gptq_layer",
        "shape",
        lambda: gptq_layer(torch.ones(2, 4), torch.eye(3), 2, 4),
        ValueError,
        "hessian",
    ),
    (
        "gptq_layer",
        "inf",
        lambda: gptq_layer(torch.ones(2, 4), torch.eye(4) * INF, 2, 4),
        ValueError,
        "hessian",
    ),
    (
        "gptq_layer",
        "range",
        lambda: gptq_layer(torch.ones(2, 4), torch.eye(4), 3.5, 4),
        TypeError,
        "bits",
    ),
    # stage 1
    ("blockwise_calibrate", "range", _calibrate_half_modified, ValueError, "calib_ids"),
    (
        "blockwise_calibrate",
        "other",
        lambda: blockwise_calibrate(_model(), _model(), _ids()),
        ValueError,
        "model_q",
    ),
    (
        "blockwise_calibrate",
        "other",
        lambda: blockwise_calibrate(_qmodel(), _qmodel(), _ids()),
        ValueError,
        "model_fp",
    ),
    (
        "blockwise_calibrate",
        "range",
        lambda: blockwise_calibrate(_qmodel(), _model(), _ids(), lr_quant=NAN),
        ValueError,
        "lr_quant",
    ),
    (
        "blockwise_calibrate",
        "range",
        lambda: blockwise_calibrate(_qmodel(), _model(), _ids(), epochs=-1),
        ValueError,
        "epochs",
    ),
    (
        "blockwise_calibrate",
        "shape",
        lambda: blockwise_calibrate(_qmodel(), _model(), _ids(2, 1)),
        ValueError,
        "calib_ids",
    ),
    (
        "MixedDomainCalibration",
        "range",
        lambda: MixedDomainCalibration(torch.arange(100), torch.arange(100), 1.5, 4, 8),
        ValueError,
        "ratio_reasoning",
    ),
    (
        "MixedDomainCalibration",
        "nan",
        lambda: MixedDomainCalibration(torch.arange(100), torch.arange(100), NAN, 4, 8),
        ValueError,
        "ratio_reasoning",
    ),
    (
        "MixedDomainCalibration",
        "empty",
        lambda: MixedDomainCalibration([], ["text"], 0.8, 4, 8, tokenizer=_Tok()),
        ValueError,
        "reasoning",
    ),
    (
        "MixedDomainCalibration",
        "other",
        lambda: MixedDomainCalibration(torch.arange(5), torch.arange(100), 0.8, 4, 8),
        ValueError,
        "reasoning",
    ),
    (
        "MixedDomainCalibration",
        "dtype",
        lambda: MixedDomainCalibration(np.ones(50), torch.arange(100), 0.8, 4, 8),
        TypeError,
        "reasoning",
    ),
    (
        "MixedDomainCalibration",
        "range",
        lambda: MixedDomainCalibration(torch.arange(100), torch.arange(100), 0.8, 0, 8),
        ValueError,
        "n",
    ),
    # stage 2 loss and pipeline
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(alpha=-1),
        ValueError,
        "alpha",
    ),
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(beta=NAN),
        ValueError,
        "beta",
    ),
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(kl_topk=0),
        ValueError,
        "kl_topk",
    ),
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(weight_source="oracle"),
        ValueError,
        "weight_source",
    ),
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(alpha=0, beta=0),
        ValueError,
        "alpha",
    ),
    (
        "RewardRectificationLoss",
        "nan",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(nan=True), _logits(), _LABELS),
        ValueError,
        "student_logits",
    ),
    (
        "RewardRectificationLoss",
        "shape",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(), torch.randn(2, 4, 9), _LABELS),
        ValueError,
        "teacher_logits",
    ),
    (
        "RewardRectificationLoss",
        "range",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(), _logits(), _LABELS + 8),
        ValueError,
        "labels",
    ),
    (
        "RewardRectificationLoss",
        "dtype",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(), _logits(), _LABELS.float()),
        TypeError,
        "labels",
    ),
    (
        "RewardRectificationLoss",
        "other",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(), None, _LABELS),
        ValueError,
        "teacher_logits",
    ),
    (
        "RewardRectificationLoss",
        "empty",
        lambda: RewardRectificationLoss(kl_topk=4)(_logits(), _logits(), torch.full((2, 4), -100)),
        ValueError,
        "labels",
    ),
    ("ReasoningQAT", "range", lambda: ReasoningQAT(bits=5), ValueError, "bits"),
    ("ReasoningQAT", "range", lambda: ReasoningQAT(bits=1), ValueError, "bits"),
    ("ReasoningQAT", "range", lambda: ReasoningQAT(ratio_reasoning=-0.1), ValueError, "ratio"),
    ("ReasoningQAT", "range", lambda: ReasoningQAT(lr_weight=NAN), ValueError, "lr_weight"),
    ("ReasoningQAT", "range", lambda: ReasoningQAT(loss="PPO"), ValueError, "loss"),
    (
        "ReasoningQAT",
        "type",
        lambda: ReasoningQAT().fit(_qmodel(), _Tok(), [], []),
        ValueError,
        "teacher",
    ),
    (
        "ReasoningQAT",
        "empty",
        lambda: ReasoningQAT(bits=2, group_size=8).finetune(_qmodel(), _model(), [], _Tok()),
        ValueError,
        "sft_pairs",
    ),
    # tasks, evaluation, teacher
    ("arithmetic_problems", "range", lambda: arithmetic_problems(0), ValueError, "n"),
    ("arithmetic_problems", "range", lambda: arithmetic_problems(3, k=0), ValueError, "k"),
    ("arithmetic_problems", "empty", lambda: arithmetic_problems(3, k=[]), ValueError, "k"),
    ("parse_answer", "type", lambda: parse_answer(None), TypeError, "text"),
    (
        "EvalSuite",
        "other",
        lambda: EvalSuite.build(np.arange(10), n_problems=2, n_windows=2, seq_len=8),
        ValueError,
        "test_stream",
    ),
    (
        "EvalSuite",
        "range",
        lambda: EvalSuite.build(np.arange(100), n_problems=0, n_windows=2, seq_len=8),
        ValueError,
        "n_problems",
    ),
    (
        "reasoning_exact_match",
        "empty",
        lambda: reasoning_exact_match(_model(), _Tok(), []),
        ValueError,
        "problems",
    ),
    (
        "reasoning_exact_match",
        "range",
        lambda: reasoning_exact_match(_model(), _Tok(), arithmetic_problems(1), max_new_tokens=0),
        ValueError,
        "max_new_tokens",
    ),
    ("lm_scores", "dtype", lambda: lm_scores(_model(), _ids().float()), TypeError, "windows"),
    ("lm_scores", "shape", lambda: lm_scores(_model(), _ids()[0]), ValueError, "windows"),
    (
        "teacher_examples",
        "range",
        lambda: teacher_examples(_Tok(), np.arange(500), n=10, code_share=1.5),
        ValueError,
        "code_share",
    ),
    (
        "teacher_examples",
        "other",
        lambda: teacher_examples(_Tok(), np.arange(10), n=10),
        ValueError,
        "stream",
    ),
    (
        "reasoning_teacher",
        "range",
        lambda: reasoning_teacher(
            _model(), _Tok(), np.arange(500), steps=0, n_examples=4, cache_name=None
        ),
        ValueError,
        "steps",
    ),
    (
        "reasoning_teacher",
        "range",
        lambda: reasoning_teacher(
            _model(),
            _Tok(),
            np.arange(500),
            steps=1,
            n_examples=4,
            cache_name=None,
            anchor_weight=NAN,
        ),
        ValueError,
        "anchor_weight",
    ),
    # export
    ("pack_bits", "range", lambda: pack_bits(torch.tensor([0, 4]), 2), ValueError, "codes"),
    ("pack_bits", "range", lambda: pack_bits(torch.tensor([0, 1]), 5), ValueError, "bits"),
    (
        "unpack_bits",
        "range",
        lambda: unpack_bits(torch.zeros(1, dtype=torch.uint8), 2, -1),
        ValueError,
        "count",
    ),
    (
        "unpack_bits",
        "other",
        lambda: unpack_bits(torch.zeros(1, dtype=torch.uint8), 2, 9),
        ValueError,
        "packed",
    ),
    (
        "save_quantized",
        "other",
        lambda: save_quantized(_model(), "unused-folder"),
        ValueError,
        "model",
    ),
    (
        "load_quantized",
        "other",
        lambda: load_quantized("/nonexistent/qat-folder"),
        FileNotFoundError,
        "folder",
    ),
    (
        "folder_bytes",
        "other",
        lambda: folder_bytes("/nonexistent/qat-folder"),
        ValueError,
        "folder",
    ),
    ("storage_bits", "other", lambda: storage_bits(_model()), ValueError, "model"),
    # AWQ
    ("awq_quantize", "range", lambda: awq_quantize(_model(), _ids(), 5, 8), ValueError, "bits"),
    (
        "awq_quantize",
        "range",
        lambda: awq_quantize(_model(), _ids(), 2, 8, n_grid=0),
        ValueError,
        "n_grid",
    ),
    (
        "awq_quantize",
        "range",
        lambda: awq_quantize(_model(), _ids(high=99), 2, 8),
        ValueError,
        "calib_ids",
    ),
    (
        "awq_quantize",
        "dtype",
        lambda: awq_quantize(_model(), _ids().float(), 2, 8),
        TypeError,
        "calib_ids",
    ),
    ("awq_quantize", "nan", lambda: awq_quantize(_nan_model(), _ids(), 2, 8), ValueError, "weight"),
    ("awq_quantize", "type", lambda: awq_quantize("model", _ids(), 2, 8), TypeError, "model"),
    (
        "awq_quantize",
        "range",
        lambda: awq_quantize(_model(), _ids(), 2, 8, max_shrink=NAN),
        ValueError,
        "max_shrink",
    ),
    ("awq_scale", "shape", lambda: awq_scale(_model(), _ids()[0], 2, 8), ValueError, "calib_ids"),
    (
        "awq_scale",
        "empty",
        lambda: awq_scale(_model(), torch.zeros(0, 8, dtype=torch.long), 2, 8),
        ValueError,
        "calib_ids",
    ),
    (
        "awq_scale",
        "other",
        lambda: awq_scale(_model(), _ids(), 2, 8, unfoldable="x"),
        ValueError,
        "unfoldable",
    ),
    (
        "awq_scale",
        "other",
        lambda: awq_scale(_model(), _ids(), 2, 8, targets=["lm_x"]),
        ValueError,
        "targets",
    ),
    (
        "awq_search_scale",
        "nan",
        lambda: awq_search_scale(torch.randn(4, 8), torch.full((3, 8), NAN), 2, 8),
        ValueError,
        "x",
    ),
    (
        "awq_search_scale",
        "shape",
        lambda: awq_search_scale(torch.randn(4, 8), torch.randn(3, 6), 2, 8),
        ValueError,
        "x",
    ),
    (
        "awq_search_scale",
        "dtype",
        lambda: awq_search_scale(torch.ones(4, 8, dtype=torch.long), torch.randn(3, 8), 2, 8),
        TypeError,
        "weight",
    ),
    (
        "awq_clip_search",
        "inf",
        lambda: awq_clip_search(torch.full((4, 8), INF), torch.randn(3, 8), 2, 8),
        ValueError,
        "weight",
    ),
    (
        "awq_clip_search",
        "range",
        lambda: awq_clip_search(torch.randn(4, 8), torch.randn(3, 8), 2, 8, max_shrink=1.0),
        ValueError,
        "max_shrink",
    ),
    (
        "awq_clip_search",
        "empty",
        lambda: awq_clip_search(torch.randn(4, 8), torch.randn(0, 8), 2, 8),
        ValueError,
        "x",
    ),
    (
        "QuantLinear",
        "range",
        lambda: QuantLinear(8, 4, bits=4, group_size=8).set_input_scale(-torch.ones(8)),
        ValueError,
        "scale",
    ),
]

EXEMPT = {
    "ArithmeticProblem": "a frozen record (operands, operations) built by arithmetic_problems, "
    "which validates its inputs",
    "CalibrationReport": "a plain record returned by blockwise_calibrate; takes no user data",
    "AWQGroup": "a plain record inside AWQReport; takes no user data",
    "AWQReport": "a plain record returned by awq_scale / awq_quantize; takes no user data",
}
