"""The lmKAN grid: knots at quantiles of a cheap squashing function, O(1) interval lookup.

The squashing function is the Laplace CDF ``s(x)`` (a stand-in for the Gaussian CDF). With
``G`` intervals the inner knots are ``t_k = s^-1(k / G)``; the two outer knots repeat the
neighbouring spacing. An input's interval is ``floor(s(x) G)`` — no search — and inputs that
are roughly standard normal spread roughly evenly over the intervals.
"""

from __future__ import annotations

import math

import torch

from iclr26 import validation as V


def laplace_cdf(x: torch.Tensor) -> torch.Tensor:
    """``s(x) = exp(x)/2`` for ``x <= 0`` and ``1 - exp(-x)/2`` otherwise (``+inf`` maps to 1,
    ``-inf`` to 0; NaN is refused)."""
    V.check_tensor(x, "x", floating=True, allow_inf=True, nonempty=False)
    return _squash(x)


def laplace_icdf(p: float) -> float:
    """Inverse of :func:`laplace_cdf` for ``0 < p < 1``."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    return math.log(2 * p) if p <= 0.5 else -math.log(2 * (1 - p))


def sigma_grid(num_grids: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ``G + 1`` knots ``t_0 < ... < t_G`` of a grid with ``G = num_grids`` intervals."""
    num_grids = V.check_int(num_grids, "num_grids", low=3)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    inner = [laplace_icdf(k / num_grids) for k in range(1, num_grids)]
    first = inner[0] - (inner[1] - inner[0])
    last = inner[-1] + (inner[-1] - inner[-2])
    return torch.tensor([first, *inner, last], dtype=dtype)


def _squash(x: torch.Tensor) -> torch.Tensor:
    half = 0.5 * torch.exp(-x.abs())
    return torch.where(x <= 0, half, 1.0 - half)


def locate(
    x: torch.Tensor, knots: torch.Tensor, extrapolate: str = "clamp"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Interval index ``i`` (long, detached) and local coordinate ``u`` of every entry of ``x``.

    The index is ``floor(s(x) G)`` clamped to the outer cells (as in the official kernel);
    ``u = (x - t_i) / (t_{i+1} - t_i)`` is clamped to ``[0, 1]`` in ``"clamp"`` mode (the
    default: constant beyond the outer knots) and left free in ``"linear"`` mode (the outer
    cells extend linearly, the official kernel's behaviour).
    """
    num_grids = knots.numel() - 1
    with torch.no_grad():
        index = torch.floor(_squash(x) * num_grids).long().clamp_(0, num_grids - 1)
    left = knots[index]
    width = knots[index + 1] - left
    u = (x - left) / width
    if extrapolate == "clamp":
        u = u.clamp(0.0, 1.0)
    return index, u
