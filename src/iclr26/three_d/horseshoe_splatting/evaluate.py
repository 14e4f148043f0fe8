"""Synthetic scene with known structured sparsity (flat and needle splats over a textured
ground quad), sparse training views on an arc, test views on the full circle; uncertainty
metrics: AUSE on absolute error (normalised by the random-ranking area), Spearman rho and the
official code's kernel-density NLL of the M predictive renders."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import spearmanr

from iclr26 import validation as V
from iclr26.three_d.gs_raster import orbit_cameras, random_scene, render, texture, textured_plane


def make_scene_data(
    n_gt: int = 60,
    *,
    size: int = 32,
    n_train: int = 6,
    n_test: int = 8,
    arc_deg: float = 150.0,
    noise: float = 0.02,
    texels: int = 8,
    seed: int = 0,
) -> dict:
    """Ground truth (``n_gt`` random splats, half flat or needle with thin axes 0.02x the
    others, plus a ``texels``^2 grass-textured ground quad), noisy training images from
    ``n_train`` views on an ``arc_deg`` arc, clean test images on the full circle, and an
    over-complete SfM-like init (GT means + N(0, 0.05^2) and n_gt/2 random points)."""
    n_gt = V.check_int(n_gt, "n_gt", low=2)
    size = V.check_int(size, "size", low=8, high=256)
    n_train = V.check_int(n_train, "n_train", low=1)
    n_test = V.check_int(n_test, "n_test", low=1)
    arc_deg = V.check_scalar(arc_deg, "arc_deg", low=0, low_open=True, high=360.0)
    noise = V.check_scalar(noise, "noise", low=0)
    texels = V.check_int(texels, "texels", low=2, high=64)
    seed = V.check_int(seed, "seed", low=0)
    rng = np.random.default_rng(seed)
    blobs = random_scene(
        n_gt, seed=seed, extent=0.6, scale_range=(0.05, 0.15), opacity_range=(0.6, 0.9)
    )
    thin = torch.zeros(n_gt, 3, dtype=torch.bool)
    for i in range(n_gt // 2):
        axes = rng.choice(3, size=int(rng.integers(1, 3)), replace=False)
        thin[i, axes] = True
    blobs.scales = torch.where(thin, blobs.scales.max(1, keepdim=True).values * 0.02, blobs.scales)
    ground = textured_plane(texture("grass", texels, seed=seed), center=(0.0, 0.0, -0.8), size=2.4)
    scene = blobs.cat(ground)
    thin_all = torch.cat([thin, torch.zeros(len(ground), 3, dtype=torch.bool)])
    thin_all[n_gt:, 2] = True  # the ground's normal axis is thin too
    kw = dict(radius=3.2, elevation_deg=25.0, width=size, height=size)
    train_cams = orbit_cameras(n_train, arc_deg=arc_deg, **kw)
    test_cams = orbit_cameras(n_test, start_deg=11.0, **kw)
    bg = torch.ones(3)

    def shot(cam):
        return render(
            **scene.as_kwargs(), camera=cam, background=bg, backend="torch"
        ).image.detach()

    # separate streams: the init and the test views do not depend on how many training views
    init_gen = torch.Generator().manual_seed(seed)
    noise_gen = torch.Generator().manual_seed(seed + 1)
    init = torch.cat(
        [
            scene.means + 0.05 * torch.randn(scene.means.shape, generator=init_gen),
            torch.as_tensor(rng.uniform(-0.8, 0.8, (n_gt // 2, 3)), dtype=torch.float32),
        ]
    )
    train = torch.stack([shot(c) for c in train_cams])
    train = (train + noise * torch.randn(train.shape, generator=noise_gen)).clamp(0.0, 1.0)
    test = torch.stack([shot(c) for c in test_cams])
    return {
        "scene": scene,
        "thin": thin_all,
        "train_cams": train_cams,
        "train_images": train,
        "test_cams": test_cams,
        "test_images": test,
        "init_means": init,
    }


def _pair(error, uncertainty):
    e = V.check_array(error, "error", ndim=(1, 2, 3), dtype=np.float64)
    u = V.check_array(uncertainty, "uncertainty", ndim=(1, 2, 3), dtype=np.float64)
    if e.shape != u.shape:
        raise ValueError(f"uncertainty must have the shape of error {e.shape}, got {u.shape}")
    if e.size < 2:
        raise ValueError("error must hold at least two pixels")
    return e.reshape(-1), u.reshape(-1)


def ause(error, uncertainty, *, steps: int = 100) -> float:
    """Area under the sparsification error (mean |error| of the pixels kept after removing the
    most uncertain fraction) minus the oracle curve, divided by the random-ranking area
    (0: oracle ranking, 1: random, >1: worse than random). One image at a time."""
    e, u = _pair(error, uncertainty)
    steps = V.check_int(steps, "steps", low=2)
    n = e.size
    fracs = np.linspace(0.0, 0.99, steps)
    keep = np.maximum(1, np.round(n * (1 - fracs)).astype(int))

    def curve(order):
        ranked = e[order]  # ascending uncertainty: keep the first `k`
        cum = np.cumsum(ranked)
        return cum[keep - 1] / keep

    by_u = curve(np.argsort(u, kind="stable"))
    oracle = curve(np.argsort(e, kind="stable"))
    rand = np.full(steps, e.mean())
    denom = np.trapezoid(rand - oracle, fracs)
    if denom <= 0:
        return 0.0
    return float(np.trapezoid(by_u - oracle, fracs) / denom)


def spearman_uncertainty(error, uncertainty) -> float:
    """Spearman rho between per-pixel uncertainty and |error| (0 when either is constant)."""
    e, u = _pair(error, uncertainty)
    if np.ptp(e) == 0 or np.ptp(u) == 0:
        return 0.0
    return float(spearmanr(u, np.abs(e)).statistic)


KDE_EPS = 1e-5


def kde_nll(renders, target) -> float:
    """Negative log-likelihood of ``target`` (H, W, C) under a per-pixel, per-channel Gaussian
    kernel density of the M renders ``renders`` (M, H, W, C), in the form of the official
    evaluation code: bandwidth ``h = std * (n / 0.8)^(1/7) + 1e-5`` with ``std`` the per-pixel
    std of the renders (unbiased; 0 when M = 1) and ``n`` the number of pixel-channel values,
    kernel ``(2 pi)^(-3/2) / h * exp(-(x_m - y)^2 / (2 h^2))`` (the code's normalising
    constant), density = mean over the renders + 1e-5, NLL = mean of -log density."""
    r = renders if torch.is_tensor(renders) else torch.as_tensor(renders)
    y = target if torch.is_tensor(target) else torch.as_tensor(target)
    V.check_tensor(r, "renders", ndim=4, floating=True)
    V.check_tensor(y, "target", ndim=3, shape=tuple(r.shape[1:]), floating=True)
    r, y = r.detach().double(), y.detach().double().to(r.device)
    std = r.std(0) if r.shape[0] > 1 else torch.zeros_like(y)
    h = std * (std.numel() / 0.8) ** (1 / 7) + KDE_EPS
    kernel = (2 * math.pi) ** -1.5 / h * torch.exp(-((r - y) ** 2) / (2 * h * h))
    return float(-torch.log(kernel.mean(0) + KDE_EPS).mean())
