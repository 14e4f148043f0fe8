"""Expert demonstrations and per-agent behaviour cloning.

Each agent's policy is cloned independently from the joint dataset: Laplace-smoothed
action counts on states the data visits, and an explicit fallback on unseen states
(uniform, one fixed action, the policy of the nearest seen state, or a logistic-regression
classifier over state features so off-support behaviour comes from generalisation).
Optional regularisation: label smoothing mixes every cloned policy with the uniform one;
entropy regularisation with weight lambda replaces the per-state maximum-likelihood fit by
argmax_p sum_a q(a|s) log p(a) + lambda H(p), q the (Laplace-smoothed) empirical action
frequencies, solved by gradient ascent on the logits for all states at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .game import TabularMarkovGame

FALLBACKS = ("uniform", "nearest-seen", "logistic")


def collect_demonstrations(
    game: TabularMarkovGame,
    pi_expert: Sequence[np.ndarray],
    n_trajectories: int,
    horizon: int,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Roll out the expert profile; returns states [N, H] and per-agent actions [N, H, n]."""
    if int(n_trajectories) < 1 or int(horizon) < 1:
        raise ValueError("n_trajectories and horizon must be >= 1")
    pi_expert = game.check_policy(pi_expert)
    rng = np.random.default_rng(seed)
    N, H, n = int(n_trajectories), int(horizon), game.n_agents
    states = np.zeros((N, H), dtype=np.int64)
    actions = np.zeros((N, H, n), dtype=np.int64)
    s = rng.choice(game.n_states, size=N, p=game.rho)
    cum_pi = [np.cumsum(p, -1) for p in pi_expert]
    cum_p = np.cumsum(game.prob, -1)
    for t in range(H):
        states[:, t] = s
        for i in range(n):
            u = rng.random((N, 1))
            actions[:, t, i] = np.minimum((u >= cum_pi[i][s]).sum(-1), game.n_actions[i] - 1)
        joint = game.joint_index(actions[:, t])
        o = np.minimum((rng.random((N, 1)) >= cum_p[s, joint]).sum(-1), game.prob.shape[-1] - 1)
        s = game.next_state[s, joint, o]
    return {"states": states, "actions": actions}


def one_hot_features(n_states: int) -> np.ndarray:
    """One-hot state indicator plus a shared constant feature."""
    return np.hstack([np.eye(n_states), np.ones((n_states, 1))])


def entropy_regularised_fit(freq: np.ndarray, weight: float, n_bisect: int = 100) -> np.ndarray:
    """argmax over the simplex of sum_a freq[a] log p[a] + weight * H(p), row by row.

    Stationarity gives freq[a] / p[a] - weight log p[a] = c for one constant c per row, so
    p[a] = freq[a] / (weight w) with w + log w = c / weight + log(freq[a] / weight) (Lambert W,
    solved by Newton on log w) and p[a] = exp(-c / weight) where freq[a] = 0. Every p[a]
    decreases in c and sum_a p[a] = 1 has its root in [0, A max freq + weight log A + 1],
    found by bisection for all rows at once."""
    freq = np.asarray(freq, dtype=float)
    if weight < 0:
        raise ValueError("weight must be >= 0")
    freq = freq / freq.sum(-1, keepdims=True)
    if weight == 0:
        return freq
    A = freq.shape[-1]
    pos = freq > 0
    log_q = np.log(np.where(pos, freq, 1.0) / weight)

    def probs(c):
        t = c[..., None] / weight + log_q
        y = np.where(t > 1, np.log(np.maximum(t, 1.0)), t)  # right of the root: monotone
        for _ in range(60):
            y -= (np.exp(y) + y - t) / (np.exp(y) + 1.0)
        p_pos = np.where(pos, freq, 0.0) / (weight * np.exp(y))
        return np.where(pos, p_pos, np.exp(-c[..., None] / weight))

    lo = np.zeros(freq.shape[:-1])
    hi = A * freq.max(-1) + weight * np.log(A) + 1.0
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        big = probs(mid).sum(-1) > 1.0
        lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
    p = probs(0.5 * (lo + hi))
    return p / p.sum(-1, keepdims=True)


