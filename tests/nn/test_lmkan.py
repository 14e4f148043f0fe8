import pickle

import numpy as np
import pytest
import torch
from torch.func import functional_call
from torch.utils.flop_counter import FlopCounterMode

from iclr26.claims import run_claim
from iclr26.nn.lmkan import (
    LMKANCNN,
    LMKANMLP,
    LMKAN2d,
    LMKANConv2d,
    LMKANRegressor,
    digits_images,
    displaced_methane,
    hessian_schedule,
    laplace_cdf,
    load_cifar10,
    random_teacher,
    sigma_grid,
    train_classifier,
    train_regressor,
)
from iclr26.nn.lmkan import layer as layer_module
from iclr26.nn.lmkan.baselines import PlainCNN
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
    layer = LMKAN2d(6, 3, 8, extrapolate="clamp").double()
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
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 4\), got \(3, 5\)"):
        layer(torch.randn(3, 5))
    with pytest.raises(ValueError, match="x must have 2 dimension"):
        layer(torch.randn(4))
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 7\)"):
        LMKANMLP(7, 4, 1)(torch.randn(3, 6))
    with pytest.raises(TypeError, match="x must be a floating"):
        layer(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="x is empty"):
        layer(torch.randn(0, 4))
    with pytest.raises(ValueError, match="x contains NaN"):
        layer(torch.tensor([[float("nan"), 0.0, 1.0, 2.0]]))
    with pytest.raises(ValueError, match="extrapolate"):
        LMKAN2d(4, 2, extrapolate="wrap")
    with pytest.raises(ValueError, match="backend"):
        LMKAN2d(4, 2, backend="cuda")
    with pytest.raises(ValueError, match="num_grids"):
        LMKAN2d(4, 2, num_grids=2)
    with pytest.raises(ValueError, match="init_scale"):
        LMKAN2d(4, 2, init_scale=float("nan"))
    with pytest.raises(ValueError, match="x has a batch of 1"):
        LMKANMLP(4, 4, 1).train()(torch.randn(1, 4))
    assert LMKANMLP(4, 4, 1).eval()(torch.randn(1, 4)).shape == (1, 1)


def test_outside_the_grid():
    # "linear" extends the outer cells linearly: an affine table stays exact far outside the
    # grid; "clamp" evaluates at the clamped coordinate (constant beyond the outer knots).
    x = torch.tensor([[-40.0, 3.0, 25.0, -0.3], [0.2, -7.0, 1e6, -1e6]], dtype=torch.float64)
    t0, t_last = sigma_grid(8, torch.float64)[[0, -1]]
    for mode in ("linear", "clamp"):
        layer = LMKAN2d(4, 1, 8, extrapolate=mode).double()
        _set_table(layer, lambda a, b: 2 * a - 0.5 * b + 1)
        z = x if mode == "linear" else x.clamp(t0, t_last)
        want = 2 * (z[:, 0] + z[:, 2]) - 0.5 * (z[:, 1] + z[:, 3]) + 2
        assert torch.allclose(layer(x)[:, 0], want, rtol=1e-9, atol=1e-6)
    # The default clamps (constant continuation); "linear" is the official kernel's behaviour.
    assert LMKAN2d(4, 1).extrapolate == "clamp"
    # Non-finite inputs are refused at the boundary, never looked up.
    layer = LMKAN2d(4, 2, 8)
    with pytest.raises(ValueError, match="x contains NaN"):
        layer(torch.tensor([[float("nan"), 0.0, 1.0, 1.0]]))
    with pytest.raises(ValueError, match="x contains infinity"):
        layer(torch.tensor([[0.1, 0.0, float("inf"), -float("inf")]]))


