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

from iclr26.nn.learned_nonlinearities.spline import Nonlinearities
from iclr26.nn.learned_nonlinearities.tasks import masked_loss

ModelFactory = Callable[[Nonlinearities | None], nn.Module]


@dataclass
class History:
    steps: list[int] = field(default_factory=list)
    metric: list[float] = field(default_factory=list)
    arch_loss: list[float] = field(default_factory=list)
    tokens_per_s: float = 0.0


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
) -> tuple[Nonlinearities, History]:
    """Stage I: learn ``theta`` on ``task``'s ``arch`` split, shared by ``n_models`` models."""
    if not isinstance(theta, Nonlinearities):
        raise TypeError("theta must be a Nonlinearities module")
    if n_models < 1 or steps < 1:
        raise ValueError("n_models and steps must be positive")
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
) -> tuple[nn.Module, History]:
    """Stage II: a fresh model with ``theta`` frozen (None = the GeLU/softmax baseline)."""
    if steps < 1 or eval_every < 1:
        raise ValueError("steps and eval_every must be positive")
    frozen = theta.frozen() if theta is not None else None
    torch.manual_seed(seed)
    model = make_model(frozen)
    opt = torch.optim.AdamW(_weights(model), lr=lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed + 17)
    history = History()
    busy, tokens = 0.0, 0
    for step in range(1, steps + 1):
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
    if not thetas or not tasks or not len(seeds):
        raise ValueError("thetas, tasks and seeds must be non-empty")
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
