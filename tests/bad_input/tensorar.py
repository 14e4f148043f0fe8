"""Bad-input cases for the TensorAR room (read by tests/framework/test_bad_input.py)."""

import numpy as np
import torch

from iclr26.generative.tensorar import (
    DigitEvaluator,
    DiscreteTensorNoiser,
    HFCausalLMBase,
    LlamaGenBase,
    LlamaGenConfig,
    LlamaGenGPT,
    TensorARWrapper,
    TensorInputEncoder,
    TensorOutputDecoder,
    TinyARImageModel,
    VQTokenizer,
    build_windows,
    frechet_distance,
    load_digits_split,
)

NAN, INF = float("nan"), float("inf")
TOK = np.zeros((4, 4), dtype=np.int64)
LAB = np.array([0, 1, 0, 1])
IMG = np.random.default_rng(0).integers(0, 17, size=(6, 8, 8)).astype(float)


def _base():
    return TinyARImageModel(vocab=4, seq_len=4, n_classes=2, d=8, layers=1, heads=2)


def _tar(**kw):
    return TensorARWrapper(_base(), k=2, **kw)


def _nan_img():
    x = IMG.copy()
    x[0, 0, 0] = NAN
    return x


def _tiny_hf():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm.config import tiny_llama_config

    return LlamaForCausalLM(tiny_llama_config("test", vocab_size=16))


def _fitted_vq():
    return VQTokenizer(codebook_size=4, patch=2).fit(IMG)


def _fitted_eval():
    return DigitEvaluator(epochs=1).fit(IMG, np.array([0, 1, 0, 1, 0, 1]))


