import pickle

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.nn.ilnn import (
    GyroAdd,
    GyroBN,
    GyroLBN,
    ILNNSeqCNN,
    LorentzBasicBlock,
    LorentzBN,
    LorentzConv1d,
    LorentzConv2d,
    LorentzDropout,
    LorentzFC,
    LorentzGlobalPool,
    LorentzReLU,
    LorentzResNet18,
    ResNet18,
    load_cifar10,
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
    _assert_on(GyroAdd(curvature)(x, x.flip(0)), c, dtype)
    pooled = LorentzGlobalPool(curvature)(grid)
    assert pooled.shape == (2, 4)
    _assert_on(pooled, c, dtype)
    for stride, out in ((1, 3), (2, 5)):
        block = LorentzBasicBlock(3, out, stride, curvature).to(dtype)
        y3 = block(grid)
        assert y3.shape == (2, 4 // stride, 4 // stride, out + 1)
        _assert_on(y3, c, dtype)


def _hook_every_point_layer(model):
    """Forward hooks asserting that every Lorentz submodule returns hyperboloid points."""
    seen = []

    def check(module, _inputs, output):
        seen.append(type(module).__name__)
        _assert_on(output, model.c, output.dtype)

    for module in model.modules():
        if module is model or isinstance(module, nn.Linear) or getattr(module, "head", False):
            continue
        if isinstance(module, nn.Sequential) and len(module) == 0:
            continue  # identity shortcut
        module.register_forward_hook(check)
    return seen


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_models_stay_on_hyperboloid_after_every_layer(dtype):
    torch.manual_seed(0)
    seq_model = ILNNSeqCNN(channels=6, classes=4).to(dtype)
    seen = _hook_every_point_layer(seq_model)
    x, _ = phylo_dna(16, length=16, seed=0)
    assert seq_model(torch.from_numpy(x).to(dtype)).shape == (16, 4)
    assert {"LorentzConv1d", "GyroLBN", "LorentzReLU", "GyroAdd", "LorentzGlobalPool"} <= set(seen)
    net = LorentzResNet18(num_classes=5, width=2).to(dtype)
    seen = _hook_every_point_layer(net)
    logits = net(torch.randn(4, 3, 8, 8, dtype=dtype))
    assert logits.shape == (4, 5) and logits.dtype == dtype
    assert seen.count("LorentzBasicBlock") == 8 and seen.count("GyroAdd") == 8
    assert seen.count("LorentzConv2d") == 1 + 16 + 3  # stem, 2 per block, 3 strided shortcuts
    net.eval()
    _hook_every_point_layer(net)
    assert torch.isfinite(net(torch.randn(2, 3, 8, 8, dtype=dtype))).all()


def test_resnet18_shapes_gradients_and_size():
    torch.manual_seed(0)
    net = LorentzResNet18(num_classes=10, width=2)
    logits = net(torch.randn(6, 3, 16, 16))
    assert logits.shape == (6, 10)
    nn.functional.cross_entropy(logits, torch.arange(6)).backward()
    for name, p in net.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name
    # default width 64: ResNet-18 size, within 0.01% of the Euclidean ResNet-18 with conv biases
    count = sum(p.numel() for p in LorentzResNet18().parameters())
    euclid = sum(p.numel() for p in ResNet18().parameters())
    assert count == 11_178_782 and abs(count - euclid) < 1e-4 * euclid
    assert ResNet18(width=2)(torch.randn(2, 3, 8, 8)).shape == (2, 10)


def _reference_conv(conv, x, dims):
    """Lorentz convolution by its definition: origin padding, explicit windows,
    log-radius concatenation, PLFC."""
    k, pad, stride = conv.kernel_size, conv.padding, conv.stride
    o = ops.origin(x.shape[-1] - 1, conv.c, dtype=x.dtype)
    if dims == 1:
        padded = torch.cat([o.expand(x.shape[0], pad, -1), x, o.expand(x.shape[0], pad, -1)], 1)
        starts = range(0, padded.shape[1] - k + 1, stride)
        windows = torch.stack([padded[:, i : i + k] for i in starts], 1)  # (B, L', k, 1+C)
    else:
        b, h, w, d = x.shape
        padded = o.expand(b, h + 2 * pad, w + 2 * pad, d).clone()
        padded[:, pad : pad + h, pad : pad + w] = x
        rows = range(0, padded.shape[1] - k + 1, stride)
        cols = range(0, padded.shape[2] - k + 1, stride)
        windows = torch.stack(
            [
                torch.stack([padded[:, i : i + k, j : j + k].reshape(b, k * k, d) for j in cols], 1)
                for i in rows
            ],
            1,
        )
    return conv.fc(lorentz_concat(windows, conv.c))


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 1), (1, 0), (2, 2)])
def test_convolutions_equal_their_definition(stride, padding):
    torch.manual_seed(0)
    for dims, conv_cls, shape in ((1, LorentzConv1d, (2, 9)), (2, LorentzConv2d, (2, 7, 6))):
        conv = conv_cls(3, 5, 3, stride, padding, curvature=-0.7).double()
        with torch.no_grad():
            conv.fc.a.normal_()
            conv.fc.beta.normal_()
        x = _points(shape, 3, conv.c, seed=1)
        assert torch.allclose(conv(x), _reference_conv(conv, x, dims), atol=1e-10)


