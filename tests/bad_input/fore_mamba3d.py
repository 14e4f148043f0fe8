"""Bad-input cases for the Fore-Mamba3D room (read by tests/framework/test_bad_input.py)."""

import functools

import numpy as np
import torch

from iclr26.three_d.fore_mamba3d import (
    CenterHead,
    ForeMamba3DBackbone,
    OpenPCDetForeMamba3D,
    SASFMamba,
    SparseDownsample,
    SparseNeighbours,
    SubmConv3d,
    SyntheticLidarScenes,
    VoxelMambaBackbone,
    average_precision,
    axis_sparse_conv,
    center_distance_map,
    center_targets,
    decode,
    detection_loss,
    evaluate_map,
    hilbert_index,
    hilbert_order,
    rgsw_patches,
    rotate_coords,
    train_detector,
)

NAN, INF = float("nan"), float("inf")
GRID = (8, 8, 4)
COORDS = torch.tensor([[0, 0, 0], [1, 0, 0], [2, 3, 1], [5, 5, 2], [7, 1, 3]])
FEATS = torch.rand(5, 4)
FEATS_NAN = FEATS.clone()
FEATS_NAN[1, 2] = NAN
EMPTY_C = torch.zeros(0, 3, dtype=torch.long)
EMPTY_F = torch.zeros(0, 4)
BOXES = np.array([[2.0, 2.0, 0.7, 4, 2, 1.5, 0.0]])


@functools.cache
def _bb():
    return ForeMamba3DBackbone(dim=8, grid_shape=GRID, patch_len=4, d_state=2)


@functools.cache
def _data():
    return SyntheticLidarScenes(1, grid_shape=(16, 16, 8))


def _head_out(**over):
    out = dict(heatmap=torch.zeros(1, 2, 4, 4), reg=torch.zeros(1, 6, 4, 4))
    out.update(over)
    return out


NB = SparseNeighbours(COORDS, 1)
PCDET_CFG = {"NAME": "ForeMamba3D", "DIMS": [8], "PATCH_LEN": 4, "D_STATE": 2}


@functools.cache
def _pcdet():
    return OpenPCDetForeMamba3D(PCDET_CFG, 4, np.array([8, 8, 4]))


def _batch(**over):
    bzyx = torch.cat([torch.zeros(5, 1, dtype=torch.long), COORDS[:, [2, 1, 0]]], 1).float()
    batch = dict(voxel_features=FEATS, voxel_coords=bzyx, batch_size=1)
    batch.update(over)
    return batch


