"""Tests of the shared tiny vision stack: protocol, backbones, cache, HF adapter, augment,
metrics."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.metrics import vision as M
from iclr26.models import vision as MV
from iclr26.models.vision import protocol as P
from iclr26.vision import augment as A


def _tiny_vit(**kw):
    torch.manual_seed(0)
    args = dict(img_size=16, patch=4, dim=32, depth=3, heads=4)
    args.update(kw)
    return MV.TinyViT(**args).eval()


def test_tinyvit_meets_the_protocol_and_shapes():
    model = _tiny_vit(num_classes=5)
    MV.check_vit(model)
    x = torch.rand(2, 3, 16, 16)
    assert model.forward_features(x).shape == (2, 17, 32)
    assert model(x).shape == (2, 5)
    assert MV.feature_map(model, x).shape == (2, 32, 4, 4)
    assert MV.patch_tokens(model, x).shape == (2, 16, 32)
    reg = _tiny_vit(n_reg=2)
    assert reg.num_prefix_tokens == 3 and reg.forward_features(x).shape == (2, 19, 32)
    assert reg(x).shape == (2, 32)


def test_protocol_insert_tokens_and_patch_attention():
    """IVPT-style extra tokens before block 2 and a SMoPE-style replaced attention forward,
    using only the protocol names."""
    model = _tiny_vit()
    x = torch.rand(2, 3, 16, 16)
    extra = torch.randn(1, 3, model.embed_dim)
    calls = []
    attn = model.blocks[1].attn

    def prefixed_forward(tokens):
        q, k, v = P.attention_qkv(attn, tokens)
        prefix_k = torch.zeros(tokens.shape[0], attn.num_heads, 2, q.shape[-1])
        k, v = torch.cat([prefix_k, k], 2), torch.cat([prefix_k, v], 2)
        out = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -1) @ v
        calls.append(tokens.shape)
        return attn.proj(out.transpose(1, 2).reshape(tokens.shape))

    attn.forward = prefixed_forward
    tokens = MV.embed_tokens(model, x)
    for i, block in enumerate(model.blocks):
        if i == 2:
            tokens = torch.cat([tokens, extra.expand(2, -1, -1)], 1)
        tokens = block(tokens)
    tokens = model.norm(tokens)
    assert tokens.shape == (2, 1 + 16 + 3, 32)
    assert calls == [torch.Size([2, 17, 32])]


def test_patched_attention_equal_to_original_is_a_no_op():
    model = _tiny_vit()
    x = torch.rand(2, 3, 16, 16)
    with torch.no_grad():
        before = model(x)
        attn = model.blocks[0].attn

        def same(tokens):
            q, k, v = P.attention_qkv(attn, tokens)
            out = torch.softmax(q @ k.transpose(-2, -1) * attn.scale, -1) @ v
            return attn.proj(out.transpose(1, 2).reshape(tokens.shape))

        attn.forward = same
        torch.testing.assert_close(model(x), before, atol=1e-5, rtol=1e-5)


def test_missing_protocol_attribute_is_named():
    class Half(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Identity()

    with pytest.raises(TypeError, match="pos_embed"):
        MV.check_vit(Half(), "backbone")


def test_pos_embed_resampled_for_other_image_sizes():
    model = _tiny_vit()
    out = model.forward_features(torch.rand(1, 3, 24, 24))
    assert out.shape == (1, 1 + 36, 32)


def test_tinyconvnet_strides():
    x = torch.rand(2, 3, 32, 32)
    for stride in (1, 2, 4, 8):
        net = MV.TinyConvNet(width=8, out_dim=16, stride=stride).eval()
        assert net.forward_features(x).shape == (2, 16, 32 // stride, 32 // stride)
        assert net(x).shape == (2, 16)
    with pytest.raises(ValueError, match="stride"):
        MV.TinyConvNet(stride=3)


def test_hf_vit_and_dinov2_adapters_match_their_source():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    x = torch.rand(2, 3, 32, 32)
    vit = transformers.ViTModel(
        transformers.ViTConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            image_size=32, patch_size=8,
        ),
        add_pooling_layer=False,
    ).eval()  # fmt: skip
    dino = transformers.Dinov2Model(
        transformers.Dinov2Config(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
            image_size=32, patch_size=8, layerscale_value=0.5,
        )
    ).eval()  # fmt: skip
    for source in (vit, dino):
        adapter = MV.HFViTAdapter(source).eval()
        MV.check_vit(adapter)
        with torch.no_grad():
            ref = source(pixel_values=x).last_hidden_state
            torch.testing.assert_close(adapter.forward_features(x), ref, atol=1e-5, rtol=1e-5)
            assert adapter(x).shape == (2, 32)
    with pytest.raises(TypeError, match="model"):
        MV.HFViTAdapter(nn.Linear(2, 2))


def test_pretrained_tiny_test_recipe_caches_and_reloads_bit_identically(tmp_path):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    first = MV.pretrained_tiny("tinycnn_s8_sup", recipe="test", cache_dir=tmp_path, threads=1)
    assert torch.equal(torch.get_rng_state(), state)  # training leaves the caller's stream alone
    path = MV.cache_path("tinycnn_s8_sup", "test", tmp_path)
    assert (
        path.exists()
        and "torch" in path.name
        and MV.recipe_hash(MV.get_recipe("tinycnn_s8_sup", "test")) in path.name
    )
    assert not first.training and not any(p.requires_grad for p in first.parameters())
    assert len(first.pretrained_meta["losses"]) == 20
    second = MV.pretrained_tiny("tinycnn_s8_sup", recipe="test", cache_dir=tmp_path)
    for (ka, a), (kb, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert ka == kb and torch.equal(a, b)
    x = torch.rand(2, 3, 64, 64)
    assert torch.equal(first(x), second(x))


def test_recipes_keys_and_hashes():
    assert set(MV.RECIPES) == {
        "tinyvit_p8_ssl",
        "tinyvit_p8_sup",
        "tinyvit_p4_sup",
        "tinycnn_s8_sup",
        "randconv_s8",
    }
    hashes = {MV.recipe_hash(MV.get_recipe(n, r)) for n in MV.RECIPES for r in ("default", "test")}
    assert len(hashes) == 10
    with pytest.raises(ValueError, match="name"):
        MV.pretrained_tiny("resnet50")
    with pytest.raises(ValueError, match="recipe"):
        MV.get_recipe("randconv_s8", "huge")


def test_random_recipe_needs_no_training(tmp_path):
    net = MV.pretrained_tiny("randconv_s8", cache_dir=tmp_path)
    assert net.embed_dim == 96 and net.forward_features(torch.rand(1, 3, 32, 32)).shape == (
        1,
        96,
        4,
        4,
    )


def test_nt_xent_analytic_value():
    z = torch.eye(4)
    expected = -np.log(np.exp(5.0) / (np.exp(5.0) + 6 * np.exp(0.0)))
    assert abs(float(MV.nt_xent(z, z, 0.2)) - expected) < 1e-5


# ------------------------------------------------------------------ augment


def test_augmentations_keep_shape_range_and_are_seeded():
    x = torch.rand(6, 3, 16, 16)
    for fn in (
        lambda g: A.random_resized_crop(x, 12, generator=g),
        lambda g: A.random_affine(x, generator=g)[0],
        lambda g: A.random_hflip(x, generator=g),
        lambda g: A.color_jitter(x, generator=g),
        lambda g: A.random_grayscale(x, p=0.5, generator=g),
        lambda g: A.gaussian_blur(x, p=1.0, generator=g),
        lambda g: A.simclr_augment(x, generator=g),
    ):
        a = fn(torch.Generator().manual_seed(1))
        b = fn(torch.Generator().manual_seed(1))
        assert torch.equal(a, b) and a.min() >= 0 and a.max() <= 1 + 1e-6


def test_crop_matrix_warps_maps_like_the_images():
    x = torch.rand(3, 2, 16, 16)
    crops, theta = A.random_resized_crop(
        x, generator=torch.Generator().manual_seed(0), return_matrix=True
    )
    torch.testing.assert_close(A.warp(x, theta), crops)
    full = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]]).expand(3, -1, -1)
    torch.testing.assert_close(A.warp(x, full), x, atol=1e-5, rtol=1e-5)


def test_jitter_identity_and_flip():
    x = torch.rand(4, 3, 8, 8)
    same = A.color_jitter(x, 0.0, 0.0, 0.0, 0.0, p=1.0)
    torch.testing.assert_close(same, x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(A.random_hflip(x, p=1.0), x.flip(-1))
    with pytest.raises(ValueError, match="p"):
        A.random_hflip(x, p=2.0)
    with pytest.raises(ValueError, match="x"):
        A.simclr_augment(torch.rand(3, 8, 8))


# ------------------------------------------------------------------ metrics


def test_segmentation_metrics_perfect_and_permutation_invariant():
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 4, (3, 12, 12))
    perm = np.array([3, 0, 2, 1])
    relabelled = perm[gt]
    assert M.fg_ari(gt, gt) == pytest.approx(1.0)
    assert M.fg_ari(relabelled, gt) == pytest.approx(1.0)
    assert M.mbo(gt, gt) == pytest.approx(1.0)
    assert M.mbo(relabelled, gt) == pytest.approx(1.0)
    nmi, ari = M.part_nmi_ari(relabelled, gt)
    assert nmi == pytest.approx(1.0) and ari == pytest.approx(1.0)
    assert M.miou(gt, gt, 4) == pytest.approx(1.0)
    noisy = np.where(rng.random(gt.shape) < 0.3, rng.integers(0, 4, gt.shape), gt)
    assert M.fg_ari(noisy, gt) < 1.0 and M.mbo(noisy, gt) < 1.0 and M.miou(noisy, gt, 4) < 1.0
    video = gt[None]
    assert M.fg_ari(perm[video], video, video=True) == pytest.approx(1.0)


def test_fg_ari_ignores_background_pixels():
    gt = np.zeros((1, 8, 8), int)
    gt[0, :4] = 1
    gt[0, 4:, :4] = 2
    pred = gt.copy()
    pred[0, 4:, 4:] = 1  # background pixels given an object's id: not counted
    assert M.fg_ari(pred, gt) == pytest.approx(1.0)


def test_linear_probe_and_frechet():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 40)
    Z = rng.normal(size=(120, 5)) + 5 * np.eye(3)[y].repeat(2, 1)[:, :5]
    assert M.linear_probe(Z, y, Z, y) == pytest.approx(1.0)
    a = rng.normal(size=(500, 3))
    assert M.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    assert M.frechet_distance(a, a + 2.0) == pytest.approx(12.0, rel=0.05)
    with pytest.raises(ValueError, match="Ztr"):
        M.linear_probe(Z[:, :0], y, Z, y)
    with pytest.raises(ValueError, match="pred"):
        M.fg_ari(np.zeros((1, 4, 4), int), np.zeros((1, 4, 5), int))
    with pytest.raises(ValueError, match="feats_a"):
        M.frechet_distance(np.full((4, 2), np.nan), a[:4, :2])


def test_pretrained_tiny_builds_under_the_cache_lock(tmp_path, record_build_lock):
    from iclr26.models.vision import pretrained as P

    taken = record_build_lock(P)
    MV.pretrained_tiny("randconv_s8", recipe="test", cache_dir=tmp_path, threads=1)
    assert taken == [MV.cache_path("randconv_s8", "test", tmp_path)]
    MV.pretrained_tiny("randconv_s8", recipe="test", cache_dir=tmp_path, threads=1)
    assert len(taken) == 1


def test_conv_stem_keeps_the_patch_grid_and_protocol():
    x = torch.rand(2, 3, 16, 16)
    conv = _tiny_vit(stem="conv")
    MV.check_vit(conv)
    assert conv.forward_features(x).shape == (2, 17, 32)
    assert MV.feature_map(conv, x).shape == (2, 32, 4, 4)
    stem = conv.patch_embed.proj
    strides = [m.stride for m in stem if isinstance(m, nn.Conv2d)]
    assert strides == [(2, 2), (2, 2), (1, 1)]  # two stride-2 3x3 convs (patch 4), then 1x1
    assert sum(isinstance(m, nn.BatchNorm2d) for m in stem) == 2
    # each output token sees only its own 4x4 patch plus a 3-pixel border, not the far image
    conv.eval()
    base = conv.patch_embed(x)
    y = x.clone()
    y[:, :, 12:, 12:] = 0.0  # change the bottom-right patch only
    diff = (conv.patch_embed(y) - base).abs().sum(-1)[0].reshape(4, 4)
    assert diff[3, 3] > 0 and diff[0, 0] == 0 and diff[0, 3] == 0
    with pytest.raises(ValueError, match="power of 2"):
        MV.TinyViT(img_size=24, patch=3, dim=32, depth=1, heads=4, stem="conv")
    with pytest.raises(ValueError, match="stem"):
        MV.TinyViT(img_size=16, patch=4, dim=32, depth=1, heads=4, stem="convnext")
