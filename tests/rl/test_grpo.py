"""Tests of the shared GRPO trainer: advantages by hand, the loss against autograd of the
written formula, REINFORCE equivalence, dual clip, k3 KL, rollouts over left padding, one
update improving a rigged bandit, exact resume, and bad input."""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.rl.grpo import (
    GRPOConfig,
    GRPOTrainer,
    HFGenerator,
    Rollouts,
    grpo_advantages,
    grpo_step,
    k3_kl,
    left_pad,
    policy_loss,
    policy_update,
    sample_rollouts,
    token_entropy,
    token_logprobs,
    zero_advantage_fraction,
)
from iclr26.rl.grpo.rollout import _top_p_filter

NAN = float("nan")


class Bandit(nn.Module):
    """A context-free categorical policy over a 4-token vocabulary: logits are one parameter
    vector at every position (token 2 = "good", token 3 = end of sequence)."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(4))

    def forward(
        self,
        input_ids,
        attention_mask=None,
        position_ids=None,
        use_cache=None,
        past_key_values=None,
    ):
        logits = self.bias.expand(input_ids.shape[0], input_ids.shape[1], 4)
        return SimpleNamespace(logits=logits, past_key_values=None)


def bandit_generate(model):
    def generate(prompts, n, generator=None):
        return sample_rollouts(
            model,
            [[1] for _ in prompts],
            n,
            max_new_tokens=1,
            eos_token_id=3,
            generator=generator,
            decode=lambda ids: "good" if ids and ids[0] == 2 else "bad",
        )

    return generate


def bandit_reward(prompts, completions):
    return [float(c == "good") for c in completions]


# ---------------------------------------------------------------- advantages


def test_advantages_match_a_hand_computation():
    adv = grpo_advantages([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0], group_size=4)
    std = math.sqrt((4 * 0.25) / 3)  # unbiased
    expected = [0.5 / (std + 1e-6), -0.5 / (std + 1e-6)]
    assert adv[0] == pytest.approx(expected[0], rel=1e-6)
    assert adv[1] == pytest.approx(expected[1], rel=1e-6)
    assert torch.equal(adv[4:], torch.zeros(4))  # identical rewards: exactly zero


def test_advantages_have_zero_mean_and_unit_unbiased_std_per_group():
    rewards = torch.randn(5 * 8, generator=torch.Generator().manual_seed(0))
    adv = grpo_advantages(rewards, 8).reshape(5, 8)
    assert torch.allclose(adv.mean(1), torch.zeros(5), atol=1e-6)
    assert torch.allclose(adv.std(1, unbiased=True), torch.ones(5), atol=1e-4)
    centred = grpo_advantages(rewards, 8, normalize_std=False).reshape(5, 8)
    assert torch.allclose(
        centred, rewards.reshape(5, 8) - rewards.reshape(5, 8).mean(1, keepdim=True)
    )


def test_zero_advantage_fraction():
    adv = grpo_advantages([1, 1, 0, 1], 2)
    assert zero_advantage_fraction(adv) == 0.5


# ---------------------------------------------------------------- losses


def _written_loss(logp, old, adv, mask, lo, hi, c):
    """The objective as written in the paper/release, independent of the implementation."""
    rho = torch.exp(logp - old)
    a = adv[:, None]
    surrogate = torch.maximum(-a * rho, -a * torch.clamp(rho, 1 - lo, 1 + hi))
    surrogate = torch.where(a < 0, torch.minimum(surrogate, -a * c), surrogate)
    return (surrogate * mask).sum() / mask.sum()


def test_policy_loss_and_gradient_match_the_written_formula():
    g = torch.Generator().manual_seed(1)
    old = -torch.rand(6, 5, generator=g) * 3
    logp = (old + torch.randn(6, 5, generator=g) * 0.7).requires_grad_(True)
    adv = torch.randn(6, generator=g) * 2
    mask = (torch.rand(6, 5, generator=g) > 0.2).float()
    loss, stats = policy_loss(logp, old, adv, mask, 0.2, 0.25, 3.0)
    (grad,) = torch.autograd.grad(loss, logp)
    logp2 = logp.detach().clone().requires_grad_(True)
    ref = _written_loss(logp2, old, adv, mask, 0.2, 0.25, 3.0)
    (grad_ref,) = torch.autograd.grad(ref, logp2)
    assert float(loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5)
    assert torch.allclose(grad, grad_ref, atol=1e-6)
    assert 0 < stats["clip_frac_high"] < 1


def test_gradient_sign_follows_the_advantage_and_equals_reinforce_at_ratio_one():
    logits = torch.randn(3, 4, 6, requires_grad=True)
    actions = torch.randint(0, 6, (3, 4))
    mask = torch.ones(3, 4)
    adv = torch.tensor([1.5, -0.7, 0.0])
    logp = torch.log_softmax(logits, -1).gather(-1, actions[..., None])[..., 0]
    loss, _ = policy_loss(logp, logp.detach(), adv, mask)
    (g_ppo,) = torch.autograd.grad(loss, logits)
    logp = torch.log_softmax(logits, -1).gather(-1, actions[..., None])[..., 0]
    reinforce = -(adv[:, None] * logp).sum() / mask.sum()
    (g_rf,) = torch.autograd.grad(reinforce, logits)
    assert torch.allclose(g_ppo, g_rf, atol=1e-7)
    # descending the loss raises log-prob of positive-advantage actions, lowers negative ones
    lp = torch.zeros(3, 1, requires_grad=True)
    loss, _ = policy_loss(lp, lp.detach(), adv, torch.ones(3, 1))
    (g,) = torch.autograd.grad(loss, lp)
    assert g[0, 0] < 0 < g[1, 0] and g[2, 0] == 0


def test_dual_clip_caps_the_loss_of_negative_advantages():
    old = torch.zeros(1, 1)
    logp = torch.full((1, 1), math.log(50.0), requires_grad=True)  # ratio 50
    adv = torch.tensor([-2.0])
    loss, stats = policy_loss(logp, old, adv, torch.ones(1, 1), dual_clip=3.0)
    assert float(loss.detach()) == pytest.approx(6.0)  # capped at c * |A|
    assert stats["clip_frac_low"] == 1.0
    (g,) = torch.autograd.grad(loss, logp)
    assert float(g) == 0.0
    loss_nc, _ = policy_loss(logp, old, adv, torch.ones(1, 1), dual_clip=None)
    assert float(loss_nc.detach()) == pytest.approx(100.0)


def test_k3_is_nonnegative_and_zero_for_equal_policies():
    a = torch.log_softmax(torch.randn(4, 7, 9), -1)
    b = torch.log_softmax(torch.randn(4, 7, 9), -1)
    assert torch.all(k3_kl(a, b) >= 0)
    assert torch.equal(k3_kl(a, a), torch.zeros_like(a))
    assert float(k3_kl(torch.zeros(1), torch.full((1,), 50.0))) == 10.0  # clamped


def test_entropy_ignores_masked_tokens_in_value_and_gradient():
    logits = torch.tensor([[0.0, float("-inf"), 0.0], [1.0, 2.0, 3.0]], requires_grad=True)
    ent = token_entropy(logits)
    assert float(ent[0]) == pytest.approx(math.log(2.0))  # two equally likely tokens left
    p = torch.softmax(torch.tensor([1.0, 2.0, 3.0]), -1)
    assert float(ent[1]) == pytest.approx(float(-(p * p.log()).sum()), rel=1e-6)
    (grad,) = torch.autograd.grad(ent.sum(), logits)
    assert torch.isfinite(grad).all()
    with pytest.raises(ValueError, match="logits"):
        token_entropy(torch.tensor([0.0, NAN]))
    with pytest.raises(ValueError, match="logits"):
        token_entropy(torch.tensor([0.0, float("inf")]))


def test_top_p_keeps_the_smallest_set_reaching_the_mass():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(_top_p_filter(logits, 0.7))
    assert kept.tolist() == [[True, True, False, False]]
    assert torch.isfinite(_top_p_filter(logits, 1e-3)).sum() == 1


# ---------------------------------------------------------------- rollouts and training


def test_a_grpo_update_raises_the_reward_of_a_rigged_bandit():
    model = Bandit()
    cfg = GRPOConfig(group_size=8, lr=0.1, kl_coef=0.0, entropy_coef=0.0, seed=0)
    trainer = GRPOTrainer(model, bandit_reward, bandit_generate(model), cfg)
    p_before = float(torch.softmax(model.bias.detach(), 0)[2])
    rewards = [trainer.step(["x"] * 16)["reward_mean"]]
    assert float(torch.softmax(model.bias.detach(), 0)[2]) > p_before  # one update already helps
    rewards += [trainer.step(["x"] * 16)["reward_mean"] for _ in range(4)]
    p_after = float(torch.softmax(model.bias.detach(), 0)[2])
    assert p_after > p_before
    assert np.mean(rewards[-2:]) >= rewards[0]


def test_resume_from_state_dict_continues_bit_for_bit():
    def fresh():
        model = Bandit()
        cfg = GRPOConfig(group_size=4, lr=0.05, kl_coef=0.01, entropy_coef=0.02, entropy_warmup=1)
        return GRPOTrainer(model, bandit_reward, bandit_generate(model), cfg)

    a = fresh()
    for _ in range(2):
        a.step(["x"] * 4)
    saved = a.state_dict()
    a.step(["x"] * 4)
    b = fresh()
    b.load_state_dict(saved)
    b.step(["x"] * 4)
    assert torch.equal(a.policy.bias, b.policy.bias)
    assert a.updates == b.updates == 3


def test_a_single_step_update_reuses_its_own_logprobs_as_the_old_ones():
    """One epoch and one minibatch: the trainer skips the separate old-log-prob pass and the
    update equals the one with recomputed old log-probabilities; with two epochs it must
    recompute them (the second epoch's ratio is no longer 1)."""
    calls = {"n": 0}

    def counting(model):
        hook = model.register_forward_hook(lambda *a: calls.__setitem__("n", calls["n"] + 1))
        return hook

    torch.manual_seed(0)
    a = Bandit()
    b = copy.deepcopy(a)
    cfg = GRPOConfig(group_size=4, lr=0.1, kl_coef=0.0, entropy_coef=0.0, seed=3)
    ta = GRPOTrainer(a, bandit_reward, bandit_generate(a), cfg)
    counting(a)
    ta.step(["x"] * 4)
    forwards_single = calls["n"]
    # the same update with the old log-probabilities computed by a separate pass
    tb = GRPOTrainer(b, bandit_reward, bandit_generate(b), cfg)
    rollouts = tb.rollout(["x"] * 4)
    adv = torch.as_tensor(tb.advantage_fn(tb.score(["x"] * 4, rollouts), 4), dtype=torch.float32)
    with torch.no_grad():
        old, _ = token_logprobs(b, rollouts)
    policy_update(b, tb.optimizer, rollouts, adv, old, None, cfg)
    assert torch.allclose(a.bias, b.bias, atol=1e-6) and not torch.equal(a.bias, Bandit().bias)
    calls["n"] = 0
    c = Bandit()
    cfg2 = GRPOConfig(group_size=4, lr=0.1, kl_coef=0.0, entropy_coef=0.0, ppo_epochs=2)
    tc = GRPOTrainer(c, bandit_reward, bandit_generate(c), cfg2)
    counting(c)
    tc.step(["x"] * 4)
    # sampling (counted inside generate for this policy) + old pass + 2 update passes
    assert calls["n"] == forwards_single + 2
    with pytest.raises(ValueError, match="old_logp"):
        policy_update(c, tc.optimizer, rollouts, adv, None, None, cfg2)


def test_batch_selector_decides_the_trained_rows_and_entropy_schedule():
    model = Bandit()
    seen = {}

    def selector(adv, mask, generator):
        seen["shape"] = tuple(adv.shape)
        return torch.tensor([0, 0, 1]), {"effective": 2}

    cfg = GRPOConfig(group_size=2, entropy_coef=0.02, entropy_warmup=2, entropy_decay=0.5)
    trainer = GRPOTrainer(
        model, bandit_reward, bandit_generate(model), cfg, batch_selector=selector
    )
    stats = trainer.step(["x", "y"])
    assert seen["shape"] == (4, 1) and stats["train_rows"] == 3 and stats["select_effective"] == 2
    assert [cfg.entropy_coef_at(u) for u in (0, 2, 3)] == [0.02, 0.02, 0.01]


def test_grpo_step_with_a_caller_owned_optimizer():
    model = Bandit()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    stats = grpo_step(
        model, None, ["x"] * 8, bandit_reward, bandit_generate(model), opt, group_size=4
    )
    assert math.isfinite(stats["loss"]) and stats["rollout_tokens"] == 32


@pytest.fixture(scope="module")
def tiny_lm():
    from iclr26.models.tinylm import pretrain_tiny_lm

    # the shared tiny Llama, briefly trained on a few stdlib files (seconds, private cache)
    return pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40, threads=1)


