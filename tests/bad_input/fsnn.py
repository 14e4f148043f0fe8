"""Bad-input cases of the f-SNN room (tiny currents and images; each call fails up front)."""

import numpy as np
import torch
from torch import nn

from iclr26.neuro.fsnn import (
    FractionalIF,
    FractionalIntegrator,
    FractionalLIF,
    SNNWrapper,
    delayed_cue,
    gl_coefficients,
    l1_coefficients,
    n_digits,
    saccade_events,
    snn_energy,
    solve,
    spike,
)

NAN, INF = float("nan"), float("inf")
CURRENTS = torch.rand(5, 2, 3)
C_NAN = CURRENTS.clone()
C_NAN[1, 0, 2] = NAN
C_INF = CURRENTS.clone()
C_INF[0, 1, 1] = INF
NET = SNNWrapper(nn.Sequential(nn.Flatten(), nn.Linear(6, 4), FractionalLIF(), nn.Linear(4, 2)))
X = torch.rand(4, 2, 2, 3)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = NAN
IMAGES = np.random.default_rng(0).random((2, 8, 8))
IMAGES_NAN = IMAGES.copy()
IMAGES_NAN[0, 1, 1] = NAN


def _decay(v, t):
    return -v


CASES = [
    # neurons
    ("FractionalLIF", "nan", lambda: FractionalLIF()(C_NAN), ValueError, "currents contains NaN"),
    ("FractionalLIF", "inf", lambda: FractionalLIF()(C_INF), ValueError, "currents contains inf"),
    ("FractionalLIF", "empty", lambda: FractionalLIF()(CURRENTS[:0]), ValueError, "currents is"),
    (
        "FractionalLIF",
        "shape",
        lambda: FractionalLIF()(CURRENTS[0, 0]),
        ValueError,
        "currents must",
    ),
    (
        "FractionalLIF",
        "dtype",
        lambda: FractionalLIF()(CURRENTS.long()),
        TypeError,
        "currents must",
    ),
    ("FractionalLIF", "range", lambda: FractionalLIF(alpha=1.5), ValueError, "alpha"),
    ("FractionalLIF", "range", lambda: FractionalLIF(alpha=NAN), ValueError, "alpha"),
    ("FractionalLIF", "range", lambda: FractionalLIF(tau=0.0), ValueError, "tau"),
    ("FractionalLIF", "range", lambda: FractionalLIF(tau=NAN), ValueError, "tau"),
    ("FractionalLIF", "range", lambda: FractionalLIF(threshold=-1.0), ValueError, "threshold"),
    ("FractionalLIF", "range", lambda: FractionalLIF(h=INF), ValueError, "h must"),
    ("FractionalLIF", "range", lambda: FractionalLIF(memory=0), ValueError, "memory"),
    ("FractionalLIF", "range", lambda: FractionalLIF(memory=2.5), TypeError, "memory"),
    ("FractionalLIF", "range", lambda: FractionalLIF(method="euler"), ValueError, "method"),
    ("FractionalLIF", "range", lambda: FractionalLIF(reset="zero"), ValueError, "reset"),
    (
        "FractionalLIF",
        "range",
        lambda: FractionalLIF(alpha=[0.3, 0.8], method="l1"),
        ValueError,
        "multi-term",
    ),
    ("FractionalLIF", "type", lambda: FractionalLIF(learn_alpha=1), TypeError, "learn_alpha"),
    ("FractionalIF", "nan", lambda: FractionalIF()(C_NAN), ValueError, "currents contains NaN"),
    ("FractionalIF", "range", lambda: FractionalIF(tau=-2.0), ValueError, "tau"),
    ("spike", "nan", lambda: spike(C_NAN), ValueError, "x contains NaN"),
    ("spike", "dtype", lambda: spike(CURRENTS.long()), TypeError, "x must be a float"),
    ("spike", "range", lambda: spike(CURRENTS, "relu"), ValueError, "surrogate"),
    # solvers
    ("FractionalIntegrator", "range", lambda: FractionalIntegrator(0.0), ValueError, "alpha"),
    (
        "FractionalIntegrator",
        "range",
        lambda: FractionalIntegrator(0.5, h=NAN),
        ValueError,
        "h must",
    ),
    (
        "FractionalIntegrator",
        "range",
        lambda: FractionalIntegrator(0.5, memory=-2),
        ValueError,
        "memory",
    ),
    ("FractionalIntegrator", "nan", lambda: FractionalIntegrator(0.5, v0=NAN), ValueError, "v0"),
    (
        "FractionalIntegrator",
        "range",
        lambda: FractionalIntegrator(0.5, method="rk4"),
        ValueError,
        "method",
    ),
    ("gl_coefficients", "range", lambda: gl_coefficients(0.5, 0), ValueError, "length"),
    ("gl_coefficients", "nan", lambda: gl_coefficients(NAN, 4), ValueError, "alpha"),
    ("gl_coefficients", "nan", lambda: gl_coefficients(torch.tensor(NAN), 4), ValueError, "alpha"),
    ("l1_coefficients", "range", lambda: l1_coefficients(0.5, -1), ValueError, "length"),
    ("l1_coefficients", "range", lambda: l1_coefficients(2.0, 3), ValueError, "alpha"),
    ("solve", "range", lambda: solve(_decay, 1.0, 0.5, 0.0, 10), ValueError, "h must"),
    ("solve", "range", lambda: solve(_decay, 1.0, 0.5, 0.1, -1), ValueError, "steps"),
    ("solve", "nan", lambda: solve(_decay, NAN, 0.5, 0.1, 10), ValueError, "v0"),
    ("solve", "type", lambda: solve(None, 1.0, 0.5, 0.1, 10), TypeError, "rhs"),
    (
        "solve",
        "other",
        lambda: solve(lambda v, t: -50 * v**3, 1.0, 0.5, 4.0, 40),
        ValueError,
        "diverged",
    ),
    # network and energy
    ("SNNWrapper", "nan", lambda: NET(X_NAN), ValueError, "x contains NaN"),
    ("SNNWrapper", "shape", lambda: NET(X[0, 0]), ValueError, "x must have shape"),
    ("SNNWrapper", "empty", lambda: NET(X[:0]), ValueError, "x is empty"),
    ("SNNWrapper", "type", lambda: SNNWrapper(nn.Linear(2, 2)), TypeError, "base must"),
    ("SNNWrapper", "range", lambda: SNNWrapper(NET.base, alpha=0.0), ValueError, "alpha"),
    (
        "SNNWrapper",
        "range",
        lambda: SNNWrapper(NET.base, readout_steps=0),
        ValueError,
        "readout_steps",
    ),
    (
        "SNNWrapper",
        "range",
        lambda: SNNWrapper(NET.base, per_layer_alpha=[0.5, 0.5]),
        ValueError,
        "per_layer_alpha",
    ),
    ("snn_energy", "nan", lambda: snn_energy(NET, X_NAN), ValueError, "x contains NaN"),
    ("snn_energy", "range", lambda: snn_energy(NET, X, e_ac_pj=NAN), ValueError, "e_ac_pj"),
    ("snn_energy", "range", lambda: snn_energy(NET, X, e_mac_pj=-1.0), ValueError, "e_mac_pj"),
    ("snn_energy", "type", lambda: snn_energy(NET.base, X), TypeError, "model must"),
    # event data
    (
        "saccade_events",
        "nan",
        lambda: saccade_events(IMAGES_NAN),
        ValueError,
        "images contains NaN",
    ),
    (
        "saccade_events",
        "shape",
        lambda: saccade_events(IMAGES[0]),
        ValueError,
        "images must have 3",
    ),
    ("saccade_events", "empty", lambda: saccade_events(IMAGES[:0]), ValueError, "images"),
    ("saccade_events", "range", lambda: saccade_events(-IMAGES), ValueError, "images must be >= 0"),
    ("saccade_events", "range", lambda: saccade_events(IMAGES, T=1), ValueError, "T must"),
    (
        "saccade_events",
        "range",
        lambda: saccade_events(IMAGES, noise_rate=1.5),
        ValueError,
        "noise_rate",
    ),
    ("saccade_events", "range", lambda: saccade_events(IMAGES, canvas=6), ValueError, "canvas"),
    ("n_digits", "range", lambda: n_digits(T=0), ValueError, "T must"),
    ("delayed_cue", "range", lambda: delayed_cue(n=0), ValueError, "n must"),
    ("delayed_cue", "range", lambda: delayed_cue(T=8, cue_steps=8), ValueError, "T must"),
    ("delayed_cue", "range", lambda: delayed_cue(noise_rate=NAN), ValueError, "noise_rate"),
    ("delayed_cue", "range", lambda: delayed_cue(classes=1), ValueError, "classes"),
]

EXEMPT = {}
