import warnings

import numpy as np
import pytest

from iclr26.claims import run_claim
from iclr26.timeseries.koopman_ot import (
    FeatureMap,
    KoopmanOTClassifier,
    SpectralMeasure,
    continuous_eigs,
    damped_oscillator,
    estimate_operator,
    got_distance,
    load_uea,
    martin_distance,
    martin_distance_matrix,
    random_orthogonal,
    sgot_barycenter,
    sgot_cost,
    sgot_distance,
    sot_distance,
    wasserstein,
)


def random_measure(rng, r=4, dim=5, dt=0.1):
    lam = rng.normal(size=r) + 1j * rng.normal(size=r)
    R = rng.normal(size=(dim, r)) + 1j * rng.normal(size=(dim, r))
    L = np.linalg.pinv(R).conj().T  # L^H R = I
    return SpectralMeasure(lam, R, L, np.ones(r), dt)


def test_metric_axioms_and_permutation_invariance():
    rng = np.random.default_rng(0)
    ms = [random_measure(rng) for _ in range(12)]
    for m in ms[:3]:
        assert sgot_distance(m, m, eta=0.4) == pytest.approx(0.0, abs=1e-7)
    for a, b in zip(ms, ms[1:]):
        assert sgot_distance(a, b, eta=0.4) == pytest.approx(sgot_distance(b, a, eta=0.4))
    rng2 = np.random.default_rng(1)
    for _ in range(100):
        i, j, k = rng2.choice(len(ms), 3, replace=False)
        d = lambda x, y: sgot_distance(ms[x], ms[y], eta=0.4)
        assert d(i, k) <= d(i, j) + d(j, k) + 1e-9
    a, b = ms[0], ms[1]
    perm = rng.permutation(a.rank)
    a_perm = SpectralMeasure(a.lam[perm], a.R[:, perm], a.L[:, perm], a.weights[perm], a.dt)
    assert sgot_distance(a_perm, b, eta=0.4) == pytest.approx(sgot_distance(a, b, eta=0.4))


def test_eta_limits_and_pot_cross_check():
    rng = np.random.default_rng(3)
    a, b = random_measure(rng), random_measure(rng)
    c_eig = np.abs(a.lam[:, None] - b.lam[None, :])
    w = np.full(a.rank, 1.0 / a.rank)
    assert sot_distance(a, b) == pytest.approx(wasserstein(c_eig, w, w))
    np.testing.assert_allclose(sgot_cost(a, b, 1.0), c_eig)
    assert got_distance(a, b) == pytest.approx(sgot_distance(a, b, eta=0.0))
    for eta in (0.0, 1.0):
        ours = sgot_distance(a, b, eta=eta)
        pot = sgot_distance(a, b, eta=eta, backend="pot")
        assert ours == pytest.approx(pot, rel=1e-9, abs=1e-12)
    # uneven atom counts go through POT's exact emd
    c = random_measure(rng, r=3)
    assert sgot_distance(a, c, eta=1.0) == pytest.approx(
        sgot_distance(a, c, eta=1.0, backend="pot"), rel=1e-9
    )


def test_rrr_recovers_known_linear_system_across_dt():
    Q = random_orthogonal(4, 0)
    lams = {}
    for dt in (0.05, 0.1):
        x = damped_oscillator(
            [1.0, 2.5], [0.1, 0.3], dt=dt, T=100, n_traj=5, noise=0.0, mixing=Q, random_state=1
        )
        m = estimate_operator(x, dt, rank=4, reg=1e-12)
        lams[dt] = np.sort_complex(m.lam)
        true = np.sort_complex(np.array([-0.1 + 1j, -0.1 - 1j, -0.3 + 2.5j, -0.3 - 2.5j]))
        mu_true = np.exp(true * dt)
        assert np.abs(np.sort_complex(m.mu) - np.sort_complex(mu_true)).max() < 1e-6
        # bi-orthogonality and conjugate pairs
        np.testing.assert_allclose(m.L.conj().T @ m.R, np.eye(4), atol=1e-8)
        assert np.allclose(np.sort_complex(m.lam), np.sort_complex(m.lam.conj()))
    np.testing.assert_allclose(lams[0.05], lams[0.1], atol=1e-5)


