"""IVPT's training objective: classification, PDiscoFormer's part-discovery regularisers on the
maps of every level, and the cross-layer consistency loss.

- ``consistency_loss``: KL(sg(A_L) || A_hat_i), summed over the N + 1 maps, averaged over pixels
  and images (the official ``consistency_loss``), averaged over the prompted levels.
- ``presence_loss`` ("original": 1 - mean_n max_batch max_hw AvgPool3(A_n); "soft_constraint"
  mixes in beta), ``equivariance_loss`` (1 - mean cosine between A(x) and the maps of T(x)
  warped back), ``orthogonality_loss`` (of the normalised part features),
  ``total_variation_loss``, ``enforced_presence_loss`` (the background must reach the image
  border) and ``pixel_entropy_loss``. Each is averaged over the levels, as in the official
  trainer.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

__all__ = [
    "IVPTLoss",
    "consistency_loss",
    "enforced_presence_loss",
    "equivariance_loss",
    "invert_affine",
    "orthogonality_loss",
    "pixel_entropy_loss",
    "presence_loss",
    "total_variation_loss",
]


def _maps(maps, name: str = "maps", min_channels: int = 1) -> torch.Tensor:
    V.check_tensor(maps, name, ndim=4, floating=True)
    if maps.shape[1] < min_channels:
        raise ValueError(f"{name} must have at least {min_channels} maps, got {maps.shape[1]}")
    return maps


def consistency_loss(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-10) -> torch.Tensor:
    """KL(target || pred) per pixel, summed over the maps (dim 1), averaged over pixels and
    images; ``target`` is detached here. Shapes (B, K, H, W) or (B, K, L)."""
    V.check_tensor(pred, "pred", ndim=(3, 4), floating=True)
    V.check_tensor(target, "target", ndim=(3, 4), floating=True)
    if pred.shape != target.shape:
        raise ValueError(
            f"pred and target must have the same shape, got {tuple(pred.shape)} and "
            f"{tuple(target.shape)}"
        )
    V.check_tensor(pred, "pred", low=0.0)
    V.check_tensor(target, "target", low=0.0)
    eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
    return _consistency(pred, target.detach(), eps)


def _consistency(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-10) -> torch.Tensor:
    p, t = pred + eps, target + eps
    kl = (t * torch.log(t / p)).sum(1)
    return kl.flatten(1).mean(1).mean()


def presence_loss(maps: torch.Tensor, kind: str = "original", beta: float = 0.1) -> torch.Tensor:
    """Every foreground map (pass them without the background) must be strongly present in some
    image of the batch: ``1 - mean_n max_b max_hw AvgPool3(A)`` ("original"), or with the
    soft constraint ``(1 - m) ((1 - beta) sg(m) + beta)`` averaged ("soft_constraint")."""
    _maps(maps)
    V.check_choice(kind, "kind", ("original", "soft_constraint"))
    beta = V.check_probability(beta, "beta")
    return _presence(maps, kind, beta)


def _presence(maps: torch.Tensor, kind: str = "original", beta: float = 0.1) -> torch.Tensor:
    k = min(3, maps.shape[-2], maps.shape[-1])
    peak = F.adaptive_max_pool2d(F.avg_pool2d(maps, k, stride=1), 1).flatten(1).max(0).values
    if kind == "original":
        return 1 - peak.mean()
    return ((1 - peak) * ((1 - beta) * peak.detach() + beta)).mean()


def invert_affine(theta: torch.Tensor) -> torch.Tensor:
    """The inverse of (B, 2, 3) affine sampling matrices (normalised coordinates)."""
    V.check_tensor(theta, "theta", ndim=3, floating=True)
    if theta.shape[1:] != (2, 3):
        raise ValueError(f"theta must have shape (B, 2, 3), got {tuple(theta.shape)}")
    det = torch.linalg.det(theta[:, :, :2].double())
    if (det.abs() < 1e-8).any():
        raise ValueError("theta must be invertible; some matrices have a zero determinant")
    return _invert(theta)


def _invert(theta: torch.Tensor) -> torch.Tensor:
    lin_inv = torch.linalg.inv(theta[:, :, :2])
    return torch.cat([lin_inv, -(lin_inv @ theta[:, :, 2:])], 2)


def equivariance_loss(
    maps: torch.Tensor, maps_transformed: torch.Tensor, theta: torch.Tensor
) -> torch.Tensor:
    """``1 - mean cos(A_n(x), T^-1(A_n(T x)))`` over the foreground maps (the last map is the
    background and is left out). ``theta`` (B, 2, 3) are the sampling matrices that made the
    transformed images (output -> input, as :func:`iclr26.vision.augment.random_affine`
    returns them); the transformed maps are warped back with their inverse."""
    _maps(maps, "maps", 2)
    _maps(maps_transformed, "maps_transformed", 2)
    if maps.shape != maps_transformed.shape:
        raise ValueError(
            f"maps_transformed must have the shape of maps {tuple(maps.shape)}, got "
            f"{tuple(maps_transformed.shape)}"
        )
    V.check_tensor(theta, "theta", shape=(maps.shape[0], 2, 3), floating=True)
    return _equivariance(maps, maps_transformed, theta)


def _equivariance(maps, maps_transformed, theta) -> torch.Tensor:
    inv = _invert(theta).to(maps.dtype)
    grid = F.affine_grid(inv, tuple(maps_transformed.shape), align_corners=False)
    back = F.grid_sample(maps_transformed, grid, mode="bilinear", align_corners=False)
    cos = F.cosine_similarity(maps[:, :-1].flatten(2), back[:, :-1].flatten(2), dim=-1)
    return 1 - cos.mean()


def orthogonality_loss(part_features: torch.Tensor) -> torch.Tensor:
    """``mean (F^T F - I)^2`` of the L2-normalised part features (B, D, K)."""
    V.check_tensor(part_features, "part_features", ndim=3, floating=True)
    return _orthogonality(part_features)


def _orthogonality(part_features: torch.Tensor) -> torch.Tensor:
    f = F.normalize(part_features, dim=1)
    sim = f.transpose(1, 2) @ f - torch.eye(f.shape[-1], device=f.device, dtype=f.dtype)
    return sim.pow(2).mean()


def total_variation_loss(maps: torch.Tensor) -> torch.Tensor:
    """``mean |A(h+1, w) - A(h, w)| + mean |A(h, w+1) - A(h, w)|`` (smooth, compact parts)."""
    _maps(maps)
    return _tv(maps)


def _tv(maps: torch.Tensor) -> torch.Tensor:
    dh = (maps[..., 1:, :] - maps[..., :-1, :]).abs().mean()
    dw = (maps[..., :, 1:] - maps[..., :, :-1]).abs().mean()
    return dh + dw


def enforced_presence_loss(maps: torch.Tensor) -> torch.Tensor:
    """The background map (the last) must be present near the border: ``-mean_b log max_hw
    (r^2 AvgPool3(A_bg))`` with ``r^2`` the squared normalised distance from the centre
    (the official "enforced_presence" type)."""
    _maps(maps, "maps", 2)
    return _enforced(maps)


def _enforced(maps: torch.Tensor) -> torch.Tensor:
    k = min(3, maps.shape[-2], maps.shape[-1])
    pooled = F.avg_pool2d(maps[:, -1:], k, stride=1)[:, 0]
    h, w = pooled.shape[-2:]
    gy = (
        torch.linspace(-1, 1, h, device=maps.device, dtype=maps.dtype)
        if h > 1
        else maps.new_ones(1)
    )
    gx = (
        torch.linspace(-1, 1, w, device=maps.device, dtype=maps.dtype)
        if w > 1
        else maps.new_ones(1)
    )
    radius = gy[:, None] ** 2 + gx[None, :] ** 2
    radius = radius / radius.max()
    peak = (pooled * radius).flatten(1).max(1).values.clamp(0.0, 1.0)
    return F.binary_cross_entropy(peak, torch.ones_like(peak))


def pixel_entropy_loss(maps: torch.Tensor) -> torch.Tensor:
    """Mean over pixels of the entropy of the part distribution (sharp assignments)."""
    _maps(maps)
    return _entropy(maps)


def _entropy(maps: torch.Tensor) -> torch.Tensor:
    p = maps.clamp(1e-6, 1.0)
    p = p / p.sum(1, keepdim=True)
    return -(p * p.log()).sum(1).mean()


class IVPTLoss(nn.Module):
    """The weighted sum of the IVPT objective (weights of the official CUB config; the
    consistency weight is not in the config and is 1 as in the trainer's plain sum).

    ``forward(out, target, out_transformed=None, theta=None)`` takes the dicts of
    :meth:`IVPT.forward` for the images and (for the equivariance term) for the transformed
    images with the matrices that made them; returns ``(total, parts)`` with the weighted
    terms in ``parts``. ``w_eq > 0`` needs ``out_transformed`` and ``theta``."""

    def __init__(
        self,
        w_cls: float = 1.0,
        w_pres: float = 1.0,
        pres_beta: float = 0.1,
        pres_kind: str = "original",
        w_eq: float = 1.0,
        w_orth: float = 1.0,
        w_tv: float = 1.0,
        w_enf: float = 1.0,
        w_ent: float = 1.0,
        w_cons: float = 1.0,
    ):
        super().__init__()
        names = ("w_cls", "w_pres", "w_eq", "w_orth", "w_tv", "w_enf", "w_ent", "w_cons")
        values = (w_cls, w_pres, w_eq, w_orth, w_tv, w_enf, w_ent, w_cons)
        for name, value in zip(names, values):
            setattr(self, name, V.check_scalar(value, name, low=0.0))
        self.pres_beta = V.check_probability(pres_beta, "pres_beta")
        self.pres_kind = V.check_choice(pres_kind, "pres_kind", ("original", "soft_constraint"))

    @property
    def needs_transform(self) -> bool:
        return self.w_eq > 0

    def forward(self, out: dict, target: torch.Tensor, out_transformed=None, theta=None):
        if not isinstance(out, dict) or "logits" not in out or "part_maps_layers" not in out:
            raise TypeError("out must be the dict returned by IVPT.forward")
        logits = out["logits"]
        V.check_tensor(target, "target", ndim=1, shape=(logits.shape[0],), integer=True)
        if target.min() < 0 or target.max() >= logits.shape[1]:
            raise ValueError(f"target must hold class ids in [0, {logits.shape[1]})")
        levels = out["part_maps_layers"]
        n = len(levels)
        parts = {"cls": self.w_cls * F.cross_entropy(logits, target)}
        parts["presence"] = (
            self.w_pres
            * sum(_presence(m[:, :-1], self.pres_kind, self.pres_beta) for m in levels)
            / n
        )
        parts["orthogonality"] = self.w_orth * _orthogonality(out["part_features"])
        parts["total_variation"] = self.w_tv * sum(_tv(m) for m in levels) / n
        parts["enforced_presence"] = self.w_enf * sum(_enforced(m) for m in levels) / n
        parts["entropy"] = self.w_ent * sum(_entropy(m) for m in levels) / n
        if out["aggregated_maps"]:
            final = out["part_maps_final"].detach()
            aggregated = out["aggregated_maps"]
            parts["consistency"] = (
                self.w_cons * sum(_consistency(a, final) for a in aggregated) / len(aggregated)
            )
        if self.w_eq > 0:
            if out_transformed is None or theta is None:
                raise ValueError("out_transformed and theta are needed when w_eq > 0")
            V.check_tensor(theta, "theta", shape=(logits.shape[0], 2, 3), floating=True)
            levels_t = out_transformed["part_maps_layers"]
            parts["equivariance"] = (
                self.w_eq * sum(_equivariance(m, mt, theta) for m, mt in zip(levels, levels_t)) / n
            )
        return sum(parts.values()), parts
