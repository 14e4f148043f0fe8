"""Tabular n-player discounted Markov games and their exact solution concepts.

A game G = (S, {A_i}, P, {r_i}, gamma, rho) is stored with joint actions flattened in
mixed radix (agent 0 most significant): transitions as outcome lists prob[s, a, o] /
next_state[s, a, o] and rewards reward[i, s, a]. A product policy is a tuple of arrays
pi_i[s, a_i]. Values solve (I - gamma P^pi) v = r^pi; the normalised occupancy is
d^pi = (1 - gamma) rho^T (I - gamma P^pi)^-1; the best response of agent i is the optimal
policy of the single-agent MDP induced by fixing pi_{-i}, found by policy iteration.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V


class TabularMarkovGame:
    """An n-player Markov game with exact evaluation, occupancies and best responses."""

    def __init__(
        self,
        n_actions: Sequence[int],
        prob: np.ndarray,
        next_state: np.ndarray | None,
        reward: np.ndarray,
        gamma: float,
        rho: np.ndarray | None = None,
        name: str = "game",
    ) -> None:
        if isinstance(n_actions, str | bytes) or not hasattr(n_actions, "__len__"):
            raise TypeError(f"n_actions must list an action count per agent, got {n_actions!r}")
        if len(n_actions) < 1:
            raise ValueError("n_actions must list a positive action count per agent, got []")
        self.n_actions = tuple(
            V.check_int(a, f"n_actions[{i}]", low=1) for i, a in enumerate(n_actions)
        )
        prob = V.check_array(prob, "prob", ndim=3, dtype=np.float64, low=0.0)
        n_joint = int(np.prod(self.n_actions))
        if next_state is None:  # dense P[s, a, s']
            if prob.shape[0] != prob.shape[2]:
                raise ValueError(f"prob (dense P) must have shape [S, A, S], got {prob.shape}")
            next_state = np.broadcast_to(np.arange(prob.shape[0]), prob.shape)
        next_state = V.check_array(next_state, "next_state", dtype=None)
        if next_state.shape != prob.shape:
            raise ValueError(
                f"prob {prob.shape} and next_state {next_state.shape} must share "
                "a shape [S, A_joint, O]"
            )
        if next_state.dtype.kind not in "iu":
            raise TypeError(f"next_state must hold integer state indices, got {next_state.dtype}")
        S = prob.shape[0]
        if prob.shape[1] != n_joint:
            raise ValueError(
                f"prob lists {prob.shape[1]} joint actions, the action "
                f"counts {self.n_actions} give {n_joint}"
            )
        reward = V.check_array(reward, "reward", dtype=np.float64)
        if reward.shape != (len(self.n_actions), S, n_joint):
            raise ValueError(
                f"reward must have shape [n, S, A_joint] = "
                f"{(len(self.n_actions), S, n_joint)}, got {reward.shape}"
            )
        if not np.allclose(prob.sum(-1), 1.0):
            raise ValueError("prob must be non-negative and sum to 1 over the outcomes")
        V.check_array(next_state, "next_state", low=0, high=S - 1)
        gamma = V.check_scalar(gamma, "gamma", low=0.0, high=1.0, high_open=True)
        if rho is None:
            rho = np.full(S, 1.0 / S)
        else:
            rho = V.check_array(rho, "rho", shape=(S,), dtype=np.float64, low=0.0)
            if not np.isclose(rho.sum(), 1.0):
                raise ValueError("rho must be a distribution over the S states")
        self.prob, self.next_state = prob, next_state.astype(np.int64)
        self.reward, self.gamma, self.rho, self.name = reward, float(gamma), rho, name

    # -- shapes ------------------------------------------------------------------------
    @property
    def n_agents(self) -> int:
        return len(self.n_actions)

    @property
    def n_states(self) -> int:
        return self.prob.shape[0]

    @property
    def n_joint(self) -> int:
        return self.prob.shape[1]

    @property
    def r_max(self) -> float:
        return float(np.abs(self.reward).max())

    def joint_index(self, actions: np.ndarray) -> np.ndarray:
        """Flatten per-agent actions [..., n] into joint indices."""
        actions = V.check_array(actions, "actions", dtype=None)
        if actions.dtype.kind not in "iu" or actions.shape[-1:] != (self.n_agents,):
            raise ValueError(f"actions must be integers of shape [..., {self.n_agents}]")
        return np.ravel_multi_index(tuple(np.moveaxis(np.asarray(actions), -1, 0)), self.n_actions)

    def check_policy(self, pi: Sequence[np.ndarray], name: str = "pi") -> tuple[np.ndarray, ...]:
        """A product policy: one finite [S, A_i] row-stochastic array per agent."""
        if isinstance(pi, np.ndarray) or not isinstance(pi, Sequence):
            raise TypeError(
                f"{name} must be a sequence of per-agent policies, got {type(pi).__name__}"
            )
        if len(pi) != self.n_agents:
            raise ValueError(f"{name}: a profile needs {self.n_agents} policies, got {len(pi)}")
        out = []
        for i, p in enumerate(pi):
            p = V.check_array(p, f"{name} policy {i}", dtype=np.float64)
            if p.shape != (self.n_states, self.n_actions[i]):
                raise ValueError(
                    f"{name} policy {i} must have shape "
                    f"{(self.n_states, self.n_actions[i])}, got {p.shape}"
                )
            if np.any(p < -1e-12) or not np.allclose(p.sum(-1), 1.0, atol=1e-8):
                raise ValueError(f"{name} policy {i} rows must be probability distributions")
            out.append(p)
        return tuple(out)

    def check_agent(self, i) -> int:
        return V.check_int(i, "i", low=0, high=self.n_agents - 1)

    def joint_policy(self, pi: Sequence[np.ndarray]) -> np.ndarray:
        """Product policy as [S, A_joint]."""
        pi = self.check_policy(pi)
        joint = pi[0]
        for p in pi[1:]:
            joint = (joint[:, :, None] * p[:, None, :]).reshape(self.n_states, -1)
        return joint

    # -- exact quantities --------------------------------------------------------------
    def _state_transition(self, joint: np.ndarray) -> np.ndarray:
        S = self.n_states
        w = joint[:, :, None] * self.prob
        rows = np.broadcast_to(np.arange(S)[:, None, None], w.shape)
        flat = rows * S + self.next_state
        return np.bincount(flat.ravel(), w.ravel(), S * S).reshape(S, S)

    def policy_evaluation(self, pi: Sequence[np.ndarray]) -> np.ndarray:
        """State values V_i(s) of every agent, shape [n, S]."""
        joint = self.joint_policy(pi)
        p_pi = self._state_transition(joint)
        r_pi = (self.reward * joint[None]).sum(-1)  # [n, S]
        return np.linalg.solve(np.eye(self.n_states) - self.gamma * p_pi, r_pi.T).T

    def values(self, pi: Sequence[np.ndarray]) -> np.ndarray:
        """V_i(pi) = rho . V_i, shape [n]."""
        return self.policy_evaluation(pi) @ self.rho

    def occupancy(self, pi: Sequence[np.ndarray]) -> np.ndarray:
        """Normalised discounted state occupancy d^pi [S]."""
        p_pi = self._state_transition(self.joint_policy(pi))
        d = np.linalg.solve((np.eye(self.n_states) - self.gamma * p_pi).T, self.rho)
        return (1.0 - self.gamma) * d

    def induced_mdp(self, i: int, pi: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Transition [S, A_i, S] and reward [S, A_i] of agent i when the others play pi."""
        i = self.check_agent(i)
        pi = self.check_policy(pi)
        S, n = self.n_states, self.n_agents
        shape = (S, *self.n_actions)
        weight = np.ones(shape)
        for j in range(n):
            if j != i:
                view = [1] * (n + 1)
                view[0], view[j + 1] = S, self.n_actions[j]
                weight = weight * pi[j].reshape(view)
        weight = np.moveaxis(weight, i + 1, 1).reshape(S, self.n_actions[i], -1)
        joint_order = np.moveaxis(np.arange(self.n_joint).reshape(self.n_actions), i, 0)
        joint_order = joint_order.reshape(self.n_actions[i], -1)  # [A_i, A_-i] -> joint id
        prob = self.prob[:, joint_order]  # [S, A_i, A_-i, O]
        nxt = self.next_state[:, joint_order]
        w = weight[..., None] * prob
        rows = (
            np.arange(S)[:, None, None, None] * self.n_actions[i]
            + np.arange(self.n_actions[i])[None, :, None, None]
        )
        flat = rows * S + nxt
        p_i = np.bincount(flat.ravel(), w.ravel(), S * self.n_actions[i] * S)
        r_i = (self.reward[i][:, joint_order] * weight).sum(-1)
        return p_i.reshape(S, self.n_actions[i], S), r_i

    def best_response(self, i: int, pi: Sequence[np.ndarray], max_iter: int = 1000):
        """(value rho . V*_i, deterministic best-response policy [S, A_i], V*_i [S])."""
        i = self.check_agent(i)
        max_iter = V.check_int(max_iter, "max_iter", low=1)
        p_i, r_i = self.induced_mdp(i, pi)
        S = self.n_states
        action = r_i.argmax(-1)
        eye = np.eye(S)
        for _ in range(max_iter):  # policy iteration: exact and a handful of solves
            p_pol = p_i[np.arange(S), action]
            v = np.linalg.solve(eye - self.gamma * p_pol, r_i[np.arange(S), action])
            q = r_i + self.gamma * p_i @ v
            best = q.max(-1)
            keep = q[np.arange(S), action] >= best - 1e-12
            new = np.where(keep, action, q.argmax(-1))
            if np.array_equal(new, action):
                break
            action = new
        policy = np.eye(self.n_actions[i])[action]
        return float(self.rho @ v), policy, v


def check_game(game, name: str = "game") -> TabularMarkovGame:
    if not isinstance(game, TabularMarkovGame):
        raise TypeError(f"{name} must be a TabularMarkovGame, got {type(game).__name__}")
    return game


def uniform_profile(game: TabularMarkovGame) -> tuple[np.ndarray, ...]:
    check_game(game)
    return tuple(np.full((game.n_states, a), 1.0 / a) for a in game.n_actions)
