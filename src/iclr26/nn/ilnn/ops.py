"""Lorentz-model primitives for curvature ``K = -c^2 < 0``.

Points are ``x = (x_t, x_s)`` with ``-x_t^2 + |x_s|^2 = 1/K`` and ``x_t > 0``, time coordinate
first (the last tensor dimension holds ``1 + n`` numbers). Internally every formula is evaluated
on the unit hyperboloid (``x~ = c x``) and scaled back, which keeps the algebra of ``K = -1``.
Norms are clamped away from zero so gradients stay finite at the origin.
"""

from __future__ import annotations

import math

import torch

from iclr26 import validation as V

EPS = {torch.float32: 1e-7, torch.float64: 1e-15}


def _eps(x: torch.Tensor) -> float:
    return EPS.get(x.dtype, 1e-7)


class _Asinh(torch.autograd.Function):
    """``asinh`` through ``log1p`` and ``sqrt``, which are vectorised on CPU (``torch.asinh``
    is several times slower there); accurate near 0 and for large arguments."""

    @staticmethod
    def forward(ctx, u: torch.Tensor) -> torch.Tensor:
        a = u.abs()
        root = torch.hypot(a, torch.ones((), dtype=a.dtype))  # sqrt(1 + a^2) without overflow
        ctx.save_for_backward(root)
        small = torch.log1p(a + a * (a / (1.0 + root)))
        large = torch.log(a) + math.log(2.0)  # error 1/(4 a^2); avoids overflow of 2a
        return torch.copysign(torch.where(a < 2.0**28, small, large), u)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (root,) = ctx.saved_tensors
        return grad / root


class _Acosh(torch.autograd.Function):
    """``acosh`` for arguments ``>= 1`` as ``log1p((u - 1) + sqrt((u - 1)(u + 1)))`` (vectorised;
    ``u - 1`` is exact near 1, so the result stays accurate there)."""

    @staticmethod
    def forward(ctx, u: torch.Tensor) -> torch.Tensor:
        shifted = u - 1.0
        root = shifted.sqrt() * (u + 1.0).sqrt()  # no overflow of (u - 1)(u + 1)
        ctx.save_for_backward(root)
        return torch.log1p(shifted + root)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (root,) = ctx.saved_tensors
        return grad / root


def asinh(u: torch.Tensor) -> torch.Tensor:
    """Inverse hyperbolic sine (fast on CPU, with its exact derivative ``1/sqrt(1+u^2)``)."""
    return _Asinh.apply(u)


def acosh(u: torch.Tensor) -> torch.Tensor:
    """Inverse hyperbolic cosine for ``u >= 1`` (callers clamp the argument)."""
    return _Acosh.apply(u)


def curvature_scale(curvature: float) -> float:
    """``c = sqrt(-K)``; raises for a non-negative, NaN or infinite curvature."""
    curvature = V.check_scalar(curvature, "curvature", high=0.0, high_open=True)
    return math.sqrt(-curvature)


def times(x: torch.Tensor, factor: float) -> torch.Tensor:
    """``x * factor``, skipping the copy when ``factor == 1`` (the default curvature ``K = -1``)."""
    return x if factor == 1.0 else x * factor


def inner(x: torch.Tensor, y: torch.Tensor, keepdim: bool = False) -> torch.Tensor:
    """Minkowski product ``-x_t y_t + x_s . y_s``."""
    out = -x[..., :1] * y[..., :1] + (x[..., 1:] * y[..., 1:]).sum(-1, keepdim=True)
    return out if keepdim else out.squeeze(-1)


def _norm(v: torch.Tensor) -> torch.Tensor:
    return v.pow(2).sum(-1, keepdim=True).clamp_min(_eps(v)).sqrt()


def origin(n: int, c: float = 1.0, **like) -> torch.Tensor:
    o = torch.zeros(n + 1, **like)
    o[0] = 1.0 / c
    return o


