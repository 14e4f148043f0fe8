"""A brute-force reference renderer: every Gaussian at every pixel, composited front to back
one Gaussian at a time. It shares no code with the tiled renderer except the input checks and
the colour evaluation, and it is O(N H W); it exists for tests and for the benchmark ratio."""

from __future__ import annotations

import torch

from iclr26 import validation as V

from .camera import Camera
from .rasterize import (
    ALPHA_MAX,
    ALPHA_MIN,
    TRANSMITTANCE_MIN,
    RenderOutput,
    gaussian_colors,
    validate_scene,
)


def _rotation(quats: torch.Tensor) -> torch.Tensor:
    # R = (w^2 - |v|^2) I + 2 v v^T + 2 w [v]_x  (for a unit quaternion w + v)
    q = quats / quats.norm(dim=-1, keepdim=True)
    w, v = q[:, 0], q[:, 1:]
    eye = torch.eye(3, dtype=q.dtype, device=q.device)
    zero = torch.zeros_like(w)
    cross = torch.stack(
        [zero, -v[:, 2], v[:, 1], v[:, 2], zero, -v[:, 0], -v[:, 1], v[:, 0], zero], -1
    ).reshape(-1, 3, 3)
    return (
        (w * w - (v * v).sum(-1))[:, None, None] * eye
        + 2 * v[:, :, None] * v[:, None, :]
        + 2 * w[:, None, None] * cross
    )


def render_reference(
    means: torch.Tensor,
    scales: torch.Tensor,
    quats: torch.Tensor,
    opacities: torch.Tensor,
    camera: Camera,
    *,
    colors: torch.Tensor | None = None,
    sh: torch.Tensor | None = None,
    sh_degree: int | None = None,
    background=None,
    sigma_cutoff: float = 3.0,
) -> RenderOutput:
    """The same image model as :func:`render`, evaluated by brute force (same arguments)."""
    degree, channels, bg = validate_scene(
        means, scales, quats, opacities, colors, sh, sh_degree, background, camera
    )
    sigma_cutoff = V.check_scalar(sigma_cutoff, "sigma_cutoff", low=0, low_open=True)
    h, w = camera.height, camera.width
    dtype, device = means.dtype, means.device
    rot_w, t_w = camera.rotation.to(means), camera.translation.to(means)
    feats = gaussian_colors(means, colors, sh, degree, camera)
    image = torch.zeros(h * w, channels, dtype=dtype, device=device)
    depth_img = torch.zeros(h * w, dtype=dtype, device=device)
    trans = torch.ones(h * w, dtype=dtype, device=device)
    done = torch.zeros(h * w, dtype=torch.bool, device=device)
    vv, uu = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    px = uu.reshape(-1).to(dtype) + 0.5
    py = vv.reshape(-1).to(dtype) + 0.5
    cam_pts = means @ rot_w.T + t_w
    order = torch.argsort(cam_pts[:, 2].detach(), stable=True)
    for i in order.tolist():
        x, y, z = cam_pts[i]
        if not (camera.near < float(z.detach()) < camera.far):
            continue
        s = _rotation(quats[i : i + 1])[0] @ torch.diag(scales[i])
        cov_cam = rot_w @ (s @ s.T) @ rot_w.T
        lx = (camera.width - camera.cx) / camera.fx + 0.15 * camera.width / camera.fx
        lxn = camera.cx / camera.fx + 0.15 * camera.width / camera.fx
        ly = (camera.height - camera.cy) / camera.fy + 0.15 * camera.height / camera.fy
        lyn = camera.cy / camera.fy + 0.15 * camera.height / camera.fy
        xc = z * torch.clamp(x / z, -lxn, lx)
        yc = z * torch.clamp(y / z, -lyn, ly)
        jac = torch.stack(
            [
                torch.stack([camera.fx / z, torch.zeros_like(z), -camera.fx * xc / z**2]),
                torch.stack([torch.zeros_like(z), camera.fy / z, -camera.fy * yc / z**2]),
            ]
        )
        cov2 = jac @ cov_cam @ jac.T + 0.3 * torch.eye(2, dtype=dtype, device=device)
        inv = torch.linalg.inv(cov2)
        dx = px - (camera.fx * x / z + camera.cx)
        dy = py - (camera.fy * y / z + camera.cy)
        maha = inv[0, 0] * dx * dx + (inv[0, 1] + inv[1, 0]) * dx * dy + inv[1, 1] * dy * dy
        alpha = torch.clamp(opacities[i] * torch.exp(-0.5 * maha), max=ALPHA_MAX)
        use = (maha <= sigma_cutoff**2) & (alpha >= ALPHA_MIN) & ~done
        alpha = torch.where(use, alpha, torch.zeros_like(alpha))
        new_trans = trans * (1 - alpha)
        stop = use & (new_trans.detach() < TRANSMITTANCE_MIN)
        alpha = torch.where(stop, torch.zeros_like(alpha), alpha)
        done = done | stop
        weight = alpha * trans
        image = image + weight[:, None] * feats[i]
        depth_img = depth_img + weight * z
        trans = trans * (1 - alpha)
    image = image + trans[:, None] * bg
    return RenderOutput(
        image=image.reshape(h, w, channels),
        alpha=(1 - trans).reshape(h, w),
        depth=depth_img.reshape(h, w),
    )
