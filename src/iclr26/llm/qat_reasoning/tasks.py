"""The two knowledge domains of the tiny setting: modular-arithmetic chain-of-thought
(the "reasoning" domain the teacher gains in post-training) and stdlib code (the
"pre-training" domain), plus the mixed-domain calibration set of stage 1.

A problem with k operations reads
``Q: 7 +5 *3 -4 =?`` and its chain-of-thought answer
``<think> 7+5=2 ; 2*3=6 ; 6-4=2 </think> <answer> 2 </answer>``; operands and every
intermediate result are digits mod 10, the operations are +, - and *.

The arithmetic problems live in the shared :mod:`iclr26.data.synth` (module ``arithmetic``)
and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.data.synth.arithmetic import (  # noqa: F401
    _ANSWER,
    _APPLY,
    OPS,
    ArithmeticProblem,
    arithmetic_problems,
    parse_answer,
)


def _as_stream(texts, tokenizer, name: str) -> np.ndarray:
    """One token stream from strings (joined by <eos>) or from a 1-D array/tensor of ids."""
    if isinstance(texts, torch.Tensor):
        V.check_tensor(texts, name, ndim=1, integer=True, low=0)
        return texts.cpu().numpy().astype(np.int64)
    if isinstance(texts, np.ndarray):
        if texts.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer token ids, got dtype {texts.dtype}")
        return V.check_array(texts, name, ndim=1, dtype=None, low=0).astype(np.int64)
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a list of strings or a 1-D array of token ids")
    if not texts:
        raise ValueError(f"{name} is empty")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{name} must be a list of strings")
    if tokenizer is None:
        raise ValueError(f"tokenizer is needed to encode {name}")
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    for text in texts:
        ids.extend(tokenizer.encode(text, add_special_tokens=False))
        if eos is not None:
            ids.append(eos)
    return np.asarray(ids, dtype=np.int64)


class MixedDomainCalibration:
    """Stage-1 calibration set: ``round(ratio_reasoning * n)`` windows of ``seq_len`` tokens
    from the reasoning domain and the rest from the pre-training domain (paper: 80 / 20).

    ``reasoning`` and ``pretrain`` are lists of strings (encoded with ``tokenizer`` and joined
    by ``<eos>``, i.e. packed) or 1-D token-id arrays. ``input_ids`` is ``(n, seq_len)``,
    ``domains`` names each row's domain; rows are shuffled with ``seed``."""

    def __init__(
        self,
        reasoning,
        pretrain,
        ratio_reasoning: float = 0.8,
        n: int = 512,
        seq_len: int = 128,
        tokenizer=None,
        seed: int = 0,
    ):
        self.ratio_reasoning = V.check_probability(ratio_reasoning, "ratio_reasoning")
        self.n = V.check_int(n, "n", low=1)
        self.seq_len = V.check_int(seq_len, "seq_len", low=2)
        self.seed = V.check_int(seed, "seed", low=0)
        n_reason = int(round(self.ratio_reasoning * self.n))
        counts = {"reasoning": n_reason, "pretrain": self.n - n_reason}
        sources = {"reasoning": reasoning, "pretrain": pretrain}
        rng = np.random.default_rng(self.seed)
        rows, domains = [], []
        for domain, count in counts.items():
            if count == 0:
                continue
            stream = _as_stream(sources[domain], tokenizer, domain)
            if len(stream) <= self.seq_len:
                raise ValueError(
                    f"{domain} holds {len(stream)} tokens, fewer than seq_len={self.seq_len} + 1"
                )
            starts = rng.integers(0, len(stream) - self.seq_len, size=count)
            rows.append(stream[starts[:, None] + np.arange(self.seq_len)[None, :]])
            domains += [domain] * count
        ids = np.concatenate(rows)
        order = rng.permutation(len(ids))
        self.input_ids = torch.from_numpy(ids[order].astype(np.int64))
        self.domains = [domains[i] for i in order]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return self.input_ids[i]
