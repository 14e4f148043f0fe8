"""Tests of the IE-CL room: loss, transform, entropy estimate, regulariser, gradient routing,
plug-in wrappers, the MoCo v2 base (momentum keys, FIFO queue, resumable state), the
scikit-learn front end and the claims at smoke scale."""

import copy
import math

import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.data.vision import make_shapes
from iclr26.models.vision import TinyConvNet
from iclr26.vision.augment import simclr_augment
from iclr26.vision.iecl import (
    IECL,
    BYOLLite,
    EntropyPreservingRegularizer,
    IECLFeatureExtractor,
    IECLWrapper,
    InfoNCELoss,
    LearnableEntropyTransform,
    MoCo,
    SimCLR,
    incremental_entropy,
    make_framework,
    queue_infonce,
    train_ssl,
)
from iclr26.vision.iecl.entropy import DescriptorProjection


def _encoder(in_ch=3):
    torch.manual_seed(0)
    return TinyConvNet(width=8, out_dim=16, stride=8, in_chans=in_ch)


def _images(n=8, size=16, seed=0):
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def test_infonce_analytic_value_and_symmetry():
    z = torch.eye(4)
    tau = 0.2
    expected = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + 6))
    assert float(InfoNCELoss(tau)(z, z)) == pytest.approx(expected, rel=1e-5)
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    loss = InfoNCELoss(0.5)
    assert float(loss(a, b)) == pytest.approx(float(loss(b, a)), rel=1e-6)


def test_transform_bounds_and_identity_at_init():
    v = _images()
    zero = LearnableEntropyTransform(max_delta=0.1)
    torch.testing.assert_close(zero(v), v)
    with torch.no_grad():
        assert float(incremental_entropy(v, zero(v))) == pytest.approx(0.0, abs=1e-9)
    torch.manual_seed(1)
    live = LearnableEntropyTransform(max_delta=0.1, zero_init=False)
    out = live(v)
    assert out.shape == v.shape and out.min() >= 0 and out.max() <= 1
    assert (out - v).abs().max() <= 0.1 + 1e-6
    assert (out - v).abs().max() > 0


def test_incremental_entropy_grows_with_noise_and_psi_is_frozen():
    v = _images(32, 16)
    gen = torch.Generator().manual_seed(2)
    noise = torch.randn(v.shape, generator=gen)
    gains = [
        float(incremental_entropy(v, (v + s * noise).clamp(0, 1)))
        for s in (0.0, 0.02, 0.05, 0.1, 0.2)
    ]
    assert gains[0] == pytest.approx(0.0, abs=1e-9)
    assert all(b > a for a, b in zip(gains, gains[1:])), gains
    psi = DescriptorProjection(3)
    assert not any(p.requires_grad for p in psi.parameters())
    hist = [
        float(incremental_entropy(v, (v + s * noise).clamp(0, 1), estimator="histogram"))
        for s in (0.0, 0.1)
    ]
    assert hist[0] == pytest.approx(0.0, abs=1e-9) and hist[1] > 0


def test_rate_regulariser_prefers_spread_embeddings():
    reg = EntropyPreservingRegularizer("rate")
    collapsed = torch.ones(8, 8)
    spread = torch.eye(8)
    assert float(reg(collapsed)) < float(reg(spread))
    gap = EntropyPreservingRegularizer("gap")
    z = torch.randn(8, 4)
    assert float(gap(z, z_plain=z, delta_in=0.0)) == pytest.approx(0.0, abs=1e-9)
    assert float(gap(z, z_plain=z, delta_in=1.0)) == pytest.approx(-1.0, abs=1e-9)


def _grads(params):
    return [p.grad for p in params]


def test_gradient_routing_between_the_two_steps():
    model = IECL(_encoder(), 16, proj_dim=8, transform=LearnableEntropyTransform(zero_init=False))
    model.configure_optimizers(1e-3)
    enc = list(model.base.parameters())
    phi = list(model.transform.parameters())
    v1, v2 = model.base.views(_images())
    model.transform_step(v1, v2)
    assert all(g is None for g in _grads(enc))
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(phi))
    model.opt_tf.zero_grad(set_to_none=True)
    model.encoder_step(v1, v2)
    assert all(g is None for g in _grads(phi))
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(enc))


