"""The specialist and classical baselines of the claim checks, and the metrics.

* S1 :func:`forward_warp`: splat every frame-0 pixel to ``round(u + flow)`` with a z-buffer,
  then fill holes with the nearest splatted pixel (no learning);
* S2-NVS: :class:`~.model.WorldModel3WM` trained on the NVS template only (see ``claims``);
* S2-depth :class:`DepthUNet`: a small conv UNet regressing log-depth from RGB0 and the camera
  pose (broadcast as 6 constant channels), trained with an L1 loss;
* S3 :func:`constant_median_depth`: the training median everywhere.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.world_model_3wm.geometry import matrix_to_axis_angle

__all__ = [
    "DepthUNet",
    "abs_rel",
    "constant_median_depth",
    "delta1",
    "forward_warp",
    "psnr",
    "ssim",
]


def _images(x: torch.Tensor, name: str, channels: int | None = None) -> torch.Tensor:
    x = V.check_tensor(x, name, ndim=(3, 4), floating=True)
    x = x[None] if x.dim() == 3 else x
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channels, got shape {tuple(x.shape)}")
    return x


def forward_warp(
    rgb0: torch.Tensor, flow: torch.Tensor, zbuffer: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Classical NVS (baseline S1): z-buffered nearest-pixel splatting of ``rgb0`` (B, 3, H, W)
    along ``flow`` (B, 2, H, W), nearer ``zbuffer`` depth (B, H, W) winning a target pixel
    (without one, the last splat wins); holes take the colour of the nearest splatted pixel.
    Returns the image and the mask of splatted (non-hole) pixels."""
    from scipy.ndimage import distance_transform_edt

    rgb0 = _images(rgb0, "rgb0", 3)
    flow = _images(flow, "flow", 2)
    b, _, h, w = rgb0.shape
    if tuple(flow.shape) != (b, 2, h, w):
        raise ValueError(f"flow must have shape {(b, 2, h, w)}, got {tuple(flow.shape)}")
    if zbuffer is None:
        zbuffer = torch.zeros(b, h, w)
    zbuffer = V.check_tensor(zbuffer, "zbuffer", shape=(b, h, w), floating=True)
    jj, ii = torch.meshgrid(torch.arange(w), torch.arange(h), indexing="xy")
    tx = torch.round(jj[None] + flow[:, 0]).long()
    ty = torch.round(ii[None] + flow[:, 1]).long()
    inside = (tx >= 0) & (tx < w) & (ty >= 0) & (ty < h)
    tid = (ty * w + tx).clamp(0, h * w - 1) + torch.arange(b)[:, None, None] * h * w
    z = torch.where(inside, zbuffer.float(), torch.full_like(zbuffer.float(), float("inf")))
    zmin = torch.full((b * h * w,), float("inf")).scatter_reduce(
        0, tid.flatten(), z.flatten(), reduce="amin"
    )
    win = inside.flatten() & (z.flatten() <= zmin[tid.flatten()])
    out = torch.zeros(b * h * w, 3)
    src = rgb0.permute(0, 2, 3, 1).reshape(-1, 3)
    out[tid.flatten()[win]] = src[win]
    valid = torch.zeros(b * h * w, dtype=torch.bool)
    valid[tid.flatten()[win]] = True
    out = out.reshape(b, h, w, 3)
    valid = valid.reshape(b, h, w)
    for k in range(b):
        if not valid[k].any():
            out[k] = rgb0[k].permute(1, 2, 0)
            continue
        _, (ni, nj) = distance_transform_edt(~valid[k].numpy(), return_indices=True)
        out[k] = out[k][torch.as_tensor(ni), torch.as_tensor(nj)]
    return out.permute(0, 3, 1, 2).contiguous(), valid


def _pose_channels(R, t, max_translation, max_rotation) -> torch.Tensor:
    w = matrix_to_axis_angle(R)
    return torch.cat([t / max_translation, w / max_rotation], 1)


