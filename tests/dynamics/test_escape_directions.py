import math

import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.dynamics.escape_directions import (
    BiasFreeReLUMLP,
    balance,
    circle_counterexample,
    escape_speed,
    find_escape_direction,
    layer_rank_profile,
    local_loss,
    mse_gradient_at_zero,
    small_init_gd,
)

SLUG = "escape_directions"


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _net(widths, seed=0, activation="relu"):
    torch.manual_seed(seed)
    model = BiasFreeReLUMLP(widths, activation=activation, dtype=torch.float64)
    for W in model.weights:
        torch.nn.init.normal_(W)
    return model


def _data(n=20, d_in=5, d_out=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, d_in, generator=g, dtype=torch.float64),
        torch.randn(n, d_out, generator=g, dtype=torch.float64),
    )


@pytest.mark.parametrize("widths", [[5, 4, 3], [5, 6, 6, 3], [5, 4, 4, 4, 3]])
def test_homogeneity_and_scale_free_speed(widths):
    X, G = _data()
    model = _net(widths)
    L = model.depth
    with torch.no_grad():
        l0, s0 = float(local_loss(model, X, G)), float(escape_speed(model, X, G))
    lam = 1.7
    with torch.no_grad():
        for W in model.weights:
            W.mul_(lam)
    assert float(local_loss(model, X, G)) == pytest.approx(lam**L * l0, rel=1e-10)
    assert float(escape_speed(model, X, G)) == pytest.approx(s0, rel=1e-10)


def test_euler_identity():
    X, G = _data()
    model = _net([5, 6, 6, 3], seed=1)
    l0 = local_loss(model, X, G)
    grads = torch.autograd.grad(l0, model.weights)
    inner = sum((W * g).sum() for W, g in zip(model.weights, grads))
    assert float(inner) == pytest.approx(model.depth * float(l0), rel=1e-10)


def test_linear_depth_two_speed_is_top_singular_value():
    X, G = _data(n=30, d_in=4, d_out=3, seed=2)
    res = find_escape_direction(
        [4, 5, 3], X, G, restarts=2, steps=300, lr=0.05, activation="linear", seed=0
    )
    top = float(torch.linalg.svdvals(G.T @ X)[0])
    assert res.speed == pytest.approx(top, rel=1e-3)
    norms = [float(W.norm()) for W in res.model.weights]
    assert norms == pytest.approx([1.0, 1.0], rel=1e-9)  # balanced, ||theta||^2 = L


def test_rank_one_parametrisation_gives_rank_one_weights():
    X, G = circle_counterexample()
    res = find_escape_direction([2, 4, 4, 1], X, G, restarts=2, steps=50, rank_one=True)
    prof = layer_rank_profile(res.model)
    assert np.all(prof["weight_tail"] < 1e-20)


def test_rank_profile_of_hand_built_rank_one_network():
    g = torch.Generator().manual_seed(0)
    model = BiasFreeReLUMLP([4, 5, 5, 2], dtype=torch.float64)
    with torch.no_grad():
        for W in model.weights:
            a = torch.rand(W.shape[0], generator=g, dtype=torch.float64)
            b = torch.rand(W.shape[1], generator=g, dtype=torch.float64)
            W.copy_(torch.outer(a, b))
    X = torch.rand(10, 4, generator=g, dtype=torch.float64)
    prof = layer_rank_profile(model, X)
    assert np.all(prof["weight_tail"] < 1e-20)
    assert np.all(prof["activation_tail"][:-1] < 1e-20)
    assert np.allclose(prof["linearity_gap"][:-1], 0.0)  # nonnegative weights and inputs


