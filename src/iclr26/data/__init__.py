"""Offline data: seeded generators, scikit-learn/scikit-image bundled sets, the stdlib corpus."""

from iclr26.data.images import load_image
from iclr26.data.stdlib import (
    CorpusText,
    corpus_fingerprint,
    split_of,
    stdlib_corpus,
    stdlib_texts,
)
from iclr26.data.synthetic import as_rng, gaussian_classes, train_test_indices
from iclr26.data.tabular import BUNDLED, Dataset, lfw_faces, load

__all__ = [
    "BUNDLED",
    "CorpusText",
    "Dataset",
    "as_rng",
    "corpus_fingerprint",
    "gaussian_classes",
    "lfw_faces",
    "load",
    "load_image",
    "split_of",
    "stdlib_corpus",
    "stdlib_texts",
    "train_test_indices",
]
