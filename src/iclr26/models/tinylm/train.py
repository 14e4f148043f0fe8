"""Pretraining and supervised fine-tuning loops of the shared tiny LM.

Pretraining: next-token loss on random ``seq_len`` windows of the tokenized stdlib train
split, AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), cosine schedule with 5 % linear
warmup, gradient clipping at 1.0, two torch threads. Step counts are fixed per size.
Fine-tuning: one SFT loop over ``(prompt, completion)`` pairs with the loss masked to the
completion. Both results are cached on disk (``save_pretrained``, safetensors) under keys that
cover every setting, the corpus fingerprint and the torch/transformers versions.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr26.claims import build_lock
from iclr26.data import corpus_fingerprint
from iclr26.models.tinylm.cache import stable_hash, tinylm_dir, version_tag, write_json
from iclr26.models.tinylm.config import (
    PRETRAIN_STEPS,
    check_size,
    config_signature,
    tiny_llama_config,
)
from iclr26.models.tinylm.tokenizer import get_tokenizer, token_stream

Mixture = Sequence[tuple[Callable[[np.random.Generator], str], float]]


@contextmanager
def torch_threads(n: int | None):
    """Run a block with ``n`` intra-op threads (``None``: at most 2, fewer if torch is already
    set lower, e.g. by ``OMP_NUM_THREADS=1`` on a crowded machine), restoring the setting."""
    previous = torch.get_num_threads()
    torch.set_num_threads(min(2, previous) if n is None else int(n))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def cosine_with_warmup(optimizer: torch.optim.Optimizer, steps: int, warmup_frac: float = 0.05):
    """LambdaLR: linear warmup over ``warmup_frac`` of the steps, then cosine to zero."""
    warm = max(1, int(round(warmup_frac * steps)))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        progress = (step - warm) / max(1, steps - warm)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def adamw_for(model: torch.nn.Module, lr: float, weight_decay: float = 0.1) -> torch.optim.AdamW:
    """AdamW with decay on matrices only (norm gains and biases are not decayed)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    plain = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def sample_windows(
    stream: np.ndarray, n: int, seq_len: int, generator: np.random.Generator
) -> torch.Tensor:
    """``n`` random windows of ``seq_len`` tokens from a token stream, as a LongTensor."""
    if len(stream) <= seq_len:
        raise ValueError(f"token stream of {len(stream)} tokens is shorter than seq_len={seq_len}")
    starts = generator.integers(0, len(stream) - seq_len, size=n)
    index = starts[:, None] + np.arange(seq_len)[None, :]
    return torch.from_numpy(stream[index].astype(np.int64))


def _mixture_rows(tok, mixture: Mixture, n: int, seq_len: int, rng: np.random.Generator):
    """Which rows of a batch come from which synthetic generator, and their token windows."""
    weights = np.array([float(w) for _, w in mixture])
    if (weights < 0).any() or weights.sum() > 1:
        raise ValueError("mixture weights must be >= 0 and sum to at most 1")
    choice = rng.choice(len(mixture) + 1, size=n, p=np.append(weights, 1 - weights.sum()))
    rows = {}
    for r in np.flatnonzero(choice < len(mixture)):
        gen = mixture[choice[r]][0]
        ids: list[int] = []
        while len(ids) < seq_len:
            ids.extend(tok.encode(gen(rng), add_special_tokens=False) + [tok.eos_token_id])
        rows[int(r)] = torch.tensor(ids[:seq_len])
    return rows


def _pretrain_key(config, steps, seq_len, batch, lr, seed, mixture, max_files=None) -> str:
    mix = [
        (getattr(g, "__module__", ""), getattr(g, "__qualname__", repr(g)), w)
        for g, w in mixture or []
    ]
    payload = {
        "config": config_signature(config),
        "steps": steps,
        "seq_len": seq_len,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "mixture": mix,
        "corpus": corpus_fingerprint(),
        "data": "stdlib-code-train",
        **version_tag(),
    }
    if max_files is not None:  # only then, so keys of whole-split runs stay stable
        payload["max_files"] = max_files
    return stable_hash(payload)


