"""Bad input for the escape_directions room: every public callable refuses it with a
ValueError/TypeError that names the argument."""

import numpy as np
import torch
from torch import nn

from iclr26.dynamics.escape_directions import (
    BiasFreeReLUMLP,
    balance,
    circle_counterexample,
    escape_speed,
    find_escape_direction,
    forward_weights,
    layer_rank_profile,
    local_loss,
    mse_gradient_at_zero,
    small_init_gd,
    weight_rank_profile,
)

WIDTHS = [2, 3, 3, 1]
X = torch.ones(4, 2, dtype=torch.float64)
G = torch.ones(4, 1, dtype=torch.float64)
X_NAN = X.clone()
X_NAN[0, 0] = float("nan")
X_INF = X.clone()
X_INF[1, 1] = float("inf")
G_NAN = G.clone()
G_NAN[2, 0] = float("nan")
W = [torch.ones(3, 2), torch.ones(1, 3)]
W_NAN = [torch.full((3, 2), float("nan")), torch.ones(1, 3)]
Y = np.ones((4, 1))


def _model():
    return BiasFreeReLUMLP(WIDTHS, dtype=torch.float64)


def _find(**kw):
    args = dict(restarts=1, steps=1)
    args.update(kw)
    return find_escape_direction(WIDTHS, kw.pop("X", X), kw.pop("G", G), **args)