def test_conv_and_mlp_shapes():
    conv = LMKANConv2d(3, 5, 3, padding=1, num_grids=4)
    assert conv(torch.randn(2, 3, 6, 6)).shape == (2, 5, 6, 6)
    assert LMKANConv2d(3, 5, 3, stride=2)(torch.randn(2, 3, 7, 6)).shape == (2, 5, 3, 2)
    net = LMKANMLP(7, 8, 2, depth=2)
    assert net(torch.randn(10, 7)).shape == (10, 2) and net.hessian_penalty().item() >= 0


def _reference_conv(conv, x):
    """Slow evaluation of an lmKAN convolution straight from its tables: explicit loops over
    images, output positions, outputs and input pairs; the cell is found by a sorted search."""
    t = conv.lmkan.knots.double().numpy()
    grids = len(t) - 1
    table = conv.lmkan.table.detach().double().numpy()
    k, s, p = conv.kernel_size, conv.stride, conv.padding
    xp = np.pad(x.detach().numpy(), ((0, 0), (0, 0), (p, p), (p, p)))
    batch, _, height, width = x.shape
    out_h, out_w = (height + 2 * p - k) // s + 1, (width + 2 * p - k) // s + 1
    out = np.zeros((batch, conv.out_channels, out_h, out_w))

    def cell(v):  # constant beyond the outer knots (the default "clamp" extrapolation)
        i = min(max(int(np.searchsorted(t, v, side="right")) - 1, 0), grids - 1)
        return i, min(max((v - t[i]) / (t[i + 1] - t[i]), 0.0), 1.0)

    for b in range(batch):
        for oy in range(out_h):
            for ox in range(out_w):
                patch = xp[b, :, oy * s : oy * s + k, ox * s : ox * s + k].reshape(-1)
                if patch.size % 2:
                    patch = np.append(patch, 0.0)
                for q in range(conv.out_channels):
                    total = 0.0
                    for pair in range(patch.size // 2):
                        (i, u), (j, w) = cell(patch[2 * pair]), cell(patch[2 * pair + 1])
                        f = table[pair, :, :, q]
                        total += (1 - u) * (1 - w) * f[i, j] + (1 - u) * w * f[i, j + 1]
                        total += u * (1 - w) * f[i + 1, j] + u * w * f[i + 1, j + 1]
                    out[b, q, oy, ox] = total
    return torch.from_numpy(out)


@pytest.mark.parametrize("channels, stride, padding", [(1, 1, 1), (2, 2, 0), (3, 2, 1)])
def test_conv_equals_slow_reference(channels, stride, padding):
    torch.manual_seed(channels)
    conv = LMKANConv2d(channels, 3, 3, stride, padding, num_grids=6, init_scale=3.0).double()
    x = torch.randn(2, channels, 5, 6, dtype=torch.float64) * 1.5  # some beyond the grid
    assert torch.allclose(conv(x), _reference_conv(conv, x), atol=1e-12)


def test_conv_is_one_lookup(monkeypatch):
    calls = []
    original = layer_module.F.embedding_bag

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return original(*args, **kwargs)

    monkeypatch.setattr(layer_module.F, "embedding_bag", counting)
    conv = LMKANConv2d(2, 4, 3, padding=1, num_grids=10)
    conv(torch.randn(3, 2, 5, 5))
    # One gather for all 3 * 25 patches, 4 corner rows per pair of the 18-entry patch.
    assert calls == [torch.Size([75, 4 * 9])]


def test_conv_gradients():
    torch.manual_seed(0)
    conv = LMKANConv2d(1, 2, 3, stride=2, padding=1, num_grids=4, init_scale=2.0).double()
    x = torch.randn(2, 1, 4, 4, dtype=torch.float64, requires_grad=True) * 0.8
    table = conv.lmkan.table.detach().clone().requires_grad_(True)

    def run(inputs, tab):
        return functional_call(conv, {"lmkan.table": tab}, (inputs,))

    assert torch.autograd.gradcheck(run, (x.detach().requires_grad_(True), table))
    # The lookup's gradients equal those of the dense basis evaluation of the same tables.
    dense = LMKANConv2d(1, 2, 3, 2, 1, num_grids=4, backend="dense").double()
    dense.load_state_dict(conv.state_dict())
    xs = x.detach().requires_grad_(True)
    g1 = torch.autograd.grad(conv(xs).sin().sum(), [xs, conv.lmkan.table])
    g2 = torch.autograd.grad(dense(xs).sin().sum(), [xs, dense.lmkan.table])
    for a, b in zip(g1, g2):
        assert torch.allclose(a, b, atol=1e-12)


def test_conv_flops_and_cnn():
    conv = LMKANConv2d(4, 6, 3, stride=2, padding=1)
    positions = 4 * 4  # 8x8 input, stride 2
    linear = 2 * (4 * 9) * 6  # a same-shape nn.Conv2d per position (no bias)
    assert conv.flops(8, 8) == positions * (2 * linear + 10 * 18)
    net = LMKANCNN(1, 8, 10, widths=(4, 4), strides=(1, 2), num_grids=8)
    assert net(torch.randn(5, 1, 8, 8)).shape == (5, 10)
    lookups = net.features[1].flops(8, 8) + net.features[3].flops(8, 8) + net.head[1].flops()
    batchnorms = 1 * 64 + 4 * 64 + 4 * 16
    assert net.flops() == lookups + batchnorms
    assert net.hessian_penalty().item() >= 0 and len(net.lmkan_modules()) == 3
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 1, 8, 8\)"):
        net(torch.randn(5, 1, 7, 7))


