import itertools
import math

import numpy as np
import pytest
import torch

from iclr26.generative.vidd import (
    BestOfN,
    DDPOTrainer,
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
    for cls in (VIDDTrainer, DDPOTrainer, RWMLETrainer):
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
