"""The full-precision reasoning teacher of the tiny setting: the shared tiny LM after a
post-training fine-tune on modular-arithmetic chain-of-thought (85 %) mixed with stdlib code
chunks (15 %, full-sequence loss, so code ability survives), cached as
``tinylm-<size>+arith-cot``. This mirrors "pre-trained, then post-trained for reasoning".

The fine-tune is the SFT objective of the shared ``finetune_lm`` (the same batches from the
same generator, the mean next-token cross-entropy over the batch's completion tokens, AdamW
with decay on matrices, cosine schedule with 5 % warmup, gradient clipping at 1.0), computed
without the work that cannot change it: the rows of a batch run in a few groups of similar
length instead of one block padded to the longest row (right padding needs no attention mask
under a causal mask, so every real position sees exactly what it sees in the padded block),
and the output layer and its softmax run only at the positions that carry a label.

The claims' teacher adds a KL anchor to the base model on the stdlib chunks
(``anchor_weight``): plain SFT on the spec's mixture leaves the code perplexity far above the
spec's acceptance bound at the tiny size, the anchor keeps it at the base model's.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V
from iclr26.claims import build_lock
from iclr26.llm.qat_reasoning.tasks import arithmetic_problems
from iclr26.models.tinylm import cosine_with_warmup
from iclr26.models.tinylm.cache import stable_hash, tinylm_dir, version_tag
from iclr26.models.tinylm.train import (
    _load_saved,
    _params_digest,
    _save,
    adamw_for,
    torch_threads,
)

TEACHER_SEED = 1000  # generator seed of the teacher's training problems (never evaluated)
GROUP_OVERHEAD_TOKENS = 96  # cost of one more forward pass, in padded token positions


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


# ------------------------------------------------------------------ the SFT loop


def encode_examples(tokenizer, examples: Sequence[tuple[str, str]], max_len: int | None = None):
    """Token ids of ``prompt + completion + <eos>`` (cut to ``max_len``) and the index of each
    row's first completion token (the loss covers the completion only, as ``finetune_lm``
    with ``completion_only=True``)."""
    if isinstance(examples, str) or not isinstance(examples, Sequence) or not examples:
        raise ValueError("examples must be a non-empty list of (prompt, completion) pairs")
    max_len = V.check_int(max_len, "max_len", low=2, allow_none=True)
    eos = tokenizer.eos_token_id
    rows, starts = [], []
    for pair in examples:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError("examples must be (prompt, completion) pairs of strings")
        prompt, completion = pair
        p = tokenizer.encode(str(prompt), add_special_tokens=False)
        c = tokenizer.encode(str(completion), add_special_tokens=False)
        c = c + ([eos] if eos is not None else [])
        ids = (p + c)[:max_len] if max_len else p + c
        rows.append(ids)
        starts.append(len(p))
    return rows, starts


def length_groups(lengths: Sequence[int], overhead: int = GROUP_OVERHEAD_TOKENS) -> list[list[int]]:
    """Split row indices into groups of similar length that minimise padded positions plus
    ``overhead`` per group (an exact dynamic programme over the rows sorted by length);
    each group lists indices into ``lengths``."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    sizes = [lengths[i] for i in order]
    n = len(sizes)
    best = [0.0] + [float("inf")] * n  # best[j]: cost of the first j sorted rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):  # rows i..j-1 form the last group, padded to sizes[j - 1]
            cost = best[i] + (j - i) * sizes[j - 1] + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def head_and_body(model: nn.Module):
    """``(decoder stack, output layer)`` when the logits are a plain linear map of the decoder's
    last hidden state (Llama, Qwen2, Mistral...), else ``None`` (the full logits are used)."""
    config = getattr(model, "config", None)
    for attr in ("final_logit_softcapping", "logit_scale", "logits_scaling"):
        if getattr(config, attr, None) not in (None, 1, 1.0):
            return None
    body = getattr(model, "base_model", None)
    get_head = getattr(model, "get_output_embeddings", None)
    if body is None or body is model or not callable(get_head):
        return None
    head = get_head()
    if not isinstance(head, nn.Linear) or isinstance(body, nn.Linear):
        return None
    return body, head


def _logits_at(model, parts, ids, r_t, p_t):
    if parts is not None:
        body, head = parts
        return head(body(input_ids=ids, use_cache=False).last_hidden_state[r_t, p_t])
    return model(input_ids=ids, use_cache=False).logits[r_t, p_t]


