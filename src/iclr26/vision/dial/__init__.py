"""DIAL / DIAL+: label-free, zero-shot removal of spurious directions from VLM image
embeddings with a sparse autoencoder.

DIAL filters the image representations that are probably dominated by a spurious feature
(the low-confidence mode of the zero-shot margins, per predicted class), disentangles the pool
with a TopK SAE, identifies the atoms enriched in the affected points and aligned with the
spurious attribute's text directions (not with the class directions), and removes their span
from the affected points with a label-free choice of the number of directions and the
magnitude. DIAL+ finds the spurious atoms without being told the attribute and names them with
a vocabulary. Baselines (:mod:`.baselines`), the small CLIP-style model the claims debias
(:mod:`.tinyclip`), real-CLIP backends (:mod:`.backends`) and loaders for Waterbirds and
CelebA copies on disk (:mod:`.datasets`) are beside them.
"""

from iclr26.vision.dial.backends import HFCLIPBackend, OpenCLIPBackend, TinyCLIPBackend
from iclr26.vision.dial.baselines import (
    GroupOracleProbe,
    OrthProj,
    PCARemoval,
    RoboShotLite,
    ZeroShot,
    default_insights,
)
from iclr26.vision.dial.datasets import load_celeba, load_waterbirds, stratified_subset
from iclr26.vision.dial.dial import DIAL, DIALPlus, enrichment, max_abs_cos
from iclr26.vision.dial.evaluation import group_accuracy
from iclr26.vision.dial.filtering import MarginFilter, affected_set, margins, zero_shot_probs
from iclr26.vision.dial.removal import remove_subspace, select_k_alpha, subspace_basis
from iclr26.vision.dial.sae import TopKSAE, auxk_loss, train_sae
from iclr26.vision.dial.text import HashingTextEncoder, MiniLMEncoder
from iclr26.vision.dial.tinyclip import (
    TinyCLIP,
    class_prompts,
    clip_loss,
    make_captions,
    spurious_prompts,
    train_tinyclip,
)
from iclr26.vision.dial.vocab import VOCAB, vocab_prompts

__all__ = [
    "DIAL",
    "VOCAB",
    "DIALPlus",
    "GroupOracleProbe",
    "HFCLIPBackend",
    "HashingTextEncoder",
    "MarginFilter",
    "MiniLMEncoder",
    "OpenCLIPBackend",
    "OrthProj",
    "PCARemoval",
    "RoboShotLite",
    "TinyCLIP",
    "TinyCLIPBackend",
    "TopKSAE",
    "ZeroShot",
    "affected_set",
    "auxk_loss",
    "class_prompts",
    "clip_loss",
    "default_insights",
    "enrichment",
    "group_accuracy",
    "make_captions",
    "load_celeba",
    "load_waterbirds",
    "margins",
    "max_abs_cos",
    "remove_subspace",
    "select_k_alpha",
    "spurious_prompts",
    "stratified_subset",
    "subspace_basis",
    "train_sae",
    "train_tinyclip",
    "vocab_prompts",
    "zero_shot_probs",
]
