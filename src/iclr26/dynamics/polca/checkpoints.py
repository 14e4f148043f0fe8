"""Checkpoints along training, stored as flat parameter vectors of a fixed parameter space."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class ParamSpace:
    """The trainable parameters of a module in a fixed order, as one flat vector."""

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError("model must be a torch.nn.Module")
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("model has no trainable parameters")
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.dim = sum(self.numels)

    def flatten(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([params[n].reshape(-1) for n in self.names])

    def unflatten(self, vector: torch.Tensor) -> dict[str, torch.Tensor]:
        if vector.shape[-1] != self.dim:
            raise ValueError(f"vector has {vector.shape[-1]} entries, the model {self.dim}")
        parts = torch.split(vector, self.numels, dim=-1)
        lead = vector.shape[:-1]
        return {n: p.reshape(*lead, *s) for n, p, s in zip(self.names, parts, self.shapes)}

    def current(self, model: nn.Module) -> torch.Tensor:
        params = dict(model.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self.names]).clone()


class CheckpointRecorder:
    """Call ``maybe_save(step)`` in any training loop; every ``every`` steps (and at step 0)
    the parameters are stored as a flat vector in ``checkpoints`` with the step in ``steps``."""

    def __init__(self, model: nn.Module, every: int = 50) -> None:
        if not isinstance(every, int) or every < 1:
            raise ValueError("every must be a positive integer")
        self.model = model
        self.every = every
        self.space = ParamSpace(model)
        self.checkpoints: list[torch.Tensor] = []
        self.steps: list[int] = []

    def maybe_save(self, step: int) -> bool:
        if step % self.every:
            return False
        self.checkpoints.append(self.space.current(self.model))
        self.steps.append(int(step))
        return True


def hf_checkpoint_callback(recorder: CheckpointRecorder) -> Callable:
    """A ``transformers.TrainerCallback`` that feeds ``recorder`` at every optimiser step."""
    from transformers import TrainerCallback

    class _Recorder(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            recorder.maybe_save(int(state.global_step))

        def on_train_begin(self, args, state, control, **kwargs):
            recorder.maybe_save(0)

    return _Recorder()
