"""Measured tensor memory and counted FLOPs of one training step (load-free costs).

``PeakTensorMemory`` watches every tensor operation inside its block (forward, backward and
the optimizer's update) through a ``TorchDispatchMode`` and keeps the largest number of bytes
of the storages those operations created that were alive at the same time: activations saved
for the backward, gradients, temporaries and optimizer state created in the step. Storages that
existed before the block (weights, state kept from earlier steps) are not counted; add them.
``step_flops`` counts the matrix-multiply FLOPs of a step with torch's ``FlopCounterMode``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class PeakTensorMemory(TorchDispatchMode):
    """Peak bytes of tensor storages created inside the block and alive at once."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            id(t.untyped_storage())
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = id(storage)
            if key in self.live or key in inputs or storage.nbytes() == 0:
                continue
            self.live[key] = storage.nbytes()
            self.now += storage.nbytes()
            weakref.finalize(storage, self._free, key)
        self.peak = max(self.peak, self.now)
        return out


def state_tensor_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of every tensor in ``optimizer.state`` (moments, momentum buffers)."""
    return int(
        sum(
            t.numel() * t.element_size()
            for s in optimizer.state.values()
            for t in s.values()
            if isinstance(t, torch.Tensor)
        )
    )


def step_peak_bytes(step: Callable[[], Any], optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Memory of one step beyond the weights: optimizer state alive before it plus the peak
    of what the step itself allocates (activations, gradients, temporaries, new state)."""
    before = state_tensor_bytes(optimizer)
    with PeakTensorMemory() as mem:
        step()
    return {"state_before": before, "peak_in_step": mem.peak, "total": before + mem.peak}


def step_flops(step: Callable[[], Any]) -> int:
    """Matrix-multiply FLOPs of ``step()`` (forward and backward), counted by torch."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        step()
    return int(counter.get_total_flops())
