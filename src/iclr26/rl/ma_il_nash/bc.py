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
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V
from iclr26.sklearn_contract import expected_failed_checks

from .game import TabularMarkovGame, check_game

FALLBACKS = ("uniform", "nearest-seen", "logistic")
# scikit-learn checks that fit on arrays: fit(data, game) takes a demonstration dict and a game
SKLEARN_EXPECTED_FAILED_CHECKS = expected_failed_checks(
    "fit takes a demonstration dict and a TabularMarkovGame, not a data matrix X"
)


def collect_demonstrations(
    game: TabularMarkovGame,
    pi_expert: Sequence[np.ndarray],
    n_trajectories: int,
    horizon: int,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Roll out the expert profile; returns states [N, H] and per-agent actions [N, H, n]."""
    check_game(game)
    n_trajectories = V.check_int(n_trajectories, "n_trajectories", low=1)
    horizon = V.check_int(horizon, "horizon", low=1)
    seed = V.check_int(seed, "seed", low=0, allow_none=True)
    pi_expert = game.check_policy(pi_expert, "pi_expert")
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
    n_states = V.check_int(n_states, "n_states", low=1)
    return np.hstack([np.eye(n_states), np.ones((n_states, 1))])


def entropy_regularised_fit(freq: np.ndarray, weight: float, n_bisect: int = 100) -> np.ndarray:
    """argmax over the simplex of sum_a freq[a] log p[a] + weight * H(p), row by row.

    Stationarity gives freq[a] / p[a] - weight log p[a] = c for one constant c per row, so
    p[a] = freq[a] / (weight w) with w + log w = c / weight + log(freq[a] / weight) (Lambert W,
    solved by Newton on log w) and p[a] = exp(-c / weight) where freq[a] = 0. Every p[a]
    decreases in c and sum_a p[a] = 1 has its root in [0, A max freq + weight log A + 1],
    found by bisection for all rows at once."""
    freq = V.check_array(freq, "freq", ndim=2, dtype=np.float64, low=0.0)
    weight = V.check_scalar(weight, "weight", low=0.0)
    n_bisect = V.check_int(n_bisect, "n_bisect", low=1)
    if np.any(freq.sum(-1) <= 0):
        raise ValueError("freq must have a positive total in every row")
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


class BehaviourCloning(BaseEstimator):
    """Per-agent tabular behaviour cloning with an explicit unseen-state fallback.

    ``fallback``: "uniform", "nearest-seen" (policy of the closest visited state in feature
    space), "logistic" (a multinomial logistic regression on state features fitted to all
    (state, action) pairs), or an int: that fixed action. ``entropy_reg`` = lambda > 0 fits
    each seen state's policy by argmax_p sum_a q(a) log p(a) + lambda H(p) (entropy
    regularisation); ``label_smoothing`` mixes the result with the uniform policy.

    A scikit-learn estimator: ``get_params``/``set_params``/``clone`` work and the
    hyperparameters are validated in :meth:`fit` (scikit-learn's convention). No mixin
    applies: it returns a policy per agent (``policy()``), not predictions. ``fit(data,
    game)`` takes a demonstration dict and the game, not a matrix ``X``, so the checks of
    :func:`~sklearn.utils.estimator_checks.check_estimator` that fit it on arrays cannot pass;
    they are listed in :data:`SKLEARN_EXPECTED_FAILED_CHECKS` with that reason
    (check_estimators_dtypes, check_fit_score_takes_y, check_estimators_fit_returns_self,
    check_readonly_memmap_input, check_n_features_in, check_positive_only_tag_during_fit,
    check_estimators_empty_data_messages, check_pipeline_consistency,
    check_estimators_nan_inf, check_estimators_overwrite_params, check_estimator_sparse_array,
    check_estimator_sparse_matrix, check_estimators_pickle, check_f_contiguous_array_estimator,
    check_fit2d_1sample, check_fit2d_1feature, check_fit1d, check_fit2d_predict1d,
    check_dict_unchanged, check_dont_overwrite_parameters, check_fit_idempotent,
    check_fit_check_is_fitted, check_n_features_in_after_fitting, check_complex_data,
    check_dtype_object, check_estimator_sparse_tag, check_methods_sample_order_invariance,
    check_methods_subset_invariance). The API checks pass (tested).
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
        self.fallback = fallback
        self.smoothing = smoothing
        self.label_smoothing = label_smoothing
        self.features = features
        self.logistic_c = logistic_c
        self.entropy_reg = entropy_reg

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False  # fit(data, game): the actions are inside data
        tags.non_deterministic = False
        return tags

    def _check_params(self, game: TabularMarkovGame) -> dict:
        fallback = self.fallback
        if isinstance(fallback, bool) or not (
            isinstance(fallback, int | np.integer) or fallback in FALLBACKS
        ):
            raise ValueError(
                f"fallback must be an action index or one of {FALLBACKS}, got {fallback!r}"
            )
        if isinstance(fallback, int | np.integer):
            V.check_int(fallback, "fallback", low=0, high=min(game.n_actions) - 1)
        S = game.n_states
        if self.features is None:
            feats = one_hot_features(S)
        else:
            feats = V.check_array(self.features, "features", ndim=2, dtype=np.float64)
            if feats.shape[0] != S:
                raise ValueError(
                    f"features must have one row per state ({S}), got {feats.shape[0]}"
                )
        return {
            "smoothing": V.check_scalar(self.smoothing, "smoothing", low=0.0),
            "label_smoothing": V.check_probability(self.label_smoothing, "label_smoothing"),
            "logistic_c": V.check_scalar(self.logistic_c, "logistic_c", low=0.0, low_open=True),
            "entropy_reg": V.check_scalar(self.entropy_reg, "entropy_reg", low=0.0),
            "features": feats,
        }

    def fit(self, data: dict[str, np.ndarray], game: TabularMarkovGame):
        """Clone each agent's policy from ``data`` (``collect_demonstrations``'s dict:
        states [N, H] and actions [N, H, n]); returns self."""
        check_game(game)
        params = self._check_params(game)
        if not isinstance(data, dict) or not {"states", "actions"} <= set(data):
            raise TypeError("data must be a dict with 'states' and 'actions' arrays")
        states = V.check_array(data["states"], "data['states']", dtype=None).reshape(-1)
        if states.dtype.kind not in "iu":
            raise TypeError(f"data['states'] must hold integer states, got {states.dtype}")
        actions = V.check_array(data["actions"], "data['actions']", dtype=None)
        if actions.dtype.kind not in "iu":
            raise TypeError(f"data['actions'] must hold integer actions, got {actions.dtype}")
        if actions.size != states.size * game.n_agents:
            raise ValueError(
                f"data['actions'] must hold {game.n_agents} actions per state, got shape "
                f"{actions.shape} for {states.size} states"
            )
        actions = actions.reshape(states.size, -1)
        V.check_array(states, "data['states']", low=0, high=game.n_states - 1)
        S = game.n_states
        feats = params["features"]
        smoothing, label_smoothing = params["smoothing"], params["label_smoothing"]
        policies = []
        self.seen_ = np.bincount(states, minlength=S) > 0
        for i, A in enumerate(game.n_actions):
            V.check_array(actions[:, i], f"data['actions'] of agent {i}", low=0, high=A - 1)
            counts = np.zeros((S, A))
            np.add.at(counts, (states, actions[:, i]), 1.0)
            total = counts.sum(-1, keepdims=True)
            seen = total[:, 0] > 0
            cloned = (counts + smoothing) / np.maximum(total + smoothing * A, 1e-300)
            if params["entropy_reg"] > 0 and seen.any():
                cloned[seen] = entropy_regularised_fit(cloned[seen], params["entropy_reg"])
            cloned[~seen] = self._fallback(
                i, A, feats, seen, cloned, states, actions[:, i], params["logistic_c"]
            )
            if label_smoothing:
                cloned = (1 - label_smoothing) * cloned + label_smoothing / A
            policies.append(cloned / cloned.sum(-1, keepdims=True))
        self.policy_ = tuple(policies)
        return self

    def _fallback(self, i, A, feats, seen, cloned, states, acts, logistic_c) -> np.ndarray:
        unseen = ~seen
        if isinstance(self.fallback, (int, np.integer)):
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

        clf = LogisticRegression(C=logistic_c, max_iter=2000).fit(feats[states], acts)
        proba = np.zeros((unseen.sum(), A))
        proba[:, clf.classes_] = clf.predict_proba(feats[unseen])
        return proba

    def policy(self) -> tuple[np.ndarray, ...]:
        check_is_fitted(self, "policy_")
        return self.policy_
