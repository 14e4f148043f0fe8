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
from collections.abc import Sequence

import torch
from torch import nn

from .solvers import METHODS, FractionalIntegrator, _orders, check_coefficients

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
        alpha: fractional order in ``(0, 1]``; 1 is the ordinary LIF. A list of orders with
            ``coefficients`` gives the multi-term neuron ``sum_i a_i tau D^{alpha_i} v = -v + I``
            (``method="gl"`` only).
        tau: membrane time constant; threshold: firing threshold ``theta``.
        method: ``"gl"`` (Grünwald-Letnikov), ``"l1"``, ``"pred"`` or ``"trap"`` (product
            trapezoidal, implicit in the leak); ``h``: time step.
        memory: history length in the power-law sums (``-1``: all steps).
        learn_alpha: ``alpha = sigmoid(rho)`` is trained; learn_tau: ``tau`` is trained.
        reset: ``"rhs"`` (reset inside the fractional memory) or ``"state"``.
        leaky: ``False`` gives the fractional IF neuron.
    """

    def __init__(
        self,
        alpha: float | Sequence[float] = 0.5,
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
        coefficients: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        orders = _orders(alpha)
        for name, value in (("tau", tau), ("threshold", threshold), ("h", h)):
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if len(orders) > 1 and method != "gl":
            raise ValueError(f"multi-term orders need method='gl', got {method!r}")
        if surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
        if not isinstance(memory, int) or memory == 0 or memory < -1:
            raise ValueError(f"memory must be -1 (full) or a positive int, got {memory!r}")
        if reset not in RESETS:
            raise ValueError(f"reset must be one of {RESETS}, got {reset!r}")
        if learn_alpha and max(orders) >= 1.0:
            raise ValueError("a learnable alpha must start below 1 (alpha = sigmoid(rho))")
        self.method, self.memory, self.h = method, memory, float(h)
        self.surrogate, self.reset, self.leaky = surrogate, reset, leaky
        self.threshold = float(threshold)
        self.learn_alpha = learn_alpha
        self.register_buffer(
            "term_weights",
            torch.tensor(check_coefficients(coefficients, len(orders))),
        )
        start = torch.tensor(orders if len(orders) > 1 else orders[0])
        if learn_alpha:
            self.rho = nn.Parameter(torch.log(start / (1 - start)))
        else:
            self.register_buffer("fixed_alpha", start)
        tau_t = torch.tensor(float(tau))
        self.tau = nn.Parameter(tau_t) if learn_tau else None
        if not learn_tau:
            self.register_buffer("fixed_tau", tau_t)
        self.last_membrane: torch.Tensor | None = None
        self.last_spikes: torch.Tensor | None = None

    @property
    def alpha(self) -> torch.Tensor:
        """The order (a 0-d tensor) or the orders of a multi-term neuron (1-d)."""
        return torch.sigmoid(self.rho) if self.learn_alpha else self.fixed_alpha

    def set_alpha(
        self, alpha: float | Sequence[float], coefficients: Sequence[float] | None = None
    ) -> None:
        """Replace the order(s); a new number of terms resets the weights to ones."""
        orders = _orders(alpha)
        if self.learn_alpha:
            raise ValueError("alpha is learnable; set rho instead")
        if len(orders) > 1 and self.method != "gl":
            raise ValueError(f"multi-term orders need method='gl', got {self.method!r}")
        if coefficients is None and len(orders) == self.term_weights.numel():
            coefficients = self.term_weights.tolist()
        self.term_weights = torch.tensor(check_coefficients(coefficients, len(orders)))
        self.fixed_alpha = torch.tensor(orders if len(orders) > 1 else orders[0])

    def set_solver(self, method: str | None = None, memory: int | None = None) -> None:
        """Change the discretisation scheme and/or the memory length (``-1`` = full history)."""
        if method is not None:
            if method not in METHODS:
                raise ValueError(f"method must be one of {METHODS}, got {method!r}")
            if self.alpha.numel() > 1 and method != "gl":
                raise ValueError(f"multi-term orders need method='gl', got {method!r}")
            self.method = method
        if memory is not None:
            if not isinstance(memory, int) or memory == 0 or memory < -1:
                raise ValueError(f"memory must be -1 (full) or a positive int, got {memory!r}")
            self.memory = memory

    def reset_state(self) -> None:
        self.last_membrane = self.last_spikes = None

    def forward(self, currents: torch.Tensor, return_membrane: bool = False):
        if not isinstance(currents, torch.Tensor):
            raise TypeError(f"currents must be a torch.Tensor, got {type(currents).__name__}")
        if currents.dim() < 2:
            raise ValueError(
                f"currents must have shape (T, B, ...), got shape {tuple(currents.shape)}"
            )
        if not currents.is_floating_point():
            raise TypeError(f"currents must be floating point, got {currents.dtype}")
        tau = self.tau if self.tau is not None else self.fixed_tau
        alpha = self.alpha
        if not alpha.requires_grad:
            alpha = alpha.tolist()
        solver = FractionalIntegrator(
            alpha, self.h, self.method, self.memory, coefficients=self.term_weights
        )
        solver.prepare(currents.shape[0])
        gain = solver.gain_for(currents)
        theta = self.threshold
        if solver.implicit:  # f at the new state: u = gain * (I - u - theta s) / tau + memory
            shrink = 1 + gain / tau if self.leaky else torch.ones_like(gain)
        v = torch.zeros_like(currents[0])
        spikes, membranes = [], []
        for current in currents:
            memory = solver.memory_term(current)
            if solver.implicit:
                charge = (gain * current / tau + memory) / shrink
                drive = (current - charge) / tau if self.leaky else current / tau
            else:
                drive = (current - v) / tau if self.leaky else current / tau
                charge = gain * drive + memory
            s = spike(charge - theta, self.surrogate)
            jump = None
            if self.reset == "rhs":
                rhs = drive - s.detach() * theta / tau
                if solver.implicit:
                    u = charge - gain * s.detach() * theta / (tau * shrink)
                    rhs = (current - u) / tau - s.detach() * theta / tau if self.leaky else rhs
                else:
                    u = gain * rhs + memory
            else:
                rhs = drive
                jump = -theta * s.detach()
                u = charge + jump
            v = solver.commit(u, rhs, jump)
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
