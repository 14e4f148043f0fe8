"""The full-precision reasoning teacher of the tiny setting: the shared tiny LM after a
post-training fine-tune on modular-arithmetic chain-of-thought (85 %) mixed with stdlib code
chunks (15 %, full-sequence loss, so code ability survives), cached as
``tinylm-<size>+arith-cot``. This mirrors "pre-trained, then post-trained for reasoning"."""

from __future__ import annotations

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.tasks import arithmetic_problems
from iclr26.models.tinylm import finetune_lm

TEACHER_SEED = 1000  # generator seed of the teacher's training problems (never evaluated)


def code_chunks(tokenizer, stream: np.ndarray, n: int, length: int = 64, seed: int = 0):
    """``n`` random ``length``-token windows of a token stream, decoded back to text."""
    n = V.check_int(n, "n", low=1)
    length = V.check_int(length, "length", low=2)
    stream = np.asarray(stream)
    if len(stream) <= length:
        raise ValueError(f"stream holds {len(stream)} tokens, fewer than length={length} + 1")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(stream) - length, size=n)
    return [tokenizer.decode(stream[s : s + length].tolist()) for s in starts]


def teacher_examples(tokenizer, code_stream, n: int = 20000, code_share: float = 0.15, seed=0):
    """``(prompt, completion)`` pairs of the teacher's fine-tune: CoT problems with k in 2..5
    (loss on the completion) and stdlib chunks as ``("", chunk)`` (loss on every token)."""
    n = V.check_int(n, "n", low=2)
    code_share = V.check_probability(code_share, "code_share")
    n_code = int(round(code_share * n))
    problems = arithmetic_problems(n - n_code, (2, 3, 4, 5), TEACHER_SEED + seed)
    pairs = [(p.prompt, p.completion) for p in problems]
    if n_code:
        pairs += [("", c) for c in code_chunks(tokenizer, code_stream, n_code, 64, seed)]
    order = np.random.default_rng(seed).permutation(len(pairs))
    return [pairs[i] for i in order]


def reasoning_teacher(
    base: torch.nn.Module,
    tokenizer,
    code_stream,
    steps: int = 1500,
    batch: int = 32,
    lr: float = 1e-3,
    n_examples: int = 20000,
    cache_name: str | None = "tinylm-quick+arith-cot",
    seed: int = 0,
) -> torch.nn.Module:
    """Fine-tune ``base`` into the reasoning teacher (``finetune_lm``, sequences <= 64 tokens);
    cached under ``cache_name`` plus a hash of the base weights, data and settings. ``base`` is
    trained in place when the cache is cold; pass a copy to keep it."""
    pairs = teacher_examples(tokenizer, code_stream, n_examples, 0.15, seed)
    return finetune_lm(
        base,
        tokenizer,
        pairs,
        steps=steps,
        lr=lr,
        batch=batch,
        completion_only=True,
        seed=seed,
        max_len=64,
        cache_name=cache_name,
    )