def lift(x_s: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """The hyperboloid point with spatial part ``x_s``: ``x_t = sqrt(|x_s|^2 + 1/c^2)``."""
    time = (x_s.pow(2).sum(-1, keepdim=True) + 1.0 / c**2).sqrt()
    return torch.cat([time, x_s], dim=-1)


def constraint_error(x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """``|<x, x>_L - 1/K|`` for every point (0 on the hyperboloid)."""
    return (inner(x, x) + 1.0 / c**2).abs()


def check_points(x: torch.Tensor, name: str = "x", size: int | None = None) -> torch.Tensor:
    """A non-empty floating tensor of points ``(..., 1 + n)`` without NaN/inf (and with
    ``1 + n == size`` when given); the message names the argument."""
    V.check_tensor(x, name, min_ndim=1, floating=True)
    if size is not None and x.shape[-1] != size:
        raise ValueError(f"{name} must hold points of size {size}, got {x.shape[-1]}")
    return x


def check_on_manifold(
    x: torch.Tensor, c: float = 1.0, name: str = "x", size: int | None = None
) -> None:
    """:func:`check_points`, then ``ValueError`` unless every point lies on the upper sheet."""
    check_points(x, name, size)
    tol = 1e-3 if x.dtype in (torch.float32, torch.float16, torch.bfloat16) else 1e-8
    scale = 1.0 + x[..., 0].abs() ** 2 * c**2
    rel = constraint_error(x, c) * c**2 / scale
    if (x[..., 0] <= 0).any() or (rel > tol).any():
        raise ValueError(
            f"{name} is not on the Lorentz hyperboloid (-x_t^2 + |x_s|^2 = 1/K, x_t > 0)"
        )


def expmap0(v_s: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Exponential map at the origin of the tangent vector ``(0, v_s)``."""
    n = _norm(v_s)
    return torch.cat([torch.cosh(c * n) / c, torch.sinh(c * n) * v_s / (c * n)], dim=-1)


def logmap0(x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Spatial part of the logarithm at the origin (the time part is 0)."""
    x_s = x[..., 1:]
    n = _norm(x_s)
    return asinh(c * n) / (c * n) * x_s


def dist0(x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Geodesic distance to the origin."""
    return asinh(c * x[..., 1:].pow(2).sum(-1).clamp_min(_eps(x)).sqrt()) / c


def dist(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Geodesic distance ``arccosh(K <x, y>_L) / c``."""
    arg = (-(c**2) * inner(x, y)).clamp_min(1.0 + _eps(x))
    return acosh(arg) / c


def expmap(x: torch.Tensor, v: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Exponential map at ``x`` of a tangent vector ``v`` (ambient coordinates)."""
    xu, vu = times(x, c), times(v, c)
    n = inner(vu, vu, keepdim=True).clamp_min(_eps(x)).sqrt()
    return times(torch.cosh(n) * xu + torch.sinh(n) * vu / n, 1.0 / c)


def logmap(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Logarithm at ``x`` of ``y`` (ambient tangent vector at ``x``)."""
    xu, yu = times(x, c), times(y, c)
    alpha = (-inner(xu, yu, keepdim=True)).clamp_min(1.0 + _eps(x))
    direction = yu - alpha * xu
    n = inner(direction, direction, keepdim=True).clamp_min(_eps(x)).sqrt()
    return times(acosh(alpha) * direction / n, 1.0 / c)


def transp(x: torch.Tensor, y: torch.Tensor, v: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Parallel transport of ``v`` from ``T_x`` to ``T_y``."""
    xu, yu, vu = times(x, c), times(y, c), times(v, c)
    coef = inner(yu, vu, keepdim=True) / (1.0 - inner(xu, yu, keepdim=True))
    return times(vu + coef * (xu + yu), 1.0 / c)


def transp0(x: torch.Tensor, u_s: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Parallel transport of the origin's tangent vector ``(0, u_s)`` to ``T_x``."""
    xu = x * c
    coef = (xu[..., 1:] * u_s * c).sum(-1, keepdim=True) / (1.0 + xu[..., :1])
    o = torch.zeros_like(xu)
    o[..., 0] = 1.0
    u = torch.cat([torch.zeros_like(u_s[..., :1]), u_s * c], dim=-1)
    return (u + coef * (o + xu)) / c


def gyro_add_spatial(
    x_t: torch.Tensor, x_s: torch.Tensor, y_t: torch.Tensor, y_s: torch.Tensor
) -> torch.Tensor:
    """Spatial part of ``x (+) y`` on the unit hyperboloid from the parts of ``x`` and ``y``."""
    k = (x_s * y_s).sum(-1, keepdim=True) / (1.0 + x_t)
    return y_t * x_s + y_s + k * x_s


def gyro_add(x: torch.Tensor, y: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Gyro-addition ``x (+) y = exp_x(PT_{o->x}(log_o y))``; ``o`` is the neutral element.

    Closed form (unit hyperboloid): parallel transport keeps the length ``r = d(o, y)``, and
    ``cosh r = y_t``, ``sinh(r) log_o(y) / r = y_s``, so the exponential map collapses to
    ``y_t x + PT_{o->x}(0, y_s)`` — no transcendental functions.
    """
    xu, yu = times(x, c), times(y, c)
    spatial = gyro_add_spatial(xu[..., :1], xu[..., 1:], yu[..., :1], yu[..., 1:])
    return lift(times(spatial, 1.0 / c), c)


def gyro_neg(x: torch.Tensor) -> torch.Tensor:
    """Gyro-inverse ``(x_t, -x_s)``."""
    return torch.cat([x[..., :1], -x[..., 1:]], dim=-1)


def gyro_scale(t: torch.Tensor | float, x: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    """Gyro scalar multiplication ``t (x) x = exp_o(t log_o x)``."""
    return expmap0(t * logmap0(x, c), c)


def lorentz_centroid(
    x: torch.Tensor, weights: torch.Tensor | None = None, dim: int = 0, c: float = 1.0
) -> torch.Tensor:
    """Closed-form Lorentzian centroid: ``m = sum_i w_i x_i``, ``mu = m / (c sqrt(-<m, m>_L))``."""
    if weights is None:
        m = x.mean(dim)
    else:
        shape = [1] * x.dim()
        shape[dim] = -1
        m = (x * weights.reshape(shape)).sum(dim) / weights.sum()
    norm = (-inner(m, m, keepdim=True)).clamp_min(_eps(x)).sqrt()
    return m / (c * norm)


def log_radius_scale(block_dim: int, blocks: int) -> float:
    """``s_N = exp((psi(n/2) - psi(N n/2)) / 2)``: keeps ``E log |y_s|`` of a concatenation of
    ``N`` isotropic Gaussian blocks of dimension ``n`` equal to that of one block."""
    n = torch.tensor(float(block_dim), dtype=torch.float64)
    return float(
        torch.exp((torch.special.digamma(n / 2) - torch.special.digamma(blocks * n / 2)) / 2)
    )


def lorentz_concat(points: torch.Tensor, c: float = 1.0, scaled: bool = True) -> torch.Tensor:
    """Concatenate ``N`` points ``(..., N, 1+n)`` into one ``(..., 1 + N n)`` point: the spatial
    parts are joined and multiplied by :func:`log_radius_scale` (``scaled=False``: by 1).
    Only the spatial parts are read (the time coordinate is recomputed), so points slightly
    off the hyperboloid are projected; ``points`` must be finite, ``c > 0``."""
    V.check_tensor(points, "points", min_ndim=2, floating=True)
    if points.shape[-1] < 2:
        raise ValueError(
            f"points must have a spatial part (last size >= 2), got {points.shape[-1]}"
        )
    c = V.check_scalar(c, "c", low=0.0, low_open=True)
    V.check_bool(scaled, "scaled")
    blocks, n = points.shape[-2], points.shape[-1] - 1
    spatial = points[..., 1:].reshape(*points.shape[:-2], blocks * n)
    if scaled and blocks > 1:
        spatial = spatial * log_radius_scale(n, blocks)
    return lift(spatial, c)
