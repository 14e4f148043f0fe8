"""ABSignSGD-MV: data-parallel block sign descent with a majority vote.

All agents share the weights and the block index of each step (same schedule, same seed).
Agent j sends the 1-bit signs of its gradient of the active block (``numpy.packbits``); the
server returns v = sign(sum_j s_j) (ties give 0) and every agent applies x_i <- x_i - lr * v.
Backends: ``local`` (agents simulated in one process on their own micro-batches) and ``ray``
(one Ray actor per agent holding a model replica; the driver votes and broadcasts).

The 1-bit channel cannot carry sign(0): an exactly zero gradient entry is sent as +1. The
vote has three values when the number of agents is even (ties), so it is counted as 2 bits
per coordinate then, 1 bit otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26.optim.absignsgd.blocks import find_blocks
from iclr26.optim.absignsgd.schedules import BlockSchedule


def pack_signs(grad: torch.Tensor) -> np.ndarray:
    """1 bit per entry: 1 for >= 0, 0 for < 0."""
    return np.packbits((grad.detach().reshape(-1) >= 0).cpu().numpy())


def unpack_signs(packed: np.ndarray, n: int) -> np.ndarray:
    """+-1 int8 signs of ``n`` entries from :func:`pack_signs`' bytes."""
    bits = np.unpackbits(packed, count=n)
    return bits.astype(np.int8) * 2 - 1


def majority_vote(packed: Sequence[np.ndarray], n: int) -> np.ndarray:
    """sign(sum_j s_j) over agents as int8 in {-1, 0, +1} (ties give 0)."""
    total = np.zeros(n, dtype=np.int32)
    for p in packed:
        total += unpack_signs(p, n)
    return np.sign(total).astype(np.int8)


def _freeze_outside(model: nn.Module, blocks) -> None:
    in_blocks = {id(p) for b in blocks for p in b}
    for p in model.parameters():
        if id(p) not in in_blocks:
            p.requires_grad_(False)


def _activate(blocks, i: int) -> None:
    for j, block in enumerate(blocks):
        for p in block:
            p.requires_grad_(j == i)
            p.grad = None


def batch_loss(model: nn.Module, batch: Any, loss_fn: Callable | None) -> torch.Tensor:
    if isinstance(batch, dict):
        return model(**batch).loss
    if loss_fn is None:
        raise ValueError("loss_fn is needed for (inputs, targets) batches")
    x, y = batch
    return loss_fn(model(x), y)


class _Replica:
    """One agent's model replica: computes packed gradient signs, applies votes."""

    def __init__(
        self,
        model_factory: Callable[[], nn.Module],
        loss_fn: Callable | None,
        blocks_fn: Callable,
        threads: int | None = None,
    ):
        if threads:
            torch.set_num_threads(threads)
        self.model = model_factory()
        self.blocks = [list(b) for b in blocks_fn(self.model)]
        _freeze_outside(self.model, self.blocks)
        self.loss_fn = loss_fn

    def signs(self, block: int, batch: Any) -> tuple[list[np.ndarray], float]:
        _activate(self.blocks, block)
        loss = batch_loss(self.model, batch, self.loss_fn)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in self.blocks[block]])
        return pack_signs(flat), float(loss.detach())

    @torch.no_grad()
    def apply(self, block: int, vote: np.ndarray, lr: float, weight_decay: float) -> None:
        offset = 0
        for p in self.blocks[block]:
            v = torch.from_numpy(vote[offset : offset + p.numel()]).to(p.dtype).view(p.shape)
            if weight_decay:
                p.mul_(1 - lr * weight_decay)
            p.add_(v, alpha=-lr)
            offset += p.numel()
            p.grad = None

    def flat_params(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])


class ABSignSGDMV:
    """Majority-vote ABSignSGD over ``n_agents`` data-parallel agents.

    ``model_factory()`` must build the same initial weights on every call (seed inside it).
    ``step(list_of_agent_batches)`` returns ``{"loss", "bits_sent", "agreement", "block"}``;
    ``model`` is the driver's replica (updated identically)."""

    def __init__(
        self,
        model_factory: Callable[[], nn.Module],
        n_agents: int = 4,
        lr: float = 1e-4,
        backend: str = "local",
        schedule: str | Callable = "depth_biased",
        depth_bias: float = 10.0,
        weight_decay: float = 0.0,
        max_staleness: int | None = None,
        seed: int = 0,
        loss_fn: Callable | None = None,
        blocks_fn: Callable = find_blocks,
        threads: int | None = None,
    ):
        if not isinstance(n_agents, int) or n_agents < 1:
            raise ValueError("n_agents must be an int >= 1")
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if backend not in ("local", "ray"):
            raise ValueError("backend must be 'local' or 'ray'")
        self.n_agents, self.lr, self.weight_decay = n_agents, lr, weight_decay
        self.backend = backend
        self.driver = _Replica(model_factory, loss_fn, blocks_fn)
        self.model = self.driver.model
        self.schedule = BlockSchedule(
            len(self.driver.blocks), schedule, depth_bias, max_staleness, seed
        )
        self.block_sizes = [sum(p.numel() for p in b) for b in self.driver.blocks]
        self.trainable = sum(self.block_sizes)
        self.bits_total = 0
        self._actors = None
        if backend == "ray":
            import ray

            if not ray.is_initialized():
                raise RuntimeError("backend='ray' needs ray.init() first")
            remote = ray.remote(num_cpus=0)(_Replica)
            self._actors = [
                remote.remote(model_factory, loss_fn, blocks_fn, threads) for _ in range(n_agents)
            ]

    def step(self, agent_batches: Sequence[Any]) -> dict[str, Any]:
        if len(agent_batches) != self.n_agents:
            raise ValueError(
                f"need one batch per agent ({self.n_agents}), got {len(agent_batches)}"
            )
        block = self.schedule.next()
        n = self.block_sizes[block]
        if self._actors is None:
            results = [self.driver.signs(block, b) for b in agent_batches]
        else:
            import ray

            results = ray.get(
                [a.signs.remote(block, b) for a, b in zip(self._actors, agent_batches)]
            )
        packed = [r[0] for r in results]
        vote = majority_vote(packed, n)
        if self._actors is not None:
            import ray

            ray.get([a.apply.remote(block, vote, self.lr, self.weight_decay) for a in self._actors])
        self.driver.apply(block, vote, self.lr, self.weight_decay)
        agree = float(np.mean([np.mean(unpack_signs(p, n) == vote) for p in packed]))
        down_bits = (2 if self.n_agents % 2 == 0 else 1) * n
        bits = self.n_agents * n + down_bits
        self.bits_total += bits
        return {
            "loss": float(np.mean([r[1] for r in results])),
            "bits_sent": bits,
            "agreement": agree,
            "block": block,
        }

    def allreduce_bits(self) -> int:
        """Bits of one fp32 gradient-averaging step over all trainable parameters
        (every agent sends its gradient, the average is broadcast back)."""
        return 32 * self.trainable * (self.n_agents + 1)

    def replica_params(self) -> list[torch.Tensor]:
        """Flat parameters of every replica (the driver's for ``local``)."""
        if self._actors is None:
            return [self.driver.flat_params()]
        import ray

        return ray.get([a.flat_params.remote() for a in self._actors])

    def shutdown(self) -> None:
        if self._actors is not None:
            import ray

            for a in self._actors:
                ray.kill(a)
            self._actors = None
