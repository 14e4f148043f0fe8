import json
import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from iclr26.claims import contract_problems, run_claim
from iclr26.knowledge.chronoplay import (
    PERSONAS,
    TOPICS,
    CommunityQuestion,
    DualDynamicUpdater,
    ExtractiveTemplateGenerator,
    GazetteerNER,
    LLMGenerator,
    QAStore,
    QATuple,
    RuleJudge,
    Snippet,
    SynthesisError,
    SynthesisPipeline,
    Template,
    ToyGameWorld,
    evaluate_answers,
    evaluate_retrieval,
    infer_relation,
    inherit_by_topic,
    jsd,
    match_change_points,
    partition_phases,
    ranking_metrics,
    semantic_dedup,
    stale_rate,
    target_counts,
    topic_misalignment,
    weighted_jsd,
)


@pytest.fixture(scope="module")
def world():
    return ToyGameWorld(
        seed=1,
        months=6,
        n_entities=36,
        n_patches=2,
        n_shifts=1,
        questions_per_month=200,
        patch_fraction=0.3,
    )


@pytest.fixture(scope="module")
def stream(world):
    return world.community_questions()


@pytest.fixture(scope="module")
def pipe(world, stream):
    return SynthesisPipeline("bm25", ner=world.ner).mine(stream, PERSONAS)


# ------------------------------------------------------------------ drift statistic
def test_weighted_jsd_identities_and_hand_value():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(21)), rng.dirichlet(np.ones(21))
    assert weighted_jsd(p, p) == 0.0 and jsd(p, p) == 0.0
    assert weighted_jsd(p, q) == pytest.approx(weighted_jsd(q, p))
    # unweighted: scipy's distance squared (natural log), bounded by log 2
    assert jsd(p, q) == pytest.approx(jensenshannon(p, q) ** 2)
    assert jsd([1, 0], [0, 1]) == pytest.approx(math.log(2))
    # gamma = 0: uniform weights over topics with M > 0, i.e. JSD / |support|
    p2, q2 = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    assert weighted_jsd(p2, q2, gamma=0) == pytest.approx(jsd(p2, q2) / 3)
    # hand computation, two topics, gamma = 1: M = (0.5, 0.5), w = (0.5, 0.5)
    a, b = np.array([0.8, 0.2]), np.array([0.2, 0.8])
    term = 0.5 * (0.8 * math.log(0.8 / 0.5) + 0.2 * math.log(0.2 / 0.5))
    assert weighted_jsd(a, b, gamma=1.0) == pytest.approx(0.5 * term + 0.5 * term)
    # counts are normalised
    assert weighted_jsd([2, 2], [1, 3]) == pytest.approx(weighted_jsd([0.5, 0.5], [0.25, 0.75]))


def test_partition_finds_one_planted_shift():
    rng = np.random.default_rng(3)
    days = np.sort(rng.uniform(0, 300, 6000))
    base, shifted = np.full(21, 1 / 21), np.full(21, 1 / 21)
    shifted[[0, 1, 2]] *= 4
    shifted /= shifted.sum()
    topics = [rng.choice(21, p=(base if d < 150 else shifted)) for d in days]
    stream = [CommunityQuestion("q", float(d), TOPICS[t]) for d, t in zip(days, topics)]
    part = partition_phases(stream, window_days=40, threshold=1e-3)
    assert len(part.boundaries) == 1 and 150 <= part.boundaries[0] <= 190  # within one window
    assert part.n_phases == 2 and part.phases()[0][1] == part.boundaries[0]
    m = match_change_points(part.boundaries, [150.0], 40)
    assert m["recall"] == 1.0 and m["false_boundaries"] == 0


# ------------------------------------------------------------------ inheritance
def test_target_counts_and_inheritance():
    mix = np.zeros(21)
    mix[:3] = [0.5, 0.3, 0.2]
    t = target_counts(mix, 11)
    assert sum(t.values()) == 11
    assert t == {TOPICS[0]: 6, TOPICS[1]: 3, TOPICS[2]: 2}  # floors 5, 3, 2; remainder to largest
    snip = Snippet("A x is 1.", 0.0, {"A"}, "s")
    pool = [QATuple.from_refs(f"q{i}", "1", [snip], TOPICS[i % 2]) for i in range(10)]  # 5 + 5
    kept, deficit = inherit_by_topic(pool, {TOPICS[0]: 3, TOPICS[1]: 7}, np.random.default_rng(0))
    assert sum(d.topic == TOPICS[0] for d in kept) == 3  # surplus down-sampled
    assert sum(d.topic == TOPICS[1] for d in kept) == 5  # never more than available
    assert deficit == {TOPICS[1]: 2}
    assert all(any(d is p for p in pool) for d in kept)


