import json
from pathlib import Path

import numpy as np
import pytest

from iclr26.claims import run_claim
from iclr26.llm.gneissweb import (
    EnsembleFilter,
    ExtremeTokenizedAnnotator,
    GneissWebPipeline,
    KneserNeyTrigramLM,
    ShardedExactSubstringDedup,
    SyntheticWebCorpus,
    calibrate_thresholds,
    duplicate_token_mask,
    exact_line_dedup,
    mcalpine_eflaw,
)
from iclr26.llm.gneissweb.cli import configure, run
from iclr26.llm.gneissweb.recipe import train_recipe


def brute_force_mask(docs, L):
    seen = set()
    masks = [np.zeros(len(d), dtype=bool) for d in docs]
    for i, d in enumerate(docs):
        for p in range(len(d) - L + 1):
            window = tuple(d[p : p + L])
            if window in seen:
                masks[i][p : p + L] = True
            seen.add(window)
    return masks


@pytest.mark.parametrize("seed", range(40))
def test_suffix_array_dedup_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    alphabet = int(rng.integers(2, 5))
    L = int(rng.integers(4, 7))
    docs = [
        rng.integers(0, alphabet, size=int(rng.integers(0, 40))).astype(np.uint16)
        for _ in range(int(rng.integers(2, 7)))
    ]
    got = duplicate_token_mask(docs, length_threshold=L)
    want = brute_force_mask(docs, L)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_no_match_across_documents():
    a = np.array([1, 2, 3, 4], dtype=np.uint16)
    b = np.array([5, 6, 7, 8], dtype=np.uint16)
    docs = [a, b, np.array([3, 4, 5, 6], dtype=np.uint16)]  # 3 4 | 5 6 spans a boundary
    assert not any(m.any() for m in duplicate_token_mask(docs, length_threshold=4))


def test_retain_first_copy_keeps_exactly_one():
    span = np.arange(10, 20, dtype=np.uint16)
    docs = [np.concatenate([[i + 100], span, [i + 200]]).astype(np.uint16) for i in range(4)]
    keep_first = duplicate_token_mask(docs, length_threshold=5)
    assert not keep_first[0].any()
    assert all(m[1:11].all() and not m[0] and not m[11] for m in keep_first[1:])
    remove_all = duplicate_token_mask(docs, length_threshold=5, retain_first_copy=False)
    assert all(m[1:11].all() for m in remove_all)


def test_frequency_threshold():
    span = np.arange(10, 16, dtype=np.uint16)
    twice = [span, span.copy(), np.array([1, 2, 3, 4, 5], dtype=np.uint16)]
    assert not any(m.any() for m in duplicate_token_mask(twice, 5, frequency_threshold=2))
    thrice = [span, span.copy(), span.copy()]
    assert duplicate_token_mask(thrice, 5, frequency_threshold=2)[2].all()


def test_dedup_on_text_removes_spans_and_is_nearly_idempotent():
    corpus = SyntheticWebCorpus(n_docs=60, seed=3, n_boilerplate=5, copies=(3, 6), max_files=30)
    dedup = ShardedExactSubstringDedup(length_threshold=50)
    once, report = dedup.dedup_shard(corpus.texts)
    assert report.chars_removed > 0
    twice, report2 = dedup.dedup_shard(once)
    assert report2.chars_removed <= 0.01 * report.chars_removed


def test_shards_are_independent():
    text = " ".join(f"word{i}" for i in range(80))
    dedup = ShardedExactSubstringDedup(length_threshold=20)
    out_a, _ = dedup.dedup_shard(["intro " + text])
    out_b, _ = dedup.dedup_shard(["other " + text])
    assert text in out_a[0] and text in out_b[0]
    out, rep = dedup.dedup_shard(["intro " + text, "other " + text])
    assert text in out[0] and text not in out[1] and rep.spans_removed == 1


def test_line_granularity_removes_whole_lines():
    block = " ".join(f"token{i}" for i in range(60))
    texts = [f"first line\n{block}\nlast", f"keep me {block} tail\nsecond line"]
    dedup = ShardedExactSubstringDedup(length_threshold=20, granularity="line")
    out, _ = dedup.dedup_shard(texts)
    assert out[0] == texts[0]
    assert out[1] == "second line"


def test_dedup_bad_input():
    with pytest.raises(ValueError):
        ShardedExactSubstringDedup(length_threshold=2)
    with pytest.raises(ValueError):
        ShardedExactSubstringDedup(granularity="word")
    with pytest.raises(TypeError):
        ShardedExactSubstringDedup().dedup_shard("one string")


