"""Tests of the CGB room: bridge identities, the analytic solver, the sampler, the JVP total
derivative, guidance, and a tiny end-to-end run of the restorer, baselines and claims."""

import numpy as np
import pytest
import torch

from iclr26.generative.cgb import (
    BrownianBridgeRestorer,
    CGBBridge,
    CGBRestorer,
    FlowMatchingRestorer,
    GeodesicGuidance,
    RectifiedFlowSchedule,
    TinyUNet,
    bridge_sample,
    degrade,
    image_patches,
    psnr,
    ssim,
    train_velocity_model,
)

torch.set_num_threads(1)


def _triple(n=3, shape=(1, 4, 4), seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn((n, *shape), generator=g, dtype=torch.float64) for _ in range(3))


@pytest.mark.parametrize("kappa", [1.0, 2.0])
def test_bridge_endpoints_and_velocity(kappa):
    x0, y, eps = _triple()
    b = CGBBridge(T0=0.6, kappa=kappa)
    assert torch.allclose(b.marginal(x0, y, eps, 0.6), b.start(y, eps))
    assert torch.allclose(b.marginal(x0, y, eps, 0.0), x0)
    assert torch.allclose(b.start(y, eps), 0.4 * y + 0.6 * eps)
    for t in (0.1, 0.35, 0.55):
        h = 1e-6
        fd = (b.marginal(x0, y, eps, t + h) - b.marginal(x0, y, eps, t - h)) / (2 * h)
        assert torch.allclose(b.velocity(x0, y, eps, t), fd, atol=1e-6)


def test_velocity_kappa1_hand_formula():
    x0, y, eps = _triple()
    b, t = CGBBridge(T0=0.8), 0.3
    expected = -x0 + (1 - 2 * t) / 0.8 * (y - x0) + eps
    assert torch.allclose(b.velocity(x0, y, eps, t), expected)


def test_action_monte_carlo_matches_closed_form():
    x0, y, _ = _triple(n=2, shape=(1, 2, 2))
    b = CGBBridge(T0=0.5)
    g = torch.Generator().manual_seed(1)
    mc = b.action(x0, y, n_mc=4096, n_t=64, generator=g)
    closed = b.action_closed_form(x0, y)
    assert torch.allclose(mc, closed, rtol=0.02)


def test_action_without_degradation_is_linear_in_T0():
    x0, _, _ = _triple(n=2)
    vals = [CGBBridge(T0=T).action_closed_form(x0, x0) for T in (0.2, 0.4, 0.6, 0.8)]
    diffs = [vals[i + 1] - vals[i] for i in range(3)]
    assert torch.allclose(diffs[0], diffs[1]) and torch.allclose(diffs[1], diffs[2])
    d = x0[0].numel()
    assert torch.allclose(vals[0], 0.2 * (d + x0.flatten(1).pow(2).sum(1)))


def test_action_has_interior_minimum_when_degraded():
    x0 = torch.zeros(1, 1, 2, 2, dtype=torch.float64)
    y = torch.full_like(x0, 3.0)
    grid = np.linspace(0.05, 0.95, 19)
    vals = [float(CGBBridge(T0=T).action_closed_form(x0, y)) for T in grid]
    k = int(np.argmin(vals))
    assert 0 < k < len(grid) - 1


def test_energy_adds_terminal_cost():
    x0, y, _ = _triple(n=2)
    b = CGBBridge(T0=0.5)
    d = x0[0].numel()
    terminal = 0.5 * 2.0 * 0.25 * (d + y.flatten(1).pow(2).sum(1))
    assert torch.allclose(b.energy(x0, y, gamma=2.0), b.action_closed_form(x0, y) + terminal)


@pytest.mark.parametrize("kappa", [1.0, 2.0])
def test_analytic_solver_inverts_the_bridge(kappa):
    x0, y, eps = _triple(n=4)
    b = CGBBridge(T0=0.7, kappa=kappa)
    t = torch.tensor([0.05, 0.3, 0.6, 0.7], dtype=torch.float64)
    x_t = b.marginal(x0, y, eps, t)
    assert torch.allclose(b.solve(x_t, y, eps - x0, t), x0, atol=1e-10)
    x = torch.randn_like(x0)
    assert torch.equal(b.solve(x, y, torch.randn_like(x0), torch.zeros(4)), x)
    ts = torch.linspace(0, 0.7, 101)
    a, bb, c = b.coefficients(ts)
    assert bool((c > 0).all()) and float(a[0]) == 0 and float(bb[0]) == 0 and float(c[0]) == 1
    if kappa == 1.0:
        assert float(c.min()) >= min(0.7, 1 - 1 / (4 * 0.7)) - 1e-12


