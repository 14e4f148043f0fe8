"""A small, seeded training loop for GmNet classifiers and the measurements the claims use."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


@dataclass
class TrainLog:
    losses: list[float] = field(default_factory=list)
    images_per_s: float = 0.0


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    epochs: int = 6,
    batch_size: int = 128,
    lr: float = 3e-3,
    weight_decay: float = 0.05,
    seed: int = 0,
) -> TrainLog:
    """AdamW with a cosine schedule (the ImageNet recipe's optimiser), one loss per batch."""
    _check_model(model)
    _check_images_and_labels(x, y)
    V.check_int(epochs, "epochs", low=1)
    V.check_int(batch_size, "batch_size", low=1)
    V.check_scalar(lr, "lr", low=0.0, low_open=True)
    V.check_scalar(weight_decay, "weight_decay", low=0.0)
    V.check_int(seed, "seed", low=0)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * ((len(x) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    log = TrainLog()
    model.train()
    start, seen = time.perf_counter(), 0
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch_size):
            idx = order[i : i + batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            log.losses.append(float(loss.detach()))
            seen += len(idx)
    log.images_per_s = seen / max(time.perf_counter() - start, 1e-9)
    return log


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")


def _check_images_and_labels(x, y) -> None:
    V.check_tensor(x, "x", ndim=4, floating=True)
    V.check_tensor(y, "y", ndim=1, integer=True, low=0)
    V.check_same_length(x=x, y=y)


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 512) -> float:
    _check_model(model)
    _check_images_and_labels(x, y)
    V.check_int(batch_size, "batch_size", low=1)
    model.eval()
    correct = 0
    for i in range(0, len(x), batch_size):
        correct += int((model(x[i : i + batch_size]).argmax(-1) == y[i : i + batch_size]).sum())
    return correct / len(x)


@torch.no_grad()
def stage_features(model: nn.Module, x: torch.Tensor, batch_size: int = 512) -> list[torch.Tensor]:
    """Every stage's output feature maps for ``x`` (eval mode)."""
    V.check_module_attrs(model, "model", ["features", "eval"])
    V.check_tensor(x, "x", ndim=4, floating=True)
    V.check_int(batch_size, "batch_size", low=1)
    model.eval()
    parts = [model.features(x[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    return [torch.cat([p[s] for p in parts]) for s in range(len(parts[0]))]
