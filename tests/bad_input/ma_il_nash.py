"""Bad-input cases for iclr26.rl.ma_il_nash (read by tests/framework/test_bad_input.py)."""

from __future__ import annotations

import functools

import numpy as np

from iclr26.rl.ma_il_nash import (
    BehaviourCloning,
    DominantCoordinationGame,
    TabularMarkovGame,
    TagGame,
    TriggerGame,
    bc_error,
    br_continuity_constant,
    collect_demonstrations,
    dominant_strategy_bound,
    dominant_strategy_check,
    entropy_regularised_fit,
    matrix_game,
    measure_matching_error,
    nash_gap,
    nash_gap_per_agent,
    one_hot_features,
    quantal_response_equilibrium,
    random_profile,
    soft_best_response,
    soft_nash_gap,
    soft_values,
    total_variation,
    uniform_profile,
)

NAN, INF = float("nan"), float("inf")


@functools.cache
def trigger() -> TriggerGame:
    return TriggerGame()


def expert():
    return trigger().expert_policy()


def nan_profile():
    bad = np.array([[NAN, 0.5], [0.5, 0.5]])
    return bad, expert()[1]


def wrong_shape_profile():
    return np.full((3, 2), 0.5), expert()[1]


@functools.cache
def demos():
    return collect_demonstrations(trigger(), expert(), 3, 4, seed=0)


def game_args(**override):
    args = {
        "n_actions": [2, 2],
        "prob": np.full((2, 4, 2), 0.5),
        "next_state": np.array([[[0, 1]] * 4, [[1, 0]] * 4]),
        "reward": np.zeros((2, 2, 4)),
        "gamma": 0.9,
    }
    args.update(override)
    return args