def test_transform_is_off_during_warmup():
    model = IECL(_encoder(), 16, proj_dim=8, transform_warmup=0.5)
    x = _images()
    before = [p.detach().clone() for p in model.transform.parameters()]
    log = model.training_step(x, 0, 10)
    assert log["active"] == 0.0 and log["delta_h"] == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, model.transform.parameters()))
    log = model.training_step(x, 5, 10)
    assert log["active"] == 1.0
    assert not all(torch.equal(a, b) for a, b in zip(before, model.transform.parameters()))


@pytest.mark.parametrize(
    "method, steps",
    [("iecl", 20), ("iecl_byol", 20), ("iecl_moco", 20), ("simclr", 5), ("byol", 5), ("moco", 5)],
)
def test_tiny_end_to_end_runs_have_finite_losses(method, steps):
    torch.manual_seed(0)
    model = make_framework(method, width=8, out_dim=16)
    model.configure_optimizers(1e-3)
    images = np.random.default_rng(0).random((32, 3, 16, 16)).astype(np.float32)
    hist = train_ssl(model, images, steps=steps, batch_size=8, log_every=1)
    assert len(hist["loss"]) == steps and np.isfinite(hist["loss"]).all()
    if method.startswith("iecl"):
        assert np.isfinite(hist["delta_h"]).all() and np.isfinite(hist["reg"]).all()
        assert any(d != 0 for d in hist["delta_h"])
    feats = model.encode(torch.from_numpy(images))
    assert feats.shape == (32, 16)


def test_gap_mode_and_histogram_estimator_train():
    model = IECL(
        _encoder(), 16, proj_dim=8, reg_mode="gap", estimator="histogram", transform_warmup=0.0
    )
    for step in range(3):
        log = model.training_step(_images(seed=step), step, 3)
        assert math.isfinite(log["loss"]) and math.isfinite(log["reg"])


def test_byol_target_moves_by_ema():
    model = BYOLLite(_encoder(), 16, proj_dim=8, tau_ema=0.5)
    before = [p.clone() for p in model.target_encoder.parameters()]
    model.training_step(_images(), 0, 1)
    assert not all(torch.equal(a, b) for a, b in zip(before, model.target_encoder.parameters()))
    assert all(not p.requires_grad for p in model.target_encoder.parameters())


def test_wrapper_plugs_into_any_two_view_framework_and_infers_feat_dim():
    base = SimCLR(_encoder())  # feat_dim read from the encoder's embed_dim
    assert base.feat_dim == 16
    wrapped = IECLWrapper(base, transform_warmup=0.0)
    log = wrapped.training_step(_images(), 0, 1)
    assert {"loss", "reg", "delta_h", "violation"} <= set(log)


def test_feature_extractor_fits_grey_and_colour_arrays():
    rng = np.random.default_rng(0)
    grey = rng.random((24, 16, 16))
    fe = IECLFeatureExtractor(steps=3, batch_size=8, width=8, feat_dim=12).fit(grey)
    assert fe.transform(grey).shape == (24, 12)
    colour = rng.random((24, 3, 16, 16))
    fe = IECLFeatureExtractor(method="simclr", steps=2, batch_size=8, width=8, feat_dim=12).fit(
        colour
    )
    assert fe.transform(colour).shape == (24, 12)
    with pytest.raises(ValueError, match="X"):
        fe.transform(grey)


