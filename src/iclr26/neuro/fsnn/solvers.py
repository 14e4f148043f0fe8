"""Explicit solvers for the Caputo fractional ODE ``D^alpha v = f(v, t)``, ``0 < alpha <= 1``.

Each scheme writes the new state as an affine function of the newest right-hand side,
``v_k = v_0 + gain * f_{k-1} + memory_k``, where ``memory_k`` sums the stored history with
power-law weights. That form lets a neuron compute the charge it would reach, decide whether it
spikes, and fold the reset into ``f`` before committing the step.

* ``gl``  Grünwald-Letnikov: ``c_0 = 1``, ``c_j = c_{j-1} (1 - (1 + alpha)/j)``,
  ``u_k = h^alpha f - sum_{j=1}^{min(k, M)} c_j u_{k-j}`` with ``u = v - v_0`` (Caputo form).
* ``l1``  Caputo L1: ``b_j = (j+1)^(1-alpha) - j^(1-alpha)``,
  ``u_k = u_{k-1} + Gamma(2-alpha) h^alpha f - sum_{j>=1} b_j (u_{k-j} - u_{k-j-1})``.
* ``pred`` fractional Adams-Bashforth predictor on the Volterra form:
  ``u_k = h^alpha / Gamma(alpha+1) sum_{j<k} ((k-j)^alpha - (k-1-j)^alpha) f_j``.

With ``alpha = 1`` all three reduce to forward Euler, ``v_k = v_{k-1} + h f``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

METHODS = ("gl", "l1", "pred")


def check_alpha(alpha: float) -> None:
    if not isinstance(alpha, (int, float)) or not 0.0 < float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")


def gl_coefficients(alpha: float | torch.Tensor, length: int) -> torch.Tensor:
    """Grünwald-Letnikov weights ``c_0..c_{length-1}`` (differentiable in a tensor ``alpha``)."""
    if length < 1:
        raise ValueError("length must be >= 1")
    alpha = torch.as_tensor(alpha, dtype=torch.get_default_dtype())
    j = torch.arange(1, length, dtype=alpha.dtype)
    factors = 1.0 - (1.0 + alpha) / j
    return torch.cat([torch.ones(1, dtype=alpha.dtype), torch.cumprod(factors, 0)])


def l1_coefficients(alpha: float | torch.Tensor, length: int) -> torch.Tensor:
    """L1 weights ``b_j = (j+1)^(1-alpha) - j^(1-alpha)``, ``j = 0..length-1``."""
    alpha = torch.as_tensor(alpha, dtype=torch.get_default_dtype())
    j = torch.arange(length, dtype=alpha.dtype)
    return (j + 1) ** (1 - alpha) - j ** (1 - alpha)


class FractionalIntegrator:
    """Keeps one layer's history and advances ``D^alpha v = f`` one step at a time.

    ``memory`` is the number of past terms kept in the power-law sums (``-1``: all).
    """

    def __init__(
        self,
        alpha: float | torch.Tensor,
        h: float = 1.0,
        method: str = "gl",
        memory: int = -1,
        v0: torch.Tensor | float = 0.0,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if h <= 0:
            raise ValueError("step h must be positive")
        if memory == 0 or memory < -1:
            raise ValueError("memory must be -1 (full) or a positive number of steps")
        self.alpha = torch.as_tensor(alpha)
        self.h, self.method, self.memory = float(h), method, memory
        self.v0 = v0
        self.history: list[torch.Tensor] = []  # u_1, u_2, ... (u_0 = 0 is implicit)
        self.rhs_history: list[torch.Tensor] = []  # f_0, f_1, ... (pred only)
        self._coefficients = torch.zeros(0)

    def _coeff(self, length: int) -> torch.Tensor:
        if self._coefficients.numel() < length:
            size = max(length, 2 * self._coefficients.numel(), 16)
            maker = gl_coefficients if self.method == "gl" else l1_coefficients
            self._coefficients = maker(self.alpha, size)
        return self._coefficients[:length]

    @property
    def gain(self) -> torch.Tensor:
        """Weight of the newest right-hand side in the update."""
        h_alpha = self.h**self.alpha
        if self.method == "gl":
            return h_alpha
        if self.method == "l1":
            return torch.exp(torch.lgamma(2 - self.alpha)) * h_alpha
        return h_alpha / torch.exp(torch.lgamma(self.alpha + 1))

    def memory_term(self, like: torch.Tensor) -> torch.Tensor:
        """Everything in ``u_k`` except ``gain * f_{k-1}``."""
        k = len(self.history) + 1
        window = k if self.memory < 0 else min(k, self.memory)
        if self.method == "gl":
            past = self.history[::-1][:window]  # u_{k-1}, u_{k-2}, ... (u_0 = 0 omitted)
            if not past:
                return torch.zeros_like(like)
            c = self._coeff(len(past) + 1)[1:].to(like.dtype)
            return -torch.tensordot(c, torch.stack(past), dims=1)
        if self.method == "l1":
            if not self.history:
                return torch.zeros_like(like)
            states = [torch.zeros_like(like)] + self.history  # u_0 .. u_{k-1}
            diffs = [states[k - j] - states[k - j - 1] for j in range(1, min(k, window))]
            out = states[-1]
            if diffs:
                b = self._coeff(len(diffs) + 1)[1:].to(like.dtype)
                out = out - torch.tensordot(b, torch.stack(diffs), dims=1)
            return out
        # pred: weights ((k-j)^a - (k-1-j)^a) for the stored f_j, j < k-1
        past = self.rhs_history[::-1][: window - 1]  # f_{k-2}, f_{k-3}, ...
        if not past:
            return torch.zeros_like(like)
        m = torch.arange(1, len(past) + 1, dtype=like.dtype)  # k-1-j
        w = (m + 1) ** self.alpha.to(like.dtype) - m ** self.alpha.to(like.dtype)
        return self.gain.to(like.dtype) * torch.tensordot(w, torch.stack(past), dims=1)

    def commit(self, u_new: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        """Store ``u_k`` (and ``f_{k-1}`` for ``pred``); returns ``v_k = v_0 + u_k``."""
        self.history.append(u_new)
        if self.method == "pred":
            self.rhs_history.append(rhs)
        return self.v0 + u_new

    def step(self, rhs: torch.Tensor) -> torch.Tensor:
        """Advance by one step given ``f_{k-1}``; returns ``v_k``."""
        u_new = self.gain.to(rhs.dtype) * rhs + self.memory_term(rhs)
        return self.commit(u_new, rhs)

    @property
    def state(self) -> torch.Tensor | float:
        return self.v0 + self.history[-1] if self.history else self.v0


def solve(
    rhs: Callable[[torch.Tensor, float], torch.Tensor],
    v0: torch.Tensor,
    alpha: float,
    h: float,
    steps: int,
    method: str = "gl",
    memory: int = -1,
) -> torch.Tensor:
    """Integrate ``D^alpha v = rhs(v, t)`` from ``v(0) = v0``; returns ``v_0..v_steps``."""
    check_alpha(alpha)
    v0 = torch.as_tensor(v0, dtype=torch.float64)
    integrator = FractionalIntegrator(alpha, h, method, memory, v0=v0)
    values = [v0]
    for k in range(steps):
        values.append(integrator.step(rhs(values[-1], k * h)))
    return torch.stack(values)
