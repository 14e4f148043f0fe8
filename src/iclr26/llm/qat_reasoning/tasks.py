"""The two knowledge domains of the tiny setting: modular-arithmetic chain-of-thought
(the "reasoning" domain the teacher gains in post-training) and stdlib code (the
"pre-training" domain), plus the mixed-domain calibration set of stage 1.

A problem with k operations reads
``Q: 7 +5 *3 -4 =?`` and its chain-of-thought answer
``<think> 7+5=2 ; 2*3=6 ; 6-4=2 </think> <answer> 2 </answer>``; operands and every
intermediate result are digits mod 10, the operations are +, - and *.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

OPS = ("+", "-", "*")
_APPLY = {
    "+": lambda a, b: (a + b) % 10,
    "-": lambda a, b: (a - b) % 10,
    "*": lambda a, b: a * b % 10,
}
_ANSWER = re.compile(r"<answer>\s*(\d)\s*</answer>")


@dataclass(frozen=True)
class ArithmeticProblem:
    """One modular-arithmetic chain: operands, operations, and its text forms."""

    operands: tuple[int, ...]
    ops: tuple[str, ...]

    @property
    def k(self) -> int:
        return len(self.ops)

    @property
    def steps(self) -> list[tuple[int, str, int, int]]:
        """(left, op, right, result) for every step of the chain."""
        out, acc = [], self.operands[0]
        for op, right in zip(self.ops, self.operands[1:]):
            result = _APPLY[op](acc, right)
            out.append((acc, op, right, result))
            acc = result
        return out

    @property
    def answer(self) -> int:
        return self.steps[-1][3]

    @property
    def prompt(self) -> str:
        rest = " ".join(f"{op}{b}" for op, b in zip(self.ops, self.operands[1:]))
        return f"Q: {self.operands[0]} {rest} =?"

    @property
    def completion(self) -> str:
        chain = " ; ".join(f"{a}{op}{b}={c}" for a, op, b, c in self.steps)
        return f" <think> {chain} </think> <answer> {self.answer} </answer>"

    @property
    def text(self) -> str:
        return self.prompt + self.completion


def arithmetic_problems(n: int, k: int | Sequence[int] = (2, 3, 4, 5), seed: int = 0):
    """``n`` seeded problems; ``k`` is the number of operations or a set to draw it from."""
    n = V.check_int(n, "n", low=1)
    ks = [k] if isinstance(k, int) and not isinstance(k, bool) else list(k)
    if not ks:
        raise ValueError("k is empty")
    ks = [V.check_int(v, "k", low=1, high=64) for v in ks]
    seed = V.check_int(seed, "seed", low=0)
    rng = np.random.default_rng(seed)
    lengths = rng.choice(ks, size=n)
    out = []
    for length in lengths:
        operands = tuple(int(v) for v in rng.integers(0, 10, size=int(length) + 1))
        ops = tuple(OPS[i] for i in rng.integers(0, len(OPS), size=int(length)))
        out.append(ArithmeticProblem(operands, ops))
    return out


def parse_answer(text: str) -> int | None:
    """The digit inside the first ``<answer> d </answer>`` of a generation; ``None`` when the
    output is malformed (no tag, no single digit)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    match = _ANSWER.search(text)
    return int(match.group(1)) if match else None


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
