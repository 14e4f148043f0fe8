"""Incremental entropy estimates: how much new information a transformed view carries.

*Project instantiation* (the paper's estimator was not available): a batch of views is mapped
by a fixed random descriptor psi (a frozen random 5x5 convolution to ``dim`` channels,
ReLU, global average pooling), and the entropy is the Gaussian (log-det) entropy of those
descriptors, ``H(V) = 1/2 log det(Cov(psi(V)) + eps I)`` in float64 (the constant terms
cancel in differences). ``Delta H(v, v') = H(v') - H(v)``. psi is frozen at construction, so
the learnable transform cannot raise the estimate by changing the estimator. The
``"histogram"`` estimator (soft-histogram pixel entropy) is kept for ablation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

ESTIMATORS = ("logdet", "histogram")


class DescriptorProjection(nn.Module):
    """psi: frozen random conv (``in_ch`` -> ``dim``, 5x5, stride 2), ReLU, global mean."""

    def __init__(self, in_ch: int = 3, dim: int = 64, seed: int = 0):
        super().__init__()
        in_ch = V.check_int(in_ch, "in_ch", low=1)
        dim = V.check_int(dim, "dim", low=1)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        weight = torch.randn(dim, in_ch, 5, 5, generator=gen) / (in_ch * 25) ** 0.5
        bias = torch.randn(dim, generator=gen) * 0.1
        self.conv = nn.Conv2d(in_ch, dim, 5, stride=2, padding=2)
        with torch.no_grad():
            self.conv.weight.copy_(weight)
            self.conv.bias.copy_(bias)
        for p in self.parameters():
            p.requires_grad_(False)
        self.dim = dim

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(v)).mean((2, 3))


def gaussian_entropy(feats: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """``1/2 log det(Cov(feats) + eps I)`` of a (B, d) batch, computed in float64."""
    V.check_tensor(feats, "feats", ndim=2, floating=True)
    if feats.shape[0] < 2:
        raise ValueError(f"feats needs at least 2 rows for a covariance, got {feats.shape[0]}")
    eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
    f = feats.double()
    f = f - f.mean(0, keepdim=True)
    cov = f.t() @ f / max(f.shape[0] - 1, 1)
    eye = torch.eye(cov.shape[0], dtype=cov.dtype, device=cov.device)
    return 0.5 * torch.linalg.slogdet(cov + eps * eye)[1]


def histogram_entropy(
    v: torch.Tensor, bins: int = 16, bandwidth: float | None = None
) -> torch.Tensor:
    """Entropy (nats) of the soft histogram of all pixel values of a batch in [0, 1]
    (Gaussian kernels of width ``bandwidth``, default one bin)."""
    V.check_tensor(v, "v", floating=True, low=0.0, high=1.0)
    bins = V.check_int(bins, "bins", low=2)
    if bandwidth is not None:
        bandwidth = V.check_scalar(bandwidth, "bandwidth", low=0.0, low_open=True)
    centers = torch.linspace(0, 1, bins, device=v.device, dtype=v.dtype)
    width = (1.0 / (bins - 1)) if bandwidth is None else bandwidth
    weights = torch.exp(-0.5 * ((v.reshape(-1, 1) - centers) / width) ** 2)
    weights = weights / weights.sum(1, keepdim=True).clamp_min(1e-12)
    p = weights.mean(0).double()
    return -(p * torch.log(p.clamp_min(1e-12))).sum()


_DEFAULT_PSI: dict[tuple[int, str], DescriptorProjection] = {}


def default_projection(in_ch: int, device: torch.device | str = "cpu") -> DescriptorProjection:
    """The shared seed-0 psi for ``in_ch`` channels on ``device``."""
    key = (int(in_ch), str(device))
    if key not in _DEFAULT_PSI:
        _DEFAULT_PSI[key] = DescriptorProjection(in_ch).to(device)
    return _DEFAULT_PSI[key]


def incremental_entropy(
    v: torch.Tensor,
    v_prime: torch.Tensor,
    psi: nn.Module | None = None,
    estimator: str = "logdet",
    eps: float = 1e-3,
) -> torch.Tensor:
    """``H(v') - H(v)`` for two batches of views (B, C, H, W) (differentiable in ``v'``)."""
    V.check_tensor(v, "v", ndim=4, floating=True)
    V.check_tensor(v_prime, "v_prime", shape=tuple(v.shape), floating=True)
    V.check_choice(estimator, "estimator", ESTIMATORS)
    eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
    if estimator == "histogram":
        return histogram_entropy(v_prime) - histogram_entropy(v)
    if v.shape[0] < 2:
        raise ValueError(f"v needs at least 2 images for a covariance, got {v.shape[0]}")
    psi = default_projection(v.shape[1], v.device) if psi is None else psi
    return gaussian_entropy(psi(v_prime), eps) - gaussian_entropy(psi(v), eps)
