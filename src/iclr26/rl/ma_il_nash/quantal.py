"""Entropy-regularised (quantal-response) play in tabular Markov games.

With temperature tau every agent maximises its discounted reward plus tau times the entropy
of its own policy. The soft value of agent i under a profile solves
(I - gamma P^pi) v = sum_a pi_i(a|s) [r_i(s, a) - tau log pi_i(a|s)] in agent i's induced
MDP; its soft best response is the softmax of the soft Q-function (``soft_best_response``).
A quantal-response (logit) equilibrium is a profile that is its own soft best response; it
is found here by damped fixed-point iteration in log-policy space. The soft Nash gap is the
largest gain of a unilateral soft best response; it is zero exactly at the equilibrium.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V

from .game import TabularMarkovGame, check_game, uniform_profile
from .metrics import soft_best_response, total_variation


def soft_values(
    game: TabularMarkovGame, pi: Sequence[np.ndarray], temperature: float
) -> np.ndarray:
    """rho . V_i^tau(pi) for every agent: value including tau times its own policy entropy."""
    check_game(game)
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    pi = game.check_policy(pi)
    S = game.n_states
    out = np.zeros(game.n_agents)
    for i in range(game.n_agents):
        p_i, r_i = game.induced_mdp(i, pi)
        own = pi[i]
        log_own = np.log(np.where(own > 0, own, 1.0))
        r_pi = (own * (r_i - temperature * log_own)).sum(-1)
        p_pi = np.einsum("sa,sat->st", own, p_i)
        out[i] = game.rho @ np.linalg.solve(np.eye(S) - game.gamma * p_pi, r_pi)
    return out


def soft_nash_gap(game: TabularMarkovGame, pi: Sequence[np.ndarray], temperature: float) -> float:
    """max_i [max_{pi'_i} V_i^tau(pi'_i, pi_-i) - V_i^tau(pi)] in the tau-regularised game."""
    check_game(game)
    pi = game.check_policy(pi)
    own = soft_values(game, pi, temperature)
    best = np.array([soft_best_response(game, i, pi, temperature)[0] for i in range(game.n_agents)])
    return float(np.maximum(best - own, 0.0).max())


def quantal_response_equilibrium(
    game: TabularMarkovGame,
    temperature: float,
    damping: float = 0.3,
    tol: float = 1e-9,
    max_iter: int = 5000,
) -> tuple[np.ndarray, ...]:
    """Logit equilibrium: iterate log pi <- (1 - damping) log pi + damping log softBR(pi)
    from the uniform profile until no policy moves by more than ``tol`` (TV, any state)."""
    check_game(game)
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    damping = V.check_scalar(damping, "damping", low=0.0, high=1.0, low_open=True)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    pi = uniform_profile(game)
    for _ in range(max_iter):
        response = [soft_best_response(game, i, pi, temperature)[1] for i in range(game.n_agents)]
        moved = max(float(total_variation(p, r).max()) for p, r in zip(pi, response))
        if moved < tol:
            return tuple(response)
        new = []
        for p, r in zip(pi, response):
            logit = (1 - damping) * np.log(p) + damping * np.log(np.maximum(r, 1e-300))
            q = np.exp(logit - logit.max(-1, keepdims=True))
            new.append(q / q.sum(-1, keepdims=True))
        pi = tuple(new)
    raise RuntimeError(
        f"quantal-response iteration did not converge in {max_iter} rounds (last move "
        f"{moved:.2e}); lower the damping or raise the temperature"
    )
