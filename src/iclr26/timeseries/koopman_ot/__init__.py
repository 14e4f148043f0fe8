"""Spectral-Grassmann Wasserstein (SGOT) distance between Koopman operator estimates."""

from iclr26.timeseries.koopman_ot.barycenter import sgot_barycenter
from iclr26.timeseries.koopman_ot.classifier import KoopmanOTClassifier
from iclr26.timeseries.koopman_ot.data import (
    damped_oscillator,
    load_uea,
    oscillator_generator,
    plane_rotation,
    random_orthogonal,
    read_ts,
)
from iclr26.timeseries.koopman_ot.metric import (
    distance_matrix,
    eta_heuristic,
    got_distance,
    grassmann_distance,
    hs_distance,
    martin_distance,
    martin_distance_matrix,
    operator_norm_distance,
    pairwise_distances,
    sgot_cost,
    sgot_distance,
    sot_distance,
    subspace_similarity,
    wasserstein,
)
from iclr26.timeseries.koopman_ot.operators import (
    FeatureMap,
    SpectralMeasure,
    continuous_eigs,
    estimate_operator,
)

__all__ = [
    "FeatureMap",
    "KoopmanOTClassifier",
    "SpectralMeasure",
    "continuous_eigs",
    "damped_oscillator",
    "distance_matrix",
    "estimate_operator",
    "eta_heuristic",
    "got_distance",
    "grassmann_distance",
    "hs_distance",
    "load_uea",
    "martin_distance",
    "martin_distance_matrix",
    "operator_norm_distance",
    "oscillator_generator",
    "pairwise_distances",
    "plane_rotation",
    "random_orthogonal",
    "read_ts",
    "sgot_barycenter",
    "sgot_cost",
    "sgot_distance",
    "sot_distance",
    "subspace_similarity",
    "wasserstein",
]
