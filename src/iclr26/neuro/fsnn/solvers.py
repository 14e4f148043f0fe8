"""Solvers for the Caputo fractional ODE ``D^alpha v = f(v, t)``, ``0 < alpha <= 1``, and for
multi-term orders ``sum_i a_i D^{alpha_i} v = f``.

Each scheme writes the new state as an affine function of the newest right-hand side,
``v_k = v_0 + gain * f + memory_k``, where ``memory_k`` sums the stored history with
power-law weights. That form lets a neuron compute the charge it would reach, decide whether it
spikes, and fold the reset into ``f`` before committing the step. With ``u = v - v_0`` (Caputo
form; the Riemann-Liouville schemes below equal Caputo for ``u_0 = 0``):

* ``gl``  Grünwald-Letnikov, first order: ``c_0 = 1``, ``c_j = c_{j-1} (1 - (1 + alpha)/j)``,
  ``u_k = h^alpha f - sum_{j=1}^{min(k, M)} c_j u_{k-j}``. Multi-term:
  ``u_k = [f - sum_i a_i h^{-alpha_i} sum_{j>=1} c_j^{(alpha_i)} u_{k-j}] / sum_i a_i h^{-alpha_i}``.
* ``l1``  Caputo L1, order ``2 - alpha``: ``b_j = (j+1)^(1-alpha) - j^(1-alpha)``,
  ``u_k = u_{k-1} + Gamma(2-alpha) h^alpha f - sum_{j>=1} b_j (u_{k-j} - u_{k-j-1})``.
* ``pred`` fractional Adams-Bashforth predictor on the Volterra form ``u(t) = I^alpha f``:
  ``u_k = h^alpha / Gamma(alpha+1) sum_{j<k} ((k-j)^alpha - (k-1-j)^alpha) f_j``.
* ``trap`` product trapezoidal rule on the Volterra form (second order for smooth ``f``;
  implicit in ``f_k``): ``u_k = h^alpha / Gamma(alpha+2) [f_k + sum_{j<k} a_{j,k} f_j]`` with
  ``a_{0,k} = (k-1)^{alpha+1} - (k-1-alpha) k^alpha`` and
  ``a_{j,k} = (k-j+1)^{alpha+1} - 2 (k-j)^{alpha+1} + (k-j-1)^{alpha+1}``.

With ``alpha = 1``, ``gl``, ``l1`` and ``pred`` reduce to forward Euler ``v_k = v_{k-1} + h f``,
``trap`` to the trapezoidal rule. The weights of a whole sequence are built once, as one
lower-triangular matrix (differentiable in a learnable ``alpha``), so a step is one
matrix-vector product over the stored history.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

from iclr26 import validation as V

METHODS = ("gl", "l1", "pred", "trap")
STORES_RHS = ("pred", "trap")  # methods whose history holds f_j instead of u_j
IMPLICIT = ("trap",)  # methods whose gain multiplies f at the new state


def _orders(alpha) -> list[float]:
    """The order(s) as floats; raises unless each lies in (0, 1]."""
    if isinstance(alpha, bool):
        raise TypeError("alpha must be a number or a sequence of numbers, got a bool")
    if isinstance(alpha, torch.Tensor):
        if alpha.dim() > 1:
            raise ValueError(f"alpha must be a scalar or 1-d, got shape {tuple(alpha.shape)}")
        values = alpha.detach().reshape(-1).tolist()
    elif isinstance(alpha, (int, float)):
        values = [float(alpha)]
    elif isinstance(alpha, Sequence) and not isinstance(alpha, str):
        values = list(alpha)
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in values):
            raise TypeError(f"orders must be numbers, got {alpha!r}")
    else:
        raise TypeError(f"alpha must be a number or a sequence of numbers, got {alpha!r}")
    if not values:
        raise ValueError("need at least one fractional order")
    for a in values:
        if not 0.0 < float(a) <= 1.0:  # also rejects nan
            raise ValueError(f"alpha must lie in (0, 1], got {a!r}")
    return [float(a) for a in values]


def check_memory(memory) -> int:
    """``-1`` (the whole history) or a positive number of past steps."""
    memory = V.check_int(memory, "memory", low=-1)
    if memory == 0:
        raise ValueError("memory must be -1 (full) or a positive int, got 0")
    return memory


def _alternating_sum(terms: Callable[[torch.Tensor], torch.Tensor], count: int | None) -> float:
    """``sum_{m=0}^{count-1} (-1)^m a_m``; ``count=None``: the limit of the series (the mean
    of two consecutive partial sums far out, exact to ~1e-9 for the slowly decaying ``a_m``
    of the fractional weights)."""
    n = 20_001 if count is None else count
    m = torch.arange(n, dtype=torch.float64)
    partial = torch.cumsum(terms(m) * (1.0 - 2.0 * (m % 2)), 0)
    if count is None:
        return float((partial[-1] + partial[-2]) / 2)
    return float(partial[-1])


@functools.lru_cache(maxsize=256)
def stability_limit(method: str, alpha: float, memory: int = -1) -> float:
    """The largest ``z = h^alpha / tau`` for which the explicit scheme keeps the relaxation
    ``tau D^alpha v = -v`` bounded: the boundary of the stability region on the negative real
    axis, where the scheme's characteristic function is evaluated at ``xi = -1``. ``gl``:
    ``2^alpha`` (full memory), ``l1``: ``2 B(-1) / Gamma(2 - alpha)``, ``pred``:
    ``Gamma(alpha + 1) / B(-1)``, with ``B(-1)`` the alternating sum of the scheme's power-law
    weights. All three are 2 at ``alpha = 1`` (forward Euler). ``inf`` for ``trap``."""
    V.check_choice(method, "method", METHODS)
    alpha = _orders(alpha)[0]
    a64 = torch.tensor(alpha, dtype=torch.float64)
    count = None if memory < 0 else memory + 1
    if method == "trap":
        return math.inf
    if method == "gl":
        if count is None:
            return 2.0**alpha
        return _alternating_sum(lambda m: gl_coefficients(a64, len(m)), count)
    if method == "l1":
        weights = _alternating_sum(lambda m: l1_coefficients(a64, len(m)), count)
        return 2.0 * weights / math.gamma(2.0 - alpha)
    weights = _alternating_sum(lambda m: (m + 1) ** alpha - m**alpha, count)
    return math.gamma(alpha + 1.0) / weights


@functools.lru_cache(maxsize=256)
def relaxation_is_stable(
    method: str,
    alpha: tuple[float, ...],
    h: float,
    tau: float,
    memory: int = -1,
    coefficients: tuple[float, ...] | None = None,
    steps: int = 256,
) -> bool:
    """Whether the scheme keeps the relaxation ``tau D^alpha v = -v``, ``v(0) = 1`` bounded:
    the exact solution decays monotonically from 1, so a numerical solution that is still
    larger than 1 in magnitude after ``steps / 2`` steps is outside the scheme's stability
    region. An empirical check (slow), used to test :func:`stability_limit`."""
    orders = list(alpha) if len(alpha) > 1 else alpha[0]
    with torch.no_grad():
        v = solve(
            lambda v, t: -v / tau,
            1.0,
            orders,
            h,
            steps,
            method,
            memory,
            coefficients,
            check_divergence=False,
        )
    late = v[steps // 2 :]
    return bool(torch.isfinite(late).all() and late.abs().max() <= 1.0)


def check_alpha(alpha) -> None:
    """Raise ``ValueError`` unless ``alpha`` (a number or a list of orders) lies in (0, 1]."""
    _orders(alpha)


def check_coefficients(coefficients, n_terms: int) -> list[float]:
    """Multi-term weights ``a_i``: one positive finite number per order (default: ones)."""
    if coefficients is None:
        return [1.0] * n_terms
    if isinstance(coefficients, torch.Tensor):
        coefficients = coefficients.detach().reshape(-1).tolist()
    elif isinstance(coefficients, (int, float)):
        coefficients = [float(coefficients)]
    values = [float(a) for a in coefficients]
    if len(values) != n_terms:
        raise ValueError(f"need {n_terms} coefficients (one per order), got {len(values)}")
    if not all(math.isfinite(a) and a > 0 for a in values):
        raise ValueError(f"coefficients must be positive and finite, got {values}")
    return values


def _as_order_tensor(alpha) -> torch.Tensor:
    """A checked number becomes a default-dtype tensor; a floating tensor keeps its dtype
    (and its graph, for a learnable order)."""
    if isinstance(alpha, torch.Tensor) and alpha.is_floating_point():
        return alpha
    check_alpha(alpha)
    return torch.as_tensor(alpha, dtype=torch.get_default_dtype())


def gl_coefficients(alpha: float | torch.Tensor, length: int) -> torch.Tensor:
    """Grünwald-Letnikov weights ``c_0..c_{length-1}`` (differentiable in a tensor ``alpha``)."""
    length = V.check_int(length, "length", low=1)
    if isinstance(alpha, torch.Tensor):
        _orders(alpha)  # also refuses NaN and orders outside (0, 1]
    alpha = _as_order_tensor(alpha)
    j = torch.arange(1, length, dtype=alpha.dtype)
    factors = 1.0 - (1.0 + alpha) / j
    return torch.cat([torch.ones(1, dtype=alpha.dtype), torch.cumprod(factors, 0)])


def _pow(base: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """``base ** exponent`` with ``0 ** e = 0`` and a finite gradient in ``e`` at base 0."""
    positive = base > 0
    return torch.where(positive, base.clamp(min=1.0) ** exponent, torch.zeros_like(base))


def l1_coefficients(alpha: float | torch.Tensor, length: int) -> torch.Tensor:
    """L1 weights ``b_j = (j+1)^(1-alpha) - j^(1-alpha)``, ``j = 0..length-1``."""
    length = V.check_int(length, "length", low=1)
    if isinstance(alpha, torch.Tensor):
        _orders(alpha)
    alpha = _as_order_tensor(alpha)
    j = torch.arange(length, dtype=alpha.dtype)
    return _pow(j + 1, 1 - alpha) - _pow(j, 1 - alpha)


def _gather(values: torch.Tensor, index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    picked = values[index.clamp(0, values.numel() - 1)]
    return torch.where(mask, picked, torch.zeros_like(picked))


class FractionalIntegrator:
    """Keeps one layer's history and advances ``D^alpha v = f`` one step at a time.

    Args:
        alpha: order in (0, 1] (float or tensor; a tensor that requires grad stays in the
            graph), or a sequence of orders for a multi-term equation (``gl`` only).
        h: time step. method: ``"gl"``, ``"l1"``, ``"pred"`` or ``"trap"``.
        memory: number of past terms kept in the power-law sums (``-1``: all).
        v0: initial value. coefficients: multi-term weights ``a_i`` (default ones).

    A step: ``memory_term()`` gives everything but ``gain * f``; the caller forms
    ``u = gain * f + memory`` (with ``f`` at the old state for explicit methods, at the new
    state for ``trap``) and hands it to ``commit``.
    """

    def __init__(
        self,
        alpha: float | Sequence[float] | torch.Tensor,
        h: float = 1.0,
        method: str = "gl",
        memory: int = -1,
        v0: torch.Tensor | float = 0.0,
        coefficients: Sequence[float] | torch.Tensor | None = None,
    ) -> None:
        V.check_choice(method, "method", METHODS)
        h = V.check_scalar(h, "h", low=0.0, low_open=True)
        memory = check_memory(memory)
        V.check_finite(v0, "v0")
        orders = _orders(alpha)
        self.n_terms = len(orders)
        if self.n_terms > 1 and method != "gl":
            raise ValueError(f"multi-term orders need method='gl', got {method!r}")
        self.term_weights = check_coefficients(coefficients, self.n_terms)
        learnable = isinstance(alpha, torch.Tensor) and alpha.requires_grad
        if learnable:
            self.alpha = alpha.reshape(-1) if self.n_terms > 1 else alpha.reshape(())
        else:
            self.alpha = torch.tensor(
                orders if self.n_terms > 1 else orders[0], dtype=torch.float64
            )
        self.h, self.method, self.memory = float(h), method, memory
        self.v0 = v0
        self.stores_rhs = method in STORES_RHS
        self.implicit = method in IMPLICIT
        self.history: list[torch.Tensor] = []  # u_1, u_2, ... or f_0, f_1, ...
        self.steps = 0
        self.offset: torch.Tensor | float = 0.0  # direct state changes (f-history methods)
        self._weights: torch.Tensor | None = None
        self._cast: dict[torch.dtype, tuple[torch.Tensor, torch.Tensor]] = {}

    # ---- weights -------------------------------------------------------------------------
    @property
    def gain(self) -> torch.Tensor:
        """Weight of the newest right-hand side in the update."""
        alpha, h = self.alpha, self.h
        if self.method == "gl":
            if self.n_terms == 1:
                return h**alpha / self.term_weights[0]
            a = torch.tensor(self.term_weights, dtype=alpha.dtype)
            return 1.0 / (a * h ** (-alpha)).sum()
        if self.method == "l1":
            return torch.exp(torch.lgamma(2 - alpha)) * h**alpha
        if self.method == "pred":
            return h**alpha / torch.exp(torch.lgamma(alpha + 1))
        return h**alpha / torch.exp(torch.lgamma(alpha + 2))

    def _gl_kernel(self, length: int) -> torch.Tensor:
        """``d_j``: GL weights, combined over the terms of a multi-term order."""
        if self.n_terms == 1:
            return gl_coefficients(self.alpha, length)
        a = torch.tensor(self.term_weights, dtype=self.alpha.dtype)
        scaled = a * self.h ** (-self.alpha)
        share = scaled / scaled.sum()
        return sum(share[i] * gl_coefficients(self.alpha[i], length) for i in range(self.n_terms))

    def build_weights(self, length: int) -> torch.Tensor:
        """``W[k, p]``: weight of history entry ``p`` in ``memory_k`` for steps ``k < length``."""
        alpha = self.alpha
        dtype = alpha.dtype
        k = torch.arange(length, dtype=torch.long)[:, None]
        p = torch.arange(length, dtype=torch.long)[None, :]
        window = length + 1 if self.memory < 0 else self.memory
        kf, pf = k.to(dtype), p.to(dtype)
        if self.method in ("gl", "l1"):  # entry p holds u_{p+1}; lag m = k - p - 1
            lag = k - p - 1
            if self.method == "gl":
                d = self._gl_kernel(length + 1)
                return -_gather(d, lag, (lag >= 1) & (lag <= window))
            b = l1_coefficients(alpha, length + 1)
            last = torch.minimum(k, torch.full_like(k, window)) - 1  # J_k
            newest = (lag == 1).to(dtype)
            return (
                torch.where(lag >= 1, newest, torch.zeros_like(newest))
                - _gather(b, lag, (lag >= 1) & (lag <= last))
                + _gather(b, lag - 1, (lag >= 2) & (lag <= last + 1))
            )
        gain = self.gain
        if self.method == "pred":  # entry p holds f_p; f_{k-1} is the newest (weight gain)
            lag = kf - 1 - pf
            valid = (lag >= 1) & (lag <= torch.minimum(kf, torch.full_like(kf, window)) - 1)
            lag = lag.clamp(min=0)
            w = (lag + 1) ** alpha - _pow(lag, alpha)
            return gain * torch.where(valid, w, torch.zeros_like(w))
        # trap: entry p holds f_p, p = 0..k-1; f_k is the newest (weight gain)
        lag = kf - pf
        valid = (lag >= 1) & (lag <= window)
        e = alpha + 1
        lag = lag.clamp(min=1)  # invalid entries are masked below; keep their gradients finite
        interior = (lag + 1) ** e - 2 * lag**e + _pow(lag - 1, e)
        first = _pow(kf - 1, e) - (kf - 1 - alpha) * _pow(kf, alpha)
        w = torch.where(p == 0, first, interior)
        return gain * torch.where(valid, w, torch.zeros_like(w))

    def prepare(self, steps: int) -> None:
        """Build the weights for ``steps`` steps at once (otherwise built on demand)."""
        if self._weights is None or self._weights.shape[0] < steps + 1:
            self._weights = self.build_weights(steps + 1)
            self._cast = {}

    def _weights_for(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        if dtype not in self._cast:
            self._cast[dtype] = (self._weights.to(dtype), self.gain.to(dtype))
        return self._cast[dtype]

    def gain_for(self, like: torch.Tensor) -> torch.Tensor:
        """``gain`` in the dtype of ``like``."""
        if self._weights is None:
            self.prepare(16)
        return self._weights_for(like.dtype)[1]

    # ---- stepping ------------------------------------------------------------------------
    def start(self, rhs0: torch.Tensor) -> None:
        """``trap`` needs ``f_0 = f(v_0, t_0)``; without a call it is taken as 0."""
        if self.method != "trap" or self.history:
            raise ValueError("start() sets f_0 of the trap scheme before the first step")
        self.history.append(rhs0)

    def memory_term(self, like: torch.Tensor) -> torch.Tensor:
        """Everything in ``u_k`` except ``gain * f``, for the coming step ``k``: one
        matrix-vector product of the precomputed weight row with the stacked history."""
        k = self.steps + 1
        if self._weights is None or self._weights.shape[0] <= k:
            self.prepare(max(2 * k, 16))
        if self.method == "trap" and not self.history:
            self.history.append(torch.zeros_like(like))  # f_0 = 0: at rest, no input yet
        weights, _ = self._weights_for(like.dtype)
        n = len(self.history)
        lo = 0 if self.memory < 0 else max(0, n - self.memory - 1)  # older weights are 0
        if n == lo:
            out = torch.zeros_like(like)
        else:
            past = torch.stack(self.history[lo:]).reshape(n - lo, -1)
            out = (weights[k, lo:n] @ past).reshape(like.shape)
        return out + self.offset if self.stores_rhs else out

    def commit(
        self,
        u_new: torch.Tensor,
        rhs: torch.Tensor | None = None,
        jump: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Store step ``k``: ``u_k`` (``gl``/``l1``) or its right-hand side (``pred``: the
        ``f_{k-1}`` it used, ``trap``: ``f_k``). ``jump``: a change made to the state
        directly (e.g. a reset), which ``pred``/``trap`` keep as an offset. Returns ``v_k``."""
        if self.stores_rhs:
            if rhs is None:
                raise ValueError(f"method {self.method!r} stores the right-hand side; pass rhs")
            self.history.append(rhs)
            if jump is not None:
                self.offset = self.offset + jump
        else:
            self.history.append(u_new)
        self.steps += 1
        self._last = self.v0 + u_new
        return self._last

    def step(self, rhs: torch.Tensor) -> torch.Tensor:
        """Explicit step with the given right-hand side; returns ``v_k``."""
        memory = self.memory_term(rhs)
        u_new = self.gain_for(rhs) * rhs + memory
        return self.commit(u_new, rhs)

    @property
    def state(self) -> torch.Tensor | float:
        return self._last if self.steps else self.v0