def test_dedup_rejects_non_string_documents_naming_them():
    with pytest.raises(TypeError, match=r"texts\[1\] is int.*texts\[2\] is NoneType"):
        ShardedExactSubstringDedup().dedup_shard(["fine text", 7, None])


# Different documents in scripts the WordPiece vocabulary cannot spell: they all tokenize to
# runs of [UNK], and must not be taken for copies of each other. Such text falls back to UTF-8
# bytes (as in the recipe's byte-level GPT-2 tokenizer), so 50 tokens span ~17 Ethiopic
# characters; these documents share no such run.
ETHIOPIC = [
    "ሰላም ለዓለም ይህ የመጀመሪያው ሰነድ ነው ስለ ወንዝ እና ስለ ተራራ ይናገራል",
    "ዛሬ ገበያ ሄድኩ ብዙ ፍራፍሬ ገዛሁ ሙዝ ብርቱካን እና ማንጎ ነበሩ በጣም ጣፋጭ",
    "ተማሪዎች ትምህርት ቤት ውስጥ ሂሳብ እና ታሪክ ይማራሉ መምህሩ ደግ ነው",
]
EMOJI = ["".join(chr(0x1F600 + i) for i in range(40)), "".join(chr(0x1F400 + i) for i in range(40))]


def test_dedup_is_lossless_for_scripts_outside_the_vocabulary():
    dedup = ShardedExactSubstringDedup()
    docs = ETHIOPIC + EMOJI
    out, report = dedup.dedup_shard(docs)
    assert out == docs and report.chars_removed == 0
    # a real copy in those scripts is still found and removed
    copied = [ETHIOPIC[0], "መግቢያ። " + ETHIOPIC[0], EMOJI[0], "🙂 " + EMOJI[0]]
    out, report = dedup.dedup_shard(copied)
    assert out[0] == copied[0] and out[2] == copied[2]
    assert out[1].strip() == "መግቢያ።" and out[3].strip() == "🙂"


def test_dedup_tells_case_accents_and_spacing_apart():
    base = "the parser module reads a configuration file and reports every problem it finds"
    docs = [base, base.upper(), base.replace("file", "fílé"), base.replace(" ", "  ")]
    out, report = ShardedExactSubstringDedup(length_threshold=10).dedup_shard(docs)
    assert out == docs and report.chars_removed == 0
    out, _ = ShardedExactSubstringDedup(length_threshold=10).dedup_shard([base, "So " + base])
    # as with GPT-2's "the" / " the", a word at a document's start is a different token
    # from the same word after a space, so the match starts one word later
    assert out[1].strip() == "So the"


@pytest.mark.parametrize(
    "text",
    [
        "Café ሰላም 👋 hello  world,x\tunaffable una ffable\n",
        "  leading and trailing  \n",
        "ÅNGSTRÖM naïve CAPS MiXeD ##hash [UNK] \u200b zero\u00a0width",
        "",
    ],
)
def test_lossless_stream_decodes_to_the_text(text):
    from iclr26.llm.gneissweb.tokenizer import TokenizerAdapter

    adapter = TokenizerAdapter()
    ids, spans = adapter.encode_lossless([text])[0]
    assert adapter.decode_lossless(ids) == text
    assert spans.shape == (len(ids), 2)


def test_exact_line_dedup():
    out, removed = exact_line_dedup(["a\nb\n", "b\nc\n"])
    assert out == ["a\nb\n", "c\n"] and removed == [[], [(0, 2)]]


def test_eflaw_hand_computed_and_textstat_parity():
    text = "The cat sat on the mat. It was a very sunny day today. We all went out to play."
    # words 6 + 7 + 6 = 19; mini-words (<= 3 chars): The cat sat on the mat | It was a day
    # | We all out to = 6 + 4 + 4 = 14; 3 sentences -> (19 + 14) / 3
    assert mcalpine_eflaw(text) == pytest.approx(33 / 3)
    assert mcalpine_eflaw("") == 0.0
    textstat = pytest.importorskip("textstat")
    for sample in [
        text,
        "One two three four five six seven eight nine ten eleven twelve",
        "Short. Sentences are here. And a longer one follows after this.",
    ]:
        assert mcalpine_eflaw(sample) == pytest.approx(
            textstat.mcalpine_eflaw(sample), abs=0.051
        )  # textstat rounds to 1 decimal