def pretrain_dir(
    size: str = "quick",
    steps: int | None = None,
    seq_len: int = 512,
    batch: int = 8,
    lr: float = 3e-3,
    seed: int = 0,
    mixture: Mixture | None = None,
    config=None,
    max_files: int | None = None,
) -> Path:
    """The cache folder a pretraining run with these settings is stored in."""
    config = config if config is not None else tiny_llama_config(check_size(size))
    steps = PRETRAIN_STEPS[check_size(size)] if steps is None else steps
    key = _pretrain_key(config, steps, seq_len, batch, lr, seed, mixture, max_files)
    return tinylm_dir() / f"tinylm-{size}-{key}"


def _load_saved(folder: Path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.eval()
    meta = json.loads((folder / "meta.json").read_text())
    model.tinylm_meta = meta
    return model


def pretrain_tiny_lm(
    size: str = "quick",
    steps: int | None = None,
    seq_len: int = 512,
    batch: int = 8,
    lr: float = 3e-3,
    seed: int = 0,
    mixture: Mixture | None = None,
    config=None,
    cache: bool = True,
    threads: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    max_files: int | None = None,
):
    """Train (or load from the cache) the tiny Llama of ``size``; returns ``(model, tokenizer)``.

    ``config`` replaces the size's config (e.g. ``tiny_llama_config("quick",
    num_hidden_layers=6)``); the size name then only labels the cache folder and picks the
    default step count. ``mixture=[(generator, weight), ...]`` replaces a ``weight`` fraction
    of the rows of each batch by text from ``generator(rng) -> str``. ``progress(step, loss)``
    is called after every step. ``max_files`` limits the tokenizer's and the training stream's
    files to the first ones of the train split (cheap smoke/test models; ``None``: the whole
    split, the default of every size). The returned model is in eval mode and carries
    ``model.tinylm_meta`` (key, steps, tokens, seconds, loss curve).
    """
    check_size(size)
    steps = PRETRAIN_STEPS[size] if steps is None else int(steps)
    if steps < 1 or seq_len < 2 or batch < 1 or not lr > 0:
        raise ValueError("steps, batch must be >= 1, seq_len >= 2 and lr > 0")
    config = config if config is not None else tiny_llama_config(size)
    if seq_len > config.max_position_embeddings:
        raise ValueError(f"seq_len {seq_len} exceeds max_position_embeddings")
    tok = get_tokenizer(config.vocab_size, max_files=max_files)
    folder = pretrain_dir(size, steps, seq_len, batch, lr, seed, mixture, config, max_files)
    settings = dict(size=size, steps=steps, seq_len=seq_len, batch=batch, lr=lr, seed=seed,
                    mixture=mixture, threads=threads, progress=progress, max_files=max_files)  # fmt: skip
    if not cache:
        return _pretrain(config, tok, folder, False, **settings), tok
    if not (folder / "meta.json").exists():
        with build_lock(folder):  # one builder; a second caller waits, then loads
            if not (folder / "meta.json").exists():
                return _pretrain(config, tok, folder, True, **settings), tok
    return _load_saved(folder), tok


def _pretrain(config, tok, folder: Path, save: bool, *, size, steps, seq_len, batch, lr, seed,
              mixture, threads, progress, max_files):  # fmt: skip
    """Train the tiny Llama (the body of :func:`pretrain_tiny_lm`); saved to ``folder`` when
    ``save``."""
    from transformers import LlamaForCausalLM

    started = time.perf_counter()
    with torch_threads(threads):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        model.train()
        stream = token_stream(tok, "train", ("code",), max_files=max_files)
        rng = np.random.default_rng(seed)
        opt = adamw_for(model, lr)
        sched = cosine_with_warmup(opt, steps)
        losses = []
        for step in range(steps):
            ids = sample_windows(stream, batch, seq_len, rng)
            if mixture:
                for row, window in _mixture_rows(tok, mixture, batch, seq_len, rng).items():
                    ids[row] = window
            loss = model(input_ids=ids, labels=ids).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            if progress is not None:
                progress(step, losses[-1])
        model.eval()
    seconds = time.perf_counter() - started
    meta = {
        "key": folder.name,
        "size": size,
        "steps": steps,
        "seq_len": seq_len,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "max_files": max_files,
        "tokens": steps * batch * seq_len,
        "seconds": round(seconds, 2),
        "threads": torch.get_num_threads() if threads is None else threads,
        "params": sum(p.numel() for p in model.parameters()),
        "corpus_fingerprint": corpus_fingerprint(),
        "losses": losses,
        **version_tag(),
    }
    model.tinylm_meta = meta
    if save:
        _save(model, folder, meta)
    return model


def _save(model: torch.nn.Module, folder: Path, meta: dict[str, Any]) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    write_json(tmp / "meta.json", meta)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)


