"""Evaluation: top-1 accuracy, part discovery (NMI / ARI against ground-truth part masks) and
the part consistency rate.

A model's predicted part of a pixel is the argmax over its foreground part maps upsampled
bilinearly to the image (IVPT and the part-prototype head: the final maps without background;
VPT-deep: the last prompted block's prompt -> patch attention); NMI and ARI are computed over the
ground-truth foreground pixels of the whole set (:func:`iclr26.metrics.vision.part_nmi_ari`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.metrics.vision import part_nmi_ari

__all__ = ["consistency_rate", "evaluate", "predict_parts"]


def predict_parts(maps: torch.Tensor, size: tuple[int, int]) -> np.ndarray:
    """Argmax part id per pixel of ``maps`` (B, K, h, w) upsampled bilinearly to ``size``."""
    V.check_tensor(maps, "maps", ndim=4, floating=True)
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise TypeError(f"size must be an (H, W) pair, got {size!r}")
    size = tuple(V.check_int(s, "size", low=1) for s in size)
    up = F.interpolate(maps.float(), size=size, mode="bilinear", align_corners=False)
    return up.argmax(1).cpu().numpy().astype(np.int64)


def consistency_rate(
    pred_parts, gt_parts, n_parts: int, min_share: float = 0.5, min_images: float = 0.8
) -> float:
    """The fraction of predicted parts that mean the same thing across images: part n counts
    when, in at least ``min_images`` of the images where it appears on the ground-truth
    foreground, its most frequent ground-truth part (over the set) covers at least
    ``min_share`` of its pixels there. Parts that never appear count as inconsistent."""
    pred = V.check_array(pred_parts, "pred_parts", ndim=3, dtype=np.int64)
    gt = V.check_array(gt_parts, "gt_parts", ndim=3, dtype=np.int64)
    if pred.shape != gt.shape:
        raise ValueError(
            f"pred_parts and gt_parts must have the same shape, got {pred.shape} and {gt.shape}"
        )
    n_parts = V.check_int(n_parts, "n_parts", low=1)
    min_share = V.check_probability(min_share, "min_share")
    min_images = V.check_probability(min_images, "min_images")
    fg = gt > 0
    n_gt = int(gt.max()) + 1
    consistent = 0
    for part in range(n_parts):
        mask = (pred == part) & fg
        per_image = np.stack([((gt == g) & mask).sum((1, 2)) for g in range(n_gt)], 1)
        sizes = per_image.sum(1)
        present = sizes > 0
        if not present.any():
            continue
        dominant = int(per_image.sum(0).argmax())
        share = per_image[present, dominant] / sizes[present]
        consistent += float((share >= min_share).mean() >= min_images)
    return consistent / n_parts


@torch.no_grad()
def evaluate(model, X, y, parts, batch_size: int = 256, device="cpu") -> dict:
    """Accuracy (%), part NMI and ARI (x100) and the consistency rate (%) of a trained IVPT,
    PartPrototypeHead or VPTDeep on images ``X``, labels ``y`` and part masks ``parts``
    (n, H, W; 0 background)."""
    from iclr26.vision.ivpt.baselines import VPTDeep

    X = torch.as_tensor(V.check_array(X, "X", ndim=4, dtype=np.float32, low=0.0, high=1.0))
    y = V.check_array(y, "y", ndim=1, dtype=np.int64)
    parts = V.check_array(parts, "parts", ndim=3, dtype=np.int64)
    V.check_same_length(X=X, y=y, parts=parts)
    if parts.shape[1:] != tuple(X.shape[-2:]):
        raise ValueError(
            f"parts must be (n, {X.shape[-2]}, {X.shape[-1]}) like X, got {parts.shape}"
        )
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    model.eval()
    model.to(device)
    preds, part_ids = [], []
    size = tuple(X.shape[-2:])
    for i in range(0, len(X), batch_size):
        xb = X[i : i + batch_size].to(device)
        if isinstance(model, VPTDeep):
            out = model(xb, return_attention=True)
            maps = out["part_maps"]
        else:
            out = model(xb)
            maps = out["part_maps_final"][:, :-1]
        preds.append(out["logits"].argmax(1).cpu().numpy())
        part_ids.append(predict_parts(maps, size))
    pred = np.concatenate(preds)
    part_ids = np.concatenate(part_ids)
    n_parts = model.n_prompts if isinstance(model, VPTDeep) else model.num_parts
    nmi, ari = part_nmi_ari(part_ids, parts)
    return {
        "accuracy": 100.0 * float((pred == y).mean()),
        "nmi": 100.0 * nmi,
        "ari": 100.0 * ari,
        "consistency": 100.0 * consistency_rate(part_ids, parts, n_parts),
        "part_ids": part_ids,
    }
