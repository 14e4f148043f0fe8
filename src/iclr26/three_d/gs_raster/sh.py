"""Real spherical harmonics up to degree 3, evaluated as in 3D Gaussian Splatting: the colour
of a Gaussian seen along unit direction d is ``max(0, sum_lm k_lm Y_lm(d) + 0.5)``."""

from __future__ import annotations

import torch

SH_C0 = 0.28209479177387814
SH_C1 = 0.4886025119029199
SH_C2 = (
    1.0925484305920792,
    -1.0925484305920792,
    0.31539156525252005,
    -1.0925484305920792,
    0.5462742152960396,
)
SH_C3 = (
    -0.5900435899266435,
    2.890611442640554,
    -0.4570457994644658,
    0.3731763325901154,
    -0.4570457994644658,
    1.445305721320277,
    -0.5900435899266435,
)


def sh_basis(degree: int, dirs: torch.Tensor) -> torch.Tensor:
    """The ``(degree + 1)^2`` real SH basis values at unit directions ``dirs`` (..., 3)."""
    x, y, z = dirs[..., 0], dirs[..., 1], dirs[..., 2]
    out = [torch.full_like(x, SH_C0)]
    if degree >= 1:
        out += [-SH_C1 * y, SH_C1 * z, -SH_C1 * x]
    if degree >= 2:
        xx, yy, zz, xy, yz, xz = x * x, y * y, z * z, x * y, y * z, x * z
        out += [
            SH_C2[0] * xy,
            SH_C2[1] * yz,
            SH_C2[2] * (2 * zz - xx - yy),
            SH_C2[3] * xz,
            SH_C2[4] * (xx - yy),
        ]
    if degree >= 3:
        out += [
            SH_C3[0] * y * (3 * xx - yy),
            SH_C3[1] * xy * z,
            SH_C3[2] * y * (4 * zz - xx - yy),
            SH_C3[3] * z * (2 * zz - 3 * xx - 3 * yy),
            SH_C3[4] * x * (4 * zz - xx - yy),
            SH_C3[5] * z * (xx - yy),
            SH_C3[6] * x * (xx - 3 * yy),
        ]
    return torch.stack(out, dim=-1)


def sh_to_color(sh: torch.Tensor, dirs: torch.Tensor, degree: int) -> torch.Tensor:
    """Colours (N, C) from SH coefficients ``sh`` (N, K, C) using the first
    ``(degree + 1)^2`` coefficients, seen along ``dirs`` (N, 3) (normalised here)."""
    k = (degree + 1) ** 2
    unit = dirs / dirs.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    basis = sh_basis(degree, unit)  # (N, k)
    return (torch.einsum("nk,nkc->nc", basis, sh[:, :k]) + 0.5).clamp_min(0.0)


def rgb_to_sh0(rgb: torch.Tensor) -> torch.Tensor:
    """The degree-0 coefficient that renders as ``rgb`` from every direction."""
    return (rgb - 0.5) / SH_C0
