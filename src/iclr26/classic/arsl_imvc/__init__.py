"""ARSL-IMVC: latent-aligned view recovery and tensorial subspace learning for incomplete
multi-view clustering."""

from iclr26.classic.arsl_imvc.baselines import (
    BestSingleView,
    IncompleteGraphFusion,
    MeanImputeConcatKMeans,
    clustering_acc,
    cross_view_ridge,
    mean_impute,
    purity,
    recovery_error,
    scores,
)
from iclr26.classic.arsl_imvc.data import (
    make_latent_views,
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
    "cross_view_ridge",
    "hsic_linear",
    "make_latent_views",
    "make_missing_views",
    "make_multiview_blobs",
    "multiview_digits",
    "mean_impute",
    "norm21",
    "procrustes",
    "purity",
    "recovery_error",
    "scores",
    "shrink21",
    "tensor_nuclear_norm",
    "tsvt",
]
