"""Counterfactual Explanations on Robust Perceptual Geodesics (PCG).

A counterfactual is the end of a discrete geodesic in a generator's latent space under the
metric pulled back from an adversarially robust feature network (``PerceptualEmbedding``,
``pullback_metric``), found by the two-stage path optimisation of ``PCG``; ``counterfactual``
runs it for any generator/classifier pair. Baselines: ``LatentWachter``, ``PixelWachter``,
``RSGD`` and PCG with a non-robust feature net. The in-project analogue (VAE on digits,
PGD-trained CNN, independent robust MLP oracle) lives in ``models`` and ``experiment``.
"""

from iclr26.vision.pcg.baselines import RSGD, LatentWachter, PixelWachter
from iclr26.vision.pcg.common import CounterfactualResult
from iclr26.vision.pcg.embedding import PerceptualEmbedding, pullback_metric
from iclr26.vision.pcg.geodesic import path_energy, refine_path, straight_path
from iclr26.vision.pcg.metrics import (
    frechet_distance,
    l1,
    oracle_validity,
    path_smoothness,
    validity,
)
from iclr26.vision.pcg.models import (
    ConvVAE,
    Decoder,
    Encoder,
    MLPClassifier,
    pgd_attack,
    train_classifier,
    train_vae,
)
from iclr26.vision.pcg.pcg import PCG, counterfactual

__all__ = [
    "PCG",
    "RSGD",
    "ConvVAE",
    "CounterfactualResult",
    "Decoder",
    "Encoder",
    "LatentWachter",
    "MLPClassifier",
    "PerceptualEmbedding",
    "PixelWachter",
    "counterfactual",
    "frechet_distance",
    "l1",
    "oracle_validity",
    "path_energy",
    "path_smoothness",
    "pgd_attack",
    "pullback_metric",
    "refine_path",
    "straight_path",
    "train_classifier",
    "train_vae",
    "validity",
]