@pytest.mark.parametrize("nfe", [1, 3, 7])
def test_sampler_with_true_velocity_follows_the_bridge(nfe):
    x0, y, eps0 = _triple(n=2)
    b = CGBBridge(T0=0.8)
    calls = []

    def oracle(x, t):
        calls.append(1)
        return eps0 - x0

    out, states = bridge_sample(oracle, y, b, nfe=nfe, eps0=eps0, return_states=True)
    assert len(calls) == nfe
    assert torch.allclose(out, x0, atol=1e-10)
    for i, s in enumerate(states):
        assert torch.allclose(s, b.marginal(x0, y, eps0, 0.8 * (1 - i / nfe)), atol=1e-10)


def test_rectified_flow_schedule_denoiser():
    x0, _, eps = _triple()
    z = RectifiedFlowSchedule.marginal(x0, eps, 0.4)
    v = RectifiedFlowSchedule.velocity(x0, eps)
    assert torch.allclose(RectifiedFlowSchedule.denoise(z, v, 0.4), x0)


def test_guidance_tangents():
    x0, y, eps = _triple(n=2)
    x0, y, eps = x0.float(), y.float(), eps.float()
    b = CGBBridge(T0=0.6)
    t = torch.tensor([0.2, 0.5])
    x_t = b.marginal(x0, y, eps, t)
    pair = b.velocity(x0, y, eps, t)
    net = TinyUNet(width=8)
    assert torch.allclose(GeodesicGuidance(net, 0.0).tangent(b, x_t, x0, y, eps, t, "mix"), pair)

    class Perfect(torch.nn.Module):  # v such that D = x - t v = x0 exactly
        def forward(self, x, tt):
            return (x - x0) / tt[:, None, None, None]

    guided = GeodesicGuidance(Perfect(), 1.0)
    assert torch.allclose(guided.tangent(b, x_t, x0, y, eps, t, "mix"), pair, atol=1e-5)
    noisy = GeodesicGuidance(net, 1.0).tangent(b, x_t, x0, y, eps, t, "mix")
    assert not torch.allclose(noisy, pair)


def test_jvp_total_derivative_matches_finite_difference():
    torch.manual_seed(0)
    model = CGBRestorer(TinyUNet(width=8))
    x0, y, eps = (v.float() for v in _triple(n=2, shape=(1, 8, 8)))
    T0 = torch.tensor([0.5, 0.8])
    t = torch.tensor([0.3, 0.6])
    b = CGBBridge.batched(T0[:, None, None, None], 1.0)
    x_t = b.marginal(x0, y, eps, t)
    u = b.velocity(x0, y, eps, t)
    with torch.no_grad():
        f, dfdt = model.total_derivative(x_t, y, t, T0, u)
        h = 1e-3
        back = model.consistency_fn(b.marginal(x0, y, eps, t - h), y, t - h, T0)
        fd = (f - back) / h
    assert torch.allclose(dfdt, fd, atol=1e-2 * max(1.0, float(fd.abs().max())))


def test_restorer_starts_as_the_prior_and_sees_y_after_training():
    net = TinyUNet(width=8)
    x = torch.randn(2, 1, 8, 8)
    t = torch.tensor([0.3, 0.4])
    y = torch.randn(2, 1, 8, 8)
    assert torch.equal(net(x, t), net(x, t, y, torch.tensor([0.5, 0.6])))  # zero-init branches


@pytest.fixture(scope="module")
def tiny_data():
    clean = image_patches(n=64, size=8, seed=0)
    test = image_patches(("camera",), n=8, size=8, seed=1)
    return clean, test


def test_patches_and_degradations(tiny_data):
    clean, _ = tiny_data
    assert clean.shape == (64, 8, 8) and clean.dtype == np.float32
    assert 0 <= clean.min() and clean.max() <= 1
    sr = degrade(clean, "sr4")
    const = np.full((1, 8, 8), 0.3, dtype=np.float32)
    assert np.allclose(degrade(const, "sr4"), 0.3, atol=1e-6)
    assert sr.shape == clean.shape
    noisy = degrade(clean, "denoise", sigma=0.1, seed=0)
    assert abs(float((noisy - clean).std()) - 0.1) < 0.01
    assert psnr(np.clip(clean + 0.1, 0, 1), clean) < psnr(np.clip(clean + 0.01, 0, 1), clean)
    assert ssim(clean, clean) == pytest.approx(1.0)


