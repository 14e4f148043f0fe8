"""Bad-input cases for the 3WM room (read by tests/framework/test_bad_input.py)."""

import functools

import torch

from iclr26.three_d.world_model_3wm import (
    DepthUNet,
    LocalPatchQuantizer,
    PointerContentSerializer,
    RandomAccessTransformer,
    ToyScenes,
    WorldModel3WM,
    abs_rel,
    axis_angle_to_matrix,
    camera_flow,
    composed_flow,
    constant_median_depth,
    delta1,
    forward_warp,
    matrix_to_axis_angle,
    object_flow,
    patchify,
    pixel_grid,
    psnr,
    ray_cast,
    rope,
    ssim,
    stereo_motorcycle_pairs,
    texture_bank,
    triangulate_depth,
    unpatchify,
    unproject,
)

NAN, INF = float("nan"), float("inf")
K = torch.tensor([[8.0, 0, 4], [0, 8.0, 4], [0, 0, 1]])
EYE = torch.eye(3)
T = torch.tensor([0.2, 0.0, 0.0])
DEPTH = torch.full((1, 8, 8), 3.0)
DEPTH_NAN = DEPTH.clone()
DEPTH_NAN[0, 1, 1] = NAN
MASK = torch.zeros(1, 8, 8, dtype=torch.bool)
MASK[0, 2:4, 2:4] = True
RGB = torch.rand(1, 3, 8, 8)
RGB_NAN = RGB.clone()
RGB_NAN[0, 0, 0, 0] = NAN
FLOW = torch.zeros(1, 2, 8, 8)
FLOW_INF = FLOW.clone()
FLOW_INF[0, 0, 3, 3] = INF


@functools.cache
def _wm():
    return WorldModel3WM(8, 4, d=16, layers=1, heads=2)


@functools.cache
def _q():
    return LocalPatchQuantizer("rgb", patch=4, codebook=8, hidden=4)


@functools.cache
def _ser():
    return PointerContentSerializer(4, 8, 8, 8)


def _scene(**over):
    s = dict(
        ground=torch.ones(1),
        wall=torch.full((1,), 5.0),
        ground_tex=torch.zeros(1, dtype=torch.long),
        wall_tex=torch.zeros(1, dtype=torch.long),
        center=torch.zeros(1, 1, 3),
        half=torch.ones(1, 1, 3),
        yaw=torch.zeros(1, 1),
        kind=torch.zeros(1, 1, dtype=torch.long),
        active=torch.zeros(1, 1, dtype=torch.bool),
        tex=torch.zeros(1, 1, dtype=torch.long),
        tex_off=torch.zeros(1, 1, 2),
    )
    s.update(over)
    return s


RAYS = torch.tensor([[[0.0, 0.0, 1.0]]])


class _Data:
    rgb0 = torch.rand(2, 3, 8, 8)
    R = torch.eye(3).expand(2, 3, 3)
    t = torch.zeros(2, 3)
    depth0 = torch.full((2, 8, 8), -1.0)


