"""Tests of the behaviour RNN room: the DDPM algebra with analytic noise predictors, teacher
forcing, the split-coordinate dynamics against the full-space ones, the surrogate, the mixture
model, the energy distance against scipy, subspace angles, training and the claims (smoke)."""

import numpy as np
import pytest
import scipy.stats
import torch

from iclr26.claims import run_claim
from iclr26.neuro.behaviour_rnn import (
    BehaviourRNN,
    DiffusionSchedule,
    DiffusionTrainer,
    MomentMatchingTrainer,
    SwapSurrogate,
    TaskOptimalTrainer,
    Trials,
    VWMTask,
    effective_noise,
    energy_distance,
    forward_trajectory,
    item_subspace_angles,
    mixture_model_fit,
    multimodality_fraction,
    reverse_sample,
    von_mises_code,
    wrap_angle,
)


def test_schedule_identities():
    s = DiffusionSchedule((0.01, 0.30), 40)
    assert torch.allclose(s.a**2 + s.b**2, torch.ones(40, dtype=torch.float64))
    assert s.sigma[0] == 0.0
    assert float(s.beta[0]) == pytest.approx(0.01) and float(s.beta[-1]) == pytest.approx(0.30)
    # sigma_t^2 = beta_t b_{t-1}^2 / b_t^2 (DDPM posterior variance)
    t = 10
    k, c, sig = s.coefficients(t)
    beta, b, b_prev = float(s.beta[t - 1]), float(s.b[t - 1]), float(s.b[t - 2])
    assert sig**2 == pytest.approx(beta * b_prev**2 / b**2)
    assert k == pytest.approx(1 / np.sqrt(1 - beta))
    assert c == pytest.approx(beta / (np.sqrt(1 - beta) * b))
    assert float(s.a[-1]) < 0.05  # x_T is close to the forward marginal N(0, b_T^2)


def test_forward_trajectory_has_the_one_shot_marginal():
    s = DiffusionSchedule((0.01, 0.30), 40)
    g = torch.Generator().manual_seed(0)
    x0 = torch.full((20000, 1), 2.0, dtype=torch.float64)
    xt = forward_trajectory(x0, s, g)
    eps = effective_noise(xt, x0, s)
    for t in (1, 10, 40):
        assert float(xt[:, t - 1].mean()) == pytest.approx(2.0 * float(s.a[t - 1]), abs=0.03)
        assert float(xt[:, t - 1].std()) == pytest.approx(float(s.b[t - 1]), rel=0.03)
        assert float(eps[:, t - 1].std()) == pytest.approx(1.0, rel=0.03)
    # the effective noise at t=1 is the first increment
    assert torch.allclose(eps[:, 0] * s.b[0], xt[:, 0] - s.a[0] * x0)


def _gaussian_mixture_eps(means, stds, weights, s):
    means = torch.as_tensor(means, dtype=torch.float64)
    w = torch.as_tensor(weights, dtype=torch.float64)
    var0 = torch.as_tensor(stds, dtype=torch.float64) ** 2

    def eps(x, t):
        a, b = s.a[t - 1], s.b[t - 1]
        v = a**2 * var0 + b**2  # (K,)
        d = x[:, None, :] - a * means[None]  # (n, K, D)
        logp = torch.log(w) - 0.5 * (d**2).sum(-1) / v - 0.5 * means.shape[1] * torch.log(v)
        r = torch.softmax(logp, dim=1)
        return b * (r[..., None] * d / v[None, :, None]).sum(1)  # -b * score

    return eps


def _gaussian_run(s, mu, std, seed):
    g = torch.Generator().manual_seed(seed)
    eps = _gaussian_mixture_eps([[mu]], [std], [1.0], s)
    v_T = float(s.a[-1] ** 2 * std**2 + s.b[-1] ** 2)
    x_T = float(s.a[-1]) * mu + np.sqrt(v_T) * torch.randn(
        10000, 1, generator=g, dtype=torch.float64
    )
    return eps, x_T, reverse_sample(eps, x_T, s, g)


def test_reverse_process_with_exact_gaussian_noise_recovers_the_target():
    # fine schedule: DDPM ancestral sampling with the exact noise gives the target
    mu, std = 1.5, 0.5
    s = DiffusionSchedule((1e-4, 0.02), 1000)
    eps, x_T, x0 = _gaussian_run(s, mu, std, 1)
    assert float(x0.mean()) == pytest.approx(mu, rel=0.05)
    assert float(x0.var()) == pytest.approx(std**2, rel=0.05)
    # a sign error in the noise term would blow the variance up or collapse it
    g = torch.Generator().manual_seed(3)
    bad = reverse_sample(lambda x, t: -eps(x, t), x_T, s, g)
    assert abs(float(bad.var()) - std**2) > 0.5 * std**2


