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

from iclr26 import validation as V

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
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    X = V.check_array(X, "X", ndim=2, shape=(None, widths[0]))
    Y = V.check_array(Y, "Y", ndim=2, shape=(X.shape[0], widths[-1]))
    X = torch.as_tensor(X, dtype=dtype)
    Y = torch.as_tensor(Y, dtype=dtype)
    init_scale = V.check_scalar(init_scale, "init_scale", low=0.0, low_open=True)
    eta0 = V.check_scalar(eta0, "eta0", low=0.0, low_open=True)
    steps = V.check_int(steps, "steps", low=1)
    step_cap = V.check_scalar(step_cap, "step_cap", low=0.0, low_open=True)
    spherical_time = V.check_bool(spherical_time, "spherical_time")
    stop_when_done = V.check_bool(stop_when_done, "stop_when_done")
    if isinstance(snapshot_at, str) or not hasattr(snapshot_at, "__iter__"):
        raise TypeError(f"snapshot_at must be a sequence of loss fractions, got {snapshot_at!r}")
    snapshot_at = [
        V.check_scalar(f, "snapshot_at", low=0.0, high=1.0, low_open=True) for f in snapshot_at
    ]
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
        if not np.isfinite(value):
            raise ValueError(
                f"eta0={eta0} makes gradient descent diverge (loss {value} at step {step}); "
                "use a smaller eta0"
            )
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
