import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.three_d.gs_raster import orbit_cameras
from iclr26.three_d.gs_watermark import (
    AnchorGS,
    CompMarkGS,
    HACLikeCompressor,
    MessageDecoder,
    QuantizationDistortionLayer,
    haar_dwt,
    haar_idwt,
    hsv_loss,
    hue_masks,
    message_bits,
    pretrain_decoder,
    ssim,
    textured_scene,
)


@pytest.fixture(scope="module")
def tiny():
    views, cams, pts = textured_scene(4, 16, tex_res=8, seed=0)
    gs = AnchorGS(pts, feature_dim=8, k=2, voxel=0.3)
    return views, cams, pts, gs


def test_haar_constant_and_inverse():
    x = torch.rand(3, 8, 6, dtype=torch.float64)
    assert torch.allclose(haar_idwt(*haar_dwt(x)), x)
    ll, lh, hl, hh = haar_dwt(torch.full((4, 4), 0.5))
    assert torch.allclose(ll, torch.full((2, 2), 1.0))  # 4 * 0.5 / 2
    assert lh.abs().max() == 0 and hl.abs().max() == 0 and hh.abs().max() == 0
    # orthonormal: energy preserved
    y = torch.randn(6, 6, dtype=torch.float64)
    assert torch.isclose(sum((b**2).sum() for b in haar_dwt(y)), (y**2).sum())


def test_qdl_eval_identity_and_noise_bounds():
    torch.manual_seed(0)
    q = QuantizationDistortionLayer(5, q0=0.2)
    f = torch.randn(2000, 5)
    q.eval()
    assert torch.equal(q(f), f)
    q.train()
    step = q.step(f)
    assert (step >= 0.05 - 1e-7).all() and (step < 0.4).all()
    with torch.no_grad():
        noise = q(f) - f
        step = step.detach()
    assert (noise.abs() <= step / 2 + 1e-6).all()
    assert abs(float((noise / step).mean())) < 0.02
    u = QuantizationDistortionLayer(5, q0=0.3, mode="uniform")
    assert torch.allclose(u.step(f), torch.full_like(f, 0.3))


def test_compressor_error_and_rate():
    f = torch.randn(300, 8)
    for d in (0.1, 0.4):
        c = HACLikeCompressor(d)
        assert (c(f) - f).abs().max() <= d / 2 + 1e-6
    assert HACLikeCompressor(0.4).rate_bits(f) < HACLikeCompressor(0.1).rate_bits(f)


def test_embedding_bounded_and_decoder_frozen(tiny):
    views, cams, _, gs = tiny
    dec = MessageDecoder(8)
    dec.eval()
    for p in dec.parameters():
        p.requires_grad_(False)
    before = [p.clone() for p in dec.parameters()]
    wm = CompMarkGS(gs, dec, message_bits(8), qdl=(0.2, "learned"))
    with torch.no_grad():
        wm.embedding.fill_(50.0)
    assert (wm.watermarked_features() - gs.feature).abs().max() <= 1.0
    with torch.no_grad():
        wm.embedding.zero_()
    wm.fit(views[:3], cams[:3], steps=2)
    assert all(p.grad is None for p in dec.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, dec.parameters(), strict=True))
    assert wm.embedding.abs().sum() > 0  # the message loss reached f'
    acc = wm.bit_accuracy(cams[3:], HACLikeCompressor(0.2))
    assert 0.0 <= acc <= 1.0


def test_message_length_mismatch(tiny):
    gs = tiny[3]
    with pytest.raises(ValueError, match="decoder was trained for 8"):
        CompMarkGS(gs, MessageDecoder(8), message_bits(16))


def test_anchor_gaussians_shape_and_pruning(tiny):
    _, cams, pts, gs = tiny
    g = gs.gaussians(cams[0])
    n = g["means"].shape[0]
    assert 0 < n <= gs.n_anchors * gs.k
    assert (g["opacities"] > 0).all() and (g["scales"] > 0).all()
    assert torch.allclose(g["quats"].norm(dim=1), torch.ones(n), atol=1e-5)
    img = gs.render(cams[0])
    assert img.shape == (16, 16, 3) and torch.isfinite(img).all()
    # anchors are voxel centres: distinct after voxelisation
    assert torch.unique(torch.round(gs.anchor.detach() / 0.3), dim=0).shape[0] == gs.n_anchors


def test_hue_masks_match_skimage():
    from skimage.color import rgb2hsv

    x = torch.rand(12, 12, 3, dtype=torch.float64)
    hsv = rgb2hsv(x.numpy())
    h, s, v = hsv[..., 0] * 360, hsv[..., 1], hsv[..., 2]
    ok = (s >= 0.2) & (v >= 0.2)
    ref = np.stack(
        [((h <= 60) | (h >= 300)) & ok, (h > 60) & (h <= 180) & ok, (h > 180) & (h < 300) & ok]
    )
    m = hue_masks(x).numpy()
    assert (m == ref).mean() > 0.99  # boundary ties only
    assert not (m[0] & m[1]).any() and not (m[1] & m[2]).any()
    assert float(hsv_loss(x, x)) == 0.0


def test_ssim_identity():
    x = torch.rand(16, 16, 3)
    assert torch.isclose(ssim(x, x), torch.tensor(1.0))
    assert ssim(x, 1 - x) < 0.5


def test_pretrained_decoder_is_frozen():
    dec = pretrain_decoder(4, steps=2, size=8, batch=2)
    assert not dec.training and all(not p.requires_grad for p in dec.parameters())
    assert dec(torch.rand(2, 8, 8, 3)).shape == (2, 4)


def test_camera_facing_away_renders_background(tiny):
    _, _, _, gs = tiny
    cam = orbit_cameras(1, radius=3.0, target=(0.0, 0.0, 30.0), width=16, height=16)[0]
    assert torch.isfinite(gs.render(cam)).all()


@pytest.mark.parametrize("name", ["survives-compression", "quality-preserved"])
def test_claims_smoke(name, tmp_path):
    r = run_claim("gs_watermark", name, "smoke", out_dir=tmp_path)
    assert r["verdict"] in ("reproduced", "not reproduced"), r.get("traceback")
    assert r["baseline"] and r["metrics"]


def test_frequency_error_zero_on_identical_and_high_pass_linear():
    from iclr26.three_d.gs_watermark import frequency_error, high_pass

    x = torch.rand(16, 16, 3, dtype=torch.float64)
    assert frequency_error(x, x).abs().max() < 1e-9
    assert frequency_error(x, torch.rand(16, 16, 3, dtype=torch.float64)).mean() > 0.1
    a, b = torch.rand(16, 16, dtype=torch.float64), torch.rand(16, 16, dtype=torch.float64)
    assert torch.allclose(high_pass(a + 2 * b), high_pass(a) + 2 * high_pass(b))