class DepthUNet(nn.Module):
    """Specialist depth regressor (S2-depth): RGB0 (3 channels) plus the relative camera pose
    (6 constant channels, scaled by the pose ranges) -> depth, a two-level UNet of ``width``
    channels predicting log-depth."""

    def __init__(self, width: int = 32, max_translation: float = 0.3, max_rotation: float = 0.05):
        super().__init__()
        c = V.check_int(width, "width", low=1)
        self.max_translation = V.check_scalar(
            max_translation, "max_translation", low=0.0, low_open=True
        )
        self.max_rotation = V.check_scalar(max_rotation, "max_rotation", low=0.0, low_open=True)

        def conv(i, o):
            return nn.Sequential(
                nn.Conv2d(i, o, 3, padding=1), nn.GELU(), nn.Conv2d(o, o, 3, padding=1), nn.GELU()
            )

        self.enc1 = conv(9, c)
        self.enc2 = conv(c, 2 * c)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec = conv(2 * c, c)
        self.out = nn.Conv2d(c, 1, 1)
        self.register_buffer("log_shift", torch.tensor(1.0))
        self.history: list[float] = []

    def forward(self, rgb0: torch.Tensor, R: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Depth ``(B, H, W)`` (H and W even)."""
        rgb0 = V.check_tensor(rgb0, "rgb0", ndim=4, floating=True, low=0.0, high=1.0)
        b, c, h, w = rgb0.shape
        if c != 3 or h % 2 or w % 2:
            raise ValueError(f"rgb0 must be (B, 3, H, W) with even H, W, got {tuple(rgb0.shape)}")
        R = V.check_tensor(R, "R", shape=(b, 3, 3), floating=True)
        t = V.check_tensor(t, "t", shape=(b, 3), floating=True)
        pose = _pose_channels(R, t, self.max_translation, self.max_rotation)
        x = torch.cat([rgb0 * 2 - 1, pose[:, :, None, None].expand(b, 6, h, w)], 1)
        e1 = self.enc1(x)
        e2 = self.enc2(F.avg_pool2d(e1, 2))
        y = self.dec(torch.cat([self.up(e2), e1], 1))
        return torch.exp(self.out(y)[:, 0] + self.log_shift)

    def fit(
        self, data, steps: int = 300, *, batch: int = 32, lr: float = 2e-3, seed: int = 0
    ) -> DepthUNet:
        """Train on ``data`` (``rgb0``, ``R``, ``t``, ``depth0`` tensors); returns self."""
        V.check_module_attrs(data, "data", ("rgb0", "R", "t", "depth0"))
        steps = V.check_int(steps, "steps", low=0)
        batch = V.check_int(batch, "batch", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        depth = V.check_tensor(data.depth0, "data.depth0", ndim=3, floating=True)
        if (depth <= 0).any():
            raise ValueError("data.depth0 must be > 0")
        self.log_shift.fill_(float(torch.log(depth).mean()))
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        self.history = []
        n = depth.shape[0]
        for _ in range(steps):
            idx = torch.randint(0, n, (min(batch, n),), generator=gen)
            pred = self(data.rgb0[idx], data.R[idx], data.t[idx])
            loss = (torch.log(pred) - torch.log(depth[idx])).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.history.append(float(loss.detach()))
        return self.eval()


def constant_median_depth(train_depth: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Baseline S3: the median training depth, broadcast to ``shape``."""
    d = V.check_tensor(train_depth, "train_depth", floating=True, low=0.0)
    if len(shape) == 0 or any(int(s) < 1 for s in shape):
        raise ValueError(f"shape must be a non-empty shape of positive sizes, got {shape!r}")
    return torch.full(tuple(int(s) for s in shape), float(d.median()))


def psnr(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """Mean per-image PSNR (dB, peak 1) over the pixels in ``mask`` (B, H, W) if given;
    images whose mask is empty are left out (NaN if all are)."""
    pred = _images(pred, "pred")
    target = _images(target, "target")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target shapes differ: {pred.shape} vs {target.shape}")
    err = ((pred - target) ** 2).mean(1)
    if mask is None:
        mask = torch.ones_like(err, dtype=torch.bool)
    mask = V.check_tensor(mask, "mask", shape=tuple(err.shape)).bool()
    count = mask.flatten(1).sum(1)
    keep = count > 0
    if not keep.any():
        return float("nan")
    mse = (err * mask).flatten(1).sum(1)[keep] / count[keep]
    return float((-10 * torch.log10(mse.clamp(min=1e-10))).mean())


def ssim(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Mean SSIM (scikit-image, 7x7 window, data range 1) over a batch of RGB images."""
    from skimage.metrics import structural_similarity

    pred = _images(pred, "pred", 3)
    target = _images(target, "target", 3)
    if pred.shape != target.shape:
        raise ValueError(f"pred and target shapes differ: {pred.shape} vs {target.shape}")
    if min(pred.shape[-2:]) < 7:
        raise ValueError("pred must be at least 7 x 7 pixels for SSIM")
    vals = [
        structural_similarity(p.numpy(), g.numpy(), channel_axis=0, data_range=1.0)
        for p, g in zip(pred.double(), target.double())
    ]
    return float(np.mean(vals))


def _depths(pred, gt):
    pred = V.check_tensor(pred, "pred", floating=True, low=0.0)
    gt = V.check_tensor(gt, "gt", floating=True, low=0.0)
    if pred.shape != gt.shape:
        raise ValueError(f"pred and gt shapes differ: {tuple(pred.shape)} vs {tuple(gt.shape)}")
    if (gt <= 0).any() or (pred <= 0).any():
        raise ValueError("pred and gt depths must be > 0")
    return pred, gt


def abs_rel(pred: torch.Tensor, gt: torch.Tensor) -> float:
    """Mean absolute relative depth error ``|pred - gt| / gt``."""
    pred, gt = _depths(pred, gt)
    return float(((pred - gt).abs() / gt).mean())


def delta1(pred: torch.Tensor, gt: torch.Tensor) -> float:
    """Fraction of pixels with ``max(pred/gt, gt/pred) < 1.25``."""
    pred, gt = _depths(pred, gt)
    return float((torch.maximum(pred / gt, gt / pred) < 1.25).float().mean())