@pytest.mark.parametrize("name", ["small-batch-gain", "gain-shrinks-with-batch", "plug-in-byol"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("iecl", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
    if name == "small-batch-gain":
        m = record["metrics"]
        assert m["step_flop_ratio_iecl_over_simclr"] > 1.0
        assert "count_flops_per_step" in m["iecl_step"]
        assert len(m["delta_h_curve"]) == len(m["reg_curve"]) > 1


# ---------------------------------------------------------------------------- MoCo v2


def _moco(queue_size=24, momentum=0.9, symmetric=False, width=8, seed=0):
    torch.manual_seed(seed)
    encoder = TinyConvNet(width=width, out_dim=16, stride=8)
    return MoCo(encoder, 16, proj_dim=8, queue_size=queue_size, momentum=momentum,
                symmetric=symmetric, seed=seed)  # fmt: skip


def _snapshot(params):
    return [p.detach().clone() for p in params]


def test_queue_infonce_equals_hand_computed_value():
    e = torch.eye(3)
    tau = 0.5
    expected = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + 2 * math.exp(0.0)))
    assert float(queue_infonce(e[:1], e[:1], e[1:], tau)) == pytest.approx(expected, rel=1e-6)
    gen = torch.Generator().manual_seed(0)
    q, k, neg = (torch.randn(n, 4, generator=gen, dtype=torch.float64) for n in (3, 3, 5))
    unit = [[float(x) / float(r.norm()) for x in r] for r in (*q, *k, *neg)]
    qs, ks, ns = unit[:3], unit[3:6], unit[6:]

    def dot(a, b):
        return sum(x * y for x, y in zip(a, b))

    terms = []
    for qi, ki in zip(qs, ks):
        pos = math.exp(dot(qi, ki) / 0.2)
        terms.append(-math.log(pos / (pos + sum(math.exp(dot(qi, n) / 0.2) for n in ns))))
    assert float(queue_infonce(q, k, neg, 0.2)) == pytest.approx(sum(terms) / 3, rel=1e-10)


def test_moco_loss_is_queue_infonce_and_keys_are_enqueued_after_it():
    model = _moco()
    model.configure_optimizers(1e-3)
    v1, v2 = model.views(_images())
    queue_before = model.queue.clone()
    loss, q, k = model.pair_loss(v1, v2)
    with torch.no_grad():
        expected = queue_infonce(model.queries(v1), model.keys(v2), queue_before, 0.2)
    assert float(loss.detach()) == pytest.approx(float(expected), rel=1e-6)
    assert torch.equal(model.queue, queue_before) and int(model.queue_ptr) == 0
    model.optimizer.zero_grad()
    loss.backward()
    model.optimizer.step()
    model.after_step()
    torch.testing.assert_close(model.queue[:8], k.detach(), rtol=0, atol=0)
    assert torch.equal(model.queue[8:], queue_before[8:]) and int(model.queue_ptr) == 8


def test_moco_key_network_is_the_momentum_average_of_the_query_network():
    m = 0.9
    model = _moco(momentum=m)
    key = _snapshot(model.key_parameters())
    assert all(torch.equal(a, b) for a, b in zip(key, model.query_parameters()))
    x = _images()
    for step in range(3):
        model.training_step(x, step, 3)
        query = _snapshot(model.query_parameters())
        key = [m * a + (1 - m) * b for a, b in zip(key, query)]  # eq. 2 after each step
        for expected, actual in zip(key, model.key_parameters()):
            torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-7)
    assert not all(torch.equal(a, b) for a, b in zip(key, query))


def test_no_gradient_reaches_the_key_network():
    model = _moco()
    model.training_step(_images(), 0, 1)
    assert all(not p.requires_grad and p.grad is None for p in model.key_parameters())
    assert all(p.grad is not None for p in model.query_parameters())
    assert not model.keys(_images()).requires_grad  # no graph through the key network
    assert set(map(id, model.trainable_parameters())) == set(map(id, model.query_parameters()))


@pytest.mark.parametrize("symmetric", [False, True])
def test_moco_queue_holds_the_last_keys_in_fifo_order(symmetric):
    model = _moco(queue_size=48 if symmetric else 24, symmetric=symmetric)
    per_step = 16 if symmetric else 8
    enqueued = []
    for step in range(5):
        model.training_step(_images(seed=step), step, 5)
        enqueued.append(model.last_keys.clone())
        assert int(model.queue_ptr) == (step + 1) * per_step % model.queue_size
    last = torch.cat(enqueued)[-model.queue_size :]
    assert torch.equal(model.queue_in_order(), last)
    ptr = int(model.queue_ptr)  # the ring: the next key to be replaced is the oldest
    assert torch.equal(model.queue[ptr : ptr + per_step], enqueued[-3])
    torch.testing.assert_close(model.queue.norm(dim=1), torch.ones(model.queue_size))


