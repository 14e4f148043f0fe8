"""Gradient descent from small initialisation, observed through the escape from the origin.

Plain GD from a tiny init spends ~ s^{-(L-2)} steps on the plateau. The analysis only needs
the gradient-flow *path*, so we integrate the same flow with a different clock: step size
eta_t = eta_0 max(1, ||theta_ref|| / ||theta_t||)^{L-2} (the natural time of the norm
dynamics, d||theta||/dt ~ ||theta||^{L-1}), with a safety cap ||d theta|| <= cap ||theta_t||.
Weights are snapshotted when the loss first drops below given fractions of the initial loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .diagnostics import weight_rank_profile
from .model import BiasFreeReLUMLP, check_widths


@dataclass
class GDRun:
    """Loss curve, snapshots {fraction: {"step", "loss", "weights", "profile"}} and the model."""

    losses: list[float]
    snapshots: dict[float, dict] = field(default_factory=dict)
    model: BiasFreeReLUMLP | None = None
    norms: list[float] = field(default_factory=list)


def he_init(model: BiasFreeReLUMLP, scale: float, generator: torch.Generator) -> None:
    with torch.no_grad():
        for W in model.weights:
            W.copy_(torch.randn(W.shape, generator=generator, dtype=W.dtype))
            W.mul_(scale * math.sqrt(2.0 / W.shape[1]))


def small_init_gd(
    widths: Sequence[int],
    X,
    Y,
    *,
    init_scale: float = 0.01,
    eta0: float = 0.05,
    steps: int = 2500,
    snapshot_at: Sequence[float] = (0.98, 0.9, 0.8),
    spherical_time: bool = True,
    step_cap: float = 0.02,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    stop_when_done: bool = False,
) -> GDRun:
    """Full-batch GD on C = ||Y - f(X)||^2 / (2N) from He init times ``init_scale``.

    ``spherical_time=False`` is plain GD with constant step ``eta0`` (no cap);
    ``stop_when_done`` ends the run once every snapshot has been taken."""
    widths = check_widths(widths)
    X = torch.as_tensor(np.asarray(X), dtype=dtype)
    Y = torch.as_tensor(np.asarray(Y), dtype=dtype)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0]:
        raise ValueError("X and Y must be 2-D with the same number of rows")
    if X.shape[1] != widths[0] or Y.shape[1] != widths[-1]:
        raise ValueError(f"X/Y columns do not match widths {widths}")
    if not (init_scale > 0 and eta0 > 0 and steps >= 1):
        raise ValueError("init_scale, eta0 and steps must be positive")
    model = BiasFreeReLUMLP(widths, dtype=dtype)
    gen = torch.Generator().manual_seed(int(seed))
    he_init(model, 1.0, gen)
    with torch.no_grad():
        ref_norm = float(model.squared_norm().sqrt())
        for W in model.weights:
            W.mul_(init_scale)
    L = model.depth
    n = X.shape[0]
    params = model.weights
    pending = sorted(snapshot_at, reverse=True)
    run = GDRun(losses=[], model=model)
    loss0 = None
    for step in range(steps + 1):
        for p in params:
            p.grad = None
        loss = 0.5 * ((model(X) - Y) ** 2).sum() / n
        value = float(loss.detach())
        if loss0 is None:
            loss0 = value
        run.losses.append(value)
        while pending and value < pending[0] * loss0:
            frac = pending.pop(0)
            weights = [W.detach().clone() for W in params]
            run.snapshots[frac] = {
                "step": step,
                "loss": value,
                "weights": weights,
                "profile": weight_rank_profile(weights),
            }
        if step == steps or (stop_when_done and not pending):
            break
        loss.backward()
        with torch.no_grad():
            norm = float(torch.sqrt(sum((p**2).sum() for p in params)))
            run.norms.append(norm)
            eta = eta0
            if spherical_time:
                eta = eta0 * max(1.0, ref_norm / norm) ** (L - 2)
                grad_norm = float(torch.sqrt(sum((p.grad**2).sum() for p in params)))
                if eta * grad_norm > step_cap * norm:
                    eta = step_cap * norm / grad_norm
            for p in params:
                p.sub_(eta * p.grad)
    return run