def test_rebalancing_keeps_local_loss_and_balance_never_lowers_speed():
    X, G = _data()
    model = _net([5, 4, 3], seed=3)
    l0, s0 = float(local_loss(model, X, G)), float(escape_speed(model, X, G))
    with torch.no_grad():
        model.weights[0].mul_(3.0)
        model.weights[1].div_(3.0)
    assert float(local_loss(model, X, G)) == pytest.approx(l0, rel=1e-10)
    assert float(escape_speed(model, X, G)) < s0
    balanced = BiasFreeReLUMLP.from_weights(balance([W.detach() for W in model.weights]))
    assert float(escape_speed(balanced, X, G)) >= s0 - 1e-12


def test_circle_gradient_alternates_and_sums_to_zero():
    X, G = circle_counterexample(8)
    assert G[:, 0].tolist() == [1.0, -1.0] * 4
    assert float(G.sum()) == 0.0
    assert torch.allclose(X.norm(dim=1), torch.ones(8, dtype=torch.float64))


def test_mse_gradient():
    Y = torch.ones(4, 2)
    assert torch.allclose(mse_gradient_at_zero(Y), -Y / 4)


def test_small_init_gd_snapshots_and_determinism():
    X, _ = _data(n=40, d_in=5, d_out=2, seed=4)
    Y = torch.sign(X[:, :2])
    a = small_init_gd([5, 8, 8, 2], X, Y, steps=300, snapshot_at=(0.98, 0.9), seed=1)
    b = small_init_gd([5, 8, 8, 2], X, Y, steps=300, snapshot_at=(0.98, 0.9), seed=1)
    assert a.losses == b.losses
    assert a.losses[-1] < a.losses[0]
    assert 0.98 in a.snapshots
    snap = a.snapshots[0.98]
    assert snap["loss"] < 0.98 * a.losses[0]
    assert len(snap["profile"]["sv_ratio"]) == 3


def test_bad_input():
    with pytest.raises(ValueError):
        BiasFreeReLUMLP([3, 2])  # depth 1
    with pytest.raises(ValueError):
        BiasFreeReLUMLP([3, 4, 2], activation="tanh")
    X, G = _data()
    with pytest.raises(ValueError):
        find_escape_direction([5, 4, 3], X[:5], G, restarts=1, steps=1)
    with pytest.raises(ValueError):
        find_escape_direction([6, 4, 3], X, G, restarts=1, steps=1)
    with pytest.raises(ValueError):
        find_escape_direction([5, 4, 3], X, G, restarts=0, steps=1)
    with pytest.raises(ValueError):
        circle_counterexample(7)
    biased = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    with pytest.raises(ValueError):
        layer_rank_profile(biased)


def test_speed_of_rank_one_circle_value():
    X, G = circle_counterexample()
    res = find_escape_direction([2, 4, 4, 1], X, G, restarts=3, steps=300, rank_one=True)
    assert res.speed == pytest.approx(math.sqrt(2) - 1, abs=5e-3)


@pytest.mark.parametrize(
    "name",
    [
        "circle-counterexample",
        "rank-one-deep-layers",
        "small-init-low-rank",
        "depth-strengthens-bias",
        "speed-vs-depth",
    ],
)
def test_claims_smoke(name, tmp_path):
    record = run_claim(SLUG, name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"]


def test_lift_inserts_a_nonnegative_rank_one_layer_that_relu_passes_unchanged():
    from iclr26.dynamics.escape_directions.claims import _lift

    gen = torch.Generator().manual_seed(0)
    X = torch.randn(30, 4, generator=gen, dtype=torch.float64)
    weights = [
        torch.randn(o, i, generator=gen, dtype=torch.float64) for o, i in ((5, 4), (5, 5), (2, 5))
    ]
    lifted = _lift(weights, X)
    assert len(lifted) == len(weights) + 1
    P = lifted[-2]
    assert torch.all(P >= 0) and torch.linalg.matrix_rank(P) == 1
    h = torch.relu(torch.relu(X @ weights[0].T) @ weights[1].T)
    expected = (h @ P.T) @ weights[-1].T  # no ReLU needed: P h >= 0
    got = BiasFreeReLUMLP.from_weights(lifted)(X)
    torch.testing.assert_close(got, expected)
