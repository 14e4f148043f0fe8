"""Tile-based, depth-sorted alpha compositing of projected Gaussians (3DGS, Eq. 3).

Each pixel's colour is ``C = sum_i c_i a_i T_i + T_final * background`` with
``T_i = prod_{j<i} (1 - a_j)`` over the Gaussians sorted front to back, and
``a_i = min(0.99, o_i exp(-d^T Sigma'^-1 d / 2))``. As in the official rasterizer, a Gaussian is
skipped at a pixel where ``a_i < 1/255``, and a pixel stops once its transmittance would drop
below 1e-4. The image is split into tiles (16x16 by default); each Gaussian is listed for the
tiles its 3-sigma box touches, and each tile evaluates only its own Gaussians, densely and in
batches of tiles, so autograd gives the gradients. A Gaussian contributes only where its
Mahalanobis distance is at most ``sigma_cutoff`` (3), which makes the image independent of the
tile size (see the README's Deviations)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from iclr26 import validation as V

from .camera import Camera
from .project import Projected, project
from .sh import sh_to_color

ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.99
TRANSMITTANCE_MIN = 1e-4
BACKENDS = ("auto", "torch", "gsplat")


@dataclass
class RenderOutput:
    """What :func:`render` returns. ``image`` (H, W, C); ``alpha`` (H, W) = 1 - final
    transmittance; ``depth`` (H, W) = the alpha-weighted sum of camera depths ``sum_i w_i z_i``
    (divide by ``alpha`` for the expected depth); ``means2d`` (N, 2) screen positions (call
    ``retain_grad()`` before ``backward`` for 3DGS densification); ``radii`` (N,) 0 for culled
    Gaussians; ``visibility`` (N,) the number of pixels each Gaussian contributed to (when
    asked for); ``stats`` load-free counts of the work done."""

    image: torch.Tensor
    alpha: torch.Tensor
    depth: torch.Tensor
    means2d: torch.Tensor | None = None
    radii: torch.Tensor | None = None
    visibility: torch.Tensor | None = None
    stats: dict[str, int] = field(default_factory=dict)


def validate_scene(means, scales, quats, opacities, colors, sh, sh_degree, background, camera):
    """Shared validation of :func:`render` and :func:`render_reference`; returns
    ``(per-Gaussian colour source, sh_degree or None, background tensor)``."""
    if not isinstance(camera, Camera):
        raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
    V.check_tensor(means, "means", ndim=2, shape=(None, 3), floating=True, nonempty=False)
    n = means.shape[0]
    V.check_tensor(scales, "scales", shape=(n, 3), floating=True, nonempty=False)
    if scales.numel() and bool((scales <= 0).any()):
        raise ValueError("scales must be > 0 (pass exp(log_scales)); got a non-positive scale")
    V.check_tensor(quats, "quats", shape=(n, 4), floating=True, nonempty=False)
    if quats.numel() and bool((quats.detach().norm(dim=-1) < 1e-12).any()):
        raise ValueError("quats contains a zero quaternion (it has no rotation)")
    V.check_tensor(
        opacities, "opacities", shape=(n,), floating=True, nonempty=False, low=0.0, high=1.0
    )
    if (colors is None) == (sh is None):
        raise ValueError("colors and sh: pass exactly one of them")
    if colors is not None:
        V.check_tensor(colors, "colors", ndim=2, shape=(n, None), floating=True, nonempty=False)
        channels = colors.shape[1]
        degree = None
    else:
        V.check_tensor(sh, "sh", ndim=3, shape=(n, None, None), floating=True, nonempty=False)
        k = sh.shape[1]
        max_degree = math.isqrt(k) - 1
        if k not in (1, 4, 9, 16):
            raise ValueError(f"sh must have 1, 4, 9 or 16 coefficients per channel, got {k}")
        degree = (
            max_degree
            if sh_degree is None
            else V.check_int(sh_degree, "sh_degree", low=0, high=max_degree)
        )
        channels = sh.shape[2]
    if channels < 1:
        raise ValueError("colors/sh must have at least one channel")
    if background is None:
        bg = torch.zeros(channels, dtype=means.dtype, device=means.device)
    else:
        bg = torch.as_tensor(background, dtype=means.dtype, device=means.device)
        if bg.dim() == 0:
            bg = bg.expand(channels)
        V.check_tensor(bg, "background", shape=(channels,), floating=True)
    return degree, channels, bg


def gaussian_colors(means, colors, sh, degree, camera) -> torch.Tensor:
    if colors is not None:
        return colors
    return sh_to_color(sh, means - camera.center.to(means), degree)


def _tile_lists(proj: Projected, camera: Camera, tile_size: int):
    """(gaussian id, tile id) pairs sorted by tile then depth, with per-tile counts."""
    n = proj.depths.shape[0]
    tiles_x = -(-camera.width // tile_size)
    tiles_y = -(-camera.height // tile_size)
    visible = torch.nonzero(proj.radii > 0).squeeze(1)
    order = visible[torch.argsort(proj.depths.detach()[visible], stable=True)]
    with torch.no_grad():
        m = proj.means2d.detach()[order]
        r = proj.radii[order].to(m.dtype)
        x0 = torch.clamp(torch.floor((m[:, 0] - r) / tile_size), 0, tiles_x - 1).long()
        x1 = torch.clamp(torch.floor((m[:, 0] + r) / tile_size), 0, tiles_x - 1).long()
        y0 = torch.clamp(torch.floor((m[:, 1] - r) / tile_size), 0, tiles_y - 1).long()
        y1 = torch.clamp(torch.floor((m[:, 1] + r) / tile_size), 0, tiles_y - 1).long()
        nx, ny = x1 - x0 + 1, y1 - y0 + 1
        per = nx * ny
        gid = torch.repeat_interleave(order, per)
        first = torch.cumsum(per, 0) - per
        local = torch.arange(int(per.sum()), device=m.device) - torch.repeat_interleave(first, per)
        nx_rep = torch.repeat_interleave(nx, per)
        tx = torch.repeat_interleave(x0, per) + local % nx_rep
        ty = torch.repeat_interleave(y0, per) + local // nx_rep
        tile = ty * tiles_x + tx
        tile_sorted, perm = torch.sort(tile, stable=True)  # stable: depth order kept per tile
        gid = gid[perm]
        counts = torch.bincount(tile_sorted, minlength=tiles_x * tiles_y)
    return gid, tile_sorted, counts, tiles_x, tiles_y, n


def render(
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
    tile_size: int = 16,
    sigma_cutoff: float = 3.0,
    return_visibility: bool = False,
    backend: str = "auto",
    max_batch_elements: int = 1 << 22,
) -> RenderOutput:
    """Render N Gaussians (``means`` (N, 3), ``scales`` (N, 3) > 0, ``quats`` (N, 4) in
    (w, x, y, z) order, normalised here, ``opacities`` (N,) in [0, 1]) through ``camera``.

    Colour: either ``colors`` (N, C) used as they are, or ``sh`` (N, K, C) spherical-harmonics
    coefficients, K in {1, 4, 9, 16} (degrees 0-3), evaluated at the viewing direction up to
    ``sh_degree`` (default: all). ``background`` (C,) or a number fills the transmittance left.
    ``backend="auto"`` uses ``gsplat`` only when it imports and the tensors are on CUDA;
    ``"torch"`` always uses this CPU/GPU PyTorch rasterizer; ``"gsplat"`` requires gsplat.
    Differentiable in every tensor argument."""
    degree, channels, bg = validate_scene(
        means, scales, quats, opacities, colors, sh, sh_degree, background, camera
    )
    tile_size = V.check_int(tile_size, "tile_size", low=1, high=256)
    sigma_cutoff = V.check_scalar(sigma_cutoff, "sigma_cutoff", low=0, low_open=True)
    return_visibility = V.check_bool(return_visibility, "return_visibility")
    backend = V.check_choice(backend, "backend", BACKENDS)
    max_batch_elements = V.check_int(max_batch_elements, "max_batch_elements", low=1)
    from . import gsplat_backend

    if backend == "gsplat" or (backend == "auto" and gsplat_backend.usable(means)):
        return gsplat_backend.render_gsplat(
            means,
            scales,
            quats,
            opacities,
            camera,
            colors=colors,
            sh=sh,
            sh_degree=degree,
            background=bg,
            return_visibility=return_visibility,
        )
    return _render_torch(
        means,
        scales,
        quats,
        opacities,
        camera,
        colors,
        sh,
        degree,
        channels,
        bg,
        tile_size,
        sigma_cutoff,
        return_visibility,
        max_batch_elements,
    )


def _render_torch(
    means,
    scales,
    quats,
    opacities,
    camera,
    colors,
    sh,
    degree,
    channels,
    bg,
    tile_size,
    sigma_cutoff,
    return_visibility,
    max_batch_elements,
) -> RenderOutput:
    h, w = camera.height, camera.width
    dtype, device = means.dtype, means.device
    proj = project(means, scales, quats, camera, sigma_cutoff)
    gid, tile_of_pair, counts, tiles_x, tiles_y, n = _tile_lists(proj, camera, tile_size)
    n_tiles = tiles_x * tiles_y
    pix = tile_size * tile_size
    feats = gaussian_colors(means, colors, sh, degree, camera)

    # padded per-Gaussian tables with one inert row (opacity 0) at index n
    pad2 = torch.zeros(1, 2, dtype=dtype, device=device)
    m2d = torch.cat([proj.means2d, pad2])
    conic = torch.cat([proj.conics, torch.zeros(1, 3, dtype=dtype, device=device)])
    opac = torch.cat([opacities, torch.zeros(1, dtype=dtype, device=device)])
    feat = torch.cat([feats, torch.zeros(1, channels, dtype=dtype, device=device)])
    depth = torch.cat([proj.depths, torch.zeros(1, dtype=dtype, device=device)])

    # pixel centres of every tile (tiles on the border may reach past the image; cropped below)
    ly, lx = torch.meshgrid(
        torch.arange(tile_size, device=device),
        torch.arange(tile_size, device=device),
        indexing="ij",
    )
    local = torch.stack([lx.reshape(-1), ly.reshape(-1)], -1).to(dtype) + 0.5  # (P, 2)
    tile_ids = torch.arange(n_tiles, device=device)
    origin = torch.stack([tile_ids % tiles_x, tile_ids // tiles_x], -1).to(dtype) * tile_size

    out_img = bg.expand(n_tiles, pix, channels).clone()
    out_alpha = torch.zeros(n_tiles, pix, dtype=dtype, device=device)
    out_depth = torch.zeros(n_tiles, pix, dtype=dtype, device=device)
    vis = torch.zeros(n + 1, dtype=torch.int64, device=device) if return_visibility else None

    start = torch.cumsum(counts, 0) - counts
    busy = torch.nonzero(counts > 0).squeeze(1)
    busy = busy[torch.argsort(counts[busy])]  # similar list lengths batched together
    pieces_img, pieces_alpha, pieces_depth, pieces_ids = [], [], [], []
    i = 0
    while i < busy.numel():
        # grow the batch while the padded size fits
        j = i + 1
        k_max = int(counts[busy[i]])
        while j < busy.numel():
            k_next = int(counts[busy[j]])
            if (j + 1 - i) * k_next * pix > max_batch_elements:
                break
            k_max = k_next
            j += 1
        batch = busy[i:j]
        slot = torch.arange(k_max, device=device)
        idx = start[batch, None] + slot[None, :]
        valid = slot[None, :] < counts[batch, None]
        g = torch.where(valid, gid[idx.clamp_max(max(gid.numel() - 1, 0))], n)  # (B, K)
        pix_xy = origin[batch][:, None, :] + local[None]  # (B, P, 2)
        d = pix_xy[:, None, :, :] - m2d[g][:, :, None, :]  # (B, K, P, 2)
        cg = conic[g][:, :, None, :]
        maha = (
            cg[..., 0] * d[..., 0] ** 2
            + 2 * cg[..., 1] * d[..., 0] * d[..., 1]
            + (cg[..., 2] * d[..., 1] ** 2)
        )
        alpha = torch.clamp(opac[g][:, :, None] * torch.exp(-0.5 * maha), max=ALPHA_MAX)
        keep = (maha <= sigma_cutoff**2) & (alpha >= ALPHA_MIN)
        alpha = torch.where(keep, alpha, torch.zeros_like(alpha))
        with torch.no_grad():  # the early stop of the official rasterizer, as a prefix mask
            alive = torch.cumprod(1 - alpha, dim=1) >= TRANSMITTANCE_MIN
        alpha = torch.where(alive, alpha, torch.zeros_like(alpha))
        trans_incl = torch.cumprod(1 - alpha, dim=1)
        trans_excl = torch.cat([torch.ones_like(trans_incl[:, :1]), trans_incl[:, :-1]], 1)
        weight = alpha * trans_excl  # (B, K, P)
        t_final = trans_incl[:, -1]  # (B, P)
        pieces_img.append(torch.einsum("bkp,bkc->bpc", weight, feat[g]) + t_final[..., None] * bg)
        pieces_alpha.append(1 - t_final)
        pieces_depth.append(torch.einsum("bkp,bk->bp", weight, depth[g]))
        pieces_ids.append(batch)
        if vis is not None:
            vis.index_add_(0, g.reshape(-1), (weight > 0).sum(-1).reshape(-1).detach())
        i = j
    if pieces_ids:
        ids = torch.cat(pieces_ids)
        out_img = out_img.index_copy(0, ids, torch.cat(pieces_img))
        out_alpha = out_alpha.index_copy(0, ids, torch.cat(pieces_alpha))
        out_depth = out_depth.index_copy(0, ids, torch.cat(pieces_depth))

    def untile(t: torch.Tensor) -> torch.Tensor:
        extra = t.shape[2:]
        t = t.reshape(tiles_y, tiles_x, tile_size, tile_size, *extra)
        t = t.transpose(1, 2).reshape(tiles_y * tile_size, tiles_x * tile_size, *extra)
        return t[:h, :w]

    pairs = int(gid.numel())
    stats = {
        "gaussians": n,
        "visible": int((proj.radii > 0).sum()),
        "tile_pairs": pairs,
        "tiles_touched": int((counts > 0).sum()),
        "pixel_pairs": pairs * pix,
    }
    return RenderOutput(
        image=untile(out_img),
        alpha=untile(out_alpha),
        depth=untile(out_depth),
        means2d=proj.means2d,
        radii=proj.radii,
        visibility=None if vis is None else vis[:n],
        stats=stats,
    )
