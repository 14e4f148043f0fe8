"""Lookup multivariate Kolmogorov-Arnold Networks: linear layers replaced by trainable 2-D
spline tables evaluated by lookup, so parameters grow with the grid while FLOPs do not."""

from .grid import laplace_cdf, sigma_grid
from .layer import LMKAN2d
from .models import LMKANMLP, LMKANConv2d, LMKANRegressor, hessian_schedule, train_regressor
from .tasks import displaced_methane, random_teacher

__all__ = [
    "LMKAN2d",
    "LMKANConv2d",
    "LMKANMLP",
    "LMKANRegressor",
    "displaced_methane",
    "hessian_schedule",
    "laplace_cdf",
    "random_teacher",
    "sigma_grid",
    "train_regressor",
]
