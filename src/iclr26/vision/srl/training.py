"""Training a :class:`~iclr26.vision.srl.SlotVideoModel` with a SlotContrast or SRL objective.

The backbone is frozen, so its features are computed once (:meth:`SlotVideoModel.extract`)
and training samples clips of precomputed features. The optimizer follows the official
recipe: Adam, a linear warm-up, exponential decay to half the learning rate at the last step,
gradient-norm clipping (0.05).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.vision.srl.losses import SlotContrastLoss
from iclr26.vision.srl.model import SlotVideoModel

__all__ = ["lr_factor", "train_slot_model"]


def lr_factor(step: int, total_steps: int, warmup: float = 0.1, decay_rate: float = 0.5) -> float:
    """The learning-rate factor at ``step``: linear warm-up over ``warmup`` * total_steps,
    then ``decay_rate`` ** (progress after the warm-up)."""
    total_steps = V.check_int(total_steps, "total_steps", low=1)
    step = V.check_int(step, "step", low=0)
    warmup = V.check_probability(warmup, "warmup")
    decay_rate = V.check_scalar(decay_rate, "decay_rate", low=0.0, low_open=True, high=1.0)
    n_warm = int(round(warmup * total_steps))
    if step < n_warm:
        return (step + 1) / n_warm
    return float(decay_rate ** ((step - n_warm) / max(total_steps - n_warm, 1)))


def train_slot_model(
    model: SlotVideoModel,
    feats: torch.Tensor,
    criterion: SlotContrastLoss,
    steps: int,
    batch_size: int = 16,
    lr: float = 4e-4,
    warmup: float = 0.1,
    clip: float | None = 0.05,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable[[int, float], None] | None = None,
) -> dict[str, list[float]]:
    """Train ``model`` in place on precomputed backbone features ``feats`` (n, T, N, D) with
    ``criterion`` (a :class:`SlotContrastLoss` or :class:`SRLLoss`) for ``steps`` steps of
    ``batch_size`` clips; returns the history (``total`` and every active part per step, NaN
    where a part was off). ``progress(step, loss)`` is called every 10 steps."""
    if not isinstance(model, SlotVideoModel):
        raise TypeError(f"model must be a SlotVideoModel, got {type(model).__name__}")
    if not isinstance(criterion, SlotContrastLoss):
        raise TypeError(f"criterion must be a SlotContrastLoss, got {type(criterion).__name__}")
    V.check_tensor(feats, "feats", ndim=4, floating=True)
    steps = V.check_int(steps, "steps", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    warmup = V.check_probability(warmup, "warmup")
    if clip is not None:
        clip = V.check_scalar(clip, "clip", low=0.0, low_open=True)
    if feats.shape[2:] != (model.n_patches, model.feat_dim):
        raise ValueError(
            f"feats must be (n, T, {model.n_patches}, {model.feat_dim}), got {tuple(feats.shape)}"
        )
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, steps, warmup))
    rng = np.random.default_rng(seed)
    names = ("rec", "sc", "dec", "enc", "reg")
    history: dict[str, list[float]] = {"total": [], **{k: [] for k in names}}
    for step in range(steps):
        idx = torch.from_numpy(rng.integers(0, len(feats), batch_size))
        out = model.forward_features(feats[idx].to(device))
        loss, parts = criterion(out, step=step, total_steps=steps)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        sched.step()
        value = float(loss.detach())
        if not np.isfinite(value):
            raise FloatingPointError(f"the training loss became {value} at step {step}")
        history["total"].append(value)
        for k in names:
            history[k].append(parts.get(k, float("nan")))
        if progress is not None and step % 10 == 0:
            progress(step, value)
    model.eval()
    return history
