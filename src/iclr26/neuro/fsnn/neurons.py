"""Fractional-order LIF / IF neurons (multi-step, ``(T, B, ...)``) with surrogate gradients.

The neuron is the right-hand side ``tau D^alpha v = -v + I`` (f-LIF) or ``tau D^alpha v = I``
(f-IF); the history-keeping solver (Grünwald-Letnikov by default) advances it. Each step:
the charge the neuron would reach without reset decides the spike ``s = H(v_charge - theta)``;
with ``reset="rhs"`` (the toolbox's design) ``-s theta / tau`` is added to the right-hand side,
so resets become part of the fractional memory; with ``reset="state"`` ``theta s`` is
subtracted from the stored state. ``alpha = 1`` gives the ordinary Euler LIF/IF exactly.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .solvers import METHODS, FractionalIntegrator, check_alpha

SURROGATES = ("arctan", "sigmoid")
RESETS = ("rhs", "state")


class _ArctanSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, width: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.width = width
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        a = ctx.width
        return grad * (a / 2) / (1 + (math.pi / 2 * a * x) ** 2), None


class _SigmoidSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, width: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.width = width
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(ctx.width * x)
        return grad * ctx.width * s * (1 - s), None


def spike(x: torch.Tensor, surrogate: str = "arctan") -> torch.Tensor:
    """Heaviside forward, surrogate derivative backward (arctan width 2, sigmoid width 4)."""
    if surrogate == "arctan":
        return _ArctanSpike.apply(x, 2.0)
    if surrogate == "sigmoid":
        return _SigmoidSpike.apply(x, 4.0)
    raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")


class FractionalLIF(nn.Module):
    """Fractional leaky integrate-and-fire neurons: ``(T, B, ...)`` currents -> spikes.

    Args:
        alpha: fractional order in ``(0, 1]``; 1 is the ordinary LIF.
        tau: membrane time constant; threshold: firing threshold ``theta``.
        method: ``"gl"`` (Grünwald-Letnikov), ``"l1"`` or ``"pred"``; ``h``: time step.
        memory: history length in the power-law sums (``-1``: all steps).
        learn_alpha: ``alpha = sigmoid(rho)`` is trained; learn_tau: ``tau`` is trained.
        reset: ``"rhs"`` (reset inside the fractional memory) or ``"state"``.
        leaky: ``False`` gives the fractional IF neuron.
    """

    def __init__(
        self,
        alpha: float = 0.5,
        tau: float = 2.0,
        threshold: float = 1.0,
        method: str = "gl",
        memory: int = -1,
        h: float = 1.0,
        surrogate: str = "arctan",
        learn_alpha: bool = False,
        learn_tau: bool = False,
        reset: str = "rhs",
        leaky: bool = True,
    ) -> None:
        super().__init__()
        check_alpha(alpha)
        if tau <= 0 or threshold <= 0 or h <= 0:
            raise ValueError("tau, threshold and h must be positive")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
        if not isinstance(memory, int) or memory == 0 or memory < -1:
            raise ValueError(f"memory must be -1 (full) or a positive int, got {memory!r}")
        if reset not in RESETS:
            raise ValueError(f"reset must be one of {RESETS}, got {reset!r}")
        if learn_alpha and alpha >= 1.0:
            raise ValueError("a learnable alpha must start below 1 (alpha = sigmoid(rho))")
        self.method, self.memory, self.h = method, memory, h
        self.surrogate, self.reset, self.leaky = surrogate, reset, leaky
        self.threshold = threshold
        self.learn_alpha = learn_alpha
        if learn_alpha:
            self.rho = nn.Parameter(torch.tensor(math.log(alpha / (1 - alpha))))
        else:
            self.register_buffer("fixed_alpha", torch.tensor(float(alpha)))
        tau_t = torch.tensor(float(tau))
        self.tau = nn.Parameter(tau_t) if learn_tau else None
        if not learn_tau:
            self.register_buffer("fixed_tau", tau_t)
        self.last_membrane: torch.Tensor | None = None
        self.last_spikes: torch.Tensor | None = None

    @property
    def alpha(self) -> torch.Tensor:
        return torch.sigmoid(self.rho) if self.learn_alpha else self.fixed_alpha

    def set_alpha(self, alpha: float) -> None:
        check_alpha(alpha)
        if self.learn_alpha:
            raise ValueError("alpha is learnable; set rho instead")
        self.fixed_alpha.fill_(float(alpha))

    def reset_state(self) -> None:
        self.last_membrane = self.last_spikes = None

    def forward(self, currents: torch.Tensor, return_membrane: bool = False):
        if currents.dim() < 2:
            raise ValueError("currents must have shape (T, B, ...)")
        tau = self.tau if self.tau is not None else self.fixed_tau
        alpha = self.alpha
        if isinstance(alpha, torch.Tensor) and not alpha.requires_grad:
            alpha = float(alpha)
        solver = FractionalIntegrator(alpha, self.h, self.method, self.memory)
        v = torch.zeros_like(currents[0])
        spikes, membranes = [], []
        for current in currents:
            drive = (current - v) / tau if self.leaky else current / tau
            gain = solver.gain
            memory = solver.memory_term(current)
            charge = gain * drive + memory
            s = spike(charge - self.threshold, self.surrogate)
            if self.reset == "rhs":
                rhs = drive - s.detach() * self.threshold / tau
                u = gain * rhs + memory
            else:
                rhs = drive
                u = charge - self.threshold * s.detach()
            v = solver.commit(u, rhs)
            spikes.append(s)
            membranes.append(v)
        out = torch.stack(spikes)
        self.last_spikes = out.detach()
        self.last_membrane = torch.stack(membranes).detach()
        if return_membrane:
            return out, torch.stack(membranes)
        return out


class FractionalIF(FractionalLIF):
    """Fractional integrate-and-fire: ``tau D^alpha v = I`` (no leak)."""

    def __init__(self, alpha: float = 0.5, tau: float = 1.0, **kwargs) -> None:
        super().__init__(alpha=alpha, tau=tau, leaky=False, **kwargs)
