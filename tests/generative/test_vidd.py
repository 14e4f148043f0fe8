import itertools
import math

import numpy as np
import pytest
import torch

from iclr26.generative.vidd import (
    BestOfN,
    DDPOTrainer,
    DDPPTrainer,
    LogPartitionNet,
    MaskedDiffusionLM,
    MotifReward,
    RewardOracle,
    RWMLETrainer,
    StandardFTTrainer,
    VIDDTrainer,
    decode,
    encode,
    kmer_correlation,
    make_dna_dataset,
    normalise_rewards,
    pairwise_diversity,
    soft_value_weights,
)


def count_a(seqs):
    return np.array([s.count("A") for s in seqs], dtype=float)


@pytest.fixture(scope="module")
def tiny():
    data = make_dna_dataset(512, 8, seed=0)
    model = MaskedDiffusionLM(4, 8, d=16, layers=1, heads=2, seed=0).fit(
        data, steps=60, batch_size=64, lr=3e-3
    )
    return model, data


def test_fully_masked_at_t1_and_trajectory_starts_masked(tiny):
    model, data = tiny
    x0 = torch.as_tensor(data[:5])
    xt = model.add_noise(x0, torch.ones(5))
    assert (xt == model.mask_index).all()
    _, traj = model.sample(3, 4, torch.Generator().manual_seed(0), return_trajectory=True)
    assert traj.shape == (5, 3, 8)
    assert (traj[0] == model.mask_index).all() and (traj[-1] != model.mask_index).all()


def test_reverse_step_never_remasks(tiny):
    model, data = tiny
    x0 = torch.as_tensor(data[:64])
    xt = model.add_noise(x0, torch.full((64,), 0.5), torch.Generator().manual_seed(1))
    xs = model.reverse_step(xt, 0.5, 0.25, torch.Generator().manual_seed(2))
    keep = xt != model.mask_index
    assert torch.equal(xs[keep], xt[keep])
    # masked share can only shrink along a trajectory
    _, traj = model.sample(16, 6, torch.Generator().manual_seed(3), return_trajectory=True)
    masked = traj == model.mask_index
    assert not (masked[1:] & ~masked[:-1]).any()


def test_perfect_denoiser_reproduces_the_data_point(tiny):
    model, _ = tiny
    target = torch.tensor([[0, 3, 2, 1, 1, 0, 2, 3]])
    logp = torch.log(torch.nn.functional.one_hot(target, 4).float().clamp(min=1e-12))
    x = torch.full_like(target, model.mask_index)
    gen = torch.Generator().manual_seed(0)
    grid = model.time_grid(5)
    for t, s in zip(grid[:-1], grid[1:], strict=True):
        x = model.reverse_step(x, t, s, gen, logp_x0=logp)
    assert torch.equal(x, target)


def test_step_log_probs_normalise_over_all_outcomes():
    model = MaskedDiffusionLM(2, 2, d=8, layers=1, heads=2, seed=0)
    xt = torch.full((1, 2), model.mask_index)
    outcomes = torch.tensor(list(itertools.product(range(3), repeat=2)))
    with torch.no_grad():
        lp = model.log_prob_step(xt.repeat(len(outcomes), 1), outcomes, 0.75, 0.25)
    assert math.isclose(float(lp.exp().sum()), 1.0, abs_tol=1e-5)
    # the sampler's distribution is the same one: staying masked has prob m_s / m_t per site
    probs = model.step_probs(model(xt), 0.75, 0.25)
    assert torch.allclose(probs[..., -1], torch.full((1, 2), 1 / 3))
    assert torch.allclose(probs.sum(-1), torch.ones(1, 2))


def test_soft_value_weights_limits_and_constant_reward():
    v = torch.tensor([[0.3, -1.2, 2.0, 0.5]])
    assert torch.allclose(soft_value_weights(v, math.inf), torch.ones_like(v, dtype=torch.float64))
    const = normalise_rewards(np.full((2, 5), 3.7))
    assert torch.allclose(const, torch.zeros(2, 5, dtype=torch.float64))
    w = soft_value_weights(v, 0.5, v_t=v, clip_quantile=None)
    assert torch.allclose(w, torch.ones_like(w))  # exp(v_s/a) / exp(v_t/a) with v_s = v_t
    w = soft_value_weights(torch.arange(100.0)[None], 10.0, clip_quantile=0.9)
    cap = float(torch.quantile(torch.exp(torch.arange(100.0, dtype=torch.float64) / 10), 0.9))
    assert float(w.max()) == pytest.approx(cap) and int((w == w.max()).sum()) == 10


