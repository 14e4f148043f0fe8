"""A differentiable 3D Gaussian-splatting rasterizer in PyTorch (shared by the splatting
rooms): EWA projection of 3-D covariances, tile-culled depth-sorted alpha compositing,
spherical-harmonics colour; a brute-force reference; scene and camera generators; a benchmark;
``gsplat`` as an optional CUDA backend behind the same call."""

from .benchmark import benchmark
from .camera import Camera, orbit_cameras
from .losses import gaussian_window, l1_dssim_loss, ssim, ssim_map
from .project import covariance_3d, project, quat_to_rotmat
from .rasterize import RenderOutput, render
from .reference import render_reference
from .scenes import GaussianScene, random_scene, texture, textured_plane
from .sh import rgb_to_sh0, sh_basis, sh_to_color

__all__ = [
    "Camera",
    "GaussianScene",
    "RenderOutput",
    "benchmark",
    "covariance_3d",
    "gaussian_window",
    "l1_dssim_loss",
    "orbit_cameras",
    "project",
    "quat_to_rotmat",
    "random_scene",
    "render",
    "render_reference",
    "rgb_to_sh0",
    "sh_basis",
    "sh_to_color",
    "ssim",
    "ssim_map",
    "texture",
    "textured_plane",
]
