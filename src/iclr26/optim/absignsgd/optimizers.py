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

from iclr26.optim.absignsgd.blocks import check_blocks, find_blocks
from iclr26.optim.absignsgd.schedules import BlockSchedule


def _check_lr(lr: float, weight_decay: float) -> None:
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if weight_decay < 0:
        raise ValueError("weight_decay must be >= 0")


def tensor_bytes(tensors: Iterable[torch.Tensor]) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


class _BlockOptimizer(torch.optim.Optimizer):
    """Freezes everything outside the blocks and toggles ``requires_grad`` per active block."""

    def __init__(self, model: nn.Module | None, blocks, defaults: dict):
        if blocks is None:
            if not isinstance(model, nn.Module):
                raise TypeError("pass an nn.Module (blocks are found automatically) or blocks=")
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
    ``torch.optim.lr_scheduler`` works."""

    def __init__(
        self,
        model: nn.Module | None = None,
        lr: float = 1e-3,
        schedule: str | Callable = "depth_biased",
        depth_bias: float = 10.0,
        weight_decay: float = 0.0,
        blocks: Sequence[Sequence[nn.Parameter]] | None = None,
        max_staleness: int | None = None,
        seed: int = 0,
    ):
        _check_lr(lr, weight_decay)
        super().__init__(model, blocks, dict(lr=lr, weight_decay=weight_decay))
        self.schedule = BlockSchedule(len(self.blocks), schedule, depth_bias, max_staleness, seed)
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
        for p in self.blocks[self.active_block]:
            if p.grad is None:
                continue
            if wd:
                p.mul_(1 - lr * wd)
            p.add_(torch.sign(p.grad), alpha=-lr)
        self._activate(self.schedule.next())  # before the next forward pass
        return loss

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
        if switch_every < 1:
            raise ValueError("switch_every must be >= 1")
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

    def state_bytes(self) -> int:
        return tensor_bytes(t for s in self.state.values() for t in s.values())


def memory_report(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of parameters, gradients alive now and optimizer state, from the tensors."""
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
