"""Tests of ReVisual-R1's pieces: PAD selection (effective set, empty-set fallback, sampling
frequencies for both weightings), the efficient-length reward, the arithmetic tasks over
held-out handwriting, the multimodal policy's image injection, rewards, the staged trainer and
every claim at smoke scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.rl.grpo import grpo_advantages
from iclr26.rl.revisual_r1 import (
    ArithmeticReasoningTasks,
    CharVocab,
    CompositeReward,
    MLLMGenerator,
    PADSelector,
    Problem,
    StageBudget,
    StagedTrainer,
    TinyMLLM,
    accuracy_reward,
    efficient_length_reward,
    evaluate,
    pad_select,
    parse_answer,
    sequence_scores,
    sft,
)


@pytest.fixture(scope="module")
def tasks():
    return ArithmeticReasoningTasks(seed=0, ops=("+", "-"))


# ---------------------------------------------------------------- PAD


def _binary_group_advantages():
    # 4 groups of 8: all wrong, all right, 1 right, 4 right
    rewards = [0] * 8 + [1] * 8 + [1] + [0] * 7 + [1] * 4 + [0] * 4
    return grpo_advantages(torch.tensor(rewards, dtype=torch.float32), 8)


def test_pad_never_selects_outside_the_effective_set():
    adv = _binary_group_advantages()
    mask = torch.ones(32, 5)
    idx, info = pad_select(adv[:, None] * mask, mask, generator=torch.Generator().manual_seed(0))
    s = sequence_scores(adv[:, None] * mask, mask)
    effective = (s > 0.03) & (s < 0.97)
    assert torch.all(effective[idx])
    assert len(idx) == int(1.5 * 32) and info["effective"] == int(effective.sum())
    # the lone correct answer (|A| ~ 2.47) is above T_high: dropped, and counted
    assert info["dropped_high"] == 1 and 16 not in idx.tolist()
    idx_all, info_all = pad_select(adv, high=None, generator=torch.Generator().manual_seed(0))
    assert 16 in torch.unique(idx_all).tolist() or info_all["effective"] == 17


def test_pad_keeps_the_original_batch_when_every_advantage_is_zero():
    adv = torch.zeros(16, 4)
    idx, info = pad_select(adv, torch.ones(16, 4))
    assert torch.equal(idx, torch.arange(16)) and info["kept_original"] == 1


def test_pad_without_replacement_returns_at_most_the_effective_set():
    adv = _binary_group_advantages()
    idx, info = pad_select(adv, replacement=False, generator=torch.Generator().manual_seed(1))
    assert len(idx) == info["effective"] == len(set(idx.tolist()))


@pytest.mark.parametrize("weighting", ["power", "softmax"])
def test_pad_sampling_frequencies_match_the_weights(weighting):
    scores = torch.tensor([0.1, 0.3, 0.6, 0.9])
    n_draw = 10_000
    idx, _ = pad_select(
        scores,
        ratio=n_draw / 4,
        weighting=weighting,
        temperature=0.5,
        alpha=1.5,
        generator=torch.Generator().manual_seed(0),
    )
    assert len(idx) == n_draw
    w = (
        (scores.double() + 1e-8) ** 1.5
        if weighting == "power"
        else torch.softmax(scores.double() / 0.5, 0)
    )
    p = (w / w.sum()).numpy()
    freq = np.bincount(idx.numpy(), minlength=4) / n_draw
    sigma = np.sqrt(p * (1 - p) / n_draw)
    assert np.all(np.abs(freq - p) <= 3 * sigma)


def test_sequence_scores_length_normalisation():
    adv = torch.tensor([[1.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert torch.allclose(sequence_scores(adv, mask), torch.tensor([1.0, 2.0]), atol=1e-6)
    assert torch.allclose(
        sequence_scores(adv, mask, normalize_by_length=False), torch.tensor([2.0, 2.0])
    )


def test_pad_selector_logs_every_call():
    sel = PADSelector(high=None)
    sel(torch.tensor([[0.5], [0.0]]), torch.ones(2, 1))
    assert len(sel.log) == 1 and sel.log[0]["effective"] == 1


def test_efficient_length_reward_formula_and_clipping():
    budget = 1000
    r = efficient_length_reward([budget - 100, budget, budget + 100, 0, 10_000], budget)
    assert r[:3] == pytest.approx([0.005 * 100 + 0.5, 0.5, 0.5 - 0.005 * 100])
    assert r[3] == 1.0 and r[4] == 0.0


# ---------------------------------------------------------------- tasks, vocab, rewards


def test_problems_answers_traces_and_held_out_handwriting(tasks):
    p = Problem((3, 4, 5), ("+", "-"))
    assert p.answer == 2 and p.prompt == "(3+4)-5="
    assert p.chain_of_thought == "<think>3+4=7;7-5=2</think><answer>2</answer>"
    img = tasks.sample(5, split="test", modality="image", n_steps=2, rng=np.random.default_rng(0))
    assert all(q.images.shape == (3, 64) and q.prompt.count("<img>") == 3 for q in img)
    train = {tuple(x) for d in range(10) for x in tasks.scans(d, "train")}
    test = {tuple(x) for d in range(10) for x in tasks.scans(d, "test")}
    assert not train & test
    assert 0.25 < sum(len(tasks.scans(d, "test")) for d in range(10)) / 1797 < 0.35


def test_char_vocab_round_trip():
    v = CharVocab()
    text = "(<img>+3)*2=<think>1+3=4;4*2=8</think><answer>-8</answer>"
    assert v.decode(v.encode(text)) == text
    with pytest.raises(ValueError, match="text"):
        v.encode("x")


def test_rewards():
    assert parse_answer("<think>..</think><answer>-12</answer>") == -12
    assert parse_answer("<answer>oops") is None
    probs = [Problem((2, 3), ("*",))] * 2
    assert accuracy_reward(probs, ["<answer>6</answer>", "<answer>5</answer>"]).tolist() == [
        1.0,
        0.0,
    ]
    comp = CompositeReward(weights={"accuracy": 0.8, "length": 0.05}, length_budget=10)
    r = comp(probs, ["<answer>6</answer>", "<answer>5</answer>"])
    assert r[0] - r[1] == pytest.approx(0.8)


# ---------------------------------------------------------------- policy and stages


def test_images_are_injected_at_their_slots_and_never_emitted(tasks):
    policy = TinyMLLM(seed=0).eval()
    v = policy.vocab
    ids = torch.tensor([[1, *v.encode("<img>+<img>=")]])
    a = torch.from_numpy(np.stack([tasks.scans(3)[0], tasks.scans(4)[0]]))[None]
    b = a.clone()
    b[0, 1] = torch.from_numpy(tasks.scans(9)[0])
    with torch.no_grad():
        la, lb = policy(input_ids=ids, images=a).logits, policy(input_ids=ids, images=b).logits
    assert torch.allclose(la[0, :3], lb[0, :3]) and not torch.allclose(la[0, 3:], lb[0, 3:])
    assert float(la[..., v.image_token_id].max()) < -1e8
    with pytest.raises(ValueError, match="image"):
        policy(input_ids=ids)


def test_policy_survives_bf16_and_a_save_pretrained_round_trip(tasks, tmp_path):
    """The vision adapter follows the model's dtype (float32 scans into a bf16 adapter), and
    save_pretrained -> from_pretrained gives back the same weights, dtype and logits."""
    from iclr26.rl.grpo import token_logprobs

    policy = TinyMLLM(seed=0).to(torch.bfloat16).eval()
    problems = tasks.sample(2, modality="image")
    roll = MLLMGenerator(policy)(problems, 2, generator=torch.Generator().manual_seed(0))
    logp, _ = token_logprobs(policy, roll)
    assert torch.isfinite(logp).all() and roll.model_kwargs["images"].dtype == torch.float32
    policy.save_pretrained(tmp_path / "mllm")
    back = TinyMLLM.from_pretrained(tmp_path / "mllm").eval()
    assert isinstance(back.vocab, CharVocab) and next(back.parameters()).dtype == torch.bfloat16
    for (name, a), (_, b) in zip(policy.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), name
    ids = roll.input_ids[:2]
    with torch.no_grad():
        la = policy(input_ids=ids, images=roll.model_kwargs["images"][:2]).logits
        lb = back(input_ids=ids, images=roll.model_kwargs["images"][:2]).logits
    torch.testing.assert_close(la, lb, atol=0.05, rtol=0.0)  # bf16 kernels may differ slightly


def test_sft_then_rl_stage_runs_end_to_end(tasks):
    torch.manual_seed(0)
    budget = StageBudget(
        base_steps=5, cold_start_steps=5, rl_updates=2, rl_prompts=2, max_new_tokens=8
    )
    st = StagedTrainer(tasks=tasks, stages=["base", "text_cold_start", "mrl", "trl"], seed=0)
    logs = st.run(budget)
    assert [log.stage for log in logs] == ["base", "text_cold_start", "mrl", "trl"]
    assert len(logs[2].rl) == 2 and len(logs[2].pad) == 2
    assert all(np.isfinite(s["loss"]) for log in logs[2:] for s in log.rl)
    acc = st.evaluate(n=4, max_new_tokens=8)
    assert 0.0 <= acc <= 1.0


def test_sft_learns_captions(tasks):
    policy = TinyMLLM(seed=1)
    examples = [(p, p.direct_answer) for p in tasks.captions(64, rng=np.random.default_rng(0))]
    losses = sft(policy, examples, steps=30, lr=3e-3, batch=16)
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    out = MLLMGenerator(policy, max_new_tokens=4)(
        [examples[0][0]], 2, generator=torch.Generator().manual_seed(0)
    )
    assert len(out) == 2 and out.model_kwargs["images"].shape == (2, 1, 64)
    assert 0.0 <= evaluate(policy, tasks, n=4, max_new_tokens=6) <= 1.0


def _assert_figures_open(record, out_dir):
    """Every claim saves at least one figure, and each one is a PNG that opens."""
    from PIL import Image

    assert record["figures"], f"{record['claim']} saved no figure"
    for name in record["figures"]:
        with Image.open(out_dir / name) as image:
            assert image.format == "PNG" and min(image.size) > 0


@pytest.mark.parametrize("name", ["pad-gradient-stagnation", "text-cold-start", "staged-text-rl"])
def test_claims_at_smoke_scale(name, tmp_path):
    record = run_claim("revisual_r1", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    _assert_figures_open(record, tmp_path)
    if name == "pad-gradient-stagnation":
        m = record["metrics"]
        assert m["grpo_updates_per_s"] > 0 and m["grpo_rollout_tokens_per_s"] > 0
        assert m["update_timing"]["count_rollout_tokens"] > 0
        assert "useful_frac" in record["baseline"]["grpo"]
