"""Fractional-order spiking neurons: Caputo-derivative LIF/IF neurons with power-law membrane
memory (alpha = 1 is a first-order LIF; with reset="state" the ordinary one), their solvers, a network wrapper and event data."""

from .events import delayed_cue, n_digits, saccade_events
from .network import SNNWrapper, snn_energy
from .neurons import FractionalIF, FractionalLIF, spike
from .solvers import FractionalIntegrator, gl_coefficients, l1_coefficients, solve

__all__ = [
    "FractionalIF",
    "FractionalIntegrator",
    "FractionalLIF",
    "SNNWrapper",
    "delayed_cue",
    "gl_coefficients",
    "l1_coefficients",
    "n_digits",
    "saccade_events",
    "snn_energy",
    "solve",
    "spike",
]
