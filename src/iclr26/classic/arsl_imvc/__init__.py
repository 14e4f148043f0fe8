"""ARSL-IMVC: latent-aligned view recovery and tensorial subspace learning for incomplete
multi-view clustering."""

from iclr26.classic.arsl_imvc.baselines import (
    BestSingleView,
    IncompleteGraphFusion,
    MeanImputeConcatKMeans,
    clustering_acc,
    purity,
    scores,
)
from iclr26.classic.arsl_imvc.data import (
    make_missing_views,
    make_multiview_blobs,
    multiview_digits,
)
from iclr26.classic.arsl_imvc.model import ARSLIMVC, check_views
from iclr26.classic.arsl_imvc.tensor import (
    hsic_linear,
    norm21,
    procrustes,
    shrink21,
    tensor_nuclear_norm,
    tsvt,
)

__all__ = [
    "ARSLIMVC",
    "BestSingleView",
    "IncompleteGraphFusion",
    "MeanImputeConcatKMeans",
    "check_views",
    "clustering_acc",
    "hsic_linear",
    "make_missing_views",
    "make_multiview_blobs",
    "multiview_digits",
    "norm21",
    "procrustes",
    "purity",
    "scores",
    "shrink21",
    "tensor_nuclear_norm",
    "tsvt",
]