def test_knowledge_update_replaces_exactly_the_touched_tuples(world, pipe):
    corpus = world.authority_snippets()
    upd = DualDynamicUpdater(pipe, size=20)
    tuples = [pipe.synthesize(TOPICS[i % 21], corpus, rng=i) for i in range(20)]
    target = sorted(tuples[0].entities)[0]
    note = Snippet(
        f"Patch 9 notes: {target} price in gold is now 10 (was 20).",
        99.0,
        {target},
        "patch-x",
        "patch",
    )
    new, new_corpus = upd.knowledge_update(tuples, corpus, [note])
    assert len(new_corpus) == len(corpus) + 1 and new_corpus[-1] is note
    for old, fresh in zip(tuples, new):
        if target in old.entities:
            assert fresh is not old and fresh.origin == "knowledge" and fresh.topic == old.topic
        else:
            assert fresh is old


def test_run_origin_accounting_and_freshness(world, pipe, stream):
    auth, ann = world.authority_snippets(), world.announcements()
    part = partition_phases(stream, window_days=45, threshold=5e-4)
    res = {}
    for mode in ("dual", "static", "rebuild"):
        upd = DualDynamicUpdater(pipe, window_days=45, size=40, mode=mode, seed=0)
        res[mode] = (upd.run(auth, ann, stream, partition=part), upd)
    slices, upd = res["dual"]
    assert upd.shortfall == 0 and len(slices) == part.n_phases
    for sl in slices:
        assert sum(sl.origin_counts().values()) == 40 == len(sl.tuples)
        assert stale_rate(sl, world) == 0.0
    assert slices[0].origin_counts()["launch"] == 40
    assert res["rebuild"][1].synthesized == 40 * part.n_phases
    assert stale_rate(res["static"][0][-1], world) > 0  # patches made some answers wrong
    assert topic_misalignment(slices[-1]) <= topic_misalignment(res["static"][0][-1]) + 1e-12


# ------------------------------------------------------------------ generation and judge
def test_extractive_generator_cites_the_newest_statement(world, pipe):
    corpus = world.authority_snippets()
    weapon = world.by_type["WEAPON"][0]
    old = world.value(weapon, "damage", 0.0)
    patch = Snippet(
        f"Patch 1.9 notes: {weapon} damage is now {old + 7} (was {old}).",
        50.0,
        world.ner(weapon),
        "p-1",
        "patch",
    )
    gen = ExtractiveTemplateGenerator()
    tmpl = Template("How much damage does [WEAPON] deal?", "Gameplay Mechanics")
    page = next(s for s in corpus if s.content.startswith(weapon))
    fields = {
        "template": tmpl,
        "refs": [page],
        "corpus": corpus + [patch],
        "ner": world.ner,
        "persona": None,
        "rng": np.random.default_rng(0),
    }
    out = gen(fields)
    assert out["answer"] == str(old + 7) and out["refs"] == [patch]
    qa = QATuple.from_refs(out["question"], out["answer"], out["refs"], tmpl.topic)
    assert qa.timestamp == 50.0 and out["answer"] in " ".join(r.content for r in qa.refs)
    fields["corpus"] = corpus
    assert gen(fields)["answer"] == str(old)
    assert infer_relation("Where is the boss that drops [ITEM] located?")[0] == "multi-hop"
    assert infer_relation("Which deals more damage, [WEAPON] or [WEAPON]?")[0] == "comparative"


def test_timestamp_is_none_without_times():
    qa = QATuple.from_refs("q", "a", [Snippet("x", None)], TOPICS[0])
    assert qa.timestamp is None and qa.entities == frozenset()


def test_rule_judge_and_retry_loop(world, pipe):
    snip = Snippet("Alpha Blade damage is 40.", 0.0, {"Alpha Blade"}, "a")
    good = QATuple.from_refs("How much damage does Alpha Blade deal?", "40", [snip], TOPICS[0])
    bad = QATuple.from_refs("How much damage does Alpha Blade deal?", "99", [snip], TOPICS[0])
    judge = RuleJudge()
    assert judge(good) and not judge(bad)
    assert "answer not supported by the refs" in judge.problems(bad)
    corpus = world.authority_snippets()
    seen = []

    def reject(qa):
        seen.append(qa.meta["template"])
        return False

    p = SynthesisPipeline("bm25", judge=reject, ner=world.ner, templates=pipe.templates)
    topic = "Gameplay Mechanics"
    with pytest.raises(SynthesisError):
        p.synthesize(topic, corpus, rng=0)
    assert p.stats["attempts"] == 5 and p.stats["judge_rejections"] == 5
    allowed = {t.text for t in pipe.templates if t.topic == topic}
    assert set(seen) <= allowed and len(set(seen)) == min(5, len(allowed))

    def boom(qa):
        raise RuntimeError("judge down")

    p2 = SynthesisPipeline("bm25", judge=boom, ner=world.ner, templates=pipe.templates)
    with pytest.raises(SynthesisError):
        p2.synthesize(topic, corpus, rng=0)
    assert p2.stats["judge_errors"] == 5 and "judge down" in p2.errors[0]