def test_ensemble_truth_table():
    f = EnsembleFilter(categories=("medical",))
    rows = []
    for ft in (0, 1):
        for cat in (0, 1):
            for r_ok in (0, 1):
                for et_ok in (0, 1):
                    eflaw = (60.0 if cat else 20.0) if r_ok else (80.0 if cat else 40.0)
                    ratio = (0.3 if cat else 0.25) if et_ok else (0.6 if cat else 0.3)
                    rows.append((ft, cat, eflaw, ratio, bool(ft and (r_ok or et_ok))))
    cols = {
        "dclm_fastText_score": np.array([0.5 if r[0] else 0.0 for r in rows]),
        "cosmo_fastText_score": np.zeros(len(rows)),
        "medical_label": np.array(["medical" if r[1] else "cc" for r in rows], dtype=object),
        "mcalpine_eflaw_textstat": np.array([r[2] for r in rows]),
        "tokens_per_doc_num_chars": np.array([r[3] for r in rows]),
    }
    assert list(f.keep(cols)) == [r[4] for r in rows]
    with pytest.raises(KeyError):
        f.keep({"dclm_fastText_score": np.zeros(1)})


def test_extreme_tokenization_and_calibration():
    ann = ExtremeTokenizedAnnotator()
    hexblob = " ".join(["9f3a7c2e1b"] * 20)
    prose = "The quick brown fox jumps over the lazy dog near the river bank."
    ratios = ann.annotate([hexblob, prose])["tokens_per_doc_num_chars"]
    assert ratios[0] > 0.5 > ratios[1]
    ref = np.linspace(0, 1, 101)
    target = np.linspace(10, 20, 101)
    assert calibrate_thresholds([0.25, 0.75], ref, target) == pytest.approx([12.5, 17.5], abs=0.11)


def test_kneser_ney_is_a_distribution():
    lm = KneserNeyTrigramLM().fit(["the cat sat on the mat .", "the dog sat on the log ."])
    vocab = set(lm.cont_uni) | {"<unk>", "</s>"}
    for ctx in [("the", "cat"), ("<s>", "<s>"), ("unseen", "sat")]:
        assert sum(lm.prob(*ctx, w) for w in vocab) == pytest.approx(1.0)
    assert lm.perplexity(["the cat sat on the log ."]) < lm.perplexity(["log the on sat cat ."])


@pytest.fixture(scope="module")
def small_recipe():
    fit = SyntheticWebCorpus(n_docs=150, seed=5, n_boilerplate=0, max_files=40)
    return train_recipe(fit)


def _write_input(folder: Path, n_shards=3) -> None:
    corpus = SyntheticWebCorpus(n_docs=60, seed=7, n_boilerplate=4, copies=(3, 5), max_files=20)
    folder.mkdir()
    for i, shard in enumerate(corpus.shards(n_shards)):
        with (folder / f"part-{i}.jsonl").open("w") as fh:
            for d in shard:
                fh.write(json.dumps({"id": d.doc_id, "text": d.text}) + "\n")


def test_interrupted_run_resumes_to_the_same_output(tmp_path, small_recipe):
    _write_input(tmp_path / "in")
    pipe = GneissWebPipeline(annotators=small_recipe.annotators, filter=small_recipe.ensemble)
    pipe.run(tmp_path / "in", tmp_path / "whole", num_workers=1)

    class Stop(Exception):
        pass

    def stop_after_first(summary):
        raise Stop

    with pytest.raises(Stop):
        pipe.run(tmp_path / "in", tmp_path / "resumed", num_workers=1, on_shard=stop_after_first)
    manifest = json.loads((tmp_path / "resumed" / "manifest.json").read_text())
    assert len(manifest["shards"]) == 1
    report = pipe.run(tmp_path / "in", tmp_path / "resumed", num_workers=2)
    assert report["skipped_finished_shards"] == 1 and report["shards_done"] == 3
    for f in sorted((tmp_path / "whole" / "kept").iterdir()):
        assert f.read_bytes() == (tmp_path / "resumed" / "kept" / f.name).read_bytes()


