"""An OpenPCDet ``BACKBONE_3D`` adapter for :class:`ForeMamba3DBackbone` (no OpenPCDet or spconv
import: the module only follows their batch-dict contract).

OpenPCDet builds a 3-D backbone as ``cls(model_cfg=..., input_channels=..., grid_size=...,
voxel_size=..., point_cloud_range=...)``, reads its ``num_point_features`` (and, for two-stage
detectors, ``backbone_channels``) and calls ``forward(batch_dict)`` with

- ``voxel_features`` (N, input_channels), the VFE output,
- ``voxel_coords`` (N, 4) as ``[batch_idx, z, y, x]`` (a float tensor after OpenPCDet's
  ``load_data_to_gpu``; integral values are required),
- ``batch_size``.

The adapter runs the backbone's instance-selection stages on each sample, collapses the last
stage's voxels over z (max, as the backbone's own BEV map) and writes what the map-to-BEV
modules and the ROI heads read after a sparse 3-D backbone:

- ``encoded_spconv_tensor``: a :class:`SparseVoxels` (``features``, ``indices`` as
  ``[batch_idx, 0, y, x]``, ``spatial_shape`` ``[1, ny, nx]``, ``batch_size``, ``dense()``)
  for ``HeightCompression`` (``NUM_BEV_FEATURES`` = the last stage width), and
  ``encoded_spconv_tensor_stride`` (2 per stage after the first);
- ``multi_scale_3d_features`` / ``multi_scale_3d_strides``: ``x_conv1``, ``x_conv2``, ... one
  :class:`SparseVoxels` per stage (``[batch_idx, z, y, x]`` indices) and its x/y stride;
- with ``OUTPUT: pillar`` also ``pillar_features``, ``voxel_features`` and ``voxel_coords`` of
  the z-collapsed map (the DSVT / Voxel-Mamba convention, for ``PointPillarScatter3d`` with
  ``INPUT_SHAPE`` ``[nx, ny, 1]``).

``get_loss()`` returns the sampler's auxiliary loss ``w (L_f + L_s)`` (focal, gamma = 2, all
stages) from the ``gt_boxes`` of the last training forward, as OpenPCDet heads return theirs:
``(loss, tb_dict)``; a detector adds it to its training loss.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.fore_mamba3d.backbone import ForeMamba3DBackbone
from iclr26.three_d.fore_mamba3d.head import binary_focal_loss, multiclass_focal_loss

# model_cfg key -> (ForeMamba3DBackbone argument, default)
CFG_KEYS = {
    "DIMS": ("dims", (32,)),
    "FG_RATIO": ("fg_ratio", 0.2),
    "NUM_ROTATIONS": ("n_rot", 2),
    "PATCH_LEN": ("patch_len", 64),
    "SLIDE_ITERS": ("slide_iters", 2),
    "LOCAL_TOKEN": ("local_token", True),
    "RGSW": ("rgsw", True),
    "USE_SAF": ("use_saf", True),
    "USE_SSF": ("use_ssf", True),
    "D_STATE": ("d_state", 8),
    "NUM_SEM_CLASSES": ("n_sem", 4),
    "K_MIN": ("k_min", 1),
    "SCAN": ("scan", "torch"),
}
OTHER_KEYS = {"NAME": None, "OUTPUT": "spconv", "AUX_WEIGHT": 2.0}


class SparseVoxels:
    """The fields of an ``spconv.SparseConvTensor`` that OpenPCDet's modules read after a 3-D
    backbone: ``features`` (N, C), ``indices`` (N, 4) int32 ``[batch_idx, z, y, x]``,
    ``spatial_shape`` ``[nz, ny, nx]``, ``batch_size`` and ``dense()`` -> (B, C, nz, ny, nx)."""

    def __init__(self, features, indices, spatial_shape, batch_size):
        self.features = features
        self.indices = indices
        self.spatial_shape = [int(s) for s in spatial_shape]
        self.batch_size = int(batch_size)

    def dense(self, channels_first: bool = True) -> torch.Tensor:
        nz, ny, nx = self.spatial_shape
        c = self.features.shape[1]
        out = self.features.new_zeros(self.batch_size, nz, ny, nx, c)
        idx = self.indices.long()
        out = out.index_put((idx[:, 0], idx[:, 1], idx[:, 2], idx[:, 3]), self.features)
        return out.permute(0, 4, 1, 2, 3).contiguous() if channels_first else out

    def __repr__(self) -> str:
        return (
            f"SparseVoxels(n={len(self.features)}, channels={self.features.shape[1]}, "
            f"spatial_shape={self.spatial_shape}, batch_size={self.batch_size})"
        )


class OpenPCDetForeMamba3D(nn.Module):
    """OpenPCDet 3-D backbone around :class:`ForeMamba3DBackbone` (built by
    ``ForeMamba3DBackbone.openpcdet_compatible``). ``model_cfg`` is a mapping (OpenPCDet's
    ``EasyDict``) with the optional keys of ``CFG_KEYS`` (``DIMS``: one width per stage,
    ``FG_RATIO``, ``NUM_ROTATIONS``, ``PATCH_LEN``, ``SLIDE_ITERS``, ``LOCAL_TOKEN``, ``RGSW``,
    ``USE_SAF``, ``USE_SSF``, ``D_STATE``, ``NUM_SEM_CLASSES`` = classes + 1 for background,
    ``K_MIN``, ``SCAN``: ``torch`` or ``mamba_ssm``) and ``NAME``, ``OUTPUT`` (``spconv`` or
    ``pillar``), ``AUX_WEIGHT`` (w = 2); an unknown key is refused. ``grid_size`` is
    OpenPCDet's ``[nx, ny, nz]``."""

    def __init__(
        self,
        model_cfg,
        input_channels,
        grid_size,
        voxel_size=None,
        point_cloud_range=None,
        **kwargs,
    ):
        super().__init__()
        if not isinstance(model_cfg, Mapping):
            raise TypeError(
                f"model_cfg must be a mapping (OpenPCDet's EasyDict), got {type(model_cfg).__name__}"
            )
        unknown = sorted(str(k) for k in model_cfg if k not in CFG_KEYS and k not in OTHER_KEYS)
        if unknown:
            known = ", ".join([*CFG_KEYS, *OTHER_KEYS])
            raise ValueError(f"model_cfg has unknown key(s) {unknown}; known: {known}")
        self.model_cfg = model_cfg
        self.input_channels = V.check_int(input_channels, "input_channels", low=1)
        gs = V.check_array(grid_size, "grid_size", ndim=1, shape=(3,))
        if (gs < 1).any() or not np.all(gs == np.round(gs)):
            raise ValueError(f"grid_size must hold three integers >= 1 ([nx, ny, nz]), got {gs}")
        self.grid_size = tuple(int(g) for g in gs)
        self.output = V.check_choice(
            model_cfg.get("OUTPUT", OTHER_KEYS["OUTPUT"]),
            "model_cfg['OUTPUT']",
            ("spconv", "pillar"),
        )
        self.aux_weight = V.check_scalar(
            model_cfg.get("AUX_WEIGHT", OTHER_KEYS["AUX_WEIGHT"]), "model_cfg['AUX_WEIGHT']", low=0
        )
        self.voxel_size = self._vector(voxel_size, "voxel_size", positive=True)
        self.point_cloud_range = self._vector(point_cloud_range, "point_cloud_range", n=6)
        kw = {}
        for key, (arg, default) in CFG_KEYS.items():
            value = model_cfg.get(key, default)
            if key == "DIMS" and isinstance(value, int | np.integer):
                value = (int(value),)
            kw[arg] = value
        # the backbone needs >= 2 cells per axis; a pillar grid (nz = 1) gets a z extent of 2
        grid = tuple(max(2, g) for g in self.grid_size)
        self.backbone = ForeMamba3DBackbone(in_ch=self.input_channels, grid_shape=grid, **kw)
        self.strides = [2**s for s in range(self.backbone.n_stages)]
        self.num_point_features = self.backbone.out_ch
        self.backbone_channels = {f"x_conv{s + 1}": d for s, d in enumerate(self.backbone.dims)}
        self.forward_ret_dict: dict = {}

    @staticmethod
    def _vector(value, name, n=3, positive=False):
        if value is None:
            return None
        arr = V.check_array(value, name, ndim=1, shape=(n,))
        if positive and (arr <= 0).any():
            raise ValueError(f"{name} must be > 0 in every axis, got {arr}")
        return tuple(float(v) for v in arr)

    def _check_batch(self, batch_dict):
        if not isinstance(batch_dict, Mapping):
            raise TypeError(f"batch_dict must be a dict, got {type(batch_dict).__name__}")
        for key in ("voxel_features", "voxel_coords", "batch_size"):
            if key not in batch_dict:
                raise ValueError(
                    f"batch_dict['{key}'] is missing (needs voxel_features, voxel_coords, "
                    "batch_size)"
                )
        feats = V.check_tensor(
            batch_dict["voxel_features"],
            "batch_dict['voxel_features']",
            ndim=2,
            shape=(None, self.input_channels),
            floating=True,
        )
        name = "batch_dict['voxel_coords']"
        coords = V.check_tensor(batch_dict["voxel_coords"], name, ndim=2, shape=(None, 4), low=0)
        V.check_same_length(voxel_features=feats, voxel_coords=coords)
        if coords.is_floating_point():
            if not torch.equal(coords, coords.round()):
                raise ValueError(f"{name} must hold integral voxel indices")
        elif coords.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer (or integral float) tensor, got bool")
        coords = coords.long()
        batch_size = V.check_int(batch_dict["batch_size"], "batch_dict['batch_size']", low=1)
        nx, ny, nz = self.grid_size
        limits = torch.tensor([batch_size, nz, ny, nx], device=coords.device)
        bad = (coords >= limits).any(0)
        if bad.any():
            axis = ["batch_idx", "z", "y", "x"][int(torch.nonzero(bad)[0])]
            raise ValueError(
                f"{name} has {axis} out of range (batch_size {batch_size}, grid_size "
                f"[nx, ny, nz] = {list(self.grid_size)})"
            )
        return feats, coords, batch_size

    def forward(self, batch_dict: dict) -> dict:
        feats, coords, batch_size = self._check_batch(batch_dict)
        per_level = [[] for _ in range(self.backbone.n_stages)]
        for b in range(batch_size):
            m = torch.nonzero(coords[:, 0] == b).squeeze(1)
            if m.numel() == 0:  # an empty sample contributes no voxels
                continue
            xyz = coords[m][:, [3, 2, 1]]
            for s, lv in enumerate(self.backbone.encode_voxels(xyz, feats[m])):
                per_level[s].append((b, lv))
        if not any(per_level[0]):
            raise ValueError("batch_dict['voxel_coords'] is empty: no sample has a voxel")
        ms_feats, ms_strides = {}, {}
        for s, items in enumerate(per_level):
            nx, ny, nz = self.backbone.stage_grids[s]
            idx = torch.cat([self._bzyx(b, lv["coords"]) for b, lv in items])
            sp = SparseVoxels(
                torch.cat([lv["feats"] for _, lv in items]), idx, [nz, ny, nx], batch_size
            )
            ms_feats[f"x_conv{s + 1}"] = sp
            ms_strides[f"x_conv{s + 1}"] = self.strides[s]
        last = ms_feats[f"x_conv{self.backbone.n_stages}"]
        pillars = self._collapse_z(last)
        batch_dict["encoded_spconv_tensor"] = pillars
        batch_dict["encoded_spconv_tensor_stride"] = self.strides[-1]
        batch_dict["multi_scale_3d_features"] = ms_feats
        batch_dict["multi_scale_3d_strides"] = ms_strides
        if self.output == "pillar":
            batch_dict["pillar_features"] = batch_dict["voxel_features"] = pillars.features
            batch_dict["voxel_coords"] = pillars.indices
        self.forward_ret_dict = dict(levels=per_level, gt_boxes=batch_dict.get("gt_boxes"))
        return batch_dict

    @staticmethod
    def _bzyx(b, xyz):
        col = torch.full((len(xyz), 1), b, dtype=torch.long, device=xyz.device)
        return torch.cat([col, xyz.long()[:, [2, 1, 0]]], 1).int()

    @staticmethod
    def _collapse_z(sp: SparseVoxels) -> SparseVoxels:
        """Max over z per (batch_idx, y, x): the pillar map OpenPCDet's BEV modules read."""
        _, ny, nx = sp.spatial_shape
        idx = sp.indices.long()
        key = (idx[:, 0] * ny + idx[:, 2]) * nx + idx[:, 3]
        ukey, inv = torch.unique(key, return_inverse=True)
        f = sp.features
        out = f.new_zeros(len(ukey), f.shape[1])
        out = out.scatter_reduce(0, inv[:, None].expand_as(f), f, reduce="amax", include_self=False)
        b, rest = ukey // (ny * nx), ukey % (ny * nx)
        ind = torch.stack([b, torch.zeros_like(b), rest // nx, rest % nx], 1).int()
        return SparseVoxels(out, ind, [1, ny, nx], sp.batch_size)

    def _labels(self, xyz, boxes, stride):
        """Foreground flag and class (0 background) of voxels at stage stride ``stride`` from
        OpenPCDet boxes (M, 8) ``[x, y, z, dx, dy, dz, heading, class]`` enlarged by 0.5 m in
        x/y and 0.25 m in z (as the synthetic scenes' labels)."""
        vs = torch.tensor(self.voxel_size, device=xyz.device)
        lo = torch.tensor(self.point_cloud_range[:3], device=xyz.device)
        st = torch.tensor([stride, stride, 1.0], device=xyz.device)
        centres = lo + (xyz.float() + 0.5) * st * vs
        sem = torch.zeros(len(xyz), dtype=torch.long, device=xyz.device)
        boxes = boxes[boxes[:, 3:6].abs().sum(1) > 0]  # OpenPCDet pads with zero rows
        for box in boxes:
            d = centres - box[:3]
            c, s = torch.cos(-box[6]), torch.sin(-box[6])
            lx, ly = d[:, 0] * c - d[:, 1] * s, d[:, 0] * s + d[:, 1] * c
            inside = (lx.abs() <= box[3] / 2 + 0.5) & (ly.abs() <= box[4] / 2 + 0.5)
            inside &= d[:, 2].abs() <= box[5] / 2 + 0.25
            sem = torch.where(inside & (sem == 0), box[7].long(), sem)
        return (sem > 0).float(), sem

    def get_loss(self, tb_dict=None):
        """``(aux_weight * (L_f + L_s), tb_dict)`` of the last forward (needs ``gt_boxes`` in
        its batch_dict and ``voxel_size`` / ``point_cloud_range`` at construction)."""
        tb_dict = {} if tb_dict is None else tb_dict
        ret = self.forward_ret_dict
        if not ret:
            raise RuntimeError("get_loss needs a forward pass first")
        if self.voxel_size is None or self.point_cloud_range is None:
            raise ValueError("voxel_size and point_cloud_range are needed for get_loss")
        boxes = ret["gt_boxes"]
        if boxes is None:
            raise ValueError("batch_dict['gt_boxes'] was not in the forward's batch_dict")
        V.check_tensor(boxes, "batch_dict['gt_boxes']", ndim=3, min_ndim=3, nonempty=False)
        if boxes.shape[-1] < 8:
            raise ValueError("batch_dict['gt_boxes'] must be (B, M, 8) with the class last")
        n_sem = self.backbone.n_sem
        if boxes.numel() and int(boxes[..., 7].max()) >= n_sem:
            raise ValueError(
                f"batch_dict['gt_boxes'] has class ids up to {int(boxes[..., 7].max())}; "
                f"model_cfg['NUM_SEM_CLASSES'] ({n_sem}) must exceed them"
            )
        l_f = l_s = None
        for s, items in enumerate(ret["levels"]):
            for b, lv in items:
                if lv["fg_logits"] is None:
                    continue
                fg, sem = self._labels(lv["coords"], boxes[b], self.strides[s])
                lf = binary_focal_loss(lv["fg_logits"], fg)
                ls = multiclass_focal_loss(lv["sem_logits"], sem)
                l_f = lf if l_f is None else l_f + lf
                l_s = ls if l_s is None else l_s + ls
        if l_f is None:  # FG_RATIO = 1: no sampler, nothing to supervise
            dev = next(self.parameters()).device
            loss = torch.zeros((), device=dev)
        else:
            n = max(1, sum(1 for _, lv in ret["levels"][0] if lv["fg_logits"] is not None))
            l_f, l_s = l_f / n, l_s / n  # per sample, summed over the stages
            loss = self.aux_weight * (l_f + l_s)
            tb_dict.update(fore_loss_fg=float(l_f.detach()), fore_loss_sem=float(l_s.detach()))
        tb_dict["fore_loss_aux"] = float(loss.detach())
        return loss, tb_dict

    def extra_repr(self) -> str:
        return (
            f"grid_size={list(self.grid_size)}, dims={list(self.backbone.dims)}, "
            f"output={self.output!r}, stride={self.strides[-1]}"
        )
