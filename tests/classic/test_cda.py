"""Tests of the CDA room: cut search, geometry, angle search, estimator, claims (smoke)."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestCentroid
from sklearn.utils.estimator_checks import check_estimator

from iclr26.claims import run_claim
from iclr26.classic.cda import (
    CDAClassifier,
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
    performance_score,
    rotate,
    rotation_plane,
    soft_centroid_direction,
    update_weights,
)
from iclr26.classic.cda.angle_search import SklearnSurrogate, Surrogate, fit_hyperparameters


def _two_gaussians(n=200, m=5, shift=1.5, seed=0):
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % 2).astype(int)
    X = rng.normal(size=(n, m)) + shift * y[:, None] * np.linspace(1.0, 0.2, m)
    return X, y


def _brute_force_ps(Q, y):
    """Best ps over every realisable threshold, by explicit loops (reference semantics)."""
    values = np.unique(Q)
    best = -np.inf
    for low, high in itertools.pairwise(values):
        predicted = Q >= (low + high) / 2
        tp = np.sum(predicted & (y == 1))
        tn = np.sum(~predicted & (y == 0))
        fp = np.sum(predicted & (y == 0))
        fn = np.sum(~predicted & (y == 1))
        sens = tp / (tp + fn) if tp + fn else 1.0
        prec = tp / (tp + fp) if tp + fp else 0.0
        f1p = 0.0 if sens + prec == 0 else 2 * sens * prec / (sens + prec)
        spec = tn / (tn + fp) if tn + fp else 1.0
        npv = tn / (tn + fn) if tn + fn else 0.0
        f1n = 0.0 if spec + npv == 0 else 2 * spec * npv / (spec + npv)
        tpr = tp / (tp + fn) if tp + fn else 0.0
        tnr = tn / (tn + fp) if tn + fp else 0.0
        ac = 0.0 if tpr + tnr == 0 else 2 * tpr * tnr / (tpr + tnr)
        best = max(best, (f1p + f1n + ac) / 3)
    return best


# ----------------------------------------------------------------------------- cut search


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("rounded", [False, True])
def test_best_cut_matches_brute_force(seed, rounded):
    rng = np.random.default_rng(seed)
    y = (rng.random(50) < 0.4).astype(int)
    Q = rng.normal(size=50) + 1.2 * y
    if rounded:  # ties between projections
        Q = np.round(Q, 1)
    ps, oop = best_cut(Q, y)
    assert ps == pytest.approx(_brute_force_ps(Q, y), abs=1e-12)
    predicted = Q >= oop
    tp, tn = np.sum(predicted & (y == 1)), np.sum(~predicted & (y == 0))
    fp, fn = np.sum(predicted & (y == 0)), np.sum(~predicted & (y == 1))
    assert performance_score(tp, tn, fp, fn) == pytest.approx(ps, abs=1e-12)


def test_best_cut_separable_and_median_tie_rule():
    Q = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    y = np.array([0, 0, 0, 1, 1])
    assert best_cut(Q, y) == (pytest.approx(1.0), pytest.approx(6.0))
    # Both cuts around the lone middle sample score the same: two tied cuts, mean threshold.
    Q = np.array([0.0, 1.0, 5.0, 9.0, 10.0, 20.0, 21.0])
    y = np.array([0, 0, 0, 1, 0, 1, 1])
    ps, oop = best_cut(Q, y)
    assert ps == pytest.approx(_brute_force_ps(Q, y))


def test_performance_score_special_cases():
    assert performance_score(5, 5, 0, 0) == pytest.approx(1.0)
    # everything predicted positive: F1(neg) = 0, AC = 0, F1(pos) = 2*5/(10+5)
    assert performance_score(5, 0, 5, 0) == pytest.approx((2 / 3) / 3)
    # no positive samples at all: F1(pos) = 0, AC = 0, F1(neg) = 1
    assert performance_score(0, 4, 0, 0) == pytest.approx(1 / 3)


def test_cv_cut_is_fold_average_of_best_cut():
    rng = np.random.default_rng(3)
    y = (rng.random(60) < 0.5).astype(int)
    Q = rng.normal(size=60) + y
    masks = fold_masks(y.astype(bool), 5, np.random.default_rng(7))
    assert masks.shape == (5, 60) and np.all(masks.sum(axis=0) == 4)
    parts = [best_cut(Q[m], y[m]) for m in masks]
    ps, oop = cv_cut(Q, y, masks=masks)
    assert ps == pytest.approx(np.mean([p for p, _ in parts]))
    assert oop == pytest.approx(np.mean([o for _, o in parts]))


def test_cut_rejects_bad_input():
    with pytest.raises(ValueError):
        best_cut(np.array([0.0, np.nan]), np.array([0, 1]))
    with pytest.raises(ValueError):
        best_cut(np.array([0.0, 1.0]), np.array([0, 2]))
    with pytest.raises(ValueError):
        best_cut(np.zeros(3), np.zeros(4))


# ----------------------------------------------------------------------------- geometry


def test_cdb0_is_nearest_centroid_direction():
    X, y = _two_gaussians(m=6)
    v = soft_centroid_direction(X, y, np.ones(len(y)))
    centroids = NearestCentroid().fit(X, y).centroids_
    expected = centroids[1] - centroids[0]
    assert np.linalg.norm(v) == pytest.approx(1.0)
    assert v @ expected / np.linalg.norm(expected) == pytest.approx(1.0)


def test_lda_collapses_to_cdb0_on_isotropic_classes():
    rng = np.random.default_rng(0)
    y = (np.arange(5000) % 2).astype(int)
    X = rng.normal(size=(5000, 4)) + y[:, None] * np.array([1.0, 0.5, -0.5, 0.2])
    w_lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y).coef_[0]
    v = soft_centroid_direction(X, y, np.ones(len(y)))
    assert v @ w_lda / np.linalg.norm(w_lda) > 0.99


def test_gda_decomposition_reconstructs_lda_direction():
    rng = np.random.default_rng(1)
    y = (np.arange(400) % 3 == 0).astype(int)
    mixing = rng.normal(size=(5, 5)) * np.array([3.0, 1.0, 0.3, 2.0, 0.5])
    X = rng.normal(size=(400, 5)) @ mixing + y[:, None] * rng.normal(size=5)
    w0, C = gda_lda_decomposition(X, y)
    w = (np.eye(5) + C) @ w0
    w_lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y).coef_[0]
    assert w @ w_lda / (np.linalg.norm(w) * np.linalg.norm(w_lda)) == pytest.approx(1.0, abs=1e-10)
    # the correction vanishes for isotropic scatter
    iso = np.vstack([np.eye(3), -np.eye(3), np.eye(3) + 5, -np.eye(3) + 5])
    _, C_iso = gda_lda_decomposition(iso, np.repeat([0, 1], 6))
    assert np.allclose(C_iso, 0.0, atol=1e-12)


def test_rotation_keeps_unit_norm_and_projections():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 7))
    v1 = rng.normal(size=7)
    v1 /= np.linalg.norm(v1)
    v2 = rng.normal(size=7)
    v2_orth = rotation_plane(v1, v2)
    assert v2_orth @ v1 == pytest.approx(0.0, abs=1e-12)
    assert v2_orth @ v2 > 0
    for theta in (-90.0, -33.0, 0.0, 12.5, 90.0):
        v = rotate(v1, v2_orth, theta)
        assert np.linalg.norm(v) == pytest.approx(1.0)
        assert v @ v1 == pytest.approx(np.cos(np.deg2rad(theta)))
        assert np.allclose(rotate(X @ v1, X @ v2_orth, theta), X @ v)
    with pytest.raises(ValueError):
        rotation_plane(v1, 3 * v1)


def test_update_weights_favours_samples_near_threshold():
    alpha = np.full(4, 0.5)
    Q = np.array([-3.0, -0.5, 0.2, 4.0])
    new = update_weights(alpha, Q, 0.0)
    assert np.linalg.norm(new) == pytest.approx(1.0)
    assert np.argmax(new) == 2 and np.argmin(new) == 3
    d1 = np.abs(Q) / np.abs(Q).sum()
    expected = np.abs(d1 - d1.min() - d1.max())
    assert np.allclose(new, expected / np.linalg.norm(expected))


# ----------------------------------------------------------------------------- angle search


def test_surrogate_equals_sklearn_gaussian_process():
    rng = np.random.default_rng(0)
    x = rng.uniform(-90, 90, 9)
    y = np.sin(x / 25) + 0.05 * rng.normal(size=9)
    grid = np.linspace(-90, 90, 50)
    mean, std = Surrogate(x, y).predict(grid)
    mean_sk, std_sk = SklearnSurrogate(x, y).predict(grid)
    assert np.allclose(mean, mean_sk, atol=1e-8) and np.allclose(std, std_sk, atol=1e-8)
    # the chosen hyperparameters beat a default guess on the marginal likelihood
    amplitude, length_scale, noise = fit_hyperparameters(x, (y - y.mean()) / y.std())
    assert 5.0 <= length_scale <= 900.0 and noise > 0 and amplitude > 0


def test_bo_and_golden_find_the_minimum():
    def loss(theta):
        return ((theta - 30.0) / 40.0) ** 2

    assert bo_angle(loss, 10, seed=0) == pytest.approx(30.0, abs=3.0)
    assert bo_angle(loss, 8, seed=1, surrogate="sklearn") == pytest.approx(
        bo_angle(loss, 8, seed=1), abs=1e-9
    )
    assert golden_angle(loss, 20) == pytest.approx(30.0, abs=0.5)
    with pytest.raises(ValueError):
        bo_angle(loss, 0)


# ----------------------------------------------------------------------------- training


def test_training_never_scores_below_cdb0():
    for seed in range(3):
        X, y = _two_gaussians(n=150, m=8, shift=0.8, seed=seed)
        model = fit_binary(LinearSpace(X), y.astype(bool), max_iter=8, n_null=30, seed=seed)
        assert model.ps >= model.ps_cdb0 - 1e-12
        assert np.linalg.norm(model.direction) == pytest.approx(1.0)
        assert 0.0 <= model.p_value <= 1.0


def test_separable_data_is_fit_perfectly():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(120, 2))
    y = (X @ np.array([1.0, -2.0]) + 0.3 > 0).astype(int)
    X = X[np.abs(X @ np.array([1.0, -2.0]) + 0.3) > 0.1]  # keep a margin
    y = (X @ np.array([1.0, -2.0]) + 0.3 > 0).astype(int)
    clf = CDAClassifier(max_iter=20, random_state=0).fit(X, y)
    assert np.mean(clf.predict(X) == y) == 1.0
    f = clf.decision_function(X)
    assert np.array_equal(clf.predict(X), clf.classes_[(f >= 0).astype(int)])
    assert clf.coef_.shape == (1, 2) and np.linalg.norm(clf.coef_[0]) == pytest.approx(1.0)


def test_ecoc_on_three_blobs():
    X, y = make_blobs(n_samples=150, centers=[[0, 0], [4, 0], [0, 4]], random_state=0)
    clf = CDAClassifier(max_iter=5, n_null=20, random_state=0).fit(X, y)
    assert np.mean(clf.predict(X) == y) > 0.95
    assert clf.decision_function(X).shape == (150, 3)
    assert clf.coef_.shape == (3, 2) and len(clf.pairs_) == 3


def test_ecoc_decoding():
    M = coding_matrix(3)
    assert M.tolist() == [[-1, -1, 0], [1, 0, -1], [0, 1, 1]]
    # pair scores that all vote for class 2
    loss = hinge_loss(np.array([[0.0, 2.0, 1.0]]), M)
    assert np.argmin(loss[0]) == 2 and loss[0, 2] == 0.0


def test_kernel_cda_with_huge_bandwidth_matches_linear():
    X, y = _two_gaussians(n=160, m=4, shift=1.0, seed=5)
    X_test, y_test = _two_gaussians(n=200, m=4, shift=1.0, seed=6)
    linear = CDAClassifier(max_iter=5, n_null=20, random_state=0).fit(X, y)
    kernel = CDAClassifier(kernel="rbf", kernel_c=1e4, max_iter=5, n_null=20, random_state=0)
    kernel.fit(X, y)
    auc_linear = roc_auc_score(y_test, linear.decision_function(X_test))
    auc_kernel = roc_auc_score(y_test, kernel.decision_function(X_test))
    assert abs(auc_linear - auc_kernel) < 0.02
    # the CDB0 starting point is the same function up to scale
    assert kernel.ps_[0] == pytest.approx(linear.ps_[0], abs=0.03)


def test_kernel_cda_solves_a_nonlinear_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (np.linalg.norm(X, axis=1) > 1.1).astype(int)
    clf = CDAClassifier(kernel="rbf", max_iter=5, n_null=20, random_state=0).fit(X, y)
    assert roc_auc_score(y, clf.decision_function(X)) > 0.9


def test_determinism_and_pickling():
    X, y = _two_gaussians(n=100, m=5, shift=0.7)
    a = CDAClassifier(max_iter=6, n_null=20, random_state=3).fit(X, y)
    b = CDAClassifier(max_iter=6, n_null=20, random_state=3).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    c = pickle.loads(pickle.dumps(a))
    assert np.array_equal(c.decision_function(X), a.decision_function(X))
    golden = CDAClassifier(angle_search="golden", max_iter=6, n_null=20, random_state=3)
    assert golden.fit(X, y).score(X, y) > 0.7


@pytest.mark.parametrize(
    "params",
    [
        {"kernel": "poly"},
        {"angle_search": "grid"},
        {"max_iter": -1},
        {"n_folds": 1},
        {"kernel_c": 0.0},
        {"cv_threshold": float("nan")},
    ],
)
def test_bad_parameters_raise(params):
    X, y = _two_gaussians(n=40)
    with pytest.raises(ValueError):
        CDAClassifier(**params).fit(X, y)


def test_bad_data_raises():
    X, y = _two_gaussians(n=40)
    with pytest.raises(ValueError, match="2 classes"):
        CDAClassifier().fit(X, np.zeros(40))
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError):
        CDAClassifier().fit(X_nan, y)
    with pytest.raises(ValueError):
        CDAClassifier(max_iter=2, n_null=5).fit(X, y).predict(X[:, :3])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_sklearn_estimator_checks(kernel):
    # every check runs and passes: none is expected to fail (the docstring says so)
    results = check_estimator(
        CDAClassifier(kernel=kernel, max_iter=3, n_null=10, random_state=0),
        on_fail=None,
        on_skip=None,
    )
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) > 40


def test_tags_clone_and_cross_val_score():
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import cross_val_score

    model = CDAClassifier(max_iter=3, n_null=10, random_state=0)
    tags = model.__sklearn_tags__()
    assert is_classifier(model) and tags.classifier_tags.multi_class
    assert not tags.input_tags.allow_nan
    assert clone(model).get_params() == model.get_params()
    X, y = make_blobs(n_samples=90, centers=3, random_state=0)
    assert cross_val_score(model, X, y, cv=3).mean() > 0.8


@pytest.mark.parametrize("centers", [2, 3])
def test_predict_proba_is_calibrated_and_consistent(centers):
    X, y = make_blobs(n_samples=240, centers=centers, cluster_std=3.0, random_state=1)
    model = CDAClassifier(max_iter=5, n_null=10, random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (240, centers)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), proba, atol=1e-12)
    # fitted by maximum likelihood: no other temperature has a lower training log-loss
    from sklearn.metrics import log_loss

    best = log_loss(y, proba, labels=model.classes_)
    for factor in (0.5, 2.0):
        model_other = pickle.loads(pickle.dumps(model))
        model_other.temperature_ *= factor
        assert log_loss(y, model_other.predict_proba(X), labels=model.classes_) >= best - 1e-9


def test_predict_proba_is_reliable_on_overlapping_classes():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 3000)
    X = rng.normal(size=(3000, 2)) + 1.2 * y[:, None] * np.array([1.0, 0.5])
    model = CDAClassifier(max_iter=5, n_null=10, random_state=0).fit(X[:1000], y[:1000])
    p = model.predict_proba(X[1000:])[:, 1]
    bins = np.digitize(p, np.linspace(0.1, 0.9, 9))
    gaps = [abs(p[bins == b].mean() - y[1000:][bins == b].mean()) for b in np.unique(bins)]
    weights = [np.mean(bins == b) for b in np.unique(bins)]
    assert np.dot(gaps, weights) < 0.05  # expected calibration error on held-out data
    assert 0.2 < np.mean(np.abs(p - 0.5) < 0.3)  # overlapping classes: not all 0/1


def test_grid_search_with_roc_auc_ovr():
    from sklearn.model_selection import GridSearchCV

    X, y = make_blobs(n_samples=150, centers=3, cluster_std=2.5, random_state=0)
    search = GridSearchCV(
        CDAClassifier(n_null=10, random_state=0),
        {"max_iter": [2, 4]},
        scoring="roc_auc_ovr",
        cv=3,
        error_score="raise",
    ).fit(X, y)
    assert 0.8 < search.best_score_ <= 1.0


def test_constant_or_centroid_free_data_is_refused():
    y = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match="X is constant"):
        CDAClassifier(max_iter=2, n_null=5).fit(np.ones((20, 3)), y)
    with pytest.raises(ValueError, match="X is constant"):
        CDAClassifier(kernel="rbf", max_iter=2, n_null=5).fit(np.ones((20, 3)), y)
    symmetric = np.array([[1.0, 0.0], [-1.0, 0.0]] * 5 + [[0.0, 1.0], [0.0, -1.0]] * 5)
    labels = np.array([0] * 10 + [1] * 10)
    with pytest.raises(ValueError, match="X: the centroids"):
        CDAClassifier(max_iter=2, n_null=5).fit(symmetric, labels)
    # the RBF kernel separates the two rings of this set although their centroids coincide
    kernel = CDAClassifier(kernel="rbf", max_iter=3, n_null=5, random_state=0)
    assert (
        kernel.fit(symmetric * np.repeat([1.0, 3.0], 10)[:, None], labels).score(
            symmetric * np.repeat([1.0, 3.0], 10)[:, None], labels
        )
        >= 0.9
    )


# ----------------------------------------------------------------------------- claims


@pytest.mark.parametrize("name", ["accuracy-ranks", "fit-time-scaling", "kernel-vs-linear"])
def test_claim_runs_at_smoke_scale(name, tmp_path):
    record = run_claim("cda", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"] and record["baseline"]
    assert all((tmp_path / f).exists() for f in record["figures"])


def test_extrapolation_and_slopes_of_the_timing_claim():
    from iclr26.classic.cda.claims import _extrapolate, _slope

    assert _extrapolate([1000, 2000], [1.0, 4.0], 4000) == pytest.approx(16.0)
    assert _slope([1, 2, 4, 8], [3.0, 6.0, 12.0, float("inf")]) == pytest.approx(1.0)
    assert np.isnan(_slope([1, 2], [1.0, float("inf")]))


def test_work_counts_are_recorded_and_grow_with_the_data():
    X, y = _two_gaussians(n=200)
    model = CDAClassifier(max_iter=5, n_null=10, random_state=0).fit(X, y)
    assert model.n_projections_[0] >= 1 + model.n_iter_[0]  # CDB0 plus one per iteration
    assert model.n_scored_[0] >= model.n_iter_[0]
    from iclr26.classic.cda.claims import _work_count

    small = _work_count("cda", model, 100, 5)
    assert _work_count("cda", model, 200, 5) > 1.9 * small
