"""Finite MDPs as outcome tables, exact Q* by value iteration, and the asymptotic covariance.

Each (s, a) has up to K outcomes (probability, next state, reward, terminated), the format of
Gymnasium's toy-text ``env.unwrapped.P``. A terminated outcome does not bootstrap: its
target is the reward alone. The Bellman optimality operator is
(T Q)(s, a) = sum_k p_k [r_k + gamma (1 - done_k) max_a' Q(s'_k, a')].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V


@dataclass(frozen=True)
class TabularMDP:
    """A finite discounted MDP given by its outcome table (arrays of shape [S, A, K])."""

    prob: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    gamma: float
    initial: np.ndarray | None = None
    name: str = "mdp"

    def __post_init__(self) -> None:
        prob = V.check_array(self.prob, "prob", ndim=3, dtype=np.float64, low=0.0)
        if not np.allclose(prob.sum(-1), 1.0, atol=1e-9):
            worst = float(np.abs(prob.sum(-1) - 1.0).max())
            raise ValueError(
                f"prob must be non-negative and sum to 1 per (s, a); off by up to {worst:.3g}"
            )
        nxt = V.check_array(self.next_state, "next_state", shape=prob.shape, dtype=None)
        if not np.issubdtype(nxt.dtype, np.integer):
            raise TypeError(f"next_state must hold integer state indices, got {nxt.dtype}")
        V.check_array(nxt, "next_state", low=0, high=prob.shape[0] - 1)
        reward = V.check_array(self.reward, "reward", shape=prob.shape, dtype=np.float64)
        term = V.check_array(self.terminal, "terminal", shape=prob.shape, dtype=None)
        if term.dtype.kind != "b" and not np.isin(term, (0, 1)).all():
            raise TypeError(f"terminal must hold booleans, got {term.dtype}")
        gamma = V.check_scalar(self.gamma, "gamma", low=0.0, high=1.0, high_open=True)
        S = prob.shape[0]
        if self.initial is None:
            init = np.full(S, 1.0 / S)
        else:
            init = V.check_array(self.initial, "initial", shape=(S,), dtype=np.float64, low=0.0)
            if not np.isclose(init.sum(), 1.0):
                raise ValueError(f"initial must be a distribution over the {S} states")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        object.__setattr__(self, "prob", prob)
        object.__setattr__(self, "next_state", nxt.astype(np.int64))
        object.__setattr__(self, "reward", reward)
        object.__setattr__(self, "terminal", term.astype(bool))
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "initial", init)

    @property
    def n_states(self) -> int:
        return self.prob.shape[0]

    @property
    def n_actions(self) -> int:
        return self.prob.shape[1]

    @property
    def n_outcomes(self) -> int:
        return self.prob.shape[2]

    @property
    def r_max(self) -> float:
        return float(np.abs(self.reward).max())

    @property
    def P(self) -> np.ndarray:
        """Dense transition tensor P[s, a, s'] (terminated outcomes included)."""
        S, A, _ = self.prob.shape
        dense = np.zeros((S, A, S))
        s_idx, a_idx = np.indices((S, A))
        for k in range(self.n_outcomes):
            np.add.at(dense, (s_idx, a_idx, self.next_state[..., k]), self.prob[..., k])
        return dense

    @property
    def R(self) -> np.ndarray:
        """Expected one-step reward R[s, a]."""
        return (self.prob * self.reward).sum(-1)

    def bellman(self, q: np.ndarray) -> np.ndarray:
        """The Bellman optimality operator applied to Q (last two axes [S, A])."""
        q = V.check_array(q, "q", dtype=np.float64)
        if q.shape[-2:] != (self.n_states, self.n_actions):
            raise ValueError(
                f"q must end with the axes [S, A] = {(self.n_states, self.n_actions)}, "
                f"got shape {q.shape}"
            )
        v = q.max(-1)  # [..., S]
        v_next = v[..., self.next_state]  # [..., S, A, K]
        target = self.reward + self.gamma * (~self.terminal) * v_next
        return (self.prob * target).sum(-1)


def check_mdp(mdp, name: str = "mdp") -> TabularMDP:
    if not isinstance(mdp, TabularMDP):
        raise TypeError(f"{name} must be a TabularMDP, got {type(mdp).__name__}")
    return mdp


def check_q(q, mdp: TabularMDP, name: str = "q_star") -> np.ndarray:
    """A finite [S, A] table matching the MDP."""
    return V.check_array(q, name, shape=(mdp.n_states, mdp.n_actions), dtype=np.float64)


def value_iteration(mdp: TabularMDP, tol: float = 1e-12, max_iter: int = 100_000) -> np.ndarray:
    """Q* by value iteration until the sup-norm change is below ``tol``."""
    check_mdp(mdp)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    q = np.zeros((mdp.n_states, mdp.n_actions))
    for _ in range(max_iter):
        q_new = mdp.bellman(q)
        if np.max(np.abs(q_new - q)) < tol:
            return q_new
        q = q_new
    raise RuntimeError(f"value iteration did not reach tol={tol} in {max_iter} iterations")


def noise_variance(mdp: TabularMDP, q_star: np.ndarray) -> np.ndarray:
    """Variance of the one-step target r + gamma max Q*(s', .) per (s, a) (matrix Gamma's
    diagonal in the synchronous model)."""
    q_star = check_q(q_star, check_mdp(mdp))
    v_next = q_star.max(-1)[mdp.next_state]
    target = mdp.reward + mdp.gamma * (~mdp.terminal) * v_next
    mean = (mdp.prob * target).sum(-1, keepdims=True)
    return (mdp.prob * (target - mean) ** 2).sum(-1)


def greedy_ties(q_star: np.ndarray, atol: float = 1e-9) -> np.ndarray:
    """Boolean [S]: states whose optimal action is not unique (the Gaussian limit breaks)."""
    q_star = V.check_array(q_star, "q_star", ndim=2, dtype=np.float64)
    atol = V.check_scalar(atol, "atol", low=0.0)
    best = q_star.max(-1, keepdims=True)
    return (np.abs(q_star - best) <= atol).sum(-1) > 1


def asymptotic_covariance(mdp: TabularMDP, q_star: np.ndarray) -> np.ndarray:
    """Sigma = (I - gamma P^pi)^-1 Gamma (I - gamma P^pi)^-T over the S*A entries, with
    P^pi the state-action transition under the greedy policy of Q* (synchronous model)."""
    q_star = check_q(q_star, check_mdp(mdp))
    S, A = q_star.shape
    greedy = q_star.argmax(-1)
    SA = S * A
    p_pi = np.zeros((SA, SA))
    rows = np.repeat(np.arange(SA), mdp.n_outcomes)
    nxt = mdp.next_state.reshape(-1)
    cols = nxt * A + greedy[nxt]
    weights = (mdp.prob * (~mdp.terminal)).reshape(-1)
    np.add.at(p_pi, (rows, cols), weights)
    inv = np.linalg.inv(np.eye(SA) - mdp.gamma * p_pi)
    gamma_diag = noise_variance(mdp, q_star).reshape(-1)
    return inv @ np.diag(gamma_diag) @ inv.T


def mdp_from_gymnasium(env_id: str, gamma: float = 0.9, **env_kwargs) -> TabularMDP:
    """Read the exact outcome table ``env.unwrapped.P`` of a Gymnasium toy-text env
    (FrozenLake-v1, CliffWalking-v1, Taxi-v3) into a :class:`TabularMDP`."""
    import gymnasium as gym

    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a registered Gymnasium id, got {env_id!r}")
    gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    env = gym.make(env_id, **env_kwargs)
    try:
        table = getattr(env.unwrapped, "P", None)
        if table is None:
            raise ValueError(f"{env_id} exposes no transition table env.unwrapped.P")
        S = env.observation_space.n
        A = env.action_space.n
        init = getattr(env.unwrapped, "initial_state_distrib", None)
    finally:
        env.close()
    K = max(len(table[s][a]) for s in range(S) for a in range(A))
    prob = np.zeros((S, A, K))
    nxt = np.zeros((S, A, K), dtype=np.int64)
    rew = np.zeros((S, A, K))
    term = np.zeros((S, A, K), dtype=bool)
    for s in range(S):
        for a in range(A):
            for k, (p, s_next, r, done) in enumerate(table[s][a]):
                prob[s, a, k], nxt[s, a, k] = p, int(s_next)
                rew[s, a, k], term[s, a, k] = r, bool(done)
            # padded outcomes keep probability 0 and point at the first listed one
            nxt[s, a, len(table[s][a]) :] = nxt[s, a, 0]
    prob /= prob.sum(-1, keepdims=True)
    initial = None if init is None else np.asarray(init, dtype=float)
    return TabularMDP(prob, nxt, rew, term, gamma, initial=initial, name=env_id)


def random_mdp(
    n_states: int, n_actions: int, branching: int = 3, seed: int = 0, gamma: float = 0.9
) -> TabularMDP:
    """A random MDP: each (s, a) reaches ``branching`` distinct states with Dirichlet(1)
    probabilities and a Uniform[0, 1] reward per outcome."""
    n_states = V.check_int(n_states, "n_states", low=1)
    n_actions = V.check_int(n_actions, "n_actions", low=1)
    branching = V.check_int(branching, "branching", low=1, high=n_states)
    seed = V.check_int(seed, "seed", low=0, allow_none=True)
    gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
    rng = np.random.default_rng(seed)
    S, A, K = int(n_states), int(n_actions), int(branching)
    nxt = np.argsort(rng.random((S, A, S)), axis=-1)[..., :K]
    prob = rng.dirichlet(np.ones(K), size=(S, A))
    rew = rng.random((S, A, K))
    term = np.zeros((S, A, K), dtype=bool)
    return TabularMDP(prob, nxt, rew, term, gamma, name=f"random-{S}x{A}")
