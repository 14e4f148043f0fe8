"""Deep matrix factorisation for matrix completion: gradient flow, the coupling diagnostic,
rank tracking and the loss-of-plasticity protocol."""

from .coupling import coupling_index, coupling_matrix, observation_blocks
from .estimator import DeepMatrixFactorization
from .factorization import (
    factor_shapes,
    gradient_descent,
    initialize,
    integrate_ode,
    loss_and_gradients,
    product,
)
from .metrics import effective_rank, nuclear_over_frobenius, relative_error, singular_value_ratio
from .plasticity import plasticity_experiment

__all__ = [
    "DeepMatrixFactorization",
    "coupling_index",
    "coupling_matrix",
    "effective_rank",
    "factor_shapes",
    "gradient_descent",
    "initialize",
    "integrate_ode",
    "loss_and_gradients",
    "nuclear_over_frobenius",
    "observation_blocks",
    "plasticity_experiment",
    "product",
    "relative_error",
    "singular_value_ratio",
]
