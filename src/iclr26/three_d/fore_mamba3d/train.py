"""Training and evaluation of a backbone + CenterHead on synthetic scenes with the paper's loss
L = w (L_f + L_s) + L_cls + L_reg, w = 2 (L_f, L_s only where the backbone has a sampler)."""

from __future__ import annotations

import dataclasses

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


def _pool_labels(labels: torch.Tensor, parent: torch.Tensor, n: int) -> torch.Tensor:
    """Labels of downsampled voxels: the maximum over each voxel's children (foreground if any
    child is; the highest class id where children disagree)."""
    out = labels.new_zeros(n)
    return out.scatter_reduce(0, parent, labels, reduce="amax", include_self=False)


def detection_loss(backbone, head, scene, voxel_size: float, aux_weight: float = 2.0) -> dict:
    """The paper's loss terms for one scene (L_f and L_s summed over the stages)."""
    voxel_size = V.check_scalar(voxel_size, "voxel_size", low=0, low_open=True)
    aux_weight = V.check_scalar(aux_weight, "aux_weight", low=0)
    out = backbone(scene.coords, scene.feats)
    pred = head(out["bev"])
    H, W = pred["heatmap"].shape[-2:]
    cell = voxel_size * backbone.grid_shape[0] / H
    heat, reg, cells = center_targets(scene.boxes, scene.labels, (H, W), cell, head.n_classes)
    dev = pred["heatmap"].device  # the targets are built on the CPU
    heat, reg, cells = heat.to(dev), reg.to(dev), cells.to(dev)
    l_cls = heatmap_focal_loss(pred["heatmap"][0], heat)
    l_reg = pred["reg"].new_zeros(())
    if len(cells):
        r = pred["reg"][0].reshape(6, -1)[:, cells].t()
        l_reg = F.l1_loss(r, reg)
    terms = dict(cls=l_cls, reg=l_reg)
    if out["fg_logits"] is not None:
        terms["fg"] = binary_focal_loss(out["fg_logits"], scene.fg)
        terms["sem"] = multiclass_focal_loss(out["sem_logits"], scene.sem)
        fg, sem = scene.fg.to(dev), scene.sem.to(dev)
        for st in out.get("stages", ()):  # later stages: a voxel takes its children's labels
            fg = _pool_labels(fg, st["parent"], len(st["fg_logits"]))
            sem = _pool_labels(sem, st["parent"], len(st["fg_logits"]))
            terms["fg"] = terms["fg"] + binary_focal_loss(st["fg_logits"], fg)
            terms["sem"] = terms["sem"] + multiclass_focal_loss(st["sem_logits"], sem)
    total = l_cls + l_reg + aux_weight * (terms.get("fg", 0.0) + terms.get("sem", 0.0))
    terms["total"] = total
    return terms


def _device_of(module) -> torch.device:
    p = next(module.parameters(), None)
    return torch.device("cpu") if p is None else p.device


def _on_device(scene, device: torch.device):
    """``scene`` with its tensors on ``device`` (the scene itself where they already are)."""
    if scene.coords.device == device:
        return scene
    moved = {
        f.name: getattr(scene, f.name).to(device)
        for f in dataclasses.fields(scene)
        if isinstance(getattr(scene, f.name), torch.Tensor)
    }
    return dataclasses.replace(scene, **moved)


def _check_same_device(backbone, head) -> torch.device:
    device = _device_of(backbone)
    if _device_of(head) != device:
        raise ValueError(f"head must be on the backbone's device {device}, got {_device_of(head)}")
    return device


def train_detector(
    backbone, head, scenes, steps: int, lr: float = 2e-3, seed: int = 0
) -> list[float]:
    """Adam on one scene per step (cycling through ``scenes``); returns the heatmap loss per
    step. Runs on the device of ``backbone``'s parameters (``head`` must be there too); the
    scenes are moved there."""
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0, low_open=True)
    if len(scenes) == 0:
        raise ValueError("scenes is empty")
    device = _check_same_device(backbone, head)
    torch.manual_seed(V.check_int(seed, "seed", low=0))
    params = list(backbone.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    order = np.random.default_rng(seed).permutation(len(scenes))
    backbone.train()
    head.train()
    history = []
    moved = {}
    for s in range(steps):
        i = int(order[s % len(order)])
        if i not in moved:
            moved[i] = _on_device(scenes[i], device)
        scene = moved[i]
        terms = detection_loss(backbone, head, scene, scenes.voxel_size)
        opt.zero_grad()
        terms["total"].backward()
        torch.nn.utils.clip_grad_norm_(params, 10.0)
        opt.step()
        history.append(float(terms["cls"].detach()))
    return history


@torch.no_grad()
def evaluate_map(backbone, head, scenes, thresholds=(1.0, 2.0)) -> float:
    """Centre-distance mAP over the two classes on ``scenes`` (run on ``backbone``'s device)."""
    if len(scenes) == 0:
        raise ValueError("scenes is empty")
    thresholds = V.check_array(thresholds, "thresholds", ndim=1, low=0)
    device = _check_same_device(backbone, head)
    backbone.eval()
    head.eval()
    dets, gts = [], []
    for i in range(len(scenes)):
        sc = _on_device(scenes[i], device)
        pred = head(backbone(sc.coords, sc.feats)["bev"])
        cell = scenes.voxel_size * backbone.grid_shape[0] / pred["heatmap"].shape[-2]
        dets.append(decode(pred, cell))
        gts.append((sc.boxes, sc.labels))
    return center_distance_map(dets, gts, head.n_classes, thresholds)
