"""Tests of the AnyUp room: any channel count, permutation equivariance, the LFU invariances,
the convex hull of the window, the window mask, chunking, gradients, the training objective,
the baselines and the claims at smoke scale."""

import pytest
import torch
import torch.nn.functional as F

from iclr26.claims import contract_problems, run_claim
from iclr26.models.vision import TinyConvNet
from iclr26.vision.anyup import (
    AnyUp,
    JointBilateralUpsampler,
    LearnedFeatureUnification,
    SpecificUpsampler,
    bilinear,
    feature_fidelity,
    probe_miou,
    reconstruction_loss,
    train_anyup,
    window_mask,
)
from iclr26.vision.anyup.layers import window_bounds
from iclr26.vision.anyup.training import crop_batch, training_losses

TINY = dict(qk_dim=16, num_heads=2, window_ratio=0.15, lfu_dim=8)


def _model(**kw):
    torch.manual_seed(0)
    return AnyUp(**{**TINY, **kw}).eval()


def _image(b=2, h=32, w=32, seed=0):
    return torch.rand(b, 3, h, w, generator=torch.Generator().manual_seed(seed))


def _feats(b=2, c=5, h=4, w=4, seed=1):
    return torch.randn(b, c, h, w, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("channels", [1, 3, 7, 128])
def test_any_channel_count_same_weights(channels):
    up = _model()
    out = up(_image(), _feats(c=channels))
    assert out.shape == (2, channels, 32, 32)
    assert torch.isfinite(out).all()


def test_output_size_non_square_and_non_integer_scale():
    up = _model()
    out = up(_image(h=32, w=48), _feats(h=4, w=6), output_size=(13, 11))
    assert out.shape == (2, 5, 13, 11)
    assert up(_image(), _feats(), output_size=20).shape == (2, 5, 20, 20)


def test_features_of_another_aspect_and_too_small_sizes_are_refused():
    """A grid that divides the image but with another stride per axis (another aspect) and
    an output size below the grid are errors naming ``features`` / ``output_size``, for
    AnyUp and for every baseline sharing its input check."""
    up = _model()
    spec = SpecificUpsampler(5, qk_dim=8, num_heads=2, lfu_dim=4)
    for f in (up, spec, bilinear, JointBilateralUpsampler()):
        with pytest.raises(ValueError, match="features grid 4x2 does not match the aspect"):
            f(_image(), _feats(h=4, w=2))  # 32 x 32 image: strides 8 and 16
        with pytest.raises(ValueError, match="features grid 4x4 does not match the aspect"):
            f(_image(h=32, w=48), _feats())  # 4 x 4 divides 32 x 48, aspect 2:3
        with pytest.raises(ValueError, match="output_size"):
            f(_image(), _feats(), (3, 8))  # smaller than the 4 x 4 grid
    # the same aspect at another resolution, and an output between grid and image, pass
    assert up(_image(h=32, w=48), _feats(h=4, w=6), output_size=(4, 6)).shape == (2, 5, 4, 6)
    assert bilinear(_image(h=32, w=48), _feats(h=2, w=3)).shape == (2, 5, 32, 48)


def test_channel_permutation_equivariance():
    up = _model()
    x, f = _image(), _feats(c=9)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(up(x, f[:, perm]), up(x, f)[:, perm], atol=1e-5, rtol=1e-5)


def test_lfu_invariant_to_duplication_and_permutation():
    torch.manual_seed(0)
    lfu = LearnedFeatureUnification(6, 5)
    f = _feats(c=7)
    base = lfu(f)
    assert base.shape == (2, 6, 4, 4)
    torch.testing.assert_close(lfu(torch.cat([f, f], 1)), base, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(lfu(f[:, torch.randperm(7)]), base, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(base.sum(1), torch.ones(2, 4, 4), atol=1e-5, rtol=1e-5)


def test_lfu_border_renormalisation():
    # a constant channel gives the same response at the border as in the centre
    torch.manual_seed(0)
    lfu = LearnedFeatureUnification(4, 5)
    resp = lfu.responses(torch.ones(1, 1, 6, 6))[0, 0]  # (M, h, w)
    sums = lfu.basis.sum((1, 2, 3)) / 25
    torch.testing.assert_close(resp[:, 2, 2], sums, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(resp[:, 0, 0], resp[:, 2, 2])  # zero padding, renormalised
    gd = LearnedFeatureUnification(6, 5, init_gaussian_derivatives=True).basis
    torch.testing.assert_close(gd.flatten(1).norm(dim=1), torch.ones(6))


def test_window_mask_matches_brute_force():
    ratio, (hh, ww), (lh, lw) = 0.15, (13, 11), (5, 7)
    mask = window_mask((hh, ww), (lh, lw), ratio)
    ref = torch.zeros(hh * ww, lh * lw, dtype=torch.bool)
    import math

    for i in range(hh):
        for j in range(ww):
            u, v = (i + 0.5) / hh, (j + 0.5) / ww
            r0 = math.floor(max(u - ratio, 0) * lh)
            r1 = math.ceil(min(u + ratio, 1) * lh)
            c0 = math.floor(max(v - ratio, 0) * lw)
            c1 = math.ceil(min(v + ratio, 1) * lw)
            for a in range(lh):
                for b in range(lw):
                    ref[i * ww + j, a * lw + b] = r0 <= a < r1 and c0 <= b < c1
    assert torch.equal(mask, ref)
    assert mask.any(1).all()
    assert window_mask((4, 4), (2, 2), 0.0).all()  # ratio 0: global attention


def test_convex_hull_of_window_and_constant_features():
    up = _model()
    x, f = _image(b=1), _feats(b=1, c=3)
    with torch.no_grad():
        out = up(x, f)
    r0, r1, c0, c1 = window_bounds((32, 32), (4, 4), up.window_ratio)
    for i in range(0, 32, 5):
        for j in range(0, 32, 7):
            win = f[0, :, r0[i] : r1[i], c0[j] : c1[j]].flatten(1)
            assert (out[0, :, i, j] >= win.min(1).values - 1e-5).all()
            assert (out[0, :, i, j] <= win.max(1).values + 1e-5).all()
    const = torch.full((1, 4, 4, 4), 2.5)
    with torch.no_grad():
        torch.testing.assert_close(up(x, const), torch.full((1, 4, 32, 32), 2.5))


def test_values_are_raw_features_not_normalised():
    up = _model()
    x, f = _image(), _feats()
    with torch.no_grad():
        # scaling the features scales the output (keys see normalised features only)
        torch.testing.assert_close(up(x, 3.0 * f), 3.0 * up(x, f), atol=1e-5, rtol=1e-5)


def test_query_chunks_equal_unchunked():
    up = _model()
    x, f = _image(), _feats()
    with torch.no_grad():
        full = up(x, f, (24, 20))
        torch.testing.assert_close(up(x, f, (24, 20), q_chunk_size=37), full)
    out, attn = up(x, f, return_attention=True)
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 32 * 32), atol=1e-5, rtol=1e-5)


def test_gradients_reach_every_parameter():
    up = _model().train()
    out = up(_image(), _feats(), (16, 16))
    (out**2).mean().backward()
    missing = [n for n, p in up.named_parameters() if p.grad is None or not p.grad.abs().sum()]
    assert missing == []


def test_reconstruction_loss_zero_at_identity_and_uses_target_range():
    t = _feats(c=6)
    assert float(reconstruction_loss(t, t)) == pytest.approx(0.0, abs=1e-6)
    assert float(reconstruction_loss(2 * t, t)) > 0  # cosine 1, MSE on target's range > 0
    assert float(reconstruction_loss(-t, t)) > 1.9


def test_crop_alignment_and_regularisers_vanish_for_constant_features():
    images = _image(b=2, h=64, w=64)
    guidance, crops, offsets = crop_batch(images, 32, 8, 3, torch.Generator().manual_seed(0))
    assert guidance.shape == (2, 3, 32, 32) and crops.shape == (6, 3, 32, 32)
    for k, (r, c) in enumerate(offsets.tolist()):
        torch.testing.assert_close(
            crops[k], images[k // 3, :, 8 * r : 8 * r + 32, 8 * c : 8 * c + 32]
        )
    up = _model().train()

    def const(x):  # spatially constant, a different value per channel
        values = torch.arange(4.0)[None, :, None, None]
        return values.expand(len(x), 4, x.shape[-2] // 8, x.shape[-1] // 8).clone()

    losses = training_losses(up, const, images, 32, 8, 3, 0.1, 0.1, torch.Generator())
    for key in ("hr", "aug", "down"):
        assert float(losses[key].detach()) == pytest.approx(0.0, abs=1e-5)
    net = TinyConvNet(width=4, out_dim=8, stride=8).eval()
    losses = training_losses(up, net.forward_features, images, 32, 8, 3, 0.1, 0.1)
    assert all(torch.isfinite(v) for v in losses.values()) and float(losses["hr"]) > 0
    losses["total"].backward()


def test_tiny_training_run_lowers_the_loss():
    torch.manual_seed(0)
    net = TinyConvNet(width=4, out_dim=8, stride=8).eval()
    images = torch.rand(6, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    images = F.interpolate(images, size=(64, 64), mode="bilinear")  # smooth content

    def fixed_loss(model):  # the crop term on the same images and crops
        with torch.no_grad():
            gen = torch.Generator().manual_seed(7)
            return float(
                training_losses(model, net.forward_features, images, 32, 8, 4, 0, 0, gen)["hr"]
            )

    torch.manual_seed(0)
    before = fixed_loss(AnyUp(**TINY).train())
    model = train_anyup(net, images, steps=20, batch_size=3, lr=5e-3, seed=0, **TINY)
    assert len(model.history_["hr"]) == 20 and not model.training
    assert fixed_loss(model.train()) < 0.97 * before


def test_specific_upsampler_is_tied_to_its_channel_count():
    torch.manual_seed(0)
    spec = SpecificUpsampler(5, **TINY)
    assert spec(_image(), _feats(c=5)).shape == (2, 5, 32, 32)
    with pytest.raises(ValueError, match="in_dim"):
        spec(_image(), _feats(c=6))


def test_bilinear_and_jbu():
    x, f = _image(), _feats()
    torch.testing.assert_close(
        bilinear(x, f), F.interpolate(f, size=(32, 32), mode="bilinear", align_corners=False)
    )
    jbu = JointBilateralUpsampler()
    out = jbu(x, f, (20, 12))
    assert out.shape == (2, 5, 20, 12)
    const = torch.full((2, 3, 4, 4), -0.7)
    torch.testing.assert_close(jbu(x, const), torch.full((2, 3, 32, 32), -0.7))
    assert (out <= f.amax((2, 3))[..., None, None] + 1e-5).all()
    # an edge in the guidance keeps the features from bleeding across it
    img = torch.zeros(1, 3, 32, 32)
    img[..., 16:] = 1.0
    feat = torch.zeros(1, 1, 4, 4)
    feat[..., 2:] = 1.0
    sharp = JointBilateralUpsampler(sigma_range=0.05)(img, feat)
    blurry = bilinear(img, feat)
    assert (sharp[..., 15] - 0).abs().max() < (blurry[..., 15] - 0).abs().max()


def test_probe_and_fidelity_helpers():
    x = _image(b=6, h=16, w=16)
    f = F.avg_pool2d(x, 4)  # features = the low-res image: bilinear is faithful
    masks = (x[:, 0] > 0.5).long().numpy()
    out = probe_miou(bilinear, x[:4], f[:4], masks[:4], x[4:], f[4:], masks[4:], 2, epochs=3)
    assert 0 <= out["miou"] <= 1 and 0 <= out["pixel_acc"] <= 1
    again = probe_miou(bilinear, x[:4], f[:4], masks[:4], x[4:], f[4:], masks[4:], 2,
                       probe=out["probe"])  # fmt: skip
    assert again["miou"] == pytest.approx(out["miou"])
    assert feature_fidelity(bilinear, x, f) > 0.95


def test_upsample_is_eval_and_no_grad():
    up = _model().train()
    out = up.upsample(_image(), _feats(), (8, 8))
    assert not out.requires_grad and up.training


@pytest.mark.parametrize("name", ["unseen-backbones", "agnostic-layer-cost"])
def test_claims_smoke(name, tmp_path):
    record = run_claim("anyup", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    assert contract_problems(record) == []
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
