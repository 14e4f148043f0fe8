"""A CenterPoint-style BEV head (per-class centre heatmap + dx, dy, log l, log w, sin yaw,
cos yaw), its targets and losses, decoding, and centre-distance mAP (nuScenes-style matching
at 1 m and 2 m, greedy by score)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


class CenterHead(nn.Module):
    """Heatmap (n_classes) and regression (6) maps from a BEV feature map (1, C, H, W)."""

    def __init__(self, in_ch: int, n_classes: int = 2, hidden: int = 32):
        super().__init__()
        self.in_ch = V.check_int(in_ch, "in_ch", low=1)
        self.n_classes = V.check_int(n_classes, "n_classes", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        self.shared = nn.Sequential(nn.Conv2d(in_ch, hidden, 3, padding=1), nn.ReLU())
        self.heat = nn.Conv2d(hidden, n_classes, 3, padding=1)
        nn.init.constant_(self.heat.bias, -2.19)
        self.reg = nn.Conv2d(hidden, 6, 3, padding=1)

    def forward(self, bev: torch.Tensor) -> dict:
        V.check_tensor(bev, "bev", ndim=4, shape=(1, self.in_ch, None, None), floating=True)
        h = self.shared(bev)
        return dict(heatmap=self.heat(h), reg=self.reg(h))


def center_targets(boxes, labels, bev_shape, cell: float, n_classes: int = 2, sigma: float = 1.0):
    """Gaussian centre heatmap (n_classes, H, W), regression targets at the centre cells and
    their indices. A scene without objects (no boxes, no labels) gets an all-zero heatmap."""
    if np.size(boxes) == 0 and np.size(labels) == 0:  # the validators refuse empty arrays
        boxes, labels = np.zeros((0, 7)), np.zeros(0, dtype=int)
    else:
        boxes = V.check_array(boxes, "boxes", ndim=2, shape=(None, 7), min_rows=0)
        labels = V.check_array(labels, "labels", ndim=1, min_rows=0).astype(int)
    V.check_same_length(boxes=boxes, labels=labels)
    cell = V.check_scalar(cell, "cell", low=0, low_open=True)
    H, W = (V.check_int(v, "bev_shape", low=1) for v in bev_shape)
    heat = np.zeros((n_classes, H, W), dtype=np.float32)
    ii, jj = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    cells, regs = [], []
    for b, c in zip(boxes, labels):
        fx, fy = b[0] / cell, b[1] / cell
        ix, iy = min(int(fx), H - 1), min(int(fy), W - 1)
        g = np.exp(-((ii - ix) ** 2 + (jj - iy) ** 2) / (2 * sigma**2))
        heat[c] = np.maximum(heat[c], g)
        cells.append(ix * W + iy)
        regs.append([fx - ix, fy - iy, np.log(b[3]), np.log(b[4]), np.sin(b[6]), np.cos(b[6])])
    return (
        torch.from_numpy(heat),
        torch.tensor(regs, dtype=torch.float32).reshape(-1, 6),
        torch.tensor(cells, dtype=torch.long),
    )


def heatmap_focal_loss(
    logits: torch.Tensor, target: torch.Tensor, alpha: float = 2, beta: float = 4
):
    """CenterNet's penalty-reduced focal loss, normalised by the number of centres."""
    p = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    pos = target.eq(1).float()
    neg = 1 - pos
    pl = -torch.log(p) * (1 - p) ** alpha * pos
    nl = -torch.log(1 - p) * p**alpha * (1 - target) ** beta * neg
    return (pl.sum() + nl.sum()) / pos.sum().clamp(min=1)


def binary_focal_loss(logits: torch.Tensor, target: torch.Tensor, gamma: float = 2.0):
    """Focal loss (gamma = 2) for the foreground scores L_f."""
    ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p = torch.sigmoid(logits)
    pt = p * target + (1 - p) * (1 - target)
    return (ce * (1 - pt) ** gamma).mean()


def multiclass_focal_loss(logits: torch.Tensor, target: torch.Tensor, gamma: float = 2.0):
    """Focal loss (gamma = 2) for the semantic classes L_s."""
    logp = F.log_softmax(logits, 1).gather(1, target[:, None]).squeeze(1)
    return (-((1 - logp.exp()) ** gamma) * logp).mean()