def _consistency_gap(model, clean):
    """Mean ||F(x_t, t) - F(x_t', t')||^2 between adjacent times of fixed bridge paths."""
    g = torch.Generator().manual_seed(5)
    x0 = 2 * torch.from_numpy(clean[:32, None]) - 1
    y = x0 + 0.4 * torch.randn(x0.shape, generator=g)
    eps = torch.randn(x0.shape, generator=g)
    T0 = torch.full((32,), 0.6)
    b = CGBBridge(0.6)
    t = 0.6 * torch.rand(32, generator=g).clamp_min(0.1)
    with torch.no_grad():
        f = model.consistency_fn(b.marginal(x0, y, eps, t), y, t, T0)
        f_prev = model.consistency_fn(b.marginal(x0, y, eps, t - 0.05), y, t - 0.05, T0)
    return float((f - f_prev).pow(2).mean())


@pytest.mark.parametrize("objective", ["continuous", "discrete"])
def test_tiny_end_to_end(tiny_data, objective):
    clean, test = tiny_data
    vm = train_velocity_model(clean, steps=5, batch_size=8, width=8)
    model = CGBRestorer(vm, objective=objective, tangent="pair", tangent_norm=False, c=0.05)
    model.size, model.task = 8, "denoise"
    before = _consistency_gap(model, clean)
    model.fit(clean, degrade="denoise", steps=30, lr=2e-3, batch_size=16)
    assert _consistency_gap(model, clean) < before
    y = degrade(test, "denoise", seed=2)
    out = model.restore(y, nfe=1)
    assert out.shape == test.shape and np.isfinite(out).all()
    assert not np.allclose(out, model.restore(y, nfe=3))
    best = model.tune_T0(test, grid=[0.3, 0.6])
    assert best in (0.3, 0.6) and model.T0 == best


def test_baselines_end_to_end(tiny_data):
    clean, test = tiny_data
    y = degrade(test, "sr4")
    b1 = FlowMatchingRestorer(width=8).fit(clean, steps=3, batch_size=8)
    b2 = BrownianBridgeRestorer(width=8).fit(clean, steps=3, batch_size=8)
    assert b1.restore(y, nfe=2).shape == test.shape
    assert b2.restore(y, nfe=2).shape == test.shape


def test_restore_rejects_bad_input(tiny_data):
    clean, test = tiny_data
    model = CGBRestorer(width=8)
    with pytest.raises(RuntimeError):
        model.restore(test)
    model.fit(clean, steps=1, batch_size=4)
    with pytest.raises(ValueError, match="T0"):
        model.restore(test, T0=1.0)
    with pytest.raises(ValueError, match="y"):
        model.restore(image_patches(n=2, size=16))
    with pytest.raises(ValueError, match="y"):
        model.restore(test * 10)


def test_claims_smoke(tmp_path):
    from iclr26.claims import claims_for, contract_problems, run_claim

    names = [c.name for c in claims_for("cgb")]
    assert names
    for name in names:
        rec = run_claim("cgb", name, scale="smoke", out_dir=tmp_path)
        assert rec["verdict"] != "error", rec.get("traceback")
        assert not contract_problems(rec), contract_problems(rec)
        _assert_figures(rec, tmp_path)


def _assert_figures(record, out_dir):
    """Every claim saves at least one figure, and each PNG opens."""
    import matplotlib.image as mpimg

    assert record["figures"], f"{record['claim']} saved no figure"
    for rel in record["figures"]:
        image = mpimg.imread(out_dir / rel)
        assert image.ndim == 3 and min(image.shape[:2]) > 50


def test_cached_weights_load_onto_the_cpu(tmp_path, monkeypatch):
    """The quick/full cache is read with ``map_location="cpu"``, so weights stored by a GPU run
    load on a machine without one; a second call restores the models it saved."""
    from iclr26.generative.cgb import claims

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    smoke = claims.settings("smoke")
    monkeypatch.setattr(claims, "settings", lambda scale: dict(smoke))
    claims.trained.cache_clear()
    first = claims.trained("quick", 0, "cpu")  # trains and writes the cache
    assert list((tmp_path / "cgb").glob("models-*.pt"))
    seen = []
    real_load = torch.load

    def load(*args, **kwargs):
        seen.append(kwargs.get("map_location"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", load)
    claims.trained.cache_clear()
    try:
        second = claims.trained("quick", 0, "cpu")
    finally:
        claims.trained.cache_clear()
    assert seen == ["cpu"]
    a, b = first["models"]["sr4"]["cgb"], second["models"]["sr4"]["cgb"]
    for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q)
