"""Finite episodic MDPs as outcome tables with integer rewards, shared by the envs, the
learners (which sample R independent copies of an env in lock-step from its table) and the
exact solvers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EpisodicTable:
    """Outcomes of every (s, a): probability, next state, reward, terminated ([S, A, K]).

    Episodes start in ``start_state`` and are truncated after ``horizon`` steps.
    """

    prob: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    start_state: int
    horizon: int
    name: str = "episodic"

    def __post_init__(self) -> None:
        prob = np.asarray(self.prob, dtype=float)
        if prob.ndim != 3:
            raise ValueError(f"prob must have shape [S, A, K], got {prob.shape}")
        for key in ("next_state", "reward", "terminal"):
            if np.shape(getattr(self, key)) != prob.shape:
                raise ValueError(
                    f"{key} has shape {np.shape(getattr(self, key))}, prob has {prob.shape}"
                )
        if np.any(prob < 0) or not np.allclose(prob.sum(-1), 1.0):
            raise ValueError("outcome probabilities must be non-negative and sum to 1")
        nxt = np.asarray(self.next_state)
        if nxt.min() < 0 or nxt.max() >= prob.shape[0]:
            raise ValueError("next_state indices must lie in [0, S)")
        if not (0 <= int(self.start_state) < prob.shape[0]):
            raise ValueError("start_state must be a valid state index")
        if int(self.horizon) < 1:
            raise ValueError("horizon must be >= 1")
        object.__setattr__(self, "prob", prob)
        object.__setattr__(self, "next_state", nxt.astype(np.int64))
        object.__setattr__(self, "reward", np.asarray(self.reward, dtype=float))
        object.__setattr__(self, "terminal", np.asarray(self.terminal, dtype=bool))

    @property
    def n_states(self) -> int:
        return self.prob.shape[0]

    @property
    def n_actions(self) -> int:
        return self.prob.shape[1]

    def return_bounds(self) -> tuple[int, int]:
        """Bounds [G_min, G_max] on the return-to-go from any state within the horizon."""
        lo = np.zeros(self.n_states)
        hi = np.zeros(self.n_states)
        live = self.prob > 0
        for _ in range(self.horizon):
            cont = ~self.terminal
            lo_sa = np.where(live, self.reward + cont * lo[self.next_state], np.inf).min(-1)
            hi_sa = np.where(live, self.reward + cont * hi[self.next_state], -np.inf).max(-1)
            lo, hi = np.minimum(lo_sa.min(-1), 0.0), np.maximum(hi_sa.max(-1), 0.0)
        return int(np.floor(lo.min())), int(np.ceil(hi.max()))


class TableSampler:
    """R independent copies of an episodic env, stepped in lock-step from its table."""

    def __init__(self, table: EpisodicTable, n_copies: int, rng: np.random.Generator):
        self.table = table
        self.R = int(n_copies)
        self.rng = rng
        self.cum = np.cumsum(table.prob, axis=-1)
        self.cum[..., -1] = np.inf
        self.state = np.full(self.R, table.start_state)
        self.t = np.zeros(self.R, dtype=int)

    def step(self, action: np.ndarray):
        """Returns (next_state, reward, terminated, truncated) arrays of length R."""
        s = self.state
        k = (self.rng.random((self.R, 1)) >= self.cum[s, action]).sum(-1)
        nxt = self.table.next_state[s, action, k]
        rew = self.table.reward[s, action, k]
        term = self.table.terminal[s, action, k]
        self.t += 1
        trunc = ~term & (self.t >= self.table.horizon)
        done = term | trunc
        self.state = np.where(done, self.table.start_state, nxt)
        self.t = np.where(done, 0, self.t)
        return nxt, rew, term, trunc