def test_plain_cnn_flops_match_torch_counter():
    # torch's counter sees the convolutions and the head's matmul (2 FLOPs per multiply-add);
    # our count adds 1 per element for every BatchNorm and ReLU and the head's bias.
    net = PlainCNN(3, 8, 10, widths=(4, 6), strides=(1, 2)).eval()
    with FlopCounterMode(display=False) as counter:
        net(torch.randn(1, 3, 8, 8))
    extra = 2 * (4 * 64 + 6 * 16) + 10
    assert net.flops() == counter.get_total_flops() + extra


def test_conv_bad_input():
    conv = LMKANConv2d(3, 4, 3)
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 3, \*, \*\)"):
        conv(torch.randn(2, 2, 6, 6))
    with pytest.raises(ValueError, match="smaller than"):
        conv(torch.randn(2, 3, 2, 6))
    for bad in ({"kernel_size": 0}, {"stride": 0}, {"padding": -1}, {"kernel_size": 2.5}):
        name = next(iter(bad))
        with pytest.raises((ValueError, TypeError), match=name):
            LMKANConv2d(**({"in_channels": 3, "out_channels": 4, "kernel_size": 3} | bad))


def test_train_classifier_and_images():
    x, y = digits_images()
    assert x.shape == (1797, 1, 8, 8) and x.max() <= 1.0 and set(np.unique(y)) == set(range(10))
    xt, yt = torch.from_numpy(x[:200]), torch.from_numpy(y[:200])
    net = LMKANCNN(1, 8, 10, widths=(2, 2), strides=(1, 2), num_grids=4)
    before = torch.nn.functional.cross_entropy(net(xt), yt).item()
    train_classifier(net, xt, yt, epochs=3, batch_size=32, lr=1e-2)
    net.train()  # batch statistics on both sides: 3 epochs do not settle the running ones
    with torch.no_grad():
        assert torch.nn.functional.cross_entropy(net(xt), yt).item() < before
    with pytest.raises(ValueError):
        train_classifier(net, xt, yt[:10], epochs=1)


