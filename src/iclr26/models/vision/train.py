"""Training loops of the shared tiny backbones: supervised classification and SimCLR.

Both use AdamW (weight decay 0.05 on matrices), a cosine schedule with 5 % linear warmup,
gradient clipping at 1.0 and light augmentations from :mod:`iclr26.vision.augment`, on a
fixed in-memory pool of images. Every random choice comes from one seeded generator, and
torch runs with a fixed number of threads, so a recipe trains to the same weights each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


@contextmanager
def torch_threads(n: int | None):
    """Run a block with ``n`` torch intra-op threads (``None``: leave as is), then restore."""
    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.2) -> torch.Tensor:
    """SimCLR's NT-Xent loss over the 2B views: each view's positive is its partner, the
    other 2B - 2 views are negatives; inputs are L2-normalised here; mean over the 2B views."""
    z = F.normalize(torch.cat([z1, z2], 0), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, target)


def cosine_schedule(optimizer: torch.optim.Optimizer, steps: int, warmup_frac: float = 0.05):
    warm = max(1, int(round(warmup_frac * steps)))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1.0 + math.cos(math.pi * min((step - warm) / max(1, steps - warm), 1.0)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def adamw(params, lr: float, weight_decay: float = 0.05) -> torch.optim.AdamW:
    params = [p for p in params if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay}]
    plain = [p for p in params if p.dim() < 2]
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    return torch.optim.AdamW(groups, lr=lr)


def _light_augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    from iclr26.vision import augment as A

    x = A.random_resized_crop(x, scale=(0.6, 1.0), generator=generator)
    return A.random_hflip(x, generator=generator)


def train_supervised(
    model: nn.Module,
    images: np.ndarray,
    labels: np.ndarray,
    steps: int,
    batch: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    progress: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Cross-entropy training of ``model`` (which must output logits) on an image pool;
    returns the loss per step."""
    images = V.check_array(images, "images", ndim=4, dtype=np.float32, low=0.0, high=1.0)
    labels = V.check_array(labels, "labels", ndim=1, n_rows=len(images)).astype(np.int64)
    steps, batch = V.check_int(steps, "steps", low=1), V.check_int(batch, "batch", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    pool_x, pool_y = torch.from_numpy(images), torch.from_numpy(labels)
    gen = torch.Generator().manual_seed(int(seed))
    opt = adamw(model.parameters(), lr)
    sched = cosine_schedule(opt, steps)
    model.train()
    losses = []
    for step in range(steps):
        idx = torch.randint(0, len(pool_x), (batch,), generator=gen)
        x = _light_augment(pool_x[idx], gen)
        loss = F.cross_entropy(model(x), pool_y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step, losses[-1])
    model.eval()
    return losses


def projection_head(dim: int, hidden: int = 256, out: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out))


def train_simclr(
    model: nn.Module,
    images: np.ndarray,
    steps: int,
    batch: int = 64,
    lr: float = 1e-3,
    temperature: float = 0.2,
    seed: int = 0,
    progress: Callable[[int, float], None] | None = None,
) -> list[float]:
    """SimCLR on an image pool: two :func:`~iclr26.vision.augment.simclr_augment` views per
    image, a 2-layer projection head (discarded afterwards) and :func:`nt_xent`. ``model(x)``
    must return a (B, D) feature and expose ``embed_dim``. Returns the loss per step."""
    from iclr26.vision import augment as A

    images = V.check_array(images, "images", ndim=4, dtype=np.float32, low=0.0, high=1.0)
    steps, batch = V.check_int(steps, "steps", low=1), V.check_int(batch, "batch", low=2)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    pool = torch.from_numpy(images)
    gen = torch.Generator().manual_seed(int(seed))
    head = projection_head(model.embed_dim)
    opt = adamw(list(model.parameters()) + list(head.parameters()), lr)
    sched = cosine_schedule(opt, steps)
    model.train()
    losses = []
    for step in range(steps):
        x = pool[torch.randint(0, len(pool), (batch,), generator=gen)]
        views = torch.cat([A.simclr_augment(x, generator=gen), A.simclr_augment(x, generator=gen)])
        z = head(model(views))
        loss = nt_xent(z[:batch], z[batch:], temperature)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step, losses[-1])
    model.eval()
    return losses