def test_logprobs_over_left_padding_match_unpadded_rows(tiny_lm):
    model, tok = tiny_lm
    g = torch.Generator().manual_seed(0)
    prompts = [tok.encode("def f(x):"), tok.encode("import")]
    roll = sample_rollouts(model, prompts, 2, 5, eos_token_id=tok.eos_token_id, generator=g)
    assert isinstance(roll, Rollouts) and len(roll) == 4
    logp, ent = token_logprobs(model, roll, with_entropy=True)
    for r in range(4):
        keep = roll.attention_mask[r].bool()
        ids = roll.input_ids[r][keep][None]
        n_prompt = len(prompts[r // 2])
        with torch.no_grad():
            single = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
        n_resp = int(roll.response_mask[r].sum())
        target = ids[0, n_prompt : n_prompt + n_resp]
        ref = single[n_prompt - 1 : n_prompt - 1 + n_resp].gather(-1, target[:, None])[:, 0]
        assert torch.allclose(logp[r, :n_resp], ref, atol=1e-4)
    assert torch.all(ent >= 0)


def test_hf_generator_and_one_trainer_step_on_the_tiny_lm(tiny_lm):
    model, tok = tiny_lm
    import copy

    model = copy.deepcopy(model)
    gen = HFGenerator(model, tok, max_new_tokens=4, temperature=1.0, top_p=0.95)
    cfg = GRPOConfig(group_size=2, lr=1e-4)

    def reward(prompts, completions, target):
        return [float(t in c) for c, t in zip(completions, target)]

    trainer = GRPOTrainer(model, reward, gen, cfg)
    stats = trainer.step(["x = 1", "def"], target=["1", "f"])
    assert all(math.isfinite(v) for v in stats.values())
    assert stats["rollout_tokens"] <= 2 * 2 * 4


def test_hf_generator_samples_with_the_trainer_generator(tiny_lm):
    """The trainer's seeded generator drives HFGenerator's sampling: two trainers of the same
    seed give the same update whatever torch's global generator holds, and a resumed trainer
    continues bit for bit."""
    import copy

    base, tok = tiny_lm

    def reward(prompts, completions):
        return [float(len(c)) for c in completions]

    def fresh(global_seed):
        model = copy.deepcopy(base)
        gen = HFGenerator(model, tok, max_new_tokens=5, temperature=1.5, top_p=1.0)
        torch.manual_seed(global_seed)  # the global generator differs between the two
        return GRPOTrainer(model, reward, gen, GRPOConfig(group_size=4, lr=1e-2, seed=3))

    a, b = fresh(1), fresh(2)
    stats_a, stats_b = a.step(["def", "x ="]), b.step(["def", "x ="])
    assert stats_a["rollout_tokens"] == stats_b["rollout_tokens"]
    assert torch.equal(a.last["rewards"], b.last["rewards"])
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()):
        assert torch.equal(pa, pb)
    saved = a.state_dict()
    a.step(["import"])
    c = fresh(5)
    c.load_state_dict(saved)
    c.step(["import"])
    for pa, pc in zip(a.policy.parameters(), c.policy.parameters()):
        assert torch.equal(pa, pc)


def test_trl_adapter_trains_only_the_selected_rows(tiny_lm, tmp_path):
    """With TRL installed, the adapter's subclass of ``trl.GRPOTrainer`` runs one real step and
    the loss sees exactly the rows the selector picked, with their own advantages."""
    pytest.importorskip("trl")
    import copy

    from datasets import Dataset
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    from iclr26.rl.grpo import trl_trainer_with_selector

    seen = {}

    class Spy(TRLTrainer):
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            seen["advantages"] = out["advantages"].detach().clone()
            return out

        def compute_loss(self, model, inputs, *args, **kwargs):
            seen.setdefault("loss_advantages", []).append(inputs["advantages"].detach().clone())
            return super().compute_loss(model, inputs, *args, **kwargs)

    def last_two(token_adv, mask, generator):
        assert token_adv.shape == mask.shape and token_adv.shape[0] == 4
        return torch.tensor([3, 3, 1]), {"selected": 3}

    model, tok = tiny_lm
    model = copy.deepcopy(model)
    cfg = TRLConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=4,
        max_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
    )
    trainer = trl_trainer_with_selector(last_two, base=Spy)(
        model=model,
        reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
        args=cfg,
        train_dataset=Dataset.from_dict({"prompt": ["def f", "import os", "x = 1", "class A"]}),
        processing_class=tok,
    )
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    assert trainer._selector_info == {"selected": 3, "trimmed_for_split": 0}
    (used,) = seen["loss_advantages"]
    # TRL shuffles the generated batch before the loss, so compare the rows as a multiset
    torch.testing.assert_close(used.sort().values, seen["advantages"][[3, 3, 1]].sort().values)
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))


