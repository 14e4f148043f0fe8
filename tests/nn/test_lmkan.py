import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.nn.lmkan import (
    LMKANMLP,
    LMKAN2d,
    LMKANConv2d,
    LMKANRegressor,
    displaced_methane,
    hessian_schedule,
    laplace_cdf,
    random_teacher,
    sigma_grid,
    train_regressor,
)
from iclr26.nn.lmkan.claims import flops_to_reach


def _set_table(layer, fn):
    t = layer.knots.double()
    values = fn(t[:, None], t[None, :])
    with torch.no_grad():
        layer.table.copy_(values[None, :, :, None].expand_as(layer.table))


def test_sigma_grid():
    for grid in (4, 8, 26):
        t = sigma_grid(grid, torch.float64)
        assert t.numel() == grid + 1 and (t[1:] > t[:-1]).all()
        inner = laplace_cdf(t[1:-1])
        assert torch.allclose(inner, torch.arange(1, grid, dtype=torch.float64) / grid)
        assert torch.isclose(t[1] - t[0], t[2] - t[1]) and torch.isclose(
            t[-1] - t[-2], t[-2] - t[-3]
        )
    with pytest.raises(ValueError):
        sigma_grid(2)


def test_partition_of_unity_and_clamp():
    layer = LMKAN2d(6, 3, 8).double()
    with torch.no_grad():
        layer.table.fill_(1.0)
    x = torch.randn(20, 6, dtype=torch.float64) * 3
    assert torch.allclose(layer(x), torch.full((20, 3), 3.0, dtype=torch.float64))
    # Outside the grid "clamp" is constant: far inputs give the outer-knot value.
    _set_table(layer, lambda a, b: a + 0 * b)
    far = torch.full((1, 6), 50.0, dtype=torch.float64)
    assert torch.allclose(
        layer(far), torch.full((1, 3), 3 * layer.knots[-1].item(), dtype=torch.float64)
    )


def test_bilinear_exactness():
    layer = LMKAN2d(4, 2, 8).double()
    x = torch.rand(50, 4, dtype=torch.float64) * 2 - 1
    _set_table(layer, lambda a, b: a * b)
    assert torch.allclose(layer(x)[:, 0], x[:, 0] * x[:, 1] + x[:, 2] * x[:, 3], atol=1e-12)
    _set_table(layer, lambda a, b: 2 * a - 0.5 * b)
    want = 2 * (x[:, 0] + x[:, 2]) - 0.5 * (x[:, 1] + x[:, 3])
    assert torch.allclose(layer(x)[:, 1], want, atol=1e-12)


def test_lookup_equals_dense_values_and_gradients():
    torch.manual_seed(0)
    lookup = LMKAN2d(5, 6, 6, extrapolate="linear").double()  # odd size: zero-padded
    dense = LMKAN2d(5, 6, 6, extrapolate="linear", backend="dense").double()
    dense.load_state_dict(lookup.state_dict())
    x = torch.randn(9, 5, dtype=torch.float64, requires_grad=True)
    assert torch.allclose(lookup(x), dense(x), atol=1e-13)
    g1 = torch.autograd.grad(lookup(x).pow(2).sum(), [x, lookup.table])
    g2 = torch.autograd.grad(dense(x).pow(2).sum(), [x, dense.table])
    for a, b in zip(g1, g2):
        assert torch.allclose(a, b, atol=1e-12)
    small = LMKAN2d(4, 6, 5).double()
    assert torch.autograd.gradcheck(
        small, (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),)
    )


def test_counts_and_flops():
    layer = LMKAN2d(64, 32, 8)
    assert layer.table.numel() == 9 * 9 * 32 * 32
    linear_flops = 2 * 64 * 32
    assert layer.flops() - 2 * linear_flops == 10 * 32


def test_hessian_penalty():
    layer = LMKAN2d(6, 4, 8).double()
    _set_table(layer, lambda a, b: 3 * a - b + 1)
    assert layer.hessian_penalty().item() == pytest.approx(0.0, abs=1e-18)
    _set_table(layer, lambda a, b: a * b)
    assert layer.hessian_penalty().item() == pytest.approx(2 * 4 * 3)


def test_schedule():
    assert hessian_schedule(0, 100) == 1.0
    assert hessian_schedule(6, 100) == pytest.approx(0.1)
    assert hessian_schedule(50, 100) == 0.0


def test_bad_input():
    layer = LMKAN2d(4, 2)
    with pytest.raises(ValueError):
        layer(torch.randn(3, 5))
    with pytest.raises(TypeError):
        layer(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(ValueError):
        LMKAN2d(4, 2, extrapolate="wrap")
    with pytest.raises(ValueError):
        LMKAN2d(4, 2, backend="cuda")


def test_conv_and_mlp_shapes():
    conv = LMKANConv2d(3, 5, 3, padding=1, num_grids=4)
    assert conv(torch.randn(2, 3, 6, 6)).shape == (2, 5, 6, 6)
    net = LMKANMLP(7, 8, 2, depth=2)
    assert net(torch.randn(10, 7)).shape == (10, 2) and net.hessian_penalty().item() >= 0


def test_tiny_fit_single_layer():
    # One 2-D table represents sin(x1) cos(x2) up to bilinear interpolation error.
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(2000, 2)).astype(np.float32))
    y = (torch.sin(x[:, 0]) * torch.cos(x[:, 1])).unsqueeze(1)
    torch.manual_seed(0)
    layer = LMKAN2d(2, 1, 10)
    train_regressor(layer, x[:1500], y[:1500], epochs=40, lr=0.05, lam0=0.0)
    with torch.no_grad():
        assert float(((layer(x[1500:]) - y[1500:]) ** 2).mean()) < 0.01


def test_regressor_api():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3)).astype(np.float32)
    y = x[:, 0] * x[:, 1] + x[:, 2]
    reg = LMKANRegressor(hidden=4, depth=1, epochs=2).fit(x, y)
    assert reg.predict(x).shape == (300,) and np.isfinite(reg.score(x, y))
    assert reg.get_params()["hidden"] == 4
    with pytest.raises(ValueError):
        reg.predict(x[:, :1])
    with pytest.raises(ValueError):
        LMKANRegressor().fit(x, y[:10])


def test_data_and_front_interpolation():
    x, y = random_teacher(100, seed=1)
    assert x.shape == (100, 32) and abs(y.mean()) < 0.5
    x, y = displaced_methane(500)
    assert x.shape == (500, 15) and np.isfinite(y).all()
    front = [(10.0, 1.0), (100.0, 0.1), (1000.0, 0.2)]
    assert flops_to_reach(front, 0.1) == pytest.approx(100.0)
    assert flops_to_reach(front, np.sqrt(0.1)) == pytest.approx(np.sqrt(1000.0))
    assert flops_to_reach(front, 0.01) is None


@pytest.mark.parametrize(
    "name",
    [
        "flops-at-matched-accuracy",
        "cpu-throughput-at-matched-accuracy",
        "lookup-cost-independent-of-grid",
    ],
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("lmkan", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
