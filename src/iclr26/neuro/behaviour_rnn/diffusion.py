"""DDPM noise schedule and the reverse-step algebra that the RNN's response epoch runs.

Forward (incremental) noising ``x_t = sqrt(1 - beta_t) x_{t-1} + sqrt(beta_t) xi_t`` has the
one-shot marginal ``x_t = a_t x_0 + b_t eps`` with ``a_t = prod_{s<=t} sqrt(1 - beta_s)`` and
``b_t = sqrt(1 - a_t^2)``. The reverse step (Ho et al. 2020, eq. 11, in this parametrisation)
is ``x_{t-1} = x_t / sqrt(1 - beta_t) - beta_t / (sqrt(1 - beta_t) b_t) eps_hat + sigma_t z``
with the posterior standard deviation ``sigma_t = sqrt(beta_t) b_{t-1} / b_t`` (``b_0 = 0``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr26 import validation as V

__all__ = ["DiffusionSchedule", "effective_noise", "forward_trajectory", "reverse_sample"]


class DiffusionSchedule:
    """Linear ``beta`` schedule from ``beta[0]`` to ``beta[1]`` over ``T`` steps (index
    ``t - 1`` holds step ``t``); all coefficients as float64 tensors of length ``T``."""

    def __init__(self, beta: tuple[float, float] = (0.01, 0.30), T: int = 40) -> None:
        self.T = V.check_int(T, "T", low=1)
        if not isinstance(beta, (tuple, list)) or len(beta) != 2:
            raise TypeError(f"beta must be a pair (start, end), got {beta!r}")
        lo = V.check_scalar(beta[0], "beta", low=0.0, high=1.0, low_open=True, high_open=True)
        hi = V.check_scalar(beta[1], "beta", low=0.0, high=1.0, low_open=True, high_open=True)
        self.beta = torch.linspace(lo, hi, self.T, dtype=torch.float64)
        self.keep = torch.sqrt(1.0 - self.beta)  # sqrt(1 - beta_t)
        self.a = torch.cumprod(self.keep, 0)
        self.b = torch.sqrt(1.0 - self.a**2)
        b_prev = torch.cat([torch.zeros(1, dtype=torch.float64), self.b[:-1]])
        self.sigma = torch.sqrt(self.beta) * b_prev / self.b  # sigma_1 = 0
        self.state_scale = 1.0 / self.keep  # multiplies x_t
        self.eps_scale = self.beta / (self.keep * self.b)  # multiplies eps_hat

    def coefficients(self, t: int) -> tuple[float, float, float]:
        """``(1 / sqrt(1 - beta_t), beta_t / (sqrt(1 - beta_t) b_t), sigma_t)`` for step t."""
        t = V.check_int(t, "t", low=1, high=self.T)
        i = t - 1
        return float(self.state_scale[i]), float(self.eps_scale[i]), float(self.sigma[i])


def forward_trajectory(
    x0: torch.Tensor, schedule: DiffusionSchedule, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Incrementally noised trajectories ``(..., T, D)`` (index ``t - 1`` holds ``x_t``)."""
    x0 = V.check_tensor(x0, "x0", min_ndim=1, floating=True)
    if not isinstance(schedule, DiffusionSchedule):
        raise TypeError(f"schedule must be a DiffusionSchedule, got {type(schedule).__name__}")
    keep = schedule.keep.to(x0.dtype).to(x0.device)
    std = torch.sqrt(schedule.beta).to(x0.dtype).to(x0.device)
    xi = torch.randn((*x0.shape[:-1], schedule.T, x0.shape[-1]), generator=generator).to(x0)
    out, x = [], x0
    for i in range(schedule.T):
        x = keep[i] * x + std[i] * xi[..., i, :]
        out.append(x)
    return torch.stack(out, dim=-2)


def effective_noise(
    x_t: torch.Tensor, x0: torch.Tensor, schedule: DiffusionSchedule
) -> torch.Tensor:
    """The one-shot noise ``(x_t - a_t x_0) / b_t`` implied by a trajectory ``(..., T, D)``."""
    if not isinstance(schedule, DiffusionSchedule):
        raise TypeError(f"schedule must be a DiffusionSchedule, got {type(schedule).__name__}")
    x_t = V.check_tensor(x_t, "x_t", min_ndim=2, floating=True)
    x0 = V.check_tensor(x0, "x0", min_ndim=1, floating=True)
    expected = (*x0.shape[:-1], schedule.T, x0.shape[-1])
    if tuple(x_t.shape) != expected:
        raise ValueError(
            f"x_t must have shape {expected} for x0 {tuple(x0.shape)}, got {tuple(x_t.shape)}"
        )
    a = schedule.a.to(x_t)[:, None]
    b = schedule.b.to(x_t)[:, None]
    return (x_t - a * x0.unsqueeze(-2)) / b


def reverse_sample(
    eps_fn: Callable[[torch.Tensor, int], torch.Tensor],
    x_T: torch.Tensor,
    schedule: DiffusionSchedule,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Run the reverse process from ``x_T`` with a noise predictor ``eps_fn(x_t, t)``; returns
    ``x_0``. Used to check the algebra with analytic noise predictors (Gaussian, mixtures)."""
    if not callable(eps_fn):
        raise TypeError(f"eps_fn must be callable, got {type(eps_fn).__name__}")
    if not isinstance(schedule, DiffusionSchedule):
        raise TypeError(f"schedule must be a DiffusionSchedule, got {type(schedule).__name__}")
    x = V.check_tensor(x_T, "x_T", min_ndim=1, floating=True)
    for t in range(schedule.T, 0, -1):
        k, c, s = schedule.coefficients(t)
        z = torch.randn(x.shape, generator=generator).to(x)
        x = k * x - c * eps_fn(x, t) + s * z
    return x