def test_llm_generator_parses_the_json_answer(world, pipe):
    corpus = world.authority_snippets()
    weapon = world.by_type["WEAPON"][1]
    dmg = world.value(weapon, "damage", 0.0)
    prompts = []

    def fake(prompt):
        prompts.append(prompt)
        if "plausible" in prompt:
            return (
                f'<json>{{"question": "How much damage does {weapon} deal?", "answer": "x"}}</json>'
            )
        return (
            f'Sure. <json>[{{"question": "How much damage does {weapon} deal?", '
            f'"answer": "{dmg}", "references": [0]}}]</json>'
        )

    p = SynthesisPipeline(
        "bm25",
        generator=LLMGenerator(fake),
        ner=world.ner,
        templates=[Template("How much damage does [WEAPON] deal?", "Gameplay Mechanics")],
    )
    qa = p.synthesize("Gameplay Mechanics", corpus, rng=0)
    assert isinstance(qa, QATuple) and qa.answer == str(dmg) and len(qa.refs) == 1
    assert weapon in qa.refs[0].content and qa.refs[0].id.startswith("wiki")
    assert "Reference documents" in prompts[-1]


def test_semantic_dedup_removes_a_paraphrase_only():
    texts = [
        "How much damage does [WEAPON] deal?",
        "How much damage does [WEAPON] deal now?",
        "Which boss drops [ITEM]?",
    ]
    assert semantic_dedup(texts, 0.7) == [0, 2]
    assert semantic_dedup(texts, 0.999) == [0, 1, 2]


def test_gazetteer_longest_match_case_insensitive():
    ner = GazetteerNER({"Ash": "ITEM", "Ash Blade": "WEAPON"})
    assert ner("the ash blade and ASH") == {"Ash Blade", "Ash"}
    assert ner.tag("Is Ash Blade good?") == ("Is [WEAPON] good?", ["Ash Blade"])


# ------------------------------------------------------------------ store and evaluation
def test_store_resumes_without_calling_the_generator(world, pipe, stream, tmp_path):
    auth, ann = world.authority_snippets(), world.announcements()
    part = partition_phases(stream, window_days=45, threshold=5e-4)
    path = tmp_path / "qa.jsonl"
    first = DualDynamicUpdater(pipe, window_days=45, size=30, store=path)
    a = first.run(auth, ann, stream, partition=part)
    n_lines = len(path.read_text().splitlines())
    assert n_lines == first.synthesized
    with path.open("a") as fh:
        fh.write('{"request": 99999, "tuple": {"quest')  # a torn last line
    calls = []

    def broken(fields):
        calls.append(1)
        raise RuntimeError("no generator on resume")

    replay = SynthesisPipeline("bm25", generator=broken, ner=world.ner, templates=pipe.templates)
    second = DualDynamicUpdater(replay, window_days=45, size=30, store=path)
    b = second.run(auth, ann, stream, partition=part)
    assert not calls and second.replayed == first.synthesized and second.store.torn_lines == 1
    assert [t.question for t in a[-1].tuples] == [t.question for t in b[-1].tuples]
    out = a[-1].to_jsonl(tmp_path / "slice.jsonl")
    rec = json.loads(out.read_text().splitlines()[0])
    assert {"question", "answer", "references", "question_topic", "time", "entities"} <= set(rec)
    assert len(QAStore(path)) == first.synthesized


class _CrashAfter(ExtractiveTemplateGenerator):
    """The offline generator, killed (KeyboardInterrupt) at its ``limit``-th call."""

    def __init__(self, limit=None):
        super().__init__()
        self.limit, self.calls = limit, 0

    def __call__(self, fields):
        self.calls += 1
        if self.limit is not None and self.calls >= self.limit:
            raise KeyboardInterrupt("killed mid-run")
        return super().__call__(fields)


