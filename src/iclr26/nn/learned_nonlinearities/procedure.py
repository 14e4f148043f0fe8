"""The paper's two-stage procedure.

Stage I (``discover_nonlinearities``): ``M`` models with different seeds share one set of
spline parameters ``theta``. Every step each model updates its own weights on a batch of
``D_wts``; then one shared batch of the held-out ``D_arch`` gives ``sum_m L(model_m)``, whose
gradient updates ``theta`` only, so the splines cannot co-adapt to one set of weights.
Stage II (``train_with_frozen``): a fresh model trains from scratch with ``theta`` frozen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.nn.learned_nonlinearities.spline import Nonlinearities
from iclr26.nn.learned_nonlinearities.tasks import masked_loss

ModelFactory = Callable[[Nonlinearities | None], nn.Module]


@dataclass
class History:
    steps: list[int] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)
    arch_loss: list[float] = field(default_factory=list)
    tokens_per_s: float = 0.0


LR_SCHEDULES = ("constant", "trapezoid")
# The release's trapezoid: linear warm-up over 2k of 20k steps, constant, linear cool-down over
# the last 10k steps; the same factor scales the weights' and the splines' learning rates.
WARMUP_FRACTION, COOLDOWN_FRACTION = 0.1, 0.5


def lr_factor(schedule: str, step: int, total: int) -> float:
    """Learning-rate multiplier at ``step`` (0-based) of ``total``: 1 for ``"constant"``; the
    release's trapezoid (warm-up, plateau, linear cool-down) for ``"trapezoid"``."""
    if schedule == "constant" or step < 0:
        return 1.0 if step >= 0 else 0.0
    warmup = max(1, round(WARMUP_FRACTION * total))
    cooldown = max(1, round(COOLDOWN_FRACTION * total))
    if step < warmup:
        return (step + 1) / warmup
    if step < total - cooldown:
        return 1.0
    return max(total - step, 0) / cooldown


def _set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr


def _check_task(task) -> None:
    V.check_module_attrs(task, "task", ["sample", "evaluate"])


def _check_common(make_model, steps, batch, lr, seed, lr_schedule) -> None:
    if not callable(make_model):
        raise TypeError(f"make_model must be callable, got {type(make_model).__name__}")
    V.check_int(steps, "steps", low=1)
    V.check_int(batch, "batch", low=1)
    V.check_scalar(lr, "lr", low=0.0, low_open=True)
    V.check_int(seed, "seed", low=0)
    V.check_choice(lr_schedule, "lr_schedule", LR_SCHEDULES)


def _weights(model: nn.Module) -> list[nn.Parameter]:
    if hasattr(model, "weight_parameters"):
        return list(model.weight_parameters())
    return list(model.parameters())