CASES = [
    # ---- data
    ("ToyScenes", "range", lambda: ToyScenes(16, 0), ValueError, "n"),
    ("ToyScenes", "range", lambda: ToyScenes(3, 4), ValueError, "size"),
    ("ToyScenes", "range", lambda: ToyScenes(8, 4, max_translation=NAN), ValueError, "max_tr"),
    ("ToyScenes", "other", lambda: ToyScenes(8, 4, kinds=("walk",)), ValueError, "kinds"),
    ("ToyScenes", "empty", lambda: ToyScenes(8, 4, kinds=()), ValueError, "kinds"),
    ("ToyScenes", "range", lambda: ToyScenes(8, 4, n_objects=(0, 2)), ValueError, "n_objects"),
    ("ToyScenes", "type", lambda: ToyScenes(8.5, 4), TypeError, "size"),
    ("stereo_motorcycle_pairs", "range", lambda: stereo_motorcycle_pairs(0), ValueError, "n"),
    (
        "stereo_motorcycle_pairs",
        "range",
        lambda: stereo_motorcycle_pairs(2, size=64, scale=64),
        ValueError,
        "size",
    ),
    ("texture_bank", "range", lambda: texture_bank(2), ValueError, "res"),
    (
        "ray_cast",
        "nan",
        lambda: ray_cast(_scene(), torch.zeros(1, 3), RAYS * NAN, texture_bank(4)),
        ValueError,
        "dirs",
    ),
    (
        "ray_cast",
        "shape",
        lambda: ray_cast(_scene(), torch.zeros(2, 3), RAYS, texture_bank(4)),
        ValueError,
        "origins",
    ),
    (
        "ray_cast",
        "other",
        lambda: ray_cast({"ground": 1}, torch.zeros(1, 3), RAYS, texture_bank(4)),
        ValueError,
        "scene",
    ),
    (
        "ray_cast",
        "range",
        lambda: ray_cast(
            _scene(half=torch.zeros(1, 1, 3)), torch.zeros(1, 3), RAYS, texture_bank(4)
        ),
        ValueError,
        "half",
    ),
    # ---- geometry
    ("pixel_grid", "range", lambda: pixel_grid(0, 4), ValueError, "height"),
    (
        "axis_angle_to_matrix",
        "shape",
        lambda: axis_angle_to_matrix(torch.zeros(2)),
        ValueError,
        "axis_angle",
    ),
    (
        "axis_angle_to_matrix",
        "nan",
        lambda: axis_angle_to_matrix(torch.tensor([NAN, 0, 0])),
        ValueError,
        "axis_angle",
    ),
    (
        "matrix_to_axis_angle",
        "shape",
        lambda: matrix_to_axis_angle(torch.zeros(2, 3)),
        ValueError,
        "rotation",
    ),
    (
        "matrix_to_axis_angle",
        "inf",
        lambda: matrix_to_axis_angle(torch.eye(3) * INF),
        ValueError,
        "rotation",
    ),
    ("unproject", "nan", lambda: unproject(DEPTH_NAN, K), ValueError, "depth"),
    ("unproject", "range", lambda: unproject(-DEPTH, K), ValueError, "depth"),
    ("unproject", "shape", lambda: unproject(DEPTH, torch.eye(2)), ValueError, "K"),
    ("camera_flow", "nan", lambda: camera_flow(DEPTH_NAN, K, EYE, T), ValueError, "depth"),
    (
        "camera_flow",
        "shape",
        lambda: camera_flow(DEPTH, K, EYE, torch.zeros(2)),
        ValueError,
        "translation",
    ),
    ("camera_flow", "range", lambda: camera_flow(DEPTH, -K, EYE, T), ValueError, "K"),
    (
        "object_flow",
        "shape",
        lambda: object_flow(DEPTH, K, MASK[:, :4], EYE, T),
        ValueError,
        "mask",
    ),
    (
        "object_flow",
        "nan",
        lambda: object_flow(DEPTH, K, MASK, EYE * NAN, T),
        ValueError,
        "rotation",
    ),
    (
        "composed_flow",
        "inf",
        lambda: composed_flow(DEPTH, K, EYE, T * INF, MASK, EYE, T),
        ValueError,
        "translation",
    ),
    (
        "composed_flow",
        "range",
        lambda: composed_flow(DEPTH, K, EYE, T, MASK.float() * 3, EYE, T),
        ValueError,
        "mask",
    ),
    (
        "triangulate_depth",
        "shape",
        lambda: triangulate_depth(torch.zeros(1, 3, 8, 8), K, EYE, T),
        ValueError,
        "flow",
    ),
    (
        "triangulate_depth",
        "inf",
        lambda: triangulate_depth(FLOW_INF, K, EYE, T),
        ValueError,
        "flow",
    ),
    # ---- quantizer
    ("LocalPatchQuantizer", "range", lambda: LocalPatchQuantizer(kind="depth"), ValueError, "kind"),
    (
        "LocalPatchQuantizer",
        "range",
        lambda: LocalPatchQuantizer(codebook=1),
        ValueError,
        "codebook",
    ),
    ("LocalPatchQuantizer", "range", lambda: LocalPatchQuantizer(decay=1.0), ValueError, "decay"),
    ("LocalPatchQuantizer", "range", lambda: LocalPatchQuantizer(beta=NAN), ValueError, "beta"),
    ("LocalPatchQuantizer", "nan", lambda: _q().encode(RGB_NAN), ValueError, "x"),
    ("LocalPatchQuantizer", "shape", lambda: _q().encode(torch.rand(1, 3, 6, 8)), ValueError, "x"),
    ("LocalPatchQuantizer", "shape", lambda: _q().encode(torch.rand(1, 2, 8, 8)), ValueError, "x"),
    (
        "LocalPatchQuantizer",
        "range",
        lambda: _q().decode(torch.full((1, 2, 2), 99)),
        ValueError,
        "codes",
    ),
    ("LocalPatchQuantizer", "dtype", lambda: _q().decode(torch.zeros(1, 2, 2)), TypeError, "codes"),
    ("LocalPatchQuantizer", "range", lambda: _q().fit(RGB, steps=-1), ValueError, "steps"),
    ("patchify", "shape", lambda: patchify(torch.rand(1, 3, 6, 8), 4), ValueError, "x"),
    ("patchify", "range", lambda: patchify(RGB, 0), ValueError, "patch"),
    (
        "unpatchify",
        "shape",
        lambda: unpatchify(torch.rand(1, 4, 3, 4, 4), 12, 8),
        ValueError,
        "height",
    ),
    ("unpatchify", "shape", lambda: unpatchify(torch.rand(4, 3, 4, 4), 8, 8), ValueError, "x"),
    # ---- serializer
    (
        "PointerContentSerializer",
        "range",
        lambda: PointerContentSerializer(0),
        ValueError,
        "n_patches",
    ),
    (
        "PointerContentSerializer",
        "range",
        lambda: PointerContentSerializer(4, max_translation=0.0),
        ValueError,
        "max_translation",
    ),
    (
        "PointerContentSerializer",
        "range",
        lambda: _ser().node_tokens("RGB0", torch.full((1, 4), 8)),
        ValueError,
        "codes",
    ),
    (
        "PointerContentSerializer",
        "shape",
        lambda: _ser().node_tokens("RGB0", torch.zeros(1, 3, dtype=torch.long)),
        ValueError,
        "codes",
    ),
    (
        "PointerContentSerializer",
        "other",
        lambda: _ser().node_tokens("DEPTH", torch.zeros(1, 4, dtype=torch.long)),
        ValueError,
        "node",
    ),
    (
        "PointerContentSerializer",
        "range",
        lambda: _ser().node_tokens(
            "RGB0", torch.zeros(1, 4, dtype=torch.long), torch.tensor([[0, 1, 2, 4]])
        ),
        ValueError,
        "order",
    ),
    (
        "PointerContentSerializer",
        "shape",
        lambda: _ser().decode(torch.zeros(1, 4, dtype=torch.long)),
        ValueError,
        "tokens",
    ),
    (
        "PointerContentSerializer",
        "nan",
        lambda: _ser().pose_to_bins(EYE[None], torch.tensor([[NAN, 0, 0]])),
        ValueError,
        "t",
    ),
    # ---- transformer
    (
        "RandomAccessTransformer",
        "range",
        lambda: RandomAccessTransformer(10, d=6, heads=4),
        ValueError,
        "d",
    ),
    (
        "RandomAccessTransformer",
        "range",
        lambda: RandomAccessTransformer(1),
        ValueError,
        "vocab_size",
    ),
    (
        "RandomAccessTransformer",
        "range",
        lambda: RandomAccessTransformer(10, d=8, layers=1, heads=2)(torch.tensor([[1, 10]])),
        ValueError,
        "tokens",
    ),
    (
        "RandomAccessTransformer",
        "dtype",
        lambda: RandomAccessTransformer(10, d=8, layers=1, heads=2)(torch.zeros(1, 3)),
        TypeError,
        "tokens",
    ),
    (
        "RandomAccessTransformer",
        "other",
        lambda: RandomAccessTransformer(10, d=8, layers=1, heads=2).loss(
            torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.bool)
        ),
        ValueError,
        "target_mask",
    ),
    ("rope", "shape", lambda: rope(torch.rand(2, 3, 4)), ValueError, "x"),
    ("rope", "shape", lambda: rope(torch.rand(1, 1, 2, 3)), ValueError, "x"),
    ("rope", "nan", lambda: rope(torch.full((1, 1, 2, 4), NAN)), ValueError, "x"),
    # ---- the world model
    (
        "WorldModel3WM",
        "range",
        lambda: WorldModel3WM(image_size=10, patch=4),
        ValueError,
        "image_size",
    ),
    (
        "WorldModel3WM",
        "other",
        lambda: WorldModel3WM(8, 4, templates=("segment",)),
        ValueError,
        "templates",
    ),
    (
        "WorldModel3WM",
        "range",
        lambda: WorldModel3WM(8, 4, d=16, layers=1, heads=2, template_weights={"nvs": NAN}),
        ValueError,
        "template_weights",
    ),
    ("WorldModel3WM", "nan", lambda: _wm().nvs(RGB_NAN, FLOW), ValueError, "rgb0"),
    ("WorldModel3WM", "inf", lambda: _wm().nvs(RGB, FLOW_INF), ValueError, "flow"),
    (
        "WorldModel3WM",
        "shape",
        lambda: _wm().nvs(torch.rand(1, 3, 16, 16), FLOW),
        ValueError,
        "rgb0",
    ),
    ("WorldModel3WM", "range", lambda: _wm().nvs(RGB * 2 + 0.5, FLOW), ValueError, "rgb0"),
    ("WorldModel3WM", "other", lambda: _wm().nvs(RGB, cam=(EYE, T), K=K), ValueError, "depth"),
    (
        "WorldModel3WM",
        "nan",
        lambda: _wm().nvs(RGB, depth=DEPTH_NAN, cam=(EYE, T), K=K),
        ValueError,
        "depth",
    ),
    ("WorldModel3WM", "type", lambda: _wm().nvs(RGB, depth=DEPTH, cam=EYE, K=K), TypeError, "cam"),
    (
        "WorldModel3WM",
        "range",
        lambda: _wm().nvs(RGB, depth=DEPTH, cam=(2 * EYE, T), K=K),
        ValueError,
        "cam",
    ),
    ("WorldModel3WM", "range", lambda: _wm().depth(RGB, (EYE, 0 * T), K), ValueError, "cam"),
    (
        "WorldModel3WM",
        "other",
        lambda: _wm().manipulate(RGB, None, EYE, T, DEPTH, K=K),
        ValueError,
        "mask",
    ),
    (
        "WorldModel3WM",
        "shape",
        lambda: _wm().manipulate(RGB, MASK[:, :4], EYE, T, DEPTH, K=K),
        ValueError,
        "mask",
    ),
    (
        "WorldModel3WM",
        "range",
        lambda: _wm().compose(RGB, (EYE, T), K, MASK, EYE, T, -DEPTH),
        ValueError,
        "depth",
    ),
    ("WorldModel3WM", "type", lambda: _wm().fit(object(), 1), TypeError, "data"),
    ("WorldModel3WM", "range", lambda: _wm().fit(ToyScenes(8, 4), -1), ValueError, "steps"),
    (
        "WorldModel3WM",
        "other",
        lambda: _wm().fit(ToyScenes(8, 4, kinds=("object",)), 1, quantizer_steps=0),
        ValueError,
        "data",
    ),
    (
        "WorldModel3WM",
        "other",
        lambda: WorldModel3WM.from_pretrained("no-such-file.pt"),
        FileNotFoundError,
        "path",
    ),
    # ---- baselines and metrics
    ("forward_warp", "nan", lambda: forward_warp(RGB_NAN, FLOW), ValueError, "rgb0"),
    ("forward_warp", "shape", lambda: forward_warp(RGB, FLOW[:, :, :4]), ValueError, "flow"),
    ("forward_warp", "inf", lambda: forward_warp(RGB, FLOW_INF), ValueError, "flow"),
    ("forward_warp", "shape", lambda: forward_warp(RGB, FLOW, DEPTH[:, :4]), ValueError, "zbuffer"),
    ("DepthUNet", "range", lambda: DepthUNet(width=0), ValueError, "width"),
    (
        "DepthUNet",
        "nan",
        lambda: DepthUNet(width=2)(RGB_NAN, EYE[None], T[None]),
        ValueError,
        "rgb0",
    ),
    (
        "DepthUNet",
        "shape",
        lambda: DepthUNet(width=2)(torch.rand(1, 3, 7, 8), EYE[None], T[None]),
        ValueError,
        "rgb0",
    ),
    ("DepthUNet", "range", lambda: DepthUNet(width=2).fit(_Data, 1), ValueError, "depth0"),
    (
        "constant_median_depth",
        "nan",
        lambda: constant_median_depth(DEPTH_NAN, (2, 2)),
        ValueError,
        "train_depth",
    ),
    (
        "constant_median_depth",
        "shape",
        lambda: constant_median_depth(DEPTH, (0, 2)),
        ValueError,
        "shape",
    ),
    ("psnr", "shape", lambda: psnr(RGB, RGB[..., :4]), ValueError, "pred"),
    ("psnr", "nan", lambda: psnr(RGB_NAN, RGB), ValueError, "pred"),
    ("psnr", "shape", lambda: psnr(RGB, RGB, MASK[:, :4]), ValueError, "mask"),
    (
        "ssim",
        "shape",
        lambda: ssim(torch.rand(1, 3, 4, 4), torch.rand(1, 3, 4, 4)),
        ValueError,
        "pred",
    ),
    ("ssim", "nan", lambda: ssim(RGB, RGB_NAN), ValueError, "target"),
    ("abs_rel", "range", lambda: abs_rel(DEPTH, -DEPTH), ValueError, "gt"),
    ("abs_rel", "nan", lambda: abs_rel(DEPTH_NAN, DEPTH), ValueError, "pred"),
    ("delta1", "shape", lambda: delta1(DEPTH, DEPTH[:, :4]), ValueError, "pred"),
    ("delta1", "inf", lambda: delta1(DEPTH * INF, DEPTH), ValueError, "pred"),
]

EXEMPT: dict[str, str] = {}
