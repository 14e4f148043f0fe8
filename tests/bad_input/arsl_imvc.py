"""Bad-input cases of the ARSL-IMVC room (tiny views; each call fails before the ADMM)."""

import numpy as np

from iclr26.classic.arsl_imvc import (
    ARSLIMVC,
    BestSingleView,
    IncompleteGraphFusion,
    MeanImputeConcatKMeans,
    check_views,
    clustering_acc,
    cross_view_ridge,
    hsic_linear,
    make_latent_views,
    make_missing_views,
    make_multiview_blobs,
    mean_impute,
    multiview_digits,
    norm21,
    procrustes,
    purity,
    recovery_error,
    scores,
    shrink21,
    tensor_nuclear_norm,
    tsvt,
)

NAN, INF = float("nan"), float("inf")
_rng = np.random.default_rng(0)
A, B = _rng.normal(size=(12, 4)), _rng.normal(size=(12, 3))
VIEWS = [A, B]
A_inf = A.copy()
A_inf[1, 2] = INF
A_part_nan = A.copy()
A_part_nan[0, 0] = NAN  # a partly observed row: neither missing nor finite
MASK = np.ones((12, 2), dtype=bool)
MASK[0, 1] = False
y = np.arange(12) % 3


def _fit(cls, **params):
    return lambda: cls(**params).fit(VIEWS)