def test_forward_kl_minimiser_is_the_tilted_teacher():
    p_teacher = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    v = torch.tensor([0.0, 1.0, -0.5], dtype=torch.float64)
    alpha = 0.7
    w = soft_value_weights(v[None], alpha, clip_quantile=None)[0]
    logits = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([logits], max_iter=200, tolerance_grad=1e-12)

    def closure():
        opt.zero_grad()
        loss = -(p_teacher * w * torch.log_softmax(logits, 0)).sum()
        loss.backward()
        return loss

    opt.step(closure)
    target = p_teacher * torch.exp(v / alpha)
    target = target / target.sum()
    assert torch.allclose(torch.softmax(logits, 0), target, atol=1e-3)


def test_teacher_refresh_schedule_and_exact_query_count(tiny):
    model, _ = tiny
    tr = VIDDTrainer(model, count_a, teacher_update_interval=3, batch_size=4, steps=4, lr=1e-3)
    tr.fit(epochs=7)
    assert tr.teacher_refresh_epochs == [3, 6]
    assert tr.queries == 7 * tr.queries_per_epoch == 7 * 4 * 4 * 2
    tr.fit(epochs=2)  # epoch 9 refreshes again: teacher equals student right after
    assert tr.teacher_refresh_epochs == [3, 6, 9]
    for a, b in zip(tr.teacher.parameters(), tr.model.parameters(), strict=True):
        assert torch.equal(a, b)
    assert tr.pretrained is not model and all(
        not p.requires_grad for p in tr.pretrained.parameters()
    )
    ft = StandardFTTrainer(model, count_a, batch_size=4, steps=4).fit(epochs=6)
    assert ft.teacher_refresh_epochs == [] and ft.rollin_student_prob == 0.0
    for a, b in zip(ft.teacher.parameters(), model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_budget_is_never_exceeded(tiny):
    model, _ = tiny
    for cls in (VIDDTrainer, DDPOTrainer, RWMLETrainer, DDPPTrainer):
        tr = cls(model, count_a, batch_size=4, steps=4).fit(budget=100)
        assert tr.queries <= 100 and tr.queries + tr.queries_per_epoch > 100
    bon = BestOfN(model, count_a, n=8, steps=4)
    x = bon.sample(5)
    assert x.shape == (5, 8) and bon.queries == 40


def test_end_to_end_increases_reward_on_count_of_a(tiny):
    model, _ = tiny
    gen = torch.Generator().manual_seed(5)
    before = count_a(decode(model.sample(256, 4, gen).numpy())).mean()
    tr = VIDDTrainer(model, count_a, alpha=0.5, lr=1e-2, batch_size=32, steps=4, seed=1)
    tr.fit(epochs=3)
    after = count_a(decode(tr.sample(256).numpy())).mean()
    assert after > before + 0.2


def test_ddpo_improves_and_best_of_n_beats_pretrained(tiny):
    model, _ = tiny
    gen = torch.Generator().manual_seed(6)
    before = count_a(decode(model.sample(256, 4, gen).numpy())).mean()
    tr = DDPOTrainer(model, count_a, lr=1e-2, batch_size=64, steps=4, seed=2).fit(epochs=5)
    assert count_a(decode(tr.sample(256).numpy())).mean() > before
    best = BestOfN(model, count_a, n=8, steps=4).sample(64)
    assert count_a(decode(best.numpy())).mean() > before + 0.5


class TableDenoiser(MaskedDiffusionLM):
    """A denoiser that is a free table of logits per partially masked state (L = 2, vocab 2:
    3 x 3 states), so that it can equal any mean-field posterior exactly."""

    def __init__(self, logits):
        super().__init__(vocab=2, length=2, d=4, layers=1, heads=1, seed=0)
        self.table = torch.nn.Parameter(torch.as_tensor(logits, dtype=torch.float64).clone())

    def forward(self, x_t):
        self.forward_sequences += int(x_t.shape[0])
        return torch.log_softmax(self.table[x_t[:, 0] * 3 + x_t[:, 1]], dim=-1)


class TableLogZ(torch.nn.Module):
    def __init__(self, values):
        super().__init__()
        self.values = torch.nn.Parameter(torch.as_tensor(values, dtype=torch.float64).clone())

    def forward(self, x_t):
        return self.values[x_t[:, 0] * 3 + x_t[:, 1]]


# p_pre(x0) = prod_i p_i(x0_i) and r(x0) = sum_i f_i(x0_i): the tilted posterior
# p_pre(x0|x_t) exp(r(x0)/alpha) / Z(x_t) is then mean-field at every x_t, in closed form
P_PRE = torch.tensor([[0.7, 0.3], [0.4, 0.6]], dtype=torch.float64)
F_REW = torch.tensor([[0.0, 1.5], [-0.5, 0.8]], dtype=torch.float64)
ALPHA = 0.7


def _states():
    """Every (x0, x_t) pair: 4 clean sequences x 4 masking patterns."""
    x0 = torch.tensor(list(itertools.product(range(2), repeat=2)))
    masks = torch.tensor(list(itertools.product([False, True], repeat=2)))
    x0 = x0.repeat_interleave(len(masks), 0)
    m = masks.repeat(4, 1)
    return x0, torch.where(m, torch.full_like(x0, 2), x0)


def _tilted_tables():
    tilt = P_PRE * torch.exp(F_REW / ALPHA)
    z = tilt.sum(-1)  # per-position partition function
    logits, log_z = torch.zeros(9, 2, 2, dtype=torch.float64), torch.zeros(9, dtype=torch.float64)
    for a, b in itertools.product(range(3), repeat=2):
        logits[a * 3 + b] = torch.log(tilt / z[:, None])
        log_z[a * 3 + b] = sum(
            torch.log(z[i]) if v == 2 else F_REW[i, v] / ALPHA for i, v in enumerate((a, b))
        )
    return logits, log_z


def _ddpp_on_tables(student_logits, log_z):
    pre = TableDenoiser(torch.log(P_PRE).expand(9, 2, 2))
    tr = DDPPTrainer(pre, count_a, alpha=ALPHA, log_z=TableLogZ(log_z), batch_size=4, steps=2)
    with torch.no_grad():
        tr.model.table.copy_(student_logits)
    return tr


def test_ddpp_loss_and_gradient_vanish_exactly_at_the_tilted_posterior():
    x0, x_t = _states()
    reward = F_REW[0, x0[:, 0]] + F_REW[1, x0[:, 1]]
    logits, log_z = _tilted_tables()
    tr = _ddpp_on_tables(logits, log_z)
    res = tr.residual(x0, x_t, reward)
    assert float(res.detach().abs().max()) < 1e-12
    res.pow(2).mean().backward()
    assert float(tr.model.table.grad.abs().max()) < 1e-12
    assert float(tr.log_z.values.grad.abs().max()) < 1e-12
    # the pretrained model itself (the untilted posterior) is not a minimiser
    tr = _ddpp_on_tables(torch.log(P_PRE).expand(9, 2, 2), log_z)
    loss = tr.residual(x0, x_t, reward).pow(2).mean()
    loss.backward()
    assert float(loss.detach()) > 0.1 and float(tr.model.table.grad.abs().max()) > 1e-2


def test_ddpp_minimiser_is_the_reward_tilted_posterior():
    x0, x_t = _states()
    reward = F_REW[0, x0[:, 0]] + F_REW[1, x0[:, 1]]
    target, log_z_true = _tilted_tables()
    tr = _ddpp_on_tables(torch.log(P_PRE).expand(9, 2, 2), torch.zeros(9))
    params = [tr.model.table, tr.log_z.values]
    opt = torch.optim.LBFGS(params, max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = tr.residual(x0, x_t, reward).pow(2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    fully_masked = 2 * 3 + 2
    q = torch.softmax(tr.model.table[fully_masked], -1)
    assert torch.allclose(q, torch.softmax(target[fully_masked], -1), atol=1e-3)
    assert float(tr.log_z.values[fully_masked].detach()) == pytest.approx(
        float(log_z_true[fully_masked]), abs=1e-3
    )


def test_ddpp_queries_once_per_sample_and_replays_without_new_queries(tiny):
    model, _ = tiny
    tr = DDPPTrainer(model, count_a, batch_size=4, steps=4, buffer_size=10, updates_per_epoch=3)
    tr.fit(epochs=5)
    assert tr.queries == 5 * 4 == 5 * tr.queries_per_epoch
    assert tr._buffer_x.shape == (10, 8) and tr._buffer_r.shape == (10,)
    x = tr._buffer_x.numpy()
    assert np.allclose(count_a(decode(x)), tr._buffer_r.numpy())  # stored rewards match
    warm = DDPPTrainer(model, count_a, batch_size=4, steps=4, log_z_warmup=2, lr=1e-2)
    before = [p.detach().clone() for p in warm.model.parameters()]
    z_before = [p.detach().clone() for p in warm.log_z.parameters()]
    warm.fit(epochs=2)  # warm-up: only log Z moves
    assert all(torch.equal(a, b) for a, b in zip(before, warm.model.parameters(), strict=True))
    assert not all(
        torch.equal(a, b) for a, b in zip(z_before, warm.log_z.parameters(), strict=True)
    )
    warm.fit(epochs=1)
    assert not all(torch.equal(a, b) for a, b in zip(before, warm.model.parameters(), strict=True))


def test_ddpp_improves_reward_on_count_of_a(tiny):
    model, _ = tiny
    gen = torch.Generator().manual_seed(6)
    before = count_a(decode(model.sample(256, 4, gen).numpy())).mean()
    tr = DDPPTrainer(model, count_a, alpha=0.5, lr=1e-2, batch_size=32, steps=4,
                     masks_per_sample=4, seed=3).fit(epochs=10)  # fmt: skip
    after = count_a(decode(tr.sample(256).numpy())).mean()
    assert after > before + 0.2


def test_ddpp_rejects_bad_input(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match="alpha"):
        DDPPTrainer(model, count_a, alpha=float("nan"))
    with pytest.raises(ValueError, match="buffer_size"):
        DDPPTrainer(model, count_a, batch_size=8, buffer_size=4)
    with pytest.raises(ValueError, match="masks_per_sample"):
        DDPPTrainer(model, count_a, masks_per_sample=0)
    with pytest.raises(ValueError, match="log_z_lr"):
        DDPPTrainer(model, count_a, log_z_lr=float("inf"))
    with pytest.raises(ValueError, match="log_z_warmup"):
        DDPPTrainer(model, count_a, log_z_warmup=-1)
    with pytest.raises(TypeError, match="log_z"):
        DDPPTrainer(model, count_a, log_z="zero")
    with pytest.raises(TypeError, match="pretrained"):
        DDPPTrainer(object(), count_a)
    with pytest.raises(ValueError, match="reward_fn"):
        DDPPTrainer(model, lambda s: [float("nan")] * len(s), batch_size=2, steps=2).fit(epochs=1)
    tr = DDPPTrainer(model, count_a, batch_size=2, steps=2)
    x0 = torch.zeros(2, 8, dtype=torch.long)
    with pytest.raises(ValueError, match="x_t"):
        tr.residual(x0, torch.ones(2, 8, dtype=torch.long), torch.zeros(2))
    with pytest.raises(ValueError, match="reward"):
        tr.residual(x0, x0, torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match="x0"):
        tr.residual(x0[:, :5], x0[:, :5], torch.zeros(2))
    with pytest.raises(ValueError, match="d"):
        LogPartitionNet(4, 8, d=30, heads=4)


def test_motif_reward_by_hand():
    rew = MotifReward()
    bg = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    m1, m3 = "TGACGT", "GGGCGG"
    seq = m1 + "AAAAAA" + m3 + bg[:14]  # M3 starts 6 bp after M1 ends (within 4..10)
    gc = sum(c in "CG" for c in seq) / 32
    assert rew([seq])[0] == pytest.approx(1 + 2 - 4 * abs(gc - 0.45))
    far = m1 + "A" * 12 + m3 + "A" * 8  # gap 12: no bonus
    gc = sum(c in "CG" for c in far) / 32
    assert rew([far])[0] == pytest.approx(1 - 4 * abs(gc - 0.45))
    two = m1 + m1 + "A" * 20
    gc = sum(c in "CG" for c in two) / 32
    assert rew([two])[0] == pytest.approx(2 - 4 * abs(gc - 0.45))
    assert np.allclose(rew(encode([seq, far])), rew([seq, far]))


def test_oracle_counts_and_rejects_bad_rewards():
    oracle = RewardOracle(count_a)
    out = oracle(np.zeros((3, 4), dtype=np.int64))
    assert np.allclose(out, 4) and oracle.queries == 3
    oracle.evaluate(np.zeros((5, 4), dtype=np.int64))
    assert oracle.queries == 3
    with pytest.raises(ValueError, match="reward_fn"):
        RewardOracle(lambda s: [float("nan")] * len(s))(np.zeros((2, 4), dtype=np.int64))
    with pytest.raises(ValueError, match="reward_fn"):
        RewardOracle(lambda s: [1.0])(np.zeros((2, 4), dtype=np.int64))


def test_metrics_and_dataset():
    background = make_dna_dataset(4000, 32, max_motifs=0, seed=1)
    assert abs(np.isin(background, (1, 2)).mean() - 0.45) < 0.02
    data = make_dna_dataset(2000, 32, seed=1)
    assert data.shape == (2000, 32) and data.min() >= 0 and data.max() <= 3
    assert kmer_correlation(data, data) == pytest.approx(1.0)
    x = np.array([[0, 0, 0, 0], [0, 0, 1, 1], [2, 2, 1, 1]])
    # Hamming/L: pairs (0,1)=2/4, (0,2)=4/4, (1,2)=2/4
    assert pairwise_diversity(x) == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    assert decode(encode(["ACGT", "TTGA"])) == ["ACGT", "TTGA"]


def test_elbo_and_checkpoint_roundtrip(tiny, tmp_path):
    model, data = tiny
    elbo = model.elbo(data[:32], n_t=4)
    assert elbo.shape == (32,) and (elbo < 0).all()
    # the trained model assigns data a higher bound than uniform noise (8 * log 4 nats)
    assert float(elbo.mean()) > -8 * math.log(4) - 0.5
    path = model.save(tmp_path / "m.pt")
    back = MaskedDiffusionLM.from_pretrained(path)
    x = torch.as_tensor(data[:4])
    assert torch.allclose(back(x), model(x))


def test_fine_tuner_base_is_abstract(tiny):
    from iclr26.generative.vidd.trainers import _FineTuner

    with pytest.raises(TypeError, match="abstract"):
        _FineTuner(tiny[0], count_a)

    class NoEpoch(_FineTuner):  # gives the query count but no epoch
        queries_per_epoch = 8

    with pytest.raises(TypeError, match="_epoch"):
        NoEpoch(tiny[0], count_a)


@pytest.fixture(scope="module")
def claims_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("vidd-claims")  # the four claims share one experiment


@pytest.mark.parametrize("name", ["reward", "stability", "diversity", "naturalness"])
def test_claims_smoke(name, claims_dir):
    from iclr26.claims import contract_problems, run_claim

    rec = run_claim("vidd", name, "smoke", out_dir=claims_dir)
    assert rec["verdict"] != "error", rec["traceback"]
    assert contract_problems(rec) == []
    _assert_figures(rec, claims_dir)


def _assert_figures(record, out_dir):
    """Every claim saves at least one figure, and each PNG opens."""
    import matplotlib.image as mpimg

    assert record["figures"], f"{record['claim']} saved no figure"
    for rel in record["figures"]:
        image = mpimg.imread(out_dir / rel)
        assert image.ndim == 3 and min(image.shape[:2]) > 50


def test_ray_reward_pool_chunks_in_order_through_the_oracle(monkeypatch):
    """The actor pool's own logic on an in-process stand-in for Ray (a local Ray start takes
    most of a minute here): the batch is cut into chunks of 3 (3 + 3 + 1), spread over two
    actors, and the rewards come back in the batch's order; the oracle counts and checks them."""
    import sys
    import types

    from iclr26.generative.vidd import RayRewardPool

    calls = []

    class Handle:
        def __init__(self, obj):
            self.obj = obj

        def __getattr__(self, name):
            method = getattr(self.obj, name)
            return types.SimpleNamespace(remote=lambda *args: method(*args))

    def remote(**options):
        def wrap(cls):
            return types.SimpleNamespace(remote=lambda *args: Handle(cls(*args)))

        return wrap

    class ActorPool:
        def __init__(self, actors):
            self.actors = actors

        def map(self, fn, values):
            for k, value in enumerate(values):
                calls.append((k % len(self.actors), len(value)))
                yield fn(self.actors[k % len(self.actors)], value)

    fake_util = types.ModuleType("ray.util")
    fake_util.ActorPool = ActorPool
    fake_ray = types.ModuleType("ray")
    fake_ray.remote, fake_ray.util = remote, fake_util
    fake_ray.is_initialized = lambda: True  # joined, not started: shutdown leaves it alone
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    monkeypatch.setitem(sys.modules, "ray.util", fake_util)
    reward = MotifReward()
    x = make_dna_dataset(7, 16, seed=3)
    pool = RayRewardPool(reward, num_actors=2, chunk=3)
    oracle = RewardOracle(pool)
    out = oracle(x)
    assert np.array_equal(out, reward(decode(x)))
    assert calls == [(0, 3), (1, 3), (0, 1)]
    assert oracle.queries == 7 and oracle.calls == 1
    assert pool([]).shape == (0,)
    pool.shutdown()
