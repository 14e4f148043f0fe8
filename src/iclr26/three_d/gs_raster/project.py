"""Projection of 3-D Gaussians to screen-space 2-D Gaussians (3DGS, Kerbl et al. 2023,
Eqs. 5-6; EWA splatting, Zwicker et al. 2001).

The world covariance is ``Sigma = R S S^T R^T`` (R from a unit quaternion, S = diag(scales)).
In camera space it is ``W Sigma W^T``; the local affine approximation of the perspective map has
Jacobian ``J = [[fx/z, 0, -fx x/z^2], [0, fy/z, -fy y/z^2]]`` and the screen covariance is
``J W Sigma W^T J^T + 0.3 I`` (the 0.3 px^2 low-pass dilation). As in the official code, the
``x/z`` and ``y/z`` entering J are clamped to 1.3x the half field of view, so Gaussians far
outside the image do not produce huge footprints."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .camera import Camera

LOW_PASS = 0.3


def quat_to_rotmat(quats: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (N, 3, 3) from quaternions (N, 4) in (w, x, y, z) order; the
    quaternions are normalised first."""
    q = quats / quats.norm(dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        [
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ],
        dim=-1,
    ).reshape(-1, 3, 3)


def covariance_3d(scales: torch.Tensor, quats: torch.Tensor) -> torch.Tensor:
    """World-space covariances (N, 3, 3) ``R S S^T R^T``."""
    m = quat_to_rotmat(quats) * scales[:, None, :]
    return m @ m.transpose(1, 2)


@dataclass
class Projected:
    """Per-Gaussian screen-space quantities; entries of culled Gaussians are placeholders."""

    means2d: torch.Tensor  # (N, 2) pixel coordinates
    conics: torch.Tensor  # (N, 3) inverse 2-D covariance (a, b, c): [[a, b], [b, c]]
    depths: torch.Tensor  # (N,) camera-space z
    radii: torch.Tensor  # (N,) integer pixel radius of the 3-sigma bound; 0 when culled
    cov2d: torch.Tensor  # (N, 2, 2)


def project(
    means: torch.Tensor,
    scales: torch.Tensor,
    quats: torch.Tensor,
    camera: Camera,
    sigma_cutoff: float = 3.0,
) -> Projected:
    """Project Gaussians through ``camera``; Gaussians outside ``[near, far]`` in depth or whose
    3-sigma box misses the image get radius 0."""
    rot, trans = camera.rotation.to(means), camera.translation.to(means)
    p_cam = means @ rot.T + trans
    z = p_cam[:, 2]
    in_depth = (z > camera.near) & (z < camera.far)
    # keep gradients finite for culled Gaussians (their values are never used)
    z_safe = torch.where(in_depth, z, torch.ones_like(z))
    x, y = p_cam[:, 0], p_cam[:, 1]
    tan_x, tan_y = 0.5 * camera.width / camera.fx, 0.5 * camera.height / camera.fy
    lim_x_pos = (camera.width - camera.cx) / camera.fx + 0.3 * tan_x
    lim_x_neg = camera.cx / camera.fx + 0.3 * tan_x
    lim_y_pos = (camera.height - camera.cy) / camera.fy + 0.3 * tan_y
    lim_y_neg = camera.cy / camera.fy + 0.3 * tan_y
    tx = z_safe * torch.clamp(x / z_safe, -lim_x_neg, lim_x_pos)
    ty = z_safe * torch.clamp(y / z_safe, -lim_y_neg, lim_y_pos)
    zeros = torch.zeros_like(z_safe)
    jac = torch.stack(
        [
            camera.fx / z_safe,
            zeros,
            -camera.fx * tx / z_safe**2,
            zeros,
            camera.fy / z_safe,
            -camera.fy * ty / z_safe**2,
        ],
        dim=-1,
    ).reshape(-1, 2, 3)
    cov_cam = rot @ covariance_3d(scales, quats) @ rot.T
    cov2d = jac @ cov_cam @ jac.transpose(1, 2)
    cov2d = cov2d + LOW_PASS * torch.eye(2, dtype=means.dtype, device=means.device)
    a, b, c = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 1]
    det = a * c - b * b
    conics = torch.stack([c / det, -b / det, a / det], dim=-1)
    means2d = torch.stack(
        [camera.fx * x / z_safe + camera.cx, camera.fy * y / z_safe + camera.cy], dim=-1
    )
    with torch.no_grad():
        mid = 0.5 * (a + c)
        lam_max = mid + torch.sqrt(torch.clamp(mid * mid - det, min=0.1))
        radii = torch.ceil(sigma_cutoff * torch.sqrt(lam_max))
        mx, my = means2d[:, 0], means2d[:, 1]
        on_image = (
            (mx + radii > 0)
            & (mx - radii < camera.width)
            & (my + radii > 0)
            & (my - radii < camera.height)
        )
        keep = in_depth & on_image & torch.isfinite(radii)
        radii = torch.where(keep, radii, torch.zeros_like(radii)).to(torch.int64)
    return Projected(means2d, conics, z, radii, cov2d)