CASES = [
    ("ARSLIMVC", "range", _fit(ARSLIMVC, n_clusters=2.5, latent_dim=2), TypeError, "n_clusters"),
    ("ARSLIMVC", "range", _fit(ARSLIMVC, n_clusters=20, latent_dim=2), ValueError, "n_clusters"),
    ("ARSLIMVC", "range", _fit(ARSLIMVC, n_clusters=3, latent_dim=4), ValueError, "latent_dim"),
    (
        "ARSLIMVC",
        "range",
        _fit(ARSLIMVC, n_clusters=3, latent_dim=2, lambda2=NAN),
        ValueError,
        "lambda2",
    ),
    (
        "ARSLIMVC",
        "range",
        _fit(ARSLIMVC, n_clusters=3, latent_dim=2, lambda3=-1.0),
        ValueError,
        "lambda3",
    ),
    ("ARSLIMVC", "range", _fit(ARSLIMVC, n_clusters=3, latent_dim=2, mu=0.0), ValueError, "mu"),
    ("ARSLIMVC", "range", _fit(ARSLIMVC, n_clusters=3, latent_dim=2, tol=INF), ValueError, "tol"),
    (
        "ARSLIMVC",
        "type",
        _fit(ARSLIMVC, n_clusters=3, latent_dim=2, max_iter=1.5),
        TypeError,
        "max_iter",
    ),
    (
        "ARSLIMVC",
        "inf",
        lambda: ARSLIMVC(3, latent_dim=2).fit([A_inf, B]),
        ValueError,
        r"views\[0\]",
    ),
    (
        "ARSLIMVC",
        "nan",
        lambda: ARSLIMVC(3, latent_dim=2).fit([A_part_nan, B]),
        ValueError,
        r"views\[0\]",
    ),
    ("ARSLIMVC", "shape", lambda: ARSLIMVC(3, latent_dim=2).fit([A, B[:5]]), ValueError, "views"),
    (
        "ARSLIMVC",
        "shape",
        lambda: ARSLIMVC(3, latent_dim=2).fit([A, B[:, 0]]),
        ValueError,
        r"views\[1\]",
    ),
    ("ARSLIMVC", "type", lambda: ARSLIMVC(3, latent_dim=2).fit(A), TypeError, "views"),
    (
        "ARSLIMVC",
        "empty",
        lambda: ARSLIMVC(3, latent_dim=2).fit([A[:0], B[:0]]),
        ValueError,
        r"views\[0\]",
    ),
    (
        "MeanImputeConcatKMeans",
        "nan",
        lambda: MeanImputeConcatKMeans(3).fit([A_part_nan, B]),
        ValueError,
        r"views\[0\]",
    ),
    (
        "MeanImputeConcatKMeans",
        "range",
        _fit(MeanImputeConcatKMeans, n_clusters=0),
        ValueError,
        "n_clusters",
    ),
    ("BestSingleView", "inf", lambda: BestSingleView(3).fit([A_inf, B]), ValueError, r"views\[0\]"),
    ("BestSingleView", "range", _fit(BestSingleView, n_clusters=2.5), TypeError, "n_clusters"),
    (
        "IncompleteGraphFusion",
        "range",
        _fit(IncompleteGraphFusion, n_clusters=3, n_neighbors=0),
        ValueError,
        "n_neighbors",
    ),
    (
        "IncompleteGraphFusion",
        "empty",
        lambda: IncompleteGraphFusion(3).fit([A[:0], B[:0]]),
        ValueError,
        r"views\[0\]",
    ),
    (
        "check_views",
        "shape",
        lambda: check_views(VIEWS, mask=np.ones((12, 3), bool)),
        ValueError,
        "mask",
    ),
    ("check_views", "type", lambda: check_views([A]), TypeError, "views"),
    (
        "check_views",
        "other",
        lambda: check_views([np.full((3, 2), NAN), B[:3]]),
        ValueError,
        r"views\[0\]",
    ),
    ("clustering_acc", "shape", lambda: clustering_acc(y, y[:5]), ValueError, "y_pred"),
    ("clustering_acc", "empty", lambda: clustering_acc([], []), ValueError, "y_true"),
    ("purity", "shape", lambda: purity(y, y[:5]), ValueError, "y_pred"),
    ("purity", "nan", lambda: purity(np.array([0.0, NAN]), [0, 1]), ValueError, "y_true"),
    ("scores", "empty", lambda: scores([], []), ValueError, "y_true"),
    (
        "cross_view_ridge",
        "range",
        lambda: cross_view_ridge(VIEWS, MASK, alphas=[0.0]),
        ValueError,
        "alphas",
    ),
    ("cross_view_ridge", "inf", lambda: cross_view_ridge([A_inf, B]), ValueError, r"views\[0\]"),
    ("mean_impute", "type", lambda: mean_impute(A), TypeError, "views"),
    (
        "recovery_error",
        "other",
        lambda: recovery_error(VIEWS, VIEWS, np.ones((12, 2), bool)),
        ValueError,
        "mask",
    ),
    (
        "recovery_error",
        "shape",
        lambda: recovery_error([A, B[:, :2]], VIEWS, MASK),
        ValueError,
        r"recovered\[1\]",
    ),
    (
        "recovery_error",
        "nan",
        lambda: recovery_error([A_part_nan, B], VIEWS, MASK),
        ValueError,
        r"recovered\[0\]",
    ),
    (
        "make_missing_views",
        "range",
        lambda: make_missing_views(VIEWS, NAN),
        ValueError,
        "missing_rate",
    ),
    (
        "make_missing_views",
        "range",
        lambda: make_missing_views(VIEWS, 1.5),
        ValueError,
        "missing_rate",
    ),
    (
        "make_missing_views",
        "nan",
        lambda: make_missing_views([A_part_nan, B], 0.3),
        ValueError,
        r"views\[0\]",
    ),
    (
        "make_missing_views",
        "shape",
        lambda: make_missing_views(VIEWS, 0.3, y=y[:4]),
        ValueError,
        "y",
    ),
    ("make_multiview_blobs", "range", lambda: make_multiview_blobs(noise=NAN), ValueError, "noise"),
    (
        "make_multiview_blobs",
        "shape",
        lambda: make_multiview_blobs(dims=(5, 6)),
        ValueError,
        "dims",
    ),
    ("make_multiview_blobs", "range", lambda: make_multiview_blobs(n=2.5), TypeError, "n"),
    (
        "make_latent_views",
        "range",
        lambda: make_latent_views(dims=(3, 4), latent_dim=5),
        ValueError,
        r"dims\[0\]",
    ),
    (
        "make_latent_views",
        "range",
        lambda: make_latent_views(separation=-INF),
        ValueError,
        "separation",
    ),
    ("multiview_digits", "range", lambda: multiview_digits(5), ValueError, "n"),
    ("multiview_digits", "range", lambda: multiview_digits(20.5), TypeError, "n"),
    ("hsic_linear", "shape", lambda: hsic_linear(A.T, B.T[:, :5]), ValueError, "b"),
    ("hsic_linear", "nan", lambda: hsic_linear(A_part_nan.T, B.T), ValueError, "a"),
    ("norm21", "inf", lambda: norm21(A_inf), ValueError, "matrix"),
    ("shrink21", "range", lambda: shrink21(A, NAN), ValueError, "tau"),
    ("shrink21", "range", lambda: shrink21(A, -1.0), ValueError, "tau"),
    ("procrustes", "shape", lambda: procrustes(A.T, B.T[:, :4]), ValueError, "latent"),
    ("procrustes", "shape", lambda: procrustes(B.T[:2], A.T), ValueError, "latent"),
    ("procrustes", "nan", lambda: procrustes(A_part_nan.T, B.T), ValueError, "target"),
    ("tsvt", "shape", lambda: tsvt(A, 0.5), ValueError, "tensor"),
    ("tsvt", "range", lambda: tsvt(np.ones((2, 2, 2)), NAN), ValueError, "tau"),
    (
        "tensor_nuclear_norm",
        "inf",
        lambda: tensor_nuclear_norm(np.full((2, 2, 2), INF)),
        ValueError,
        "tensor",
    ),
    (
        "tensor_nuclear_norm",
        "empty",
        lambda: tensor_nuclear_norm(np.ones((0, 2, 2))),
        ValueError,
        "tensor",
    ),
]

EXEMPT = {}
