"""ABSignSGD (Algorithm 1) and the baselines that share its block machinery.

ABSignSGD: at step k one block i_k is chosen by the schedule; only its parameters require a
gradient (set *before* the forward pass, so autograd stops the backward at that block and
earlier layers get no gradient); the block moves by
    x_i <- x_i - lr * wd * x_i   (optional decoupled weight decay, applied first)
    x_i <- x_i - lr * sign(g_i)  (sign(0) = 0)
and nothing else changes. No optimizer state is kept. Parameters outside the blocks
(embeddings, final norm, LM head) stay frozen, as in the paper.

Baselines: ``SignSGD`` (all parameters every step), ``BlockAdam`` (BAdam-style: cyclic blocks,
switch every K steps, fresh Adam moments for the active block at each switch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.optim.absignsgd.blocks import check_blocks, find_blocks
from iclr26.optim.absignsgd.schedules import BlockSchedule


def _check_lr(lr: float, weight_decay: float) -> None:
    V.check_scalar(lr, "lr", low=0.0, low_open=True)
    V.check_scalar(weight_decay, "weight_decay", low=0.0)


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


class _BlockOptimizer(torch.optim.Optimizer):
    """Freezes everything outside the blocks and toggles ``requires_grad`` per active block."""

    def __init__(self, model: nn.Module | None, blocks, defaults: dict):
        if model is not None and not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if blocks is None:
            if model is None:
                raise TypeError(
                    "model must be a torch.nn.Module (blocks are found in it) or pass blocks="
                )
            blocks = find_blocks(model)
        self.blocks = check_blocks(blocks)
        if model is not None:
            in_blocks = {id(p) for b in self.blocks for p in b}
            for p in model.parameters():
                if id(p) not in in_blocks:
                    p.requires_grad_(False)
                    p.grad = None
        super().__init__([p for b in self.blocks for p in b], defaults)
        self.active_block = -1

    def _activate(self, i: int) -> None:
        for j, block in enumerate(self.blocks):
            for p in block:
                p.requires_grad_(j == i)
                if j != i:
                    p.grad = None
        self.active_block = i


class ABSignSGD(_BlockOptimizer):
    """Arbitrary-order block sign descent; subclass of ``torch.optim.Optimizer``.

    Use it in a plain loop: ``loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)``.
    The learning rate is read from ``param_groups[0]["lr"]`` at every step, so
    ``torch.optim.lr_scheduler`` works. ``weight_decay`` defaults to 0.01, as in the official
    release (decoupled, applied before the sign step). ``state_dict()`` carries the schedule
    (clock, step, RNG) and the active block, so a resumed run continues bit for bit."""

    def __init__(
        self,
        model: nn.Module | None = None,
        lr: float = 1e-3,
        schedule: str | Callable = "depth_biased",
        depth_bias: float = 10.0,
        weight_decay: float = 0.01,
        blocks: Sequence[Sequence[nn.Parameter]] | None = None,
        max_staleness: int | None = None,
        seed: int = 0,
    ):
        _check_lr(lr, weight_decay)
        super().__init__(model, blocks, dict(lr=lr, weight_decay=weight_decay))
        self.schedule = BlockSchedule(len(self.blocks), schedule, depth_bias, max_staleness, seed)
        self.skipped_steps = 0  # steps whose block gradient held NaN
        self._activate(self.schedule.next())

    @property
    def visit_counts(self):
        return self.schedule.visit_counts

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[0]
        lr, wd = group["lr"], group["weight_decay"]
        block = [p for p in self.blocks[self.active_block] if p.grad is not None]
        if any(bool(torch.isnan(p.grad).any()) for p in block):
            self.skipped_steps += 1  # sign(NaN) is NaN: skip, as the release does
            block = []
        for p in block:
            if wd:
                p.mul_(1 - lr * wd)
            p.add_(torch.sign(p.grad), alpha=-lr)
        self._activate(self.schedule.next())  # before the next forward pass
        return loss

    def state_dict(self) -> dict:
        out = super().state_dict()
        out["block_schedule"] = {
            "schedule": self.schedule.state_dict(),
            "active_block": self.active_block,
        }
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("block_schedule", None)
        if extra is None:
            raise ValueError("state_dict has no 'block_schedule' entry (not saved by ABSignSGD)")
        super().load_state_dict(state_dict)
        self.schedule.load_state_dict(extra["schedule"])
        self._activate(int(extra["active_block"]))

    def state_bytes(self) -> int:
        """Bytes of optimizer state: none is kept."""
        return tensor_bytes(
            t for s in self.state.values() for t in s.values() if isinstance(t, torch.Tensor)
        )


class SignSGD(torch.optim.Optimizer):
    """Full-parameter sign descent (every parameter each step); isolates the block effect."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.0):
        _check_lr(lr, weight_decay)
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["weight_decay"]:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(torch.sign(p.grad), alpha=-group["lr"])
        return loss

    def state_bytes(self) -> int:
        return 0


