"""Bad-input cases for the GneissWeb room (read by tests/framework/test_bad_input.py)."""

import numpy as np

from iclr26.llm.gneissweb import (
    CategoryAnnotator,
    EnsembleFilter,
    ExtremeTokenizedAnnotator,
    FastTextQualityAnnotator,
    GneissWebPipeline,
    HashedNgramClassifier,
    KneserNeyTrigramLM,
    ReadabilityAnnotator,
    ShardedExactSubstringDedup,
    SyntheticWebCorpus,
    calibrate_thresholds,
    default_recipe,
    duplicate_token_mask,
    exact_line_dedup,
    mcalpine_eflaw,
    minhash_dedup,
    train_recipe,
)

NAN = float("nan")


class _Model:
    classes_ = np.array(["cc", "hq"])

    def predict_proba(self, texts):
        return np.full((len(texts), 2), 0.5)


def _columns(**change):
    cols = {
        "dclm_fastText_score": np.array([0.5, 0.1]),
        "cosmo_fastText_score": np.array([0.5, 0.1]),
        "mcalpine_eflaw_textstat": np.array([10.0, 40.0]),
        "tokens_per_doc_num_chars": np.array([0.25, 0.3]),
    }
    cols.update(change)
    return cols


_TEXTS = ["one short text here", "another short text"]


class _Corpus:
    texts = _TEXTS
    labels = ["clean", "J1"]


