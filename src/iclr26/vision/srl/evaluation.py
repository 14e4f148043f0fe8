"""Object-discovery scores of a slot model on videos with ground-truth instance masks.

FG-ARI and mBO of the hard decoder masks at pixel resolution, per video (ids consistent over
time) and per frame, through :mod:`iclr26.metrics.vision`; and the two mechanism scores of the
paper's analysis: the boundary sharpness of the soft decoder masks (mean gradient magnitude at
ground-truth boundaries over its mean elsewhere) and the noise of the hard encoder masks (the
fraction of patches whose slot differs from the majority of their 3 x 3 neighbours).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.metrics.vision import fg_ari, mbo
from iclr26.vision.srl.model import SlotVideoModel

__all__ = ["boundary_sharpness", "evaluate_discovery", "mask_noise"]


def _gt_boundary(gt: torch.Tensor) -> torch.Tensor:
    """Pixels (n, H, W) whose 4-neighbourhood holds another ground-truth id."""
    b = torch.zeros_like(gt, dtype=torch.bool)
    dx = gt[:, :, 1:] != gt[:, :, :-1]
    dy = gt[:, 1:, :] != gt[:, :-1, :]
    b[:, :, 1:] |= dx
    b[:, :, :-1] |= dx
    b[:, 1:, :] |= dy
    b[:, :-1, :] |= dy
    return b


def boundary_sharpness(soft_masks, gt) -> float:
    """Mean over pixels of sum_k |grad M_k| at ground-truth boundaries divided by its mean
    elsewhere; ``soft_masks`` (n, K, H, W) sum to 1 over K, ``gt`` (n, H, W) integer ids.
    Higher means the masks change where the objects change."""
    m = V.check_tensor(torch.as_tensor(soft_masks), "soft_masks", ndim=4, floating=True)
    g = torch.as_tensor(gt)
    V.check_tensor(g, "gt", ndim=3, integer=True)
    if g.shape != m.shape[:1] + m.shape[2:]:
        raise ValueError(
            f"gt must be (n, H, W) = {(m.shape[0], *m.shape[2:])}, got {tuple(g.shape)}"
        )
    gx = F.pad(m[..., :, 1:] - m[..., :, :-1], (0, 1))
    gy = F.pad(m[..., 1:, :] - m[..., :-1, :], (0, 0, 0, 1))
    mag = (gx.square() + gy.square()).sqrt().sum(1)
    edge = _gt_boundary(g)
    if not edge.any() or edge.all():
        return float("nan")
    return float(mag[edge].mean() / mag[~edge].mean().clamp_min(1e-12))


def mask_noise(labels) -> float:
    """Fraction of cells of the hard label maps ``labels`` (n, h, w) whose label is less
    frequent among their (up to 8) 3 x 3 neighbours than the neighbours' most frequent one."""
    lab = torch.as_tensor(labels)
    V.check_tensor(lab, "labels", ndim=3, integer=True, low=0)
    k = int(lab.max()) + 1
    onehot = F.one_hot(lab.long(), k).permute(0, 3, 1, 2).float()
    kernel = torch.ones(k, 1, 3, 3)
    kernel[:, :, 1, 1] = 0
    counts = F.conv2d(onehot, kernel, padding=1, groups=k)
    own = counts.gather(1, lab.long()[:, None]).squeeze(1)
    return float((own < counts.max(1).values).float().mean())


@torch.no_grad()
def evaluate_discovery(
    model: SlotVideoModel,
    feats: torch.Tensor,
    instance,
    batch_size: int = 32,
    device: str | torch.device = "cpu",
) -> dict[str, float]:
    """Video and image FG-ARI / mBO (in %) of the hard decoder masks and of the hard encoder
    masks upsampled to the ground truth's size, plus the two mechanism scores, for
    precomputed backbone features ``feats`` (n, T, N, D) and instance masks (n, T, H, W)."""
    if not isinstance(model, SlotVideoModel):
        raise TypeError(f"model must be a SlotVideoModel, got {type(model).__name__}")
    V.check_tensor(feats, "feats", ndim=4, floating=True)
    gt = V.check_array(instance, "instance", ndim=4, dtype=None)
    if gt.dtype.kind not in "iu":
        raise TypeError(f"instance must hold integer ids, got dtype {gt.dtype}")
    if gt.shape[:2] != tuple(feats.shape[:2]):
        raise ValueError(
            f"instance must be (n, T, H, W) with (n, T) = {tuple(feats.shape[:2])}, got {gt.shape}"
        )
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    size = gt.shape[2:]
    model.to(device).eval()
    dec_hard, enc_hard, sharp, noise = [], [], [], []
    for i in range(0, len(feats), batch_size):
        out = model.forward_features(feats[i : i + batch_size].to(device))
        dec = model.masks_to_pixels(out["dec_masks"], size).cpu()
        enc = model.masks_to_pixels(out["enc_masks"], size).cpu()
        dec_hard.append(dec.argmax(2).numpy())
        enc_hard.append(enc.argmax(2).numpy())
        g = torch.from_numpy(gt[i : i + batch_size]).flatten(0, 1)
        sharp.append(boundary_sharpness(dec.flatten(0, 1), g))
        rows, cols = model.grid()
        patch_labels = out["enc_masks"].argmax(2).reshape(-1, rows, cols).cpu()
        noise.append(mask_noise(patch_labels))
    dec_hard = np.concatenate(dec_hard)
    enc_hard = np.concatenate(enc_hard)
    flat = lambda a: a.reshape(-1, *size)  # noqa: E731
    return {
        "fg_ari": 100 * fg_ari(dec_hard, gt, video=True),
        "mbo": 100 * mbo(dec_hard, gt),
        "fg_ari_image": 100 * fg_ari(flat(dec_hard), flat(gt)),
        "mbo_image": 100 * mbo(flat(dec_hard), flat(gt)),
        "enc_fg_ari": 100 * fg_ari(enc_hard, gt, video=True),
        "enc_mbo": 100 * mbo(enc_hard, gt),
        "dec_boundary_sharpness": float(np.nanmean(sharp)),
        "enc_mask_noise": float(np.mean(noise)),
    }
