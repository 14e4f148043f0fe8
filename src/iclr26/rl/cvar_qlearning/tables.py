"""Finite episodic MDPs as outcome tables with integer rewards, shared by the envs, the
learners (which sample R independent copies of an env in lock-step from its table) and the
exact solvers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V


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
        prob = V.check_array(self.prob, "prob", ndim=3, dtype=np.float64, low=0.0)
        if not np.allclose(prob.sum(-1), 1.0):
            worst = float(np.abs(prob.sum(-1) - 1.0).max())
            raise ValueError(
                f"prob must sum to 1 over the outcomes of every (s, a); off by up to {worst:.3g}"
            )
        nxt = V.check_array(self.next_state, "next_state", shape=prob.shape, dtype=None)
        if nxt.dtype.kind not in "iu":
            if nxt.dtype.kind != "f" or np.any(nxt != np.rint(nxt)):
                raise TypeError(f"next_state must hold integer state indices, got {nxt.dtype}")
        V.check_array(nxt, "next_state", low=0, high=prob.shape[0] - 1)
        reward = V.check_array(self.reward, "reward", shape=prob.shape, dtype=np.float64)
        term = V.check_array(self.terminal, "terminal", shape=prob.shape, dtype=None)
        if term.dtype.kind != "b" and not np.isin(term, (0, 1)).all():
            raise TypeError(f"terminal must hold booleans, got {term.dtype}")
        V.check_int(self.start_state, "start_state", low=0, high=prob.shape[0] - 1)
        V.check_int(self.horizon, "horizon", low=1)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        object.__setattr__(self, "prob", prob)
        object.__setattr__(self, "next_state", nxt.astype(np.int64))
        object.__setattr__(self, "reward", reward)
        object.__setattr__(self, "terminal", term.astype(bool))
        object.__setattr__(self, "start_state", int(self.start_state))
        object.__setattr__(self, "horizon", int(self.horizon))

    @property
    def n_states(self) -> int:
        return self.prob.shape[0]

    @property
    def n_actions(self) -> int:
        return self.prob.shape[1]

    def return_range(self) -> tuple[float, float]:
        """Exact bounds [G_min, G_max] on every partial sum of rewards within the horizon,
        from any state (0, the empty sum, included): every budget a policy can carry from
        a grid budget eta stays within [eta - G_max, eta - G_min]."""
        lo = np.zeros(self.n_states)
        hi = np.zeros(self.n_states)
        live = self.prob > 0
        for _ in range(self.horizon):
            cont = ~self.terminal
            lo_sa = np.where(live, self.reward + cont * lo[self.next_state], np.inf).min(-1)
            hi_sa = np.where(live, self.reward + cont * hi[self.next_state], -np.inf).max(-1)
            lo, hi = np.minimum(lo_sa.min(-1), 0.0), np.maximum(hi_sa.max(-1), 0.0)
        return float(lo.min()), float(hi.max())

    def return_bounds(self) -> tuple[int, int]:
        """Integer bounds [floor G_min, ceil G_max] of :meth:`return_range`."""
        lo, hi = self.return_range()
        return int(np.floor(lo)), int(np.ceil(hi))


class TableSampler:
    """R independent copies of an episodic env, stepped in lock-step from its table."""

    def __init__(self, table: EpisodicTable, n_copies: int, rng: np.random.Generator):
        if not isinstance(table, EpisodicTable):
            raise TypeError(f"table must be an EpisodicTable, got {type(table).__name__}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.table = table
        self.R = V.check_int(n_copies, "n_copies", low=1)
        self.rng = rng
        self.cum = np.cumsum(table.prob, axis=-1)
        self.cum[..., -1] = np.inf
        self.state = np.full(self.R, table.start_state)
        self.t = np.zeros(self.R, dtype=int)

    def step(self, action: np.ndarray):
        """Returns (next_state, reward, terminated, truncated) arrays of length R."""
        action = V.check_array(action, "action", shape=(self.R,), dtype=None)
        if action.dtype.kind not in "iu":
            raise TypeError(f"action must hold integer actions, got {action.dtype}")
        V.check_array(action, "action", low=0, high=self.table.n_actions - 1)
        return self._step(action)

    def _step(self, action: np.ndarray):
        """:meth:`step` without the input checks (the learners' inner loop)."""
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
