"""Tests of SIREN: the sketcher's liked/disliked rule, the prompt and output formats, the rule
reward, the rating parser, the answer-token positions under left padding, hidden alignment
(zero loss on equal inputs, gradients only in the k/v LoRA, frozen base), biased MF on a
noiseless low-rank matrix, the leave-last-out split, the scikit-learn facade end to end and
every claim at smoke scale."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.llm.siren import (
    BiasedMF,
    GRPOStage,
    HiddenAlignment,
    InterestSketcher,
    SIRENRecommender,
    SketchPrompt,
    UserMean,
    alignment_loss,
    answer_positions,
    ao_answer,
    ao_digit_probs,
    cot_answer_rows,
    cot_target,
    mae_rmse,
    parse_rating,
    predicted_rating,
    ratings_from_probs,
    siren_reward,
    topic_ratings,
)
from iclr26.llm.siren.lm import encode_rows, forward_at_last
from iclr26.llm.siren.prompt import AO_SUFFIX


@pytest.fixture(scope="module")
def lm():
    from iclr26.models.tinylm import load_causal_lm

    model, tok = load_causal_lm("test")
    return model.eval(), tok


def _clustered_sketcher(theta=4.0):
    """Six items in three well-separated clusters, embeddings given directly."""
    emb = np.array([[10, 0], [10.1, 0], [0, 10], [0, 10.1], [-10, -10], [-10.1, -10]], float)
    texts = [
        "rocket orbit",
        "rocket galaxy",
        "chef soup",
        "chef bread",
        "guitar jazz",
        "guitar band",
    ]
    sk = InterestSketcher(n_topics=3, theta=theta, top_m=2, encoder="tfidf")
    return sk.fit(np.arange(6), texts, embeddings=emb)


# ---------------------------------------------------------------- sketcher
def test_sketch_rule_threshold_untouched_and_order():
    sk = _clustered_sketcher()
    t_space, t_food, t_music = (sk.topic_of(i) for i in (0, 2, 4))
    assert len({t_space, t_food, t_music}) == 3
    assert "rocket" in sk.topic_names_[t_space] and "chef" in sk.topic_names_[t_food]
    # space: mean exactly theta (3 + 5) / 2 = 4 -> liked; food: mean 2 -> disliked; music untouched
    history = [(0, 3), (1, 5), (2, 2), (3, 2), (2, 2)]
    liked, disliked = sk.sketch_ids(history)
    assert liked == [t_space] and disliked == [t_food]
    assert t_music not in liked + disliked
    # ordering by count, descending: food (3 picks) before space (2 picks) when both disliked
    liked, disliked = sk.sketch_ids([(0, 1), (1, 1), (2, 2), (3, 2), (2, 2)])
    assert liked == [] and disliked == [t_food, t_space]
    # ties broken by topic id
    _, tied = sk.sketch_ids([(0, 1), (2, 1)])
    assert tied == sorted([t_space, t_food])
    # the budget drops the least frequent topics first (each name is 3 words here)
    _, capped = sk.sketch_ids([(0, 1), (1, 1), (2, 2), (3, 2), (2, 2)], token_budget=3)
    assert capped == [t_food]
    assert sk.sketch([]) == ([], [])


def test_sketch_sets_are_disjoint_and_deterministic():
    data = topic_ratings(seed=0, n_users=5, n_items=120, history=(10, 20))
    a = InterestSketcher(n_topics=8, encoder="tfidf", seed=3).fit(np.arange(120), data.item_text)
    b = InterestSketcher(n_topics=8, encoder="tfidf", seed=3).fit(np.arange(120), data.item_text)
    assert np.array_equal(a.labels_, b.labels_) and a.topic_names_ == b.topic_names_
    for hist in data.histories:
        liked, disliked = a.sketch_ids(hist)
        assert not set(liked) & set(disliked)
        counts, means = a.topic_stats(hist)
        assert set(liked) | set(disliked) == set(np.flatnonzero(counts))
        assert all(means[k] >= 4.0 for k in liked) and all(means[k] < 4.0 for k in disliked)


# ---------------------------------------------------------------- prompt, parser, reward
def test_prompt_text_and_formats():
    sk = _clustered_sketcher()
    texts = [
        "rocket orbit",
        "rocket galaxy",
        "chef soup",
        "chef bread",
        "guitar jazz",
        "guitar band",
    ]
    hist = [(0, 5), (1, 4), (2, 2)]
    p = SketchPrompt(n_recent=2)(hist, 4, texts, sk)
    liked, disliked = sk.sketch(hist)
    assert p == (
        f"Liked: {liked[0]} | Disliked: {disliked[0]}\n"
        "Recent: rocket galaxy = 4 ; chef soup = 2\nCandidate: guitar jazz\n"
    )
    raw = SketchPrompt(raw_history=30)(hist, 4, texts)
    assert raw.startswith("Recent: rocket orbit = 5 ;") and "Liked" not in raw
    assert "Liked" not in SketchPrompt(with_sketch=False)(hist, 4, texts)
    assert ao_answer(4) == "<think></think><answer>4</answer>"
    target = cot_target(hist, 4, 3, sk, n_recent=2)
    assert target.startswith("<think> topic: ") and " ; new ; recent mean 3.0 </think>" in target
    assert parse_rating(target) == (3, True)


def test_parse_rating_edge_cases():
    assert parse_rating("<think> x </think><answer>4</answer>") == (4, True)
    assert parse_rating("<think></think><answer>2</answer><eos>") == (2, True)
    assert parse_rating("<answer>5</answer>") == (5, False)  # no think block
    assert parse_rating("blah <think>a</think><answer>3</answer> trailing") == (3, False)
    assert parse_rating("<think>a</think><answer>7</answer>") == (None, False)
    assert parse_rating("<think>a</think><answer>0</answer>") == (None, False)
    assert parse_rating("no tags at all 4") == (None, False)
    assert parse_rating("<think>a</think><answer>2") == (2, False)
    assert predicted_rating("garbage") == 3 and predicted_rating("<answer>1</answer>") == 1


def test_siren_reward_values():
    good = "<think> t </think><answer>{}</answer>"
    assert siren_reward([good.format(4)], [4]) == [3.0]  # 1 + 2
    assert siren_reward([good.format(1)], [5]) == [-1.0]  # 1 - 2
    assert siren_reward(["<answer>4</answer>"], [4]) == [1.0]  # -1 + 2
    assert siren_reward(["nothing"], [2]) == [-3.0]  # -1 - 2
    errs = siren_reward([good.format(r) for r in (5, 4, 3, 2, 1)], [5] * 5)
    assert np.allclose(np.diff(errs), -1.0)  # linear in |error|, slope 4 / E_max = 1


# ---------------------------------------------------------------- LM plumbing
def test_answer_positions_with_left_padding(lm):
    from iclr26.rl.grpo import left_pad

    _, tok = lm
    answer = tok.encode("<answer>", add_special_tokens=False)
    assert len(answer) == 1
    prompts = ["Recent: a = 4\nCandidate: b\n", "Recent: a much longer history = 2 ; x = 1\n"]
    ao_rows = encode_rows(tok, prompts, AO_SUFFIX)
    gen = [tok.encode("<think> t </think><answer>4</answer>", add_special_tokens=False), [5]]
    cot_rows = cot_answer_rows(tok, prompts, gen)
    for rows in (ao_rows, cot_rows):
        ids, attn = left_pad(rows, tok.pad_token_id)
        assert attn[0].sum() != attn[1].sum()  # padding really happened
        assert torch.equal(answer_positions(ids, answer[0]), torch.full((2,), ids.shape[1] - 1))
    end_think = tok.encode("</think>", add_special_tokens=False)[0]
    # the rationale is cut after </think>; a rationale never closed gets one appended
    assert cot_rows[0][-2] == end_think and cot_rows[1][-2] == end_think


def test_forward_at_last_keeps_only_the_last_logits_also_under_peft(lm):
    from peft import LoraConfig, get_peft_model

    from iclr26.llm.siren.lm import _last_logits_only

    model, tok = lm
    assert _last_logits_only(model) == {"logits_to_keep": 1}
    wrapped = get_peft_model(
        copy.deepcopy(model), LoraConfig(r=2, target_modules=["k_proj", "v_proj"])
    )
    assert _last_logits_only(wrapped) == {"logits_to_keep": 1}
    rows = encode_rows(tok, ["Recent: a = 4\nCandidate: b\n", "Candidate: c\n"], AO_SUFFIX)
    logits, states = forward_at_last(wrapped, rows, tok.pad_token_id, hidden=True)
    with torch.no_grad():
        full = model(input_ids=torch.tensor([rows[1]])).logits[0, -1]
    assert logits.shape == (2, full.shape[0]) and states.shape[:2] == (2, 2)
    assert torch.allclose(logits[1], full, atol=1e-4)  # fresh LoRA (B = 0) changes nothing


def test_cot_decoding_with_last_logits_only_matches_plain_greedy_rollouts(lm):
    from iclr26.llm.siren.lm import generate_cot
    from iclr26.rl.grpo import sample_rollouts

    model, tok = lm
    prompts = ["Recent: a = 4\nCandidate: b\n", "Candidate: c\n"]
    _, ids = generate_cot(model, tok, prompts, max_new_tokens=6)
    ro = sample_rollouts(
        model, encode_rows(tok, prompts), 1, 6, tok.eos_token_id, tok.pad_token_id, greedy=True
    )
    plain = [
        ro.input_ids[r, ro.prompt_len :][ro.response_mask[r].bool()].tolist() for r in range(2)
    ]
    assert ids == plain and all(len(g) >= 1 for g in ids)


def test_ao_scoring_is_one_forward_pass_over_digits(lm):
    model, tok = lm
    prompts = ["Recent: a = 4\nCandidate: b\n", "Recent: c = 1\nCandidate: d\n"]
    probs = ao_digit_probs(model, tok, prompts, batch_size=1)
    assert probs.shape == (2, 5) and np.allclose(probs.sum(1), 1.0)
    ids = torch.tensor([tok.encode(prompts[1] + AO_SUFFIX, add_special_tokens=False)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    digits = [tok.encode(str(r), add_special_tokens=False)[0] for r in range(1, 6)]
    assert np.allclose(probs[1], torch.softmax(logits[digits], -1).numpy(), atol=1e-5)
    # batched and left-padded, with only the last column's logits computed: the same numbers
    batched = ao_digit_probs(model, tok, prompts + ["Candidate: e\n"], batch_size=3)
    assert np.allclose(batched[:2], probs, atol=1e-5)
    assert ratings_from_probs(np.array([[0.1, 0.2, 0.5, 0.1, 0.1]])).tolist() == [3.0]
    assert ratings_from_probs(np.array([[0, 0, 0, 0.5, 0.5]]), expected=True)[0] == 4.5


def test_forward_at_last_right_padded_batch_matches_each_row_alone(lm):
    model, tok = lm
    prompts = ["Recent: a = 4\nCandidate: b\n", "Candidate: c\n", "Recent: x = 1 ; y = 5\n"]
    rows = encode_rows(tok, prompts, AO_SUFFIX)
    assert len({len(r) for r in rows}) == 3  # unequal lengths: the right-padded path
    with torch.no_grad():
        logits, states = forward_at_last(model, rows, tok.pad_token_id, hidden=True)
        for k, row in enumerate(rows):
            alone, alone_states = forward_at_last(model, [row], tok.pad_token_id, hidden=True)
            assert torch.allclose(logits[k], alone[0], atol=1e-4)
            assert torch.allclose(states[k], alone_states[0], atol=1e-4)


def test_supervised_positions_loss_is_the_models_own_loss(lm):
    from iclr26.llm.siren.lm import supervised_positions_loss

    model, tok = lm
    model = copy.deepcopy(model).train()
    pairs = [("Recent: a = 4\nCandidate: b\n", ao_answer(4)), ("Candidate: c\n", ao_answer(2))]
    seqs = [tok.encode(p + c, add_special_tokens=False) for p, c in pairs]
    n_prompt = [len(tok.encode(p, add_special_tokens=False)) for p, _ in pairs]
    width = max(map(len, seqs))
    ids = torch.zeros((2, width), dtype=torch.long)
    attn, labels = torch.zeros_like(ids), torch.full_like(ids, -100)
    for r, seq in enumerate(seqs):  # right-padded, loss on the completion only (as finetune_lm)
        ids[r, : len(seq)], attn[r, : len(seq)] = torch.tensor(seq), 1
        labels[r, n_prompt[r] : len(seq)] = torch.tensor(seq[n_prompt[r] :])

    def loss_and_grads():
        model.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        loss.backward()
        return float(loss.detach()), [p.grad.clone() for p in model.parameters()]

    own, own_grads = loss_and_grads()
    with supervised_positions_loss(model):
        fast, fast_grads = loss_and_grads()
        # a left-padded (masked) batch is not the right-padded case: the model's own forward
        left = model(input_ids=ids.flip(1), attention_mask=attn.flip(1), labels=labels.flip(1))
        assert left.logits.shape == (2, width, model.config.vocab_size)
    assert "forward" not in vars(model)  # the model's own forward is back
    assert fast == pytest.approx(own, rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(own_grads, fast_grads, strict=True))


def test_cot_answer_states_reuse_the_decoding_step_and_match_a_full_pass(lm):
    """Where the model writes ``</think><answer>`` itself, the states at ``<answer>`` come from
    its decoding step; they equal a fresh forward pass over ``x_CoT`` (and so do the rows that
    need that pass)."""
    from iclr26.llm.siren.lm import cot_answer_states, generate_cot

    model, tok = lm
    ids = [tok.encode(t, add_special_tokens=False)[0] for t in ("<think>", "x", "</think>")]
    script = ids + [tok.encode("<answer>", add_special_tokens=False)[0]]

    class Scripted(type(model)):  # greedy decoding writes ``script``, then chooses freely
        def forward(self, input_ids=None, attention_mask=None, position_ids=None, cache=None,
                    use_cache=None, logits_to_keep=0, **kwargs):  # fmt: skip
            out = super().forward(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                cache=cache, use_cache=use_cache, logits_to_keep=logits_to_keep, **kwargs,
            )  # fmt: skip
            self.step = 0 if input_ids.shape[1] > 1 else self.step + 1
            if self.forcing and self.step < len(script):
                out.logits[:, -1] = -1e4
                out.logits[:, -1, script[self.step]] = 1e4
            return out

    scripted = copy.deepcopy(model)
    scripted.__class__, scripted.forcing = Scripted, True
    prompts = ["Recent: a = 4\nCandidate: b\n", "Candidate: c ; d\n", "Recent: x = 1\n"]
    gen, states, logits = cot_answer_states(scripted, tok, prompts, max_new_tokens=6)
    assert all(g[:4] == script for g in gen)  # every row took the decoding-step path
    scripted.forcing = False  # the plain model, for the free rows and the reference pass
    free_gen, free_states, _ = cot_answer_states(scripted, tok, prompts, max_new_tokens=6)
    assert free_gen == generate_cot(model, tok, prompts, max_new_tokens=6)[1]
    for g_all, st_all, lg_all in ((gen, states, logits), (free_gen, free_states, None)):
        rows = cot_answer_rows(tok, prompts, g_all)
        with torch.no_grad():
            for k, row in enumerate(rows):
                lg, st = forward_at_last(model, [row], tok.pad_token_id, hidden=True)
                assert torch.allclose(st_all[k], st[0], atol=1e-4)
                if lg_all is not None:
                    assert torch.allclose(lg_all[k], lg[0], atol=1e-3)


# ---------------------------------------------------------------- hidden alignment
def test_alignment_loss_hand_computation():
    a = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    b = torch.tensor([[[1.0, 1.0], [0.0, -1.0]]])
    want = ((1 - 1 / np.sqrt(2)) + (1 - (-1))) / 2
    assert float(alignment_loss(a, b)) == pytest.approx(want)
    assert float(alignment_loss(a, a)) == pytest.approx(0.0, abs=1e-7)


def test_hidden_alignment_trains_only_kv_lora(lm):
    model, tok = lm
    prompts = ["Recent: a = 4\nCandidate: b\n", "Recent: c = 1 ; e = 2\nCandidate: d\n"]
    ha = HiddenAlignment("ha", rank=2, alpha=4, steps=1, batch_size=2, lr=1e-2)
    student = ha.student(model)
    rows = encode_rows(tok, prompts, AO_SUFFIX)
    with torch.no_grad():  # a fresh LoRA (B = 0) on the teacher's own input: zero loss
        _, h_teacher = forward_at_last(model, rows, tok.pad_token_id, hidden=True)
    _, h_student = forward_at_last(student, rows, tok.pad_token_id, hidden=True)
    assert h_student.shape[1] == model.config.num_hidden_layers
    assert float(alignment_loss(h_student, h_teacher)) == pytest.approx(0.0, abs=1e-6)
    trainable = [n for n, p in student.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n and ("k_proj" in n or "v_proj" in n) for n in trainable)
    base_before = {n: p.detach().clone() for n, p in student.named_parameters() if "lora" not in n}
    targets = {"hidden": torch.randn_like(h_teacher), "probs": torch.full((2, 5), 0.2)}
    loss = ha.loss(student, tok, prompts, None, targets, np.arange(2))
    loss.backward()
    for n, p in student.named_parameters():
        if not p.requires_grad:
            assert p.grad is None, n
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in student.parameters())
    torch.optim.AdamW([p for p in student.parameters() if p.requires_grad], lr=1e-2).step()
    for n, p in student.named_parameters():
        if "lora" not in n:
            assert torch.equal(p, base_before[n]), n
    # the teacher is untouched by the student's construction and training
    assert not any("lora" in n for n, _ in model.named_parameters())


def test_tfidf_fallback_needs_no_sentence_encoder(monkeypatch):
    import sys

    import iclr26.models

    # the import fails now, even where another test has already loaded the encoder module
    monkeypatch.setitem(sys.modules, "iclr26.models.text", None)
    monkeypatch.delattr(iclr26.models, "text", raising=False)
    data = topic_ratings(seed=2, n_users=2, n_items=60, history=(8, 10))
    sk = InterestSketcher(n_topics=4, encoder="tfidf").fit(np.arange(60), data.item_text)
    assert len(sk.topic_names_) == 4 and all(n.count("/") == 2 for n in sk.topic_names_)
    with pytest.raises(ImportError):
        InterestSketcher(n_topics=4, encoder="minilm").fit(np.arange(60), data.item_text)


def test_equal_rewards_in_a_group_give_zero_advantage():
    from iclr26.rl.grpo import grpo_advantages

    same = ["<think> a </think><answer>4</answer>"] * 4
    mixed = ["<think> a </think><answer>4</answer>", "x", "<answer>2</answer>", "<answer>4"]
    rewards = siren_reward(same + mixed, [4] * 8)
    adv = grpo_advantages(rewards, 4)
    assert torch.isfinite(adv).all() and torch.all(adv[:4] == 0) and adv[4] > 0 > adv[5]


def test_grpo_response_logits_policy_gives_the_trainers_log_probs(lm):
    from iclr26.llm.siren.stages import _ResponseLogits
    from iclr26.rl.grpo import sample_rollouts
    from iclr26.rl.grpo.rollout import token_logprobs

    model, tok = lm
    model = copy.deepcopy(model)
    rows = encode_rows(tok, ["Recent: a = 4\nCandidate: b\n", "Candidate: c\n"])
    ro = sample_rollouts(model, rows, 2, 5, tok.eos_token_id, tok.pad_token_id,
                         generator=torch.Generator().manual_seed(0))  # fmt: skip
    tail = [ro.input_ids.shape[1] - ro.prompt_len + 1]
    wrapped = _ResponseLogits(model, tail)
    assert [p for p in wrapped.parameters()] == [p for p in model.parameters()]
    results = []
    for policy in (model, wrapped):
        model.zero_grad(set_to_none=True)
        logp, _ = token_logprobs(policy, ro)
        (logp * ro.response_mask).sum().backward()
        results.append((logp.detach(), [p.grad.clone() for p in model.parameters()]))
    (plain, plain_grads), (fast, fast_grads) = results
    assert torch.isfinite(fast).all() and torch.allclose(plain, fast, atol=1e-5)
    assert all(
        torch.allclose(a, b, atol=1e-5) for a, b in zip(plain_grads, fast_grads, strict=True)
    )
    tail[0] = None  # unknown width: every position, the model's own forward
    assert torch.equal(token_logprobs(wrapped, ro)[0], token_logprobs(model, ro)[0])


def test_grpo_stage_uses_the_spec_defaults():
    cfg = GRPOStage().config()
    assert (cfg.group_size, cfg.clip_low, cfg.clip_high, cfg.kl_coef) == (4, 0.2, 0.2, 0.02)
    assert cfg.dual_clip is None and cfg.entropy_coef == 0.0


# ---------------------------------------------------------------- baselines, data
def test_biased_mf_recovers_a_noiseless_rank2_matrix():
    rng = np.random.default_rng(0)
    n_u, n_i = 30, 40
    P, Q = rng.normal(0, 0.5, (n_u, 2)), rng.normal(0, 0.5, (n_i, 2))
    R = 3.0 + rng.normal(0, 0.3, (n_u, 1)) + rng.normal(0, 0.3, (1, n_i)) + P @ Q.T
    users, items = np.meshgrid(np.arange(n_u), np.arange(n_i), indexing="ij")
    X, y = np.column_stack([users.ravel(), items.ravel()]), R.ravel()
    held = rng.random(len(y)) < 0.2  # generalisation to unseen (user, item) cells
    mf = BiasedMF(k=2, reg=0.0, lr=0.1, epochs=60, batch_size=64).fit(X[~held], y[~held])
    assert mae_rmse(y[~held], mf.predict(X[~held]))[0] < 0.05
    assert mae_rmse(y[held], mf.predict(X[held]))[0] < 0.05
    no_factors = BiasedMF(k=2, reg=0.0, lr=0.1, epochs=60, batch_size=64, init_std=0.0)
    assert mae_rmse(y, no_factors.fit(X, y).predict(X))[0] > 0.1  # the p.q term matters
    um = UserMean().fit(X, y)
    assert np.allclose(um.predict(X[:n_i]), R[0].mean())
    assert um.predict([[99, 0]])[0] == pytest.approx(y.mean())  # unseen user: global mean


def test_biased_mf_is_a_scikit_learn_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    from iclr26.llm.siren.baselines import SKLEARN_EXPECTED_FAILED_CHECKS
    from iclr26.llm.siren.recommender import SKLEARN_EXPECTED_FAILED_CHECKS as REC_FAILED
    from iclr26.sklearn_contract import ARRAY_FIT_CHECKS

    for est, failed in (
        (BiasedMF(epochs=2), SKLEARN_EXPECTED_FAILED_CHECKS),
        (SIRENRecommender(), REC_FAILED),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = check_estimator(est, expected_failed_checks=failed, on_fail=None)
        status = {}
        for r in results:
            status.setdefault(r["check_name"], set()).add(r["status"])
        assert not [k for k, v in status.items() if "failed" in v], status
    for name in REC_FAILED:
        assert name in SIRENRecommender.__doc__
    for name in SKLEARN_EXPECTED_FAILED_CHECKS:
        assert name in BiasedMF.__doc__ or name in ARRAY_FIT_CHECKS


def test_leave_last_out_split_has_no_leakage():
    data = topic_ratings(seed=1, n_users=8, n_items=150, history=(12, 20))
    for split in ("train", "val", "test"):
        for u, i, r, pos in data.targets[split]:
            hist = data.history_before(u, pos)
            assert len(hist) == pos and i not in hist[:, 0]
            assert tuple(data.histories[u][pos]) == (i, r)
    assert all(t[3] == len(data.histories[t[0]]) - 1 for t in data.targets["test"])
    X, y = data.interactions_before("test")
    for u, i, _, _ in data.targets["test"]:
        assert not np.any((X[:, 0] == u) & (X[:, 1] == i))
    assert len(X) == sum(len(h) - 1 for h in data.histories) and y.min() >= 1


# ---------------------------------------------------------------- end to end
def test_recommender_end_to_end_and_unknown_users():
    data = topic_ratings(seed=0, n_users=5, n_items=60, history=(8, 10))
    pairs = np.concatenate(
        [np.column_stack([np.full(len(h) - 1, u), h[:-1, 0]]) for u, h in enumerate(data.histories)]
    )
    ratings = np.concatenate([h[:-1, 1] for h in data.histories])
    rec = SIRENRecommender(
        model="test", n_topics=5, encoder="tfidf", n_recent=3, targets_per_user=1, sft_steps=1,
        grpo_steps=1, ha_steps=1, batch_size=2,
    ).fit(pairs, ratings, item_text=data.item_text)  # fmt: skip
    test = data.targets["test"]
    pred = rec.predict(test[:, :2])
    assert pred.shape == (5,) and set(pred) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert set(rec.predict_cot(test[:2, :2])) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert rec.score(test[:, :2], test[:, 2]) == pytest.approx(
        -rec.mae_rmse(test[:, :2], test[:, 2])[0]
    )
    assert rec.n_train_prompts_ == 5 and len(rec.grpo_.history) == 1
    with pytest.raises(ValueError, match="X: user 99 has no history"):
        rec.predict([[99, 0]])
    rec.set_params(unknown_user="prompt")
    with pytest.warns(UserWarning, match="without history"):
        assert rec.predict([[99, 0], [98, 1]]).shape == (2,)
    assert rec.cold_start_predictions_ == 2


def _assert_figures_open(record, out_dir):
    """Every claim saves at least one figure, and each one is a PNG that opens."""
    from PIL import Image

    assert record["figures"], f"{record['claim']} saved no figure"
    for name in record["figures"]:
        with Image.open(out_dir / name) as image:
            assert image.format == "PNG" and min(image.size) > 0


@pytest.mark.parametrize(
    "name",
    [
        "C1-sketch-saves-tokens",
        "C2-internalised-reasoning",
        "C3-beats-matrix-factorisation",
        "C4-lora-target-ablation",
    ],
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("siren", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert not contract_problems(record)
    _assert_figures_open(record, tmp_path)
    if name == "C4-lora-target-ablation":  # one HA model per LoRA target set, KV against 4
        from iclr26.llm.siren.claims import LORA_TARGET_SETS

        assert set(record["baseline"]) == {"ha_qkv", "ha_qv", "ha_all_linear", "ha_ffn"}
        runs = record["metrics"]["per_seed"][0]
        assert set(runs) == set(LORA_TARGET_SETS)
        assert all(
            np.isfinite(r["alignment_gap"]) and r["alignment_gap"] >= 0 for r in runs.values()
        )
        params = {t: r["lora_parameters"] for t, r in runs.items()}
        assert params["all-linear"] > params["qkv"] > params["kv"] > 0 and params["ffn"] > 0
        # the verdict follows the fixed rule: inconclusive exactly when every variant collapsed
        collapsed = record["metrics"]["pred_entropy_max"] == 0
        assert (record["verdict"] == "inconclusive") == collapsed


def test_lora_target_ablation_is_full_scale_and_adapts_only_its_projections(lm, tmp_path):
    from iclr26.llm.siren.claims import LORA_TARGET_SETS, lora_parameters

    assert (
        run_claim("siren", "C4-lora-target-ablation", "quick", out_dir=tmp_path)["verdict"]
        == "skipped"
    )
    model, _ = lm
    for name, targets in LORA_TARGET_SETS.items():
        student = HiddenAlignment(target_modules=targets, rank=2).student(model)
        trainable = {n: p.numel() for n, p in student.named_parameters() if p.requires_grad}
        adapted = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n in trainable}
        assert adapted == set(targets), name
        assert sum(trainable.values()) == lora_parameters(model, targets, rank=2), name


def test_a_cached_stage_is_trained_once_when_two_callers_ask_at_once(lm, tmp_path):
    import threading
    import time

    from iclr26.llm.siren.claims import _cached_weights

    model, _ = lm
    path, builds = tmp_path / "stage.pt", []

    def build(m):
        builds.append(1)
        time.sleep(0.3)  # the second caller arrives while the first is still training
        with torch.no_grad():
            next(m.parameters()).add_(1.0)
        return m

    out = [None, None]

    def ask(k):
        out[k] = _cached_weights(path, copy.deepcopy(model), build)

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and path.exists()
    first, second = (next(m.parameters()) for m in out)
    assert torch.equal(first, second) and not torch.equal(first, next(model.parameters()))
    _cached_weights(path, copy.deepcopy(model), build)  # a later caller only loads
    assert len(builds) == 1


# ---------------------------------------------------------------- MovieLens-100k


def _write_ml(folder, items, inter):
    (folder / "ml-100k.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
        + "".join(f"{i}\t{t}\t{y}\t{g}\n" for i, t, y, g in items),
        encoding="latin-1",
    )
    (folder / "ml-100k.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        + "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in inter),
        encoding="latin-1",
    )
    return folder


def test_movielens_loader_orders_by_time_and_keeps_every_rating(tmp_path):
    from iclr26.llm.siren import movielens100k

    items = [
        (10, "Alpha", 1995, "Comedy Drama"),
        (20, "Beta", "", "Horror"),
        (30, "Gamma", 1990, ""),
    ]
    # user 7: four ratings out of time order; user 9: two ratings (too few for targets)
    inter = [(7, 30, 4, 300), (7, 10, 5, 100), (9, 20, 1, 50), (7, 20, 2, 200), (9, 10, 3, 60),
             (7, 10, 1, 400)]  # fmt: skip
    with pytest.warns(UserWarning, match="1 user"):
        d = movielens100k(_write_ml(tmp_path, items, inter), train_targets=4)
    assert d.item_text == ["Alpha (1995). Genres: Comedy, Drama", "Beta. Genres: Horror",
                           "Gamma (1990). Genres: "]  # fmt: skip
    np.testing.assert_array_equal(d.histories[0], [[0, 5], [1, 2], [2, 4], [0, 1]])
    np.testing.assert_array_equal(d.histories[1], [[1, 1], [0, 3]])  # kept, no target
    assert sum(len(h) for h in d.histories) == len(inter)
    np.testing.assert_array_equal(d.targets["test"], [[0, 0, 1, 3]])
    np.testing.assert_array_equal(d.targets["val"], [[0, 2, 4, 2]])
    np.testing.assert_array_equal(d.targets["train"], [[0, 1, 2, 1]])  # position 0 has no past


@pytest.mark.parametrize(
    "inter, match",
    [
        ([(1, 99, 3, 10)], "line 2 rates item 99"),
        ([(1, 10, 3.5, 10)], "line 2: rating 3.5"),
        ([(1, 10, 3, 10), (1, 10, "x", 11)], "line 3 has a non-numeric"),
        ([(1, 10, 6, 10)], "rating 6"),
    ],
)
def test_movielens_loader_names_the_bad_line(tmp_path, inter, match):
    from iclr26.llm.siren import movielens100k

    folder = _write_ml(tmp_path, [(10, "Alpha", 1995, "Comedy")], inter)
    with pytest.raises(ValueError, match=match):
        movielens100k(folder)
    (folder / "ml-100k.inter").write_text("user_id:token\titem_id:token\n1\t10\n")
    with pytest.raises(ValueError, match="no column rating, timestamp"):
        movielens100k(folder)


def test_movielens_100k_from_the_recbole_wheel_is_complete():
    pytest.importorskip("recbole", reason="the README's install adds the recbole wheel")
    from iclr26.llm.siren import movielens100k

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every user of ML-100k has at least 20 ratings
        d = movielens100k()
    assert (d.n_users, d.n_items, d.name) == (943, 1682, "ml-100k")
    assert sum(len(h) for h in d.histories) == 100_000
    assert d.item_text[0] == "Toy Story (1995). Genres: Animation, Children's, Comedy"
    assert len(d.targets["test"]) == len(d.targets["val"]) == 943
    assert len(d.targets["train"]) == 943 * 4
    assert set(np.unique(np.concatenate([h[:, 1] for h in d.histories]))) == {1, 2, 3, 4, 5}
    for u, _, _, pos in d.targets["test"]:
        assert pos == len(d.histories[u]) - 1


def test_full_scale_pipeline_reads_movielens_and_names_a_bad_data_choice(monkeypatch, tmp_path):
    from iclr26.claims import Context
    from iclr26.llm.siren import claims as C
    from iclr26.llm.siren import movielens100k

    assert C.settings(Context(scale="full"))["data"] == "ml100k"  # the paper's data by default
    monkeypatch.setenv(C.DATA_ENV, "imdb")
    with pytest.raises(ValueError, match=C.DATA_ENV):
        C.Pipeline(Context(scale="full"), 0)
    # the wiring, on a small folder in the same format (the real file is tested above)
    rng = np.random.default_rng(0)
    items = [(i, f"Film {i}", 1990 + i % 9, "Drama Comedy") for i in range(1, 41)]
    inter = [(u, int(rng.integers(1, 41)), int(rng.integers(1, 6)), t) for u in range(1, 9)
             for t in range(12)]  # fmt: skip
    folder = _write_ml(tmp_path, items, inter)
    monkeypatch.setattr(C, "movielens100k", lambda: movielens100k(folder))
    smoke = C.settings(Context(scale="smoke"))
    monkeypatch.setattr(C, "settings", lambda ctx: dict(smoke, data="ml100k"))
    p = C.Pipeline(Context(scale="smoke"), 0)
    assert p.data.name == "ml-100k" and len(p.prompts["test"]["sketch"]) == smoke["test_n"]
    assert "Genres: Drama, Comedy" in p.prompts["test"]["sketch"][0]


def test_minilm_embeddings_keep_the_input_order_when_batched_by_length():
    """The sketcher encodes descriptions in length order; each row must still be its own
    description's embedding (the unsorted encoder's, to float rounding)."""
    from iclr26.llm.siren.sketch import embed_descriptions
    from iclr26.models import text

    texts = [f"item {i} " + "long words " * (i % 7) for i in range(70)][::-1]
    got = embed_descriptions(texts, "minilm")
    want = text.encode(texts)
    assert got.shape == (70, text.MINILM_DIM)
    assert np.allclose(got, want, atol=1e-5)
    assert not np.allclose(got[0], got[1], atol=1e-3)  # distinct rows, not a broadcast