def discover_nonlinearities(
    make_model: ModelFactory,
    theta: Nonlinearities,
    task,
    *,
    n_models: int = 4,
    steps: int = 600,
    batch: int = 128,
    lr: float = 1e-3,
    spline_lr: float = 0.1,
    staggered_starts: bool = False,
    seed: int = 0,
    lr_schedule: str = "constant",
) -> tuple[Nonlinearities, History]:
    """Stage I: learn ``theta`` on ``task``'s ``arch`` split, shared by ``n_models`` models.

    ``lr_schedule="trapezoid"`` applies the release's schedule to the weights and the splines
    alike (each model's clock starts at its own start with ``staggered_starts``, as the
    release's delayed schedule); ``"constant"`` (default) keeps both learning rates fixed."""
    if not isinstance(theta, Nonlinearities):
        raise TypeError(f"theta must be a Nonlinearities module, got {type(theta).__name__}")
    _check_common(make_model, steps, batch, lr, seed, lr_schedule)
    _check_task(task)
    n_models = V.check_int(n_models, "n_models", low=1)
    spline_lr = V.check_scalar(spline_lr, "spline_lr", low=0.0, low_open=True)
    staggered_starts = V.check_bool(staggered_starts, "staggered_starts")
    theta_params = [p for p in theta.parameters() if p.requires_grad]
    if not theta_params:
        raise ValueError("theta has no trainable parameters")
    models, opts = [], []
    for m in range(n_models):
        torch.manual_seed(seed * 1000 + m)
        model = make_model(theta)
        models.append(model)
        opts.append(torch.optim.AdamW(_weights(model), lr=lr, weight_decay=0.01))
    theta_opt = torch.optim.Adam(theta_params, lr=spline_lr, betas=(0.99, 0.999))
    starts = [m * steps // n_models if staggered_starts else 0 for m in range(n_models)]
    gen = torch.Generator().manual_seed(seed)
    history = History()
    for step in range(steps):
        active = [m for m in range(n_models) if step >= starts[m]]
        for m in active:
            _set_lr(opts[m], lr * lr_factor(lr_schedule, step - starts[m], steps))
        _set_lr(theta_opt, spline_lr * lr_factor(lr_schedule, step, steps))
        for m in active:  # each model: its own weights, its own D_wts batch
            weights = _weights(models[m])
            loss = masked_loss(models[m], task.sample("wts", batch, gen))
            grads = torch.autograd.grad(loss, weights)
            for p, g in zip(weights, grads):
                p.grad = g
            opts[m].step()
            opts[m].zero_grad(set_to_none=True)
        arch_batch = task.sample("arch", batch, gen)  # one shared held-out batch
        arch_loss = sum(masked_loss(models[m], arch_batch) for m in active)
        grads = torch.autograd.grad(arch_loss, theta_params)
        for p, g in zip(theta_params, grads):
            p.grad = g
        theta_opt.step()
        theta_opt.zero_grad(set_to_none=True)
        history.steps.append(step + 1)
        history.arch_loss.append(float(arch_loss.detach()) / len(active))
    return theta, history


def train_with_frozen(
    make_model: ModelFactory,
    theta: Nonlinearities | None,
    task,
    *,
    steps: int = 1500,
    batch: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    eval_every: int = 50,
    lr_schedule: str = "constant",
) -> tuple[nn.Module, History]:
    """Stage II: a fresh model with ``theta`` frozen (None = the GeLU/softmax baseline);
    ``lr_schedule`` as in :func:`discover_nonlinearities`."""
    _check_common(make_model, steps, batch, lr, seed, lr_schedule)
    _check_task(task)
    eval_every = V.check_int(eval_every, "eval_every", low=1)
    if theta is not None and not isinstance(theta, Nonlinearities):
        raise TypeError(f"theta must be a Nonlinearities module or None, got {type(theta)}")
    frozen = theta.frozen() if theta is not None else None
    torch.manual_seed(seed)
    model = make_model(frozen)
    opt = torch.optim.AdamW(_weights(model), lr=lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed + 17)
    history = History()
    busy, tokens = 0.0, 0
    for step in range(1, steps + 1):
        _set_lr(opt, lr * lr_factor(lr_schedule, step - 1, steps))
        x, y, mask = task.sample("wts", batch, gen)
        start = time.perf_counter()
        loss = masked_loss(model, (x, y, mask))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        busy += time.perf_counter() - start
        tokens += x.numel()
        if step % eval_every == 0 or step == steps:
            history.steps.append(step)
            history.metric.append(task.evaluate(model, "test"))
    history.tokens_per_s = tokens / max(busy, 1e-9)
    return model, history


def steps_to_reach(history: History, threshold: float, cap: int) -> int:
    """First evaluated step whose metric reaches ``threshold`` (``cap`` if never)."""
    V.check_module_attrs(history, "history", ["steps", "metric"])
    V.check_scalar(threshold, "threshold")
    V.check_int(cap, "cap", low=0)
    for step, value in zip(history.steps, history.metric):
        if value >= threshold:
            return step
    return cap


def compatibility_matrix(
    thetas: dict,
    tasks: dict,
    make_model_for: Callable,
    *,
    steps: int = 1500,
    batch: int = 128,
    lr: float = 1e-3,
    seeds=(0,),
    metric: Callable[[History], float] | None = None,
    eval_every: int = 50,
) -> dict:
    """Rows: task whose ``theta*`` is used; columns: task trained in stage II; entry: metric of
    the learned architecture minus the baseline's (default: final test metric), seed mean."""
    for name, value in (("thetas", thetas), ("tasks", tasks)):
        if not isinstance(value, dict):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
        if not value:
            raise ValueError(f"{name} is empty")
    if not len(seeds):
        raise ValueError("seeds is empty")
    if not callable(make_model_for):
        raise TypeError("make_model_for must be callable")
    metric = metric or (lambda h: h.metric[-1])
    kw = dict(steps=steps, batch=batch, lr=lr, eval_every=eval_every)
    baseline = {}
    for col, task in tasks.items():
        runs = [train_with_frozen(make_model_for(task), None, task, seed=s, **kw)[1] for s in seeds]
        baseline[col] = sum(metric(h) for h in runs) / len(runs)
    matrix = {}
    for row, theta in thetas.items():
        matrix[row] = {}
        for col, task in tasks.items():
            runs = [
                train_with_frozen(make_model_for(task), theta, task, seed=s, **kw)[1] for s in seeds
            ]
            matrix[row][col] = sum(metric(h) for h in runs) / len(runs) - baseline[col]
    return matrix
