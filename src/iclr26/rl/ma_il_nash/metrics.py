"""Exploitability (Nash gap), behaviour-cloning error, measure-matching error, the
dominant-strategy check and bound, and the best-response continuity constant."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V

from .game import TabularMarkovGame, check_game, uniform_profile


def nash_gap_per_agent(game: TabularMarkovGame, pi: Sequence[np.ndarray]) -> np.ndarray:
    """max_{pi'_i} V_i(pi'_i, pi_-i) - V_i(pi) for every agent i."""
    check_game(game)
    pi = game.check_policy(pi)
    own = game.values(pi)
    best = np.array([game.best_response(i, pi)[0] for i in range(game.n_agents)])
    return np.maximum(best - own, 0.0)


def nash_gap(game: TabularMarkovGame, pi: Sequence[np.ndarray], reduce: str = "max") -> float:
    """Exploitability: the largest (``reduce="max"``) or summed per-agent gain of a
    unilateral best response."""
    V.check_choice(reduce, "reduce", ("max", "sum"))
    gaps = nash_gap_per_agent(game, pi)
    if reduce == "max":
        return float(gaps.max())
    if reduce == "sum":
        return float(gaps.sum())
    raise ValueError("reduce must be 'max' or 'sum'")


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """TV distance along the last axis."""
    p = V.check_array(p, "p", dtype=np.float64)
    q = V.check_array(q, "q", dtype=np.float64)
    if p.ndim == 0 or q.ndim == 0:
        raise ValueError("p and q must have at least one dimension (the outcomes)")
    if p.shape[-1] != q.shape[-1]:
        raise ValueError(f"p and q must share the last axis, got {p.shape} and {q.shape}")
    return 0.5 * np.abs(p - q).sum(-1)


def bc_error(
    game: TabularMarkovGame,
    pi: Sequence[np.ndarray],
    pi_expert: Sequence[np.ndarray],
    reduce: str = "max",
) -> float:
    """eps_BC = max_i E_{s ~ d^{pi_E}} TV(pi_i(.|s), pi^E_i(.|s)) (or the sum over agents);
    measured under the expert's occupancy, where the data comes from."""
    check_game(game)
    V.check_choice(reduce, "reduce", ("max", "sum"))
    pi, pi_expert = game.check_policy(pi), game.check_policy(pi_expert, "pi_expert")
    d = game.occupancy(pi_expert)
    per_agent = np.array([d @ total_variation(p, e) for p, e in zip(pi, pi_expert)])
    if reduce == "max":
        return float(per_agent.max())
    if reduce == "sum":
        return float(per_agent.sum())
    raise ValueError("reduce must be 'max' or 'sum'")


def measure_matching_error(
    game: TabularMarkovGame, pi: Sequence[np.ndarray], pi_expert: Sequence[np.ndarray]
) -> float:
    """TV between state-joint-action occupancies d^pi (x) pi and d^{pi_E} (x) pi_E."""
    check_game(game)
    pi, pi_expert = game.check_policy(pi), game.check_policy(pi_expert, "pi_expert")
    mu = game.occupancy(pi)[:, None] * game.joint_policy(pi)
    mu_e = game.occupancy(pi_expert)[:, None] * game.joint_policy(pi_expert)
    return float(total_variation(mu.ravel(), mu_e.ravel()))


def dominant_strategy_bound(n_agents: int, eps_bc: float, gamma: float, r_max: float) -> float:
    """Nash gap <= 2 r_max (2n - 1) eps_BC / (1 - gamma)^2 for a dominant-strategy expert
    equilibrium (our constant, from the performance-difference lemma and TV of product
    policies <= sum of per-agent TVs; the paper states the O(n eps/(1-gamma)^2) rate)."""
    n_agents = V.check_int(n_agents, "n_agents", low=1)
    eps_bc = V.check_scalar(eps_bc, "eps_bc", low=0.0)
    gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    r_max = V.check_scalar(r_max, "r_max", low=0.0)
    return 2.0 * r_max * (2 * int(n_agents) - 1) * eps_bc / (1.0 - gamma) ** 2


def random_profile(game: TabularMarkovGame, rng: np.random.Generator, deterministic=False):
    """A random product policy: Dirichlet(1) rows, or one-hot rows when ``deterministic``."""
    check_game(game)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    deterministic = V.check_bool(deterministic, "deterministic")
    if deterministic:
        return tuple(np.eye(a)[rng.integers(0, a, game.n_states)] for a in game.n_actions)
    return tuple(rng.dirichlet(np.ones(a), size=game.n_states) for a in game.n_actions)