CASES = [
    ("ForeMamba3DBackbone", "empty", lambda: _bb()(EMPTY_C, EMPTY_F), ValueError, "coords"),
    ("ForeMamba3DBackbone", "nan", lambda: _bb()(COORDS, FEATS_NAN), ValueError, "feats"),
    ("ForeMamba3DBackbone", "shape", lambda: _bb()(COORDS, FEATS[:, :3]), ValueError, "feats"),
    ("ForeMamba3DBackbone", "dtype", lambda: _bb()(COORDS.float(), FEATS), TypeError, "coords"),
    ("ForeMamba3DBackbone", "range", lambda: _bb()(COORDS + 8, FEATS), ValueError, "coords"),
    (
        "ForeMamba3DBackbone",
        "range",
        lambda: ForeMamba3DBackbone(fg_ratio=0.0),
        ValueError,
        "fg_ratio",
    ),
    (
        "ForeMamba3DBackbone",
        "range",
        lambda: ForeMamba3DBackbone(fg_ratio=NAN),
        ValueError,
        "fg_ratio",
    ),
    (
        "ForeMamba3DBackbone",
        "range",
        lambda: ForeMamba3DBackbone(patch_len=1),
        ValueError,
        "patch_len",
    ),
    ("VoxelMambaBackbone", "range", lambda: VoxelMambaBackbone(n_layers=0), ValueError, "n_layers"),
    (
        "VoxelMambaBackbone",
        "empty",
        lambda: VoxelMambaBackbone(dim=4, grid_shape=GRID)(EMPTY_C, EMPTY_F),
        ValueError,
        "coords",
    ),
    (
        "ForeMamba3DBackbone",
        "shape",
        lambda: _bb().cross_instance_influence(COORDS, FEATS, torch.ones(4, dtype=torch.long)),
        ValueError,
        "instance",
    ),
    (
        "ForeMamba3DBackbone",
        "dtype",
        lambda: _bb().cross_instance_influence(COORDS, FEATS, torch.ones(5)),
        TypeError,
        "instance",
    ),
    (
        "ForeMamba3DBackbone",
        "range",
        lambda: _bb().cross_instance_influence(COORDS, FEATS, -torch.ones(5, dtype=torch.long)),
        ValueError,
        "instance",
    ),
    (
        "ForeMamba3DBackbone",
        "nan",
        lambda: _bb().cross_instance_influence(COORDS, FEATS_NAN, torch.ones(5, dtype=torch.long)),
        ValueError,
        "feats",
    ),
    (
        "ForeMamba3DBackbone",
        "dtype",
        lambda: _bb().cross_instance_influence(
            COORDS, FEATS, torch.ones(5, dtype=torch.long), oracle_foreground="yes"
        ),
        (TypeError, ValueError),
        "oracle_foreground",
    ),
    ("OpenPCDetForeMamba3D", "type", lambda: _pcdet()([_batch()]), TypeError, "batch_dict"),
    (
        "OpenPCDetForeMamba3D",
        "other",
        lambda: _pcdet()({k: v for k, v in _batch().items() if k != "batch_size"}),
        ValueError,
        "batch_size",
    ),
    (
        "OpenPCDetForeMamba3D",
        "nan",
        lambda: _pcdet()(_batch(voxel_features=FEATS_NAN)),
        ValueError,
        "voxel_features",
    ),
    (
        "OpenPCDetForeMamba3D",
        "shape",
        lambda: _pcdet()(_batch(voxel_coords=torch.zeros(5, 3))),
        ValueError,
        "voxel_coords",
    ),
    (
        "OpenPCDetForeMamba3D",
        "dtype",
        lambda: _pcdet()(_batch(voxel_coords=_batch()["voxel_coords"] + 0.25)),
        ValueError,
        "voxel_coords",
    ),
    (
        "OpenPCDetForeMamba3D",
        "range",
        lambda: _pcdet()(_batch(voxel_coords=_batch()["voxel_coords"] + 8)),
        ValueError,
        "voxel_coords",
    ),
    (
        "OpenPCDetForeMamba3D",
        "empty",
        lambda: _pcdet()(_batch(voxel_features=EMPTY_F, voxel_coords=torch.zeros(0, 4))),
        ValueError,
        "voxel_features",
    ),
    (
        "OpenPCDetForeMamba3D",
        "range",
        lambda: _pcdet()(_batch(batch_size=0)),
        ValueError,
        "batch_size",
    ),
    (
        "OpenPCDetForeMamba3D",
        "type",
        lambda: OpenPCDetForeMamba3D([("DIMS", [8])], 4, [8, 8, 4]),
        TypeError,
        "model_cfg",
    ),
    (
        "OpenPCDetForeMamba3D",
        "other",
        lambda: OpenPCDetForeMamba3D({"FG_RATI": 0.3}, 4, [8, 8, 4]),
        ValueError,
        "model_cfg",
    ),
    (
        "OpenPCDetForeMamba3D",
        "range",
        lambda: OpenPCDetForeMamba3D({"OUTPUT": "dense"}, 4, [8, 8, 4]),
        ValueError,
        "OUTPUT",
    ),
    (
        "OpenPCDetForeMamba3D",
        "shape",
        lambda: OpenPCDetForeMamba3D(PCDET_CFG, 4, [8, 8]),
        ValueError,
        "grid_size",
    ),
    (
        "OpenPCDetForeMamba3D",
        "range",
        lambda: OpenPCDetForeMamba3D(PCDET_CFG, 0, [8, 8, 4]),
        ValueError,
        "input_channels",
    ),
    (
        "OpenPCDetForeMamba3D",
        "nan",
        lambda: OpenPCDetForeMamba3D(PCDET_CFG, 4, [8, 8, 4], voxel_size=[0.1, NAN, 0.1]),
        ValueError,
        "voxel_size",
    ),
    (
        "OpenPCDetForeMamba3D",
        "other",
        lambda: _pcdet().get_loss() if _pcdet()(_batch()) else None,
        ValueError,
        "voxel_size",
    ),
    (
        "ForeMamba3DBackbone",
        "other",
        lambda: ForeMamba3DBackbone.openpcdet_compatible(PCDET_CFG, 4, [8, 8, 4])([_batch()]),
        TypeError,
        "batch_dict",
    ),
    (
        "ForeMamba3DBackbone",
        "range",
        lambda: ForeMamba3DBackbone(dims=(8, 1)),
        ValueError,
        "dims",
    ),
    ("ForeMamba3DBackbone", "type", lambda: ForeMamba3DBackbone(dims=8), TypeError, "dims"),
    (
        "ForeMamba3DBackbone",
        "other",
        lambda: ForeMamba3DBackbone(dims=(8, 8), grid_shape=GRID).tokens_per_layer(50),
        ValueError,
        "n_voxels",
    ),
    ("SparseDownsample", "range", lambda: SparseDownsample(0, 4), ValueError, "c_in"),
    (
        "SparseDownsample",
        "range",
        lambda: SparseDownsample(4, 4, stride=(2, 0, 1)),
        ValueError,
        "stride",
    ),
    (
        "SparseDownsample",
        "shape",
        lambda: SparseDownsample(4, 4)(COORDS, FEATS[:, :2]),
        ValueError,
        "feats",
    ),
    (
        "SparseDownsample",
        "nan",
        lambda: SparseDownsample(4, 4)(COORDS, FEATS_NAN),
        ValueError,
        "feats",
    ),
    ("SASFMamba", "range", lambda: SASFMamba(0), ValueError, "d_model"),
    (
        "SASFMamba",
        "other",
        lambda: SASFMamba(4, d_state=2, use_ssf=False)(
            torch.zeros(1, 3, 4), None, torch.arange(3)[None]
        ),
        ValueError,
        "sem",
    ),
    (
        "SASFMamba",
        "other",
        lambda: SASFMamba(4, d_state=2, use_saf=False)(
            torch.zeros(1, 3, 4), None, torch.arange(3)[None]
        ),
        ValueError,
        "nb",
    ),
    (
        "SASFMamba",
        "dtype",
        lambda: SASFMamba(4, d_state=2)(torch.zeros(1, 3, 4), torch.ones(1, 3)),
        TypeError,
        "valid",
    ),
    (
        "SASFMamba",
        "shape",
        lambda: SASFMamba(4, d_state=2)(torch.zeros(1, 3, 5)),
        ValueError,
        "x",
    ),
    ("SASFMamba", "range", lambda: SASFMamba(8, saf_kernel=4), ValueError, "saf_kernel"),
    ("SASFMamba", "range", lambda: SASFMamba(8, scan="cuda"), ValueError, "scan"),
    (
        "SASFMamba",
        "nan",
        lambda: SASFMamba(4, d_state=2)(torch.full((1, 3, 4), NAN)),
        ValueError,
        "x",
    ),
    ("SASFMamba", "shape", lambda: SASFMamba(4, d_state=2)(torch.zeros(3, 4)), ValueError, "x"),
    ("SparseNeighbours", "dtype", lambda: SparseNeighbours(COORDS.float(), 1), TypeError, "coords"),
    ("SparseNeighbours", "range", lambda: SparseNeighbours(COORDS, -1), ValueError, "radius"),
    (
        "axis_sparse_conv",
        "nan",
        lambda: axis_sparse_conv(torch.full((5, 2), NAN), NB, torch.zeros(3, 3, 2)),
        ValueError,
        "values",
    ),
    (
        "axis_sparse_conv",
        "shape",
        lambda: axis_sparse_conv(torch.zeros(5, 2), NB, torch.zeros(3, 5, 2)),
        ValueError,
        "weight",
    ),
    ("SubmConv3d", "range", lambda: SubmConv3d(0, 4), ValueError, "c_in"),
    (
        "SubmConv3d",
        "shape",
        lambda: SubmConv3d(4, 4)(COORDS, torch.zeros(5, 3)),
        ValueError,
        "feats",
    ),
    ("CenterHead", "range", lambda: CenterHead(0), ValueError, "in_ch"),
    ("CenterHead", "shape", lambda: CenterHead(4)(torch.zeros(1, 3, 4, 4)), ValueError, "bev"),
    ("CenterHead", "inf", lambda: CenterHead(4)(torch.full((1, 4, 4, 4), INF)), ValueError, "bev"),
    ("SyntheticLidarScenes", "range", lambda: SyntheticLidarScenes(0), ValueError, "n"),
    (
        "SyntheticLidarScenes",
        "range",
        lambda: SyntheticLidarScenes(2, voxel_size=NAN),
        ValueError,
        "voxel_size",
    ),
    (
        "SyntheticLidarScenes",
        "shape",
        lambda: SyntheticLidarScenes(2, grid_shape=(8, 8)),
        ValueError,
        "grid_shape",
    ),
    ("SyntheticLidarScenes", "range", lambda: SyntheticLidarScenes(2)[5], ValueError, "i"),
    (
        "hilbert_index",
        "range",
        lambda: hilbert_index(np.array([[0, 0, 9]]), 3),
        ValueError,
        "coords",
    ),
    (
        "hilbert_index",
        "dtype",
        lambda: hilbert_index(np.array([[0.5, 0, 1]]), 3),
        TypeError,
        "coords",
    ),
    ("hilbert_index", "range", lambda: hilbert_index(np.array([[0, 0, 1]]), 0), ValueError, "bits"),
    ("hilbert_order", "empty", lambda: hilbert_order(np.zeros((0, 3), int)), ValueError, "coords"),
    ("hilbert_order", "shape", lambda: hilbert_order(np.zeros((4, 2), int)), ValueError, "coords"),
    (
        "rotate_coords",
        "nan",
        lambda: rotate_coords(np.zeros((2, 3), int), NAN, GRID),
        ValueError,
        "theta",
    ),
    (
        "rotate_coords",
        "shape",
        lambda: rotate_coords(np.zeros((2, 3), int), 0.0, (8, 8)),
        ValueError,
        "grid_shape",
    ),
    ("rgsw_patches", "range", lambda: rgsw_patches(0, 8, False), ValueError, "n"),
    ("rgsw_patches", "range", lambda: rgsw_patches(10, 1, False), ValueError, "patch_len"),
    (
        "center_targets",
        "nan",
        lambda: center_targets(BOXES * NAN, [0], (4, 4), 1.0),
        ValueError,
        "boxes",
    ),
    (
        "center_targets",
        "shape",
        lambda: center_targets(BOXES[:, :5], [0], (4, 4), 1.0),
        ValueError,
        "boxes",
    ),
    (
        "center_targets",
        "range",
        lambda: center_targets(BOXES, [0], (4, 4), 0.0),
        ValueError,
        "cell",
    ),
    ("decode", "type", lambda: decode({"heatmap": torch.zeros(1, 2, 4, 4)}, 1.0), TypeError, "out"),
    (
        "decode",
        "nan",
        lambda: decode(_head_out(heatmap=torch.full((1, 2, 4, 4), NAN)), 1.0),
        ValueError,
        "heatmap",
    ),
    ("decode", "range", lambda: decode(_head_out(), -1.0), ValueError, "cell"),
    (
        "average_precision",
        "nan",
        lambda: average_precision([0.5, NAN], [True, False], 2),
        ValueError,
        "scores",
    ),
    (
        "average_precision",
        "shape",
        lambda: average_precision([0.5, 0.4], [True], 2),
        ValueError,
        "scores",
    ),
    (
        "average_precision",
        "range",
        lambda: average_precision([0.5], [True], -1),
        ValueError,
        "n_gt",
    ),
    (
        "center_distance_map",
        "range",
        lambda: center_distance_map([[]], [(BOXES, [0])], thresholds=(0.0,)),
        ValueError,
        "thresholds",
    ),
    (
        "center_distance_map",
        "shape",
        lambda: center_distance_map([[], []], [(BOXES, [0])]),
        ValueError,
        "detections",
    ),
    (
        "detection_loss",
        "range",
        lambda: detection_loss(_bb(), CenterHead(8), _data()[0], NAN),
        ValueError,
        "voxel_size",
    ),
    (
        "detection_loss",
        "range",
        lambda: detection_loss(_bb(), CenterHead(8), _data()[0], 0.5, aux_weight=-1),
        ValueError,
        "aux_weight",
    ),
    (
        "train_detector",
        "range",
        lambda: train_detector(_bb(), CenterHead(8), _data(), 0),
        ValueError,
        "steps",
    ),
    (
        "train_detector",
        "range",
        lambda: train_detector(_bb(), CenterHead(8), _data(), 1, lr=NAN),
        ValueError,
        "lr",
    ),
    ("evaluate_map", "empty", lambda: evaluate_map(_bb(), CenterHead(8), []), ValueError, "scenes"),
    (
        "evaluate_map",
        "nan",
        lambda: evaluate_map(_bb(), CenterHead(8), _data(), thresholds=(NAN,)),
        ValueError,
        "thresholds",
    ),
    # a head on another device than the backbone (the "meta" device stands in for a GPU)
    (
        "train_detector",
        "other",
        lambda: train_detector(_bb(), CenterHead(8).to("meta"), _data(), 1),
        ValueError,
        "head",
    ),
    (
        "evaluate_map",
        "other",
        lambda: evaluate_map(_bb(), CenterHead(8).to("meta"), _data()),
        ValueError,
        "head",
    ),
]

EXEMPT = {
    "LidarScene": "a record dataclass returned by SyntheticLidarScenes; takes no user data",
}
