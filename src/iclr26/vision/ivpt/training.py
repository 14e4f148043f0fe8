"""Training of IVPT and its baselines on a frozen backbone, with the frozen prefix cached.

The blocks before the first prompted one never change, so :func:`fit` runs them once per image
(and once per transformed view for the equivariance term) and trains from the cached tokens;
the result is the same as running the whole backbone at every step. Adam with the official
learning-rate groups (the prototypes and spatial priors, the "finer" group, at
``lr * finer_lr_factor``), StepLR (gamma 0.5), gradient-norm clipping at 2.0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.vision import augment

__all__ = ["FitResult", "cross_entropy_objective", "fit", "train_step"]


@dataclass
class FitResult:
    """What :func:`fit` did: the mean loss (and each term's) per epoch, steps and seconds."""

    losses: list[float] = field(default_factory=list)
    terms: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    cache_seconds: float = 0.0


class _CrossEntropy:
    needs_transform = False

    def __call__(self, out, target, out_transformed=None, theta=None):
        loss = F.cross_entropy(out["logits"], target)
        return loss, {"cls": loss}


def cross_entropy_objective():
    """The plain classification objective (for :class:`VPTDeep`), in :class:`IVPTLoss`'s
    calling convention."""
    return _CrossEntropy()


def _equivariance_views(x: torch.Tensor, n_views: int, generator: torch.Generator):
    """``n_views`` random affine versions of ``x`` (rotation up to 90 degrees, translation up to
    0.11 of the image size, zoom 0.8-1.4: the official CUB setting) and their matrices."""
    views = []
    for _ in range(n_views):
        xt, theta = augment.random_affine(
            x, degrees=90.0, translate=0.22, scale=(0.8, 1.4), generator=generator
        )
        views.append((xt, theta))
    return views


@torch.no_grad()
def _embed_all(model, x: torch.Tensor, batch: int, device) -> torch.Tensor:
    out = [model.embed(x[i : i + batch].to(device)) for i in range(0, len(x), batch)]
    return torch.cat(out)


def _optimizer(model, lr: float, finer_lr_factor: float):
    finer = {id(p) for p in getattr(model, "finer_parameters", list)()}
    trainable = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in trainable if id(p) not in finer], "lr": lr}]
    finer_params = [p for p in trainable if id(p) in finer]
    if finer_params:
        groups.append({"params": finer_params, "lr": lr * finer_lr_factor})
    return torch.optim.Adam(groups, lr=lr, weight_decay=0.0)


def train_step(model, criterion, optimizer, tokens, target, tokens_t=None, theta=None, clip=2.0):
    """One optimisation step from cached tokens; returns ``(loss, terms)`` as floats."""
    out = model.forward_from(tokens)
    out_t = model.forward_from(tokens_t) if tokens_t is not None else None
    loss, terms = criterion(out, target, out_t, theta)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], clip)
    optimizer.step()
    return float(loss.detach()), {k: float(v.detach()) for k, v in terms.items()}


def fit(
    model,
    X,
    y,
    criterion=None,
    *,
    epochs: int = 8,
    batch_size: int = 32,
    lr: float = 3e-3,
    finer_lr_factor: float = 1.0,
    step_epochs: int = 4,
    n_views: int = 2,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress=None,
) -> FitResult:
    """Train ``model`` (:class:`IVPT`, :class:`PartPrototypeHead` or :class:`VPTDeep`) on images
    ``X`` (n, 3, H, W) in [0, 1] (numpy or torch) and labels ``y`` with ``criterion``
    (default: :class:`IVPTLoss` for part models, cross-entropy for VPT). When the criterion has
    an equivariance term, ``n_views`` fixed random affine views of every training image are
    cached and epoch ``e`` uses view ``e % n_views``. ``progress(fraction)`` is called per
    epoch."""
    from iclr26.vision.ivpt.losses import IVPTLoss
    from iclr26.vision.ivpt.model import _PartModel

    X = torch.as_tensor(V.check_array(X, "X", ndim=4, dtype=np.float32, low=0.0, high=1.0))
    y = torch.as_tensor(V.check_array(y, "y", ndim=1, dtype=None)).long()
    V.check_same_length(X=X, y=y)
    if y.min() < 0 or y.max() >= model.num_classes:
        raise ValueError(f"y must hold class ids in [0, {model.num_classes})")
    epochs = V.check_int(epochs, "epochs", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    finer_lr_factor = V.check_scalar(finer_lr_factor, "finer_lr_factor", low=0.0)
    step_epochs = V.check_int(step_epochs, "step_epochs", low=1)
    n_views = V.check_int(n_views, "n_views", low=1)
    if criterion is None:
        criterion = IVPTLoss() if isinstance(model, _PartModel) else cross_entropy_objective()
    if not callable(criterion):
        raise TypeError("criterion must be callable (out, target, out_t, theta) -> (loss, terms)")
    device = torch.device(device)
    model.to(device)
    generator = torch.Generator().manual_seed(int(seed))
    started = time.perf_counter()
    tokens = _embed_all(model, X, 256, device)
    transformed = []
    if getattr(criterion, "needs_transform", False):
        for xt, theta in _equivariance_views(X, n_views, generator):
            transformed.append((_embed_all(model, xt, 256, device), theta.to(device)))
    y = y.to(device)
    result = FitResult(cache_seconds=time.perf_counter() - started)
    optimizer = _optimizer(model, lr, finer_lr_factor)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_epochs, gamma=0.5)
    model.train()
    n = len(X)
    for epoch in range(epochs):
        order = torch.randperm(n, generator=generator).to(device)
        total, count, sums = 0.0, 0, {}
        view = transformed[epoch % len(transformed)] if transformed else None
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            tok_t = view[0][idx] if view is not None else None
            theta = view[1][idx] if view is not None else None
            loss, terms = train_step(model, criterion, optimizer, tokens[idx], y[idx], tok_t, theta)
            total += loss * len(idx)
            count += len(idx)
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + v * len(idx)
            result.steps += 1
        scheduler.step()
        result.losses.append(total / count)
        result.terms.append({k: v / count for k, v in sums.items()})
        if progress is not None:
            progress((epoch + 1) / epochs)
    model.eval()
    result.seconds = time.perf_counter() - started
    return result
