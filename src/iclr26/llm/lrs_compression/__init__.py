"""CAP: LLM compression with global rank and sparsity optimization (Zhou et al., ICLR 2026).

Robust PCA (inexact ALM) splits every linear weight into low-rank + sparse candidate pools; a
REINFORCE-trained Bernoulli allocator with a projection onto one global parameter budget, and a
cost-aware global top-K, decide which singular triplets and sparse entries every matrix keeps;
the kept parts become :class:`LowRankSparseLinear` modules. Baselines: Wanda, magnitude pruning,
SparseGPT, OATS (scaled alternating SVD + hard thresholding), uniform low-rank + sparse and
uniform SVD at the same parameter count.
"""

from iclr26.llm.lrs_compression.allocator import (
    ProbabilisticAllocator,
    finalize,
    project_budget,
    score_function_gradient,
    uniform_allocation,
)
from iclr26.llm.lrs_compression.baselines import (
    LAYER_SPARSITY,
    activation_norms,
    magnitude_prune,
    owl_layer_sparsity,
    svd_uniform,
    uniform_lrs,
    wanda_prune,
)
from iclr26.llm.lrs_compression.candidates import RPCACandidates
from iclr26.llm.lrs_compression.compressor import OBJECTIVES, CAPCompressor, allocation_summary
from iclr26.llm.lrs_compression.layers import LowRankSparseLinear
from iclr26.llm.lrs_compression.oats import oats_budget, oats_decompose_weight, oats_prune
from iclr26.llm.lrs_compression.rpca import rpca, shrink, singular_value_threshold
from iclr26.llm.lrs_compression.serialization import load_compressed, save_compressed
from iclr26.llm.lrs_compression.sparsegpt import SparseGPT, sparsegpt_prune, sparsegpt_prune_weight
from iclr26.llm.lrs_compression.targets import (
    DEFAULT_TARGETS,
    count_parameters,
    linear_flops_per_token,
)

__all__ = [
    "DEFAULT_TARGETS",
    "LAYER_SPARSITY",
    "OBJECTIVES",
    "CAPCompressor",
    "LowRankSparseLinear",
    "ProbabilisticAllocator",
    "RPCACandidates",
    "SparseGPT",
    "activation_norms",
    "allocation_summary",
    "count_parameters",
    "finalize",
    "linear_flops_per_token",
    "load_compressed",
    "magnitude_prune",
    "oats_budget",
    "oats_decompose_weight",
    "oats_prune",
    "owl_layer_sparsity",
    "project_budget",
    "rpca",
    "save_compressed",
    "score_function_gradient",
    "shrink",
    "singular_value_threshold",
    "sparsegpt_prune",
    "sparsegpt_prune_weight",
    "svd_uniform",
    "uniform_allocation",
    "uniform_lrs",
    "wanda_prune",
]