def solve(
    rhs: Callable[[torch.Tensor, float], torch.Tensor],
    v0: torch.Tensor | float,
    alpha: float | Sequence[float],
    h: float,
    steps: int,
    method: str = "gl",
    memory: int = -1,
    coefficients: Sequence[float] | None = None,
    tol: float = 1e-12,
    max_iter: int = 100,
    check_divergence: bool = True,
) -> torch.Tensor:
    """Integrate ``D^alpha v = rhs(v, t)`` (or ``sum_i a_i D^{alpha_i} v = rhs``) from
    ``v(0) = v0`` in float64; returns ``v_0..v_steps``.

    Explicit methods evaluate ``rhs`` at the previous state; ``trap`` is implicit and iterates
    its corrector to a fixed point (converges when ``h^alpha L / Gamma(alpha+2) < 1`` for an
    ``L``-Lipschitz ``rhs``). A solution that overflows to inf/NaN raises ``ValueError`` (an
    explicit scheme outside its stability region, or a right-hand side that blows up) unless
    ``check_divergence=False``.
    """
    if not callable(rhs):
        raise TypeError(f"rhs must be callable rhs(v, t), got {type(rhs).__name__}")
    check_alpha(alpha)
    h = V.check_scalar(h, "h", low=0.0, low_open=True)
    steps = V.check_int(steps, "steps", low=0)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    V.check_finite(v0, "v0")
    v0 = torch.as_tensor(v0, dtype=torch.float64)
    integrator = FractionalIntegrator(alpha, h, method, memory, v0=v0, coefficients=coefficients)
    integrator.prepare(steps + 1)
    values = [v0]
    if integrator.implicit:
        integrator.start(torch.as_tensor(rhs(v0, 0.0), dtype=torch.float64))
    for k in range(1, steps + 1):
        if not integrator.implicit:
            values.append(integrator.step(rhs(values[-1], (k - 1) * h)))
            continue
        memory_k = integrator.memory_term(v0)
        gain = integrator.gain_for(v0)
        u = values[-1] - v0
        for _ in range(max_iter):
            u_next = gain * rhs(v0 + u, k * h) + memory_k
            change = float((u_next - u).abs().max())
            u = u_next
            if change <= tol * (1.0 + float(u.abs().max())):
                break
        else:
            raise RuntimeError(
                f"the {method} corrector did not converge at step {k}; use a smaller step h"
            )
        values.append(integrator.commit(u, rhs(v0 + u, k * h)))
    out = torch.stack(values)
    if check_divergence and not torch.isfinite(out).all():
        first = int((~torch.isfinite(out)).reshape(len(out), -1).any(1).nonzero()[0])
        raise ValueError(
            f"h={h}: the {method} solution diverged (non-finite at step {first}); an explicit "
            "scheme is unstable when the step is too large for the right-hand side (for "
            "D^alpha v = -lam v, gl needs h^alpha lam < 2^alpha): use a smaller h or 'trap'"
        )
    return out
