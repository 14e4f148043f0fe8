"""Optional CUDA backend: the same call delegated to ``gsplat.rasterization`` (gsplat >= 1.0).

Used by ``backend="auto"`` only when ``gsplat`` imports and the tensors are on CUDA; never
silently otherwise. gsplat evaluates Gaussians on every pixel of the tiles they touch (no
3-sigma ellipse cut), so its images differ slightly from the PyTorch backend at footprint edges."""

from __future__ import annotations

import importlib.util

import torch

from .rasterize import RenderOutput


def available() -> bool:
    """Whether ``gsplat`` can be imported here."""
    return importlib.util.find_spec("gsplat") is not None


def usable(means: torch.Tensor) -> bool:
    return means.is_cuda and available()


def render_gsplat(
    means,
    scales,
    quats,
    opacities,
    camera,
    *,
    colors,
    sh,
    sh_degree,
    background,
    return_visibility,
) -> RenderOutput:
    if not available():
        raise ImportError("backend='gsplat' needs the gsplat package, which is not installed")
    if not means.is_cuda:
        raise ValueError("backend='gsplat' needs CUDA tensors; use backend='torch' on the CPU")
    from gsplat import rasterization

    cam = camera.to(dtype=means.dtype, device=means.device)
    feats = colors if colors is not None else sh
    renders, alphas, meta = rasterization(
        means,
        quats / quats.norm(dim=-1, keepdim=True),
        scales,
        opacities,
        feats,
        cam.viewmat()[None],
        cam.intrinsics()[None],
        camera.width,
        camera.height,
        near_plane=camera.near,
        far_plane=camera.far,
        sh_degree=None if colors is not None else sh_degree,
        backgrounds=None,
        render_mode="RGB+D",
        packed=False,
    )
    channels = feats.shape[-1]
    image = renders[0, ..., :channels]
    depth = renders[0, ..., channels]
    alpha = alphas[0, ..., 0]
    image = image + (1 - alpha)[..., None] * background
    radii = meta.get("radii")
    if radii is not None:
        radii = radii[0]
        if radii.dim() == 2:  # newer gsplat: per-axis radii
            radii = radii.max(dim=-1).values
    return RenderOutput(
        image=image,
        alpha=alpha,
        depth=depth,
        means2d=meta.get("means2d"),
        radii=radii,
        visibility=None,
        stats={"gaussians": int(means.shape[0])},
    )
