"""Tests of ABSignSGD: block updates, truncated backward, statelessness, schedules, majority
vote, baselines, the HF path and every claim at smoke scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.optim.absignsgd import (
    ABSignSGD,
    ABSignSGDMV,
    BlockAdam,
    BlockSchedule,
    SignSGD,
    depth_costs,
    find_blocks,
    majority_vote,
    memory_report,
    pack_signs,
    unpack_signs,
)


class Stack(nn.Module):
    """Embedding, a list of blocks, a head: the layout find_blocks expects."""

    def __init__(self, n_blocks=4, d=8, vocab=11, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(d, d), nn.Tanh()) for _ in range(n_blocks)
        )
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.embed(ids)
        for layer in self.layers:
            h = h + layer(h)
        return self.head(h)


def _loss(model, ids):
    return nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, 11), ids[:, 1:].reshape(-1))


def _ids(seed=0):
    return torch.randint(0, 11, (4, 9), generator=torch.Generator().manual_seed(seed))


def test_only_active_block_moves_by_lr_and_backward_is_truncated():
    model = Stack()
    opt = ABSignSGD(model, lr=0.01, schedule="cyclic", weight_decay=0.0)
    assert opt.active_block == 0
    opt.step()  # no gradients yet: nothing moves, block 1 becomes active
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    _loss(model, _ids()).backward()
    assert model.embed.weight.grad is None and model.head.weight.grad is None
    assert all(p.grad is None for p in model.layers[0].parameters())  # below the active block
    assert all(p.grad is not None for p in model.layers[1].parameters())
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    for n, p in model.named_parameters():
        delta = p.detach() - before[n]
        if n.startswith("layers.1."):
            assert torch.allclose(delta, -0.01 * torch.sign(grads[n]), atol=1e-7)
        else:
            assert torch.equal(delta, torch.zeros_like(delta))


def test_state_bytes_stay_zero_and_lr_scheduler_works():
    model = Stack()
    opt = ABSignSGD(model, lr=0.01, seed=1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    for k in range(10):
        _loss(model, _ids(k)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        assert opt.state_bytes() == 0
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0025)
    assert memory_report(model, opt)["state_bytes"] == 0


def test_depth_biased_frequencies_and_gap():
    sched = BlockSchedule(4, "depth_biased", depth_bias=10.0)
    visits = [sched.next() for _ in range(1000)]
    freq = np.bincount(visits, minlength=4) / 1000
    tau = depth_costs(4, 10.0)
    expected = (1 / tau) / (1 / tau).sum()
    assert np.allclose(freq, expected, atol=0.02)
    max_gap = int(np.ceil(tau.max() / tau.min())) + 1  # a block waits at most tau_0/tau_min picks
    for b in range(4):
        pos = np.flatnonzero(np.array(visits) == b)
        assert np.diff(pos).max() <= max_gap * 4


def test_cyclic_and_max_staleness():
    cyc = BlockSchedule(3, "cyclic")
    assert [cyc.next() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    forced = BlockSchedule(4, lambda k, s: 3, max_staleness=5)
    seq = [forced.next() for _ in range(40)]
    for b in range(4):
        pos = np.flatnonzero(np.array(seq) == b)
        assert pos.size and np.diff(np.concatenate([[-1], pos])).max() <= 5
    with pytest.raises(ValueError):
        BlockSchedule(4, "random-walk")
    with pytest.raises(ValueError):
        ABSignSGD(Stack(), lr=0.0)


def test_majority_vote_rules_and_packing():
    g = torch.tensor([0.5, -1.0, 0.0, 2.0, -0.1, 3.0, -2.0, 1.0, -5.0])
    packed = pack_signs(g)
    assert packed.nbytes == 2
    assert unpack_signs(packed, 9).tolist() == [1, -1, 1, 1, -1, 1, -1, 1, -1]
    a, b, c = (torch.tensor(v) for v in ([1.0, 1, -1], [-1.0, 1, -1], [-1.0, -1, 1]))
    vote = majority_vote([pack_signs(x) for x in (a, b, c)], 3)
    assert vote.tolist() == np.sign((a.sign() + b.sign() + c.sign()).numpy()).tolist()
    assert majority_vote([pack_signs(a), pack_signs(b)], 3).tolist() == [0, 1, -1]


def test_mv_with_one_agent_equals_single_agent():
    single = Stack(seed=3)
    opt = ABSignSGD(single, lr=0.01, seed=4)
    mv = ABSignSGDMV(lambda: Stack(seed=3), n_agents=1, lr=0.01, seed=4, loss_fn=_mv_loss)
    for k in range(6):
        ids = _ids(k)
        _loss(single, ids).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        info = mv.step([(ids[:, :-1], ids[:, 1:])])
        assert info["bits_sent"] > 0
    for p, q in zip(single.parameters(), mv.model.parameters()):
        assert torch.equal(p, q)


def _mv_loss(logits, targets):
    return nn.functional.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))


def test_block_adam_and_signsgd_baselines():
    model = Stack()
    opt = BlockAdam(model, lr=1e-2, switch_every=2)
    for k in range(4):
        _loss(model, _ids(k)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    assert opt.active_block == 2
    block = sum(p.numel() for p in model.layers[2].parameters())
    assert opt.state_bytes() == 0  # fresh block, no step yet
    _loss(model, _ids(9)).backward()
    opt.step()
    assert opt.state_bytes() == 2 * 4 * block
    full = Stack()
    sgd = SignSGD(full.parameters(), lr=0.1)
    before = full.head.weight.detach().clone()
    _loss(full, _ids()).backward()
    sgd.step()
    assert torch.allclose((full.head.weight - before).abs(), torch.full_like(before, 0.1))


def test_hf_gpt2_blocks_found():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=50, n_positions=16)
    )
    blocks = find_blocks(model)
    assert len(blocks) == 2
    opt = ABSignSGD(model, lr=1e-3, schedule="cyclic")
    ids = torch.randint(0, 50, (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    assert model.transformer.wte.weight.grad is None
    opt.step()
    with pytest.raises(ValueError, match="transformer layers"):
        find_blocks(nn.Linear(3, 3))


def test_ray_backend_matches_local():
    ray = pytest.importorskip("ray")
    import sys

    from ray import cloudpickle

    # the workers cannot import this test module: ship its classes and functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    factory = lambda: Stack(seed=5)
    batches = [
        [(_ids(10 * k + j)[:, :-1], _ids(10 * k + j)[:, 1:]) for j in range(2)] for k in range(2)
    ]
    local = ABSignSGDMV(factory, n_agents=2, lr=0.01, seed=1, loss_fn=_mv_loss)
    for b in batches:
        local.step(b)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        remote = ABSignSGDMV(
            factory, n_agents=2, lr=0.01, seed=1, loss_fn=_mv_loss, backend="ray", threads=1
        )
        for b in batches:
            remote.step(b)
        replicas = remote.replica_params()
        remote.shutdown()
    finally:
        ray.shutdown()
    expected = local.driver.flat_params()
    assert all(torch.equal(r, expected) for r in replicas)


def test_default_weight_decay_follows_the_release():
    model = Stack()
    opt = ABSignSGD(model, lr=0.01, schedule="cyclic")
    assert opt.param_groups[0]["weight_decay"] == 0.01
    opt.step()  # block 0 had no gradient; block 1 is active
    before = [p.detach().clone() for p in model.layers[1].parameters()]
    _loss(model, _ids()).backward()
    grads = [p.grad.clone() for p in model.layers[1].parameters()]
    opt.step()
    for p, b, g in zip(model.layers[1].parameters(), before, grads):
        assert torch.allclose(p.detach(), b * (1 - 0.01 * 0.01) - 0.01 * torch.sign(g), atol=1e-7)


def _train(model, opt, ids_list):
    for ids in ids_list:
        _loss(model, ids).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: ABSignSGD(m, lr=0.01, seed=3),
        lambda m: ABSignSGD(m, lr=0.01, schedule="uniform", seed=3),
        lambda m: BlockAdam(m, lr=1e-2, switch_every=3),
    ],
)
def test_resume_from_state_dict_is_bit_for_bit(make, tmp_path):
    data = [_ids(k) for k in range(11)]
    straight = Stack(seed=1)
    _train(straight, make(straight), data)

    first = Stack(seed=1)
    opt1 = make(first)
    _train(first, opt1, data[:5])
    torch.save({"model": first.state_dict(), "opt": opt1.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = torch.load(tmp_path / "ckpt.pt")
    resumed = Stack(seed=42)  # fresh model copy, then loaded
    resumed.load_state_dict(ckpt["model"])
    opt2 = make(resumed)  # fresh optimizer: its own schedule starts at step 0
    opt2.load_state_dict(ckpt["opt"])
    _train(resumed, opt2, data[5:])
    for p, q in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(p, q)


def test_majority_vote_resumes_bit_for_bit():
    data = [
        [(_ids(10 * k + j)[:, :-1], _ids(10 * k + j)[:, 1:]) for j in range(3)] for k in range(7)
    ]
    make = lambda: ABSignSGDMV(lambda: Stack(seed=5), n_agents=3, lr=0.01, seed=2, loss_fn=_mv_loss)
    straight = make()
    for b in data:
        straight.step(b)
    first = make()
    for b in data[:3]:
        first.step(b)
    saved = first.state_dict()
    resumed = make()
    resumed.load_state_dict(saved)
    for b in data[3:]:
        resumed.step(b)
    assert torch.equal(straight.driver.flat_params(), resumed.driver.flat_params())
    assert straight.bits_total == resumed.bits_total


def test_nan_depth_bias_and_other_bad_hyperparameters_are_refused():
    # depth_bias = NaN would make every clock NaN: argmin then trains block 0 forever
    with pytest.raises(ValueError, match="depth_bias"):
        ABSignSGD(Stack(), depth_bias=float("nan"))
    with pytest.raises(ValueError, match="weight_decay"):
        ABSignSGD(Stack(), weight_decay=float("nan"))
    with pytest.raises(ValueError, match="betas"):
        BlockAdam(Stack(), betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="max_staleness"):
        BlockSchedule(4, max_staleness=3)
    sched = BlockSchedule(4, "depth_biased", depth_bias=10.0)
    assert len(set(sched.next() for _ in range(40))) == 4


def test_nan_gradient_skips_the_step():
    model = Stack()
    opt = ABSignSGD(model, lr=0.01, schedule="cyclic")
    before = [p.detach().clone() for p in model.parameters()]
    _loss(model, _ids()).backward()
    model.layers[0][0].weight.grad[0, 0] = float("nan")
    opt.step()
    assert opt.skipped_steps == 1
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before))


def test_mv_reports_the_bytes_it_exchanges():
    for agents in (3, 4):
        mv = ABSignSGDMV(lambda: Stack(seed=3), n_agents=agents, lr=0.01, loss_fn=_mv_loss)
        info = mv.step([(_ids(j)[:, :-1], _ids(j)[:, 1:]) for j in range(agents)])
        n = info["block_size"]
        assert info["bytes_up"] == agents * -(-n // 8)  # one packed bit per coordinate
        planes = 2 if agents % 2 == 0 else 1  # ties need a second plane
        assert info["bytes_down"] == planes * -(-n // 8)
    from iclr26.optim.absignsgd.majority import pack_vote, unpack_vote

    vote = np.array([1, -1, 0, 1, 0, -1, -1, 1, 1, 0], dtype=np.int8)
    assert unpack_vote(pack_vote(vote, ties=True), 10).tolist() == vote.tolist()
    no_ties = np.where(vote == 0, 1, vote).astype(np.int8)
    assert unpack_vote(pack_vote(no_ties, ties=False), 10).tolist() == no_ties.tolist()


@pytest.mark.parametrize(
    "name", ["runtime-per-step", "optimizer-memory", "equal-wallclock", "majority-vote"]
)
def test_claims_run_at_smoke_scale(name, tmp_path, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path_factory.getbasetemp() / "iclr26-cache"))
    record = run_claim("absignsgd", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"] and record["figures"]
