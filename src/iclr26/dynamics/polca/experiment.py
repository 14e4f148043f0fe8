"""The arithmetic experiment: train a small transformer on 3-digit addition with checkpoints,
build the Hessian basis, decompose per-token loss changes, and cluster."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call

from iclr26 import validation as V

from .allocation import polca, projected_loss
from .analysis import cluster_trajectories, filter_oscillatory
from .basis import build_hessian_basis
from .checkpoints import CheckpointRecorder, ParamSpace
from .model import TinyTransformer
from .task import POSITIONS, VOCAB, AdditionTask


def addition_token_losses(model: torch.nn.Module, task: AdditionTask):
    """f(params, tokens) -> cross-entropy of every sum token, flattened (n * (digits + 1),)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(task, AdditionTask):
        raise TypeError(f"task must be an AdditionTask, got {type(task).__name__}")
    answer = task.answer_slice

    def per_example_loss(params, tokens):
        logits = functional_call(model, params, (tokens[:, :-1],))[:, answer]
        targets = tokens[:, answer.start + 1 : answer.stop + 1]
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
        )

    return per_example_loss


@dataclass
class AdditionRun:
    task: AdditionTask
    model: torch.nn.Module | None = None
    steps: list[int] = field(default_factory=list)
    carry: np.ndarray | None = None
    position: np.ndarray | None = None
    losses: np.ndarray | None = None  # (T, n_tokens) exact per-token losses
    L: np.ndarray | None = None  # (n_basis, T, n_tokens) projected losses
    kept: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None
    accuracy: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    examples_per_second: float = 0.0
    lca_L: np.ndarray | None = None
    lca_kept: np.ndarray | None = None


def train_addition(
    n_train: int,
    steps: int,
    every: int,
    seed: int,
    d_model: int = 64,
    n_layers: int = 2,
    batch: int = 64,
    lr: float = 1e-3,
):
    """Adam training on random sums, recording checkpoints every ``every`` steps."""
    n_train = V.check_int(n_train, "n_train", low=1)
    steps = V.check_int(steps, "steps", low=1)
    every = V.check_int(every, "every", low=1)
    seed = V.check_int(seed, "seed", low=0)
    batch = V.check_int(batch, "batch", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    task = AdditionTask(3)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    tokens = task.encode(*task.sample(n_train, rng))
    model = TinyTransformer(
        VOCAB, task.seq_len - 1, d_model=d_model, n_heads=4, d_mlp=4 * d_model, n_layers=n_layers
    )
    loss_fn = addition_token_losses(model, task)
    params = dict(model.named_parameters())
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rec = CheckpointRecorder(model, every=every)
    gen = torch.Generator().manual_seed(seed)
    for step in range(steps + 1):
        rec.maybe_save(step)
        if step == steps:
            break
        idx = torch.randint(0, n_train, (batch,), generator=gen)
        loss = loss_fn(params, tokens[idx]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return task, model, rec


def run_addition_experiment(
    *,
    n_train: int = 20_000,
    steps: int = 2000,
    every: int = 50,
    n_analysis: int = 250,
    basis_every: int = 4,
    lanczos_iters: int = 12,
    second_order: str | None = "exact",
    lca_second_order: str | None = None,
    seed: int = 0,
    d_model: int = 64,
    n_layers: int = 2,
    lr: float = 1e-3,
) -> AdditionRun:
    n_analysis = V.check_int(n_analysis, "n_analysis", low=1)
    basis_every = V.check_int(basis_every, "basis_every", low=1)
    lanczos_iters = V.check_int(lanczos_iters, "lanczos_iters", low=1)
    V.check_choice(second_order, "second_order", ("exact", "proportional", None))
    V.check_choice(lca_second_order, "lca_second_order", ("exact", "proportional", None))
    if V.check_int(steps, "steps", low=1) < 2 * V.check_int(every, "every", low=1):
        raise ValueError(f"steps ({steps}) must allow at least three checkpoints every {every}")
    timings = {}
    start = time.perf_counter()
    task, model, rec = train_addition(n_train, steps, every, seed, d_model, n_layers, lr=lr)
    timings["train_s"] = time.perf_counter() - start
    model.eval()
    rng = np.random.default_rng(seed + 10_000)
    a, b = task.sample(n_analysis, rng)
    X = task.encode(a, b)
    loss_fn = addition_token_losses(model, task)
    carry = task.carry_labels(a, b).reshape(-1)
    position = task.position_labels(n_analysis).reshape(-1)
    start = time.perf_counter()
    basis, eigenvalues = build_hessian_basis(
        model, loss_fn, X, rec.checkpoints[::basis_every], k=1, iters=lanczos_iters, seed=seed
    )
    timings["basis_s"] = time.perf_counter() - start
    out = polca(model, loss_fn, X, rec.checkpoints, basis, second_order=second_order)
    timings["polca_s"] = out["seconds"]
    L = projected_loss(out["allocations"])
    # LCA-style baseline: the same decomposition on the coordinate axes that carry the largest
    # total |first-order allocation| of the summed loss
    start = time.perf_counter()
    space = ParamSpace(model)
    score = torch.zeros(space.dim)
    params_of = space.unflatten
    for t in range(len(rec.checkpoints) - 1):
        p = {k: v.detach().requires_grad_() for k, v in params_of(rec.checkpoints[t]).items()}
        g = torch.autograd.grad(loss_fn(p, X).sum(), list(p.values()))
        g = torch.cat([x.reshape(-1) for x in g])
        score += (g * (rec.checkpoints[t + 1] - rec.checkpoints[t])).abs()
    axes = torch.topk(score, basis.shape[0]).indices
    lca_basis = torch.zeros(basis.shape[0], space.dim)
    lca_basis[torch.arange(basis.shape[0]), axes] = 1.0
    lca = polca(model, loss_fn, X, rec.checkpoints, lca_basis, second_order=lca_second_order)
    timings["lca_s"] = time.perf_counter() - start
    with torch.no_grad():
        logits = functional_call(model, params_of(rec.checkpoints[-1]), (X[:, :-1],))
        pred = logits[:, task.answer_slice].argmax(-1)
        correct = pred == X[:, task.answer_slice.start + 1 : task.answer_slice.stop + 1]
    acc = {name: float(correct[:, i].float().mean()) for i, name in enumerate(POSITIONS)}
    acc["sequence"] = float(correct.all(dim=1).float().mean())
    lca_L = projected_loss(lca["allocations"])
    return AdditionRun(
        task=task,
        model=model,
        steps=rec.steps,
        carry=carry,
        position=position,
        losses=out["losses"],
        L=L,
        kept=filter_oscillatory(L),
        eigenvalues=eigenvalues,
        accuracy=acc,
        timings=timings,
        examples_per_second=out["examples_per_second"],
        lca_L=lca_L,
        lca_kept=filter_oscillatory(lca_L),
    )


def cluster_all(
    L: np.ndarray, kept: np.ndarray, min_cluster_size: int, normalize: str | None = "max"
) -> dict[int, np.ndarray]:
    return {int(b): cluster_trajectories(L[b], min_cluster_size, normalize=normalize) for b in kept}
