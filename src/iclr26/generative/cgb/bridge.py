"""The reference process and the consistency geodesic bridge (paper Eq. 6, Prop. 4.1).

The foundation model's rectified flow runs ``z_t = (1 - t) x0 + t eps`` with velocity
``v = eps - x0``. The bridge runs only over the truncated horizon ``[0, T0]``: it starts at the
entropy-regularised point ``x_T0 = (1 - T0) y + T0 eps`` and follows
``x_t = (1 - t) m_t + t eps`` with ``m_t = (1 - s_t) x0 + s_t y``, ``s_t = (t / T0)^kappa``, so
the noise level ``t`` matches the reference process and the network is queried in
distribution. The one-step map inverts that equation given a velocity prediction
(:meth:`CGBBridge.solve`)."""

from __future__ import annotations

import torch

from iclr26 import validation as V


class RectifiedFlowSchedule:
    """``z_t = (1 - t) x0 + t eps`` on ``t in [0, 1]``; the network's velocity is ``eps - x0``."""

    @staticmethod
    def marginal(x0: torch.Tensor, eps: torch.Tensor, t) -> torch.Tensor:
        x0 = V.check_tensor(x0, "x0", floating=True)
        eps = V.check_tensor(eps, "eps", shape=tuple(x0.shape), floating=True)
        t = _bcast(_check_t(t), x0)
        return (1 - t) * x0 + t * eps

    @staticmethod
    def velocity(x0: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        x0 = V.check_tensor(x0, "x0", floating=True)
        eps = V.check_tensor(eps, "eps", shape=tuple(x0.shape), floating=True)
        return eps - x0

    @staticmethod
    def denoise(z: torch.Tensor, v: torch.Tensor, t) -> torch.Tensor:
        """``D(z, t) = z - t v``, the network's estimate of ``E[x0 | z_t = z]``."""
        z = V.check_tensor(z, "z", floating=True)
        v = V.check_tensor(v, "v", shape=tuple(z.shape), floating=True)
        return z - _bcast(_check_t(t), z) * v


def _check_t(t):
    if isinstance(t, torch.Tensor):
        return V.check_tensor(t, "t", ndim=(0, 1), low=0.0, high=1.0)
    return V.check_scalar(t, "t", low=0.0, high=1.0)


def _bcast(t, like: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(t, dtype=like.dtype, device=like.device)
    if t.dim() == 0:
        return t
    return t.reshape(-1, *([1] * (like.dim() - 1)))


def check_T0(T0, name: str = "T0") -> float:
    """The truncated horizon: a number strictly inside (0, 1)."""
    return V.check_scalar(T0, name, low=0.0, high=1.0, low_open=True, high_open=True)


class CGBBridge:
    """The truncated bridge from ``y`` (at ``t = T0``) to ``x0`` (at ``t = 0``).

    ``kappa`` is the curvature exponent of the mixing weight ``s_t = (t / T0)^kappa``; the
    released sampler uses ``kappa = 1`` (linear transport of the mean, Prop. 4.1)."""

    def __init__(self, T0: float = 0.7, kappa: float = 1.0):
        self.T0 = check_T0(T0)
        self.kappa = V.check_scalar(kappa, "kappa", low=0.0, low_open=True, high=10.0)

    @classmethod
    def batched(cls, T0: torch.Tensor, kappa: float) -> CGBBridge:
        """A bridge with one (already validated) horizon per row, shape ``(n, 1, 1, 1)``."""
        out = cls.__new__(cls)
        out.T0, out.kappa = T0, kappa
        return out

    # -- the path ---------------------------------------------------------------
    def s(self, t):
        return (t / self.T0) ** self.kappa

    def ds(self, t):
        """``d s_t / dt``."""
        return self.kappa * (t / self.T0) ** (self.kappa - 1) / self.T0

    def start(self, y: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """The entropy-regularised start ``(1 - T0) y + T0 eps``."""
        return (1 - self.T0) * y + self.T0 * eps

    def marginal(self, x0, y, eps, t) -> torch.Tensor:
        """``x_t = (1 - t) [(1 - s_t) x0 + s_t y] + t eps`` (``t`` a scalar or one per row)."""
        t = _bcast(t, x0)
        s = self.s(t)
        return (1 - t) * ((1 - s) * x0 + s * y) + t * eps

    def velocity(self, x0, y, eps, t) -> torch.Tensor:
        """The conditional velocity ``u_t = d x_t / dt`` along the path of ``(x0, y, eps)``."""
        t = _bcast(t, x0)
        s = self.s(t)
        m = (1 - s) * x0 + s * y
        return -m + (1 - t) * self.ds(t) * (y - x0) + eps

    # -- the analytic one-step map (inversion of the bridge equation) -------------
    def coefficients(self, t):
        """``A(t), B(t), C(t)`` with ``x_t = A y + B v + C x0`` for ``v = eps - x0``:
        ``A = (1 - t) s_t``, ``B = t``, ``C = 1 - (1 - t) s_t``."""
        s = self.s(t)
        return (1 - t) * s, t, 1 - (1 - t) * s

    def solve(self, x, y, v, t) -> torch.Tensor:
        """``F(x, y, t) = (x - A y - B v) / C``: exact ``x0`` when ``v = eps - x0``, and
        ``F(x, y, 0) = x`` (the consistency boundary condition)."""
        t = _bcast(t, x)
        a, b, c = self.coefficients(t)
        return (x - a * y - b * v) / c

    # -- action and energy ------------------------------------------------------
    def action(self, x0, y, n_mc: int = 256, n_t: int = 64, generator=None) -> torch.Tensor:
        """Monte-Carlo ``int_0^T0 E_eps ||u_t||^2 dt`` per image (midpoint rule in ``t``)."""
        x0, y = _pair(x0, y)
        n_mc = V.check_int(n_mc, "n_mc", low=1)
        n_t = V.check_int(n_t, "n_t", low=1)
        ts = (torch.arange(n_t, dtype=x0.dtype) + 0.5) / n_t * self.T0
        total = torch.zeros(x0.shape[0], dtype=x0.dtype)
        for t in ts:
            eps = torch.randn((n_mc, *x0.shape), generator=generator, dtype=x0.dtype)
            u = self.velocity(x0.unsqueeze(0), y.unsqueeze(0), eps, t)
            total += u.pow(2).flatten(2).sum(-1).mean(0)
        return total * self.T0 / n_t

    def action_closed_form(self, x0, y) -> torch.Tensor:
        """``A(T0) = T0 (d + |x0|^2) + |delta|^2 (1/T0 - 2 + 4 T0 / 3) - 2 (1 - T0) <x0, delta>``
        with ``delta = y - x0`` (``kappa = 1`` only)."""
        if self.kappa != 1.0:
            raise ValueError("kappa must be 1 for the closed-form action")
        x0, y = _pair(x0, y)
        a, b = x0.flatten(1), (y - x0).flatten(1)
        T0, d = self.T0, a.shape[1]
        return (
            T0 * (d + a.pow(2).sum(1))
            + b.pow(2).sum(1) * (1 / T0 - 2 + 4 * T0 / 3)
            - 2 * (1 - T0) * (a * b).sum(1)
        )

    def terminal_cost(self, y, eps, gamma: float = 1.0) -> torch.Tensor:
        """``(gamma / 2) ||x_T0 - y||^2 = (gamma / 2) T0^2 ||eps - y||^2`` per image."""
        gamma = V.check_scalar(gamma, "gamma", low=0.0)
        return 0.5 * gamma * (self.start(y, eps) - y).flatten(1).pow(2).sum(1)

    def energy(self, x0, y, gamma: float = 1.0, n_mc: int = 256, generator=None) -> torch.Tensor:
        """Kinetic action plus the expected terminal cost (paper Eq. 4; ``gamma`` is ours)."""
        gamma = V.check_scalar(gamma, "gamma", low=0.0)
        x0, y = _pair(x0, y)
        kinetic = (
            self.action_closed_form(x0, y)
            if self.kappa == 1.0
            else self.action(x0, y, n_mc, generator=generator)
        )
        d = x0[0].numel()
        # E||eps - y||^2 = d + ||y||^2
        terminal = 0.5 * gamma * self.T0**2 * (d + y.flatten(1).pow(2).sum(1))
        return kinetic + terminal


def _pair(x0, y):
    x0 = V.check_tensor(x0, "x0", min_ndim=2, floating=True)
    y = V.check_tensor(y, "y", shape=tuple(x0.shape), floating=True)
    return x0, y
