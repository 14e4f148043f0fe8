"""Tabular CVaR Q-learners on the budget-augmented state, vectorised over R replications.

``PredictiveCVaRQLearning`` learns the tail probability F and tail value H with the
per-step recursion of :mod:`.predictive_tail`, relabels every transition for every grid
budget (so each sampled trajectory teaches all budgets) and explores the initial budget
as well as actions (two-way exploration). ``AugmentedCVaRQLearning`` is the usual baseline:
it learns the shortfall L(s, a, eta) whose only reward is the terminal shortfall
(eta_T)_+, updates the followed budget only, and starts from the greedy budget.
Each learner runs R independent copies of the env in lock-step from the env's table.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod

import gymnasium as gym
import numpy as np

from iclr26 import validation as V

from .dp import (
    _check_augmented,
    check_grid_covers,
    default_grid,
    empirical_cvar,
    monte_carlo_returns,
)
from .envs import table_behind
from .predictive_tail import (
    BudgetGrid,
    bootstrap_targets,
    check_risk_level,
    clamped_tail,
    cvar_from_shortfall,
    greedy_action,
    initial_budget,
    interpolation,
    lerp,
    shortfall,
    terminal_targets,
)
from .tables import EpisodicTable, TableSampler


def table_of(env) -> EpisodicTable:
    """The outcome table behind an env (or the table itself).

    The env may carry the wrappers ``gym.make`` adds (PassiveEnvChecker, OrderEnforcing,
    TimeLimit); a ``TimeLimit`` shorter than the table's horizon shortens the horizon of the
    returned table. Any other wrapper is refused with a ``TypeError`` naming it: the
    learners sample from the table and would otherwise ignore it."""
    if isinstance(env, EpisodicTable):
        return env
    if not isinstance(env, gym.Env):
        raise TypeError(
            f"env must be a gymnasium.Env or an EpisodicTable, got {type(env).__name__}"
        )
    table, limit = table_behind(env)
    if limit is not None and limit < table.horizon:
        table = dataclasses.replace(table, horizon=limit)
    return table


def _pair(value, name: str) -> tuple[float, float]:
    """An exploration rate (start, end) with both ends in [0, 1]; a number means constant."""
    if isinstance(value, str) or not (np.isscalar(value) or np.ndim(value) == 1):
        raise TypeError(f"{name} must be a number or a (start, end) pair, got {value!r}")
    pair = (value, value) if np.isscalar(value) else tuple(value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be a number or a (start, end) pair, got {value!r}")
    start = V.check_probability(pair[0], f"{name}[0]")
    end = V.check_probability(pair[1], f"{name}[1]")
    return start, end


def _flags(value, R: int, name: str) -> np.ndarray:
    """A flag for every replication (a scalar applies to all); lets one vectorised run hold
    several ablation settings side by side."""
    if isinstance(value, bool | np.bool_):
        return np.full(R, bool(value))
    flags = np.asarray(value)
    if flags.ndim == 0 or flags.dtype.kind != "b":
        raise TypeError(f"{name} must be a bool or a sequence of {R} bools, got {value!r}")
    if flags.shape != (R,):
        raise ValueError(f"{name} must be a bool or a sequence of {R} bools, got {flags.shape}")
    return flags.copy()


class _BudgetLearner(ABC):
    """Shared episode loop, exploration and risk-neutral Q of the budget-augmented learners."""

    def __init__(
        self,
        q: float = 0.1,
        eta_grid: BudgetGrid | None = None,
        lr: float = 0.1,
        epsilon=(0.3, 0.02),
        budget_epsilon=(0.5, 0.05),
        relabel: bool = True,
        budget_exploration: bool = True,
        n_replications: int = 1,
        seed: int | None = 0,
    ) -> None:
        self.q = check_risk_level(q)
        if eta_grid is not None and not isinstance(eta_grid, BudgetGrid):
            raise TypeError(f"eta_grid must be a BudgetGrid or None, got {eta_grid!r}")
        self.eta_grid = eta_grid
        self.lr = V.check_scalar(lr, "lr", low=0.0, high=1.0, low_open=True)
        self.epsilon = _pair(epsilon, "epsilon")
        self.budget_epsilon = _pair(budget_epsilon, "budget_epsilon")
        self.n_replications = V.check_int(n_replications, "n_replications", low=1)
        seed = V.check_int(seed, "seed", low=0, allow_none=True)
        self.relabel = _flags(relabel, self.n_replications, "relabel")
        self.budget_exploration = _flags(
            budget_exploration, self.n_replications, "budget_exploration"
        )
        self.seed = seed

    # -- what each learner defines ----------------------------------------------------------
    @abstractmethod
    def _init_tables(self, R: int, S: int, A: int, K: int) -> None:
        """Allocate the learner's tables for R replications."""

    @abstractmethod
    def _grid_shortfall(self, rep: np.ndarray, state: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Table shortfall L at in-grid indices j; output [..., A] for index arrays [...]."""

    @abstractmethod
    def _learn(self, rr, s, a, r, shift, s2, term, active, budget) -> int:
        """Update the tables from R transitions; returns the number of entries updated."""

    # -- shared machinery -----------------------------------------------------------------
    def shortfall_at(self, rep: np.ndarray, state: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """L(s, ., eta) with the off-grid rules; index arrays of equal shape -> [..., A]."""
        rep, state, eta = self._check_augmented(rep, state, eta)
        return self._shortfall_idx(rep, state, self._position(eta))

    def _check_augmented(self, rep, state, eta):
        """Replication indices, states and finite budgets of one shape (public entries)."""
        self._check_fitted()
        state, eta = _check_augmented(state, eta, self.table_.n_states)
        rep = V.check_array(rep, "rep", dtype=None, min_rows=0)
        if rep.dtype.kind not in "iu":
            raise TypeError(f"rep must hold integer replication indices, got {rep.dtype}")
        if rep.shape != state.shape:
            raise ValueError(f"rep must have the shape of state {state.shape}, got {rep.shape}")
        if rep.size:
            V.check_array(rep, "rep", low=0, high=self.n_replications - 1, min_rows=0)
        return rep, state, eta

    def _check_replication(self, replication) -> int:
        return V.check_int(replication, "replication", low=0, high=self.n_replications - 1)

    def _check_obs(self, obs, name: str = "obs") -> int:
        return V.check_int(obs, name, low=0, high=self.table_.n_states - 1)

    def _position(self, eta: np.ndarray) -> np.ndarray:
        """Integer lattice index of budgets, or the fractional position when the env's
        rewards are off the grid lattice (interpolation mode)."""
        if getattr(self, "interpolate_", False):
            return self.grid_.position(eta)
        return self.grid_.index(eta)

    def _interp_shortfall(self, rep, state, j0, w, u) -> np.ndarray:
        """L between grid budgets j0 and j0 + 1 (weight w); the default interpolates L."""
        K = self.grid_.size
        left = self._grid_shortfall(rep, state, j0)
        return lerp(left, self._grid_shortfall(rep, state, np.minimum(j0 + 1, K - 1)), w)

    def _shortfall_idx(self, rep, state, j) -> np.ndarray:
        """L at budget lattice indices j, or fractional positions j (linear interpolation),
        possibly off the grid: below 0, above eta - Q."""
        K = self.grid_.size
        if np.issubdtype(np.asarray(j).dtype, np.floating):
            j0, w, below, above = interpolation(j, K)
            inside = self._interp_shortfall(rep, state, j0, w, j)
        else:
            below, above = j < 0, j >= K
            inside = self._grid_shortfall(rep, state, np.minimum(np.maximum(j, 0), K - 1))
        if not (below.any() or above.any()):
            return inside
        qn = self.q_neutral_[rep, state]
        eta = (self.grid_.lo + self.grid_.step * j)[..., None]
        return np.where(above[..., None], eta - qn, np.where(below[..., None], 0.0, inside))

    def act_batch(self, rep: np.ndarray, state: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """Greedy actions at augmented states (the learned policy, no exploration)."""
        rep, state, eta = self._check_augmented(rep, state, eta)
        return self._act_idx(rep, state, self._position(eta))

    def _act_idx(self, rep, state, j) -> np.ndarray:
        return greedy_action(self._shortfall_idx(rep, state, j), self.q_neutral_[rep, state])

    def initial_budgets(self) -> np.ndarray:
        """eta0* = argmax_eta {eta - min_a L(s0, a, eta) / q} for every replication [R]."""
        self._check_fitted()
        R, s0 = self.n_replications, self.table_.start_state
        rep, k = np.indices((R, self.grid_.size))
        loss = self._grid_shortfall(rep, np.full_like(rep, s0), k).min(-1)
        return self.grid_.values[initial_budget(self.grid_.values, loss, self.q)]

    def initial_budget(self, obs: int | None = None, replication: int = 0) -> float:
        self._check_fitted()
        replication = self._check_replication(replication)
        if obs is not None and self._check_obs(obs) != self.table_.start_state:
            raise ValueError(
                f"obs must be the start state {self.table_.start_state} (the initial budget "
                f"is defined there), got {obs!r}"
            )
        return float(self.initial_budgets()[replication])

    def predict(self, obs: int, budget: float, replication: int = 0) -> tuple[int, float]:
        """Greedy action at (obs, budget); the caller updates budget <- budget - reward."""
        self._check_fitted()
        obs = self._check_obs(obs)
        budget = V.check_scalar(budget, "budget")
        replication = self._check_replication(replication)
        a = self.act_batch(np.array([replication]), np.array([obs]), np.array([budget]))
        return int(a[0]), float(budget)

    def cvar_estimate(self, obs: int | None = None, replication: int = 0) -> float:
        """The agent's own CVaR estimate max_eta {eta - min_a L(s0, a, eta) / q}."""
        self._check_fitted()
        replication = self._check_replication(replication)
        s = self.table_.start_state if obs is None else self._check_obs(obs)
        k = np.arange(self.grid_.size)
        loss = self._grid_shortfall(np.full_like(k, replication), np.full_like(k, s), k)
        return float(cvar_from_shortfall(self.grid_.values, loss.min(-1), self.q))

    def _check_fitted(self) -> None:
        if not hasattr(self, "table_"):
            raise RuntimeError("call learn() first")

    def learn(self, env, n_episodes: int):
        """Train every replication for ``n_episodes`` episodes; returns self.

        ``env``: an :class:`EpisodicTable` or an env of this module, as ``gym.make`` returns
        it (see :func:`table_of`: a shorter ``TimeLimit`` is honoured, other wrappers are
        refused). ``eta_grid`` must cover the env's return range."""
        n_episodes = V.check_int(n_episodes, "n_episodes", low=1)
        table = table_of(env)
        if self.eta_grid is None:
            grid = default_grid(table)
        else:
            grid = check_grid_covers(self.eta_grid, table, "eta_grid")
        # rewards off the grid lattice: fractional budget positions, linear interpolation
        self.interpolate_ = not grid.on_lattice(table.reward)
        self.table_, self.grid_ = table, grid
        R, S, A, K, N = (
            self.n_replications,
            table.n_states,
            table.n_actions,
            grid.size,
            int(n_episodes),
        )
        rng = np.random.default_rng(self.seed)
        self.q_neutral_ = np.zeros((R, S, A))
        self._init_tables(R, S, A, K)
        sampler = TableSampler(table, R, rng)
        rr = np.arange(R)
        episodes = np.zeros(R, dtype=np.int64)
        self._step = grid.step
        budget = self._start_budgets(rng, rr, episodes, N)  # lattice indices (or positions)
        steps = updates = 0
        started = time.perf_counter()
        while True:
            active = episodes < N
            if not active.any():
                break
            frac = np.minimum(episodes / max(N - 1, 1), 1.0)
            eps = self.epsilon[0] + (self.epsilon[1] - self.epsilon[0]) * frac
            s = sampler.state.copy()
            a = self._act_idx(rr, s, budget)
            explore = rng.random(R) < eps
            a = np.where(explore, rng.integers(0, A, R), a)
            s2, r, term, trunc = sampler._step(a)
            shift = (
                grid.offset(r) if self.interpolate_ else np.rint(-r / grid.step).astype(np.int64)
            )
            updates += self._learn(rr, s, a, r, shift, s2, term, active, budget)
            # risk-neutral Q (tie-breaking and the above-grid continuation)
            target = r + (~term) * self.q_neutral_[rr, s2].max(-1)
            cur = self.q_neutral_[rr, s, a]
            self.q_neutral_[rr, s, a] = cur + self.lr * active * (target - cur)
            steps += int(active.sum())
            budget = budget + shift
            done = term | trunc
            episodes += done & active
            if done.any():
                ended = rr[done]
                budget[ended] = self._start_budgets(rng, ended, episodes[ended], N)
        self.elapsed_s_ = time.perf_counter() - started
        self.env_steps_ = steps
        self.table_updates_ = updates
        self.updates_per_second_ = updates / max(self.elapsed_s_, 1e-12)
        return self

    def _start_budgets(self, rng, reps, episodes, N) -> np.ndarray:
        """Lattice indices of the initial budgets of replications ``reps`` (two-way
        exploration: a uniform grid budget with probability eps_eta, else the greedy one)."""
        R, s0, K = reps.size, self.table_.start_state, self.grid_.size
        rep = np.broadcast_to(reps[:, None], (R, K))
        k = np.broadcast_to(np.arange(K), (R, K))
        loss = self._grid_shortfall(rep, np.full((R, K), s0), k).min(-1)
        greedy = initial_budget(self.grid_.values, loss, self.q)
        frac = np.minimum(episodes / max(N - 1, 1), 1.0)
        eps = self.budget_epsilon[0] + (self.budget_epsilon[1] - self.budget_epsilon[0]) * frac
        explore = self.budget_exploration[reps] & (rng.random(R) < eps)
        start = np.where(explore, rng.integers(0, K, R), greedy)
        return start.astype(float) if self.interpolate_ else start

    def _targets_mask(self, active: np.ndarray, budget: np.ndarray) -> np.ndarray:
        """Which grid budgets each replication updates: all (relabel) or the followed one;
        a followed budget between grid points splits its update over the two neighbours
        with the interpolation weights (float mask)."""
        K = self.grid_.size
        if np.issubdtype(budget.dtype, np.floating):
            j0, w, below, above = interpolation(budget, K)
            k = np.arange(K)[None, :]
            inside = ~(below | above)[:, None]
            near = (k == j0[:, None]) * (1 - w[:, None]) + (k == j0[:, None] + 1) * w[:, None]
            followed = np.where(self.relabel[:, None], 1.0, near * inside)
            return active[:, None] * followed
        followed = np.arange(K)[None, :] == budget[:, None]
        return active[:, None] & (self.relabel[:, None] | followed)

    def _next_greedy(self, rr, r, shift, s2):
        """Next budgets eta' = eta_k - r for all k, their indices and greedy actions."""
        grid = self.grid_
        j2 = np.arange(grid.size)[None, :] + shift[:, None]  # [R, K]
        eta2 = grid.values[None, :] - r[:, None]
        rep = rr[:, None]
        st = s2[:, None]
        loss = self._shortfall_idx(rep, st, j2)  # [R, K, A]
        a2 = greedy_action(loss, self.q_neutral_[rr, s2][:, None, :])
        return j2, eta2, a2, loss


class PredictiveCVaRQLearning(_BudgetLearner):
    """Predictive CVaR Q-learning: tail probability F and tail value H tables (stored as
    [R, S, K, A] so a budget row of all actions is contiguous) trained on all-budget
    relabelled targets, with two-way (action x budget) exploration."""

    def _init_tables(self, R, S, A, K) -> None:
        self.tail_prob_ = np.zeros((R, S, K, A))
        self.tail_value_ = np.zeros((R, S, K, A))
        self._rows = (R * S * K, A)

    def _row(self, rep, state, j):
        S, K = self.tail_prob_.shape[1:3]
        return (rep * S + state) * K + j

    def _grid_tail(self, rep, state, j):
        rows = self._row(rep, state, j)
        f = np.take(self.tail_prob_.reshape(self._rows), rows, axis=0)
        h = np.take(self.tail_value_.reshape(self._rows), rows, axis=0)
        return f, h

    def _grid_shortfall(self, rep, state, j):
        f, h = self._grid_tail(rep, state, j)
        return shortfall(self.grid_.values[j][..., None], f, h)

    def _interp_tail(self, rep, state, j0, w):
        """F and H interpolated separately between grid budgets j0 and j0 + 1."""
        K = self.grid_.size
        f0, h0 = self._grid_tail(rep, state, j0)
        f1, h1 = self._grid_tail(rep, state, np.minimum(j0 + 1, K - 1))
        return lerp(f0, f1, w), lerp(h0, h1, w)

    def _interp_shortfall(self, rep, state, j0, w, u):
        f, h = self._interp_tail(rep, state, j0, w)
        eta = (self.grid_.lo + self.grid_.step * np.asarray(u, dtype=float))[..., None]
        return shortfall(eta, f, h)

    def _learn(self, rr, s, a, r, shift, s2, term, active, budget) -> int:
        grid, K = self.grid_, self.grid_.size
        j2 = np.arange(K)[None, :] + shift[:, None]  # next budget indices [R, K]
        eta2 = grid.values[None, :] - r[:, None]
        if np.issubdtype(j2.dtype, np.floating):
            j0, w, _, _ = interpolation(j2, K)
            f_in, h_in = self._interp_tail(rr[:, None], s2[:, None], j0, w)  # [R, K, A]
        else:
            jc = np.minimum(np.maximum(j2, 0), K - 1)
            f_in, h_in = self._grid_tail(rr[:, None], s2[:, None], jc)  # [R, K, A]
        qn = self.q_neutral_[rr, s2]  # [R, A]
        f_next, h_next = clamped_tail(j2, K, f_in, h_in, qn[:, None, :])
        loss = shortfall(eta2[..., None], f_next, h_next)
        a2 = greedy_action(loss, qn[:, None, :])  # [R, K]
        pick = (np.arange(rr.size)[:, None], np.arange(K)[None, :], a2)
        f_next, h_next = f_next[pick], h_next[pick]
        f_hat, h_hat = bootstrap_targets(r[:, None], f_next, h_next)
        f_term, h_term = terminal_targets(eta2, r[:, None])
        f_hat = np.where(term[:, None], f_term, f_hat)
        h_hat = np.where(term[:, None], h_term, h_hat)
        mask = self._targets_mask(active, budget)
        f_row, h_row = self.tail_prob_[rr, s, :, a], self.tail_value_[rr, s, :, a]
        self.tail_prob_[rr, s, :, a] = f_row + self.lr * mask * (f_hat - f_row)
        self.tail_value_[rr, s, :, a] = h_row + self.lr * mask * (h_hat - h_row)
        return 2 * int(np.count_nonzero(mask))


class AugmentedCVaRQLearning(_BudgetLearner):
    """Budget-augmented shortfall learner: L(s, a, eta) with zero per-step reward and the
    terminal shortfall (eta_T)_+; by default no relabelling and no budget exploration."""

    def __init__(
        self,
        q: float = 0.1,
        eta_grid=None,
        lr: float = 0.1,
        epsilon=(0.3, 0.02),
        budget_epsilon=(0.5, 0.05),
        relabel: bool = False,
        budget_exploration: bool = False,
        n_replications: int = 1,
        seed=0,
    ):
        super().__init__(
            q,
            eta_grid,
            lr,
            epsilon,
            budget_epsilon,
            relabel,
            budget_exploration,
            n_replications,
            seed,
        )

    def _init_tables(self, R, S, A, K) -> None:
        self.shortfall_ = np.zeros((R, S, K, A))  # [R, S, K, A]: budget rows contiguous

    def _grid_shortfall(self, rep, state, j):
        S, K, A = self.shortfall_.shape[1:]
        return np.take(self.shortfall_.reshape(-1, A), (rep * S + state) * K + j, axis=0)

    def _learn(self, rr, s, a, r, shift, s2, term, active, budget) -> int:
        _, eta2, _, loss = self._next_greedy(rr, r, shift, s2)
        target = np.where(term[:, None], np.maximum(eta2, 0.0), loss.min(-1))
        mask = self._targets_mask(active, budget)
        row = self.shortfall_[rr, s, :, a]
        self.shortfall_[rr, s, :, a] = row + self.lr * mask * (target - row)
        return int(np.count_nonzero(mask))


class RiskNeutralQLearning(_BudgetLearner):
    """Plain epsilon-greedy Q-learning of the expected return (reference point)."""

    def __init__(
        self, q: float = 0.1, lr: float = 0.1, epsilon=(0.3, 0.02), n_replications: int = 1, seed=0
    ):
        super().__init__(q, None, lr, epsilon, (0.0, 0.0), False, False, n_replications, seed)

    def _init_tables(self, R, S, A, K) -> None:
        """Only the risk-neutral Q of the base class is learned."""

    def _grid_shortfall(self, rep, state, j):
        return -self.q_neutral_[rep, state]

    def _learn(self, rr, s, a, r, shift, s2, term, active, budget) -> int:
        return int(active.sum())


def evaluate_cvar(
    agent: _BudgetLearner,
    env,
    q: float,
    n_episodes: int = 20_000,
    replication: int = 0,
    seed: int = 0,
) -> float:
    """Monte Carlo CVaR_q (mean of the worst ceil(q N) returns) of the agent's greedy
    budget-carrying policy, rolling out ``n_episodes`` episodes in lock-step."""
    if not isinstance(agent, _BudgetLearner):
        raise TypeError(f"agent must be a fitted CVaR learner, got {type(agent).__name__}")
    agent._check_fitted()
    table = table_of(env)
    q = check_risk_level(q)
    n_episodes = V.check_int(n_episodes, "n_episodes", low=1)
    replication = agent._check_replication(replication)
    eta0 = agent.initial_budgets()[replication]

    def act(rep, state, eta):
        return agent._act_idx(np.full_like(rep, replication), state, agent._position(eta))

    returns = monte_carlo_returns(table, act, eta0, int(n_episodes), seed)
    return empirical_cvar(returns, q)
