"""ABSignSGD-MV: data-parallel block sign descent with a majority vote.

All agents share the weights and the block index of each step (same schedule, same seed).
Agent j sends the 1-bit signs of its gradient of the active block (``numpy.packbits``); the
server returns v = sign(sum_j s_j) (ties give 0) and every agent applies x_i <- x_i - lr * v.
Backends: ``local`` (agents simulated in one process on their own micro-batches) and ``ray``
(one Ray actor per agent holding a model replica; the driver votes and broadcasts).

The 1-bit channel cannot carry sign(0): an exactly zero gradient entry is sent as +1. The
vote has three values when the number of agents is even (ties), so it is sent as two packed bit
planes (non-zero, positive) then, one plane otherwise. ``step`` reports the bytes of the arrays
actually exchanged (the packed uplink signs and the packed downlink vote), not a formula.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.optim.absignsgd.blocks import find_blocks
from iclr26.optim.absignsgd.schedules import BlockSchedule


def pack_signs(grad: torch.Tensor) -> np.ndarray:
    """1 bit per entry: 1 for >= 0, 0 for < 0 (a NaN gradient has no sign: refused)."""
    V.check_tensor(grad, "grad", allow_inf=True)
    return np.packbits((grad.detach().reshape(-1) >= 0).cpu().numpy())


def _check_packed(packed, n: int, name: str = "packed") -> np.ndarray:
    arr = np.asarray(packed)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise TypeError(f"{name} must be a 1-D uint8 array (from pack_signs), got {arr.dtype}")
    if 8 * arr.size < n:
        raise ValueError(f"{name} holds {8 * arr.size} bits, fewer than n = {n}")
    return arr


def unpack_signs(packed: np.ndarray, n: int) -> np.ndarray:
    """+-1 int8 signs of ``n`` entries from :func:`pack_signs`' bytes."""
    n = V.check_int(n, "n", low=1)
    bits = np.unpackbits(_check_packed(packed, n), count=n)
    return bits.astype(np.int8) * 2 - 1


def majority_vote(packed: Sequence[np.ndarray], n: int) -> np.ndarray:
    """sign(sum_j s_j) over agents as int8 in {-1, 0, +1} (ties give 0)."""
    n = V.check_int(n, "n", low=1)
    if isinstance(packed, np.ndarray) or len(packed) == 0:
        raise ValueError("packed must be a non-empty list of packed sign arrays (one per agent)")
    total = np.zeros(n, dtype=np.int32)
    for p in packed:
        total += unpack_signs(p, n)
    return np.sign(total).astype(np.int8)


def pack_vote(vote: np.ndarray, ties: bool) -> tuple[np.ndarray, ...]:
    """The vote as it travels down: one packed bit plane (positive) when it has no zeros
    (odd number of agents), two (non-zero, positive) when ties are possible."""
    positive = np.packbits(vote > 0)
    return (np.packbits(vote != 0), positive) if ties else (positive,)


def unpack_vote(planes: tuple[np.ndarray, ...], n: int) -> np.ndarray:
    positive = np.unpackbits(planes[-1], count=n).astype(np.int8)
    vote = positive * 2 - 1
    if len(planes) == 2:
        vote *= np.unpackbits(planes[0], count=n).astype(np.int8)
    return vote.astype(np.int8)


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
    def apply(self, block: int, planes: tuple, lr: float, weight_decay: float) -> None:
        n = sum(p.numel() for p in self.blocks[block])
        vote = unpack_vote(planes, n)
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

    def load_weights(self, state: dict) -> bool:
        self.model.load_state_dict(state)
        _freeze_outside(self.model, self.blocks)
        return True


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
        weight_decay: float = 0.01,
        max_staleness: int | None = None,
        seed: int = 0,
        loss_fn: Callable | None = None,
        blocks_fn: Callable = find_blocks,
        threads: int | None = None,
    ):
        if not callable(model_factory) or isinstance(model_factory, nn.Module):
            raise TypeError(
                "model_factory must be a function that builds one model replica, got "
                f"{type(model_factory).__name__}"
            )
        n_agents = V.check_int(n_agents, "n_agents", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
        V.check_choice(backend, "backend", ("local", "ray"))
        if threads is not None:
            threads = V.check_int(threads, "threads", low=1)
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError("loss_fn must be callable or None")
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
        """One round; ``bytes_up`` / ``bytes_down`` are the sizes of the arrays exchanged."""
        if isinstance(agent_batches, (torch.Tensor, dict)) or len(agent_batches) != self.n_agents:
            got = len(agent_batches) if hasattr(agent_batches, "__len__") else agent_batches
            raise ValueError(
                f"agent_batches must hold one batch per agent ({self.n_agents}), got {got}"
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
        planes = pack_vote(vote, ties=self.n_agents % 2 == 0)
        if self._actors is not None:
            import ray

            ray.get(
                [a.apply.remote(block, planes, self.lr, self.weight_decay) for a in self._actors]
            )
        self.driver.apply(block, planes, self.lr, self.weight_decay)
        agree = float(np.mean([np.mean(unpack_signs(p, n) == vote) for p in packed]))
        bytes_up = int(sum(p.nbytes for p in packed))
        bytes_down = int(sum(p.nbytes for p in planes))
        self.bits_total += 8 * (bytes_up + bytes_down)
        return {
            "loss": float(np.mean([r[1] for r in results])),
            "bits_sent": 8 * (bytes_up + bytes_down),
            "bytes_up": bytes_up,
            "bytes_down": bytes_down,
            "agreement": agree,
            "block": block,
            "block_size": n,
        }

    def allreduce_bits(self) -> int:
        """Bits of one fp32 gradient-averaging step over all trainable parameters
        (every agent sends its gradient, the average is broadcast back)."""
        return 32 * self.trainable * (self.n_agents + 1)

    def state_dict(self) -> dict:
        """The shared weights (driver replica), the schedule (clock, step, RNG) and the traffic
        counter: loading it into a fresh ABSignSGDMV resumes the run bit for bit."""
        return {
            "model": {k: v.clone() for k, v in self.model.state_dict().items()},
            "schedule": self.schedule.state_dict(),
            "bits_total": self.bits_total,
        }

    def load_state_dict(self, state: dict) -> None:
        for key in ("model", "schedule", "bits_total"):
            if key not in state:
                raise ValueError(f"state has no {key!r} entry (not saved by ABSignSGDMV)")
        self.driver.load_weights(state["model"])
        if self._actors is not None:
            import ray

            ray.get([a.load_weights.remote(state["model"]) for a in self._actors])
        self.schedule.load_state_dict(state["schedule"])
        self.bits_total = int(state["bits_total"])

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
