"""The small velocity network (a stand-in for FLUX.1 + its ControlNet) and its flow-matching
pretraining on clean image patches.

:class:`TinyUNet` takes the state ``x``, the condition ``y`` (a second input channel whose
weights start at zero, the ControlNet convention, so a restorer initialised from the
pretrained network starts as the unconditional prior) and the times ``t`` and ``T0``.
GroupNorm throughout: BatchNorm would break the JVP consistency targets."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from iclr26 import validation as V


def _time_features(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    ang = 100.0 * t[:, None] * freqs[None]
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)


class _ResBlock(nn.Module):
    def __init__(self, ch: int, emb: int, groups: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.emb = nn.Linear(emb, ch)
        self.norm2 = nn.GroupNorm(groups, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, h, e):
        r = self.conv1(F.silu(self.norm1(h))) + self.emb(e)[:, :, None, None]
        return h + self.conv2(F.silu(self.norm2(r)))


class TinyUNet(nn.Module):
    """Two-level UNet: ``forward(x, t, y=None, T0=None) -> (n, 1, H, W)``."""

    def __init__(self, width: int = 32, emb: int = 64, groups: int = 8):
        super().__init__()
        self.width = V.check_int(width, "width", low=8)
        self.emb_dim = V.check_int(emb, "emb", low=8)
        groups = V.check_int(groups, "groups", low=1)
        if width % groups:
            raise ValueError(f"width must be divisible by groups, got {width} and {groups}")
        self.t_mlp = nn.Sequential(nn.Linear(emb, emb), nn.SiLU(), nn.Linear(emb, emb))
        self.T0_embed = nn.Linear(emb, emb)  # zero-initialised: the prior ignores T0
        self.inp = nn.Conv2d(1, width, 3, padding=1)
        self.cond = nn.Conv2d(1, width, 3, padding=1)  # the condition branch, zero-initialised
        self.down1 = _ResBlock(width, emb, groups)
        self.pool = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.mid = _ResBlock(2 * width, emb, groups)
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.up1 = _ResBlock(width, emb, groups)
        self.out_norm = nn.GroupNorm(groups, width)
        self.out = nn.Conv2d(width, 1, 3, padding=1)
        for layer in (self.T0_embed, self.cond):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x, t, y=None, T0=None):
        n = x.shape[0]
        t = torch.as_tensor(t, dtype=x.dtype, device=x.device)
        t = t.expand(n) if t.dim() == 0 else t
        e = self.t_mlp(_time_features(t, self.emb_dim))
        if T0 is not None:
            T0 = torch.as_tensor(T0, dtype=x.dtype, device=x.device)
            T0 = T0.expand(n) if T0.dim() == 0 else T0
            e = e + self.T0_embed(_time_features(T0, self.emb_dim))
        h = self.inp(x)
        if y is not None:
            h = h + self.cond(y)
        h1 = self.down1(h, e)
        h2 = self.mid(self.pool(F.silu(h1)), e)
        h = self.up1(self.up(h2) + h1, e)
        return self.out(F.silu(self.out_norm(h)))


def as_batch(images, name: str, size: int | None = None, low=0.0, high=1.0) -> torch.Tensor:
    """``(n, H, W)`` or ``(n, 1, H, W)`` images with values in ``[low, high]`` as a float32
    ``(n, 1, H, W)`` tensor; square, side ``size`` when given, side divisible by 4."""
    arr = V.check_array(images, name, ndim=(3, 4), dtype=np.float32, low=low, high=high)
    if arr.ndim == 4:
        if arr.shape[1] != 1:
            raise ValueError(f"{name} must have one channel, got shape {arr.shape}")
        arr = arr[:, 0]
    if arr.shape[1] != arr.shape[2] or arr.shape[1] % 4:
        raise ValueError(f"{name} must be square with a side divisible by 4, got {arr.shape[1:]}")
    if size is not None and arr.shape[1] != size:
        raise ValueError(f"{name} must be {size}x{size} images, got {arr.shape[1]}x{arr.shape[2]}")
    return torch.from_numpy(np.ascontiguousarray(arr))[:, None]


def to_signed(x: torch.Tensor) -> torch.Tensor:
    """[0, 1] images to the model's [-1, 1] range (as the paper scales its images)."""
    return 2 * x - 1


def to_unit(x: torch.Tensor) -> torch.Tensor:
    return (x + 1) / 2


def train_velocity_model(
    clean,
    steps: int = 400,
    lr: float = 2e-3,
    batch_size: int = 64,
    width: int = 32,
    seed: int = 0,
    device: str = "cpu",
) -> TinyUNet:
    """Rectified-flow pretraining (the "foundation" prior): ``min ||v(z_t, t) - (eps - x0)||^2``
    on clean ``[0, 1]`` patches, unconditional, on ``device``. Returns the network in eval mode."""
    x = to_signed(as_batch(clean, "clean"))
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True, high=1.0)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
    torch.manual_seed(seed)
    net = TinyUNet(width=width).to(device)
    x = x.to(device)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=g)
        x0 = x[idx.to(device)]
        eps = torch.randn(x0.shape, generator=g).to(device)
        t = torch.rand(batch_size, generator=g).to(device)
        z = (1 - t[:, None, None, None]) * x0 + t[:, None, None, None] * eps
        loss = (net(z, t) - (eps - x0)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()