def test_trl_adapter_trims_rows_that_trl_would_drop_silently(tiny_lm, tmp_path):
    """TRL splits a generation batch into ``steps_per_generation`` equal chunks and drops the
    remainder without a word; the adapter trims the selection to a multiple and counts it."""
    pytest.importorskip("trl")
    import copy

    from datasets import Dataset
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    from iclr26.rl.grpo import trl_trainer_with_selector

    rows_seen = []

    class Spy(TRLTrainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            rows_seen.append(int(inputs["advantages"].shape[0]))
            return super().compute_loss(model, inputs, *args, **kwargs)

    model, tok = tiny_lm
    cfg = TRLConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        steps_per_generation=2,
        num_generations=4,
        max_completion_length=3,
        max_steps=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
    )
    trainer = trl_trainer_with_selector(lambda a, m, g: (torch.tensor([0, 1, 2]), {}), base=Spy)(
        model=copy.deepcopy(model),
        reward_funcs=lambda completions, **kw: [float(len(c)) for c in completions],
        args=cfg,
        train_dataset=Dataset.from_dict({"prompt": ["def f", "import os"]}),
        processing_class=tok,
    )
    trainer.train()
    assert trainer._selector_info["trimmed_for_split"] == 1
    assert rows_seen == [1, 1]


