"""Exact solutions for scoring: risk-neutral Q, the CVaR-optimal shortfall by dynamic
programming on the augmented state (s, eta), exact return distributions of budget-carrying
policies, and Monte Carlo CVaR."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

from .predictive_tail import (
    BudgetGrid,
    check_risk_level,
    cvar_from_shortfall,
    greedy_action,
    initial_budget,
    interpolation,
    lerp,
)
from .tables import EpisodicTable, TableSampler


def _check_table(table, name: str = "table") -> EpisodicTable:
    if not isinstance(table, EpisodicTable):
        raise TypeError(f"{name} must be an EpisodicTable, got {type(table).__name__}")
    return table


def default_grid(table: EpisodicTable) -> BudgetGrid:
    """Integer budgets spanning every return-to-go [G_min, G_max] of the table."""
    lo, hi = _check_table(table).return_bounds()
    return BudgetGrid(lo, hi, 1.0)


def check_grid_covers(grid, table: EpisodicTable, name: str = "eta_grid") -> BudgetGrid:
    """A :class:`BudgetGrid` whose range holds the table's return range [G_min, G_max].

    The off-grid rules (below the grid no tail mass, above it the whole distribution) are
    exact only for budgets outside every reachable return; a narrower grid applies them to
    budgets where they are false, and the CVaR computed from it can lie outside
    [G_min, G_max] -- an impossible value. Such a grid is refused."""
    if not isinstance(grid, BudgetGrid):
        raise TypeError(f"{name} must be a BudgetGrid or None, got {type(grid).__name__}")
    g_lo, g_hi = table.return_range()
    if not grid.covers(g_lo, g_hi):
        raise ValueError(
            f"{name} must cover the returns [{g_lo:g}, {g_hi:g}] of {table.name!r}; got "
            f"[{grid.lo:g}, {grid.hi:g}]. Widen it (default_grid(table) spans them)"
        )
    return grid


def risk_neutral_q(table: EpisodicTable, tol: float = 1e-10, max_iter: int = 100_000):
    """Optimal expected-return Q by undiscounted value iteration (episodes terminate)."""
    _check_table(table)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    q = np.zeros((table.n_states, table.n_actions))
    cont = ~table.terminal
    for _ in range(max_iter):
        v = q.max(-1)
        q_new = (table.prob * (table.reward + cont * v[table.next_state])).sum(-1)
        if np.max(np.abs(q_new - q)) < tol:
            return q_new
        q = q_new
    raise RuntimeError("risk-neutral value iteration did not converge")


@dataclass
class CVaRSolution:
    grid: BudgetGrid
    q: float
    shortfall: np.ndarray  # L*[S, A, K]
    tail_prob: np.ndarray  # F*[S, A, K] under the greedy optimal policy
    tail_value: np.ndarray  # H*[S, A, K]
    q_neutral: np.ndarray  # [S, A]
    eta0: float
    cvar: float
    interpolate: bool = False  # rewards off the grid lattice: linear interpolation

    def act(self, state: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """Greedy optimal action at augmented states (arrays of equal shape)."""
        state, eta = _check_augmented(state, eta, self.shortfall.shape[0])
        K = self.grid.size
        if self.interpolate:
            u = self.grid.position(eta)
            j0, w, below, above = interpolation(u, K)
            loss = lerp(
                self.shortfall[state, :, j0], self.shortfall[state, :, np.minimum(j0 + 1, K - 1)], w
            )
        else:
            j = self.grid.index(eta)
            below, above = j < 0, j >= K
            loss = self.shortfall[state, :, np.clip(j, 0, K - 1)]  # [..., A]
        qn = self.q_neutral[state]
        loss = np.where(above[..., None], -qn, np.where(below[..., None], 0.0, loss))
        return greedy_action(loss, qn)


def _check_augmented(state, eta, n_states: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer states in [0, S) and finite budgets of one shape."""
    state = V.check_array(state, "state", dtype=None, min_rows=0)
    if state.dtype.kind not in "iu":
        raise TypeError(f"state must hold integer state indices, got {state.dtype}")
    if state.size:
        V.check_array(state, "state", low=0, high=n_states - 1, min_rows=0)
    eta = V.check_array(eta, "eta", dtype=np.float64, min_rows=0)
    if eta.shape != state.shape:
        raise ValueError(f"eta must have the shape of state {state.shape}, got {eta.shape}")
    return state, eta


def _at(values: np.ndarray, nxt: np.ndarray, j2: np.ndarray, K: int) -> np.ndarray:
    """values[nxt, j2] at lattice indices (clipped) or, for fractional j2, by linear
    interpolation between the neighbouring grid budgets; trailing axes of ``values`` after
    the budget axis are kept."""
    if np.issubdtype(j2.dtype, np.floating):
        j0, w, _, _ = interpolation(j2, K)
        return lerp(values[nxt, j0], values[nxt, np.minimum(j0 + 1, K - 1)], w)
    return values[nxt, np.clip(j2, 0, K - 1)]


