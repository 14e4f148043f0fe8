"""Predictive CVaR Q-learning: tail-probability / tail-value functions with a per-step
Bellman recursion, all-budget relabelling and two-way exploration (ICLR 2026), with the
budget-augmented shortfall learner as baseline, exact CVaR dynamic programming and two
registered Gymnasium environments."""

from . import envs
from .dp import (
    CVaRSolution,
    cvar_dynamic_programming,
    cvar_of_distribution,
    default_grid,
    empirical_cvar,
    monte_carlo_returns,
    neutral_policy_cvar,
    policy_cvar,
    return_distribution,
    risk_neutral_q,
)
from .envs import (
    BudgetAugmentedWrapper,
    CVaRDecisionTreeEnv,
    RiskyGridWorldEnv,
    TabularEpisodicEnv,
    decision_tree_table,
    risky_grid_table,
)
from .learners import (
    AugmentedCVaRQLearning,
    PredictiveCVaRQLearning,
    RiskNeutralQLearning,
    evaluate_cvar,
    table_of,
)
from .predictive_tail import BudgetGrid
from .tables import EpisodicTable, TableSampler

__all__ = [
    "AugmentedCVaRQLearning",
    "BudgetAugmentedWrapper",
    "BudgetGrid",
    "CVaRDecisionTreeEnv",
    "CVaRSolution",
    "EpisodicTable",
    "PredictiveCVaRQLearning",
    "RiskNeutralQLearning",
    "RiskyGridWorldEnv",
    "TableSampler",
    "TabularEpisodicEnv",
    "cvar_dynamic_programming",
    "cvar_of_distribution",
    "decision_tree_table",
    "default_grid",
    "empirical_cvar",
    "envs",
    "evaluate_cvar",
    "monte_carlo_returns",
    "neutral_policy_cvar",
    "policy_cvar",
    "return_distribution",
    "risk_neutral_q",
    "risky_grid_table",
    "table_of",
]
