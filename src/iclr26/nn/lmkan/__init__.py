"""Lookup multivariate Kolmogorov-Arnold Networks: linear layers replaced by trainable 2-D
spline tables evaluated by lookup, so parameters grow with the grid while FLOPs do not."""

from .conv import LMKANCNN, LMKANConv2d
from .grid import laplace_cdf, sigma_grid
from .layer import LMKAN2d
from .models import (
    LMKANMLP,
    LMKANRegressor,
    hessian_schedule,
    train_classifier,
    train_regressor,
)
from .tasks import digits_images, displaced_methane, load_cifar10, random_teacher

__all__ = [
    "LMKAN2d",
    "LMKANCNN",
    "LMKANConv2d",
    "LMKANMLP",
    "LMKANRegressor",
    "digits_images",
    "displaced_methane",
    "hessian_schedule",
    "laplace_cdf",
    "load_cifar10",
    "random_teacher",
    "sigma_grid",
    "train_classifier",
    "train_regressor",
]