def decode(out: dict, cell: float, top_k: int = 30) -> list[tuple[int, float, float, float]]:
    """Peaks of the heatmap (3 x 3 max-pool NMS): (class, score, x, y) in metres."""
    if not isinstance(out, dict) or "heatmap" not in out or "reg" not in out:
        raise TypeError("out must be the CenterHead output dict with 'heatmap' and 'reg'")
    V.check_tensor(
        out["heatmap"], "out['heatmap']", ndim=4, shape=(1, None, None, None), floating=True
    )
    V.check_tensor(out["reg"], "out['reg']", ndim=4, shape=(1, 6, None, None), floating=True)
    cell = V.check_scalar(cell, "cell", low=0, low_open=True)
    top_k = V.check_int(top_k, "top_k", low=1)
    heat = torch.sigmoid(out["heatmap"][0])
    peaks = heat * (F.max_pool2d(heat[None], 3, 1, 1)[0] == heat)
    C, H, W = heat.shape
    scores, idx = peaks.reshape(-1).topk(min(top_k, peaks.numel()))
    reg = out["reg"][0]
    dets = []
    for s, i in zip(scores.tolist(), idx.tolist()):
        c, rest = divmod(i, H * W)
        ix, iy = divmod(rest, W)
        dets.append(
            (c, s, (ix + reg[0, ix, iy].item()) * cell, (iy + reg[1, ix, iy].item()) * cell)
        )
    return dets


def average_precision(scores, matched, n_gt: int) -> float:
    """All-point interpolated AP from detection scores and their true-positive flags."""
    n_gt = V.check_int(n_gt, "n_gt", low=0)
    scores = V.check_array(scores, "scores", ndim=1, min_rows=0)
    matched = V.check_array(matched, "matched", ndim=1, min_rows=0, dtype=None)
    V.check_same_length(scores=scores, matched=matched)
    if matched.sum() > n_gt:
        raise ValueError("matched has more true positives than n_gt")
    if n_gt == 0:
        return float("nan")
    if len(scores) == 0:
        return 0.0
    o = np.argsort(-np.asarray(scores), kind="stable")
    tp = np.asarray(matched, dtype=float)[o]
    ctp = np.cumsum(tp)
    rec = ctp / n_gt
    prec = ctp / np.arange(1, len(tp) + 1)
    prec = np.maximum.accumulate(prec[::-1])[::-1]
    r = np.r_[0.0, rec]
    return float(np.sum((r[1:] - r[:-1]) * prec))


def center_distance_map(
    detections, ground_truth, n_classes: int = 2, thresholds=(1.0, 2.0)
) -> float:
    """mAP over classes and distance thresholds. ``detections``: per scene a list of
    (class, score, x, y); ``ground_truth``: per scene (boxes (K, 7), labels (K,)). Greedy
    matching by descending score to the nearest unmatched centre within the threshold."""
    if len(detections) != len(ground_truth):
        raise ValueError("detections and ground_truth must have one entry per scene")
    n_classes = V.check_int(n_classes, "n_classes", low=1)
    thresholds = V.check_array(thresholds, "thresholds", ndim=1, low=0)
    if (thresholds <= 0).any():
        raise ValueError("thresholds must be > 0")
    aps = []
    for c in range(n_classes):
        for thr in thresholds:
            scores, flags, n_gt = [], [], 0
            for dets, (boxes, labels) in zip(detections, ground_truth):
                gt = np.asarray(boxes)[np.asarray(labels) == c][:, :2]
                n_gt += len(gt)
                used = np.zeros(len(gt), bool)
                for d in sorted((d for d in dets if d[0] == c), key=lambda d: -d[1]):
                    ok = False
                    if len(gt):
                        dist = np.hypot(gt[:, 0] - d[2], gt[:, 1] - d[3])
                        dist[used] = np.inf
                        j = int(np.argmin(dist))
                        if dist[j] <= thr:
                            used[j], ok = True, True
                    scores.append(d[1])
                    flags.append(ok)
            ap = average_precision(scores, flags, n_gt)
            if not np.isnan(ap):
                aps.append(ap)
    return float(np.mean(aps)) if aps else float("nan")
