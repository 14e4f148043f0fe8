"""Synthetic ListOps: nested prefix expressions over digits with MAX, MED and SM20.

An expression such as ``[MAX 3 [SM20 4 9 ] 7 ]`` evaluates to a number in 0..19 (``SM20`` is
the sum mod 20, ``MED`` the lower median). Sequences are token ids ending in ``=``; the model
predicts the answer token at the ``=`` position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

OPS = ("MAX", "MED", "SM20")
# 0..19 are values (digits 0-9 appear as operands, 0-19 as answers), then syntax tokens.
VALUE_TOKENS = 20
TOKENS = tuple(str(i) for i in range(VALUE_TOKENS)) + OPS + ("[", "]", "=", "<pad>")
TOKEN_ID = {t: i for i, t in enumerate(TOKENS)}
PAD = TOKEN_ID["<pad>"]


def apply_op(op: str, values: list[int]) -> int:
    if not values:
        raise ValueError("an operator needs at least one argument")
    if op == "MAX":
        return max(values)
    if op == "MED":
        return sorted(values)[(len(values) - 1) // 2]
    if op == "SM20":
        return sum(values) % 20
    raise ValueError(f"unknown operator {op!r}; valid: {', '.join(OPS)}")


def evaluate(tokens: list[str]) -> int:
    """Evaluate a tokenised expression (reference evaluator, a stack machine)."""
    stack: list[list] = []
    result = None
    for tok in tokens:
        if tok == "[":
            stack.append([])
        elif tok in OPS:
            if not stack or stack[-1]:
                raise ValueError("an operator must follow '['")
            stack[-1].append(tok)
        elif tok == "]":
            if not stack or not stack[-1]:
                raise ValueError("unbalanced ']'")
            op, *args = stack.pop()
            value = apply_op(op, args)
            if stack:
                stack[-1].append(value)
            else:
                result = value
        elif tok.isdigit():
            if not stack:
                return int(tok) if result is None else _bad(tokens)
            stack[-1].append(int(tok))
        else:
            raise ValueError(f"unknown token {tok!r}")
    if stack or result is None:
        raise ValueError("unbalanced expression")
    return result


def _bad(tokens: list[str]) -> int:
    raise ValueError(f"malformed expression: {' '.join(tokens)}")


def _expression(
    rng: np.random.Generator,
    depth: int,
    max_depth: int,
    max_args: int,
    ops: tuple[str, ...],
    p_nest: float,
) -> tuple[list[str], int]:
    op = ops[rng.integers(len(ops))]
    tokens, values = ["[", op], []
    for _ in range(rng.integers(2, max_args + 1)):
        if depth < max_depth and rng.random() < p_nest:
            sub, v = _expression(rng, depth + 1, max_depth, max_args, ops, p_nest)
        else:
            v = int(rng.integers(10))
            sub = [str(v)]
        tokens += sub
        values.append(v)
    return tokens + ["]"], apply_op(op, values)


def generate(
    n: int,
    max_depth: int = 2,
    max_args: int = 4,
    ops: tuple[str, ...] = OPS,
    seed: int = 0,
    p_nest: float = 0.35,
) -> list[tuple[list[str], int]]:
    """``n`` random expressions (tokens, answer) with nesting depth <= ``max_depth``."""
    if n < 1 or max_depth < 1 or max_args < 2:
        raise ValueError("need n >= 1, max_depth >= 1 and max_args >= 2")
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise ValueError(f"unknown operators {bad}; valid: {', '.join(OPS)}")
    rng = np.random.default_rng(seed)
    return [_expression(rng, 1, max_depth, max_args, tuple(ops), p_nest) for _ in range(n)]


@dataclass
class ListOpsBatch:
    tokens: torch.Tensor  # (n, L) right-padded ids, ending with "=" at answer_pos
    answer_pos: torch.Tensor  # (n,)
    answers: torch.Tensor  # (n,)


def encode(examples: list[tuple[list[str], int]], length: int | None = None) -> ListOpsBatch:
    """Token ids ``expr =`` right-padded to ``length`` (default: the longest)."""
    seqs = [[TOKEN_ID[t] for t in toks] + [TOKEN_ID["="]] for toks, _ in examples]
    longest = max(len(s) for s in seqs)
    length = longest if length is None else length
    if longest > length:
        raise ValueError(f"an expression has {longest} tokens, more than length={length}")
    ids = np.full((len(seqs), length), PAD, dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = s
    return ListOpsBatch(
        torch.from_numpy(ids),
        torch.tensor([len(s) - 1 for s in seqs]),
        torch.tensor([a for _, a in examples]),
    )
