import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.nn.ilnn import (
    GyroBN,
    GyroLBN,
    ILNNSeqCNN,
    LorentzBN,
    LorentzConv1d,
    LorentzConv2d,
    LorentzDropout,
    LorentzFC,
    LorentzReLU,
    lorentz_concat,
    ops,
    phylo_dna,
    signed_distance,
)


def _points(shape, n, c=1.0, dtype=torch.float64, seed=0, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    return ops.expmap0(torch.randn(*shape, n, generator=g, dtype=dtype) * spread, c)


def _assert_on(y, c, dtype):
    tol = 1e-5 if dtype == torch.float64 else 1e-3
    rel = ops.constraint_error(y, c) / (1.0 / c**2 + y[..., 0] ** 2)
    assert (rel < tol).all() and (y[..., 0] > 0).all() and torch.isfinite(y).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("curvature", [-1.0, -0.5])
def test_every_layer_stays_on_hyperboloid(dtype, curvature):
    torch.manual_seed(0)
    c = (-curvature) ** 0.5
    x = _points((8,), 6, c, dtype)
    layers = [
        LorentzFC(6, 6, curvature),
        GyroLBN(6, curvature),
        LorentzBN(6, curvature),
        GyroBN(6, curvature),
        LorentzReLU(curvature),
        LorentzDropout(0.3, curvature),
    ]
    h = x
    for layer in layers:
        layer.to(dtype).train()
        h = layer(h)
        _assert_on(h, c, dtype)
        assert layer(x).shape == x.shape
    for layer in layers:
        layer.eval()
        _assert_on(layer(x), c, dtype)
    seq = _points((2, 7), 3, c, dtype)
    conv = LorentzConv1d(3, 5, 3, padding=1, curvature=curvature).to(dtype)
    y = conv(seq)
    assert y.shape == (2, 7, 6)
    _assert_on(y, c, dtype)
    grid = _points((2, 4, 4), 3, c, dtype)
    y2 = LorentzConv2d(3, 4, 3, padding=1, curvature=curvature).to(dtype)(grid)
    assert y2.shape == (2, 4, 4, 5)
    _assert_on(y2, c, dtype)
    _assert_on(lorentz_concat(seq, c), c, dtype)
    _assert_on(ops.gyro_add(x, x.flip(0), c), c, dtype)


def test_gyro_algebra():
    x, y = _points((6,), 4), _points((6,), 4, seed=1)
    o = ops.origin(4, dtype=torch.float64).expand_as(x)
    assert torch.allclose(ops.gyro_add(o, x), x, atol=1e-12)
    assert torch.allclose(ops.gyro_add(x, o), x, atol=1e-12)
    assert torch.allclose(ops.gyro_add(ops.gyro_neg(x), x), o, atol=1e-10)
    assert torch.allclose(ops.gyro_scale(1.0, x), x, atol=1e-12)
    reference = ops.expmap(x, ops.transp0(x, ops.logmap0(y)))  # the definition
    assert torch.allclose(ops.gyro_add(x, y), reference, atol=1e-10)
    # left gyro-translation is an isometry
    assert torch.allclose(
        ops.dist(ops.gyro_add(x, y), ops.gyro_add(x, x.flip(0))), ops.dist(y, x.flip(0)), atol=1e-9
    )


def test_signed_distance():
    t = torch.linspace(-2, 2, 9, dtype=torch.float64)
    e = torch.zeros(9, 3, dtype=torch.float64)
    e[:, 1] = t
    x = ops.expmap0(e)
    z = torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64)
    a = torch.zeros(1, dtype=torch.float64)
    assert torch.allclose(signed_distance(x, z, a)[:, 0], t, atol=1e-12)
    assert torch.allclose(signed_distance(x, -z, a)[:, 0], -t, atol=1e-12)
    on_plane = ops.expmap0(torch.tensor([[0.7, 0.0, -1.2]], dtype=torch.float64))
    assert signed_distance(on_plane, z, a).abs().item() < 1e-12