def dominant_strategy_check(
    game: TabularMarkovGame,
    pi_expert: Sequence[np.ndarray],
    n_samples: int = 20,
    seed: int = 0,
    tol: float = 1e-8,
) -> bool:
    """True when every pi^E_i is a best response to every tested opponent profile: the
    expert's, the uniform one and ``n_samples`` random (half deterministic) profiles."""
    check_game(game)
    pi_expert = game.check_policy(pi_expert, "pi_expert")
    n_samples = V.check_int(n_samples, "n_samples", low=0)
    seed = V.check_int(seed, "seed", low=0, allow_none=True)
    tol = V.check_scalar(tol, "tol", low=0.0)
    rng = np.random.default_rng(seed)
    profiles = [pi_expert, uniform_profile(game)]
    profiles += [random_profile(game, rng, deterministic=k % 2 == 0) for k in range(n_samples)]
    for others in profiles:
        for i in range(game.n_agents):
            mixed = list(others)
            mixed[i] = pi_expert[i]
            best = game.best_response(i, mixed)[0]
            if game.values(mixed)[i] < best - tol * max(1.0, abs(best)):
                return False
    return True


def _logsumexp_last(x: np.ndarray) -> np.ndarray:
    top = x.max(-1)
    return top + np.log(np.exp(x - top[..., None]).sum(-1))


def soft_best_response(
    game: TabularMarkovGame,
    i: int,
    pi: Sequence[np.ndarray],
    temperature: float,
    tol: float = 1e-10,
    max_iter: int = 10_000,
):
    """Entropy-regularised (quantal) best response: soft value iteration with temperature
    tau; returns (rho . V_soft, policy [S, A_i])."""
    check_game(game)
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    p_i, r_i = game.induced_mdp(i, pi)
    v = np.zeros(game.n_states)
    for _ in range(max_iter):
        q = r_i + game.gamma * p_i @ v
        v_new = temperature * _logsumexp_last(q / temperature)
        if np.max(np.abs(v_new - v)) < tol:
            v = v_new
            break
        v = v_new
    q = r_i + game.gamma * p_i @ v
    policy = np.exp((q - q.max(-1, keepdims=True)) / temperature)
    return float(game.rho @ v), policy / policy.sum(-1, keepdims=True)


def br_continuity_constant(
    game: TabularMarkovGame,
    pi_expert: Sequence[np.ndarray],
    radius: float = 0.05,
    n_samples: int = 10,
    temperature: float = 0.0,
    seed: int = 0,
) -> dict[str, float]:
    """Empirical Lipschitz constants of the best-response map around pi^E: perturb each
    opponent to (1 - radius) pi^E_j + radius * random policy and report the largest change
    of the (soft, if temperature > 0) best-response value and policy (expected TV under
    d^{pi_E}), each divided by the radius."""
    check_game(game)
    radius = V.check_scalar(radius, "radius", low=0.0, high=1.0, low_open=True)
    n_samples = V.check_int(n_samples, "n_samples", low=1)
    temperature = V.check_scalar(temperature, "temperature", low=0.0)
    seed = V.check_int(seed, "seed", low=0, allow_none=True)
    pi_expert = game.check_policy(pi_expert, "pi_expert")
    rng = np.random.default_rng(seed)
    d = game.occupancy(pi_expert)

    def br(i, profile):
        if temperature > 0:
            return soft_best_response(game, i, profile, temperature)
        value, policy, _ = game.best_response(i, profile)
        return value, policy

    value_ratio = policy_ratio = 0.0
    for i in range(game.n_agents):
        base_value, base_policy = br(i, pi_expert)
        for _ in range(n_samples):
            noise = random_profile(game, rng)
            profile = [
                p if j == i else (1 - radius) * p + radius * noise[j]
                for j, p in enumerate(pi_expert)
            ]
            value, policy = br(i, profile)
            value_ratio = max(value_ratio, abs(value - base_value) / radius)
            policy_ratio = max(
                policy_ratio, float(d @ total_variation(policy, base_policy)) / radius
            )
    return {"value": value_ratio, "policy": policy_ratio}
