"""Step-size schedules for Q-learning: constant, polynomial and power-law decay to zero.

PD2Z-nu is eta_{t,n} = eta (1 - t/n)^nu for the t-th update, t = 0..n-1, so the last update
uses eta (1/n)^nu > 0; nu = 1 is linear decay to zero (LD2Z). Because it depends on the
horizon n, changing n changes every step size. The same family drives any
``torch.optim`` optimizer through :func:`make_torch_scheduler`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr26 import validation as V

SCHEDULE_KINDS = ("constant", "poly", "pd2z", "ld2z")


def _check_horizon(n: int, name: str = "n") -> int:
    return V.check_int(n, name, low=1)


def _check_eta(eta: float) -> float:
    return V.check_scalar(eta, "eta", low=0.0, low_open=True)


def _check_nu(nu: float) -> float:
    return V.check_scalar(nu, "nu", low=0.0, low_open=True)


def _check_alpha(alpha: float) -> float:
    return V.check_scalar(alpha, "alpha", low=0.0, high=1.0, low_open=True)


def _check_kind(kind: str) -> str:
    return V.check_choice(kind, "kind", SCHEDULE_KINDS)


def pd2z_factors(n: int, nu: float) -> np.ndarray:
    """Multipliers (1 - t/n)^nu for t = 0..n-1."""
    n, nu = _check_horizon(n), _check_nu(nu)
    return (1.0 - np.arange(n) / n) ** nu


def pd2z_schedule(eta: float, n: int, nu: float) -> np.ndarray:
    """PD2Z-nu step sizes eta (1 - t/n)^nu, t = 0..n-1."""
    return _check_eta(eta) * pd2z_factors(n, nu)


def ld2z_schedule(eta: float, n: int) -> np.ndarray:
    """LD2Z step sizes eta (1 - t/n): PD2Z with nu = 1."""
    return pd2z_schedule(eta, n, 1.0)


def constant_schedule(eta: float, n: int) -> np.ndarray:
    """Constant step size eta for n updates."""
    return np.full(_check_horizon(n), _check_eta(eta))


def poly_schedule(eta: float, n: int, alpha: float = 0.6) -> np.ndarray:
    """Polynomially decaying step sizes eta (t + 1)^-alpha, t = 0..n-1."""
    n, alpha = _check_horizon(n), _check_alpha(alpha)
    return _check_eta(eta) * (np.arange(n) + 1.0) ** (-alpha)


def make_schedule(
    kind: str, eta: float, n: int, *, nu: float = 1.0, alpha: float = 0.6
) -> np.ndarray:
    """Step sizes of a named schedule: ``constant``, ``poly``, ``pd2z`` or ``ld2z``."""
    _check_kind(kind)
    if kind == "constant":
        return constant_schedule(eta, n)
    if kind == "poly":
        return poly_schedule(eta, n, alpha)
    if kind == "pd2z":
        return pd2z_schedule(eta, n, nu)
    if kind == "ld2z":
        return ld2z_schedule(eta, n)
    raise ValueError(f"unknown schedule {kind!r}; choose one of {SCHEDULE_KINDS}")


def schedule_lambda(
    kind: str, n_steps: int, *, nu: float = 1.0, alpha: float = 0.6
) -> Callable[[int], float]:
    """The multiplier of the base learning rate at step t (for ``LambdaLR``).

    Steps at or past the horizon get multiplier 0 for the decay-to-zero schedules.
    """
    _check_kind(kind)
    n = _check_horizon(n_steps, "n_steps")
    nu, alpha = _check_nu(nu), _check_alpha(alpha)

    def factor(step: int) -> float:
        t = int(step)
        if kind == "constant":
            return 1.0
        if kind == "poly":
            return float((t + 1.0) ** (-alpha))
        power = 1.0 if kind == "ld2z" else float(nu)
        return float(max(0.0, 1.0 - t / n) ** power)

    return factor


def make_torch_scheduler(
    optimizer, kind: str = "pd2z", n_steps: int = 1000, *, nu: float = 1.0, alpha: float = 0.6
):
    """A ``torch.optim.lr_scheduler.LambdaLR`` that follows the named schedule.

    After k calls of ``scheduler.step()`` the learning rate is ``base_lr * factor(k)``, the
    same factor the tabular learner uses for its k-th update.
    """
    import torch

    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, schedule_lambda(kind, n_steps, nu=nu, alpha=alpha)
    )
