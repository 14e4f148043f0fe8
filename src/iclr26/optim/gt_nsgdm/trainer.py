"""Decentralized training of ``nn.Module`` replicas: one node per data shard.

Each node's oracle holds its own model replica and shard; given the node's flat parameter
vector it loads it, draws a mini-batch from its own stream (seeded by (seed, node)) and returns
the flat gradient. The algorithm itself only sees flat vectors, so the same update rule runs
with the ``local`` backend (all nodes in this process) or the ``ray`` backend (one actor per
node).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from iclr26.optim.gt_nsgdm.algorithms import make_algorithm
from iclr26.optim.gt_nsgdm.backends import RayNetwork, consensus_error


def lm_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Next-token loss of a Hugging Face causal LM on a [B, T] batch of ids."""
    return model(input_ids=batch, labels=batch).loss


class ModuleOracle:
    """Stochastic gradient of one node's loss on its own shard (a 1-D token array)."""

    def __init__(
        self,
        model_factory: Callable[[], torch.nn.Module],
        shard: np.ndarray,
        batch_size: int,
        context: int,
        seed: int,
        node: int,
        loss_fn: Callable = lm_loss,
    ):
        if len(shard) <= context + 1:
            raise ValueError(f"shard of node {node} is shorter than the context")
        self.model_factory, self.shard = model_factory, np.asarray(shard)
        self.batch_size, self.context, self.loss_fn = batch_size, context, loss_fn
        self.rng = np.random.default_rng([seed, node])
        self.model = None

    def _ensure(self):
        if self.model is None:
            self.model = self.model_factory()
            self.model.train()

    def __call__(self, i: int, x: torch.Tensor, t: int) -> torch.Tensor:
        self._ensure()
        params = list(self.model.parameters())
        with torch.no_grad():
            vector_to_parameters(x.to(params[0].dtype), params)
        starts = self.rng.integers(0, len(self.shard) - self.context, size=self.batch_size)
        batch = torch.from_numpy(self.shard[starts[:, None] + np.arange(self.context)])
        batch = batch.long()
        for p in params:
            p.grad = None
        self.loss_fn(self.model, batch).backward()
        return torch.cat([p.grad.reshape(-1) for p in params]).to(x.dtype)


class _Nodes:
    def __init__(self, oracles):
        self.oracles, self.t = oracles, 0

    def all_nodes(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.stack([o(i, x[i], self.t) for i, o in enumerate(self.oracles)])
        self.t += 1
        return g


class DecentralizedTrainer:
    """Train n replicas of ``model_factory()`` over the graph W, one shard per node.

    ``fit(steps, eval_fn)`` returns per-evaluation records with the averaged model's
    ``eval_fn`` numbers and the consensus error."""

    def __init__(
        self,
        model_factory: Callable[[], torch.nn.Module],
        shards: Sequence[np.ndarray],
        W,
        algorithm: str = "gt_nsgdm",
        lr: float = 1e-3,
        beta: float = 0.9,
        backend: str = "local",
        batch_size: int = 16,
        context: int = 64,
        seed: int = 0,
        loss_fn: Callable = lm_loss,
        **algo_kwargs: Any,
    ):
        if backend not in ("local", "ray"):
            raise ValueError("backend must be 'local' or 'ray'")
        kwargs = dict(algo_kwargs)
        if algorithm in ("gt_nsgdm", "d_nsgdm"):
            kwargs["beta"] = beta
        self.algo = make_algorithm(algorithm, W, lr=lr, **kwargs)
        if len(shards) != self.algo.n:
            raise ValueError(f"need one shard per node ({self.algo.n}), got {len(shards)}")
        torch.manual_seed(seed)
        self.template = model_factory()
        self.x0 = parameters_to_vector(self.template.parameters()).detach().clone()
        self.oracles = [
            ModuleOracle(model_factory, s, batch_size, context, seed, i, loss_fn)
            for i, s in enumerate(shards)
        ]
        if backend == "local":  # nodes take turns on one worker replica (weights loaded each call)
            worker = model_factory()
            worker.train()
            for oracle in self.oracles:
                oracle.model = worker
        self.backend = backend

    def averaged_model(self, x: torch.Tensor) -> torch.nn.Module:
        vector_to_parameters(x.mean(0).to(self.x0.dtype), self.template.parameters())
        return self.template

    def fit(
        self,
        steps: int,
        eval_fn: Callable[[torch.nn.Module], dict] | None = None,
        eval_every: int | None = None,
    ) -> list[dict]:
        eval_every = eval_every or max(1, steps // 10)
        history: list[dict] = []

        def log(t: int, x: torch.Tensor) -> None:
            entry = {"step": t, "consensus": float(consensus_error(x))}
            if eval_fn is not None:
                entry.update(eval_fn(self.averaged_model(x)))
            history.append(entry)

        if self.backend == "local":
            nodes = _Nodes(self.oracles)
            state = self.algo.init(self.x0)
            for t in range(steps):
                self.algo.step(state, nodes.all_nodes(state["x"]))
                if (t + 1) % eval_every == 0 or t + 1 == steps:
                    log(t + 1, state["x"])
            self.x = state["x"]
        else:
            net = RayNetwork(self.algo, self.oracles, self.x0)
            try:
                for t in range(steps):
                    net.step()
                    if (t + 1) % eval_every == 0 or t + 1 == steps:
                        log(t + 1, net.iterates())
                self.x = net.iterates()
            finally:
                net.shutdown()
        return history