def test_release_schedule_matches_the_linear_gaussian_recursion():
    # with 40 coarse steps the posterior-variance sampler loses some variance; the samples
    # must follow the exact mean/variance recursion of the (linear) reverse step
    mu, std = 1.5, 0.5
    s = DiffusionSchedule((0.01, 0.30), 40)
    _, _, x0 = _gaussian_run(s, mu, std, 2)
    m = float(s.a[-1]) * mu
    v = float(s.a[-1] ** 2 * std**2 + s.b[-1] ** 2)
    for t in range(40, 0, -1):
        k, c, sig = s.coefficients(t)
        a, b = float(s.a[t - 1]), float(s.b[t - 1])
        vt = a**2 * std**2 + b**2
        slope = k - c * b / vt  # x_{t-1} = slope x_t + offset + sig z
        offset = c * b * a * mu / vt
        m, v = slope * m + offset, slope**2 * v + sig**2
    assert float(x0.mean()) == pytest.approx(m, rel=0.05)
    assert float(x0.var()) == pytest.approx(v, rel=0.05)
    assert m == pytest.approx(mu, rel=0.02) and 0.6 * std**2 < v < std**2


def test_reverse_process_with_exact_mixture_noise_recovers_the_weights():
    s = DiffusionSchedule((0.01, 0.30), 40)
    g = torch.Generator().manual_seed(2)
    means = [[2.5, 0.0], [-2.5, 0.0]]
    eps = _gaussian_mixture_eps(means, [0.125, 0.125], [0.7, 0.3], s)
    x_T = s.b[-1] * torch.randn(10000, 2, generator=g, dtype=torch.float64)
    x0 = reverse_sample(eps, x_T, s, g)
    frac = float((x0[:, 0] > 0).double().mean())
    assert frac == pytest.approx(0.7, abs=0.05)
    near = torch.minimum(
        (x0 - torch.tensor(means[0])).norm(dim=1), (x0 - torch.tensor(means[1])).norm(dim=1)
    )
    assert float((near < 0.5).double().mean()) > 0.95


def _rnn(**kw):
    task = VWMTask(epochs=(2, 2, 2, 1), T=8)
    return task, BehaviourRNN(n_units=8, input_size=task.input_size, T=8, hidden=16, **kw)


def test_teacher_forcing_replacement():
    _, rnn = _rnn()
    h = torch.randn(5, 3, 8)
    x = torch.randn(5, 3, 2)
    h2 = rnn.replace_behaviour(h, x)
    assert torch.allclose(rnn.project_out(h2), x, atol=1e-6)
    assert torch.allclose(h2 @ rnn.null_basis.T, h @ rnn.null_basis.T, atol=1e-6)
    basis = torch.cat([rnn.readout, rnn.null_basis])
    assert torch.allclose(basis @ basis.T, torch.eye(8), atol=1e-5)


@pytest.mark.parametrize("response", ["diffusion", "leaky"])
@pytest.mark.parametrize("stabilise", [True, False])
def test_split_coordinates_equal_full_space_dynamics(response, stabilise):
    _, rnn = _rnn(response=response, stabilise_nullspace=stabilise)
    h = torch.randn(4, 3, 8)
    z = torch.randn(4, 3, 8)
    w = rnn.split_weights()
    t = 5
    if response == "diffusion":
        full = rnn.reverse_step(h, t, rnn.drive(h, rnn.time_emb[t - 1], None), z)
    else:
        full = rnn.leaky_step(h, t, None, z)
    x, n, f_x = rnn.split_step(
        rnn.project_out(h), h @ rnn.null_basis.T, t, w, rnn.project_out(z), z @ rnn.null_basis.T
    )
    assert torch.allclose(x @ rnn.readout + n @ rnn.null_basis, full, atol=1e-5)
    assert torch.allclose(f_x, rnn.project_out(rnn.drive(h, rnn.time_emb[t - 1], None)), atol=1e-5)


def test_stabilised_null_space_decays_like_an_euler_step():
    _, rnn = _rnn()
    with torch.no_grad():  # zero drive: the null space must decay by (1 - alpha) per step
        rnn.layer_out.weight.zero_()
        rnn.layer_out.bias.zero_()
    h = torch.randn(2, 1, 8)
    out = rnn.reverse_step(h, 8, torch.zeros_like(h), None)
    null = lambda v: v @ rnn.null_basis.T  # noqa: E731
    assert torch.allclose(null(out), 0.9 * null(h), atol=1e-6)
    k = float(rnn.sched_state_scale[7])
    assert torch.allclose(rnn.project_out(out), k * rnn.project_out(h), atol=1e-6)