# ---------------------------------------------------------------- bad input

BAD = [
    ("group size < 2", lambda: grpo_advantages([1.0, 0.0], 1), ValueError, "group_size"),
    (
        "group size not dividing",
        lambda: grpo_advantages([1.0, 0.0, 1.0], 2),
        ValueError,
        "group_size",
    ),
    ("NaN reward", lambda: grpo_advantages([1.0, NAN], 2), ValueError, "rewards"),
    ("inf reward", lambda: grpo_advantages([1.0, float("inf")], 2), ValueError, "rewards"),
    ("empty rewards", lambda: grpo_advantages([], 2), ValueError, "rewards"),
    ("2-D rewards", lambda: grpo_advantages([[1.0, 0.0]], 2), ValueError, "rewards"),
    ("eps <= 0", lambda: grpo_advantages([1.0, 0.0], 2, eps=0.0), ValueError, "eps"),
    ("config group size", lambda: GRPOConfig(group_size=1), ValueError, "group_size"),
    ("config NaN lr", lambda: GRPOConfig(lr=NAN), ValueError, "lr"),
    ("config clip_low >= 1", lambda: GRPOConfig(clip_low=1.0), ValueError, "clip_low"),
    ("config dual clip <= 1", lambda: GRPOConfig(dual_clip=0.5), ValueError, "dual_clip"),
    ("config negative kl", lambda: GRPOConfig(kl_coef=-1.0), ValueError, "kl_coef"),
    ("config entropy decay", lambda: GRPOConfig(entropy_decay=1.5), ValueError, "entropy_decay"),
    (
        "loss NaN logp",
        lambda: policy_loss(
            torch.full((1, 2), NAN), torch.zeros(1, 2), torch.ones(1), torch.ones(1, 2)
        ),
        ValueError,
        "logp",
    ),
    (
        "loss shape",
        lambda: policy_loss(torch.zeros(1, 2), torch.zeros(1, 3), torch.ones(1), torch.ones(1, 2)),
        ValueError,
        "old_logp",
    ),
    (
        "loss advantages length",
        lambda: policy_loss(torch.zeros(2, 2), torch.zeros(2, 2), torch.ones(3), torch.ones(2, 2)),
        ValueError,
        "advantages",
    ),
    ("k3 NaN", lambda: k3_kl(torch.zeros(2), torch.tensor([0.0, NAN])), ValueError, "ref_logp"),
    ("empty prompts", lambda: left_pad([], 0), ValueError, "prompts"),
    (
        "sample n < 1",
        lambda: sample_rollouts(Bandit(), [[1]], 0, 1, eos_token_id=3),
        ValueError,
        "n",
    ),
    (
        "sample temperature",
        lambda: sample_rollouts(Bandit(), [[1]], 2, 1, eos_token_id=3, temperature=0.0),
        ValueError,
        "temperature",
    ),
]


