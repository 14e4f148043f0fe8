"""Bad-input cases of the CDA room (tiny data: each call fails before any real work)."""

import numpy as np

from iclr26.classic.cda import (
    CDAClassifier,
    KernelSpace,
    LinearSpace,
    best_cut,
    bo_angle,
    coding_matrix,
    cv_cut,
    fit_binary,
    fold_masks,
    gda_lda_decomposition,
    golden_angle,
    hinge_loss,
    ovo_pairs,
    performance_score,
    rotate,
    rotation_plane,
    soft_centroid_direction,
    update_weights,
)

NAN, INF = float("nan"), float("inf")
_rng = np.random.default_rng(0)
X = _rng.normal(size=(12, 3))
y = np.array([0, 1] * 6)
X_nan = X.copy()
X_nan[2, 1] = NAN
X_inf = X.copy()
X_inf[0, 0] = INF
Q = X[:, 0]
Q_nan = Q.copy()
Q_nan[3] = NAN
alpha = np.full(12, 0.2)
v1, v2 = np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0])


def _fit(**params):
    return lambda: CDAClassifier(max_iter=2, n_null=5, **params).fit(X, y)


def _fitted():
    return CDAClassifier(max_iter=2, n_null=5, random_state=0).fit(X, y)


def _bad_objective(theta):
    return NAN


