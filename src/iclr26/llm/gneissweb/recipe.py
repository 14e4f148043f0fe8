"""The annotators and ensemble thresholds trained offline on the synthetic corpus.

The recipe's fastText models cannot be downloaded here, so two quality classifiers are
trained on complementary junk (a "cosmo-like" one on clean vs J1-J3, a "dclm-like" one on
clean vs J2-J4) and a technology/computing category classifier on clean (all technical
prose) vs generic junk. Each quality threshold keeps ``keep_fraction_of_clean`` of the clean
training documents (the recipe's 0.002 / 0.03 belong to its own classifiers). The
extreme-tokenization bounds are carried from StarCoder to our tokenizer by median matching:
typical English web text has about 0.25 StarCoder tokens per character.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V
from iclr26.llm.gneissweb.annotators import (
    CategoryAnnotator,
    ExtremeTokenizedAnnotator,
    FastTextQualityAnnotator,
    HashedNgramClassifier,
    ReadabilityAnnotator,
    calibrate_thresholds,
)
from iclr26.llm.gneissweb.corpus import SyntheticWebCorpus
from iclr26.llm.gneissweb.ensemble import EnsembleFilter

STARCODER_MEDIAN_TOKENS_PER_CHAR = 0.25


@dataclass
class Recipe:
    annotators: list
    ensemble: EnsembleFilter
    aggressive_threshold: float  # the single-classifier baseline's threshold (cosmo-like)
    info: dict


def _threshold_keeping(scores: np.ndarray, fraction: float) -> float:
    """A threshold t with ``mean(scores > t) ~= fraction``."""
    return float(np.quantile(scores, 1.0 - fraction)) - 1e-12


def train_recipe(
    corpus: SyntheticWebCorpus,
    keep_fraction_of_clean: float = 0.98,
    aggressive_keep_fraction: float = 0.60,
    seed: int = 0,
) -> Recipe:
    """Train the annotators on ``corpus`` and fix every threshold from its clean documents."""
    V.check_module_attrs(corpus, "corpus", ("texts", "labels"))
    keep_fraction_of_clean = V.check_scalar(
        keep_fraction_of_clean, "keep_fraction_of_clean", low=0.0, high=1.0, low_open=True
    )
    aggressive_keep_fraction = V.check_scalar(
        aggressive_keep_fraction, "aggressive_keep_fraction", low=0.0, high=1.0, low_open=True
    )
    seed = V.check_int(seed, "seed", low=0)
    texts = np.array(corpus.texts, dtype=object)
    labels = np.array(corpus.labels)
    clean = labels == "clean"
    cosmo_neg = np.isin(labels, ["J1", "J2", "J3"])
    dclm_neg = np.isin(labels, ["J2", "J3", "J4"])
    cosmo = HashedNgramClassifier(seed=seed).fit(
        texts[clean | cosmo_neg], np.where(clean[clean | cosmo_neg], "hq", "lq")
    )
    dclm = HashedNgramClassifier(seed=seed + 1).fit(
        texts[clean | dclm_neg], np.where(clean[clean | dclm_neg], "hq", "lq")
    )
    tech_neg = np.isin(labels, ["J1", "J2", "J3"])
    tech = HashedNgramClassifier(seed=seed + 2).fit(
        texts[clean | tech_neg], np.where(clean[clean | tech_neg], "technology_computing", "cc")
    )
    cosmo_ann = FastTextQualityAnnotator(cosmo, "cosmo_fastText_score", "hq")
    dclm_ann = FastTextQualityAnnotator(dclm, "dclm_fastText_score", "hq")
    clean_texts = list(texts[clean])
    cosmo_scores = cosmo_ann.annotate(clean_texts)["cosmo_fastText_score"]
    dclm_scores = dclm_ann.annotate(clean_texts)["dclm_fastText_score"]
    extreme = ExtremeTokenizedAnnotator()
    ratios = extreme.annotate(clean_texts)["tokens_per_doc_num_chars"]
    reference = ratios * (STARCODER_MEDIAN_TOKENS_PER_CHAR / np.median(ratios))
    lo_c, hi_c = calibrate_thresholds((0.1, 0.5), reference, ratios)
    lo_o, hi_o = calibrate_thresholds((0.22, 0.28), reference, ratios)
    ensemble = EnsembleFilter(
        dclm_threshold=_threshold_keeping(dclm_scores, keep_fraction_of_clean),
        cosmo_threshold=_threshold_keeping(cosmo_scores, keep_fraction_of_clean),
        extreme_category=(lo_c, hi_c),
        extreme_other=(lo_o, hi_o),
        categories=("technology_computing",),
    )
    annotators = [
        cosmo_ann,
        dclm_ann,
        CategoryAnnotator(tech, "technology_computing"),
        ReadabilityAnnotator(),
        extreme,
    ]
    info = {
        "clean_train_docs": int(clean.sum()),
        "median_tokens_per_char": float(np.median(ratios)),
    }
    return Recipe(
        annotators, ensemble, _threshold_keeping(cosmo_scores, aggressive_keep_fraction), info
    )


def default_recipe(seed: int = 0, n_docs: int = 4000) -> Recipe:
    """The recipe trained on the train split of the synthetic corpus, cached on disk."""
    import sklearn

    from iclr26.data.stdlib import cache_dir, corpus_fingerprint

    seed = V.check_int(seed, "seed", low=0)
    n_docs = V.check_int(n_docs, "n_docs", low=12)

    key = hashlib.sha256(
        f"{seed}|{n_docs}|{corpus_fingerprint()}|{sklearn.__version__}|v1".encode()
    ).hexdigest()[:16]
    path = cache_dir() / f"gneissweb-recipe-{key}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)
    recipe = train_recipe(SyntheticWebCorpus(n_docs=n_docs, split="train", seed=seed), seed=seed)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        pickle.dump(recipe, fh)
    os.replace(tmp, path)
    return recipe
