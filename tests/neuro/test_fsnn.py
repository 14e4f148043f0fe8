import numpy as np
import pytest
import torch
from scipy.special import erfcx

from iclr26.claims import run_claim
from iclr26.neuro.fsnn import (
    FractionalIF,
    FractionalLIF,
    SNNWrapper,
    delayed_cue,
    gl_coefficients,
    saccade_events,
    snn_energy,
    solve,
    spike,
)


def test_gl_coefficients():
    c = gl_coefficients(0.4, 2000).double()
    assert c[0] == 1 and abs(c[1] + 0.4) < 1e-7
    assert (c[1:] < 0).all()
    partial = c.cumsum(0)
    assert abs(partial[-1]) < 0.05 and abs(partial[-1]) < abs(partial[10])
    exact = gl_coefficients(1.0, 5)
    assert exact.tolist() == [1.0, -1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("reset", ["rhs", "state"])
def test_alpha_one_is_euler_lif_exactly(reset):
    torch.manual_seed(0)
    currents = torch.rand(50, 3, 4) * 1.5
    neuron = FractionalLIF(alpha=1.0, tau=2.0, threshold=1.0, reset=reset)
    spikes, membrane = neuron(currents, return_membrane=True)
    v = torch.zeros(3, 4)
    for t in range(50):
        drive = (currents[t] - v) / 2.0
        s = ((v + drive) - 1.0 >= 0).float()
        v = v + (drive - s * 1.0 / 2.0) if reset == "rhs" else (v + drive) - 1.0 * s
        assert torch.equal(spikes[t], s)
        assert torch.equal(membrane[t], v)
    assert spikes.sum() > 0


@pytest.mark.parametrize("method", ["gl", "l1", "pred"])
def test_solver_matches_mittag_leffler(method):
    lam, h, steps = 1.0, 0.01, 500
    v = solve(lambda v, t: -lam * v, torch.tensor(1.0), 0.5, h, steps, method).numpy()
    exact = erfcx(lam * np.sqrt(np.arange(steps + 1) * h))
    assert np.abs(v - exact).max() < 2e-2


def test_memory_truncation():
    torch.manual_seed(1)
    currents = torch.rand(30, 2, 5) * 2
    full = FractionalLIF(alpha=1.0)(currents, return_membrane=True)[1]
    short = FractionalLIF(alpha=1.0, memory=1)(currents, return_membrane=True)[1]
    assert torch.equal(full, short)
    full = FractionalLIF(alpha=0.5)(currents, return_membrane=True)[1]
    short = FractionalLIF(alpha=0.5, memory=3)(currents, return_membrane=True)[1]
    assert not torch.allclose(full, short)


def test_fractional_memory_decays_slower():
    # After a pulse, the fractional membrane relaxes with a power-law tail (above LIF's).
    currents = torch.zeros(40, 1, 1)
    currents[0] = 1.0
    v_frac = FractionalLIF(alpha=0.5, threshold=10.0)(currents, return_membrane=True)[1]
    v_lif = FractionalLIF(alpha=1.0, threshold=10.0)(currents, return_membrane=True)[1]
    assert v_frac[-1].item() > v_lif[-1].item() > 0


def test_gradients_reach_alpha_and_surrogate():
    torch.manual_seed(0)
    neuron = FractionalLIF(alpha=0.5, learn_alpha=True, learn_tau=True)
    neuron(torch.rand(12, 4, 6) * 2).sum().backward()
    assert torch.isfinite(neuron.rho.grad) and neuron.rho.grad != 0
    assert torch.isfinite(neuron.tau.grad)
    x = torch.tensor([-0.05, 0.0, 3.0], requires_grad=True)
    spike(x).sum().backward()
    assert x.grad[0] > 0.5 and x.grad[2] < x.grad[0]
    y = torch.tensor([0.01], requires_grad=True)
    spike(y, "sigmoid").sum().backward()
    assert y.grad[0] > 0.5


def test_shapes_reset_and_bad_input():
    neuron = FractionalIF(alpha=0.7)
    out = neuron(torch.rand(5, 2, 3, 4))
    assert out.shape == (5, 2, 3, 4) and set(out.unique().tolist()) <= {0.0, 1.0}
    neuron.reset_state()
    assert neuron.last_membrane is None
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError):
            FractionalLIF(alpha=bad)
    with pytest.raises(ValueError):
        FractionalLIF(method="euler")
    with pytest.raises(ValueError):
        FractionalLIF(alpha=0.5, memory=0)
    with pytest.raises(ValueError):
        neuron(torch.rand(5))


def test_wrapper_alpha_one_and_energy():
    torch.manual_seed(0)
    base = torch.nn.Sequential(
        torch.nn.Linear(6, 8), FractionalLIF(alpha=0.5), torch.nn.Linear(8, 3)
    )
    net = SNNWrapper(base, alpha=1.0)
    assert net.neurons()[0].alpha.item() == 1.0
    x = torch.rand(7, 4, 6) * 3
    assert net(x).shape == (4, 3)
    stats = snn_energy(net, x)
    spikes = net.neurons()[0].last_spikes
    assert stats["mac"] == 7 * 6 * 8
    assert stats["sop"] == pytest.approx(float(spikes.sum()) / 4 * 3)
    assert stats["energy_pj"] == pytest.approx(0.9 * stats["sop"] + 4.6 * stats["mac"])
    with pytest.raises(ValueError):
        SNNWrapper(base, per_layer_alpha=[0.5, 0.5])


def test_event_generators():
    images = np.zeros((2, 8, 8))
    images[:, 2:6, 2:6] = 16
    ev = saccade_events(images, T=16, noise_rate=0.0, seed=0)
    assert ev.shape == (2, 16, 2, 12, 12) and set(np.unique(ev)) <= {0.0, 1.0}
    assert ev[:, :, 0].sum() > 0 and ev[:, :, 1].sum() > 0  # motion makes ON and OFF events
    x, y = delayed_cue(n=400, T=20, seed=0)
    assert x.shape == (400, 20, 20) and y.min() >= 0 and y.max() <= 4
    assert abs(x[:, 8:].mean() - 0.05) < 0.01  # background only after the cue


@pytest.mark.parametrize(
    "name", ["accuracy-vs-lif", "long-memory", "noise-robustness", "energy-comparable"]
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("fsnn", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