def test_malformed_input_is_reported_never_lost(tmp_path, small_recipe):
    folder = tmp_path / "in"
    folder.mkdir()
    good = json.dumps({"id": 1, "text": "A perfectly normal sentence about the parser module."})
    lines = [
        good.encode(),
        b'{"id": 2, "text": "bytes \xff\xfe here in a document"}',
        b"{not json",
        b'{"id": 4}',
        b'{"id": 5, "text": 7}',
        b"[1, 2]",
    ]
    (folder / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    pipe = GneissWebPipeline(annotators=small_recipe.annotators, filter=small_recipe.ensemble)
    report = pipe.run(folder, tmp_path / "out")
    assert report["documents_in"] == 6 and report["rejected"] == 4
    assert report["documents_out"] + report["documents_removed"] == 2
    problems = " ".join(report["problems"])
    assert "invalid UTF-8" in problems and "broken JSON" in problems and "missing" in problems
    rejected = (tmp_path / "out" / "rejected" / "a.jsonl").read_text().splitlines()
    assert len(rejected) == 4 and all("raw" in json.loads(r) for r in rejected)


def test_gz_and_upper_case_shards_are_read_and_others_reported(tmp_path):
    import gzip

    folder = tmp_path / "in"
    folder.mkdir()
    rows = [json.dumps({"id": i, "text": f"document number {i} about modules"}) for i in range(3)]
    with gzip.open(folder / "a.jsonl.gz", "wt") as fh:
        fh.write("\n".join(rows) + "\n")
    (folder / "B.JSONL").write_text("\n".join(rows) + "\n")
    (folder / "notes.txt").write_text("not a shard")
    (folder / "sub").mkdir()
    pipe = GneissWebPipeline(steps=("dedup",))
    report = pipe.run(folder, tmp_path / "out", num_workers=1)
    assert report["shards_total"] == 2 and report["documents_in"] == 6
    assert {f["name"] for f in report["skipped_files"]} == {"notes.txt", "sub"}
    assert "notes.txt" in (tmp_path / "out" / "report.md").read_text()
    with gzip.open(tmp_path / "out" / "kept" / "a.jsonl.gz", "rt") as fh:
        assert len(fh.read().splitlines()) == 3
    assert len((tmp_path / "out" / "kept" / "B.JSONL").read_text().splitlines()) == 3


def test_shards_with_the_same_stem_keep_all_their_rows(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "first jsonl document"}\n{broken\n')
    pq.write_table(pa.table({"text": ["a parquet document", None]}), folder / "a.parquet")
    report = GneissWebPipeline(steps=("dedup",)).run(folder, tmp_path / "out", num_workers=1)
    assert report["documents_in"] == 4 and report["rejected"] == 2
    out = tmp_path / "out"
    assert len((out / "rejected" / "a.jsonl").read_text().splitlines()) == 1
    assert pq.read_table(out / "rejected" / "a.parquet").num_rows == 1
    assert len((out / "kept" / "a.jsonl").read_text().splitlines()) == 1
    assert pq.read_table(out / "kept" / "a.parquet").num_rows == 1


def test_parquet_round_trip_adds_recipe_columns(tmp_path, small_recipe):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir()
    texts = SyntheticWebCorpus(n_docs=30, seed=2, n_boilerplate=0, max_files=10).texts
    pq.write_table(pa.table({"id": list(range(30)), "text": texts}), folder / "p.parquet")
    pipe = GneissWebPipeline(annotators=small_recipe.annotators, filter=small_recipe.ensemble)
    pipe.run(folder, tmp_path / "out")
    kept = pq.read_table(tmp_path / "out" / "kept" / "p.parquet").column_names
    for col in [
        "id",
        "text",
        "cosmo_fastText_score",
        "dclm_fastText_score",
        "mcalpine_eflaw_textstat",
        "tokens_per_doc_num_chars",
        "removed_chars",
    ]:
        assert col in kept


def test_cli_curate(tmp_path, capsys):
    import argparse

    _write_input(tmp_path / "in", n_shards=2)
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args([str(tmp_path / "in"), str(tmp_path / "out"), "--steps", "dedup"])
    assert run(args) == 0
    assert "2/2 shards" in capsys.readouterr().out
    assert (tmp_path / "out" / "report.md").read_text().startswith("# Curation report")
    bad = parser.parse_args([str(tmp_path / "in"), str(tmp_path / "o2"), "--steps", "dedupe"])
    assert run(bad) == 2
    missing = parser.parse_args([str(tmp_path / "nope"), str(tmp_path / "o3"), "--steps", "dedup"])
    assert run(missing) == 2


@pytest.mark.parametrize(
    "name", ["substring-dedup", "ensemble-vs-single-filters", "ray-equals-local"]
)
def test_claims_smoke(tmp_path, name):
    record = run_claim("gneissweb", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"] and record["figures"]
