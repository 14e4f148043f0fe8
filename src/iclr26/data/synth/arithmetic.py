"""Modular-arithmetic chain-of-thought problems (the "reasoning" domain of QAT's tiny setting).

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