_IDS = torch.ones(2, 4, dtype=torch.long)
BAD += [
    (
        "rollouts response mask shape",
        lambda: Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 3), 2),
        ValueError,
        "response_mask",
    ),
    (
        "rollouts prompt_len 0",
        lambda: Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 4), 0),
        ValueError,
        "prompt_len",
    ),
    (
        "rollouts float ids",
        lambda: Rollouts(_IDS.float(), torch.ones(2, 4), torch.ones(2, 2), 2),
        TypeError,
        "input_ids",
    ),
    (
        "rollouts completions count",
        lambda: Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 2), 2, ["a"]),
        ValueError,
        "completions",
    ),
    (
        "rollouts model_kwargs rows",
        lambda: Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 2), 2, [], {"x": torch.ones(3)}),
        ValueError,
        "model_kwargs",
    ),
    (
        "logprobs of a non-batch",
        lambda: token_logprobs(Bandit(), {"ids": 1}),
        TypeError,
        "rollouts",
    ),
    (
        "update with no optimizer",
        lambda: policy_update(
            Bandit(),
            None,
            Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 2), 2),
            torch.ones(2),
            torch.zeros(2, 2),
            None,
            GRPOConfig(),
        ),
        TypeError,
        "optimizer",
    ),
    (
        "update advantages length",
        lambda: policy_update(
            Bandit(),
            torch.optim.SGD(Bandit().parameters(), lr=0.1),
            Rollouts(_IDS, torch.ones(2, 4), torch.ones(2, 2), 2),
            torch.ones(3),
            torch.zeros(2, 2),
            None,
            GRPOConfig(),
        ),
        ValueError,
        "advantages",
    ),
    (
        "grpo_step in the spec's argument order",
        lambda: grpo_step(Bandit(), None, ["x"], bandit_reward, 8, 0.2, 0.01),
        TypeError,
        "generate",
    ),
    (
        "hf generator foreign rng",
        lambda: HFGenerator(Bandit(), SimpleNamespace(encode=len, decode=str))(
            ["x"], 2, generator=np.random.default_rng(0)
        ),
        TypeError,
        "generator",
    ),
]


