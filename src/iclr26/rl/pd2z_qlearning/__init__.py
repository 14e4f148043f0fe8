"""Q-learning with power-law-decay-to-zero (PD2Z-nu, LD2Z for nu = 1) step sizes, tail
Polyak-Ruppert averaging and bootstrap confidence intervals (arXiv 2604.04218)."""

from .inference import CI_METHODS, confidence_intervals, coverage
from .mdp import (
    TabularMDP,
    asymptotic_covariance,
    greedy_ties,
    mdp_from_gymnasium,
    noise_variance,
    random_mdp,
    value_iteration,
)
from .qlearning import (
    AsynchronousQLearning,
    QLearningTrace,
    SynchronousQLearning,
    draw_weights,
    run_q_learning,
)
from .schedules import (
    SCHEDULE_KINDS,
    constant_schedule,
    ld2z_schedule,
    make_schedule,
    make_torch_scheduler,
    pd2z_factors,
    pd2z_schedule,
    poly_schedule,
    schedule_lambda,
)

__all__ = [
    "CI_METHODS",
    "SCHEDULE_KINDS",
    "AsynchronousQLearning",
    "QLearningTrace",
    "SynchronousQLearning",
    "TabularMDP",
    "asymptotic_covariance",
    "confidence_intervals",
    "constant_schedule",
    "coverage",
    "draw_weights",
    "greedy_ties",
    "ld2z_schedule",
    "make_schedule",
    "make_torch_scheduler",
    "mdp_from_gymnasium",
    "noise_variance",
    "pd2z_factors",
    "pd2z_schedule",
    "poly_schedule",
    "random_mdp",
    "run_q_learning",
    "schedule_lambda",
    "value_iteration",
]
