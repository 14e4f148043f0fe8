"""Inverse-Gamma algebra of the horseshoe's augmentation: the expectations the ELBO needs
(E[1/X] = a/b, E[log X] = log b - psi(a) for X ~ IG(a, b)), the entropy and the analytic
expected log-density of an IG whose rate is itself an IG variable."""

from __future__ import annotations

import math

import torch

from iclr26 import validation as V


def _pos(value, name: str) -> torch.Tensor:
    if not torch.is_tensor(value):
        value = torch.as_tensor(
            V.check_array(value, name, min_rows=0, min_cols=0), dtype=torch.float64
        )
    V.check_tensor(value, name, floating=True, low=0.0)
    if bool((value <= 0).any()):
        raise ValueError(f"{name} must be > 0")
    return value


def ig_expectations(shape, rate) -> tuple[torch.Tensor, torch.Tensor]:
    """``(E[1/X], E[log X])`` for ``X ~ IG(shape, rate)`` (shape, rate > 0, broadcast)."""
    a, b = _pos(shape, "shape"), _pos(rate, "rate")
    return _e_inv(a, b), _e_log(a, b)


def _e_inv(a, b):
    return a / b


def _e_log(a, b):
    return torch.log(b) - torch.digamma(a)


def _entropy(a, b):
    return a + torch.log(b) + torch.lgamma(a) - (1.0 + a) * torch.digamma(a)


def ig_entropy(shape, rate) -> torch.Tensor:
    """Differential entropy of IG(shape, rate)."""
    return _entropy(_pos(shape, "shape"), _pos(rate, "rate"))


def _expected_log_ig(a0, e_log_x, e_inv_x, e_log_rate, e_rate):
    """E[log IG(x; a0, r)] with x and the rate r independent under q:
    a0 E[log r] - lgamma(a0) - (a0 + 1) E[log x] - E[r] E[1/x]."""
    return a0 * e_log_rate - math.lgamma(a0) - (a0 + 1.0) * e_log_x - e_rate * e_inv_x


def kl_inverse_gamma(shape_q, rate_q, shape_p, rate_p) -> torch.Tensor:
    """Analytic KL(IG(shape_q, rate_q) || IG(shape_p, rate_p)), elementwise."""
    aq, bq = _pos(shape_q, "shape_q"), _pos(rate_q, "rate_q")
    ap, bp = _pos(shape_p, "shape_p"), _pos(rate_p, "rate_p")
    return _kl(aq, bq, ap, bp)


def _kl(aq, bq, ap, bp):
    return (
        (aq - ap) * torch.digamma(aq)
        - torch.lgamma(aq)
        + torch.lgamma(ap)
        + ap * (torch.log(bq) - torch.log(bp))
        + aq * (bp - bq) / bq
    )


def _pair(value, name: str, shape: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a (shape, rate) pair of tensors")
    a = _pos(value[0], f"{name}[0]")
    b = _pos(value[1], f"{name}[1]")
    for t, part in ((a, f"{name}[0]"), (b, f"{name}[1]")):
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{part} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    return a, b


def _cavi_sweep(spread2, nu, theta, xi, b2):
    """One coordinate-ascent sweep over the IG factors, in the order lambda^2, nu, theta^2, xi;
    every update is the exact optimum of the ELBO in that factor given the current others."""
    n = spread2.shape[0]
    e_inv_t = _e_inv(*theta)
    lam = (torch.ones_like(spread2), _e_inv(*nu) + 0.5 * spread2 * e_inv_t)
    e_inv_l = _e_inv(*lam)
    nu = (torch.ones_like(spread2), 1.0 + e_inv_l)
    theta = (
        torch.full_like(e_inv_t, 0.5 * (n + 1)),
        _e_inv(*xi) + 0.5 * (spread2 * e_inv_l).sum(0),
    )
    xi = (torch.ones_like(e_inv_t), b2 + _e_inv(*theta))
    return lam, nu, theta, xi


def ig_cavi_sweep(spread2, lam, nu, theta, xi, *, global_scale: float = 1.0):
    """One sweep of closed-form mean-field coordinate-ascent (CAVI) updates of the horseshoe's
    inverse-Gamma factors, for N rows and D axes:

    - q(lambda_ij^2) = IG(1, E[1/nu_ij] + spread2_ij E[1/theta_j^2] / 2)
    - q(nu_ij) = IG(1, 1 + E[1/lambda_ij^2])
    - q(theta_j^2) = IG((N + 1) / 2, E[1/xi_j] + sum_i spread2_ij E[1/lambda_ij^2] / 2)
    - q(xi_j) = IG(1, 1 / global_scale^2 + E[1/theta_j^2])

    applied in this order, each with the factors updated before it. ``spread2`` (N, D) is
    E_q[(s - beta)^2] / sigma^2 (1 for the model's Gaussian q(s) = N(beta, sigma^2)); ``lam`` and
    ``nu`` are (shape, rate) pairs of (N, D) tensors, ``theta`` and ``xi`` pairs of (D,)
    tensors. Returns the updated ``(lam, nu, theta, xi)`` pairs."""
    if not torch.is_tensor(spread2):
        spread2 = torch.as_tensor(V.check_array(spread2, "spread2"), dtype=torch.float64)
    V.check_tensor(spread2, "spread2", ndim=2, floating=True, low=0.0)
    if spread2.numel() == 0:
        raise ValueError("spread2 must not be empty")
    n, d = spread2.shape
    global_scale = V.check_scalar(global_scale, "global_scale", low=0, low_open=True)
    _pair(lam, "lam", (n, d))  # checked for the API; lambda's update does not read it
    nu = _pair(nu, "nu", (n, d))
    theta = _pair(theta, "theta", (d,))
    xi = _pair(xi, "xi", (d,))
    b2 = torch.full_like(xi[1], 1.0 / global_scale**2)
    return _cavi_sweep(spread2, nu, theta, xi, b2)