def test_task_inputs_and_codes():
    code = von_mises_code(np.array([0.0]), 16, 5.0)
    assert code.shape == (1, 16) and code[0, 0] == pytest.approx(1.0) and code.max() <= 1.0
    task = VWMTask()
    tr = task.make_trials(6, seed=0)
    assert tr.inputs.shape == (6, 26, task.input_size)
    assert torch.all(tr.inputs[:, 5:20] == 0) and torch.all(tr.inputs[:, 25] == 0)
    cue = tr.inputs[:, 20, task.stimulus_size :].numpy()
    expected = von_mises_code(tr.probe[np.arange(6), tr.cued], 16, 5.0)
    assert np.allclose(cue, expected, atol=1e-6)
    assert tr.nontargets.shape == (6, 1) and np.all(np.abs(tr.probe_distance) <= np.pi)
    conj = VWMTask(input_mode="conjunctive")
    assert conj.make_trials(3, seed=0).inputs.shape == (3, 26, 36 + 16)
    w = wrap_angle(np.array([np.pi, -np.pi, 3 * np.pi, 0.5]))
    assert np.allclose(w, [np.pi, np.pi, np.pi, 0.5])


def test_behaviour_data_errors():
    with pytest.raises(ValueError, match="report must hold angles in"):
        Trials(np.zeros((3, 2)), np.full((3, 2), 4.0), np.zeros(3, int), torch.zeros(3, 2, 4))
    with pytest.raises(ValueError, match="same length"):
        Trials(np.zeros((3, 2)), np.zeros((4, 2)), np.zeros(3, int), torch.zeros(3, 2, 4))
    task = VWMTask()
    tr = task.make_trials(10, seed=0)
    with pytest.raises(ValueError, match="same length"):
        mixture_model_fit(np.zeros(9), tr)
    with pytest.raises(ValueError, match="responses must hold angles"):
        mixture_model_fit(np.full(10, -4.0), tr)


def test_surrogate_selection_and_radius():
    task = VWMTask()
    tr = task.make_trials(400, seed=3)
    sur = SwapSurrogate(mode="flat", p_correct=0.7)
    xy, item = sur.sample_with_items(tr, 50, seed=0)
    freq = float(np.mean(item == tr.cued[:, None]))
    n = item.size
    assert abs(freq - 0.7) <= 3 * np.sqrt(0.7 * 0.3 / n)
    assert np.linalg.norm(xy, axis=-1).mean() == pytest.approx(2.5, rel=0.01)
    mean, cov = sur.moments(tr)
    big = sur.sample(tr.subset(np.arange(3)), 20000, seed=1)
    assert np.allclose(big.mean(1), mean[:3], atol=0.05)
    emp = (
        np.einsum(
            "nmi,nmj->nij", big - big.mean(1, keepdims=True), big - big.mean(1, keepdims=True)
        )
        / 20000
    )
    assert np.allclose(emp, cov[:3], atol=0.08)
    pd = SwapSurrogate(mode="probe_distance", swap_width=1.0)
    p = pd.selection_probabilities(tr)
    assert np.allclose(p.sum(1), 1.0)
    swap = 1 - p[np.arange(400), tr.cued]
    dist = np.abs(tr.probe_distance).max(1)
    assert scipy.stats.spearmanr(dist, swap)[0] < -0.9  # closer probes swap more


def _mixture_data(n, p, kappa, seed):
    task = VWMTask()
    tr = task.make_trials(n, seed=seed)
    g = np.random.default_rng(seed)
    comp = g.choice(3, size=n, p=p)
    err = g.vonmises(0.0, kappa, n)
    resp = np.where(comp == 0, tr.target + err, tr.nontargets[:, 0] + err)
    resp = np.where(comp == 2, g.uniform(-np.pi, np.pi, n), resp)
    return tr, wrap_angle(resp)


def test_mixture_model_recovers_known_parameters():
    tr, resp = _mixture_data(6000, [0.6, 0.25, 0.15], 8.0, 0)
    fit = mixture_model_fit(resp, tr)
    assert fit["p_target"] == pytest.approx(0.6, abs=0.05)
    assert fit["p_swap"] == pytest.approx(0.25, abs=0.05)
    assert fit["p_guess"] == pytest.approx(0.15, abs=0.05)
    assert fit["kappa"] == pytest.approx(8.0, rel=0.2)
    assert fit["n_trials_used"] < 6000  # near-coincident items are left out


