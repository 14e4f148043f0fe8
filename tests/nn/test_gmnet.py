import numpy as np
import pytest
import torch
import torch.fx
import torch.nn.functional as F

from iclr26.claims import run_claim
from iclr26.nn.gmnet import (
    GmBlock,
    GmNet,
    GmNetTiny,
    band_limited_signals,
    convert_for_inference,
    gate_spectrum_demo,
    gmnet_s3,
    high_freq_energy_fraction,
    radial_highpass,
    radial_lowpass,
    texture_patches,
    train_classifier,
)


def test_block_shape_and_self_gate_by_hand():
    torch.manual_seed(0)
    block = GmBlock(8, mlp_ratio=2, kernel_size=5, act="relu6", gate="self").eval()
    x = torch.randn(2, 8, 6, 6)
    captured = {}
    block.f1.register_forward_hook(lambda m, i, o: captured.update(u=o))
    block.g.register_forward_hook(lambda m, i, o: captured.update(g_in=i[0]))
    out = block(x)
    assert out.shape == x.shape
    u = captured["u"]
    torch.testing.assert_close(captured["g_in"], F.relu6(u) * u)


def test_glu_and_none_gates():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 5, 5)
    glu = GmBlock(4, 2, 3, act="relu", gate="glu").eval()
    h = glu.dwconv(x)
    torch.testing.assert_close(glu.mix(h), F.relu(glu.f1(h)) * glu.f2(h))
    none = GmBlock(4, 2, 3, act="relu", gate="none").eval()
    h = none.dwconv(x)
    torch.testing.assert_close(none.mix(h), F.relu(none.f1(h)))


def test_layer_scale_makes_block_near_identity():
    torch.manual_seed(0)
    x = torch.randn(2, 16, 8, 8)
    out = GmBlock(16).eval()(x)
    assert (out - x).abs().max() < 1e-4 * x.abs().max()


def test_s3_structure_and_parameter_count():
    model = gmnet_s3(num_classes=1000)
    assert model.widths == (48, 96, 192, 384)
    assert sum(isinstance(m, GmBlock) for m in model.modules()) == 17
    n = sum(p.numel() for p in model.parameters())
    assert abs(n - 7.8e6) / 7.8e6 < 0.10


def test_convert_for_inference_same_logits():
    torch.manual_seed(0)
    model = GmNetTiny(num_classes=5, in_chans=1, stem_stride=2)
    for m in model.modules():  # non-trivial BN statistics and layer scale
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
        if isinstance(m, GmBlock):
            m.gamma.data.fill_(0.5)
    model.eval()
    x = torch.randn(3, 1, 32, 32)
    converted = convert_for_inference(model)
    assert not any(
        isinstance(m, torch.nn.Conv2d) and m.kernel_size == (1, 1) for m in converted.modules()
    )
    torch.testing.assert_close(converted(x), model(x), atol=1e-5, rtol=1e-4)


def test_radial_filters_partition_and_identity():
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    torch.testing.assert_close(radial_highpass(x, 0), x)
    torch.testing.assert_close(radial_highpass(x, 4) + radial_lowpass(x, 4), x)
    arr = np.random.default_rng(0).normal(size=(16, 16))
    assert isinstance(radial_highpass(arr, 3), np.ndarray)
    # a constant image has only the DC term: the high-pass removes it entirely
    assert radial_highpass(torch.ones(8, 8, dtype=torch.float64), 1).abs().max() < 1e-12


def test_square_of_band_limited_signal_has_no_energy_beyond_twice_band():
    x = band_limited_signals(8, 2048, band=0.05, seed=1)
    assert high_freq_energy_fraction(x, 0.05, window=None) < 1e-20
    assert high_freq_energy_fraction(x * x, 0.10, window=None) < 1e-10
    assert high_freq_energy_fraction(x * x, 0.05, window=None) > 1e-3
    # a kink (ReLU) puts energy far beyond the band; a smooth gate much less at 10x band
    assert gate_spectrum_demo(F.relu, beyond=10) > 100 * gate_spectrum_demo(F.gelu, beyond=10)


def test_high_freq_fraction_2d_checkerboard():
    board = torch.tensor([[(-1.0) ** (i + j) for j in range(16)] for i in range(16)])
    assert high_freq_energy_fraction(board, 0.9, ndim=2, window=None) > 0.999
    assert high_freq_energy_fraction(torch.ones(16, 16), 0.1, ndim=2, window=None) < 1e-12


def test_texture_patches_split_and_standardised():
    x_tr, y_tr, x_te, y_te = texture_patches(64, 32, seed=0)
    assert x_tr.shape == (64, 1, 32, 32) and x_te.shape == (32, 1, 32, 32)
    assert set(y_tr.tolist()) == set(range(8))
    assert torch.allclose(x_tr.mean(dim=(1, 2, 3)), torch.zeros(64), atol=1e-4)
    again = texture_patches(64, 32, seed=0)
    assert torch.equal(again[0], x_tr)


def test_one_epoch_lowers_loss():
    x_tr, y_tr, _, _ = texture_patches(256, 16, seed=0)
    torch.manual_seed(0)
    model = GmNetTiny(num_classes=8, in_chans=1, stem_stride=2)
    log = train_classifier(model, x_tr, y_tr, epochs=2, batch_size=32, seed=0)
    assert np.mean(log.losses[-3:]) < log.losses[0]


def test_bad_input():
    with pytest.raises(ValueError):
        GmBlock(8, gate="bogus")
    with pytest.raises(ValueError):
        GmBlock(8, act="swishy")
    with pytest.raises(ValueError):
        GmBlock(8)(torch.randn(8, 4, 4))
    with pytest.raises(ValueError):
        radial_highpass(torch.randn(4, 4), -1)
    with pytest.raises(TypeError):
        high_freq_energy_fraction([1.0, 2.0], 0.1)


@pytest.mark.parametrize("name", ["frequency-mechanism", "gate-accuracy", "feature-spectrum"])
def test_claims_smoke(name, tmp_path):
    record = run_claim("gmnet", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"]


def test_fx_symbolic_trace_gives_the_same_outputs():
    # timm's feature extraction traces models with torch.fx; the input check stays in the
    # graph as a leaf call, so the traced module still refuses bad input.
    torch.manual_seed(0)
    model = GmNetTiny(num_classes=5, in_chans=1, drop_path_rate=0.2, gate="glu").eval()
    traced = torch.fx.symbolic_trace(model)
    x = torch.randn(2, 1, 32, 32)
    assert torch.equal(traced(x), model(x))
    with pytest.raises(ValueError, match="x contains NaN"):
        traced(torch.full((1, 1, 32, 32), float("nan")))
    # Train mode (stochastic depth active): the same draws give the same outputs.
    model.train()
    traced = torch.fx.symbolic_trace(model)
    torch.manual_seed(3)
    a = traced(x)
    torch.manual_seed(3)
    assert torch.equal(a, model(x))
    block = GmBlock(8).eval()
    feats = torch.randn(1, 8, 6, 6)
    assert torch.equal(torch.fx.symbolic_trace(block)(feats), block(feats))


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="x must have 4 dimension"):
        GmNetTiny()(torch.randn(3, 32, 32))
    with pytest.raises(ValueError, match="x is empty"):
        GmNetTiny()(torch.randn(0, 3, 32, 32))
    with pytest.raises(ValueError, match="drop_path_rate"):
        GmNetTiny(drop_path_rate=float("nan"))
    with pytest.raises(ValueError, match="widths"):
        GmNet(widths=(), depths=())
    with pytest.raises(ValueError, match="layer_scale"):
        GmBlock(8, layer_scale=-1.0)
