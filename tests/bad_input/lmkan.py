"""Bad-input cases of the lmKAN room (tiny tensors; every call fails at the boundary)."""

import numpy as np
import torch

from iclr26.nn.lmkan import (
    LMKANCNN,
    LMKANMLP,
    LMKAN2d,
    LMKANConv2d,
    LMKANRegressor,
    displaced_methane,
    hessian_schedule,
    laplace_cdf,
    load_cifar10,
    random_teacher,
    sigma_grid,
    train_classifier,
    train_regressor,
)

NAN, INF = float("nan"), float("inf")
X = torch.randn(4, 4)
X_NAN = X.clone()
X_NAN[1, 2] = NAN
X_INF = X.clone()
X_INF[0, 0] = -INF
IMG = torch.randn(2, 1, 8, 8)
IMG_NAN = IMG.clone()
IMG_NAN[0, 0, 1, 1] = NAN
Y = torch.randn(4, 1)
LABELS = torch.tensor([0, 1, 2, 1])
XN = np.random.default_rng(0).normal(size=(6, 3))
YN = XN[:, 0]
XN_NAN = XN.copy()
XN_NAN[2, 1] = NAN

CASES = [
    # LMKAN2d
    ("LMKAN2d", "nan", lambda: LMKAN2d(4, 2)(X_NAN), ValueError, "x contains NaN"),
    ("LMKAN2d", "inf", lambda: LMKAN2d(4, 2)(X_INF), ValueError, "x contains infinity"),
    ("LMKAN2d", "empty", lambda: LMKAN2d(4, 2)(X[:0]), ValueError, "x is empty"),
    ("LMKAN2d", "shape", lambda: LMKAN2d(4, 2)(torch.randn(3, 5)), ValueError, "x must have shape"),
    ("LMKAN2d", "dtype", lambda: LMKAN2d(4, 2)(X.long()), TypeError, "x must be a floating"),
    ("LMKAN2d", "range", lambda: LMKAN2d(0, 2), ValueError, "in_features"),
    ("LMKAN2d", "range", lambda: LMKAN2d(4, 2, num_grids=2), ValueError, "num_grids"),
    ("LMKAN2d", "range", lambda: LMKAN2d(4, 2, init_scale=NAN), ValueError, "init_scale"),
    ("LMKAN2d", "range", lambda: LMKAN2d(4, 2, extrapolate="wrap"), ValueError, "extrapolate"),
    # LMKANMLP
    ("LMKANMLP", "nan", lambda: LMKANMLP(4, 4, 1)(X_NAN), ValueError, "x contains NaN"),
    ("LMKANMLP", "empty", lambda: LMKANMLP(4, 4, 1)(X[:0]), ValueError, "x is empty"),
    ("LMKANMLP", "shape", lambda: LMKANMLP(4, 4, 1)(X[:, :3]), ValueError, "x must have shape"),
    ("LMKANMLP", "other", lambda: LMKANMLP(4, 4, 1)(X[:1]), ValueError, "x has a batch of 1"),
    ("LMKANMLP", "range", lambda: LMKANMLP(4, 4, 1, depth=0), ValueError, "depth"),
    ("LMKANMLP", "type", lambda: LMKANMLP(4, 2.5, 1), TypeError, "hidden"),
    # LMKANConv2d
    ("LMKANConv2d", "nan", lambda: LMKANConv2d(1, 2, 3)(IMG_NAN), ValueError, "x contains NaN"),
    ("LMKANConv2d", "empty", lambda: LMKANConv2d(1, 2, 3)(IMG[:0]), ValueError, "x is empty"),
    (
        "LMKANConv2d",
        "shape",
        lambda: LMKANConv2d(3, 2, 3)(IMG),
        ValueError,
        r"x must have shape \(\*, 3",
    ),
    ("LMKANConv2d", "range", lambda: LMKANConv2d(1, 2, 0), ValueError, "kernel_size"),
    ("LMKANConv2d", "range", lambda: LMKANConv2d(1, 2, 3, padding=-1), ValueError, "padding"),
    # LMKANCNN
    ("LMKANCNN", "nan", lambda: LMKANCNN(1, 8, 10, (2,), (1,))(IMG_NAN), ValueError, "x contains"),
    (
        "LMKANCNN",
        "shape",
        lambda: LMKANCNN(1, 8, 10, (2,), (1,))(IMG[..., :7]),
        ValueError,
        "x must",
    ),
    ("LMKANCNN", "empty", lambda: LMKANCNN(1, 8, 10, widths=(), strides=()), ValueError, "widths"),
    ("LMKANCNN", "range", lambda: LMKANCNN(1, 8, 0), ValueError, "n_classes"),
    # LMKANRegressor (hyperparameters are checked in fit, the scikit-learn convention)
    ("LMKANRegressor", "nan", lambda: LMKANRegressor(epochs=1).fit(XN_NAN, YN), ValueError, "X"),
    ("LMKANRegressor", "empty", lambda: LMKANRegressor().fit(XN[:0], YN[:0]), ValueError, "X"),
    (
        "LMKANRegressor",
        "shape",
        lambda: LMKANRegressor().fit(XN, YN[:3]),
        ValueError,
        "same length",
    ),
    ("LMKANRegressor", "range", lambda: LMKANRegressor(lr=NAN).fit(XN, YN), ValueError, "lr"),
    ("LMKANRegressor", "range", lambda: LMKANRegressor(hidden=0).fit(XN, YN), ValueError, "hidden"),
    (
        "LMKANRegressor",
        "other",
        lambda: LMKANRegressor().fit(XN[:1], YN[:1]),
        ValueError,
        "1 sample",
    ),
    # training loops
    (
        "train_regressor",
        "nan",
        lambda: train_regressor(LMKANMLP(4, 4, 1), X_NAN, Y, 1),
        ValueError,
        "x",
    ),
    (
        "train_regressor",
        "shape",
        lambda: train_regressor(LMKANMLP(4, 4, 1), X, Y[:3], 1),
        ValueError,
        "y has 3",
    ),
    (
        "train_regressor",
        "range",
        lambda: train_regressor(LMKANMLP(4, 4, 1), X, Y, 0),
        ValueError,
        "epochs",
    ),
    (
        "train_regressor",
        "range",
        lambda: train_regressor(LMKANMLP(4, 4, 1), X, Y, 1, lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "train_classifier",
        "dtype",
        lambda: train_classifier(LMKANMLP(4, 4, 3), X, LABELS.float(), 1),
        TypeError,
        "labels",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(LMKANMLP(4, 4, 3), X, LABELS - 1, 1),
        ValueError,
        "labels",
    ),
    (
        "train_classifier",
        "type",
        lambda: train_classifier("model", X, LABELS, 1),
        TypeError,
        "model",
    ),
    # functions
    ("hessian_schedule", "range", lambda: hessian_schedule(-1, 10), ValueError, "step"),
    ("hessian_schedule", "range", lambda: hessian_schedule(0, 0), ValueError, "total_steps"),
    ("hessian_schedule", "nan", lambda: hessian_schedule(0, 10, lam0=NAN), ValueError, "lam0"),
    ("laplace_cdf", "nan", lambda: laplace_cdf(torch.tensor([NAN])), ValueError, "x contains NaN"),
    (
        "laplace_cdf",
        "dtype",
        lambda: laplace_cdf(torch.tensor([1])),
        TypeError,
        "x must be a float",
    ),
    ("sigma_grid", "range", lambda: sigma_grid(2), ValueError, "num_grids"),
    ("sigma_grid", "type", lambda: sigma_grid(8, dtype=torch.long), TypeError, "dtype"),
    ("random_teacher", "range", lambda: random_teacher(0), ValueError, "n"),
    ("random_teacher", "type", lambda: random_teacher(10, dim=2.5), TypeError, "dim"),
    ("displaced_methane", "range", lambda: displaced_methane(10, sigma=NAN), ValueError, "sigma"),
    ("displaced_methane", "range", lambda: displaced_methane(0), ValueError, "n"),
    ("load_cifar10", "type", lambda: load_cifar10(123), TypeError, "directory"),
    (
        "load_cifar10",
        "other",
        lambda: load_cifar10("/nonexistent-cifar"),
        FileNotFoundError,
        "CIFAR-10",
    ),
]

EXEMPT = {
    "digits_images": "takes no arguments: it returns scikit-learn's bundled digits",
}