@pytest.mark.parametrize("name, call, exc, match", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_with_a_named_error(name, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_nan_rewards_from_a_reward_function_are_refused():
    model = Bandit()
    trainer = GRPOTrainer(
        model, lambda p, c: [NAN] * len(c), bandit_generate(model), GRPOConfig(group_size=2)
    )
    with pytest.raises(ValueError, match="rewards"):
        trainer.step(["x"])
    short = GRPOTrainer(model, lambda p, c: [1.0], bandit_generate(model), GRPOConfig(group_size=2))
    with pytest.raises(ValueError, match="rewards"):
        short.step(["x"])
    one_adv = GRPOTrainer(
        model,
        bandit_reward,
        bandit_generate(model),
        GRPOConfig(group_size=2),
        advantage_fn=lambda r, g: torch.ones(1),  # would broadcast over the batch
    )
    with pytest.raises(ValueError, match="advantage_fn"):
        one_adv.step(["x", "y"])
    bad_sel = GRPOTrainer(
        model,
        bandit_reward,
        bandit_generate(model),
        GRPOConfig(group_size=2),
        batch_selector=lambda a, m, g: (torch.tensor([5]), {}),
    )
    with pytest.raises(ValueError, match="batch_selector"):
        bad_sel.step(["x"])
    with pytest.raises(TypeError, match="policy"):
        GRPOTrainer("not a module", bandit_reward, bandit_generate(model))
