"""The class-incremental training loop shared by SMoPE and its baselines.

Per task (as in the official code base): a fresh AdamW optimiser with the prompts at
``prompt_lr_mult`` × ``lr`` and the head at ``lr``, no weight decay, a per-step cosine
schedule, cross-entropy over the current task's classes plus the method's prompt loss. On
the first task SMoPE first trains ``dense_warmup`` × the epochs with every expert active.
After each task the model's ``end_task`` runs on the task's training images (SMoPE counts
expert usage there), and with classifier alignment the head is re-trained on features drawn
from per-class Gaussians of every class seen so far. Evaluation is task-agnostic: the argmax
over all classes seen so far.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images


def _to_images(x, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(V.check_array(x, name, ndim=4, dtype=np.float32))
    check_images(x, name, channels=None)
    return x.float()


def _to_labels(y, name: str, n: int) -> torch.Tensor:
    arr = V.check_array(y, name, ndim=1, n_rows=n, dtype=None)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    return torch.as_tensor(arr.astype(np.int64))


@dataclass
class ContinualResult:
    """What :meth:`ContinualTrainer.run` measured: ``accuracy[i][j]`` is the accuracy on task
    j's test images after training task i (NaN for j > i); ``faa`` the final accuracy over
    every test image of every task; ``forgetting`` the mean drop from each earlier task's best
    accuracy to its final one."""

    accuracy: list[list[float]]
    faa: float
    forgetting: float
    train_seconds: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "faa": self.faa,
            "forgetting": self.forgetting,
            "train_seconds": self.train_seconds,
            "steps": self.steps,
            **self.extra,
        }


def average_forgetting(accuracy: np.ndarray) -> float:
    """Mean over tasks j < T of max_{j <= i < T-1} acc[i, j] - acc[T-1, j] (0 for one task)."""
    acc = V.check_array(accuracy, "accuracy", ndim=2, dtype=np.float64, allow_nan=True)
    if acc.shape[0] != acc.shape[1]:
        raise ValueError(f"accuracy must be a square (tasks x tasks) matrix, got {acc.shape}")
    t = acc.shape[0]
    if t < 2:
        return 0.0
    drops = [np.nanmax(acc[j : t - 1, j]) - acc[t - 1, j] for j in range(t - 1)]
    return float(np.mean(drops))


class ContinualTrainer:
    """Trains a prompt model (or feeds :class:`~iclr26.vision.smope.baselines.NCMClassifier`)
    task by task; see the module docstring for the schedule."""

    def __init__(
        self,
        model: nn.Module,
        epochs_per_task: int = 20,
        lr: float = 5e-3,
        batch_size: int = 128,
        prompt_lr_mult: float = 5.0,
        dense_warmup: float = 0.5,
        weight_decay: float = 0.0,
        ca_epochs: int = 50,
        ca_samples_per_class: int = 256,
        seed: int = 0,
        device: str | torch.device | None = None,
        eval_batch_size: int = 256,
    ):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        V.check_module_attrs(model, "model", ("begin_task", "end_task", "prompt_loss"))
        self.model = model
        self.epochs_per_task = V.check_int(epochs_per_task, "epochs_per_task", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.prompt_lr_mult = V.check_scalar(prompt_lr_mult, "prompt_lr_mult", low=0.0)
        self.dense_warmup = V.check_scalar(dense_warmup, "dense_warmup", low=0.0, high=1.0)
        self.weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
        self.ca_epochs = V.check_int(ca_epochs, "ca_epochs", low=0)
        self.ca_samples_per_class = V.check_int(ca_samples_per_class, "ca_samples_per_class", low=2)
        self.seed = V.check_int(seed, "seed")
        self.eval_batch_size = V.check_int(eval_batch_size, "eval_batch_size", low=1)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.model.to(self.device)
        self.class_stats: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.history: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ training
    def _optimizer(self) -> torch.optim.Optimizer:
        model = self.model
        groups = [{"params": list(model.head.parameters()), "lr": self.lr}]
        prompts = [p for p in model.prompt_parameters() if p.requires_grad]
        if prompts:
            groups.append({"params": prompts, "lr": self.lr * self.prompt_lr_mult})
        return torch.optim.AdamW(groups, weight_decay=self.weight_decay)

    def _train_epochs(
        self, x: torch.Tensor, y: torch.Tensor, epochs: int, seed: int
    ) -> list[float]:
        model = self.model
        opt = self._optimizer()
        base = [g["lr"] for g in opt.param_groups]
        n = len(x)
        steps_per_epoch = math.ceil(n / self.batch_size)
        total = epochs * steps_per_epoch
        gen = torch.Generator().manual_seed(seed)
        losses, step = [], 0
        model.train()
        for _ in range(epochs):
            order = torch.randperm(n, generator=gen)
            for start in range(0, n, self.batch_size):
                idx = order[start : start + self.batch_size]
                xb, yb = x[idx].to(self.device), y[idx].to(self.device)
                factor = 0.5 * (1.0 + math.cos(math.pi * step / total))
                for group, lr in zip(opt.param_groups, base):
                    group["lr"] = lr * factor
                loss = F.cross_entropy(model(xb), yb) + model.prompt_loss()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
                step += 1
        model.eval()
        return losses

    def fit_task(self, x, y, classes=None, task_id: int | None = None) -> dict[str, Any]:
        """Learn one task from images ``x`` (n, C, H, W) and labels ``y``; ``classes`` are the
        task's class ids (default: the labels present)."""
        x = _to_images(x)
        y = _to_labels(y, "y", len(x))
        if classes is None:
            classes = torch.unique(y).numpy()
        cls = np.asarray(V.check_array(classes, "classes", ndim=1, dtype=None))
        if not np.isin(y.numpy(), cls).all():
            raise ValueError("y holds labels outside classes")
        if task_id is None:
            task_id = len(self.history)
        task_id = V.check_int(task_id, "task_id", low=0)
        model = self.model
        started = time.perf_counter()
        model.begin_task(cls)
        losses: list[float] = []
        if getattr(model, "trained_by_gradient", True):
            seed = self.seed * 1000 + task_id
            if task_id == 0 and hasattr(model, "dense") and self.dense_warmup > 0:
                model.dense = True
                warm = max(1, round(self.dense_warmup * self.epochs_per_task))
                try:
                    losses += self._train_epochs(x, y, warm, seed + 500)
                finally:
                    model.dense = False
            losses += self._train_epochs(x, y, self.epochs_per_task, seed)
            model.end_task(x.to(self.device))
            if getattr(model, "classifier_alignment", False) and self.ca_epochs > 0:
                self._classifier_alignment(x, y, cls, seed)
        else:
            model.observe(x.to(self.device), y.to(self.device))
            model.end_task(None)
        record = {
            "task_id": task_id,
            "classes": cls.tolist(),
            "seconds": time.perf_counter() - started,
            "steps": len(losses),
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None,
        }
        self.history.append(record)
        return record

    @torch.no_grad()
    def _features(self, x: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        out = [
            self.model.features(x[s : s + self.eval_batch_size].to(self.device))
            for s in range(0, len(x), self.eval_batch_size)
        ]
        return torch.cat(out)

    def _classifier_alignment(self, x, y, classes, seed: int) -> None:
        """Per-class Gaussian statistics of the task's features, then the head re-trained on
        samples from every seen class's Gaussian (SLCA / HiDe-Prompt style)."""
        feats = self._features(x)
        d = feats.shape[1]
        for c in classes:
            f = feats[y.to(feats.device) == int(c)]
            mean = f.mean(0)
            cov = torch.cov(f.t()) if len(f) > 1 else torch.zeros(d, d, device=f.device)
            self.class_stats[int(c)] = (mean, cov + 1e-4 * torch.eye(d, device=f.device))
        gen = torch.Generator(device="cpu").manual_seed(seed + 777)
        samples, labels = [], []
        for c, (mean, cov) in self.class_stats.items():
            chol = torch.linalg.cholesky(cov.double().cpu()).float()
            z = torch.randn(self.ca_samples_per_class, d, generator=gen)
            samples.append(mean.cpu() + z @ chol.t())
            labels.append(torch.full((self.ca_samples_per_class,), c, dtype=torch.long))
        feats_ca = torch.cat(samples).to(self.device)
        labels_ca = torch.cat(labels).to(self.device)
        head = self.model.head
        opt = torch.optim.AdamW(head.parameters(), lr=self.lr, weight_decay=0.0)
        seen = self.model.seen
        n = len(feats_ca)
        for _ in range(self.ca_epochs):
            order = torch.randperm(n, generator=gen).to(self.device)
            for s in range(0, n, self.batch_size):
                idx = order[s : s + self.batch_size]
                logits = head(feats_ca[idx]).masked_fill(~seen, float("-inf"))
                loss = F.cross_entropy(logits, labels_ca[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def predict(self, x) -> np.ndarray:
        """Task-agnostic predictions: the argmax over every class seen so far."""
        x = _to_images(x)
        self.model.eval()
        preds = [
            self.model(x[s : s + self.eval_batch_size].to(self.device)).argmax(1).cpu()
            for s in range(0, len(x), self.eval_batch_size)
        ]
        return torch.cat(preds).numpy()

    def evaluate(self, x, y) -> float:
        """Task-agnostic, class-incremental accuracy on images ``x`` with labels ``y``."""
        x = _to_images(x)
        y = _to_labels(y, "y", len(x))
        return float((self.predict(x) == y.numpy()).mean())

    def run(self, tasks, progress=None) -> ContinualResult:
        """Fit every task of a stream (:func:`~iclr26.vision.smope.streams.class_incremental`
        with test splits) and evaluate on every seen task's test images after each task."""
        tasks = list(tasks)
        if not tasks:
            raise ValueError("tasks is empty")
        for task in tasks:
            if task.x_test is None:
                raise ValueError("tasks need test splits (class_incremental(..., X_test, y_test))")
        t = len(tasks)
        acc = np.full((t, t), np.nan)
        seconds, steps = [], []
        for i, task in enumerate(tasks):
            rec = self.fit_task(task.x, task.y, task.classes, task_id=i)
            seconds.append(rec["seconds"])
            steps.append(rec["steps"])
            for j in range(i + 1):
                acc[i, j] = self.evaluate(tasks[j].x_test, tasks[j].y_test)
            if progress is not None:
                progress(i + 1, t)
        sizes = np.array([len(task.y_test) for task in tasks], dtype=float)
        faa = float((acc[t - 1] * sizes).sum() / sizes.sum())
        return ContinualResult(
            accuracy=[[float(a) for a in row] for row in acc],
            faa=faa,
            forgetting=average_forgetting(acc),
            train_seconds=seconds,
            steps=steps,
        )