CASES = [
    ("CDAClassifier", "nan", lambda: CDAClassifier().fit(X_nan, y), ValueError, "X"),
    ("CDAClassifier", "inf", lambda: CDAClassifier().fit(X_inf, y), ValueError, "X"),
    (
        "CDAClassifier",
        "empty",
        lambda: CDAClassifier().fit(np.empty((0, 3)), []),
        ValueError,
        "0 sample",
    ),
    ("CDAClassifier", "shape", lambda: CDAClassifier().fit(X, y[:5]), ValueError, "samples"),
    ("CDAClassifier", "shape", lambda: _fitted().predict(X[:, :2]), ValueError, "X has 2 features"),
    (
        "CDAClassifier",
        "shape",
        lambda: _fitted().predict_proba(X[:, :2]),
        ValueError,
        "X has 2 features",
    ),
    (
        "CDAClassifier",
        "other",
        lambda: CDAClassifier().fit(np.ones((12, 3)), y),
        ValueError,
        "X is constant",
    ),
    (
        "CDAClassifier",
        "other",
        lambda: CDAClassifier().fit(X, np.zeros(12)),
        ValueError,
        "2 classes",
    ),
    ("CDAClassifier", "range", _fit(kernel_c=NAN), ValueError, "kernel_c"),
    ("CDAClassifier", "range", _fit(kernel_c=0.0), ValueError, "kernel_c"),
    ("CDAClassifier", "range", _fit(cv_threshold=-1.0), ValueError, "cv_threshold"),
    ("CDAClassifier", "range", _fit(n_folds=1), ValueError, "n_folds"),
    ("CDAClassifier", "type", _fit(max_iter=2.5), TypeError, "max_iter"),
    ("CDAClassifier", "range", _fit(kernel="poly"), ValueError, "kernel"),
    ("CDAClassifier", "range", _fit(angle_search="grid"), ValueError, "angle_search"),
    ("LinearSpace", "nan", lambda: LinearSpace(X_nan), ValueError, "X"),
    ("LinearSpace", "shape", lambda: LinearSpace(Q), ValueError, "X"),
    ("KernelSpace", "shape", lambda: KernelSpace(X), ValueError, "gram"),
    ("KernelSpace", "inf", lambda: KernelSpace(np.full((3, 3), INF)), ValueError, "gram"),
    ("best_cut", "nan", lambda: best_cut(Q_nan, y), ValueError, "Q"),
    ("best_cut", "empty", lambda: best_cut(Q[:1], y[:1]), ValueError, "Q"),
    ("best_cut", "shape", lambda: best_cut(Q, y[:4]), ValueError, "y"),
    ("best_cut", "other", lambda: best_cut(Q, y + 1), ValueError, "y"),
    ("cv_cut", "inf", lambda: cv_cut(np.where(Q > 0, INF, Q), y), ValueError, "Q"),
    ("cv_cut", "range", lambda: cv_cut(Q, y, n_folds=0), ValueError, "n_folds"),
    ("cv_cut", "shape", lambda: cv_cut(Q, y, masks=np.ones((2, 5), bool)), ValueError, "masks"),
    ("fold_masks", "empty", lambda: fold_masks([], 3, _rng), ValueError, "y"),
    ("fold_masks", "range", lambda: fold_masks(y, 0, _rng), ValueError, "n_folds"),
    ("fold_masks", "type", lambda: fold_masks(y, 3, 0), TypeError, "rng"),
    ("performance_score", "nan", lambda: performance_score(NAN, 1, 1, 1), ValueError, "tp"),
    ("performance_score", "range", lambda: performance_score(1, -1, 1, 1), ValueError, "tn"),
    (
        "performance_score",
        "shape",
        lambda: performance_score([1, 2], [1, 2, 3], 1, 1),
        ValueError,
        "broadcast",
    ),
    ("fit_binary", "shape", lambda: fit_binary(LinearSpace(X), y[:5]), ValueError, "y"),
    ("fit_binary", "other", lambda: fit_binary(LinearSpace(X), np.zeros(12)), ValueError, "y"),
    ("fit_binary", "type", lambda: fit_binary(X, y), TypeError, "space"),
    (
        "fit_binary",
        "range",
        lambda: fit_binary(LinearSpace(X), y, cv_threshold=NAN),
        ValueError,
        "cv_threshold",
    ),
    (
        "fit_binary",
        "range",
        lambda: fit_binary(LinearSpace(X), y, n_folds=1),
        ValueError,
        "n_folds",
    ),
    ("gda_lda_decomposition", "nan", lambda: gda_lda_decomposition(X_nan, y), ValueError, "X"),
    ("gda_lda_decomposition", "shape", lambda: gda_lda_decomposition(X, y[:3]), ValueError, "y"),
    (
        "gda_lda_decomposition",
        "empty",
        lambda: gda_lda_decomposition(np.empty((0, 2)), []),
        ValueError,
        "X",
    ),
    (
        "gda_lda_decomposition",
        "other",
        lambda: gda_lda_decomposition(np.ones((12, 3)), y),
        ValueError,
        "X",
    ),
    ("bo_angle", "nan", lambda: bo_angle(_bad_objective, 5), ValueError, "objective"),
    ("bo_angle", "range", lambda: bo_angle(abs, 0), ValueError, "n_evals"),
    ("bo_angle", "type", lambda: bo_angle(None, 5), TypeError, "objective"),
    ("golden_angle", "range", lambda: golden_angle(abs, 1), ValueError, "n_evals"),
    (
        "golden_angle",
        "range",
        lambda: golden_angle(abs, 5, bounds=(1.0, NAN)),
        ValueError,
        "bounds",
    ),
    ("golden_angle", "nan", lambda: golden_angle(_bad_objective, 5), ValueError, "objective"),
    ("ovo_pairs", "range", lambda: ovo_pairs(1), ValueError, "n_classes"),
    ("ovo_pairs", "type", lambda: ovo_pairs(2.5), TypeError, "n_classes"),
    ("coding_matrix", "range", lambda: coding_matrix(0), ValueError, "n_classes"),
    (
        "hinge_loss",
        "shape",
        lambda: hinge_loss(np.ones((4, 2)), coding_matrix(3)),
        ValueError,
        "scores",
    ),
    (
        "hinge_loss",
        "nan",
        lambda: hinge_loss(np.full((4, 3), NAN), coding_matrix(3)),
        ValueError,
        "scores",
    ),
    ("rotate", "range", lambda: rotate(v1, v2, NAN), ValueError, "theta_deg"),
    ("rotate", "shape", lambda: rotate(v1, v2[:2], 10.0), ValueError, "v2_orth"),
    (
        "rotation_plane",
        "nan",
        lambda: rotation_plane(v1, np.array([NAN, 1.0, 0.0])),
        ValueError,
        "v2",
    ),
    ("rotation_plane", "other", lambda: rotation_plane(np.zeros(3), v2), ValueError, "v1"),
    (
        "soft_centroid_direction",
        "nan",
        lambda: soft_centroid_direction(X_nan, y, alpha),
        ValueError,
        "X",
    ),
    (
        "soft_centroid_direction",
        "range",
        lambda: soft_centroid_direction(X, y, -alpha),
        ValueError,
        "alpha",
    ),
    (
        "soft_centroid_direction",
        "shape",
        lambda: soft_centroid_direction(X, y, alpha[:3]),
        ValueError,
        "alpha",
    ),
    ("update_weights", "nan", lambda: update_weights(alpha, Q_nan, 0.0), ValueError, "Q1"),
    ("update_weights", "range", lambda: update_weights(alpha, Q, INF), ValueError, "oop"),
    ("update_weights", "shape", lambda: update_weights(alpha, Q[:3], 0.0), ValueError, "Q1"),
]

EXEMPT = {
    "BinaryCDA": "a frozen record returned by fit_binary; it takes no user data",
}
