"""Block-selection rules: uniform, cyclic and the depth-biased "next-available-time" rule.

Depth-biased (the paper's default): block i (0 = next to the input, N - 1 = next to the output)
costs tau_i = N + c (N - i) (a forward through N layers plus a backward through N - i of them).
Each block keeps a clock T_i, initialised to tau_i; each step picks argmin_i T_i (ties to the
lowest index) and adds tau_i to its clock, so block i is visited at a rate proportional to
1 / tau_i and deep, cheap-to-backpropagate blocks more often.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SCHEDULES = ("uniform", "cyclic", "depth_biased")


def depth_costs(n_blocks: int, depth_bias: float) -> np.ndarray:
    """tau_i = N + c (N - i)."""
    i = np.arange(n_blocks)
    return n_blocks + depth_bias * (n_blocks - i)


class BlockSchedule:
    """Picks the block of each step; ``max_staleness=B`` (>= the number of blocks) guarantees
    that every block is visited at least once in any B consecutive steps (the bounded-gap
    condition of the convergence theory) by forcing the most overdue block."""

    def __init__(
        self,
        n_blocks: int,
        rule: str | Callable = "depth_biased",
        depth_bias: float = 10.0,
        max_staleness: int | None = None,
        seed: int = 0,
    ):
        if n_blocks < 1:
            raise ValueError("need at least one block")
        if not callable(rule) and rule not in SCHEDULES:
            raise ValueError(
                f"unknown schedule {rule!r}; valid: {', '.join(SCHEDULES)} or a callable"
            )
        if depth_bias < 0:
            raise ValueError("depth_bias must be >= 0")
        if max_staleness is not None and max_staleness < n_blocks:
            raise ValueError("max_staleness must be >= the number of blocks")
        self.n_blocks, self.rule, self.max_staleness = n_blocks, rule, max_staleness
        self.costs = depth_costs(n_blocks, depth_bias)
        self.clock = self.costs.copy()
        self.rng = np.random.default_rng(seed)
        self.k = 0
        self.last_visit = np.full(n_blocks, -1)
        self.visit_counts = np.zeros(n_blocks, dtype=np.int64)

    def _pick(self) -> int:
        if callable(self.rule):
            i = int(self.rule(self.k, self))
            if not 0 <= i < self.n_blocks:
                raise ValueError(f"schedule returned block {i}, outside [0, {self.n_blocks})")
            return i
        if self.rule == "uniform":
            return int(self.rng.integers(self.n_blocks))
        if self.rule == "cyclic":
            return self.k % self.n_blocks
        i = int(np.argmin(self.clock))  # argmin returns the lowest index on ties
        self.clock[i] += self.costs[i]
        return i

    def next(self) -> int:
        """The block of step k (then k advances)."""
        if self.max_staleness is not None:
            # force a block once its gap reaches B - N + 1: at most N blocks are ever overdue
            # together and each waits at most N - 1 more steps, so every gap stays <= B
            gaps = self.k - self.last_visit
            stale = np.flatnonzero(gaps >= self.max_staleness - self.n_blocks + 1)
            i = int(stale[np.argmax(gaps[stale])]) if stale.size else self._pick()
        else:
            i = self._pick()
        self.last_visit[i] = self.k
        self.visit_counts[i] += 1
        self.k += 1
        return i