def sft_step_loss(
    model,
    rows,
    starts,
    pick,
    pad: int,
    scale: float = 1.0,
    anchor: nn.Module | None = None,
    anchor_weight: float = 0.0,
) -> tuple[float, int]:
    """Back-propagate ``scale`` x the mean completion-token cross-entropy of the rows ``pick``
    (gradients accumulate in the parameters); returns (loss, label count). The same value
    and gradient as one padded batch through ``model(..., labels=...)``. With ``anchor`` (a
    frozen reference model) and ``anchor_weight > 0`` the loss adds ``anchor_weight`` x
    KL(anchor || model) at every labelled position of the rows without a prompt (the
    full-sequence rows: the stdlib chunks of the teacher), summed and divided by the same
    label count as the cross-entropy."""
    device = next(model.parameters()).device
    parts = head_and_body(model)
    use_anchor = anchor is not None and anchor_weight > 0
    anchor_parts = head_and_body(anchor) if use_anchor else None
    lengths = [len(rows[i]) for i in pick]
    targets_all = []  # per group: (input ids, row index, position, target) of labelled positions
    count = 0
    for group in length_groups(lengths):
        width = max(lengths[g] for g in group)
        ids = torch.full((len(group), width), pad, dtype=torch.long)
        r_idx, p_idx, tgt, full = [], [], [], []
        for r, g in enumerate(group):
            seq = rows[pick[g]]
            ids[r, : len(seq)] = torch.tensor(seq)
            first = max(starts[pick[g]], 1)  # the first token is never a label
            for t in range(first, len(seq)):
                r_idx.append(r)
                p_idx.append(t - 1)
                tgt.append(seq[t])
                full.append(starts[pick[g]] == 0)
        count += len(tgt)
        targets_all.append((ids, r_idx, p_idx, tgt, full))
    if count == 0:
        return 0.0, 0
    total = 0.0
    for ids, r_idx, p_idx, tgt, full in targets_all:
        if not tgt:
            continue
        ids = ids.to(device)
        r_t = torch.tensor(r_idx, device=device)
        p_t = torch.tensor(p_idx, device=device)
        target = torch.tensor(tgt, device=device)
        logits = _logits_at(model, parts, ids, r_t, p_t)
        loss = F.cross_entropy(logits.float(), target, reduction="sum") / count
        mask = torch.tensor(full, device=device)
        if use_anchor and bool(mask.any()):
            with torch.no_grad():
                ref = _logits_at(anchor, anchor_parts, ids, r_t[mask], p_t[mask]).float()
                ref = torch.log_softmax(ref, -1)
            own = torch.log_softmax(logits[mask].float(), -1)
            kl = (ref.exp() * (ref - own)).sum()
            loss = loss + anchor_weight * kl / count
        (loss * scale).backward()
        total += float(loss.detach())
    return total, count