def test_euclidean_limit_of_fc():
    K = -1e-8
    c = (-K) ** 0.5
    torch.manual_seed(0)
    fc = LorentzFC(5, 3, curvature=K, bias=False).double()
    with torch.no_grad():
        fc.a.copy_(torch.tensor([0.3, -0.2, 0.0]))
    x_s = torch.randn(4, 5, dtype=torch.float64)
    y = fc(ops.lift(x_s, c))
    want = x_s @ fc.z.T - fc.a * fc.z.norm(dim=-1)
    assert torch.allclose(y[:, 1:], want, atol=1e-5)


def test_gyrolbn_statistics_and_karcher():
    torch.manual_seed(0)
    x = ops.expmap0(torch.randn(256, 5, dtype=torch.float64) * 0.5 + 0.4)
    bn = GyroLBN(5).double()
    with torch.no_grad():
        bn.beta.copy_(torch.tensor([0.3, 0.0, -0.2, 0.0, 0.1]))
        bn.gamma.fill_(0.6)
    y = bn(x)
    target = ops.expmap0(bn.beta)
    assert ops.dist(ops.lorentz_centroid(y), target).item() < 0.05
    assert ops.dist(y, target.expand_as(y)).pow(2).mean().item() == pytest.approx(0.36, rel=0.02)
    assert (
        ops.dist(bn.running_mean, ops.lorentz_centroid(x)).item()
        < ops.dist0(ops.lorentz_centroid(x)).item()
    )  # running mean moved towards the batch mean
    gbn = GyroBN(5, iters=10).double()
    mu = gbn.batch_mean(x)
    assert ops.logmap(mu.expand_as(x), x).mean(0).norm().item() < 1e-4  # Fréchet mean


def test_concat_identity_and_log_radius():
    p = _points((10,), 4)
    assert torch.allclose(lorentz_concat(p.unsqueeze(-2)), p, atol=1e-12)
    g = torch.Generator().manual_seed(0)
    x_s = torch.randn(20000, 9, 16, generator=g, dtype=torch.float64)
    y = lorentz_concat(ops.lift(x_s))
    single = torch.log(x_s[:, 0].norm(dim=-1)).mean()
    assert abs(torch.log(y[:, 1:].norm(dim=-1)).mean() - single) < 0.01


def test_gradients_finite_at_origin_and_far():
    fc = LorentzFC(3, 2).double()
    for spread in (0.0, 8.0):
        x_s = (torch.ones(4, 3, dtype=torch.float64) * spread).requires_grad_(True)
        out = fc(ops.lift(x_s)).sum() + ops.dist0(ops.expmap0(x_s)).sum()
        out = out + ops.gyro_scale(0.5, ops.expmap0(x_s)).sum()
        out.backward()
        assert torch.isfinite(x_s.grad).all() and torch.isfinite(fc.z.grad).all()


def test_bad_input():
    fc = LorentzFC(3, 2)
    with pytest.raises(ValueError, match="hyperboloid"):
        fc(torch.randn(5, 4))
    with pytest.raises(ValueError):
        fc(_points((5,), 4, dtype=torch.float32))
    with pytest.raises(ValueError, match="hyperboloid"):
        GyroLBN(3)(torch.cat([-torch.ones(2, 1), torch.zeros(2, 3)], -1))
    with pytest.raises(ValueError):
        LorentzFC(3, 2, curvature=1.0)
    with pytest.raises(ValueError):
        ILNNSeqCNN(norm="layer")


def test_model_and_data():
    x, y = phylo_dna(40, length=32, seed=0)
    assert x.shape == (40, 32, 4) and set(np.unique(y)) <= set(range(8))
    model = ILNNSeqCNN(channels=8, classes=8)
    logits = model(torch.from_numpy(x))
    assert logits.shape == (40, 8) and torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize(
    "name", ["hierarchical-vs-euclidean", "gyrolbn-vs-lbn-gyrobn", "digamma-log-radius"]
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("ilnn", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
