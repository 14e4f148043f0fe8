"""Checkpoints along training, stored as flat parameter vectors of a fixed parameter space."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from iclr26 import validation as V


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
        if not isinstance(vector, torch.Tensor):
            raise TypeError(f"vector must be a torch.Tensor, got {type(vector).__name__}")
        if vector.dim() == 0 or vector.shape[-1] != self.dim:
            raise ValueError(f"vector has {tuple(vector.shape)} entries, the model {self.dim}")
        parts = torch.split(vector, self.numels, dim=-1)
        lead = vector.shape[:-1]
        return {n: p.reshape(*lead, *s) for n, p, s in zip(self.names, parts, self.shapes)}

    def check_points(self, points, name: str = "checkpoints", min_count: int = 1) -> list:
        """A list of finite flat parameter vectors of this space (NaN checkpoints refused)."""
        if isinstance(points, torch.Tensor) and points.dim() == 2:
            points = list(points)
        if isinstance(points, torch.Tensor) or not isinstance(points, list | tuple):
            raise TypeError(f"{name} must be a list of flat parameter vectors")
        if len(points) < min_count:
            raise ValueError(f"{name} needs at least {min_count} vector(s), got {len(points)}")
        for i, v in enumerate(points):
            V.check_tensor(v, f"{name}[{i}]", ndim=1, shape=(self.dim,), floating=True)
        return list(points)

    def current(self, model: nn.Module) -> torch.Tensor:
        params = dict(model.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self.names]).clone()


class CheckpointRecorder:
    """Call ``maybe_save(step)`` in any training loop; every ``every`` steps (and at step 0)
    the parameters are stored as a flat vector in ``checkpoints`` with the step in ``steps``."""

    def __init__(self, model: nn.Module, every: int = 50) -> None:
        every = V.check_int(every, "every", low=1)
        self.model = model
        self.every = every
        self.space = ParamSpace(model)
        self.checkpoints: list[torch.Tensor] = []
        self.steps: list[int] = []

    def maybe_save(self, step: int) -> bool:
        step = V.check_int(step, "step", low=0)
        if step % self.every:
            return False
        self.checkpoints.append(self.space.current(self.model))
        self.steps.append(int(step))
        return True


def hf_checkpoint_callback(recorder: CheckpointRecorder) -> Callable:
    """A ``transformers.TrainerCallback`` that feeds ``recorder`` at every optimiser step."""
    if not isinstance(recorder, CheckpointRecorder):
        raise TypeError(f"recorder must be a CheckpointRecorder, got {type(recorder).__name__}")
    from transformers import TrainerCallback

    class _Recorder(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            recorder.maybe_save(int(state.global_step))

        def on_train_begin(self, args, state, control, **kwargs):
            recorder.maybe_save(0)

    return _Recorder()
