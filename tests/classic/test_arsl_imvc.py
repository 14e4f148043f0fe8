import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from iclr26.claims import run_claim
from iclr26.classic.arsl_imvc import (
    ARSLIMVC,
    BestSingleView,
    IncompleteGraphFusion,
    MeanImputeConcatKMeans,
    clustering_acc,
    cross_view_ridge,
    hsic_linear,
    make_latent_views,
    make_missing_views,
    mean_impute,
    multiview_digits,
    norm21,
    procrustes,
    purity,
    recovery_error,
    shrink21,
    tensor_nuclear_norm,
    tsvt,
)
from iclr26.classic.arsl_imvc.model import _solve_identity_plus_gram


def subspace_views(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    views = []
    for d in (10, 15):
        bases = rng.normal(size=(3, d, 2))
        w = rng.normal(size=(n, 2))
        views.append(np.einsum("ndk,nk->nd", bases[y], w) + 0.01 * rng.normal(size=(n, d)))
    return views, y


def test_tsvt_limits_and_tnn_convention():
    rng = np.random.default_rng(0)
    T = rng.normal(size=(12, 3, 12))
    np.testing.assert_allclose(tsvt(T, 0.0), T, atol=1e-10)
    np.testing.assert_allclose(tsvt(T, 1e6), 0.0, atol=1e-12)
    assert np.isrealobj(tsvt(T, 0.5))
    tall = rng.normal(size=(40, 3, 8))  # exercises the Gram-eigen path
    f = np.fft.fft(tall, axis=2)
    ref = np.zeros_like(f)
    for i in range(8):
        u, s, vh = np.linalg.svd(f[:, :, i], full_matrices=False)
        ref[:, :, i] = (u * np.maximum(s - 0.7, 0)) @ vh
    np.testing.assert_allclose(tsvt(tall, 0.7), np.fft.ifft(ref, axis=2).real, atol=1e-10)
    # one non-zero frontal slice M: every Fourier slice equals M, so (1/n3) sum = ||M||_*
    M = rng.normal(size=(5, 4))
    one = np.zeros((5, 4, 6))
    one[:, :, 0] = M
    assert tensor_nuclear_norm(one) == pytest.approx(np.linalg.norm(M, "nuc"))


def test_shrink21_is_the_prox():
    rng = np.random.default_rng(1)
    B = rng.normal(size=(6, 8))
    B[:, 2] *= 0.01  # a column that must vanish
    tau = 0.8
    X = shrink21(B, tau)
    assert np.allclose(X[:, 2], 0.0)
    obj = lambda Z: tau * norm21(Z) + 0.5 * np.sum((Z - B) ** 2)
    base = obj(X)
    for _ in range(200):
        assert obj(X + 1e-3 * rng.normal(size=X.shape)) >= base - 1e-12


def test_procrustes_orthonormal_and_optimal():
    rng = np.random.default_rng(2)
    target, H = rng.normal(size=(10, 30)), rng.normal(size=(4, 30))
    P = procrustes(target, H)
    np.testing.assert_allclose(P.T @ P, np.eye(4), atol=1e-10)
    best = np.linalg.norm(target - P @ H)
    for _ in range(50):
        Q = np.linalg.qr(rng.normal(size=(10, 4)))[0]
        assert np.linalg.norm(target - Q @ H) >= best - 1e-9


def test_e1_update_solves_stationarity():
    rng = np.random.default_rng(3)
    n, mu, lam2, lam3 = 25, 0.7, 5.0, 0.4
    E1 = [rng.normal(size=(4, n)), rng.normal(size=(3, n)), rng.normal(size=(5, n))]
    A = rng.normal(size=(3, n))
    E = ARSLIMVC._update_e1(E1, 1, A, mu, lam2, lam3, n)
    C = np.eye(n) - np.ones((n, n)) / n
    M = C @ (E1[0].T @ E1[0] + E1[2].T @ E1[2]) @ C
    grad = 2 * lam2 * E @ M / (n - 1) ** 2 + lam3 * E + mu * (E - A)
    assert np.abs(grad).max() < 1e-8
    # the gradient matches the HSIC definition (finite differences)
    f = lambda X: (
        lam2 * (hsic_linear(X, E1[0]) + hsic_linear(X, E1[2]))
        + lam3 / 2 * np.sum(X**2)
        + mu / 2 * np.sum((X - A) ** 2)
    )
    D = rng.normal(size=E.shape)
    h = 1e-6
    fd = (f(E + h * D) - f(E - h * D)) / (2 * h)
    assert fd == pytest.approx(np.sum(grad * D), abs=1e-6)
    F = rng.normal(size=(3, n))
    rhs = rng.normal(size=(n, 2))
    direct = np.linalg.solve(2.0 * np.eye(n) + 0.3 * F.T @ F, rhs)
    np.testing.assert_allclose(_solve_identity_plus_gram(F, rhs, 2.0, 0.3), direct, atol=1e-10)


def test_end_to_end_recovers_subspace_clusters():
    views, y = subspace_views()
    mv, mask = make_missing_views(views, 0.3, y=y, random_state=0)
    with threadpool_limits(1):
        model = ARSLIMVC(n_clusters=3, latent_dim=5, random_state=0).fit(mv)
    assert clustering_acc(y, model.labels_) >= 0.9
    assert model.history_[-1] < model.history_[0] / 100
    for v in range(2):
        obs = mask[:, v]
        np.testing.assert_array_equal(model.recovered_views_[v][obs], views[v][obs])
        assert np.all(np.isfinite(model.recovered_views_[v]))
    assert model.affinity_.shape == (60, 60)
    assert np.allclose(model.affinity_, model.affinity_.T)


def test_missing_views_protocol_and_bad_input():
    views, y = multiview_digits(200, random_state=0)
    mv, mask = make_missing_views(views, 0.3, y=y, random_state=1)
    assert mask.any(axis=1).all()
    assert abs((~mask.all(axis=1)).mean() - 0.3) <= 0.02
    for v in range(3):
        assert np.isnan(mv[v][~mask[:, v]]).all() and set(y[mask[:, v]]) == set(y)
    model = ARSLIMVC(n_clusters=3)
    with pytest.raises(ValueError, match="different numbers"):
        model.fit([np.zeros((10, 3)), np.zeros((9, 3))])
    both_missing = [np.ones((10, 3)), np.ones((10, 2))]
    both_missing[0][4] = np.nan
    both_missing[1][4] = np.nan
    with pytest.raises(ValueError, match="every view"):
        model.fit(both_missing)
    with pytest.raises(TypeError):
        model.fit(np.zeros((10, 3)))
    with pytest.raises(ValueError):
        ARSLIMVC(n_clusters=1).fit([np.ones((10, 3)), np.ones((10, 2))])


def test_metrics():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert clustering_acc(y, np.array([2, 2, 0, 0, 1, 1])) == 1.0
    assert purity(y, np.zeros(6, dtype=int)) == pytest.approx(1 / 3)


def _premise(n=90, standardise=False):
    truth, y = make_latent_views(n, 3, random_state=0)
    views, mask = make_missing_views(truth, 0.3, y=y, random_state=0)
    if standardise:
        stats = [(t[mask[:, v]].mean(0), t[mask[:, v]].std(0)) for v, t in enumerate(truth)]
        truth = [(t - m) / s for t, (m, s) in zip(truth, stats)]
        views = [np.where(mask[:, [v]], t, np.nan) for v, t in enumerate(truth)]
    return truth, views, mask


@pytest.mark.parametrize("standardise", [False, True])
def test_view_recovery_on_the_models_premise(standardise):
    """Views that are orthonormal maps of one latent: the recovered missing rows are far better
    than mean imputation (the literal objective, lambda3 = 0, is not) and near a ridge fit."""
    truth, views, mask = _premise(standardise=standardise)
    with threadpool_limits(1):
        model = ARSLIMVC(3, latent_dim=5, max_iter=60, random_state=0).fit(views)
        literal = ARSLIMVC(3, latent_dim=5, max_iter=60, lambda3=0.0, random_state=0).fit(views)
    assert recovery_error(mean_impute(views), truth, mask) == pytest.approx(1.0)
    ridge = recovery_error(cross_view_ridge(views), truth, mask)
    error = recovery_error(model.recovered_views_, truth, mask)
    assert ridge < 0.01
    assert error < 0.1 and error < ridge + 0.05
    assert recovery_error(literal.recovered_views_, truth, mask) > 0.3


def test_hyperparameters_are_refused_not_capped():
    views, _ = subspace_views()
    with pytest.raises(TypeError, match="n_clusters"):
        ARSLIMVC(n_clusters=2.5).fit(views)
    with pytest.raises(ValueError, match="latent_dim"):
        ARSLIMVC(n_clusters=3, latent_dim=11).fit(views)  # views have 10 and 15 columns
    with pytest.raises(ValueError, match="lambda3"):
        ARSLIMVC(n_clusters=3, latent_dim=5, lambda3=float("nan")).fit(views)
    with pytest.raises(ValueError, match="rho"):
        ARSLIMVC(n_clusters=3, latent_dim=5, rho=0.5).fit(views)


@pytest.mark.parametrize(
    "estimator",
    [
        ARSLIMVC(3, latent_dim=2, max_iter=3),
        MeanImputeConcatKMeans(3),
        BestSingleView(3),
        IncompleteGraphFusion(3),
    ],
)
def test_sklearn_contract(estimator):
    """clone, parameters and the API checks of scikit-learn hold; check_estimator's data checks
    are skipped because the tags declare that fit takes no 2-D array (a list of views)."""
    from sklearn.base import clone, is_clusterer
    from sklearn.utils import estimator_checks as checks

    assert is_clusterer(estimator)
    twin = clone(estimator)
    assert twin.get_params() == estimator.get_params() and twin is not estimator
    tags = estimator.__sklearn_tags__()
    assert not tags.input_tags.two_d_array and tags.input_tags.allow_nan
    views, y = subspace_views()
    labels = clone(estimator).fit_predict(views)
    assert labels.shape == y.shape and len(set(labels)) <= 3
    name = type(estimator).__name__
    checks.check_get_params_invariance(name, clone(estimator))
    checks.check_no_attributes_set_in_init(name, clone(estimator))
    checks.check_parameters_default_constructible(name, clone(estimator))
    checks.check_estimator_repr(name, clone(estimator))
    results = checks.check_estimator(clone(estimator), on_fail=None, on_skip=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
    assert {r["check_name"] for r in results} == {"check_estimator_cloneable"}


@pytest.mark.parametrize(
    "name", ["beats-imvc-baselines", "missing-rate-robustness", "view-recovery"]
)
def test_claims_smoke(name, tmp_path):
    rec = run_claim("arsl_imvc", name, "smoke", out_dir=tmp_path)
    assert rec["verdict"] != "error", rec["traceback"]
    assert rec["metrics"]
    assert rec["figures"]
