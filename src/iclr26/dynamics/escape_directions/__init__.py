"""Escape directions of deep ReLU networks from the saddle at the origin: the escape-speed
objective, its optimisation, the circle counterexample, and per-layer rank diagnostics of
training from small initialisation."""

from .diagnostics import layer_rank_profile, weight_rank_profile
from .model import BiasFreeReLUMLP, forward_weights
from .objective import (
    EscapeDirection,
    balance,
    circle_counterexample,
    escape_speed,
    find_escape_direction,
    local_loss,
    mse_gradient_at_zero,
)
from .training import GDRun, small_init_gd

__all__ = [
    "BiasFreeReLUMLP",
    "EscapeDirection",
    "GDRun",
    "balance",
    "circle_counterexample",
    "escape_speed",
    "find_escape_direction",
    "forward_weights",
    "layer_rank_profile",
    "local_loss",
    "mse_gradient_at_zero",
    "small_init_gd",
    "weight_rank_profile",
]