CASES = [
    # dedup
    (
        "ShardedExactSubstringDedup",
        "range",
        lambda: ShardedExactSubstringDedup(2),
        ValueError,
        "length_threshold",
    ),
    (
        "ShardedExactSubstringDedup",
        "range",
        lambda: ShardedExactSubstringDedup(frequency_threshold=0),
        ValueError,
        "frequency",
    ),
    (
        "ShardedExactSubstringDedup",
        "type",
        lambda: ShardedExactSubstringDedup(50.5),
        TypeError,
        "length_threshold",
    ),
    (
        "ShardedExactSubstringDedup",
        "range",
        lambda: ShardedExactSubstringDedup(granularity="word"),
        ValueError,
        "granularity",
    ),
    (
        "ShardedExactSubstringDedup",
        "type",
        lambda: ShardedExactSubstringDedup(tokenizer=object()),
        TypeError,
        "tokenizer",
    ),
    (
        "ShardedExactSubstringDedup",
        "type",
        lambda: ShardedExactSubstringDedup().dedup_shard("one string"),
        TypeError,
        "texts",
    ),
    (
        "ShardedExactSubstringDedup",
        "type",
        lambda: ShardedExactSubstringDedup().dedup_shard(["a", 3]),
        TypeError,
        r"texts\[1\] is int",
    ),
    (
        "duplicate_token_mask",
        "range",
        lambda: duplicate_token_mask([np.arange(9)], 3),
        ValueError,
        "length_threshold",
    ),
    (
        "duplicate_token_mask",
        "shape",
        lambda: duplicate_token_mask([np.ones((3, 3), int)]),
        ValueError,
        r"token_ids\[0\]",
    ),
    (
        "duplicate_token_mask",
        "dtype",
        lambda: duplicate_token_mask([np.array([0.5, 1.5])]),
        TypeError,
        r"token_ids\[0\]",
    ),
    (
        "duplicate_token_mask",
        "range",
        lambda: duplicate_token_mask([np.array([-1, 70000])]),
        ValueError,
        r"token_ids\[0\]",
    ),
    (
        "duplicate_token_mask",
        "type",
        lambda: duplicate_token_mask(np.arange(10)),
        TypeError,
        "token_ids",
    ),
    (
        "duplicate_token_mask",
        "range",
        lambda: duplicate_token_mask([np.arange(9)], 4, 0),
        ValueError,
        "frequency",
    ),
    ("exact_line_dedup", "type", lambda: exact_line_dedup("a\nb"), TypeError, "texts"),
    ("exact_line_dedup", "type", lambda: exact_line_dedup([None]), TypeError, r"texts\[0\]"),
    (
        "minhash_dedup",
        "range",
        lambda: minhash_dedup(_TEXTS, threshold=0.0),
        ValueError,
        "threshold",
    ),
    ("minhash_dedup", "nan", lambda: minhash_dedup(_TEXTS, threshold=NAN), ValueError, "threshold"),
    ("minhash_dedup", "range", lambda: minhash_dedup(_TEXTS, num_perm=1), ValueError, "num_perm"),
    ("minhash_dedup", "type", lambda: minhash_dedup([b"bytes"]), TypeError, r"texts\[0\]"),
    # annotators
    ("mcalpine_eflaw", "type", lambda: mcalpine_eflaw(5), TypeError, "text must be"),
    ("mcalpine_eflaw", "type", lambda: mcalpine_eflaw(None), TypeError, "text must be"),
    (
        "ReadabilityAnnotator",
        "type",
        lambda: ReadabilityAnnotator().annotate("one"),
        TypeError,
        "texts",
    ),
    (
        "ReadabilityAnnotator",
        "type",
        lambda: ReadabilityAnnotator().annotate([NAN]),
        TypeError,
        r"texts\[0\]",
    ),
    (
        "ExtremeTokenizedAnnotator",
        "type",
        lambda: ExtremeTokenizedAnnotator().annotate([1]),
        TypeError,
        r"texts\[0\]",
    ),
    (
        "ExtremeTokenizedAnnotator",
        "type",
        lambda: ExtremeTokenizedAnnotator(object()),
        TypeError,
        "tokenizer",
    ),
    (
        "ExtremeTokenizedAnnotator",
        "other",
        lambda: ExtremeTokenizedAnnotator("no/such/tokenizer.json"),
        FileNotFoundError,
        "tokenizer",
    ),
    (
        "calibrate_thresholds",
        "nan",
        lambda: calibrate_thresholds([0.2], [0.1, NAN], [0.2]),
        ValueError,
        "reference_ratios",
    ),
    (
        "calibrate_thresholds",
        "empty",
        lambda: calibrate_thresholds([0.2], [0.1], []),
        ValueError,
        "target_ratios",
    ),
    (
        "calibrate_thresholds",
        "inf",
        lambda: calibrate_thresholds([np.inf], [0.1], [0.2]),
        ValueError,
        "bounds",
    ),
    (
        "calibrate_thresholds",
        "shape",
        lambda: calibrate_thresholds([0.2], [[0.1]], [0.2]),
        ValueError,
        "reference_ratios",
    ),
    (
        "HashedNgramClassifier",
        "range",
        lambda: HashedNgramClassifier(alpha=NAN),
        ValueError,
        "alpha",
    ),
    (
        "HashedNgramClassifier",
        "range",
        lambda: HashedNgramClassifier(epochs=0),
        ValueError,
        "epochs",
    ),
    (
        "HashedNgramClassifier",
        "shape",
        lambda: HashedNgramClassifier().fit(_TEXTS, ["a"]),
        ValueError,
        "labels",
    ),
    (
        "HashedNgramClassifier",
        "other",
        lambda: HashedNgramClassifier().fit(_TEXTS, ["a", "a"]),
        ValueError,
        "labels",
    ),
    (
        "HashedNgramClassifier",
        "type",
        lambda: HashedNgramClassifier().fit(["a", 2], ["a", "b"]),
        TypeError,
        r"texts\[1\]",
    ),
    (
        "FastTextQualityAnnotator",
        "type",
        lambda: FastTextQualityAnnotator(object(), "c"),
        TypeError,
        "model",
    ),
    (
        "FastTextQualityAnnotator",
        "range",
        lambda: FastTextQualityAnnotator(_Model(), "c", "x"),
        ValueError,
        "positive_label",
    ),
    (
        "FastTextQualityAnnotator",
        "type",
        lambda: FastTextQualityAnnotator(_Model(), None),
        TypeError,
        "column",
    ),
    (
        "FastTextQualityAnnotator",
        "type",
        lambda: FastTextQualityAnnotator(_Model(), "c").annotate([3]),
        TypeError,
        r"texts\[0\]",
    ),
    ("CategoryAnnotator", "type", lambda: CategoryAnnotator(object(), "hq"), TypeError, "model"),
    (
        "CategoryAnnotator",
        "nan",
        lambda: CategoryAnnotator(_Model(), "hq", threshold=NAN),
        ValueError,
        "threshold",
    ),
    (
        "CategoryAnnotator",
        "range",
        lambda: CategoryAnnotator(_Model(), "hq", threshold=2),
        ValueError,
        "threshold",
    ),
    (
        "CategoryAnnotator",
        "range",
        lambda: CategoryAnnotator(_Model(), "medical"),
        ValueError,
        "category",
    ),
    # ensemble, pipeline, language model
    (
        "EnsembleFilter",
        "nan",
        lambda: EnsembleFilter(dclm_threshold=NAN),
        ValueError,
        "dclm_threshold",
    ),
    (
        "EnsembleFilter",
        "range",
        lambda: EnsembleFilter(extreme_other=(0.3, 0.2)),
        ValueError,
        "extreme_other",
    ),
    (
        "EnsembleFilter",
        "shape",
        lambda: EnsembleFilter(extreme_category=(0.1,)),
        ValueError,
        "extreme_category",
    ),
    (
        "EnsembleFilter",
        "nan",
        lambda: EnsembleFilter().keep(_columns(dclm_fastText_score=np.array([NAN, 1.0]))),
        ValueError,
        "dclm_fastText_score",
    ),
    (
        "EnsembleFilter",
        "shape",
        lambda: EnsembleFilter().keep(_columns(cosmo_fastText_score=np.ones(3))),
        ValueError,
        "cosmo_fastText_score",
    ),
    ("EnsembleFilter", "empty", lambda: EnsembleFilter().keep({}), KeyError, "columns"),
    (
        "GneissWebPipeline",
        "range",
        lambda: GneissWebPipeline(steps=("dedup", "x")),
        ValueError,
        "steps",
    ),
    ("GneissWebPipeline", "type", lambda: GneissWebPipeline(steps="dedup"), TypeError, "steps"),
    ("GneissWebPipeline", "type", lambda: GneissWebPipeline(dedup=object()), TypeError, "dedup"),
    (
        "GneissWebPipeline",
        "range",
        lambda: GneissWebPipeline(steps=("dedup",)).run(".", "/tmp", num_workers=0),
        ValueError,
        "num_workers",
    ),
    (
        "GneissWebPipeline",
        "range",
        lambda: GneissWebPipeline(steps=("dedup",)).run(".", "/tmp", backend="x"),
        ValueError,
        "backend",
    ),
    (
        "GneissWebPipeline",
        "other",
        lambda: GneissWebPipeline(steps=("dedup",)).run("no-such-folder", "/tmp/x"),
        FileNotFoundError,
        "input folder",
    ),
    (
        "GneissWebPipeline",
        "type",
        lambda: GneissWebPipeline(
            annotators=[ReadabilityAnnotator()], steps=("annotate",)
        ).annotate_texts([None]),
        TypeError,
        r"texts\[0\]",
    ),
    (
        "KneserNeyTrigramLM",
        "range",
        lambda: KneserNeyTrigramLM(discount=1.5),
        ValueError,
        "discount",
    ),
    ("KneserNeyTrigramLM", "nan", lambda: KneserNeyTrigramLM(discount=NAN), ValueError, "discount"),
    (
        "KneserNeyTrigramLM",
        "range",
        lambda: KneserNeyTrigramLM(uniform_weight=0),
        ValueError,
        "uniform_weight",
    ),
    (
        "KneserNeyTrigramLM",
        "empty",
        lambda: KneserNeyTrigramLM().fit([]),
        ValueError,
        "texts is empty",
    ),
    (
        "KneserNeyTrigramLM",
        "type",
        lambda: KneserNeyTrigramLM().fit(["fine", 3]),
        TypeError,
        r"texts\[1\]",
    ),
    (
        "KneserNeyTrigramLM",
        "empty",
        lambda: KneserNeyTrigramLM().fit(["a b c"]).perplexity([""]),
        ValueError,
        "texts is empty",
    ),
    # data and recipe
    ("SyntheticWebCorpus", "range", lambda: SyntheticWebCorpus(n_docs=5), ValueError, "n_docs"),
    (
        "SyntheticWebCorpus",
        "nan",
        lambda: SyntheticWebCorpus(junk_fraction=NAN),
        ValueError,
        "junk_fraction",
    ),
    ("SyntheticWebCorpus", "range", lambda: SyntheticWebCorpus(split="dev"), ValueError, "split"),
    (
        "SyntheticWebCorpus",
        "range",
        lambda: SyntheticWebCorpus(copies=(5, 2)),
        ValueError,
        "copies",
    ),
    ("train_recipe", "type", lambda: train_recipe(object()), TypeError, "corpus"),
    (
        "train_recipe",
        "nan",
        lambda: train_recipe(_Corpus(), NAN),
        ValueError,
        "keep_fraction_of_clean",
    ),
    ("default_recipe", "range", lambda: default_recipe(seed=-1), ValueError, "seed"),
    ("default_recipe", "range", lambda: default_recipe(n_docs=3), ValueError, "n_docs"),
]

EXEMPT = {
    "DedupReport": "a record dataclass that dedup_shard returns; it takes no user data",
    "Recipe": "a record dataclass that train_recipe returns (annotators, ensemble, threshold)",
}
