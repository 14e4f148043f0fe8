"""Exact training of fully quantized ReLU networks (d-QNNT): brute force, the FPT signature
dynamic programme, and a CP-SAT baseline."""

from .architecture import Architecture, layered
from .domain import QuantizedDomain
from .estimator import QuantizedReLUClassifier
from .instance import (
    DistinctData,
    QNNTInstance,
    deduplicate,
    planted_instance,
    random_labels_instance,
    random_network,
)
from .solvers import SolverResult, solve_brute_force, solve_cpsat, solve_signature_dp

__all__ = [
    "Architecture",
    "DistinctData",
    "QNNTInstance",
    "QuantizedDomain",
    "QuantizedReLUClassifier",
    "SolverResult",
    "deduplicate",
    "layered",
    "planted_instance",
    "random_labels_instance",
    "random_network",
    "solve_brute_force",
    "solve_cpsat",
    "solve_signature_dp",
]