def test_moco_training_lowers_the_contrastive_loss():
    X, _ = make_shapes(64, n_classes=10, size=16, seed=0)
    x = torch.from_numpy(X)
    gen = torch.Generator().manual_seed(123)
    a, b, negatives = (simclr_augment(part, generator=gen) for part in (x[:32], x[:32], x[32:]))

    @torch.no_grad()
    def held_out_loss(model):  # fixed views; negatives: current keys of other images
        return float(queue_infonce(model.queries(a), model.keys(b), model.keys(negatives), 0.2))

    model = _moco(queue_size=16, width=16)
    model.configure_optimizers(3e-3)
    before = held_out_loss(model)
    train_ssl(model, X[:32], steps=60, batch_size=8)
    assert held_out_loss(model) < before - 0.1


def _train_steps(model, batches, start, total):
    return [model.training_step(x, start + i, total)["loss"] for i, x in enumerate(batches)]


@pytest.mark.parametrize("wrapped", [False, True])
def test_moco_resumes_from_its_state_dict_bit_for_bit(wrapped):
    def build():
        model = _moco(queue_size=16)
        if wrapped:
            model = IECLWrapper(model, transform=LearnableEntropyTransform(zero_init=False))
        model.configure_optimizers(1e-3)
        return model

    def optimizers(model):
        return [model.optimizer] if not wrapped else [model.opt_enc, model.opt_tf]

    batches = [_images(seed=s) for s in range(6)]
    straight = build()
    full = _train_steps(straight, batches, 0, 6)

    first = build()
    head = _train_steps(first, batches[:3], 0, 6)
    state = copy.deepcopy(first.state_dict())
    opt_states = [copy.deepcopy(o.state_dict()) for o in optimizers(first)]
    del first
    resumed = build()
    torch.manual_seed(99)  # the global RNG must not matter
    resumed.load_state_dict(state)
    for opt, saved in zip(optimizers(resumed), opt_states):
        opt.load_state_dict(saved)
    tail = _train_steps(resumed, batches[3:], 3, 6)
    assert head + tail == full
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b), name
    base = resumed.base if wrapped else resumed
    assert "queue" in "".join(resumed.state_dict()) and int(base.queue_ptr) == 6 * 8 % 16


def test_iecl_plugs_into_moco():
    model = IECL(_encoder(), 16, proj_dim=8, base="moco", transform_warmup=0.0)
    assert isinstance(model.base, MoCo) and model.base.temperature == 0.2
    for step in range(3):  # three loss evaluations per step, one enqueue
        log = model.training_step(_images(seed=step), step, 3)
        assert math.isfinite(log["loss"]) and math.isfinite(log["reg"])
        assert int(model.base.queue_ptr) == (step + 1) * 8 % model.base.queue_size
    assert log["delta_h"] != 0.0
    assert all(p.grad is None for p in model.base.key_parameters())
    # the consistency hinge reaches A_phi through the key network (the transformed view is
    # the key view): with lam = 0 and a violated hinge, phi still gets a gradient
    wrapped = IECLWrapper(_moco(), transform=LearnableEntropyTransform(zero_init=False),
                          lam_entropy=0.0, consistency_margin=0.0)  # fmt: skip
    wrapped.loss_bar = -100.0
    v1, v2 = wrapped.base.views(_images())
    log = wrapped.transform_step(v1, v2)
    assert log["violation"] > 0
    assert any(
        p.grad is not None and p.grad.abs().sum() > 0 for p in wrapped.transform.parameters()
    )
    assert all(p.grad is None for p in wrapped.base.parameters())
    for symmetric in (False, True):  # gap mode pairs z2 with the matching second-view embedding
        gap = IECLWrapper(_moco(queue_size=48, symmetric=symmetric), reg_mode="gap",
                          transform_warmup=0.0)  # fmt: skip
        assert math.isfinite(gap.training_step(_images(), 0, 1)["reg"])
