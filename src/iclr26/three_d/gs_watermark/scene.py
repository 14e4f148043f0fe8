"""The claims' offline scene: three textured planes (scikit-image pictures) rendered from an
orbit of cameras by the shared rasterizer; anchors start from a subsample of the plane points."""

from __future__ import annotations

import torch

from iclr26 import validation as V
from iclr26.three_d.gs_raster import orbit_cameras, render, texture, textured_plane


def textured_scene(
    n_views: int = 8,
    size: int = 32,
    *,
    tex_res: int = 24,
    init_points: int | None = None,
    seed: int = 0,
):
    """(views (V, H, W, 3), cameras, initial points (P, 3)). The initial points are every
    fourth texel centre, or ``init_points`` random ones (a sparse, SfM-like start that anchor
    growing has to fill in)."""
    n_views = V.check_int(n_views, "n_views", low=2)
    init_points = V.check_int(init_points, "init_points", low=1, allow_none=True)
    size = V.check_int(size, "size", low=8)
    seed = V.check_int(seed, "seed", low=0)
    planes = [
        textured_plane(
            texture("astronaut", tex_res, seed=seed), center=(0, 0, 0), size=1.6, normal_axis=2
        ),
        textured_plane(
            texture("coffee", tex_res, seed=seed), center=(0, -0.5, 0.5), size=1.2, normal_axis=1
        ),
        textured_plane(
            texture("chelsea", tex_res, seed=seed), center=(-0.5, 0, 0.5), size=1.2, normal_axis=0
        ),
    ]
    scene = planes[0].cat(planes[1]).cat(planes[2])
    cams = orbit_cameras(
        n_views, radius=3.0, elevation_deg=35.0, width=size, height=size, start_deg=15.0 + 7 * seed
    )
    views = torch.stack(
        [
            render(**scene.as_kwargs(), camera=c, background=[0.0, 0.0, 0.0]).image.clamp(0, 1)
            for c in cams
        ]
    )
    if init_points is None:
        points = scene.means[::4].clone()
    else:
        g = torch.Generator().manual_seed(seed)
        pick = torch.randperm(len(scene), generator=g)[: min(init_points, len(scene))]
        points = scene.means[pick].clone()
    return views.detach(), cams, points