def test_fit_nonparametric_recovers_distance_dependent_swaps():
    task = VWMTask()
    tr = task.make_trials(2000, seed=5)
    truth = SwapSurrogate(mode="probe_distance", swap_width=1.0)
    xy = truth.sample(tr, 1, seed=0)[:, 0]
    fitted = SwapSurrogate.fit_nonparametric(tr, xy)
    s = fitted.swap_function(np.array([0.2, 1.5, 3.0]))
    assert s[0] > s[1] > s[2]
    held_out = task.make_trials(300, seed=6)
    p_true = truth.selection_probabilities(held_out)
    p_fit = fitted.selection_probabilities(held_out)
    assert np.mean(np.abs(p_true - p_fit)) < 0.08
    assert fitted.sample(tr.subset(np.arange(4)), 5, seed=1).shape == (4, 5, 2)


def test_energy_distance_matches_scipy_in_one_dimension():
    g = np.random.default_rng(0)
    x, y = g.normal(0, 1, (60, 1)), g.normal(0.7, 1.3, (45, 1))
    assert energy_distance(x, y) == pytest.approx(scipy.stats.energy_distance(x[:, 0], y[:, 0]))
    batch = energy_distance(np.stack([x[:40], y[:40]]), np.stack([y[:40], y[:40]]))
    assert batch.shape == (2,) and batch[1] == pytest.approx(0.0, abs=1e-7) and batch[0] > 0.2


def test_multimodality_fraction():
    task = VWMTask()
    tr = task.make_trials(5, seed=0)
    on_items = 2.5 * np.stack([np.cos(tr.report), np.sin(tr.report)], -1)  # (5, 2, 2)
    assert multimodality_fraction(on_items, tr) == 1.0
    assert multimodality_fraction(0.2 * on_items, tr) == 0.0


def test_item_subspace_angles():
    g = np.random.default_rng(0)
    a, b = wrap_angle(g.uniform(-np.pi, np.pi, 200)), wrap_angle(g.uniform(-np.pi, np.pi, 200))
    q = np.linalg.qr(g.normal(size=(10, 10)))[0]
    ortho = (
        np.column_stack([np.cos(a), np.sin(a)]) @ q[:2]
        + np.column_stack([np.cos(b), np.sin(b)]) @ q[2:4]
    )
    assert np.allclose(item_subspace_angles(ortho, a, b), 90.0, atol=1e-6)
    shared = (
        np.column_stack([np.cos(a), np.sin(a)]) + np.column_stack([np.cos(b), np.sin(b)])
    ) @ q[:2]
    assert np.allclose(item_subspace_angles(shared, a, b), 0.0, atol=1e-4)


def test_diffusion_training_lowers_the_loss_on_a_one_item_task():
    task = VWMTask(n_items=1, epochs=(2, 2, 2, 1), T=10)
    rnn = BehaviourRNN(n_units=8, input_size=task.input_size, T=10, hidden=16)
    tr = DiffusionTrainer(rnn, task, SwapSurrogate(), samples_per_trial=8, batch_size=16)
    first = np.mean([tr.loss(task.make_trials(16, seed=s)).item() for s in range(3)])
    tr.fit(40)
    last = np.mean([tr.loss(task.make_trials(16, seed=s)).item() for s in range(3)])
    assert last < first
    assert rnn.sample(task.make_trials(3, seed=9), 4, seed=0).shape == (3, 4, 2)


def test_baseline_trainers_run_and_set_their_response():
    task = VWMTask(epochs=(2, 2, 2, 1), T=6)
    rnn = BehaviourRNN(n_units=8, input_size=task.input_size, T=6, hidden=8)
    mm = MomentMatchingTrainer(rnn, task, SwapSurrogate(), samples_per_trial=4, batch_size=4)
    assert rnn.response == "leaky" and np.isfinite(mm.step())
    to = TaskOptimalTrainer(rnn, task, samples_per_trial=2, batch_size=4)
    assert np.isfinite(to.step()) and to.flops_per_step() > 0
    with pytest.raises(ValueError, match="input_size"):
        DiffusionTrainer(BehaviourRNN(n_units=8, input_size=3, T=6), task, SwapSurrogate())


@pytest.mark.parametrize("name", ["full-distribution", "probe-distance-swaps", "item-geometry"])
def test_claims_smoke(name, tmp_path):
    record = run_claim("behaviour_rnn", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record["reason"]
    assert record["metrics"] and record["baseline"]
    if name == "full-distribution":
        timing = record["metrics"]["timing"]
        assert set(timing) == {"diffusion", "moment_matching", "task_optimal"}
        assert all(t["count_network_evaluations"] > 0 and t["cpu_s"] > 0 for t in timing.values())
        # training time vs the baselines, with a load-free count beside each wall time
        models = {"diffusion": record["metrics"]["diffusion"], **record["baseline"]}
        for name, m in models.items():
            assert m["fit_wall_s"] > 0 and m["fit_cpu_s"] > 0
            per_step = m["train_network_evaluations"] / m["iterations"]
            assert per_step == timing[name]["count_network_evaluations"]
        assert record["metrics"]["train_step_ratio_vs_moment_matching"] > 0
