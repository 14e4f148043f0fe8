"""A forward-pass-budgeted training loop for zeroth-order optimizers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from iclr26 import validation as V
from iclr26.optim.fzoo.batched import make_closure
from iclr26.optim.fzoo.optimizers import ZerothOrderOptimizer


def zo_fit(
    model: torch.nn.Module,
    dataloader: Iterable,
    opt: ZerothOrderOptimizer,
    loss_fn: Callable | None = None,
    max_forward_passes: int = 20_000,
    eval_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    eval_every_passes: int = 1_000,
    progress: Callable[[int, int, float], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``opt`` over ``dataloader`` (cycled) until ``max_forward_passes`` are spent.

    ``progress(forward_passes, max_forward_passes, loss)`` is called after every step (e.g. to
    drive a progress bar or log).

    Batches are dicts for Hugging Face models (loss from ``outputs.loss``) or ``(x, y)`` pairs
    with ``loss_fn(model(x), y)``. The model stays in eval mode (dropout off) throughout.
    Returns one record per evaluation: forward passes, step, mean recent loss, ``eval_fn``'s
    numbers."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(opt, ZerothOrderOptimizer):
        raise TypeError("opt must be a zeroth-order optimizer (FZOO or MeZO)")
    if not hasattr(dataloader, "__iter__"):
        raise TypeError(f"dataloader must be iterable, got {type(dataloader).__name__}")
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError("eval_fn must be callable or None")
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable or None")
    max_forward_passes = V.check_int(max_forward_passes, "max_forward_passes", low=1)
    eval_every_passes = V.check_int(eval_every_passes, "eval_every_passes", low=1)
    model.eval()
    history: list[dict[str, Any]] = []
    recent: list[float] = []
    next_eval, step = 0, 0

    def record():
        entry = {
            "forward_passes": opt.forward_passes,
            "step": step,
            "loss": sum(recent) / len(recent) if recent else float("nan"),
        }
        if eval_fn is not None:
            entry.update(eval_fn(model))
        history.append(entry)
        recent.clear()

    while opt.forward_passes < max_forward_passes:
        seen = False
        for batch in dataloader:
            seen = True
            if opt.forward_passes >= next_eval:
                record()
                next_eval += eval_every_passes
            recent.append(opt.step(make_closure(model, batch, loss_fn)))
            step += 1
            if progress is not None:
                progress(
                    min(opt.forward_passes, max_forward_passes), max_forward_passes, recent[-1]
                )
            if opt.forward_passes >= max_forward_passes:
                break
        if not seen:
            raise ValueError("dataloader is empty: it yielded no batch")
    record()
    return history
