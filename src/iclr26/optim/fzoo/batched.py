"""Batched evaluation of N perturbed losses in one call (``torch.func.vmap``).

The perturbed copies of the trainable parameters are stacked along a leading axis and the
model is called functionally on each slice, so N forward passes run as one batched pass. It
costs N x the trainable parameters in memory, so it is meant for small models or PEFT subsets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.func import functional_call, vmap

from iclr26 import validation as V
from iclr26.optim.fzoo.perturb import directions

MAX_BATCHED_ELEMENTS = 50_000_000


def check_batch(batch: Any, loss_fn: Callable | None) -> Any:
    """A dict of tensors (Hugging Face) or an ``(inputs, targets)`` pair: non-empty, finite
    floating-point entries; a loss_fn is required for pairs."""
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable or None, got {type(loss_fn).__name__}")
    if isinstance(batch, dict):
        if not batch:
            raise ValueError("batch is empty (a dict with no entries)")
        named = batch.items()
    elif isinstance(batch, (tuple, list)) and len(batch) == 2:
        if loss_fn is None:
            raise ValueError("loss_fn is needed for (inputs, targets) batches")
        named = (("batch inputs", batch[0]), ("batch targets", batch[1]))
    else:
        raise TypeError(
            f"batch must be a dict (Hugging Face) or an (inputs, targets) pair, got "
            f"{type(batch).__name__}"
        )
    for name, value in named:
        if isinstance(value, torch.Tensor):
            V.check_tensor(value, f"batch[{name!r}]" if isinstance(batch, dict) else name)
    return batch


def model_loss(model: torch.nn.Module, batch: Any, loss_fn: Callable | None) -> torch.Tensor:
    """The loss of ``model`` on ``batch``: ``model(**batch).loss`` for dict batches (Hugging
    Face), else ``loss_fn(model(x), y)`` for ``(x, y)`` batches."""
    _check_model(model)
    check_batch(batch, loss_fn)
    return _model_loss(model, batch, loss_fn)


def _check_model(model) -> torch.nn.Module:
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return model


def _model_loss(model: torch.nn.Module, batch: Any, loss_fn: Callable | None) -> torch.Tensor:
    if isinstance(batch, dict):
        out = model(**batch)
        if loss_fn is None:
            return out.loss
        return loss_fn(out, batch)
    if loss_fn is None:
        raise ValueError("a loss_fn is needed for (inputs, targets) batches")
    inputs, targets = batch
    return loss_fn(model(inputs), targets)


def batched_losses(
    model: torch.nn.Module,
    params: Sequence[torch.Tensor],
    batch: Any,
    loss_fn: Callable | None,
    perturbations: torch.Tensor | Sequence[torch.Tensor],
) -> torch.Tensor:
    """Losses ``[N]`` of ``model`` with ``params`` replaced by ``params + perturbation_i``.

    ``perturbations`` is either a list with one ``[N, *p.shape]`` tensor per parameter, or a
    ``[N, d]`` matrix of flat perturbations (d = total size of ``params``)."""
    _check_model(model)
    check_batch(batch, loss_fn)
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be a sequence of parameters, got a single tensor")
    params = list(params)
    if not params:
        raise ValueError("params is empty")
    names = {id(p): n for n, p in model.named_parameters()}
    missing = [i for i, p in enumerate(params) if id(p) not in names]
    if missing:
        raise ValueError("params must all be parameters of the model")
    if isinstance(perturbations, torch.Tensor):
        V.check_tensor(perturbations, "perturbations", ndim=2, floating=True)
        blocks, offset = [], 0
        for p in params:
            blocks.append(perturbations[:, offset : offset + p.numel()].reshape(-1, *p.shape))
            offset += p.numel()
        if offset != perturbations.shape[1]:
            raise ValueError(
                f"perturbations have {perturbations.shape[1]} columns, params {offset}"
            )
        perturbations = blocks
    else:
        perturbations = list(perturbations)
        if len(perturbations) != len(params):
            raise ValueError(
                f"perturbations must hold one tensor per parameter ({len(params)}), got "
                f"{len(perturbations)}"
            )
        for j, (p, dp) in enumerate(zip(params, perturbations)):
            V.check_tensor(dp, f"perturbations[{j}]", floating=True)
            if tuple(dp.shape[1:]) != tuple(p.shape) or dp.shape[0] != perturbations[0].shape[0]:
                raise ValueError(
                    f"perturbations[{j}] must have shape [N, *{tuple(p.shape)}] with the same N "
                    f"for every parameter, got {tuple(dp.shape)}"
                )
    n = perturbations[0].shape[0]
    if n * sum(p.numel() for p in params) > MAX_BATCHED_ELEMENTS:
        raise ValueError("batched evaluation would stack too many parameters; use batched=False")
    stacked = {names[id(p)]: p.detach() + dp for p, dp in zip(params, perturbations)}

    def one(pdict):
        return _as_scalar(_functional_loss(model, pdict, batch, loss_fn))

    with torch.no_grad():
        return vmap(one)(stacked)


def _functional_loss(model, pdict, batch, loss_fn):
    if isinstance(batch, dict):
        out = functional_call(model, pdict, args=(), kwargs=batch)
        return out.loss if loss_fn is None else loss_fn(out, batch)
    inputs, targets = batch
    return loss_fn(functional_call(model, pdict, (inputs,)), targets)


def _as_scalar(loss: torch.Tensor) -> torch.Tensor:
    if loss.numel() != 1:
        raise ValueError(f"the loss must be a scalar, got shape {tuple(loss.shape)}")
    return loss.reshape(())


def stacked_perturbations(
    params: Sequence[torch.Tensor], seeds: Sequence[int], kind: str, eps: float
) -> list[torch.Tensor]:
    """One ``[N, *p.shape]`` tensor per parameter: eps * u(seed_i), regenerated from seeds."""
    per_seed = [list(directions(params, s, kind)) for s in seeds]
    return [torch.stack([blocks[j] for blocks in per_seed]) * eps for j in range(len(params))]


class ModelClosure:
    """A zeroth-order closure bound to a model, a batch and a loss: calling it returns the
    loss at the current weights (no backward); ``batched(...)`` evaluates N perturbations in
    one vmapped call. FZOO's ``batched=True`` path needs a closure of this kind."""

    def __init__(self, model: torch.nn.Module, batch: Any, loss_fn: Callable | None = None):
        _check_model(model)
        check_batch(batch, loss_fn)
        self.model, self.batch, self.loss_fn = model, batch, loss_fn

    def __call__(self) -> torch.Tensor:
        with torch.no_grad():
            return _model_loss(self.model, self.batch, self.loss_fn)

    def batched(self, params, perturbations) -> torch.Tensor:
        return batched_losses(self.model, params, self.batch, self.loss_fn, perturbations)


def make_closure(model: torch.nn.Module, batch: Any, loss_fn: Callable | None = None):
    return ModelClosure(model, batch, loss_fn)
