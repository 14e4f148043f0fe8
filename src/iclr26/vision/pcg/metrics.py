"""Evaluation of counterfactuals: validity under the explained classifier f, semantic
validity under an independent robust oracle, the Frechet distance to real images of the
target class in the oracle's feature space, the L1 edit size and path smoothness."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.metrics.vision import frechet_distance as _frechet
from iclr26.models.vision import check_images


def _predict(model: nn.Module, x: torch.Tensor, name: str) -> torch.Tensor:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    check_images(x, "x_cf", channels=None)
    with torch.no_grad():
        return model.eval()(x).argmax(1)


def _targets(target, n: int) -> torch.Tensor:
    t = torch.as_tensor(V.check_array(target, "target", ndim=1, dtype=np.int64, n_rows=n))
    return t


def validity(classifier: nn.Module, x_cf: torch.Tensor, target) -> float:
    """Fraction of counterfactuals that ``classifier`` assigns to their target class."""
    pred = _predict(classifier, x_cf, "classifier").cpu()
    return float((pred == _targets(target, len(x_cf))).float().mean())


def oracle_validity(oracle: nn.Module, x_cf: torch.Tensor, target) -> float:
    """Fraction of counterfactuals that an independent (robust) ``oracle`` labels with the
    target: semantic validity. Its complement among f-valid ones is adversarial collapse."""
    pred = _predict(oracle, x_cf, "oracle").cpu()
    return float((pred == _targets(target, len(x_cf))).float().mean())


def frechet_distance(
    features: Callable[[torch.Tensor], torch.Tensor], x_cf: torch.Tensor, x_real: torch.Tensor
) -> float:
    """The Frechet distance between Gaussian fits of ``features(x_cf)`` and
    ``features(x_real)`` (the FID formula, in the given feature space)."""
    if not callable(features):
        raise TypeError(f"features must be callable, got {type(features).__name__}")
    check_images(x_cf, "x_cf", channels=None)
    check_images(x_real, "x_real", channels=x_cf.shape[1])
    with torch.no_grad():
        a, b = features(x_cf).flatten(1), features(x_real).flatten(1)
    return _frechet(a.double().cpu().numpy(), b.double().cpu().numpy())


def l1(x_cf: torch.Tensor, x0: torch.Tensor) -> float:
    """Mean over counterfactuals of the per-pixel mean |x_cf - x0|."""
    check_images(x_cf, "x_cf", channels=None)
    V.check_tensor(x0, "x0", shape=tuple(x_cf.shape), floating=True)
    return float((x_cf - x0).abs().flatten(1).mean(1).mean())


def path_smoothness(
    features: Callable[[torch.Tensor], torch.Tensor], path_x: torch.Tensor
) -> torch.Tensor:
    """max step / mean step of each path's consecutive distances in ``features`` space,
    (B,); 1 is an equispaced path, large values a jump. ``path_x`` is (B, T + 1, C, H, W)."""
    if not callable(features):
        raise TypeError(f"features must be callable, got {type(features).__name__}")
    V.check_tensor(path_x, "path_x", ndim=5, floating=True)
    if path_x.shape[1] < 2:
        raise ValueError(f"path_x must hold at least 2 points per path, got {path_x.shape[1]}")
    batch, n = path_x.shape[:2]
    with torch.no_grad():
        emb = features(path_x.flatten(0, 1)).reshape(batch, n, -1)
    steps = (emb[:, 1:] - emb[:, :-1]).norm(dim=-1)
    return steps.max(1).values / steps.mean(1).clamp_min(1e-12)
