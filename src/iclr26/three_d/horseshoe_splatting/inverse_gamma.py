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
