"""Fractional-order LIF / IF neurons (multi-step, ``(T, B, ...)``) with surrogate gradients.

The neuron is the right-hand side ``tau D^alpha v = -v + I`` (f-LIF) or ``tau D^alpha v = I``
(f-IF); the history-keeping solver (Grünwald-Letnikov by default) advances it. Each step:
the charge the neuron would reach without reset decides the spike ``s = H(v_charge - theta)``;
with ``reset="rhs"`` (the toolbox's design) ``-s theta / tau`` is added to the right-hand side,
so resets become part of the fractional memory; with ``reset="state"`` ``theta s`` is
subtracted from the stored state. ``alpha = 1`` gives the Euler LIF/IF exactly: with
``reset="state"`` the ordinary one (reset by ``theta``), with ``reset="rhs"`` the toolbox's
(reset by ``theta h / tau``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch
from torch import nn

from iclr26 import validation as V

from .solvers import (
    METHODS,
    FractionalIntegrator,
    _orders,
    check_coefficients,
    check_memory,
    stability_limit,
)

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
    V.check_tensor(x, "x", floating=True)
    V.check_choice(surrogate, "surrogate", SURROGATES)
    return _spike(x, surrogate)


def _spike(x: torch.Tensor, surrogate: str) -> torch.Tensor:
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
        reset: ``"rhs"`` (the toolbox's default, also in its ICLR release: ``-s theta / tau``
            is added to the right-hand side, so the reset enters the fractional memory and,
            at ``alpha = 1``, lowers the membrane by ``theta h / tau``) or ``"state"`` (the
            ordinary subtractive reset ``v <- v - theta s`` of the stored state).
        leaky: ``False`` gives the fractional IF neuron.

    ``alpha = 1`` is first-order: with ``reset="state"`` it is the ordinary discrete LIF
    ``v <- (1 - h/tau) v + (h/tau) I``, spike when ``v >= theta``, ``v <- v - theta``
    (snnTorch's ``Leaky(beta=1 - h/tau, reset_mechanism="subtract")`` on input ``h I / tau``);
    with ``reset="rhs"`` it is the toolbox's LIF, whose reset is ``theta h / tau``.

    The explicit schemes (``gl``, ``l1``, ``pred``) are stable for the leak only while
    ``h^alpha / tau`` stays below :func:`~iclr26.neuro.fsnn.solvers.stability_limit`
    (``2^alpha`` for GL); outside it a ``RuntimeWarning`` is raised at construction (the
    membrane would oscillate with growing amplitude).
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
        tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        threshold = V.check_scalar(threshold, "threshold", low=0.0, low_open=True)
        h = V.check_scalar(h, "h", low=0.0, low_open=True)
        V.check_choice(method, "method", METHODS)
        if len(orders) > 1 and method != "gl":
            raise ValueError(f"multi-term orders need method='gl', got {method!r}")
        V.check_choice(surrogate, "surrogate", SURROGATES)
        memory = check_memory(memory)
        V.check_choice(reset, "reset", RESETS)
        learn_alpha = V.check_bool(learn_alpha, "learn_alpha")
        learn_tau = V.check_bool(learn_tau, "learn_tau")
        leaky = V.check_bool(leaky, "leaky")
        if learn_alpha and max(orders) >= 1.0:
            raise ValueError("alpha: a learnable alpha must start below 1 (alpha = sigmoid(rho))")
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
        self._warn_if_unstable()

    def _warn_if_unstable(self) -> None:
        """Warn when the explicit scheme is outside its stability region for the leak."""
        orders = self.alpha.detach().reshape(-1).tolist()
        if not self.leaky or len(orders) > 1:
            return
        tau = float(self.tau.detach() if self.tau is not None else self.fixed_tau)
        z = self.h ** orders[0] / tau
        limit = stability_limit(self.method, orders[0], self.memory)
        if z >= limit:
            warnings.warn(
                f"tau={tau:g}, h={self.h:g}, alpha={orders[0]:g}: the explicit "
                f"{self.method!r} scheme is unstable for the leak (h^alpha / tau = {z:.3g} >= "
                f"{limit:.3g}); the membrane will oscillate with growing amplitude. Use a "
                "smaller h, a larger tau or method='trap'.",
                RuntimeWarning,
                stacklevel=3,
            )

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
        self._warn_if_unstable()

    def set_solver(self, method: str | None = None, memory: int | None = None) -> None:
        """Change the discretisation scheme and/or the memory length (``-1`` = full history)."""
        if method is not None:
            V.check_choice(method, "method", METHODS)
            if self.alpha.numel() > 1 and method != "gl":
                raise ValueError(f"multi-term orders need method='gl', got {method!r}")
        if memory is not None:
            memory = check_memory(memory)
        if method is not None:
            self.method = method
        if memory is not None:
            self.memory = memory
        if method is not None or memory is not None:
            self._warn_if_unstable()

    def reset_state(self) -> None:
        self.last_membrane = self.last_spikes = None

    def forward(self, currents: torch.Tensor, return_membrane: bool = False):
        V.check_tensor(currents, "currents", floating=True)
        if currents.dim() < 2:
            raise ValueError(
                f"currents must have shape (T, B, ...), got shape {tuple(currents.shape)}"
            )
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
            s = _spike(charge - theta, self.surrogate)
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
