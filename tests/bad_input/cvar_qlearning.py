"""Bad-input cases for iclr26.rl.cvar_qlearning (read by tests/framework/test_bad_input.py)."""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np

from iclr26.rl.cvar_qlearning import (
    AugmentedCVaRQLearning,
    BudgetAugmentedWrapper,
    BudgetGrid,
    CVaRDecisionTreeEnv,
    EpisodicTable,
    PredictiveCVaRQLearning,
    RiskNeutralQLearning,
    RiskyGridWorldEnv,
    TableSampler,
    TabularEpisodicEnv,
    cvar_dynamic_programming,
    cvar_of_distribution,
    decision_tree_table,
    default_grid,
    empirical_cvar,
    evaluate_cvar,
    monte_carlo_returns,
    neutral_policy_cvar,
    policy_cvar,
    return_distribution,
    risk_neutral_q,
    risky_grid_table,
    table_of,
)

NAN, INF = float("nan"), float("inf")


@functools.cache
def tree() -> EpisodicTable:
    return decision_tree_table()


@functools.cache
def agent() -> PredictiveCVaRQLearning:
    return PredictiveCVaRQLearning(n_replications=2, seed=0).learn(tree(), 2)


@functools.cache
def solution():
    return cvar_dynamic_programming(tree(), 0.1)


def bandit(**override):
    """A one-step bandit's table arrays, with some of them replaced."""
    arrays = {
        "prob": np.array([[[0.5, 0.5]], [[1.0, 0.0]]]),
        "next_state": np.ones((2, 1, 2), dtype=int),
        "reward": np.array([[[-1.0, 2.0]], [[0.0, 0.0]]]),
        "terminal": np.ones((2, 1, 2), dtype=bool),
        "start_state": 0,
        "horizon": 1,
    }
    arrays.update(override)
    return EpisodicTable(**arrays)


def stepped_tree_env():
    env = CVaRDecisionTreeEnv()
    env.reset(seed=0)
    return env


def zero_policy(rep, state, eta):
    return np.zeros_like(state)


