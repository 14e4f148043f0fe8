"""Multi-agent imitation learning and its Nash gap: tabular Markov games, per-agent
behaviour cloning, exact exploitability, the dominant-strategy bound, best-response
continuity and counter-examples where exact measure matching fails (arXiv 2602.21020)."""

from .bc import (
    FALLBACKS,
    BehaviourCloning,
    collect_demonstrations,
    entropy_regularised_fit,
    one_hot_features,
)
from .game import TabularMarkovGame, uniform_profile
from .games import DominantCoordinationGame, TagGame, TriggerGame, matrix_game
from .metrics import (
    bc_error,
    br_continuity_constant,
    dominant_strategy_bound,
    dominant_strategy_check,
    measure_matching_error,
    nash_gap,
    nash_gap_per_agent,
    random_profile,
    soft_best_response,
    total_variation,
)
from .quantal import quantal_response_equilibrium, soft_nash_gap, soft_values

__all__ = [
    "FALLBACKS",
    "BehaviourCloning",
    "DominantCoordinationGame",
    "TabularMarkovGame",
    "TagGame",
    "TriggerGame",
    "bc_error",
    "br_continuity_constant",
    "collect_demonstrations",
    "dominant_strategy_bound",
    "dominant_strategy_check",
    "entropy_regularised_fit",
    "matrix_game",
    "measure_matching_error",
    "nash_gap",
    "nash_gap_per_agent",
    "one_hot_features",
    "quantal_response_equilibrium",
    "random_profile",
    "soft_best_response",
    "soft_nash_gap",
    "soft_values",
    "total_variation",
    "uniform_profile",
]