def _next_min(grid: BudgetGrid, loss: np.ndarray, v_neutral: np.ndarray, nxt, j2, eta2):
    """min_b L(s', b, eta') with the off-grid rules, for index arrays of any shape."""
    K = grid.size
    inside = _at(loss.min(1), nxt, j2, K)
    return np.where(j2 < 0, 0.0, np.where(j2 > K - 1, eta2 - v_neutral[nxt], inside))


def cvar_dynamic_programming(
    table: EpisodicTable,
    q: float,
    grid: BudgetGrid | None = None,
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> CVaRSolution:
    """CVaR-optimal shortfall L*(s, a, eta) = E[(eta - G)_+] minimised over policies on the
    augmented state, then eta0* = argmax {eta - L*(s0, eta)/q} and the optimal CVaR.

    ``grid`` must cover the table's return range (:func:`check_grid_covers`); the value
    returned then lies in [G_min, G_max]."""
    _check_table(table)
    q = check_risk_level(q)
    grid = default_grid(table) if grid is None else check_grid_covers(grid, table, "grid")
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    K = grid.size
    qn = risk_neutral_q(table)
    vn = qn.max(-1)
    interpolate = not grid.on_lattice(table.reward)
    shift = grid.offset(table.reward) if interpolate else grid.shift(table.reward)  # [S, A, O]
    j2 = np.arange(K) + shift[..., None]  # [S, A, O, K]
    eta2 = grid.values + (shift[..., None] * grid.step)
    nxt = np.broadcast_to(table.next_state[..., None], j2.shape)
    term = table.terminal[..., None]
    p = table.prob[..., None]
    loss = np.zeros((table.n_states, table.n_actions, K))
    for _ in range(max_iter):
        target = np.where(term, np.maximum(eta2, 0.0), _next_min(grid, loss, vn, nxt, j2, eta2))
        new = (p * target).sum(2)
        if np.max(np.abs(new - loss)) < tol:
            loss = new
            break
        loss = new
    else:
        raise RuntimeError("CVaR dynamic programming did not converge")
    # F*, H* of the greedy optimal policy by iterating their recursion
    below, above = j2 < 0, j2 > K - 1
    qn_next = qn[nxt]  # [S, A, O, K, A']
    loss_next = _at(np.moveaxis(loss, 1, -1), nxt, j2, K)
    loss_next = np.where(below[..., None], 0.0, np.where(above[..., None], -qn_next, loss_next))
    a_next = greedy_action(loss_next, qn_next)  # [S, A, O, K]
    tail_prob = np.zeros_like(loss)
    tail_value = np.zeros_like(loss)
    hit = (eta2 >= 0).astype(float)
    reward = table.reward[..., None]
    if interpolate:
        j0, w, _, _ = interpolation(j2, K)
        j1 = np.minimum(j0 + 1, K - 1)
    else:
        j0, w, j1 = np.clip(j2, 0, K - 1), None, None
    for _ in range(max_iter):
        f_in, h_in = tail_prob[nxt, a_next, j0], tail_value[nxt, a_next, j0]
        if interpolate:  # F and H interpolated separately
            f_in = lerp(f_in, tail_prob[nxt, a_next, j1], w)
            h_in = lerp(h_in, tail_value[nxt, a_next, j1], w)
        f_next = np.where(below, 0.0, np.where(above, 1.0, f_in))
        h_next = np.where(below, 0.0, np.where(above, vn[nxt], h_in))
        f_t = np.where(term, hit, f_next)
        h_t = np.where(term, reward * hit, reward * f_next + h_next)
        new_f, new_h = (p * f_t).sum(2), (p * h_t).sum(2)
        done = max(np.max(np.abs(new_f - tail_prob)), np.max(np.abs(new_h - tail_value))) < tol
        tail_prob, tail_value = new_f, new_h
        if done:
            break
    s0 = table.start_state
    min_loss = loss[s0].min(0)
    k0 = int(initial_budget(grid.values, min_loss, q))
    return CVaRSolution(
        grid,
        q,
        loss,
        tail_prob,
        tail_value,
        qn,
        float(grid.values[k0]),
        float(cvar_from_shortfall(grid.values, min_loss, q)),
        interpolate,
    )


def cvar_of_distribution(values: np.ndarray, probs: np.ndarray, q: float) -> np.ndarray:
    """Lower-tail CVaR_q of discrete distributions (last axis), fractional atoms included."""
    q = check_risk_level(q)
    probs = V.check_array(probs, "probs", dtype=np.float64, low=0.0)
    if probs.ndim == 0:
        raise ValueError("probs must have at least one dimension (the atoms)")
    values = V.check_array(values, "values", dtype=np.float64)
    try:
        values = np.broadcast_to(values, probs.shape)
    except ValueError:
        raise ValueError(
            f"values must broadcast to the shape of probs {probs.shape}, got {values.shape}"
        ) from None
    sums = probs.sum(-1)
    if not np.allclose(sums, 1.0, atol=1e-8):
        worst = float(np.abs(sums - 1.0).max())
        raise ValueError(f"probs must sum to 1 along the last axis; off by up to {worst:.3g}")
    order = np.argsort(values, axis=-1)
    v = np.take_along_axis(values, order, -1)
    p = np.take_along_axis(probs, order, -1)
    before = np.cumsum(p, -1) - p
    taken = np.clip(q - before, 0.0, p)
    return (taken * v).sum(-1) / q


def return_distribution(
    table: EpisodicTable,
    act: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    eta0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact return distribution of R budget-carrying policies.

    ``act(rep, state, eta)`` maps index arrays of equal shape to actions; ``eta0`` [R] are
    the initial budgets; the budget after accumulating reward g is eta0 - g. Returns the
    support (accumulated returns) and probabilities [R, G]. Truncation at the horizon ends
    the episode with the accumulated return.
    """
    _check_table(table)
    if not callable(act):
        raise TypeError(f"act must be callable, got {type(act).__name__}")
    eta0 = V.check_array(np.atleast_1d(np.asarray(eta0, dtype=float)), "eta0", ndim=1)
    if np.any(np.abs(table.reward - np.rint(table.reward)) > 1e-9):
        raise ValueError(
            "exact return distributions need integer rewards; use evaluate_cvar (Monte "
            "Carlo) for other rewards"
        )
    eta0 = np.atleast_1d(np.asarray(eta0, dtype=float))
    R, S, O = eta0.shape[0], table.n_states, table.prob.shape[-1]
    # accumulated rewards: at most horizon - 1 non-terminal steps, then any step
    live = table.prob > 0
    step_r = np.where(live & ~table.terminal, table.reward, 0.0)
    any_r = np.where(live, table.reward, 0.0)
    r_lo = (table.horizon - 1) * min(step_r.min(), 0.0) + min(any_r.min(), 0.0)
    r_hi = (table.horizon - 1) * max(step_r.max(), 0.0) + max(any_r.max(), 0.0)
    support = np.arange(np.floor(r_lo), np.ceil(r_hi) + 1)
    G = support.size
    mass = np.zeros((R, S, G))
    mass[:, table.start_state, int(-support[0])] = 1.0
    final = np.zeros((R, G))
    rep, st, gi = np.indices((R, S, G))
    rewards_int = np.rint(table.reward).astype(np.int64)
    a = act(rep, st, eta0[:, None, None] - support[gi])  # the policy depends on (s, g) only
    for _ in range(table.horizon):
        for o in range(O):
            w = mass * table.prob[st, a, o]
            g2 = np.clip(gi + rewards_int[st, a, o], 0, G - 1)
            s2 = table.next_state[st, a, o]
            term = table.terminal[st, a, o]
            final += np.bincount((rep * G + g2)[term], w[term], R * G).reshape(R, G)
            live = ~term
            flat = (rep * S + s2) * G + g2
            if o == 0:
                new = np.bincount(flat[live], w[live], R * S * G)
            else:
                new += np.bincount(flat[live], w[live], R * S * G)
        mass = new.reshape(R, S, G)
    final += mass.sum(1)
    return support, final


def policy_cvar(table: EpisodicTable, act, eta0, q: float) -> np.ndarray:
    """Exact CVaR_q of the return of R budget-carrying policies."""
    support, probs = return_distribution(table, act, eta0)
    return cvar_of_distribution(support, probs, q)


def neutral_policy_cvar(table: EpisodicTable, q: float) -> float:
    """Exact CVaR_q of the risk-neutral optimal policy (ties broken by the lower index)."""
    q = check_risk_level(q)
    greedy = risk_neutral_q(table).argmax(-1)
    return float(policy_cvar(table, lambda r, s, e: greedy[s], np.zeros(1), q)[0])


def monte_carlo_returns(table: EpisodicTable, act, eta0: float, n_episodes: int, seed=0):
    """Returns of ``n_episodes`` rollouts of one budget-carrying policy, all in lock-step."""
    _check_table(table)
    if not callable(act):
        raise TypeError(f"act must be callable, got {type(act).__name__}")
    eta0 = V.check_scalar(eta0, "eta0")
    n_episodes = V.check_int(n_episodes, "n_episodes", low=1)
    seed = V.check_int(seed, "seed", low=0, allow_none=True)
    rng = np.random.default_rng(seed)
    sampler = TableSampler(table, n_episodes, rng)
    budget = np.full(n_episodes, float(eta0))
    total = np.zeros(n_episodes)
    alive = np.ones(n_episodes, dtype=bool)
    rep = np.zeros(n_episodes, dtype=np.int64)
    for _ in range(table.horizon):
        a = act(rep, sampler.state, budget)
        _, r, term, trunc = sampler._step(a)
        total += np.where(alive, r, 0.0)
        budget -= r
        alive &= ~(term | trunc)
        if not alive.any():
            break
    return total


def empirical_cvar(returns: np.ndarray, q: float) -> float:
    """Mean of the worst ceil(q N) returns."""
    q = check_risk_level(q)
    returns = np.sort(V.check_array(returns, "returns", ndim=1, dtype=np.float64))
    return float(returns[: int(np.ceil(q * returns.size))].mean())
