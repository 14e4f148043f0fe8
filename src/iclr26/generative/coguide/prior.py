"""The diffusion prior over floor plans: a small UNet epsilon-model trained as a DDPM (cosine
beta schedule), with the Tweedie estimate and the deterministic DDIM step (eta = 0) that every
sampler in this room shares. ``cond="trajectory"`` trains the same UNet with the rasterised
walk as a second input channel and condition dropout, for classifier-free guidance."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V


def cosine_alpha_bar(T: int, s: float = 0.008) -> torch.Tensor:
    """Cumulative signal level alpha_bar_t for t = 1..T of the cosine schedule (Nichol and
    Dhariwal), with betas clipped at 0.999; index 0 holds alpha_bar_0 = 1."""
    T = V.check_int(T, "T", low=1)
    s = V.check_scalar(s, "s", low=0.0, low_open=True)
    steps = torch.arange(T + 1, dtype=torch.float64)
    f = torch.cos((steps / T + s) / (1 + s) * math.pi / 2) ** 2
    ab = f / f[0]
    betas = (1 - ab[1:] / ab[:-1]).clamp(max=0.999)
    return torch.cat([torch.ones(1, dtype=torch.float64), torch.cumprod(1 - betas, 0)]).float()


def _time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half
    )
    arg = t.float()[:, None] * freqs[None]
    return torch.cat([arg.sin(), arg.cos()], dim=1)


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, tdim: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.norm1 = nn.GroupNorm(min(8, cout), cout)
        self.norm2 = nn.GroupNorm(min(8, cout), cout)
        self.temb = nn.Linear(tdim, cout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = F.silu(self.norm1(self.conv1(x)))
        h = h + self.temb(temb)[:, :, None, None]
        h = F.silu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    """A two-level UNet epsilon-model: input channels ``in_ch`` (1, or 2 with a condition),
    base width ``width``; the side must be divisible by 4."""

    def __init__(self, in_ch: int = 1, width: int = 32):
        super().__init__()
        self.in_ch = V.check_int(in_ch, "in_ch", low=1)
        width = V.check_int(width, "width", low=4)
        tdim = 4 * width
        self.tdim = width
        self.tmlp = nn.Sequential(nn.Linear(width, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inc = nn.Conv2d(in_ch, width, 3, padding=1)
        self.d1 = _Block(width, width, tdim)
        self.d2 = _Block(width, 2 * width, tdim)
        self.mid = _Block(2 * width, 2 * width, tdim)
        self.u2 = _Block(4 * width, width, tdim)
        self.u1 = _Block(2 * width, width, tdim)
        self.out = nn.Conv2d(width, 1, 3, padding=1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        temb = self.tmlp(_time_embedding(t, self.tdim))
        h0 = self.d1(self.inc(x), temb)  # s
        h1 = self.d2(F.avg_pool2d(h0, 2), temb)  # s/2
        m = self.mid(F.avg_pool2d(h1, 2), temb)  # s/4
        u = self.u2(torch.cat([F.interpolate(m, scale_factor=2.0), h1], 1), temb)
        u = self.u1(torch.cat([F.interpolate(u, scale_factor=2.0), h0], 1), temb)
        return self.out(u)


class FloorplanPrior(nn.Module):
    """DDPM prior p(x) over +-1 floor plans (T steps, cosine schedule).

    ``cond="trajectory"`` adds the visited-cell mask as an input channel, dropped (zeroed) with
    probability ``p_uncond`` in training, so that ``eps(x, t, c)`` and ``eps(x, t, 0)`` combine
    by classifier-free guidance (with ``c = 0`` it is the unconditional prior)."""

    def __init__(
        self,
        T: int = 200,
        width: int = 32,
        cond: str | None = None,
        p_uncond: float = 0.2,
    ):
        super().__init__()
        self.T = V.check_int(T, "T", low=2)
        self.cond = V.check_choice(cond, "cond", (None, "trajectory"))
        self.p_uncond = V.check_probability(p_uncond, "p_uncond")
        self.unet = UNet(in_ch=2 if cond else 1, width=width)
        self.register_buffer("alpha_bar", cosine_alpha_bar(self.T))
        self.size: int | None = None
        self.forward_passes = 0  # epsilon-model evaluations (per batch), for cost reports

    def forward(self, x: torch.Tensor, t: torch.Tensor, c: torch.Tensor | None = None):
        """eps_theta(x_t, t[, c]) for a batch x (n, 1, s, s) and integer times t (n,)."""
        self.forward_passes += 1
        if self.cond:
            c = torch.zeros_like(x) if c is None else c
            x = torch.cat([x, c], 1)
        return self.unet(x, t)

    def tweedie(self, x_t: torch.Tensor, t: int, eps: torch.Tensor) -> torch.Tensor:
        """x0_hat = (x_t - sqrt(1 - ab_t) eps) / sqrt(ab_t)."""
        ab = self.alpha_bar[t]
        return (x_t - (1 - ab).sqrt() * eps) / ab.sqrt()

    def ddim_step(self, x0: torch.Tensor, eps: torch.Tensor, t_prev: int) -> torch.Tensor:
        """Deterministic DDIM (eta = 0): x_{t'} = sqrt(ab_t') x0 + sqrt(1 - ab_t') eps, with x0
        clipped to the data range [-1, 1]."""
        ab = self.alpha_bar[t_prev]
        return ab.sqrt() * x0.clamp(-1, 1) + (1 - ab).sqrt() * eps

    def timesteps(self, steps: int) -> list[int]:
        """The DDIM times T..1 (evenly spaced, ``steps`` of them), then 0."""
        steps = V.check_int(steps, "steps", low=1, high=self.T)
        ts = np.linspace(self.T, 1, steps).round().astype(int).tolist()
        return ts + [0]

    def fit(
        self,
        X,
        Y_masks=None,
        steps: int = 1500,
        batch_size: int = 64,
        lr: float = 2e-3,
        seed: int = 0,
        flips: bool = True,
        device: str | torch.device | None = None,
    ) -> FloorplanPrior:
        """Train the epsilon-model on plans ``X`` (n, s, s) in {-1, +1} (and, with
        ``cond="trajectory"``, their visit masks ``Y_masks`` (n, s, s)). ``flips`` augments
        with the eight square symmetries (a plan stays a plan). ``device`` moves the model there
        first (random draws stay on the CPU generator, so results do not depend on it)."""
        X = V.check_array(X, "X", ndim=3, dtype=np.float32, low=-1.0, high=1.0)
        if X.shape[1] != X.shape[2] or X.shape[1] % 4:
            raise ValueError(f"X must hold square plans with side divisible by 4, got {X.shape}")
        steps = V.check_int(steps, "steps", low=1)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        V.check_bool(flips, "flips")
        seed = V.check_int(seed, "seed", low=0)
        if self.cond:
            if Y_masks is None:
                raise ValueError("Y_masks is required when cond='trajectory'")
            Y_masks = V.check_array(
                Y_masks, "Y_masks", shape=X.shape, dtype=np.float32, low=0.0, high=1.0
            )
        self.size = X.shape[1]
        if device is not None:
            self.to(device)
        dev = self.alpha_bar.device
        g = torch.Generator().manual_seed(seed)
        data = torch.from_numpy(X)[:, None]
        cond = torch.from_numpy(Y_masks)[:, None] if self.cond else None
        opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
        self.train()
        for _ in range(steps):
            idx = torch.randint(len(data), (batch_size,), generator=g)
            x0 = data[idx]
            c = cond[idx] if self.cond else None
            if flips:
                k = int(torch.randint(4, (1,), generator=g))
                x0 = torch.rot90(x0, k, (2, 3))
                c = torch.rot90(c, k, (2, 3)) if c is not None else None
                if torch.rand(1, generator=g) < 0.5:
                    x0 = x0.flip(3)
                    c = c.flip(3) if c is not None else None
            if c is not None:
                keep = (torch.rand(batch_size, 1, 1, 1, generator=g) >= self.p_uncond).float()
                c = c * keep
            t = torch.randint(1, self.T + 1, (batch_size,), generator=g)
            noise = torch.randn(x0.shape, generator=g).to(dev)
            x0, t = x0.to(dev), t.to(dev)
            c = c.to(dev) if c is not None else None
            ab = self.alpha_bar[t][:, None, None, None]
            x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
            loss = F.mse_loss(self(x_t, t, c), noise)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        self.eval()
        self.forward_passes = 0
        return self