CASES = [
    # TensorARWrapper
    ("TensorARWrapper", "range", lambda: TensorARWrapper(_base(), k=0), ValueError, "k"),
    ("TensorARWrapper", "type", lambda: TensorARWrapper(_base(), k=2.5), TypeError, "k"),
    ("TensorARWrapper", "type", lambda: TensorARWrapper(torch.nn.Linear(2, 2)), TypeError, "base"),
    ("TensorARWrapper", "range", lambda: _tar(encoder="mlp"), ValueError, "encoder"),
    ("TensorARWrapper", "range", lambda: _tar(decoder="conv"), ValueError, "decoder"),
    ("TensorARWrapper", "range", lambda: _tar(first_step="zero"), ValueError, "first_step"),
    ("TensorARWrapper", "type", lambda: _tar(first_step=1), ValueError, "first_step"),
    (
        "TensorARWrapper",
        "range",
        lambda: _tar(draft_sampling="top"),
        ValueError,
        "draft_sampling",
    ),
    ("TensorARWrapper", "type", lambda: _tar(noiser="uniform"), TypeError, "noiser"),
    ("TensorARWrapper", "shape", lambda: _tar(slot_weights=[1.0]), ValueError, "slot_weights"),
    ("TensorARWrapper", "nan", lambda: _tar(slot_weights=[1.0, NAN]), ValueError, "slot_weights"),
    ("TensorARWrapper", "range", lambda: _tar(slot_weights=[0.0, 0.0]), ValueError, "slot_weights"),
    ("TensorARWrapper", "range", lambda: _tar().fit(TOK + 9, LAB, steps=1), ValueError, "tokens"),
    (
        "TensorARWrapper",
        "shape",
        lambda: _tar().fit(TOK[:, :3], LAB, steps=1),
        ValueError,
        "tokens",
    ),
    (
        "TensorARWrapper",
        "empty",
        lambda: _tar().fit(TOK[:0], LAB[:0], steps=1),
        ValueError,
        "tokens",
    ),
    ("TensorARWrapper", "nan", lambda: _tar().fit(TOK * NAN, LAB, steps=1), ValueError, "tokens"),
    ("TensorARWrapper", "shape", lambda: _tar().fit(TOK, LAB[:3], steps=1), ValueError, "length"),
    ("TensorARWrapper", "range", lambda: _tar().fit(TOK, LAB + 5, steps=1), ValueError, "labels"),
    ("TensorARWrapper", "range", lambda: _tar().fit(TOK, LAB, steps=0), ValueError, "steps"),
    ("TensorARWrapper", "nan", lambda: _tar().fit(TOK, LAB, steps=1, lr=NAN), ValueError, "lr"),
    (
        "TensorARWrapper",
        "range",
        lambda: _tar().fit(TOK, LAB, class_dropout=2),
        ValueError,
        "class_dropout",
    ),
    (
        "TensorARWrapper",
        "range",
        lambda: _tar().generate(LAB, temperature=-1),
        ValueError,
        "temperature",
    ),
    (
        "TensorARWrapper",
        "nan",
        lambda: _tar().generate(LAB, cfg_scale=NAN),
        ValueError,
        "cfg_scale",
    ),
    ("TensorARWrapper", "range", lambda: _tar().generate(LAB, top_k=0), ValueError, "top_k"),
    ("TensorARWrapper", "empty", lambda: _tar().generate(LAB[:0]), ValueError, "labels"),
    ("TensorARWrapper", "range", lambda: _tar().generate(LAB + 2), ValueError, "labels"),
    ("TensorARWrapper", "type", lambda: _tar().generate(LAB, use_cache=1), TypeError, "use_cache"),
    ("TensorARWrapper", "type", lambda: _tar().generate(LAB, generator=5), TypeError, "generator"),
    (
        "TensorARWrapper",
        "shape",
        lambda: _tar()(torch.tensor([0]), torch.zeros(1, 4, 3, dtype=torch.long)),
        ValueError,
        "windows",
    ),
    (
        "TensorARWrapper",
        "dtype",
        lambda: _tar()(torch.tensor([0]), torch.zeros(1, 4, 2)),
        TypeError,
        "windows",
    ),
    # TensorARWrapper.from_pretrained
    (
        "TensorARWrapper",
        "range",
        lambda: TensorARWrapper.from_pretrained("some/model", k=0),
        ValueError,
        "k",
    ),
    (
        "TensorARWrapper",
        "other",
        lambda: TensorARWrapper.from_pretrained("/no/such/folder", seq_len=4),
        FileNotFoundError,
        "source",
    ),
    ("TensorARWrapper", "type", lambda: TensorARWrapper.from_pretrained(3), TypeError, "source"),
    (
        "TensorARWrapper",
        "range",
        lambda: TensorARWrapper.from_pretrained("some/model", format="onnx"),
        ValueError,
        "format",
    ),
    (
        "TensorARWrapper",
        "type",
        lambda: TensorARWrapper.from_pretrained("some/model", strict="yes"),
        TypeError,
        "strict",
    ),
    (
        "TensorARWrapper",
        "dtype",
        lambda: TensorARWrapper.from_pretrained("some/model", dtype="int8"),
        ValueError,
        "dtype",
    ),
    ("TensorARWrapper", "type", lambda: _tar().save_pretrained(3), TypeError, "folder"),
    # pretrained bases
    ("LlamaGenConfig", "range", lambda: LlamaGenConfig(dim=30, n_head=4), ValueError, "dim"),
    ("LlamaGenConfig", "nan", lambda: LlamaGenConfig(rope_base=NAN), ValueError, "rope_base"),
    ("LlamaGenConfig", "shape", lambda: LlamaGenConfig(block_size=10), ValueError, "block_size"),
    ("LlamaGenConfig", "range", lambda: LlamaGenConfig.preset("GPT-Z"), ValueError, "name"),
    (
        "LlamaGenConfig",
        "range",
        lambda: LlamaGenConfig(class_dropout_prob=0.0),
        ValueError,
        "class_dropout_prob",
    ),
    ("LlamaGenGPT", "type", lambda: LlamaGenGPT({"dim": 8}), TypeError, "config"),
    ("LlamaGenBase", "type", lambda: LlamaGenBase(torch.nn.Linear(2, 2)), TypeError, "net"),
    (
        "HFCausalLMBase",
        "type",
        lambda: HFCausalLMBase(torch.nn.Linear(2, 2), seq_len=4),
        TypeError,
        "model",
    ),
    (
        "HFCausalLMBase",
        "range",
        lambda: HFCausalLMBase(_tiny_hf(), seq_len=0),
        ValueError,
        "seq_len",
    ),
    (
        "HFCausalLMBase",
        "range",
        lambda: HFCausalLMBase(_tiny_hf(), seq_len=4, token_offset=20),
        ValueError,
        "token_offset",
    ),
    (
        "HFCausalLMBase",
        "nan",
        lambda: HFCausalLMBase(_tiny_hf(), seq_len=4, class_token_ids=[1.0, NAN]),
        ValueError,
        "class_token_ids",
    ),
    # TinyARImageModel
    ("TinyARImageModel", "range", lambda: TinyARImageModel(vocab=1), ValueError, "vocab"),
    ("TinyARImageModel", "range", lambda: TinyARImageModel(d=10, heads=4), ValueError, "heads"),
    ("TinyARImageModel", "type", lambda: TinyARImageModel(seq_len=4.5), TypeError, "seq_len"),
    ("TinyARImageModel", "range", lambda: _base().fit(TOK - 1, LAB), ValueError, "tokens"),
    ("TinyARImageModel", "inf", lambda: _base().fit((TOK + 1) * INF, LAB), ValueError, "tokens"),
    ("TinyARImageModel", "dtype", lambda: _base().fit(TOK + 0.5, LAB), TypeError, "tokens"),
    (
        "TinyARImageModel",
        "range",
        lambda: _base().fit(TOK, LAB, batch_size=0),
        ValueError,
        "batch_size",
    ),
    (
        "TinyARImageModel",
        "nan",
        lambda: _base().generate(LAB, temperature=NAN),
        ValueError,
        "temperature",
    ),
    ("TinyARImageModel", "shape", lambda: _base().generate(LAB[:, None]), ValueError, "labels"),
    (
        "TinyARImageModel",
        "type",
        lambda: _base().generate(LAB, generator=5),
        TypeError,
        "generator",
    ),
    # DiscreteTensorNoiser
    ("DiscreteTensorNoiser", "nan", lambda: DiscreteTensorNoiser(level=NAN), ValueError, "level"),
    (
        "DiscreteTensorNoiser",
        "range",
        lambda: DiscreteTensorNoiser(schedule="constant", level=0.0),
        ValueError,
        "level",
    ),
    (
        "DiscreteTensorNoiser",
        "range",
        lambda: DiscreteTensorNoiser(schedule="cubic"),
        ValueError,
        "schedule",
    ),
    (
        "DiscreteTensorNoiser",
        "range",
        lambda: DiscreteTensorNoiser(kernel="gauss"),
        ValueError,
        "kernel",
    ),
    (
        "DiscreteTensorNoiser",
        "nan",
        lambda: DiscreteTensorNoiser(tau_max=NAN),
        ValueError,
        "tau_max",
    ),
    (
        "DiscreteTensorNoiser",
        "range",
        lambda: DiscreteTensorNoiser(tau_max=1.5),
        ValueError,
        "tau_max",
    ),
    ("DiscreteTensorNoiser", "range", lambda: DiscreteTensorNoiser(lam=0), ValueError, "lam"),
    ("DiscreteTensorNoiser", "range", lambda: DiscreteTensorNoiser().beta(0), ValueError, "k"),
    (
        "DiscreteTensorNoiser",
        "dtype",
        lambda: DiscreteTensorNoiser()(torch.zeros(1, 2, 3), 4, 4),
        TypeError,
        "windows",
    ),
    (
        "DiscreteTensorNoiser",
        "shape",
        lambda: DiscreteTensorNoiser()(torch.zeros(2, 3, dtype=torch.long), 4, 4),
        ValueError,
        "windows",
    ),
    (
        "DiscreteTensorNoiser",
        "range",
        lambda: DiscreteTensorNoiser()(torch.zeros(1, 2, 3, dtype=torch.long), 0, 4),
        ValueError,
        "vocab",
    ),
    # encoder / decoder
    ("TensorInputEncoder", "range", lambda: TensorInputEncoder(8, 0), ValueError, "k"),
    (
        "TensorInputEncoder",
        "range",
        lambda: TensorInputEncoder(8, 2, kind="conv"),
        ValueError,
        "kind",
    ),
    (
        "TensorInputEncoder",
        "range",
        lambda: TensorInputEncoder(10, 2, heads=4),
        ValueError,
        "heads",
    ),
    ("TensorOutputDecoder", "range", lambda: TensorOutputDecoder(8, 0), ValueError, "k"),
    (
        "TensorOutputDecoder",
        "range",
        lambda: TensorOutputDecoder(8, 2, hidden=0),
        ValueError,
        "hidden",
    ),
    # build_windows
    (
        "build_windows",
        "range",
        lambda: build_windows(torch.zeros(1, 4, dtype=torch.long), 0, 4),
        ValueError,
        "k",
    ),
    ("build_windows", "dtype", lambda: build_windows(torch.zeros(1, 4), 2, 4), TypeError, "tokens"),
    (
        "build_windows",
        "shape",
        lambda: build_windows(torch.zeros(4, dtype=torch.long), 2, 4),
        ValueError,
        "tokens",
    ),
    (
        "build_windows",
        "range",
        lambda: build_windows(-torch.ones(1, 4, dtype=torch.long), 2, 4),
        ValueError,
        "tokens",
    ),
    # VQTokenizer
    ("VQTokenizer", "range", lambda: VQTokenizer(codebook_size=1), ValueError, "codebook_size"),
    ("VQTokenizer", "range", lambda: VQTokenizer(patch=0), ValueError, "patch"),
    ("VQTokenizer", "nan", lambda: VQTokenizer(4).fit(_nan_img()), ValueError, "images"),
    ("VQTokenizer", "shape", lambda: VQTokenizer(4, patch=3).fit(IMG), ValueError, "patch"),
    ("VQTokenizer", "shape", lambda: VQTokenizer(4).fit(np.zeros((3, 8, 6))), ValueError, "images"),
    ("VQTokenizer", "empty", lambda: VQTokenizer(4).fit(np.zeros((0, 64))), ValueError, "images"),
    ("VQTokenizer", "other", lambda: VQTokenizer(4).encode(IMG), RuntimeError, "fit"),
    (
        "VQTokenizer",
        "range",
        lambda: _fitted_vq().decode(np.full((2, 16), 4)),
        ValueError,
        "tokens",
    ),
    (
        "VQTokenizer",
        "shape",
        lambda: _fitted_vq().decode(np.zeros((2, 15), dtype=int)),
        ValueError,
        "tokens",
    ),
    (
        "VQTokenizer",
        "shape",
        lambda: _fitted_vq().encode(np.zeros((2, 4, 4))),
        ValueError,
        "images",
    ),
    # evaluator / metric
    ("DigitEvaluator", "range", lambda: DigitEvaluator(epochs=0), ValueError, "epochs"),
    ("DigitEvaluator", "nan", lambda: DigitEvaluator(lr=NAN), ValueError, "lr"),
    (
        "DigitEvaluator",
        "range",
        lambda: DigitEvaluator().fit(IMG * 2, LAB[:1].repeat(6)),
        ValueError,
        "images",
    ),
    (
        "DigitEvaluator",
        "nan",
        lambda: DigitEvaluator().fit(_nan_img(), np.zeros(6)),
        ValueError,
        "images",
    ),
    (
        "DigitEvaluator",
        "shape",
        lambda: DigitEvaluator().fit(IMG, np.zeros(5)),
        ValueError,
        "length",
    ),
    (
        "DigitEvaluator",
        "shape",
        lambda: _fitted_eval().features(np.zeros((2, 6, 6))),
        ValueError,
        "images",
    ),
    ("DigitEvaluator", "other", lambda: DigitEvaluator().predict(IMG), RuntimeError, "fit"),
    (
        "frechet_distance",
        "nan",
        lambda: frechet_distance(np.full((3, 2), NAN), np.ones((3, 2))),
        ValueError,
        "feats_a",
    ),
    (
        "frechet_distance",
        "shape",
        lambda: frechet_distance(np.ones((3, 2)), np.ones((3, 3))),
        ValueError,
        "feats_b",
    ),
    (
        "frechet_distance",
        "empty",
        lambda: frechet_distance(np.ones((1, 2)), np.ones((3, 2))),
        ValueError,
        "feats_a",
    ),
    (
        "frechet_distance",
        "inf",
        lambda: frechet_distance(np.ones((3, 2)), np.full((3, 2), INF)),
        ValueError,
        "feats_b",
    ),
    # data
    ("load_digits_split", "range", lambda: load_digits_split(test_size=5), ValueError, "test_size"),
    ("load_digits_split", "type", lambda: load_digits_split(seed=0.5), TypeError, "seed"),
]

EXEMPT = {}