def test_load_cifar10(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    names = [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]
    for name in names:
        batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [1, 2, 3, 4]}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    monkeypatch.setenv("ICLR26_CIFAR10", str(tmp_path))
    x_tr, y_tr, x_te, y_te = load_cifar10()
    assert x_tr.shape == (20, 3, 32, 32) and x_te.shape == (4, 3, 32, 32)
    assert y_tr.dtype == np.int64 and list(y_te) == [1, 2, 3, 4] and x_tr.dtype == np.float32
    raw = pickle.loads((tmp_path / "test_batch").read_bytes())[b"data"][0, 0]
    assert x_te[0, 0, 0, 0] == pytest.approx((raw / 255 - 0.4914) / 0.2470, rel=1e-5)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        load_cifar10()


def test_cnn_claim_skips_without_cifar(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLR26_CIFAR10", raising=False)
    record = run_claim("lmkan", "cnn-flops-at-matched-accuracy", "full", out_dir=tmp_path)
    assert record["verdict"] == "skipped" and "CIFAR-10" in record["reason"]


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
    with pytest.raises(ValueError, match="X has 1 features, but LMKANRegressor is expecting 3"):
        reg.predict(x[:, :1])
    with pytest.raises(ValueError, match="same length"):
        LMKANRegressor().fit(x, y[:10])
    with pytest.raises(ValueError, match="hidden"):
        LMKANRegressor(hidden=0).fit(x, y)
    with pytest.raises(ValueError, match="lr"):
        LMKANRegressor(lr=float("nan")).fit(x, y)


def test_regressor_is_a_scikit_learn_estimator():
    from sklearn.base import clone, is_regressor
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 4))
    y = x[:, 0] - 0.5 * x[:, 1] * x[:, 2]
    reg = LMKANRegressor(hidden=4, depth=1, epochs=3, batch_size=32)
    twin = clone(reg)
    assert twin.get_params() == reg.get_params() and is_regressor(twin)
    scores = cross_val_score(reg, x, y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    # Same random_state, same data: the same predictions.
    a = clone(reg).fit(x, y).predict(x[:5])
    b = clone(reg).fit(x, y).predict(x[:5])
    assert np.array_equal(a, b)


def test_regressor_passes_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(LMKANRegressor(hidden=4, depth=1, epochs=2), on_fail=None)
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert not failed, failed


def test_sweep_stopping_rule():
    from iclr26.nn.lmkan.claims import sweep_stop

    assert sweep_stop([0.3, 0.2], 0.25) == "target reached"
    assert sweep_stop([0.3, 0.2, 0.15], 0.1) is None  # still improving
    assert sweep_stop([0.3, 0.299, 0.298], 0.1) == "flattened"  # two widths < 2 % better
    assert sweep_stop([0.3, 0.35, 0.31], 0.1) == "flattened"  # worse counts as flat
    assert sweep_stop([0.3, 0.299, 0.2], 0.1) is None  # a real improvement resets it


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
        "cnn-flops-at-matched-accuracy",
    ],
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("lmkan", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]


def test_matched_accuracy_from_lmkans_side_picks_cheapest_accurate_baseline():
    from iclr26.nn.lmkan.claims import _at_lmkan_best

    rows = [
        {"family": "lmkan", "width": 4, "flops": 100, "mse": 0.30},
        {"family": "lmkan", "width": 8, "flops": 200, "mse": 0.20},
        {"family": "mlp", "width": 16, "flops": 150, "mse": 0.25},
        {"family": "mlp", "width": 32, "flops": 500, "mse": 0.19},
        {"family": "mlp", "width": 64, "flops": 900, "mse": 0.10},
    ]
    out = _at_lmkan_best(rows, "mse")
    assert out["lmkan"]["width"] == 8 and out["mlp"]["width"] == 32
    assert out["flops_ratio_mlp_over_lmkan"] == pytest.approx(2.5)
    assert _at_lmkan_best(rows[:3], "mse") is None
    cnn = [dict(r, family="cnn") if r["family"] == "mlp" else r for r in rows]
    assert _at_lmkan_best(cnn, "mse", baseline="cnn")["flops_ratio_cnn_over_lmkan"] == 2.5