def sft_finetune(
    model: nn.Module,
    tokenizer,
    examples: Sequence[tuple[str, str]],
    steps: int,
    lr: float,
    batch: int,
    seed: int = 0,
    max_len: int | None = None,
    cache_name: str | None = None,
    threads: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    anchor_weight: float = 0.0,
    freeze_embeddings: bool = False,
) -> nn.Module:
    """Fine-tune ``model`` in place on ``(prompt, completion)`` pairs with the loss on the
    completion: ``steps`` AdamW steps (betas 0.9/0.95, weight decay 0.1 on matrices, cosine
    schedule with 5 % warmup, gradient norm clipped at 1.0) on batches of ``batch`` pairs
    drawn with replacement from ``numpy.random.default_rng(seed)`` -- the objective and the
    batches of ``iclr26.models.tinylm.finetune_lm``. With ``cache_name`` the result is cached
    under that name plus a hash of the base weights, the examples and the settings.
    ``progress(step, loss)`` is told after every step. ``anchor_weight > 0`` adds that weight
    x KL(start || model) on the full-sequence rows (pairs with an empty prompt), the start
    being a frozen copy of ``model`` as passed in (see :func:`sft_step_loss`).
    ``freeze_embeddings`` keeps the input embeddings (and an output layer tied to them) at
    their start values. Returns the model in eval mode."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    steps = V.check_int(steps, "steps", low=1)
    batch = V.check_int(batch, "batch", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0)
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    seed = V.check_int(seed, "seed", low=0)
    anchor_weight = V.check_scalar(anchor_weight, "anchor_weight", low=0.0)
    if not isinstance(freeze_embeddings, bool):
        raise TypeError(f"freeze_embeddings must be a bool, got {type(freeze_embeddings).__name__}")
    rows, starts = encode_examples(tokenizer, examples, max_len)
    if not any(len(r) > max(s, 1) for r, s in zip(rows, starts)):
        raise ValueError("examples: no completion token survives max_len truncation")
    folder = None
    if cache_name:
        key = stable_hash(
            {
                "loop": "qat_reasoning.sft_finetune",
                "base": _params_digest(model),
                "examples": hashlib.sha256(
                    json.dumps([list(e) for e in examples]).encode()
                ).hexdigest(),
                "steps": steps,
                "lr": lr,
                "batch": batch,
                "seed": seed,
                "max_len": max_len,
                **({"anchor_weight": anchor_weight} if anchor_weight > 0 else {}),
                **({"freeze_embeddings": True} if freeze_embeddings else {}),
                **version_tag(),
            }
        )
        folder = tinylm_dir() / "finetune" / f"{cache_name}-{key}"
        if (folder / "meta.json").exists():
            trained = _load_saved(folder)
        else:
            with build_lock(folder):  # one builder; a second caller waits, then loads
                if (folder / "meta.json").exists():
                    trained = _load_saved(folder)
                else:
                    trained = _train(model, tokenizer, rows, starts, steps, lr, batch, seed,
                                     threads, progress, cache_name, folder, anchor_weight,
                                     freeze_embeddings)  # fmt: skip
        trained.tinylm_cache_dir = folder  # where the cached weights are
        return trained
    return _train(
        model, tokenizer, rows, starts, steps, lr, batch, seed, threads, progress, None, None,
        anchor_weight, freeze_embeddings,
    )  # fmt: skip


def _train(
    model, tok, rows, starts, steps, lr, batch, seed, threads, progress, name, folder,
    anchor_w=0.0, freeze=False,
):  # fmt: skip
    started = time.perf_counter()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rng = np.random.default_rng(seed)
    losses = []
    anchor = None
    if anchor_w > 0:
        anchor = copy.deepcopy(model).eval()
        for p in anchor.parameters():
            p.requires_grad_(False)
    frozen = []
    if freeze:
        emb = model.get_input_embeddings()
        frozen = [p for p in emb.parameters() if p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)
    try:
        with torch_threads(threads):
            torch.manual_seed(seed)
            model.train()
            opt = adamw_for(model, lr)
            sched = cosine_with_warmup(opt, steps)
            for step in range(steps):
                pick = rng.integers(0, len(rows), size=batch).tolist()
                opt.zero_grad(set_to_none=True)
                loss, count = sft_step_loss(model, rows, starts, pick, pad, 1.0, anchor, anchor_w)
                if count:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                sched.step()
                losses.append(loss)
                if progress is not None:
                    progress(step, loss)
    finally:
        for p in frozen:
            p.requires_grad_(True)
    model.eval()
    meta = {
        "cache_name": name,
        "steps": steps,
        "lr": lr,
        "batch": batch,
        "anchor_weight": anchor_w,
        "freeze_embeddings": freeze,
        "seconds": round(time.perf_counter() - started, 2),
        "losses": losses,
        **version_tag(),
    }
    model.tinylm_meta = meta
    if folder is not None:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _save(model, folder, meta)
    return model


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
    threads: int | None = None,
    code_share: float = 0.15,
    anchor_weight: float = 0.0,
    freeze_embeddings: bool = False,
) -> torch.nn.Module:
    """Fine-tune ``base`` into the reasoning teacher (:func:`sft_finetune`, sequences <= 64
    tokens); cached under ``cache_name`` plus a hash of the base weights, data and settings.
    ``base`` is trained in place when the cache is cold; pass a copy to keep it.
    ``anchor_weight`` and ``freeze_embeddings`` protect the code text (see
    :func:`sft_finetune`); both are off by default, the spec's plain SFT."""
    pairs = teacher_examples(tokenizer, code_stream, n_examples, code_share, seed)
    return sft_finetune(
        base,
        tokenizer,
        pairs,
        steps=steps,
        lr=lr,
        batch=batch,
        seed=seed,
        max_len=64,
        cache_name=cache_name,
        threads=threads,
        anchor_weight=anchor_weight,
        freeze_embeddings=freeze_embeddings,
    )
