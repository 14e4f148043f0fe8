"""GneissWeb: sharded exact substring dedup, cheap annotators and a category-aware keep-rule."""

from iclr26.llm.gneissweb.annotators import (
    CategoryAnnotator,
    ExtremeTokenizedAnnotator,
    FastTextQualityAnnotator,
    HashedNgramClassifier,
    ReadabilityAnnotator,
    calibrate_thresholds,
    mcalpine_eflaw,
)
from iclr26.llm.gneissweb.corpus import JUNK_KINDS, SyntheticWebCorpus
from iclr26.llm.gneissweb.dedup import (
    DedupReport,
    ShardedExactSubstringDedup,
    duplicate_token_mask,
    exact_line_dedup,
    minhash_dedup,
)
from iclr26.llm.gneissweb.ensemble import EnsembleFilter
from iclr26.llm.gneissweb.lm import KneserNeyTrigramLM
from iclr26.llm.gneissweb.pipeline import GneissWebPipeline
from iclr26.llm.gneissweb.recipe import Recipe, default_recipe, train_recipe

__all__ = [
    "JUNK_KINDS",
    "CategoryAnnotator",
    "DedupReport",
    "EnsembleFilter",
    "ExtremeTokenizedAnnotator",
    "FastTextQualityAnnotator",
    "GneissWebPipeline",
    "HashedNgramClassifier",
    "KneserNeyTrigramLM",
    "ReadabilityAnnotator",
    "Recipe",
    "ShardedExactSubstringDedup",
    "SyntheticWebCorpus",
    "calibrate_thresholds",
    "default_recipe",
    "duplicate_token_mask",
    "exact_line_dedup",
    "mcalpine_eflaw",
    "minhash_dedup",
    "train_recipe",
]
