"""What every counterfactual method here shares: the query checks at the public boundary,
the result record, per-query weights and the load-free pass counter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision import check_images


@dataclass
class CounterfactualResult:
    """One batch of counterfactuals.

    ``x_cf`` (B, C, H, W) and ``z_cf`` (B, d; None for pixel-space methods); ``path_z``
    (B, T + 1, d) and ``path_x`` (B, T + 1, C, H, W): PCG's geodesic, or the straight line
    of a baseline in its own space; ``energy`` (B,) the path energy where a method has one;
    ``prob_target`` p_f(y* | x_cf) and ``valid`` (prob_target is the largest); ``target``;
    ``passes``: images pushed through the generator, the classifier and the feature network
    (each forward followed by one backward), the load-free cost of the run; ``history``:
    per-stage loss/energy curves."""

    x_cf: torch.Tensor
    z_cf: torch.Tensor | None
    path_z: torch.Tensor | None
    path_x: torch.Tensor
    energy: torch.Tensor | None
    prob_target: torch.Tensor
    valid: torch.Tensor
    target: torch.Tensor
    passes: dict[str, int] = field(default_factory=dict)
    history: dict[str, list[float]] = field(default_factory=dict)
    steps_used: torch.Tensor | None = None


def check_module(value, name: str) -> nn.Module:
    if not isinstance(value, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")
    return value


def freeze(module: nn.Module) -> nn.Module:
    """Eval mode and no parameter gradients: the methods optimise inputs only."""
    return module.eval().requires_grad_(False)


class Counter:
    """Counts images through each network (load-free cost)."""

    def __init__(self):
        self.passes = {"generator": 0, "classifier": 0, "feature": 0}

    def add(self, **counts: int) -> None:
        for k, v in counts.items():
            self.passes[k] += int(v)


def as_weights(value, name: str, batch: int, low: float = 0.0, low_open: bool = True):
    """A positive float, or (internally) a (B,) tensor of per-query weights."""
    if isinstance(value, torch.Tensor) and value.dim() == 1:
        V.check_tensor(value, name, shape=(batch,), floating=True, low=low)
        if low_open and bool((value <= low).any()):
            raise ValueError(f"{name} must be > {low}")
        return value.float()
    return V.check_scalar(value, name, low=low, low_open=low_open)


def prepare_query(
    generator: nn.Module,
    classifier: nn.Module,
    target,
    x0: torch.Tensor | None = None,
    z0: torch.Tensor | None = None,
    encoder: Callable | None = None,
    need_latent: bool = True,
) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, int]:
    """Check a batch of queries and return (z0, x0, target, n_classes).

    The query is ``x0`` (B, C, H, W) in [0, 1] with an ``encoder`` (inv: x -> z; a tuple
    output is read as (mean, ...)), or a latent ``z0`` (B, d) (then x0 = g(z0) unless given).
    ``target`` is an int or a (B,) integer tensor of classes; a target equal to the class f
    predicts for the query is refused (there is nothing to explain)."""
    if x0 is None and z0 is None:
        raise ValueError("x0 or z0 must be given (the query image or its latent code)")
    if x0 is not None:
        check_images(x0, "x0", channels=None, unit_range=True)
    if need_latent:
        if z0 is None:
            if encoder is None:
                raise ValueError("encoder must be given to invert x0 when z0 is None")
            if not callable(encoder):
                raise TypeError(f"encoder must be callable, got {type(encoder).__name__}")
            with torch.no_grad():
                z0 = encoder(x0)
            if isinstance(z0, tuple | list):
                z0 = z0[0]
            if not isinstance(z0, torch.Tensor):
                raise TypeError(f"encoder must return a tensor, got {type(z0).__name__}")
            z0 = z0.reshape(len(x0), -1)
        V.check_tensor(z0, "z0", ndim=2, floating=True)
        if x0 is not None and len(x0) != len(z0):
            raise ValueError(f"z0 must have {len(x0)} rows like x0, got {len(z0)}")
        with torch.no_grad():
            gz = generator(z0.detach())
        if not isinstance(gz, torch.Tensor) or gz.dim() != 4:
            raise ValueError("generator must map latents (B, d) to images (B, C, H, W)")
        if x0 is not None and gz.shape[1:] != x0.shape[1:]:
            raise ValueError(
                f"generator output {tuple(gz.shape[1:])} does not match x0's {tuple(x0.shape[1:])}"
            )
        if x0 is None:
            x0 = gz
        z0 = z0.detach().float()
    batch = len(x0)
    with torch.no_grad():
        logits = classifier(x0)
    if not isinstance(logits, torch.Tensor) or logits.shape[:1] != (batch,) or logits.dim() != 2:
        raise ValueError("classifier must map images (B, C, H, W) to logits (B, n_classes)")
    n_classes = logits.shape[1]
    if isinstance(target, torch.Tensor):
        V.check_tensor(target, "target", ndim=(0, 1), integer=True)
        target = target.reshape(-1).long()
    else:
        target = torch.as_tensor(V.check_array(target, "target", ndim=(0, 1), dtype=None)).reshape(
            -1
        )
        if target.is_floating_point() or target.dtype == torch.bool:
            raise TypeError(f"target must hold integer class ids, got {target.dtype}")
        target = target.long()
    if len(target) == 1:
        target = target.expand(batch).clone()
    if len(target) != batch:
        raise ValueError(f"target must be one class or {batch} classes, got {len(target)}")
    if bool(((target < 0) | (target >= n_classes)).any()):
        raise ValueError(f"target must lie in [0, {n_classes - 1}] (the classifier's classes)")
    same = logits.argmax(1) == target
    if bool(same.any()):
        raise ValueError(
            f"target equals the class the classifier already predicts for query(ies) "
            f"{same.nonzero().flatten().tolist()[:5]}; a counterfactual needs another class"
        )
    return z0, x0.detach(), target.to(logits.device), n_classes


def target_prob(classifier: nn.Module, x: torch.Tensor, target: torch.Tensor):
    with torch.no_grad():
        logits = classifier(x)
    prob = F.softmax(logits, 1).gather(1, target[:, None])[:, 0]
    return prob, logits.argmax(1) == target


def line(a: torch.Tensor, b: torch.Tensor, n_points: int) -> torch.Tensor:
    """(B, n_points + 1, ...) equispaced points from a to b."""
    t = torch.linspace(0, 1, n_points + 1, dtype=a.dtype, device=a.device)
    t = t.reshape(1, -1, *([1] * (a.dim() - 1)))
    return a[:, None] + t * (b - a)[:, None]
