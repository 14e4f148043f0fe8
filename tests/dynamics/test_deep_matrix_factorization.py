import numpy as np
import pytest
import torch
from sklearn.base import clone

from iclr26.claims import run_claim
from iclr26.dynamics.deep_matrix_factorization import (
    DeepMatrixFactorization,
    coupling_index,
    effective_rank,
    factor_shapes,
    gradient_descent,
    initialize,
    loss_and_gradients,
    plasticity_experiment,
    product,
    singular_value_ratio,
)

SLUG = "deep_matrix_factorization"


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_gradient_matches_autograd(depth):
    rng = np.random.default_rng(depth)
    n, m, h = 4, 5, 6
    factors = initialize(factor_shapes(n, m, depth, h), "gaussian", 0.5, rng)
    M = rng.standard_normal((n, m))
    mask = rng.random((n, m)) < 0.5
    loss, grads, _ = loss_and_gradients(factors, M, mask)
    ts = [torch.tensor(F, requires_grad=True) for F in factors]
    W = ts[0]
    for F in ts[1:]:
        W = F @ W
    ref = 0.5 * (((W - torch.tensor(M)) * torch.tensor(mask)) ** 2).sum()
    ref.backward()
    assert float(loss) == pytest.approx(float(ref), rel=1e-12)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_diagonal_init_and_mask_stay_diagonal():
    n = 5
    M = np.diag(np.linspace(0.5, 1.5, n))
    mask = np.eye(n, dtype=bool)
    factors = initialize(factor_shapes(n, n, 3, n), "diagonal", 0.1, np.random.default_rng(0))
    out = gradient_descent([F[None] for F in factors], M, mask, max_steps=100, adaptive=False)
    off = ~np.eye(n, dtype=bool)
    assert all(np.all(F[0][off] == 0.0) for F in out["factors"])


def test_coupling_index_depth_two_zero_depth_three_positive():
    n = 5
    mask = np.eye(n, dtype=bool)
    rng = np.random.default_rng(1)
    f2 = initialize(factor_shapes(n, n, 2, n), "gaussian", 1.0, rng)
    f3 = initialize(factor_shapes(n, n, 3, n), "gaussian", 1.0, rng)
    assert coupling_index(f2, mask) == 0.0
    assert coupling_index(f3, mask) > 1e-3
    block = np.zeros((6, 6), dtype=bool)
    block[:3, :3] = block[3:, 3:] = True
    fb = initialize(factor_shapes(6, 6, 2, 6), "gaussian", 1.0, rng)
    assert coupling_index(fb, block, between_blocks=True) == 0.0
    assert coupling_index(fb, block, between_blocks=False) > 0.0  # inside blocks entries interact
    fb3 = initialize(factor_shapes(6, 6, 3, 6), "gaussian", 1.0, rng)
    assert coupling_index(fb3, block, between_blocks=True) > 1e-3


@pytest.mark.parametrize("seed", range(5))
def test_coupling_index_identities_hold_for_every_init(seed):
    """What the former coupling-index claim checked: identities of the index's own formula
    (depth 2 is decoupled at every init, a diagonal init at every depth)."""
    n, mask = 6, np.eye(6, dtype=bool)
    rng = np.random.default_rng(seed)
    for init in ("gaussian", "balanced", "identity", "diagonal"):
        f2 = initialize(factor_shapes(n, n, 2, n), init, 1.0, rng)
        assert coupling_index(f2, mask) < 1e-12
    for depth in (3, 4):
        assert (
            coupling_index(initialize(factor_shapes(n, n, depth, n), "diagonal", 1.0, rng), mask)
            < 1e-12
        )
        assert (
            coupling_index(initialize(factor_shapes(n, n, depth, n), "gaussian", 1.0, rng), mask)
            > 1e-3
        )


def test_depth_two_not_rank_one_depth_three_rank_one_on_2x2():
    m = np.array([1.0, 0.7])
    M, mask = np.diag(m), np.eye(2, dtype=bool)
    est2 = DeepMatrixFactorization(depth=2, init_scale=0.01, random_state=0).fit(M, mask)
    est3 = DeepMatrixFactorization(depth=3, init_scale=0.01, random_state=3).fit(M, mask)
    for est in (est2, est3):
        assert est.converged_
        np.testing.assert_allclose(np.diag(est.completed_), m, atol=1e-4)
    W2, W3 = est2.completed_, est3.completed_
    assert abs(W2[0, 1] * W2[1, 0] - m[0] * m[1]) > 0.1
    assert abs(W3[0, 1] * W3[1, 0] - m[0] * m[1]) < 1e-4