CASES = [
    # games
    (
        "TabularMarkovGame",
        "nan",
        lambda: TabularMarkovGame(**game_args(reward=np.full((2, 2, 4), NAN))),
        ValueError,
        "reward",
    ),
    (
        "TabularMarkovGame",
        "inf",
        lambda: TabularMarkovGame(**game_args(reward=np.full((2, 2, 4), INF))),
        ValueError,
        "reward",
    ),
    (
        "TabularMarkovGame",
        "nan",
        lambda: TabularMarkovGame(**game_args(prob=np.full((2, 4, 2), NAN))),
        ValueError,
        "prob",
    ),
    (
        "TabularMarkovGame",
        "empty",
        lambda: TabularMarkovGame(**game_args(prob=np.zeros((0, 4, 2)))),
        ValueError,
        "prob",
    ),
    (
        "TabularMarkovGame",
        "shape",
        lambda: TabularMarkovGame(**game_args(reward=np.zeros((2, 2)))),
        ValueError,
        "reward",
    ),
    (
        "TabularMarkovGame",
        "range",
        lambda: TabularMarkovGame(**game_args(gamma=1.0)),
        ValueError,
        "gamma",
    ),
    (
        "TabularMarkovGame",
        "nan",
        lambda: TabularMarkovGame(**game_args(gamma=NAN)),
        ValueError,
        "gamma",
    ),
    (
        "TabularMarkovGame",
        "range",
        lambda: TabularMarkovGame(**game_args(n_actions=[2, 0])),
        ValueError,
        "n_actions",
    ),
    (
        "TabularMarkovGame",
        "dtype",
        lambda: TabularMarkovGame(**game_args(next_state=np.full((2, 4, 2), 0.5))),
        TypeError,
        "next_state",
    ),
    (
        "TabularMarkovGame",
        "range",
        lambda: TabularMarkovGame(**game_args(rho=np.array([0.9, 0.9]))),
        ValueError,
        "rho",
    ),
    ("TabularMarkovGame", "nan", lambda: trigger().values(nan_profile()), ValueError, "policy 0"),
    (
        "TabularMarkovGame",
        "shape",
        lambda: trigger().values(wrong_shape_profile()),
        ValueError,
        "policy 0",
    ),
    ("TabularMarkovGame", "range", lambda: trigger().best_response(2, expert()), ValueError, "i"),
    ("TabularMarkovGame", "type", lambda: trigger().values(np.full((2, 2), 0.5)), TypeError, "pi"),
    ("TriggerGame", "nan", lambda: TriggerGame(T=NAN), ValueError, "T"),
    ("TriggerGame", "range", lambda: TriggerGame(T=1.0, R=2.0), ValueError, "T > R"),
    ("TriggerGame", "range", lambda: TriggerGame(gamma=-0.1), ValueError, "gamma"),
    (
        "DominantCoordinationGame",
        "range",
        lambda: DominantCoordinationGame(n_agents=0),
        ValueError,
        "n_agents",
    ),
    ("DominantCoordinationGame", "range", lambda: DominantCoordinationGame(L=1), ValueError, "L"),
    (
        "DominantCoordinationGame",
        "nan",
        lambda: DominantCoordinationGame(slip=NAN),
        ValueError,
        "slip",
    ),
    (
        "DominantCoordinationGame",
        "range",
        lambda: DominantCoordinationGame(z_switch=1.5),
        ValueError,
        "z_switch",
    ),
    (
        "DominantCoordinationGame",
        "range",
        lambda: DominantCoordinationGame(n_agents=9),
        ValueError,
        "n_agents and L",
    ),
    ("TagGame", "range", lambda: TagGame(grid=1), ValueError, "grid"),
    ("TagGame", "other", lambda: TagGame(grid=2, n_pursuers=3), ValueError, "n_pursuers"),
    ("TagGame", "nan", lambda: TagGame(grid=2, slip=NAN), ValueError, "slip"),
    ("TagGame", "range", lambda: TagGame(grid=40, n_pursuers=2), ValueError, "grid and n_pursuers"),
    (
        "TagGame",
        "range",
        lambda: TagGame(grid=2).expert_policy(temperature=0.0),
        ValueError,
        "temperature",
    ),
    (
        "matrix_game",
        "nan",
        lambda: matrix_game([[NAN, 0], [0, 1]], [[1, 0], [0, 1]]),
        ValueError,
        "payoff_0",
    ),
    (
        "matrix_game",
        "shape",
        lambda: matrix_game([[1, 0], [0, 1]], [[1, 0, 0]]),
        ValueError,
        "payoff_1",
    ),
    (
        "matrix_game",
        "empty",
        lambda: matrix_game(np.zeros((0, 2)), np.zeros((0, 2))),
        ValueError,
        "payoff_0",
    ),
    ("matrix_game", "range", lambda: matrix_game([[1]], [[1]], gamma=1.0), ValueError, "gamma"),
    ("uniform_profile", "type", lambda: uniform_profile("game"), TypeError, "game"),
    ("random_profile", "type", lambda: random_profile(trigger(), 0), TypeError, "rng"),
    (
        "random_profile",
        "type",
        lambda: random_profile(trigger(), np.random.default_rng(0), deterministic="yes"),
        TypeError,
        "deterministic",
    ),
    # metrics
    ("nash_gap", "nan", lambda: nash_gap(trigger(), nan_profile()), ValueError, "policy 0"),
    (
        "nash_gap",
        "other",
        lambda: nash_gap(trigger(), expert(), reduce="mean"),
        ValueError,
        "reduce",
    ),
    (
        "nash_gap_per_agent",
        "shape",
        lambda: nash_gap_per_agent(trigger(), wrong_shape_profile()),
        ValueError,
        "policy 0",
    ),
    ("nash_gap_per_agent", "type", lambda: nash_gap_per_agent(None, expert()), TypeError, "game"),
    (
        "bc_error",
        "nan",
        lambda: bc_error(trigger(), nan_profile(), expert()),
        ValueError,
        "policy 0",
    ),
    (
        "bc_error",
        "shape",
        lambda: bc_error(trigger(), expert(), wrong_shape_profile()),
        ValueError,
        "pi_expert",
    ),
    (
        "bc_error",
        "other",
        lambda: bc_error(trigger(), expert(), expert(), reduce="min"),
        ValueError,
        "reduce",
    ),
    (
        "measure_matching_error",
        "nan",
        lambda: measure_matching_error(trigger(), nan_profile(), expert()),
        ValueError,
        "policy 0",
    ),
    ("total_variation", "nan", lambda: total_variation([NAN, 1.0], [0.5, 0.5]), ValueError, "p"),
    (
        "total_variation",
        "shape",
        lambda: total_variation([0.5, 0.5], [1.0, 0.0, 0.0]),
        ValueError,
        "p and q",
    ),
    ("total_variation", "empty", lambda: total_variation([], []), ValueError, "p"),
    (
        "dominant_strategy_bound",
        "nan",
        lambda: dominant_strategy_bound(3, NAN, 0.9, 1.0),
        ValueError,
        "eps_bc",
    ),
    (
        "dominant_strategy_bound",
        "range",
        lambda: dominant_strategy_bound(3, -0.1, 0.9, 1.0),
        ValueError,
        "eps_bc",
    ),
    (
        "dominant_strategy_bound",
        "range",
        lambda: dominant_strategy_bound(0, 0.1, 0.9, 1.0),
        ValueError,
        "n_agents",
    ),
    (
        "dominant_strategy_bound",
        "inf",
        lambda: dominant_strategy_bound(3, 0.1, 0.9, INF),
        ValueError,
        "r_max",
    ),
    (
        "dominant_strategy_bound",
        "range",
        lambda: dominant_strategy_bound(3, 0.1, 1.0, 1.0),
        ValueError,
        "gamma",
    ),
    (
        "dominant_strategy_check",
        "nan",
        lambda: dominant_strategy_check(trigger(), nan_profile()),
        ValueError,
        "policy 0",
    ),
    (
        "dominant_strategy_check",
        "range",
        lambda: dominant_strategy_check(trigger(), expert(), n_samples=-1),
        ValueError,
        "n_samples",
    ),
    (
        "dominant_strategy_check",
        "nan",
        lambda: dominant_strategy_check(trigger(), expert(), tol=NAN),
        ValueError,
        "tol",
    ),
    (
        "soft_best_response",
        "range",
        lambda: soft_best_response(trigger(), 0, expert(), 0.0),
        ValueError,
        "temperature",
    ),
    (
        "soft_best_response",
        "nan",
        lambda: soft_best_response(trigger(), 0, expert(), NAN),
        ValueError,
        "temperature",
    ),
    (
        "soft_best_response",
        "range",
        lambda: soft_best_response(trigger(), 5, expert(), 1.0),
        ValueError,
        "i",
    ),
    (
        "br_continuity_constant",
        "range",
        lambda: br_continuity_constant(trigger(), expert(), radius=0.0),
        ValueError,
        "radius",
    ),
    (
        "br_continuity_constant",
        "nan",
        lambda: br_continuity_constant(trigger(), expert(), temperature=NAN),
        ValueError,
        "temperature",
    ),
    (
        "br_continuity_constant",
        "range",
        lambda: br_continuity_constant(trigger(), expert(), n_samples=0),
        ValueError,
        "n_samples",
    ),
    (
        "soft_values",
        "range",
        lambda: soft_values(trigger(), expert(), -1.0),
        ValueError,
        "temperature",
    ),
    (
        "soft_values",
        "nan",
        lambda: soft_values(trigger(), nan_profile(), 1.0),
        ValueError,
        "policy 0",
    ),
    (
        "soft_nash_gap",
        "inf",
        lambda: soft_nash_gap(trigger(), expert(), INF),
        ValueError,
        "temperature",
    ),
    (
        "quantal_response_equilibrium",
        "range",
        lambda: quantal_response_equilibrium(trigger(), 0.0),
        ValueError,
        "temperature",
    ),
    (
        "quantal_response_equilibrium",
        "range",
        lambda: quantal_response_equilibrium(trigger(), 1.0, damping=0.0),
        ValueError,
        "damping",
    ),
    (
        "quantal_response_equilibrium",
        "nan",
        lambda: quantal_response_equilibrium(trigger(), 1.0, damping=NAN),
        ValueError,
        "damping",
    ),
    # demonstrations and behaviour cloning
    (
        "collect_demonstrations",
        "range",
        lambda: collect_demonstrations(trigger(), expert(), 0, 5),
        ValueError,
        "n_trajectories",
    ),
    (
        "collect_demonstrations",
        "type",
        lambda: collect_demonstrations(trigger(), expert(), 2.5, 5),
        TypeError,
        "n_trajectories",
    ),
    (
        "collect_demonstrations",
        "range",
        lambda: collect_demonstrations(trigger(), expert(), 2, -1),
        ValueError,
        "horizon",
    ),
    (
        "collect_demonstrations",
        "nan",
        lambda: collect_demonstrations(trigger(), nan_profile(), 2, 2),
        ValueError,
        "policy 0",
    ),
    ("one_hot_features", "range", lambda: one_hot_features(0), ValueError, "n_states"),
    ("one_hot_features", "type", lambda: one_hot_features(2.5), TypeError, "n_states"),
    (
        "entropy_regularised_fit",
        "nan",
        lambda: entropy_regularised_fit([[NAN, 1.0]], 0.1),
        ValueError,
        "freq",
    ),
    (
        "entropy_regularised_fit",
        "empty",
        lambda: entropy_regularised_fit(np.zeros((0, 2)), 0.1),
        ValueError,
        "freq",
    ),
    (
        "entropy_regularised_fit",
        "shape",
        lambda: entropy_regularised_fit([0.5, 0.5], 0.1),
        ValueError,
        "freq",
    ),
    (
        "entropy_regularised_fit",
        "range",
        lambda: entropy_regularised_fit([[0.5, 0.5]], -1.0),
        ValueError,
        "weight",
    ),
    (
        "entropy_regularised_fit",
        "nan",
        lambda: entropy_regularised_fit([[0.5, 0.5]], NAN),
        ValueError,
        "weight",
    ),
    (
        "entropy_regularised_fit",
        "range",
        lambda: entropy_regularised_fit([[0.0, 0.0]], 0.1),
        ValueError,
        "freq",
    ),
    (
        "BehaviourCloning",
        "other",
        lambda: BehaviourCloning(fallback="magic").fit(demos(), trigger()),
        ValueError,
        "fallback",
    ),
    (
        "BehaviourCloning",
        "range",
        lambda: BehaviourCloning(fallback=7).fit(demos(), trigger()),
        ValueError,
        "fallback",
    ),
    (
        "BehaviourCloning",
        "nan",
        lambda: BehaviourCloning(smoothing=NAN).fit(demos(), trigger()),
        ValueError,
        "smoothing",
    ),
    (
        "BehaviourCloning",
        "range",
        lambda: BehaviourCloning(label_smoothing=1.5).fit(demos(), trigger()),
        ValueError,
        "label_smoothing",
    ),
    (
        "BehaviourCloning",
        "inf",
        lambda: BehaviourCloning(entropy_reg=INF).fit(demos(), trigger()),
        ValueError,
        "entropy_reg",
    ),
    (
        "BehaviourCloning",
        "range",
        lambda: BehaviourCloning(logistic_c=0.0).fit(demos(), trigger()),
        ValueError,
        "logistic_c",
    ),
    (
        "BehaviourCloning",
        "nan",
        lambda: BehaviourCloning(features=np.full((2, 3), NAN)).fit(demos(), trigger()),
        ValueError,
        "features",
    ),
    (
        "BehaviourCloning",
        "shape",
        lambda: BehaviourCloning(features=np.ones((5, 3))).fit(demos(), trigger()),
        ValueError,
        "features",
    ),
    (
        "BehaviourCloning",
        "dtype",
        lambda: BehaviourCloning().fit(
            {"states": np.zeros((2, 2)), "actions": np.zeros((2, 2, 2), int)}, trigger()
        ),
        TypeError,
        "states",
    ),
    (
        "BehaviourCloning",
        "range",
        lambda: BehaviourCloning().fit(
            {"states": np.full((2, 2), 9), "actions": np.zeros((2, 2, 2), int)}, trigger()
        ),
        ValueError,
        "states",
    ),
    (
        "BehaviourCloning",
        "shape",
        lambda: BehaviourCloning().fit(
            {"states": np.zeros((2, 2), int), "actions": np.zeros((2, 2, 3), int)}, trigger()
        ),
        ValueError,
        "actions",
    ),
    (
        "BehaviourCloning",
        "empty",
        lambda: BehaviourCloning().fit(
            {"states": np.zeros((0, 2), int), "actions": np.zeros((0, 2, 2), int)}, trigger()
        ),
        ValueError,
        "states",
    ),
    (
        "BehaviourCloning",
        "type",
        lambda: BehaviourCloning().fit([1, 2], trigger()),
        TypeError,
        "data",
    ),
]

EXEMPT: dict[str, str] = {}