def test_bad_input():
    x = damped_oscillator([1.0], [0.1], dt=0.1, T=5, n_traj=1, noise=0.0, random_state=0)
    with pytest.raises(ValueError, match="too short"):
        estimate_operator(x[0][:3], 0.1, rank=3)
    with pytest.raises(ValueError):
        estimate_operator(x, -0.1, rank=1)
    with pytest.raises(ValueError):
        estimate_operator(np.full((5, 2), np.nan), 0.1, rank=1)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        sgot_distance(random_measure(rng), random_measure(rng), eta=1.5)
    with pytest.raises(TypeError):
        sgot_distance(np.zeros(3), random_measure(rng))
    with pytest.raises(ValueError):
        continuous_eigs([0.5], dt=0.0)


def test_batched_distance_matrices_match_pairwise():
    from iclr26.timeseries.koopman_ot.metric import distance_matrix, pairwise_distances

    rng = np.random.default_rng(0)
    ms = [
        estimate_operator(
            damped_oscillator(
                [1 + rng.random(), 2.0], [0.1, 0.2], dt=0.1, T=40, n_traj=2, random_state=i
            ),
            0.1,
            rank=r,
        )
        for i, r in enumerate([4, 4, 3, 4, 2])
    ]
    # a 40-d RBF feature space exercises the low-rank factor path of HS / operator norm
    trajs = [
        damped_oscillator([1 + rng.random()], [0.1], dt=0.1, T=40, n_traj=2, random_state=10 + i)
        for i in range(4)
    ]
    feats = FeatureMap("rbf", n_landmarks=40).fit(np.concatenate([t.reshape(-1, 2) for t in trajs]))
    rbf = [estimate_operator(t, 0.1, rank=3, features=feats) for t in trajs]
    for group in (ms, rbf):
        for metric in ("sgot", "sot", "got", "hs", "operator"):
            kwargs = {"eta": 0.3} if metric == "sgot" else {}
            batched = distance_matrix(group, group, metric, eta=0.3)
            np.testing.assert_allclose(
                batched, pairwise_distances(group, None, metric, **kwargs), atol=1e-7
            )


def stable_measure(rng, r=3, dim=5, dt=0.1):
    lam = -rng.uniform(0.2, 2.0, r) + 1j * rng.normal(size=r)
    R = rng.normal(size=(dim, r)) + 1j * rng.normal(size=(dim, r))
    return SpectralMeasure(lam, R, np.linalg.pinv(R).conj().T, np.ones(r), dt)


def test_martin_distance_known_value_and_invariances():
    # first-order systems x' = a x, y = x: cos^2 theta = (1 - a^2)(1 - b^2) / (1 - a b)^2
    a, b, dt = 0.9, 0.5, 0.1
    one = np.ones((1, 1))
    A = SpectralMeasure([np.log(a) / dt], one, one, [1.0], dt)
    B = SpectralMeasure([np.log(b) / dt], one, one, [1.0], dt)
    cos2 = (1 - a**2) * (1 - b**2) / (1 - a * b) ** 2
    assert martin_distance(A, B) == pytest.approx(np.sqrt(-np.log(cos2)), rel=1e-9)
    rng = np.random.default_rng(5)
    p, q = stable_measure(rng), stable_measure(rng)
    assert martin_distance(p, p) == pytest.approx(0.0, abs=1e-6)
    assert martin_distance(p, q) == pytest.approx(martin_distance(q, p), rel=1e-9)
    # a change of state basis (rescaled eigenvectors) leaves the subspace unchanged
    scale = rng.normal(size=3) + 1j * rng.normal(size=3)
    p2 = SpectralMeasure(p.lam, p.R / np.conj(scale), p.L * scale, p.weights, p.dt)
    assert martin_distance(p2, q) == pytest.approx(martin_distance(p, q), rel=1e-8)
    # closed-form finite horizon = principal angles of the explicit observability matrices
    import scipy.linalg

    def observability(m, horizon):
        blocks, block = [], np.conj(m.L)
        for _ in range(horizon):
            blocks.append(block)
            block = m.operator().T @ block  # features evolve as phi_{t+1} = G^T phi_t
        return scipy.linalg.orth(np.concatenate(blocks))

    cos = scipy.linalg.svdvals(observability(p, 12).conj().T @ observability(q, 12))
    expected = np.sqrt(-2 * np.sum(np.log(cos)))
    assert martin_distance(p, q, horizon=12) == pytest.approx(expected, rel=1e-6)