CASES = [
    ("BiasFreeReLUMLP", "shape", lambda: BiasFreeReLUMLP([2, 1]), ValueError, "widths"),
    ("BiasFreeReLUMLP", "range", lambda: BiasFreeReLUMLP([2, 0, 1]), ValueError, r"widths\[1\]"),
    (
        "BiasFreeReLUMLP",
        "nan",
        lambda: BiasFreeReLUMLP([2, float("nan"), 1]),
        TypeError,
        r"widths\[1\]",
    ),
    (
        "BiasFreeReLUMLP",
        "range",
        lambda: BiasFreeReLUMLP(WIDTHS, activation="tanh"),
        ValueError,
        "activation",
    ),
    (
        "BiasFreeReLUMLP",
        "dtype",
        lambda: BiasFreeReLUMLP(WIDTHS, dtype=torch.int64),
        TypeError,
        "dtype",
    ),
    ("BiasFreeReLUMLP", "nan", lambda: BiasFreeReLUMLP.from_weights(W_NAN), ValueError, "weights"),
    (
        "BiasFreeReLUMLP",
        "shape",
        lambda: BiasFreeReLUMLP.from_weights([torch.ones(3, 2), torch.ones(1, 2)]),
        ValueError,
        "weights",
    ),
    ("forward_weights", "nan", lambda: forward_weights(W, X_NAN.float()), ValueError, "X"),
    ("forward_weights", "inf", lambda: forward_weights(W, X_INF.float()), ValueError, "X"),
    ("forward_weights", "nan", lambda: forward_weights(W_NAN, X.float()), ValueError, "weights"),
    ("forward_weights", "shape", lambda: forward_weights(W, torch.ones(4, 3)), ValueError, "X"),
    ("forward_weights", "empty", lambda: forward_weights([], X), TypeError, "weights"),
    ("forward_weights", "empty", lambda: forward_weights(W, torch.ones(0, 2)), ValueError, "X"),
    (
        "forward_weights",
        "range",
        lambda: forward_weights(W, X.float(), activation="gelu"),
        ValueError,
        "activation",
    ),
    ("balance", "nan", lambda: balance(W_NAN), ValueError, "weights"),
    ("balance", "empty", lambda: balance([]), TypeError, "weights"),
    (
        "balance",
        "other",
        lambda: balance([torch.zeros(3, 2), torch.ones(1, 3)]),
        ValueError,
        "weights",
    ),
    ("circle_counterexample", "range", lambda: circle_counterexample(7), ValueError, "n_points"),
    ("circle_counterexample", "range", lambda: circle_counterexample(0), ValueError, "n_points"),
    (
        "circle_counterexample",
        "nan",
        lambda: circle_counterexample(float("nan")),
        TypeError,
        "n_points",
    ),
    ("escape_speed", "nan", lambda: escape_speed(_model(), X_NAN, G), ValueError, "X"),
    ("escape_speed", "nan", lambda: escape_speed(_model(), X, G_NAN), ValueError, "G"),
    ("escape_speed", "inf", lambda: escape_speed(_model(), X_INF, G), ValueError, "X"),
    ("escape_speed", "shape", lambda: escape_speed(_model(), X, G[:3]), ValueError, "G"),
    ("escape_speed", "shape", lambda: escape_speed(_model(), torch.ones(4, 5), G), ValueError, "X"),
    (
        "escape_speed",
        "empty",
        lambda: escape_speed(_model(), torch.ones(0, 2), torch.ones(0, 1)),
        ValueError,
        "X",
    ),
    ("escape_speed", "type", lambda: escape_speed(nn.Linear(2, 1), X, G), TypeError, "model"),
    ("local_loss", "nan", lambda: local_loss(_model(), X, G_NAN), ValueError, "G"),
    ("local_loss", "shape", lambda: local_loss(_model(), X[0], G), ValueError, "X"),
    ("local_loss", "type", lambda: local_loss("model", X, G), TypeError, "model"),
    (
        "mse_gradient_at_zero",
        "nan",
        lambda: mse_gradient_at_zero(np.array([[np.nan]])),
        ValueError,
        "Y",
    ),
    (
        "mse_gradient_at_zero",
        "inf",
        lambda: mse_gradient_at_zero(torch.tensor([[float("inf")]])),
        ValueError,
        "Y",
    ),
    ("mse_gradient_at_zero", "shape", lambda: mse_gradient_at_zero(np.ones(3)), ValueError, "Y"),
    (
        "mse_gradient_at_zero",
        "empty",
        lambda: mse_gradient_at_zero(np.ones((0, 2))),
        ValueError,
        "Y",
    ),
    (
        "find_escape_direction",
        "nan",
        lambda: find_escape_direction(WIDTHS, X_NAN, G, restarts=1, steps=1),
        ValueError,
        "X",
    ),
    (
        "find_escape_direction",
        "nan",
        lambda: find_escape_direction(WIDTHS, X, G_NAN, restarts=1, steps=1),
        ValueError,
        "G",
    ),
    (
        "find_escape_direction",
        "shape",
        lambda: find_escape_direction([3, 3, 1], X, G, restarts=1, steps=1),
        ValueError,
        "X",
    ),
    (
        "find_escape_direction",
        "range",
        lambda: find_escape_direction(WIDTHS, X, G, restarts=0),
        ValueError,
        "restarts",
    ),
    (
        "find_escape_direction",
        "range",
        lambda: find_escape_direction(WIDTHS, X, G, steps=-1),
        ValueError,
        "steps",
    ),
    (
        "find_escape_direction",
        "range",
        lambda: find_escape_direction(WIDTHS, X, G, lr=float("nan")),
        ValueError,
        "lr",
    ),
    (
        "find_escape_direction",
        "range",
        lambda: find_escape_direction(WIDTHS, X, G, lr=0.0),
        ValueError,
        "lr",
    ),
    (
        "find_escape_direction",
        "type",
        lambda: find_escape_direction(WIDTHS, X, G, rank_one=1),
        TypeError,
        "rank_one",
    ),
    ("layer_rank_profile", "nan", lambda: layer_rank_profile(_model(), X_NAN), ValueError, "X"),
    (
        "layer_rank_profile",
        "shape",
        lambda: layer_rank_profile(_model(), torch.ones(4, 5, dtype=torch.float64)),
        ValueError,
        "X",
    ),
    ("layer_rank_profile", "type", lambda: layer_rank_profile("model"), TypeError, "model"),
    (
        "layer_rank_profile",
        "other",
        lambda: layer_rank_profile(nn.Sequential(nn.Linear(2, 2))),
        ValueError,
        "model",
    ),
    (
        "layer_rank_profile",
        "nan",
        lambda: layer_rank_profile(
            BiasFreeReLUMLP.from_weights([torch.ones(3, 2), torch.ones(1, 3)]),
            np.full((2, 2), np.nan),
        ),
        ValueError,
        "X",
    ),
    ("weight_rank_profile", "nan", lambda: weight_rank_profile(W_NAN), ValueError, r"weights\[0\]"),
    ("weight_rank_profile", "empty", lambda: weight_rank_profile([]), ValueError, "weights"),
    (
        "weight_rank_profile",
        "shape",
        lambda: weight_rank_profile([torch.ones(3)]),
        ValueError,
        r"weights\[0\]",
    ),
    (
        "weight_rank_profile",
        "type",
        lambda: weight_rank_profile(torch.ones(3, 3)),
        TypeError,
        "weights",
    ),
    (
        "small_init_gd",
        "nan",
        lambda: small_init_gd(WIDTHS, X_NAN.numpy(), Y, steps=1),
        ValueError,
        "X",
    ),
    (
        "small_init_gd",
        "inf",
        lambda: small_init_gd(WIDTHS, X.numpy(), Y * np.inf, steps=1),
        ValueError,
        "Y",
    ),
    (
        "small_init_gd",
        "shape",
        lambda: small_init_gd(WIDTHS, X.numpy(), np.ones((3, 1)), steps=1),
        ValueError,
        "Y",
    ),
    (
        "small_init_gd",
        "shape",
        lambda: small_init_gd(WIDTHS, np.ones((4, 3)), Y, steps=1),
        ValueError,
        "X",
    ),
    (
        "small_init_gd",
        "empty",
        lambda: small_init_gd(WIDTHS, np.ones((0, 2)), np.ones((0, 1)), steps=1),
        ValueError,
        "X",
    ),
    (
        "small_init_gd",
        "range",
        lambda: small_init_gd(WIDTHS, X.numpy(), Y, init_scale=-1.0),
        ValueError,
        "init_scale",
    ),
    (
        "small_init_gd",
        "range",
        lambda: small_init_gd(WIDTHS, X.numpy(), Y, eta0=float("nan")),
        ValueError,
        "eta0",
    ),
    (
        "small_init_gd",
        "range",
        lambda: small_init_gd(WIDTHS, X.numpy(), Y, steps=0),
        ValueError,
        "steps",
    ),
    (
        "small_init_gd",
        "range",
        lambda: small_init_gd(WIDTHS, X.numpy(), Y, snapshot_at=(1.5,)),
        ValueError,
        "snapshot_at",
    ),
]

EXEMPT = {
    "EscapeDirection": "a record dataclass returned by find_escape_direction; it takes no user data",
    "GDRun": "a record dataclass returned by small_init_gd; it takes no user data",
}
