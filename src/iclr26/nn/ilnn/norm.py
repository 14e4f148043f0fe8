"""Batch normalisation on the Lorentz hyperboloid: GyroLBN (the paper's), LBN and GyroBN.

GyroLBN: (a) closed-form Lorentzian centroid ``mu``; (b) gyro-centering ``(-mu) (+) x_i``;
(c) Fréchet variance ``s2 = mean d(o, x~_i)^2``; (d) gyro-scaling by ``gamma / sqrt(s2 + eps)``;
(e) gyro bias ``expmap0(beta) (+) x^_i``. Running statistics move along the gyro-geodesic
towards the batch mean. GyroBN is the same pipeline with the Fréchet mean found by Karcher
flow; LBN centres by parallel transport and rescales in the tangent space at the origin.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

from . import ops

DISPERSIONS = ("frechet_variance", "mean_distance")


class _LorentzNormBase(nn.Module):
    def __init__(
        self,
        num_features: int,
        curvature: float = -1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        gamma_init: float = 1.0,
    ) -> None:
        super().__init__()
        num_features = V.check_int(num_features, "num_features", low=1)
        momentum = V.check_scalar(momentum, "momentum", low=0.0, high=1.0, low_open=True)
        eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
        gamma_init = V.check_scalar(gamma_init, "gamma_init", low=0.0, low_open=True)
        self.c = ops.curvature_scale(curvature)
        self.num_features, self.momentum, self.eps = num_features, momentum, eps
        self.gamma = nn.Parameter(torch.full((), gamma_init))
        self.beta = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", ops.origin(num_features, self.c))
        self.register_buffer("running_var", torch.ones(()))
        self.validate_input = True  # models switch this off for their inner layers

    def batch_mean(self, flat: torch.Tensor) -> torch.Tensor:
        """Closed-form Lorentzian centroid of the batch (GyroBN overrides with Karcher flow)."""
        return ops.lorentz_centroid(flat, dim=0, c=self.c)

    def _flatten(self, x: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_on_manifold(x, self.c, "x", self.num_features + 1)
        elif x.shape[-1] != self.num_features + 1:
            raise ValueError(
                f"x must hold points of size {self.num_features + 1}, got {x.shape[-1]}"
            )
        flat = x.reshape(-1, x.shape[-1])
        if self.training and flat.shape[0] < 2:
            # like torch.nn.BatchNorm: one point has no dispersion to normalise by
            raise ValueError(
                f"x must hold more than 1 point per channel when training, got input size "
                f"{tuple(x.shape)} (call .eval() to use the running statistics)"
            )
        return flat

    def _update_running(self, mu: torch.Tensor, var: torch.Tensor) -> None:
        with torch.no_grad():
            step = ops.gyro_add(
                ops.gyro_neg(self.running_mean), mu.to(self.running_mean.dtype), self.c
            )
            moved = ops.gyro_add(
                self.running_mean, ops.gyro_scale(self.momentum, step, self.c), self.c
            )
            self.running_mean.copy_(moved)
            self.running_var.mul_(1 - self.momentum).add_(
                self.momentum * var.to(self.running_var.dtype)
            )


class GyroLBN(_LorentzNormBase):
    """The paper's gyro Lorentz batch norm (closed-form centroid + Fréchet-variance scaling).

    ``dispersion="frechet_variance"`` (default, the paper's step (c)): ``s2 = mean d(o, x~_i)^2``
    and the factor ``gamma / sqrt(s2 + eps)`` (``gamma`` starts at 1). ``"mean_distance"``
    follows the released code: ``s = mean d(o, x~_i)``, factor
    ``clamp(gamma, -2.5, 2) / sqrt(s + eps)`` with ``gamma`` starting at 0.5.
    """

    def __init__(
        self,
        num_features: int,
        curvature: float = -1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        dispersion: str = "frechet_variance",
    ) -> None:
        V.check_choice(dispersion, "dispersion", DISPERSIONS)
        release = dispersion == "mean_distance"
        super().__init__(num_features, curvature, momentum, eps, 0.5 if release else 1.0)
        self.dispersion = dispersion

    def _scale(self) -> torch.Tensor:
        if self.dispersion == "mean_distance":
            return self.gamma.clamp(-2.5, 2.0)
        return self.gamma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = self._flatten(x)
        c = self.c
        mu = self.batch_mean(flat) if self.training else self.running_mean.to(flat.dtype)
        # (b) gyro-centering (-mu) (+) x_i, on the unit hyperboloid; only its spatial part is
        # needed, since (c) and (d) depend on the point through d(o, x~_i) = asinh(|x~_s|) only
        mu_u, flat_u = ops.times(mu, c), ops.times(flat, c)
        centred = ops.gyro_add_spatial(mu_u[:1], -mu_u[1:], flat_u[:, :1], flat_u[:, 1:])
        radius = centred.pow(2).sum(-1, keepdim=True).clamp_min(ops._eps(flat)).sqrt()
        distance = ops.asinh(radius)  # c d(o, x~_i)
        if self.training:
            d = ops.times(distance, 1.0 / c)
            # (c) Fréchet variance, or the released code's mean distance
            var = d.mean() if self.dispersion == "mean_distance" else d.pow(2).mean()
            self._update_running(mu.detach(), var.detach())
        else:
            var = self.running_var.to(flat.dtype)
        # (d) gyro-scaling t (x) x~_i = exp_o(t log_o x~_i): the radius becomes t d, direction kept
        scaled = (self._scale() / (var + self.eps).sqrt()).to(flat.dtype) * distance
        scaled_t, scaled_s = torch.cosh(scaled), torch.sinh(scaled) / radius * centred
        # (e) gyro bias expmap0(beta) (+) x^_i
        bias = ops.times(ops.expmap0(self.beta.to(flat.dtype), c), c)
        spatial = ops.gyro_add_spatial(bias[:1], bias[1:], scaled_t, scaled_s)
        return ops.lift(ops.times(spatial, 1.0 / c), c).reshape(x.shape)


class GyroBN(GyroLBN):
    """GyroBN: as GyroLBN, with the Fréchet mean by ``iters`` steps of Karcher flow (started at
    the tangent-space mean at the origin)."""

    def __init__(
        self,
        num_features: int,
        curvature: float = -1.0,
        momentum: float = 0.1,
        eps: float = 1e-5,
        iters: int = 3,
    ) -> None:
        super().__init__(num_features, curvature, momentum, eps)
        self.iters = V.check_int(iters, "iters", low=1)

    def batch_mean(self, flat: torch.Tensor) -> torch.Tensor:
        c = self.c
        mu = ops.expmap0(ops.logmap0(flat, c).mean(0), c)
        for _ in range(self.iters):
            tangent = ops.logmap(mu.expand_as(flat), flat, c).mean(0)
            mu = ops.expmap(mu, tangent, c)
            mu = ops.lift(mu[1:], c)
        return mu


class LorentzBN(_LorentzNormBase):
    """LBN (Bdeir et al. 2024): centroid, transport of the log-map to the origin, tangent
    rescaling by ``gamma / (s + eps)`` with ``s`` the mean distance to the centroid (as in the
    released code), transport to ``expmap0(beta)`` and exp-map."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = self._flatten(x)
        c = self.c
        mu = self.batch_mean(flat) if self.training else self.running_mean.to(flat.dtype)
        o = ops.origin(self.num_features, c, dtype=flat.dtype).expand_as(flat)
        tangent = ops.transp(mu.expand_as(flat), o, ops.logmap(mu.expand_as(flat), flat, c), c)
        if self.training:
            var = tangent[:, 1:].pow(2).sum(-1).clamp_min(ops._eps(flat)).sqrt().mean()
            self._update_running(mu.detach(), var.detach())
        else:
            var = self.running_var.to(flat.dtype)
        tangent = tangent * (self.gamma / (var + self.eps))
        target = ops.expmap0(self.beta.to(flat.dtype), c).expand_as(flat)
        out = ops.expmap(target, ops.transp(o, target, tangent, c), c)
        return ops.lift(out[:, 1:], c).reshape(x.shape)