def test_martin_matrix_matches_pairwise_and_bad_input():
    rng = np.random.default_rng(6)
    ms = [stable_measure(rng, r=r) for r in (3, 2, 3, 4)]
    for horizon in (None, 7):
        batched = martin_distance_matrix(ms, ms, horizon=horizon)
        pair = np.array([[martin_distance(a, b, horizon=horizon) for b in ms] for a in ms])
        np.testing.assert_allclose(batched, pair, atol=1e-6)
    unstable = random_measure(np.random.default_rng(0))
    unstable.mu = unstable.mu * 0 + 1.5
    with pytest.raises(ValueError, match="stable"):
        martin_distance(unstable, ms[0])
    assert np.isfinite(martin_distance(unstable, ms[0], horizon=5))
    with pytest.raises(ValueError, match="horizon"):
        martin_distance(ms[0], ms[1], horizon=0)
    with pytest.raises(ValueError):
        martin_distance(ms[0], stable_measure(rng, dim=4))


def test_ts_parser_basic_motions():
    X, y = load_uea("BasicMotions", "train")
    assert len(X) == 40 and all(s.shape == (100, 6) for s in X)
    assert len(np.unique(y)) == 4


def test_barycenter_special_cases():
    rng = np.random.default_rng(0)
    a = random_measure(rng)
    single = sgot_barycenter([a], n_iter=5)
    np.testing.assert_allclose(np.sort_complex(single.lam), np.sort_complex(a.lam))
    assert sgot_distance(single, a, eta=0.3) == pytest.approx(0.0, abs=1e-6)
    twin = sgot_barycenter([a, a], [0.3, 0.7], n_iter=5)
    assert sgot_distance(twin, a, eta=0.3) == pytest.approx(0.0, abs=1e-6)


