"""3WM: unified 3D scene understanding through physical world modeling (ICLR 2026).

A local patch quantizer, a pointer-content serialisation of RGB, flow and camera nodes, and a
random-access transformer trained on random traversals of that graph; novel view synthesis,
object manipulation, depth and their composition are prompts (inference pathways) of one model.
"""

from iclr26.three_d.world_model_3wm.baselines import (
    DepthUNet,
    abs_rel,
    constant_median_depth,
    delta1,
    forward_warp,
    psnr,
    ssim,
)
from iclr26.three_d.world_model_3wm.geometry import (
    axis_angle_to_matrix,
    camera_flow,
    composed_flow,
    matrix_to_axis_angle,
    object_flow,
    pixel_grid,
    triangulate_depth,
    unproject,
)
from iclr26.three_d.world_model_3wm.model import TEMPLATES, WorldModel3WM
from iclr26.three_d.world_model_3wm.quantizer import LocalPatchQuantizer, patchify, unpatchify
from iclr26.three_d.world_model_3wm.scenes import (
    KINDS,
    TEXTURES,
    ToyScenes,
    ray_cast,
    stereo_motorcycle_pairs,
    texture_bank,
)
from iclr26.three_d.world_model_3wm.serializer import NODES, PointerContentSerializer
from iclr26.three_d.world_model_3wm.transformer import RandomAccessTransformer, rope

__all__ = [
    "KINDS",
    "NODES",
    "TEMPLATES",
    "TEXTURES",
    "DepthUNet",
    "LocalPatchQuantizer",
    "PointerContentSerializer",
    "RandomAccessTransformer",
    "ToyScenes",
    "WorldModel3WM",
    "abs_rel",
    "axis_angle_to_matrix",
    "camera_flow",
    "composed_flow",
    "constant_median_depth",
    "delta1",
    "forward_warp",
    "matrix_to_axis_angle",
    "object_flow",
    "patchify",
    "pixel_grid",
    "psnr",
    "ray_cast",
    "rope",
    "ssim",
    "stereo_motorcycle_pairs",
    "texture_bank",
    "triangulate_depth",
    "unpatchify",
    "unproject",
]