CASES = [
    # tables
    (
        "EpisodicTable",
        "nan",
        lambda: bandit(reward=np.array([[[NAN, 2.0]], [[0, 0]]])),
        ValueError,
        "reward",
    ),
    (
        "EpisodicTable",
        "inf",
        lambda: bandit(reward=np.array([[[-INF, 2.0]], [[0, 0]]])),
        ValueError,
        "reward",
    ),
    (
        "EpisodicTable",
        "nan",
        lambda: bandit(prob=np.array([[[NAN, 0.5]], [[1, 0]]])),
        ValueError,
        "prob",
    ),
    ("EpisodicTable", "empty", lambda: bandit(prob=np.zeros((0, 1, 2))), ValueError, "prob"),
    ("EpisodicTable", "shape", lambda: bandit(reward=np.zeros((2, 1, 3))), ValueError, "reward"),
    ("EpisodicTable", "range", lambda: bandit(horizon=0), ValueError, "horizon"),
    ("EpisodicTable", "range", lambda: bandit(start_state=5), ValueError, "start_state"),
    (
        "EpisodicTable",
        "dtype",
        lambda: bandit(next_state=np.full((2, 1, 2), 0.5)),
        TypeError,
        "next_state",
    ),
    (
        "TableSampler",
        "range",
        lambda: TableSampler(tree(), 0, np.random.default_rng(0)),
        ValueError,
        "n_copies",
    ),
    ("TableSampler", "type", lambda: TableSampler(tree(), 2, 0), TypeError, "rng"),
    (
        "TableSampler",
        "range",
        lambda: TableSampler(tree(), 2, np.random.default_rng(0)).step(np.array([0, 7])),
        ValueError,
        "action",
    ),
    (
        "TableSampler",
        "shape",
        lambda: TableSampler(tree(), 2, np.random.default_rng(0)).step(np.array([0])),
        ValueError,
        "action",
    ),
    ("risky_grid_table", "nan", lambda: risky_grid_table(wind_prob=NAN), ValueError, "wind_prob"),
    ("risky_grid_table", "range", lambda: risky_grid_table(wind_prob=1.0), ValueError, "wind_prob"),
    ("risky_grid_table", "range", lambda: risky_grid_table(rows=1), ValueError, "rows"),
    ("risky_grid_table", "type", lambda: risky_grid_table(cols=4.5), TypeError, "cols"),
    (
        "risky_grid_table",
        "inf",
        lambda: risky_grid_table(lava_penalty=INF),
        ValueError,
        "lava_penalty",
    ),
    # environments
    ("RiskyGridWorldEnv", "nan", lambda: RiskyGridWorldEnv(wind_prob=NAN), ValueError, "wind_prob"),
    ("RiskyGridWorldEnv", "range", lambda: RiskyGridWorldEnv(horizon=-1), ValueError, "horizon"),
    ("CVaRDecisionTreeEnv", "range", lambda: stepped_tree_env().step(2), ValueError, "action"),
    ("TabularEpisodicEnv", "type", lambda: TabularEpisodicEnv({"prob": 1}), TypeError, "table"),
    (
        "BudgetAugmentedWrapper",
        "nan",
        lambda: BudgetAugmentedWrapper(gym.make("iclr26/CVaRDecisionTree-v0"), NAN),
        ValueError,
        "eta0",
    ),
    (
        "BudgetAugmentedWrapper",
        "inf",
        lambda: BudgetAugmentedWrapper(gym.make("iclr26/CVaRDecisionTree-v0"), -INF),
        ValueError,
        "eta0",
    ),
    (
        "BudgetAugmentedWrapper",
        "type",
        lambda: BudgetAugmentedWrapper(tree(), 0.0),
        TypeError,
        "env",
    ),
    (
        "BudgetAugmentedWrapper",
        "nan",
        lambda: BudgetAugmentedWrapper(gym.make("iclr26/CVaRDecisionTree-v0"), 0.0).reset(
            options={"eta0": NAN}
        ),
        ValueError,
        "eta0",
    ),
    # budget grid
    ("BudgetGrid", "nan", lambda: BudgetGrid(NAN, 5), ValueError, "lo"),
    ("BudgetGrid", "inf", lambda: BudgetGrid(0, INF), ValueError, "hi"),
    ("BudgetGrid", "range", lambda: BudgetGrid(5, 0), ValueError, "hi"),
    ("BudgetGrid", "range", lambda: BudgetGrid(0, 5, 0.0), ValueError, "step"),
    ("BudgetGrid", "nan", lambda: BudgetGrid(0, 5, NAN), ValueError, "step"),
    ("BudgetGrid", "range", lambda: BudgetGrid(0, 1e9, 1e-3), ValueError, "step"),
    ("BudgetGrid", "nan", lambda: BudgetGrid(0, 5).index(np.array([1.0, NAN])), ValueError, "eta"),
    ("BudgetGrid", "inf", lambda: BudgetGrid(0, 5).position(INF), ValueError, "eta"),
    ("BudgetGrid", "nan", lambda: BudgetGrid(0, 5).shift(np.array([NAN])), ValueError, "reward"),
    ("default_grid", "type", lambda: default_grid(None), TypeError, "table"),
    # exact solvers
    (
        "cvar_dynamic_programming",
        "range",
        lambda: cvar_dynamic_programming(tree(), 0.0),
        ValueError,
        "q",
    ),
    (
        "cvar_dynamic_programming",
        "nan",
        lambda: cvar_dynamic_programming(tree(), NAN),
        ValueError,
        "q",
    ),
    (
        "cvar_dynamic_programming",
        "range",
        lambda: cvar_dynamic_programming(tree(), 0.1, BudgetGrid(0, 5)),
        ValueError,
        "grid must cover",
    ),
    (
        "cvar_dynamic_programming",
        "type",
        lambda: cvar_dynamic_programming(tree(), 0.1, (0, 5)),
        TypeError,
        "grid",
    ),
    (
        "cvar_dynamic_programming",
        "range",
        lambda: cvar_dynamic_programming(tree(), 0.1, tol=0),
        ValueError,
        "tol",
    ),
    (
        "CVaRSolution",
        "nan",
        lambda: solution().act(np.array([0]), np.array([NAN])),
        ValueError,
        "eta",
    ),
    (
        "CVaRSolution",
        "range",
        lambda: solution().act(np.array([9]), np.array([0.0])),
        ValueError,
        "state",
    ),
    (
        "CVaRSolution",
        "shape",
        lambda: solution().act(np.array([0, 1]), np.array([0.0])),
        ValueError,
        "eta",
    ),
    ("risk_neutral_q", "nan", lambda: risk_neutral_q(tree(), tol=NAN), ValueError, "tol"),
    ("risk_neutral_q", "range", lambda: risk_neutral_q(tree(), max_iter=0), ValueError, "max_iter"),
    ("neutral_policy_cvar", "range", lambda: neutral_policy_cvar(tree(), 1.5), ValueError, "q"),
    (
        "cvar_of_distribution",
        "nan",
        lambda: cvar_of_distribution([1.0, NAN], [0.5, 0.5], 0.1),
        ValueError,
        "values",
    ),
    (
        "cvar_of_distribution",
        "nan",
        lambda: cvar_of_distribution([1.0, 2.0], [NAN, 0.5], 0.1),
        ValueError,
        "probs",
    ),
    (
        "cvar_of_distribution",
        "range",
        lambda: cvar_of_distribution([1.0, 2.0], [0.2, 0.2], 0.1),
        ValueError,
        "probs",
    ),
    (
        "cvar_of_distribution",
        "shape",
        lambda: cvar_of_distribution([1.0, 2.0, 3.0], [0.5, 0.5], 0.1),
        ValueError,
        "values",
    ),
    (
        "cvar_of_distribution",
        "empty",
        lambda: cvar_of_distribution([], [], 0.1),
        ValueError,
        "probs",
    ),
    ("empirical_cvar", "empty", lambda: empirical_cvar([], 0.1), ValueError, "returns"),
    ("empirical_cvar", "nan", lambda: empirical_cvar([1.0, NAN], 0.1), ValueError, "returns"),
    ("empirical_cvar", "inf", lambda: empirical_cvar([1.0, -INF], 0.1), ValueError, "returns"),
    (
        "empirical_cvar",
        "shape",
        lambda: empirical_cvar(np.ones((2, 2)), 0.1),
        ValueError,
        "returns",
    ),
    ("empirical_cvar", "range", lambda: empirical_cvar([1.0, 2.0], -0.1), ValueError, "q"),
    (
        "return_distribution",
        "nan",
        lambda: return_distribution(tree(), zero_policy, [NAN]),
        ValueError,
        "eta0",
    ),
    (
        "return_distribution",
        "empty",
        lambda: return_distribution(tree(), zero_policy, []),
        ValueError,
        "eta0",
    ),
    (
        "return_distribution",
        "type",
        lambda: return_distribution(tree(), None, [0.0]),
        TypeError,
        "act",
    ),
    (
        "policy_cvar",
        "inf",
        lambda: policy_cvar(tree(), zero_policy, [INF], 0.1),
        ValueError,
        "eta0",
    ),
    ("policy_cvar", "range", lambda: policy_cvar(tree(), zero_policy, [0.0], 2.0), ValueError, "q"),
    (
        "monte_carlo_returns",
        "nan",
        lambda: monte_carlo_returns(tree(), zero_policy, NAN, 10),
        ValueError,
        "eta0",
    ),
    (
        "monte_carlo_returns",
        "range",
        lambda: monte_carlo_returns(tree(), zero_policy, 0.0, 0),
        ValueError,
        "n_episodes",
    ),
    # learners
    ("PredictiveCVaRQLearning", "nan", lambda: PredictiveCVaRQLearning(q=NAN), ValueError, "q"),
    ("PredictiveCVaRQLearning", "range", lambda: PredictiveCVaRQLearning(lr=0.0), ValueError, "lr"),
    ("PredictiveCVaRQLearning", "nan", lambda: PredictiveCVaRQLearning(lr=NAN), ValueError, "lr"),
    (
        "PredictiveCVaRQLearning",
        "nan",
        lambda: PredictiveCVaRQLearning(epsilon=(NAN, 0.1)),
        ValueError,
        "epsilon",
    ),
    (
        "PredictiveCVaRQLearning",
        "range",
        lambda: PredictiveCVaRQLearning(budget_epsilon=(0.5, 1.5)),
        ValueError,
        "budget_epsilon",
    ),
    (
        "PredictiveCVaRQLearning",
        "shape",
        lambda: PredictiveCVaRQLearning(relabel=[True, False], n_replications=3),
        ValueError,
        "relabel",
    ),
    (
        "PredictiveCVaRQLearning",
        "type",
        lambda: PredictiveCVaRQLearning(n_replications=2.5),
        TypeError,
        "n_replications",
    ),
    (
        "PredictiveCVaRQLearning",
        "range",
        lambda: PredictiveCVaRQLearning().learn(tree(), 0),
        ValueError,
        "n_episodes",
    ),
    (
        "PredictiveCVaRQLearning",
        "range",
        lambda: PredictiveCVaRQLearning(eta_grid=BudgetGrid(-5, 5)).learn(tree(), 2),
        ValueError,
        "eta_grid must cover",
    ),
    (
        "PredictiveCVaRQLearning",
        "type",
        lambda: PredictiveCVaRQLearning().learn(gym.make("CartPole-v1"), 2),
        TypeError,
        "env",
    ),
    (
        "PredictiveCVaRQLearning",
        "other",
        lambda: PredictiveCVaRQLearning().learn(
            gym.wrappers.TransformReward(gym.make("iclr26/CVaRDecisionTree-v0"), lambda r: -r), 2
        ),
        TypeError,
        "env is wrapped by TransformReward",
    ),
    ("PredictiveCVaRQLearning", "nan", lambda: agent().predict(0, NAN), ValueError, "budget"),
    ("PredictiveCVaRQLearning", "range", lambda: agent().predict(99, 0.0), ValueError, "obs"),
    (
        "PredictiveCVaRQLearning",
        "range",
        lambda: agent().initial_budget(replication=5),
        ValueError,
        "replication",
    ),
    ("PredictiveCVaRQLearning", "range", lambda: agent().initial_budget(obs=3), ValueError, "obs"),
    ("PredictiveCVaRQLearning", "range", lambda: agent().cvar_estimate(obs=-1), ValueError, "obs"),
    (
        "PredictiveCVaRQLearning",
        "nan",
        lambda: agent().act_batch(np.array([0]), np.array([0]), np.array([NAN])),
        ValueError,
        "eta",
    ),
    (
        "PredictiveCVaRQLearning",
        "range",
        lambda: agent().shortfall_at(np.array([3]), np.array([0]), np.array([0.0])),
        ValueError,
        "rep",
    ),
    ("AugmentedCVaRQLearning", "nan", lambda: AugmentedCVaRQLearning(q=NAN), ValueError, "q"),
    (
        "AugmentedCVaRQLearning",
        "type",
        lambda: AugmentedCVaRQLearning(relabel="yes"),
        TypeError,
        "relabel",
    ),
    (
        "AugmentedCVaRQLearning",
        "range",
        lambda: AugmentedCVaRQLearning(epsilon=-0.1),
        ValueError,
        "epsilon",
    ),
    ("RiskNeutralQLearning", "inf", lambda: RiskNeutralQLearning(lr=INF), ValueError, "lr"),
    (
        "RiskNeutralQLearning",
        "range",
        lambda: RiskNeutralQLearning(n_replications=0),
        ValueError,
        "n_replications",
    ),
    ("evaluate_cvar", "range", lambda: evaluate_cvar(agent(), tree(), q=0.0), ValueError, "q"),
    (
        "evaluate_cvar",
        "range",
        lambda: evaluate_cvar(agent(), tree(), 0.1, n_episodes=0),
        ValueError,
        "n_episodes",
    ),
    (
        "evaluate_cvar",
        "range",
        lambda: evaluate_cvar(agent(), tree(), 0.1, replication=2),
        ValueError,
        "replication",
    ),
    ("evaluate_cvar", "type", lambda: evaluate_cvar("agent", tree(), 0.1), TypeError, "agent"),
    ("table_of", "type", lambda: table_of(np.zeros(3)), TypeError, "env"),
    ("table_of", "type", lambda: table_of(gym.make("FrozenLake-v1")), TypeError, "env"),
]

EXEMPT = {
    "decision_tree_table": "takes no arguments; returns the fixed decision-tree table",
}