def test_fast_inverse_hyperbolic_functions():
    u = torch.cat([torch.tensor([0.0, 1e-30, -1e-8, 1e20, -1e20]), torch.randn(200) * 5])
    for dtype, tol in ((torch.float64, 1e-14), (torch.float32, 1e-6)):
        v = u.to(dtype)
        want = torch.asinh(v.double())
        err = (ops.asinh(v).double() - want).abs() / want.abs().clamp_min(1e-300)
        assert err.max() < tol
        w = 1 + v.abs()
        want = torch.acosh(w.double())
        assert ((ops.acosh(w).double() - want).abs() / want.clamp_min(1e-300)).max() < 10 * tol
    x = (torch.randn(20, dtype=torch.float64) * 4).requires_grad_(True)
    assert torch.autograd.gradcheck(ops.asinh, (x,))
    y = (1.01 + torch.rand(20, dtype=torch.float64) * 4).requires_grad_(True)
    assert torch.autograd.gradcheck(ops.acosh, (y,))


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
    off = torch.cat([torch.ones(2, 5, 1), torch.randn(2, 5, 3)], -1)  # time not from the constraint
    for layer in (LorentzReLU(), LorentzDropout(0.2), LorentzBN(3), GyroBN(3)):
        with pytest.raises(ValueError, match="hyperboloid"):
            layer(off)
    with pytest.raises(ValueError, match="hyperboloid"):
        LorentzConv1d(3, 4, 3)(off)
    with pytest.raises(ValueError, match="hyperboloid"):
        GyroAdd()(off, off)
    with pytest.raises(ValueError, match="hyperboloid"):
        LorentzGlobalPool()(off)
    good = _points((2, 5), 3, dtype=torch.float32)
    with pytest.raises(ValueError, match="size 5, got 4"):
        GyroLBN(4)(good)
    with pytest.raises(ValueError, match="1 \\+ C_in"):
        LorentzConv1d(4, 4, 3)(good)
    with pytest.raises(ValueError, match="1 \\+ C_in"):
        LorentzConv2d(3, 4, 3)(good)  # a sequence is not a grid
    with pytest.raises(ValueError, match="shapes differ"):
        GyroAdd()(good, good[:1])
    with pytest.raises(TypeError):
        LorentzFC(3, 2)(torch.ones(2, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="images"):
        LorentzResNet18(width=2)(torch.randn(2, 1, 8, 8))
    with pytest.raises(TypeError):
        LorentzResNet18(width=2)(torch.ones(2, 3, 8, 8, dtype=torch.uint8))
    with pytest.raises(ValueError):
        LorentzResNet18(width=0)
    with pytest.raises(ValueError, match="one-hot"):
        ILNNSeqCNN()(torch.randn(2, 10, 5))


def test_model_and_data():
    x, y = phylo_dna(40, length=32, seed=0)
    assert x.shape == (40, 32, 4) and set(np.unique(y)) <= set(range(8))
    model = ILNNSeqCNN(channels=8, classes=8)
    logits = model(torch.from_numpy(x))
    assert logits.shape == (40, 8) and torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_load_cifar10_reads_pickle_batches(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    for name, n in [(f"data_batch_{k}", 3) for k in range(1, 6)] + [("test_batch", 4)]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": [1] * n}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    monkeypatch.setenv("ICLR26_CIFAR10", str(tmp_path))
    x_tr, y_tr, x_te, y_te = load_cifar10()
    assert x_tr.shape == (15, 3, 32, 32) and x_te.shape == (4, 3, 32, 32)
    assert x_tr.dtype == np.float32 and 0 <= x_tr.min() and x_tr.max() <= 1
    assert y_tr.tolist() == [1] * 15 and y_te.dtype == np.int64
    (tmp_path / "test_batch").unlink()
    with pytest.raises(FileNotFoundError, match="test_batch"):
        load_cifar10()
    monkeypatch.delenv("ICLR26_CIFAR10")
    with pytest.raises(FileNotFoundError, match="ICLR26_CIFAR10"):
        load_cifar10()


def test_resnet_claim_skips_without_cifar(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLR26_CIFAR10", raising=False)
    record = run_claim("ilnn", "resnet18-vs-euclidean", "full", out_dir=tmp_path)
    assert record["verdict"] == "skipped" and "CIFAR-10" in record["reason"]


@pytest.mark.parametrize(
    "name",
    [
        "hierarchical-vs-euclidean",
        "gyrolbn-vs-lbn-gyrobn",
        "digamma-log-radius",
        "resnet18-vs-euclidean",
    ],
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("ilnn", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]


def test_cifar_protocol_pieces():
    from iclr26.nn.ilnn.claims import _augment, _train_images

    gen = torch.Generator().manual_seed(0)
    images = torch.randn(6, 3, 8, 8)
    out = _augment(images, gen)
    padded = nn.functional.pad(images, (4, 4, 4, 4))
    for img, src in zip(out, padded):
        crops = [src[:, i : i + 8, j : j + 8] for i in range(9) for j in range(9)]
        assert any(torch.equal(img, c) or torch.equal(img, c.flip(-1)) for c in crops)
    data = (torch.rand(16, 3, 8, 8), torch.arange(16) % 10, torch.rand(8, 3, 8, 8), torch.arange(8))
    protocol = {"epochs": 2, "batch": 8, "optimizer": "sgd", "augment": True}
    for model in (LorentzResNet18(width=2), ResNet18(width=2)):
        acc = _train_images(model, data, protocol, seed=0, device="cpu")
        assert 0.0 <= acc <= 1.0 and not model.training


STRIDED_1X1_SCRIPT = """
import torch
from iclr26.nn.ilnn import LorentzConv2d, ops
torch.set_num_threads(1)
torch.manual_seed(0)
for trial in range(30):
    conv = LorentzConv2d(4, 8, 1, stride=2)
    x = ops.expmap0(torch.randn(6, 8, 8, 4) * 0.5)
    conv(x).sum().backward()
    grad = conv.fc.z.grad.clone()
    ref = LorentzConv2d(4, 8, 1, stride=2).double()
    ref.load_state_dict(conv.state_dict())
    ref(ops.lift(x[..., 1:].double())).sum().backward()
    assert torch.allclose(grad.double(), ref.fc.z.grad, rtol=1e-4, atol=1e-5), trial
print("ok")
"""


def test_strided_1x1_lorentz_conv_backward_is_safe_on_one_thread():
    """oneDNN's channels-last 1x1 strided convolution corrupts the heap in the weight gradient
    with one thread (and hangs or returns wrong gradients with more); the Lorentz convolution
    must not hand it channels-last operands. Run in a child process: a regression aborts it."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", STRIDED_1X1_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


def test_norms_refuse_a_batch_of_one_in_train_mode():
    x = _points((1,), 4, dtype=torch.float32)
    for norm in (GyroLBN(4), LorentzBN(4), GyroBN(4)):
        with pytest.raises(ValueError, match="x must hold more than 1 point per channel"):
            norm(x)
        norm.eval()
        _assert_on(norm(x), 1.0, torch.float32)  # running statistics: fine
    seq = _points((1, 5), 4, dtype=torch.float32)  # one sequence of 5 points is 5 points
    _assert_on(GyroLBN(4)(seq), 1.0, torch.float32)


def test_dispersion_of_gyrolbn_and_lbn():
    x = ops.expmap0(torch.randn(512, 5, dtype=torch.float64) * 0.7 + 0.3)
    mu = ops.lorentz_centroid(x)
    d = ops.dist(mu.expand_as(x), x)
    # the paper's GyroLBN: Fréchet variance of the output = gamma^2 (tested above); the
    # released code's variant: distances scaled by clamp(gamma) / sqrt(mean distance)
    bn = GyroLBN(5, dispersion="mean_distance", eps=1e-12).double()
    assert bn.gamma.item() == 0.5
    y = bn(x)
    spread = ops.dist0(y)
    assert torch.allclose(spread, d * 0.5 / d.mean().sqrt(), atol=1e-9)
    with torch.no_grad():
        bn.gamma.fill_(7.0)  # clamped to 2 as in the release
    assert torch.allclose(ops.dist0(bn(x)), d * 2.0 / d.mean().sqrt(), atol=1e-9)
    with pytest.raises(ValueError, match="dispersion"):
        GyroLBN(5, dispersion="std")
    # LBN (released normalisation): tangent vectors divided by their mean length
    lbn = LorentzBN(5, eps=1e-12).double()
    with torch.no_grad():
        lbn.gamma.fill_(0.8)
    assert ops.dist0(lbn(x)).mean().item() == pytest.approx(0.8, rel=1e-9)


def test_plfc_clamps_the_scaled_distance_before_sinh():
    fc = LorentzFC(3, 2, bias=False).double()
    far = ops.expmap0(torch.tensor([[40.0, 0.0, 0.0], [-40.0, 0.0, 0.0]], dtype=torch.float64))
    with torch.no_grad():
        fc.z.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=torch.float64))
    y = fc(far)
    assert torch.isfinite(y).all()
    assert torch.allclose(y[:, 1].abs(), torch.sinh(torch.tensor(10.0, dtype=torch.float64)))
    head = LorentzFC(3, 2, head=True).double()
    with torch.no_grad():
        head.z.copy_(fc.z)
    assert head(far)[0, 0].item() == pytest.approx(40.0, rel=1e-6)  # logits are not clamped
