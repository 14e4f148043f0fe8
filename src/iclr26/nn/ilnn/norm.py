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

from . import ops


class _LorentzNormBase(nn.Module):
    def __init__(
        self, num_features: int, curvature: float = -1.0, momentum: float = 0.1, eps: float = 1e-5
    ) -> None:
        super().__init__()
        if num_features < 1:
            raise ValueError("num_features must be positive")
        if not 0.0 < momentum <= 1.0:
            raise ValueError("momentum must be in (0, 1]")
        self.c = ops.curvature_scale(curvature)
        self.num_features, self.momentum, self.eps = num_features, momentum, eps
        self.gamma = nn.Parameter(torch.ones(()))
        self.beta = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", ops.origin(num_features, self.c))
        self.register_buffer("running_var", torch.ones(()))
        self.validate_input = True  # models switch this off for their inner layers

    def batch_mean(self, flat: torch.Tensor) -> torch.Tensor:
        """Closed-form Lorentzian centroid of the batch (GyroBN overrides with Karcher flow)."""
        return ops.lorentz_centroid(flat, dim=0, c=self.c)

    def _flatten(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.num_features + 1:
            raise ValueError(f"expected points of size {self.num_features + 1}, got {x.shape[-1]}")
        if self.validate_input:
            ops.check_on_manifold(x, self.c)
        return x.reshape(-1, x.shape[-1])

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
    """The paper's gyro Lorentz batch norm (closed-form centroid + Fréchet-variance scaling)."""

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
            var = ops.times(distance, 1.0 / c).pow(2).mean()  # (c) Fréchet variance
            self._update_running(mu.detach(), var.detach())
        else:
            var = self.running_var.to(flat.dtype)
        # (d) gyro-scaling t (x) x~_i = exp_o(t log_o x~_i): the radius becomes t d, direction kept
        scaled = (self.gamma / (var + self.eps).sqrt()).to(flat.dtype) * distance
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
        if iters < 1:
            raise ValueError("iters must be >= 1")
        self.iters = iters

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
    rescaling by ``gamma / sqrt(var + eps)``, transport to ``expmap0(beta)`` and exp-map."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = self._flatten(x)
        c = self.c
        mu = self.batch_mean(flat) if self.training else self.running_mean.to(flat.dtype)
        o = ops.origin(self.num_features, c, dtype=flat.dtype).expand_as(flat)
        tangent = ops.transp(mu.expand_as(flat), o, ops.logmap(mu.expand_as(flat), flat, c), c)
        if self.training:
            var = tangent[:, 1:].pow(2).sum(-1).mean()
            self._update_running(mu.detach(), var.detach())
        else:
            var = self.running_var.to(flat.dtype)
        tangent = tangent * (self.gamma / (var + self.eps).sqrt())
        target = ops.expmap0(self.beta.to(flat.dtype), c).expand_as(flat)
        out = ops.expmap(target, ops.transp(o, target, tangent, c), c)
        return ops.lift(out[:, 1:], c).reshape(x.shape)
