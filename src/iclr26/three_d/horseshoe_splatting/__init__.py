"""Horseshoe Splatting (ICLR 2026): Bayesian 3D Gaussian splatting with a global-local
horseshoe prior on each splat's covariance scales, mean-field variational inference that mirrors
the prior's inverse-Gamma augmentation, and per-pixel uncertainty by ancestral sampling."""

from .evaluate import ause, kde_nll, make_scene_data, spearman_uncertainty
from .inverse_gamma import ig_entropy, ig_expectations, kl_inverse_gamma
from .model import PRIORS, GaussianSplatting, HorseshoeSplatting

__all__ = [
    "PRIORS",
    "GaussianSplatting",
    "HorseshoeSplatting",
    "ause",
    "ig_entropy",
    "ig_expectations",
    "kde_nll",
    "kl_inverse_gamma",
    "make_scene_data",
    "spearman_uncertainty",
]
