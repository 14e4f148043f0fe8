"""Training loops shared by the NRGPT claim checks (next-token LM and ListOps answers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.nn.nrgpt.data import random_windows
from iclr26.nn.nrgpt.listops import ListOpsBatch
from iclr26.nn.nrgpt.model import n_params


@dataclass
class LMLog:
    steps: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    tokens_per_s: float = 0.0


@torch.no_grad()
def lm_loss(
    model: nn.Module, ids: torch.Tensor, context: int, n_windows: int = 64, seed: int = 0
) -> float:
    """Mean next-character cross-entropy on fixed random windows of ``ids`` (eval mode)."""
    was = model.training
    model.eval()
    x, y = random_windows(ids, n_windows, context, torch.Generator().manual_seed(seed))
    loss = float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))
    model.train(was)
    return loss


def train_lm(
    model: nn.Module,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    steps: int,
    batch: int = 32,
    context: int = 64,
    lr: float = 1e-3,
    eval_every: int = 100,
    seed: int = 0,
    eval_windows: int = 64,
) -> LMLog:
    """AdamW next-token training with periodic train/val loss on fixed windows."""
    _check_model(model)
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        V.check_tensor(ids, name, ndim=1, integer=True, low=0)
    steps = V.check_int(steps, "steps", low=1)
    batch = V.check_int(batch, "batch", low=1)
    context = V.check_int(context, "context", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    eval_every = V.check_int(eval_every, "eval_every", low=1)
    eval_windows = V.check_int(eval_windows, "eval_windows", low=1)
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        if len(ids) <= context + 1:
            raise ValueError(f"{name} has {len(ids)} tokens, fewer than context + 2")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    log = LMLog()
    model.train()
    busy = 0.0
    for step in range(1, steps + 1):
        x, y = random_windows(train_ids, batch, context, gen)
        start = time.perf_counter()
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        busy += time.perf_counter() - start
        if step % eval_every == 0 or step == steps:
            log.steps.append(step)
            log.train_loss.append(lm_loss(model, train_ids, context, eval_windows, seed=1))
            log.val_loss.append(lm_loss(model, val_ids, context, eval_windows, seed=2))
    log.tokens_per_s = steps * batch * context / max(busy, 1e-9)
    return log


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")


def _check_listops(data, name: str) -> None:
    if not isinstance(data, ListOpsBatch):
        raise TypeError(f"{name} must be a ListOpsBatch, got {type(data).__name__}")
    V.check_tensor(data.tokens, f"{name}.tokens", ndim=2, integer=True, low=0)
    n = data.tokens.shape[0]
    V.check_tensor(data.answer_pos, f"{name}.answer_pos", shape=(n,), integer=True, low=0)
    V.check_tensor(data.answers, f"{name}.answers", shape=(n,), integer=True, low=0)
    if int(data.answer_pos.max()) >= data.tokens.shape[1]:
        raise ValueError(f"{name}.answer_pos points past the end of the token rows")


def answer_logits(model: nn.Module, data: ListOpsBatch) -> torch.Tensor:
    length = int(data.answer_pos.max()) + 1
    logits = model(data.tokens[:, :length])
    return logits[torch.arange(len(logits)), data.answer_pos]


@torch.no_grad()
def listops_accuracy(model: nn.Module, data: ListOpsBatch, batch: int = 512) -> float:
    """Fraction of expressions whose answer token is predicted at the ``=`` position."""
    _check_model(model)
    _check_listops(data, "data")
    batch = V.check_int(batch, "batch", low=1)
    was = model.training
    model.eval()
    correct = 0
    for i in range(0, len(data.tokens), batch):
        part = ListOpsBatch(
            data.tokens[i : i + batch], data.answer_pos[i : i + batch], data.answers[i : i + batch]
        )
        correct += int((answer_logits(model, part).argmax(-1) == part.answers).sum())
    model.train(was)
    return correct / len(data.tokens)


def train_listops(
    model: nn.Module,
    train: ListOpsBatch,
    steps: int,
    batch: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
) -> float:
    """AdamW on the answer token only; returns training tokens per second (wall clock of
    the steps, for information: claims time with ``iclr26.claims.timeit``)."""
    _check_model(model)
    _check_listops(train, "train")
    steps = V.check_int(steps, "steps", low=1)
    batch = V.check_int(batch, "batch", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    model.train()
    busy, tokens = 0.0, 0
    for _ in range(steps):
        idx = torch.randint(0, len(train.tokens), (batch,), generator=gen)
        part = ListOpsBatch(train.tokens[idx], train.answer_pos[idx], train.answers[idx])
        start = time.perf_counter()
        loss = F.cross_entropy(answer_logits(model, part), part.answers)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        busy += time.perf_counter() - start
        tokens += batch * (int(part.answer_pos.max()) + 1)
    return tokens / max(busy, 1e-9)


def size_to_params(
    factory: Callable[[int], nn.Module], target: int, widths=range(8, 257, 4)
) -> tuple[nn.Module, int]:
    """The model of the width whose parameter count is closest to ``target``."""
    counts = {}
    for w in sorted(widths):  # parameter counts grow with width: stop past the target
        counts[w] = n_params(factory(w))
        if counts[w] >= target:
            break
    best = min(counts, key=lambda w: abs(counts[w] - target))
    return factory(best), best


def summarise(values) -> dict:
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std()), "values": arr.tolist()}