def test_interrupted_run_keeps_every_accepted_tuple_and_resumes(world, pipe, stream, tmp_path):
    auth, ann = world.authority_snippets(), world.announcements()
    part = partition_phases(stream, window_days=45, threshold=5e-4)

    def updater(generator, store=None):
        p = SynthesisPipeline("bm25", generator=generator, ner=world.ner)
        p.set_assets(pipe.templates, pipe.personas)
        return DualDynamicUpdater(p, window_days=45, size=30, store=store)

    reference = updater(_CrashAfter())
    ref_slices = reference.run(auth, ann, stream, partition=part)
    path = tmp_path / "qa.jsonl"
    killed = updater(_CrashAfter(limit=reference.pipeline.stats["generator_calls"] // 2), path)
    with pytest.raises(KeyboardInterrupt):
        killed.run(auth, ann, stream, partition=part)
    accepted = killed.pipeline.stats["accepted"]
    assert 0 < accepted < reference.synthesized
    assert len(QAStore(path)) == accepted  # every tuple accepted before the kill is on disk
    with path.open("a") as fh:
        fh.write('{"request": 4242, "tuple": {"quest')  # the write the kill tore
    resumed = updater(_CrashAfter(), path)
    slices = resumed.run(auth, ann, stream, partition=part)
    assert resumed.replayed == accepted and resumed.store.torn_lines == 1
    # only the requests that were not stored reach the generator again
    requests = reference.pipeline.stats["requests"]
    assert resumed.pipeline.stats["requests"] == requests - accepted
    for a, b in zip(ref_slices, slices, strict=True):
        assert [t.question for t in a.tuples] == [t.question for t in b.tuples]
        assert [t.answer for t in a.tuples] == [t.answer for t in b.tuples]
    # the tuples appended after the torn line are readable: nothing synthesised is lost
    again = QAStore(path)
    assert len(again) == reference.synthesized and again.torn_lines == 1


def test_ranking_metrics_by_hand():
    m = ranking_metrics([["a", "x", "b"]], [{"a", "b"}], (1, 3))
    assert m["recall@1"][0] == 0.5 and m["recall@3"][0] == 1.0
    assert m["f1@3"][0] == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    dcg = 1 + 1 / math.log2(4)
    assert m["ndcg@3"][0] == pytest.approx(dcg / (1 + 1 / math.log2(3)))


def test_evaluate_retrieval_and_answers(world, pipe, stream):
    auth, ann = world.authority_snippets(), world.announcements()
    part = partition_phases(stream, window_days=45, threshold=5e-4)
    slices = DualDynamicUpdater(pipe, window_days=45, size=20).run(
        auth, ann, stream, partition=part
    )
    rows = evaluate_retrieval("bm25", slices, k=(1, 3))
    assert len(rows) == len(slices)
    assert all(0 <= r["recall@1"] <= r["recall@3"] <= 1 for r in rows)
    tuples = slices[-1].tuples
    perfect = evaluate_answers([t.answer for t in tuples], tuples)
    assert perfect == {"correctness": 1.0, "faithfulness": 1.0}
    assert evaluate_answers(["no idea"] * len(tuples), tuples)["correctness"] == 0.0


# ------------------------------------------------------------------ claims at smoke scale
@pytest.mark.parametrize(
    "name", ["dual-dynamic-maintenance", "drift-detection", "retrieval-volatility"]
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("chronoplay", name, scale="smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert not contract_problems(record)
    assert record["figures"]


def test_cli_build_writes_slices(tmp_path):
    import argparse

    from iclr26.knowledge.chronoplay import cli

    parser = argparse.ArgumentParser()
    cli.configure(parser)
    args = parser.parse_args(
        [
            "build",
            "--out",
            str(tmp_path),
            "--months",
            "4",
            "--entities",
            "30",
            "--patches",
            "1",
            "--shifts",
            "1",
            "--size",
            "25",
            "--window-days",
            "30",
        ]
    )
    assert cli.run(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["phases"] and (tmp_path / "phase_0.jsonl").exists()
    assert all(sum(p["origins"].values()) == 25 for p in summary["phases"])
    bad = parser.parse_args(["build", "--out", str(tmp_path), "--size", "0", "--months", "2"])
    assert cli.run(bad) == 2


def test_persona_threshold_gates_the_match(world, pipe):
    corpus = world.authority_snippets()
    never = SynthesisPipeline(
        "bm25", ner=world.ner, templates=pipe.templates, personas=PERSONAS, persona_threshold=1.0
    )
    always = SynthesisPipeline(
        "bm25", ner=world.ner, templates=pipe.templates, personas=PERSONAS, persona_threshold=-1.0
    )
    topic = "Performance Issues"
    assert never.synthesize(topic, corpus, rng=4).persona is None
    qa = always.synthesize(topic, corpus, rng=4)
    lead = next(p.lead for p in PERSONAS if p.text == qa.persona)
    assert qa.question.startswith(lead)