def test_ode_solver_agrees_with_small_step_gd():
    M, mask = np.diag([1.0, 0.6, 0.8]), np.eye(3, dtype=bool)
    gd = DeepMatrixFactorization(depth=3, init_scale=0.1, lr=0.02, random_state=0).fit(M, mask)
    ode = DeepMatrixFactorization(depth=3, init_scale=0.1, solver="ode", random_state=0)
    ode.fit(M, mask)
    np.testing.assert_allclose(gd.completed_, ode.completed_, atol=2e-3)


def test_fit_deterministic_and_sklearn_api():
    M, mask = np.diag([1.0, 0.5, 0.8]), np.eye(3, dtype=bool)
    est = DeepMatrixFactorization(depth=3, random_state=0, max_steps=2000)
    a = est.fit(M, mask).predict()
    b = clone(est).fit(M, mask).predict()
    np.testing.assert_array_equal(a, b)
    assert est.get_params()["depth"] == 3
    assert est.score(M, np.eye(3, dtype=bool)) <= 0.0
    assert est.history_ and len(est.history_[0][2]) == 3


def test_metrics():
    assert singular_value_ratio(np.diag([2.0, 1.0])) == pytest.approx(0.5)
    assert effective_rank(np.eye(4)) == pytest.approx(4.0)
    assert effective_rank(np.outer([1.0, 2.0], [3.0, 1.0])) == pytest.approx(1.0)


def test_bad_input():
    M = np.eye(3)
    with pytest.raises(ValueError, match="no observed entries"):
        DeepMatrixFactorization().fit(M, np.zeros((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="depth"):
        DeepMatrixFactorization(depth=1).fit(M, np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        DeepMatrixFactorization().fit(M, np.eye(2, dtype=bool))
    with pytest.raises(ValueError):
        DeepMatrixFactorization(init="nope").fit(M, np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="no observed entries"):
        coupling_index([np.eye(3), np.eye(3)], np.zeros((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="contain"):
        plasticity_experiment(2, M, np.ones((3, 3), bool), np.eye(3, dtype=bool))


def test_divergent_step_size_is_detected_not_nan():
    M, mask = np.diag([1.0, 0.8, 0.6]), np.eye(3, dtype=bool)
    factors = initialize(factor_shapes(3, 3, 3, 3), "gaussian", 0.5, np.random.default_rng(0))
    batch = [np.stack([F, F]) for F in factors]
    with pytest.warns(RuntimeWarning, match="lr=50"):
        out = gradient_descent(batch, M, mask, lr=50.0, max_steps=2000, adaptive=False)
    assert out["diverged"].all() and not out["converged"].any()
    assert (out["diverged_at"] > 0).all()
    assert all(np.isfinite(F).all() for F in out["factors"])
    assert np.isfinite(out["loss"]).all()
    with pytest.raises(ValueError, match="lr"):
        DeepMatrixFactorization(depth=3, init_scale=0.5, lr=50.0, max_steps=2000).fit(M, mask)
    with pytest.raises(ValueError, match="lr"):
        plasticity_experiment(2, M, mask, mask | np.eye(3, k=1, dtype=bool), lr=50.0)
    # a stable step size is not flagged
    ok = gradient_descent(batch, M, mask, lr=0.1, max_steps=200, adaptive=False)
    assert not ok["diverged"].any()


def test_plasticity_shapes():
    n = 4
    M = np.outer(np.linspace(0.5, 1.5, n), np.linspace(1.0, 0.6, n))
    m1 = np.eye(n, dtype=bool)
    m2 = m1.copy()
    m2[0, 1:] = True
    out = plasticity_experiment(2, M, m1, m2, seeds=[0, 1], max_steps=3000)
    assert set(out) == {"phase1", "pretrained", "scratch"}
    assert out["pretrained"]["test_error"].shape == (2,)
    assert product([np.eye(2)] * 3).shape == (2, 2)


@pytest.mark.parametrize(
    "name", ["depth-rank-one", "diagonal-init-decouples", "coupling-index", "loss-of-plasticity"]
)
def test_claims_smoke(name, tmp_path):
    record = run_claim(SLUG, name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"]