def test_classifier_separates_two_oscillators():
    rng = np.random.default_rng(0)
    X, y = [], []
    for label, freq in ((0, 1.0), (1, 2.0)):
        for _ in range(6):
            traj = damped_oscillator(
                [freq],
                [0.1],
                dt=0.1,
                T=60,
                n_traj=1,
                noise=0.01,
                mixing=np.eye(2),
                random_state=int(rng.integers(1e6)),
            )
            X.append(traj[0])
            y.append(label)
    X, y = np.array(X), np.array(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        clf = KoopmanOTClassifier(rank=2, metric="sgot", eta="loo", dt=0.1).fit(X[::2], y[::2])
        assert clf.score(X[1::2], y[1::2]) == 1.0
    with pytest.raises(ValueError):
        KoopmanOTClassifier(metric="nope").fit(X, y)


@pytest.mark.parametrize(
    "name", ["invariance-and-monotonicity", "uea-1nn-classification", "barycenter-interpolation"]
)
def test_claims_smoke(name, tmp_path):
    rec = run_claim("koopman_ot", name, "smoke", out_dir=tmp_path)
    assert rec["verdict"] != "error", rec["traceback"]
    assert rec["metrics"]
    assert rec["figures"]


def test_default_eta_is_symmetric_across_sampling_steps():
    rng = np.random.default_rng(3)
    a = random_measure(rng, dt=0.05)
    b = random_measure(rng, dt=0.2)
    assert sgot_distance(a, b) == pytest.approx(sgot_distance(b, a), rel=1e-12)
    from iclr26.timeseries.koopman_ot import distance_matrix

    d_ab = distance_matrix([a, b], [b, a])
    assert d_ab[0, 0] == pytest.approx(d_ab[1, 1], rel=1e-12)
    assert d_ab[0, 0] == pytest.approx(sgot_distance(a, b), rel=1e-9)


def _systems(n=3, seed=0):
    return [
        damped_oscillator([1.0 + 0.5 * i], [0.1], dt=0.1, T=80, n_traj=4, random_state=seed + i)
        for i in range(n)
    ]


def test_unshared_rbf_feature_maps_are_refused():
    xa, xb, _ = _systems()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = estimate_operator(xa, 0.1, rank=3, kernel="rbf", n_landmarks=20)
        b = estimate_operator(xb, 0.1, rank=3, kernel="rbf", n_landmarks=20)
    for fn in (sgot_distance, got_distance, martin_distance):
        with pytest.raises(ValueError, match="different feature spaces"):
            fn(a, b)
    with pytest.raises(ValueError, match="different feature spaces"):
        sgot_barycenter([a, b])
    # eigenvalues alone do not depend on the feature space
    assert np.isfinite(sot_distance(a, b))
    from iclr26.timeseries.koopman_ot import distance_matrix

    assert distance_matrix([a], [b], metric="sot")[0, 0] == pytest.approx(sot_distance(a, b))
    with pytest.raises(ValueError, match="different feature spaces"):
        distance_matrix([a], [b], metric="sgot")


def test_shared_rbf_feature_map_gives_consistent_symmetric_distances():
    from iclr26.timeseries.koopman_ot import distance_matrix, pairwise_distances

    systems = _systems()
    fmap = FeatureMap("rbf", n_landmarks=20).fit(
        np.concatenate([s.reshape(-1, 2) for s in systems])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ms = [estimate_operator(x, 0.1, rank=3, features=fmap) for x in systems]
        again = [estimate_operator(x, 0.1, rank=3, features=fmap) for x in systems]
    d = pairwise_distances(ms, metric="sgot")
    assert np.allclose(d, d.T) and np.allclose(np.diag(d), 0.0, atol=1e-7)
    for i in range(3):
        for j in range(3):
            assert sgot_distance(ms[i], ms[j]) == pytest.approx(sgot_distance(ms[j], ms[i]))
            # a re-estimate in the same map is the same measure
            assert sgot_distance(ms[i], again[j]) == pytest.approx(d[i, j], abs=1e-7)
    assert np.allclose(distance_matrix(ms, ms), d, atol=1e-6)
    # the triangle inequality holds among measures of one feature space
    assert d[0, 2] <= d[0, 1] + d[1, 2] + 1e-9


def test_barycentre_claim_checks_can_fail():
    from iclr26.timeseries.koopman_ot.claims import _frechet_objective, _relative_deviation

    # a spectrum whose oscillating pair collapsed onto the real axis fails the mode check
    assert _relative_deviation(np.array([-0.3, -0.5]), np.array([[0.3, 2.0]])) == np.inf
    assert _relative_deviation(np.array([-0.3 + 2.2j, -0.3 - 2.2j]), np.array([[0.3, 2.0]])) > 0.05
    # an endpoint is not the midpoint's Frechet mean: its objective is larger
    xa, xb, _ = _systems()
    a, b = estimate_operator(xa, 0.1, rank=2), estimate_operator(xb, 0.1, rank=2)
    mid = sgot_barycenter([a, b], [0.5, 0.5], eta=0.3)
    assert _frechet_objective(mid, (a, b), 0.5, 0.3) < _frechet_objective(a, (a, b), 0.5, 0.3)
