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

from iclr26 import validation as V

SCHEDULES = ("uniform", "cyclic", "depth_biased")


def depth_costs(n_blocks: int, depth_bias: float) -> np.ndarray:
    """tau_i = N + c (N - i)."""
    n_blocks = V.check_int(n_blocks, "n_blocks", low=1)
    depth_bias = V.check_scalar(depth_bias, "depth_bias", low=0.0)
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
        n_blocks = V.check_int(n_blocks, "n_blocks", low=1)
        if not callable(rule):
            V.check_choice(rule, "schedule", SCHEDULES)
        # NaN is refused here: with depth_bias = NaN every clock is NaN and argmin picks
        # block 0 forever
        depth_bias = V.check_scalar(depth_bias, "depth_bias", low=0.0)
        if max_staleness is not None:
            max_staleness = V.check_int(max_staleness, "max_staleness", low=n_blocks)
        seed = V.check_int(seed, "seed", low=0)
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

    def state_dict(self) -> dict:
        """Everything the schedule's future picks depend on (clock, step, gaps, RNG)."""
        return {
            "n_blocks": self.n_blocks,
            "k": self.k,
            "clock": self.clock.tolist(),
            "last_visit": self.last_visit.tolist(),
            "visit_counts": self.visit_counts.tolist(),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        if int(state["n_blocks"]) != self.n_blocks:
            raise ValueError(
                f"state has {state['n_blocks']} blocks, this schedule has {self.n_blocks}"
            )
        self.k = int(state["k"])
        self.clock = np.asarray(state["clock"], dtype=np.float64)
        self.last_visit = np.asarray(state["last_visit"], dtype=np.int64)
        self.visit_counts = np.asarray(state["visit_counts"], dtype=np.int64)
        self.rng.bit_generator.state = state["rng"]

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