def _encode_pairs(tok, examples, completion_only: bool, max_len: int | None):
    rows, masks = [], []
    for pair in examples:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError("examples must be (prompt, completion) pairs of strings")
        prompt, completion = pair
        p = tok.encode(str(prompt), add_special_tokens=False)
        c = tok.encode(str(completion), add_special_tokens=False) + [tok.eos_token_id]
        ids = (p + c)[:max_len] if max_len else p + c
        keep = ([not completion_only] * len(p) + [True] * len(c))[: len(ids)]
        rows.append(ids)
        masks.append(keep)
    return rows, masks


def _params_digest(model: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to(torch.float32).cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def finetune_lm(
    model: torch.nn.Module,
    tok,
    examples: Sequence[tuple[str, str]],
    steps: int,
    lr: float,
    batch: int,
    completion_only: bool = True,
    seed: int = 0,
    max_len: int | None = None,
    cache_name: str | None = None,
    threads: int | None = None,
) -> torch.nn.Module:
    """Supervised fine-tuning on ``(prompt, completion)`` pairs; the loss covers only the
    completion (and its ``<eos>``) when ``completion_only``. With ``cache_name`` (e.g.
    ``"tinylm-quick+arith-cot"``) the result is cached under that name plus a hash of the
    base weights, the examples and the settings. Returns the model in eval mode."""
    if not examples:
        raise ValueError("finetune_lm needs at least one example")
    if steps < 1 or batch < 1 or not lr > 0:
        raise ValueError("steps and batch must be >= 1 and lr > 0")
    rows, masks = _encode_pairs(tok, examples, completion_only, max_len)
    folder = None
    if cache_name:
        key = stable_hash(
            {
                "base": _params_digest(model),
                "examples": hashlib.sha256(
                    json.dumps([list(e) for e in examples]).encode()
                ).hexdigest(),
                "steps": steps,
                "lr": lr,
                "batch": batch,
                "completion_only": completion_only,
                "seed": seed,
                "max_len": max_len,
                **version_tag(),
            }
        )
        folder = tinylm_dir() / "finetune" / f"{cache_name}-{key}"
        if (folder / "meta.json").exists():
            return _load_saved(folder)
        with build_lock(folder):  # one builder; a second caller waits, then loads
            if (folder / "meta.json").exists():
                return _load_saved(folder)
            return _finetune(model, tok, rows, masks, steps, lr, batch, seed, cache_name,
                             threads, folder)  # fmt: skip
    return _finetune(model, tok, rows, masks, steps, lr, batch, seed, cache_name, threads, None)


def _finetune(model, tok, rows, masks, steps, lr, batch, seed, cache_name, threads, folder):
    """The training loop of :func:`finetune_lm`; saved to ``folder`` unless it is ``None``."""
    started = time.perf_counter()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rng = np.random.default_rng(seed)
    losses = []
    with torch_threads(threads):
        torch.manual_seed(seed)
        model.train()
        opt = adamw_for(model, lr)
        sched = cosine_with_warmup(opt, steps)
        for _ in range(steps):
            pick = rng.integers(0, len(rows), size=batch)
            width = max(len(rows[i]) for i in pick)
            ids = torch.full((batch, width), pad, dtype=torch.long)
            labels = torch.full((batch, width), -100, dtype=torch.long)
            attn = torch.zeros((batch, width), dtype=torch.long)
            for r, i in enumerate(pick):
                seq = torch.tensor(rows[i])
                ids[r, : len(seq)] = seq
                attn[r, : len(seq)] = 1
                labels[r, : len(seq)] = torch.where(torch.tensor(masks[i]), seq, -100)
            device = next(model.parameters()).device  # batches follow the model (CPU or GPU)
            ids, attn, labels = ids.to(device), attn.to(device), labels.to(device)
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
    model.eval()
    meta = {
        "cache_name": cache_name,
        "steps": steps,
        "lr": lr,
        "batch": batch,
        "seconds": round(time.perf_counter() - started, 2),
        "losses": losses,
        **version_tag(),
    }
    model.tinylm_meta = meta
    if folder is not None:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _save(model, folder, meta)
    return model