class BlockAdam(_BlockOptimizer):
    """BAdam-style block Adam: cyclic blocks, switched every ``switch_every`` steps, with fresh
    Adam moments for the active block at each switch (state = 2 x the active block)."""

    def __init__(
        self,
        model: nn.Module | None = None,
        lr: float = 1e-3,
        switch_every: int = 50,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        blocks: Sequence[Sequence[nn.Parameter]] | None = None,
    ):
        _check_lr(lr, weight_decay)
        switch_every = V.check_int(switch_every, "switch_every", low=1)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        betas = tuple(
            V.check_scalar(b, f"betas[{i}]", low=0.0, high=1.0, high_open=True)
            for i, b in enumerate(betas)
        )
        eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
        super().__init__(
            model, blocks, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        )
        self.switch_every = switch_every
        self.k = 0
        self._switch(0)

    def _switch(self, i: int) -> None:
        self.state.clear()  # fresh moments for the new block
        self._activate(i)
        self.block_step = 0

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[0]
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        self.block_step += 1
        t = self.block_step
        for p in self.blocks[self.active_block]:
            if p.grad is None:
                continue
            st = self.state[p]
            if not st:
                st["exp_avg"] = torch.zeros_like(p)
                st["exp_avg_sq"] = torch.zeros_like(p)
            m, v = st["exp_avg"], st["exp_avg_sq"]
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            if wd:
                p.mul_(1 - lr * wd)
            denom = (v / (1 - b2**t)).sqrt_().add_(eps)
            p.addcdiv_(m, denom, value=-lr / (1 - b1**t))
        self.k += 1
        if self.k % self.switch_every == 0:
            self._switch((self.active_block + 1) % len(self.blocks))
        return loss

    def state_dict(self) -> dict:
        out = super().state_dict()
        out["block_adam"] = {
            "k": self.k,
            "block_step": self.block_step,
            "active_block": self.active_block,
        }
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("block_adam", None)
        if extra is None:
            raise ValueError("state_dict has no 'block_adam' entry (not saved by BlockAdam)")
        self._activate(int(extra["active_block"]))
        super().load_state_dict(state_dict)  # the active block's Adam moments
        self.k, self.block_step = int(extra["k"]), int(extra["block_step"])

    def state_bytes(self) -> int:
        return tensor_bytes(t for s in self.state.values() for t in s.values())


def memory_report(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of parameters, gradients alive now and optimizer state, from the tensors."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    params = list(model.parameters())
    if hasattr(optimizer, "state_bytes"):
        state = int(optimizer.state_bytes())
    else:
        state = tensor_bytes(
            t
            for s in optimizer.state.values()
            for t in s.values()
            if isinstance(t, torch.Tensor) and t.dim() > 0
        )
    grads = tensor_bytes(p.grad for p in params if p.grad is not None)
    return {"param_bytes": tensor_bytes(params), "grad_bytes": grads, "state_bytes": state}
