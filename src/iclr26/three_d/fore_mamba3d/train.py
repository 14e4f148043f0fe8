"""Training and evaluation of a backbone + CenterHead on synthetic scenes with the paper's loss
L = w (L_f + L_s) + L_cls + L_reg, w = 2 (L_f, L_s only where the backbone has a sampler)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.three_d.fore_mamba3d.head import (
    binary_focal_loss,
    center_distance_map,
    center_targets,
    decode,
    heatmap_focal_loss,
    multiclass_focal_loss,
)


def detection_loss(backbone, head, scene, voxel_size: float, aux_weight: float = 2.0) -> dict:
    """The paper's loss terms for one scene."""
    voxel_size = V.check_scalar(voxel_size, "voxel_size", low=0, low_open=True)
    aux_weight = V.check_scalar(aux_weight, "aux_weight", low=0)
    out = backbone(scene.coords, scene.feats)
    pred = head(out["bev"])
    H, W = pred["heatmap"].shape[-2:]
    cell = voxel_size * backbone.grid_shape[0] / H
    heat, reg, cells = center_targets(scene.boxes, scene.labels, (H, W), cell, head.n_classes)
    l_cls = heatmap_focal_loss(pred["heatmap"][0], heat)
    l_reg = pred["reg"].new_zeros(())
    if len(cells):
        r = pred["reg"][0].reshape(6, -1)[:, cells].t()
        l_reg = F.l1_loss(r, reg)
    terms = dict(cls=l_cls, reg=l_reg)
    if out["fg_logits"] is not None:
        terms["fg"] = binary_focal_loss(out["fg_logits"], scene.fg)
        terms["sem"] = multiclass_focal_loss(out["sem_logits"], scene.sem)
    total = l_cls + l_reg + aux_weight * (terms.get("fg", 0.0) + terms.get("sem", 0.0))
    terms["total"] = total
    return terms


def train_detector(
    backbone, head, scenes, steps: int, lr: float = 2e-3, seed: int = 0
) -> list[float]:
    """Adam on one scene per step (cycling through ``scenes``); returns the heatmap loss per
    step."""
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0, low_open=True)
    if len(scenes) == 0:
        raise ValueError("scenes is empty")
    torch.manual_seed(V.check_int(seed, "seed", low=0))
    params = list(backbone.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    order = np.random.default_rng(seed).permutation(len(scenes))
    backbone.train()
    head.train()
    history = []
    for s in range(steps):
        scene = scenes[int(order[s % len(order)])]
        terms = detection_loss(backbone, head, scene, scenes.voxel_size)
        opt.zero_grad()
        terms["total"].backward()
        torch.nn.utils.clip_grad_norm_(params, 10.0)
        opt.step()
        history.append(float(terms["cls"].detach()))
    return history


@torch.no_grad()
def evaluate_map(backbone, head, scenes, thresholds=(1.0, 2.0)) -> float:
    """Centre-distance mAP over the two classes on ``scenes``."""
    if len(scenes) == 0:
        raise ValueError("scenes is empty")
    thresholds = V.check_array(thresholds, "thresholds", ndim=1, low=0)
    backbone.eval()
    head.eval()
    dets, gts = [], []
    for i in range(len(scenes)):
        sc = scenes[i]
        pred = head(backbone(sc.coords, sc.feats)["bev"])
        cell = scenes.voxel_size * backbone.grid_shape[0] / pred["heatmap"].shape[-2]
        dets.append(decode(pred, cell))
        gts.append((sc.boxes, sc.labels))
    return center_distance_map(dets, gts, head.n_classes, thresholds)
