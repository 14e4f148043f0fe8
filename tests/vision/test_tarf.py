"""Tests of the TARF room: settings, annealing, the gravity split, every unlearner end to end,
the metrics, and the claims at smoke scale."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.vision.tarf import (
    SETTINGS,
    TARF,
    UNLEARNERS,
    GradientAscent,
    SmallCNN,
    anneal,
    gravity_split,
    make_setting,
    train_classifier,
    unlearning_report,
)

Y_SUB = np.repeat(np.arange(6), 10)
Y_SUPER = Y_SUB // 3


@pytest.mark.parametrize("name", SETTINGS)
def test_settings_partition_and_reference(name):
    s = make_setting(name, Y_SUB, Y_SUPER, forget_sub=1)
    assert np.array_equal(np.sort(np.concatenate([s.forget_idx, s.remain_idx])), np.arange(60))
    assert np.all(Y_SUB[s.forget_idx] == 1)
    assert not s.target[s.retrain_idx].any()  # the reference never sees the target concept
    assert s.target[s.forget_idx].all()
    siblings = np.flatnonzero((Y_SUPER == 0) & (Y_SUB != 1))
    if name in ("target_mismatch", "data_mismatch"):
        assert np.array_equal(np.sort(s.hidden_target_idx), siblings)
        assert len(s.retrain_idx) == 60 - 30
    else:
        assert len(s.hidden_target_idx) == 0 and len(s.retrain_idx) == 50
    expected = Y_SUB if name in ("all_matched", "target_mismatch") else Y_SUPER
    assert np.array_equal(s.labels, expected)


def test_make_setting_refuses_bad_hierarchies_and_unseen_classes():
    with pytest.raises(ValueError, match="forget_sub=9 has no training sample"):
        make_setting("all_matched", Y_SUB, Y_SUPER, 9)
    broken = Y_SUPER.copy()
    broken[0] = 1
    with pytest.raises(ValueError, match="not a hierarchy"):
        make_setting("all_matched", Y_SUB, broken, 1)
    with pytest.raises(ValueError, match="name must be one of"):
        make_setting("mismatched", Y_SUB, Y_SUPER, 1)


def test_annealing_schedule():
    unl = TARF(epochs=10)
    unl._check()
    e1, e2 = unl.phases()
    assert (e1, e2) == (2, 7)
    for kind in ("linear", "cosine"):
        alphas = [anneal(t, e2, 1.0, kind) if t < e2 else 0.0 for t in range(10)]
        assert alphas[0] == 1.0 and all(a >= b for a, b in zip(alphas, alphas[1:]))
        assert all(a == 0.0 for a in alphas[e2:])


def _toy_images(n, rng, shift):
    return torch.as_tensor(rng.normal(size=(n, 3, 8, 8)).astype(np.float32) * 0.3 + shift)


def test_gradient_ascent_step_increases_forget_loss():
    rng = np.random.default_rng(0)
    X = torch.cat([_toy_images(40, rng, 0.0), _toy_images(40, rng, 1.0)])
    y = torch.repeat_interleave(torch.tensor([0, 1]), 40)
    torch.manual_seed(0)
    model = train_classifier(SmallCNN(2, size=8, width=4), X, y, epochs=3, lr=0.05)
    forget = (X[:40], y[:40])
    before = nn.functional.cross_entropy(model(forget[0]), forget[1]).item()
    after_model = GradientAscent(epochs=1, lr=0.05, batch=40).unlearn(model, forget, (X, y))
    after = nn.functional.cross_entropy(after_model(forget[0]), forget[1]).item()
    assert after > before


def test_gravity_split_recovers_the_dragged_blob():
    # scores as gradient ascent produces them: a dragged blob next to D_f, the rest unaffected
    rng = np.random.default_rng(1)
    dragged = rng.normal(0.45, 0.05, 60)
    unaffected = rng.normal(0.02, 0.03, 400)
    scores = np.concatenate([dragged, unaffected])
    split = gravity_split(scores)
    assert split[:60].mean() >= 0.9 and split[60:].mean() <= 0.05
    assert not gravity_split(np.full(10, 0.3)).any()  # no split in constant scores


def test_gravity_drags_the_siblings_on_planted_data():
    """A linear model on 2-D points: gradient ascent on one blob lowers the confidence of the
    blob next to it (same label) and raises that of the far blob (other label); TARF's
    selection takes only near-blob samples."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [1.2, 0.0], [3.0, 0.0]])
    pts = np.concatenate([rng.normal(c, 0.5, (80, 2)) for c in centres]).astype(np.float32)
    X = torch.as_tensor(pts)[:, :, None, None]
    y = torch.as_tensor(np.repeat([0, 0, 1], 80))

    class Linear(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def features(self, x):
            return x.flatten(1)

        def forward(self, x):
            return self.fc(x.flatten(1))

    torch.manual_seed(0)
    model = train_classifier(Linear(), X, y, epochs=10, lr=0.1, batch=32)
    unl = TARF(epochs=5, lr=0.5, batch=40, phase_fracs=(0.4, 0.8), expand_forget=False)
    unl.unlearn(model, (X[:80], y[:80]), (X[80:], y[80:]))
    near = np.arange(160) < 80
    for selected in unl.selections_:
        assert selected[near].mean() >= 0.15 and not selected[~near].any()


@pytest.mark.parametrize("name", list(UNLEARNERS))
def test_every_unlearner_changes_a_copy_and_keeps_the_input(name):
    rng = np.random.default_rng(0)
    X = torch.cat([_toy_images(100, rng, 0.0), _toy_images(100, rng, 1.0)])
    y = torch.repeat_interleave(torch.tensor([0, 1]), 100)
    torch.manual_seed(0)
    model = SmallCNN(2, size=8, width=4)
    snapshot = copy.deepcopy(model.state_dict())
    out = UNLEARNERS[name](epochs=2, lr=0.05, batch=50).unlearn(
        model, (X[:50], y[:50]), (X[50:], y[50:])
    )
    assert out is not model
    assert all(torch.equal(snapshot[k], v) for k, v in model.state_dict().items())
    assert any(not torch.equal(snapshot[k], v) for k, v in out.state_dict().items())


def test_dataloaders_are_accepted():
    rng = np.random.default_rng(0)
    X = _toy_images(64, rng, 0.0)
    y = torch.zeros(64, dtype=torch.long)
    y[32:] = 1
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
    out = TARF(epochs=2, batch=16).unlearn(SmallCNN(2, size=8, width=4), loader, loader)
    assert isinstance(out, nn.Module)


def test_channels_last_pooling_equals_plain_max_pooling():
    """SmallCNN's pooling layer gives the plain layer's outputs, gradients and training run."""
    torch.manual_seed(0)
    fast = SmallCNN(3, size=8, width=4)
    plain = copy.deepcopy(fast)
    for i, layer in enumerate(plain.body):
        if isinstance(layer, nn.MaxPool2d):
            plain.body[i] = nn.MaxPool2d(2)
    assert sum(type(m) is nn.MaxPool2d for m in plain.body) == 2
    assert sum(type(m) is nn.MaxPool2d for m in fast.body) == 0
    X = torch.rand(40, 3, 8, 8, requires_grad=True)
    out_fast, out_plain = fast.body[2](X), plain.body[2](X)
    assert torch.equal(out_fast, out_plain) and out_fast.is_contiguous()
    g = torch.randn_like(out_fast)
    (gx_fast,) = torch.autograd.grad(out_fast, X, g)
    (gx_plain,) = torch.autograd.grad(out_plain, X, g)
    assert torch.equal(gx_fast, gx_plain)
    y = np.arange(40) % 3
    train_classifier(fast, X.detach(), y, epochs=2, batch=16, seed=0)
    train_classifier(plain, X.detach(), y, epochs=2, batch=16, seed=0)
    for a, b in zip(fast.state_dict().values(), plain.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_report_gap_to_itself_is_zero():
    rng = np.random.default_rng(0)
    y_sub = np.repeat(np.arange(4), 20)
    y_super = y_sub // 2
    X = torch.as_tensor(rng.random((80, 3, 8, 8)).astype(np.float32))
    s = make_setting("all_matched", y_sub, y_super, 0)
    model = SmallCNN(4, size=8, width=4).eval()
    ref = unlearning_report(model, s, X, X, y_sub, y_super)
    rep = unlearning_report(model, s, X, X, y_sub, y_super, reference=ref)
    assert rep["avg_gap"] == 0.0 and set(rep["gaps"]) == {"FA", "RA", "TA_keep", "TA_forget", "MIA"}
    assert 0.0 <= rep["MIA"] <= 100.0


@pytest.mark.parametrize(
    "name", ["closer-to-retrain-under-mismatch", "gravity-exposes-hidden-targets"]
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("tarf", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert record["baseline"]
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