class BehaviourCloning:
    """Per-agent tabular behaviour cloning with an explicit unseen-state fallback.

    ``fallback``: "uniform", "nearest-seen" (policy of the closest visited state in feature
    space), "logistic" (a multinomial logistic regression on state features fitted to all
    (state, action) pairs), or an int: that fixed action. ``entropy_reg`` = lambda > 0 fits
    each seen state's policy by argmax_p sum_a q(a) log p(a) + lambda H(p) (entropy
    regularisation); ``label_smoothing`` mixes the result with the uniform policy.
    """

    def __init__(
        self,
        fallback: str | int = "uniform",
        smoothing: float = 0.0,
        label_smoothing: float = 0.0,
        features: np.ndarray | None = None,
        logistic_c: float = 1.0,
        entropy_reg: float = 0.0,
    ):
        if not (isinstance(fallback, (int, np.integer)) or fallback in FALLBACKS):
            raise ValueError(f"fallback must be an action index or one of {FALLBACKS}")
        if smoothing < 0 or not (0.0 <= label_smoothing <= 1.0):
            raise ValueError("need smoothing >= 0 and label_smoothing in [0, 1]")
        if not np.isfinite(entropy_reg) or entropy_reg < 0:
            raise ValueError("entropy_reg must be a finite number >= 0")
        self.entropy_reg = float(entropy_reg)
        self.fallback = fallback
        self.smoothing = float(smoothing)
        self.label_smoothing = float(label_smoothing)
        self.features = features
        self.logistic_c = float(logistic_c)

    def fit(self, data: dict[str, np.ndarray], game: TabularMarkovGame):
        states = np.asarray(data["states"]).reshape(-1)
        actions = np.asarray(data["actions"]).reshape(states.size, -1)
        if actions.shape[1] != game.n_agents:
            raise ValueError(
                f"actions list {actions.shape[1]} agents, the game has {game.n_agents}"
            )
        if states.min() < 0 or states.max() >= game.n_states:
            raise ValueError("states out of range for this game")
        S = game.n_states
        feats = one_hot_features(S) if self.features is None else np.asarray(self.features)
        if feats.shape[0] != S:
            raise ValueError("features must have one row per state")
        policies = []
        self.seen_ = np.bincount(states, minlength=S) > 0
        for i, A in enumerate(game.n_actions):
            if actions[:, i].min() < 0 or actions[:, i].max() >= A:
                raise ValueError(f"actions of agent {i} out of range")
            counts = np.zeros((S, A))
            np.add.at(counts, (states, actions[:, i]), 1.0)
            total = counts.sum(-1, keepdims=True)
            seen = total[:, 0] > 0
            cloned = (counts + self.smoothing) / np.maximum(total + self.smoothing * A, 1e-300)
            if self.entropy_reg > 0 and seen.any():
                cloned[seen] = entropy_regularised_fit(cloned[seen], self.entropy_reg)
            cloned[~seen] = self._fallback(i, A, feats, seen, cloned, states, actions[:, i])
            if self.label_smoothing:
                cloned = (1 - self.label_smoothing) * cloned + self.label_smoothing / A
            policies.append(cloned / cloned.sum(-1, keepdims=True))
        self.policy_ = tuple(policies)
        return self

    def _fallback(self, i, A, feats, seen, cloned, states, acts) -> np.ndarray:
        unseen = ~seen
        if isinstance(self.fallback, (int, np.integer)):
            if not (0 <= self.fallback < A):
                raise ValueError(f"fallback action {self.fallback} out of range for agent {i}")
            return np.eye(A)[np.full(unseen.sum(), int(self.fallback))]
        if self.fallback == "uniform" or not seen.any():
            return np.full((unseen.sum(), A), 1.0 / A)
        if self.fallback == "nearest-seen":
            seen_idx = np.flatnonzero(seen)
            dist = ((feats[unseen][:, None, :] - feats[seen_idx][None, :, :]) ** 2).sum(-1)
            return cloned[seen_idx[dist.argmin(1)]]
        # logistic regression on state features; a single observed class is predicted
        # everywhere (what any classifier fitted to it does)
        classes = np.unique(acts)
        if classes.size == 1:
            return np.eye(A)[np.full(unseen.sum(), classes[0])]
        from sklearn.linear_model import LogisticRegression

        clf = LogisticRegression(C=self.logistic_c, max_iter=2000).fit(feats[states], acts)
        proba = np.zeros((unseen.sum(), A))
        proba[:, clf.classes_] = clf.predict_proba(feats[unseen])
        return proba

    def policy(self) -> tuple[np.ndarray, ...]:
        if not hasattr(self, "policy_"):
            raise RuntimeError("call fit() first")
        return self.policy_
