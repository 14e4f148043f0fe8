"""Horseshoe Splatting (ICLR 2026): Bayesian 3D Gaussian splatting with a global-local
horseshoe prior on each splat's covariance scales, mean-field variational inference that mirrors
the prior's inverse-Gamma augmentation, and per-pixel uncertainty by ancestral sampling."""

from .evaluate import ause, kde_nll, make_scene_data, spearman_uncertainty
from .inverse_gamma import ig_cavi_sweep, ig_entropy, ig_expectations, kl_inverse_gamma
from .model import IG_UPDATES, PRIORS, GaussianSplatting, HorseshoeSplatting, kl_anneal_factor

__all__ = [
    "IG_UPDATES",
    "PRIORS",
    "GaussianSplatting",
    "HorseshoeSplatting",
    "ause",
    "ig_cavi_sweep",
    "ig_entropy",
    "ig_expectations",
    "kde_nll",
    "kl_anneal_factor",
    "kl_inverse_gamma",
    "make_scene_data",
    "spearman_uncertainty",
]
