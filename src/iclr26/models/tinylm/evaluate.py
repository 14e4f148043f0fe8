"""Evaluation helpers shared by the LLM rooms; they work with any HF causal LM.

``perplexity`` uses the usual sliding window (each token scored once, with up to
``seq_len - stride`` tokens of left context); ``continuation_logprob`` is teacher-forced;
``greedy_generate`` decodes with the KV cache.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import torch

from iclr26.models import hf_compat


@contextmanager
def eval_mode(model: torch.nn.Module):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def _as_ids(texts, tokenizer) -> torch.Tensor:
    """One 1-D LongTensor from strings (joined by <eos>), id lists or a tensor."""
    if isinstance(texts, torch.Tensor):
        return texts.reshape(-1).long()
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence) or len(texts) == 0:
        raise ValueError("texts must be a non-empty string, list of strings, or token ids")
    if isinstance(texts[0], str):
        if tokenizer is None:
            raise ValueError("pass tokenizer= to score strings")
        eos = tokenizer.eos_token_id
        ids: list[int] = []
        for text in texts:
            ids.extend(tokenizer.encode(text, add_special_tokens=False))
            if eos is not None:
                ids.append(eos)
        return torch.tensor(ids, dtype=torch.long)
    if isinstance(texts[0], int):
        return torch.tensor(list(texts), dtype=torch.long)
    return torch.tensor([i for row in texts for i in row], dtype=torch.long)


def _window_nll(model, ids: torch.Tensor, seq_len: int, stride: int, batch: int):
    """Summed NLL and token count over sliding windows of one id sequence."""
    n = ids.numel()
    windows = []  # (begin, end, number of tokens scored at the end of the window)
    prev_end = 0
    for begin in range(0, n - 1, stride):
        end = min(begin + seq_len, n)
        k = min(end - prev_end, end - begin - 1)  # the window's first token has no context
        if k > 0:
            windows.append((begin, end, k))
        prev_end = end
        if end == n:
            break
    total, count = 0.0, 0
    by_len: dict[int, list[tuple[int, int, int]]] = {}
    for w in windows:
        by_len.setdefault(w[1] - w[0], []).append(w)
    for length, group in by_len.items():
        for i in range(0, len(group), batch):
            chunk = group[i : i + batch]
            x = torch.stack([ids[b:e] for b, e, _ in chunk])
            logits = hf_compat.causal_lm_logits(model, x)[:, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            tok_lp = logp.gather(-1, x[:, 1:, None]).squeeze(-1)  # [B, length-1]
            for r, (_, _, k) in enumerate(chunk):
                total -= float(tok_lp[r, length - 1 - k :].sum())
                count += k
    return total, count


def perplexity(
    model: torch.nn.Module,
    texts,
    seq_len: int = 512,
    stride: int | None = None,
    tokenizer=None,
    batch: int = 8,
) -> float:
    """exp(mean next-token NLL) over ``texts`` with a sliding window of ``seq_len`` tokens."""
    if seq_len < 2:
        raise ValueError("seq_len must be >= 2")
    stride = seq_len if stride is None else int(stride)
    if not 1 <= stride <= seq_len:
        raise ValueError("stride must be in [1, seq_len]")
    ids = _as_ids(texts, tokenizer)
    if ids.numel() < 2:
        raise ValueError("need at least two tokens to score")
    with eval_mode(model):
        total, count = _window_nll(model, ids, seq_len, stride, batch)
    return math.exp(total / count)


def continuation_logprob(model: torch.nn.Module, prompt_ids, cont_ids) -> float:
    """Teacher-forced log p(cont | prompt), summed over the continuation tokens."""
    prompt = torch.as_tensor(prompt_ids, dtype=torch.long).reshape(-1)
    cont = torch.as_tensor(cont_ids, dtype=torch.long).reshape(-1)
    if prompt.numel() == 0 or cont.numel() == 0:
        raise ValueError("prompt and continuation must both be non-empty")
    ids = torch.cat([prompt, cont])[None]
    with eval_mode(model):
        logits = hf_compat.causal_lm_logits(model, ids)[0, prompt.numel() - 1 : -1].float()
    return float(torch.log_softmax(logits, -1).gather(-1, cont[:, None]).sum())


def greedy_generate(
    model: torch.nn.Module, ids, max_new_tokens: int, eos_token_id: int | None = None
) -> torch.Tensor:
    """Greedy decoding with the KV cache; returns prompt + new tokens (``[batch, len]``).
    Stops early when every row has produced ``eos_token_id``."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]
    if ids.numel() == 0 or max_new_tokens < 0:
        raise ValueError("need a non-empty prompt and max_new_tokens >= 0")
    out = ids
    with eval_mode(model):
        cache = hf_compat.empty_cache(getattr(model, "config", None))
        step_input = ids
        done = torch.zeros(ids.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits, cache = hf_compat.forward_with_cache(model, step_input, cache)
            nxt = logits[:, -1].argmax(-1)
            if eos_token_id is not None:
                nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                done |= nxt == eos_token_id
            out = torch.cat([out, nxt[:, None]], dim=1)
            step_input = nxt[:, None]
            if eos_token_id is not None and bool(done.all()):
                break
    return out


def next_token_accuracy(model: torch.nn.Module, texts, seq_len: int = 512, tokenizer=None) -> float:
    """Fraction of positions where the argmax prediction equals the next token
    (non-overlapping windows of ``seq_len``)."""
    ids = _as_ids(texts, tokenizer)
    n_win = max(1, (ids.numel() - 1) // (seq_len - 1))
    hits, count = 0, 0
    with eval_mode(model):
        for w in range(n_win):
            x = ids[w * (seq_len - 1) : w * (seq_len - 1) + seq_len][None]
            if x.shape[1] < 2:
                break
            pred = hf_compat.causal_lm_logits(model, x)[0, :-1].argmax(-1)
            hits += int((pred == x[0, 1:]).sum())
            count += x.shape[1] - 1
    return hits / max(count, 1)


def time_it(fn: Callable[[], object], n: int = 5, warmup: int = 1) -> float:
    """Median wall time in seconds of ``n`` calls of ``fn`` after ``warmup`` calls."""
    if n < 1:
        raise ValueError("n must be >= 1")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
