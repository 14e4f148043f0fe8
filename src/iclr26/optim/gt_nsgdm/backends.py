"""Two backends for one update rule: all nodes in one process, or one Ray actor per node.

``run_local`` keeps every node's state as rows of ``[..., n, d]`` tensors (a leading grid axis
runs several step sizes at once on the same noise). ``RayNetwork`` gives each node an actor that
holds its oracle and state; in each synchronous round an actor publishes its message, then
pulls only its neighbours' messages (object references) and mixes them in the same order as
the local backend, so equal seeds give the same trajectory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from iclr26 import validation as V
from iclr26.optim.gt_nsgdm.algorithms import DecentralizedAlgorithm

Oracle = Callable[[int, torch.Tensor, int], torch.Tensor]


def consensus_error(x: torch.Tensor) -> torch.Tensor:
    """(1/n) sum_i ||x_i - xbar||^2 over the node axis (-2)."""
    x = V.check_tensor(x, "x", min_ndim=2, floating=True)
    return ((x - x.mean(-2, keepdim=True)) ** 2).sum(-1).mean(-1)


def run_local(
    algo: DecentralizedAlgorithm,
    oracle,
    x0: torch.Tensor,
    steps: int,
    per_node: bool = False,
    record: Callable[[int, dict], None] | None = None,
    allow_nonfinite: bool = False,
) -> dict:
    """Run ``steps`` rounds in-process. ``oracle.all_nodes(x)`` gives every node's stochastic
    gradient at once unless ``per_node`` (then ``oracle(i, x_i, t)`` node by node, exactly as
    the Ray actors call it). A non-finite gradient (a diverged run) is an error naming the
    step unless ``allow_nonfinite`` (step-size grids that let some runs diverge)."""
    if not isinstance(algo, DecentralizedAlgorithm):
        raise TypeError(f"algo must be a DecentralizedAlgorithm, got {type(algo).__name__}")
    per_node = V.check_bool(per_node, "per_node")
    V.check_module_attrs(oracle, "oracle", ("__call__",) if per_node else ("all_nodes",))
    steps = V.check_int(steps, "steps", low=0)
    if record is not None and not callable(record):
        raise TypeError("record must be callable or None")
    allow_nonfinite = V.check_bool(allow_nonfinite, "allow_nonfinite")
    state = algo.init(x0)
    for t in range(steps):
        if per_node:
            grads = torch.stack([oracle(i, state["x"][i], t) for i in range(algo.n)])
        else:
            grads = oracle.all_nodes(state["x"])
        if not allow_nonfinite and not bool(torch.isfinite(grads).all()):
            raise ValueError(
                f"oracle returned a non-finite gradient at step {t}: the run diverged (lower "
                "lr, or pass allow_nonfinite=True to keep going)"
            )
        algo.step(state, grads)
        if record is not None:
            record(t, state)
    return state


class _NodeActor:
    """One node: its oracle, its rows of the state, its neighbour list."""

    def __init__(
        self,
        algo: DecentralizedAlgorithm,
        node: int,
        oracle,
        x0: torch.Tensor,
        threads: int | None = 1,
    ):
        if threads:
            torch.set_num_threads(threads)
        self.algo, self.i, self.oracle = algo, node, oracle
        full = algo.init(x0.reshape(1, -1).expand(algo.n, -1).clone())
        self.s = {
            k: (v[node : node + 1].clone() if isinstance(v, torch.Tensor) else v)
            for k, v in full.items()
        }
        idx, wt = algo.slots
        self.weights = wt[node]

    def _mix(self, messages: tuple[torch.Tensor, ...]) -> torch.Tensor:
        out = torch.zeros_like(messages[0])
        for w, m in zip(self.weights, messages):
            out = out + w.to(m.dtype) * m
        return out

    def phase1(self):
        t = self.s["t"]
        g = self.oracle(self.i, self.s["x"][0], t).reshape(1, -1)
        return self.algo.phase1(self.s, g, t)

    def mix1(self, *messages):
        self.algo.after_mix1(self.s, self._mix(messages))
        return True

    def phase2(self):
        return self.algo.phase2(self.s, self.s["t"])

    def mix2(self, *messages):
        self.algo.after_mix2(self.s, self._mix(messages), self.s["t"])
        self.s["t"] += 1
        return True

    def x(self) -> torch.Tensor:
        return self.s["x"][0].clone()


class RayNetwork:
    """One Ray actor per node, synchronous rounds over the communication graph."""

    def __init__(
        self,
        algo: DecentralizedAlgorithm,
        oracles: list | Any,
        x0: torch.Tensor,
        threads: int | None = 1,
    ):
        if not isinstance(algo, DecentralizedAlgorithm):
            raise TypeError(f"algo must be a DecentralizedAlgorithm, got {type(algo).__name__}")
        oracles = oracles if isinstance(oracles, list) else [oracles] * algo.n
        if len(oracles) != algo.n:
            raise ValueError(
                f"oracles must hold one oracle per node ({algo.n}), got {len(oracles)}"
            )
        for oracle in oracles:
            V.check_module_attrs(oracle, "oracles", ("__call__",))
        x0 = V.check_tensor(x0, "x0", ndim=1, floating=True)
        if threads is not None:
            threads = V.check_int(threads, "threads", low=1)
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayNetwork needs ray.init() first")
        self.algo = algo
        actor = ray.remote(num_cpus=0)(_NodeActor)
        self.actors = [actor.remote(algo, i, oracles[i], x0, threads) for i in range(algo.n)]
        self.slots = algo.slots[0].tolist()

    def _exchange(self, refs, method: str):
        import ray

        done = [
            getattr(a, method).remote(*[refs[r] for r in self.slots[i]])
            for i, a in enumerate(self.actors)
        ]
        ray.get(done)

    def step(self) -> None:
        refs = [a.phase1.remote() for a in self.actors]
        if self.algo.tracks:
            self._exchange(refs, "mix1")
        else:
            import ray

            ray.get(refs)
        self._exchange([a.phase2.remote() for a in self.actors], "mix2")

    def run(self, steps: int) -> torch.Tensor:
        for _ in range(steps):
            self.step()
        return self.iterates()

    def iterates(self) -> torch.Tensor:
        import ray

        return torch.stack(ray.get([a.x.remote() for a in self.actors]))

    def shutdown(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []
