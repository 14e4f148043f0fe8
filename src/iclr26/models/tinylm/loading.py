"""One entry point for "some causal LM": a tiny size name or anything ``from_pretrained`` takes."""

from __future__ import annotations

import os
from pathlib import Path

from iclr26.models.tinylm.config import PRETRAIN_STEPS, SIZES, check_size
from iclr26.models.tinylm.train import pretrain_dir, pretrain_tiny_lm


def load_causal_lm(name_or_path_or_size: str | os.PathLike, **from_pretrained_kwargs):
    """``(model, tokenizer)``: a size name (``"test"``, ``"quick"``, ``"full"``) loads the cached
    tiny Llama (training it on a cold cache); anything else goes to
    ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained``."""
    if not isinstance(name_or_path_or_size, (str, os.PathLike)):
        raise TypeError("load_causal_lm takes a size name, a model id or a local path")
    name = os.fspath(name_or_path_or_size)
    if name in SIZES:
        return pretrain_tiny_lm(name)
    if not name:
        raise ValueError("empty model name")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(name, **from_pretrained_kwargs)
    model.eval()
    tok = AutoTokenizer.from_pretrained(name)
    return model, tok


def warmup(size: str = "quick", progress=None, **pretrain_kwargs) -> Path:
    """Train and cache the tiny LM of ``size`` (a no-op on a warm cache); returns its folder.
    ``progress(done, total, note)`` is told after every training step. Other keyword arguments
    go to :func:`pretrain_tiny_lm` (defaults: the size's fixed settings)."""
    check_size(size)
    if progress is not None:
        total = int(pretrain_kwargs.get("steps") or PRETRAIN_STEPS[size])
        pretrain_kwargs["progress"] = lambda step, loss: progress(
            step + 1, total, f"loss {loss:.3f}"
        )
    pretrain_tiny_lm(size, **pretrain_kwargs)
    keyed = {k: v for k, v in pretrain_kwargs.items() if k not in ("threads", "progress", "cache")}
    return pretrain_dir(size, **keyed)
