"""The recipe's annotators: readability, extreme tokenization, quality and category classifiers.

Column names follow the recipe, so outputs are interchangeable with the reference pipeline's:
``mcalpine_eflaw_textstat``, ``tokens_per_doc_num_chars``, ``tokens_per_doc_size``,
``cosmo_fastText_score``, ``dclm_fastText_score``, ``<category>_label``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from iclr26 import validation as V
from iclr26.llm.gneissweb.tokenizer import MINILM, TokenizerAdapter, check_texts

_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*", re.UNICODE)
_PUNCT_KEEP_APOSTROPHE = re.compile(r"[^\w\s']")
_PUNCT_ALL = re.compile(r"[^\w\s]")


def _words(text: str) -> list[str]:
    return _PUNCT_KEEP_APOSTROPHE.sub("", text).split()


def _sentence_count(text: str) -> int:
    if not text:
        return 0
    sentences = _SENTENCE.findall(text)
    short = sum(1 for s in sentences if len(_words(s)) <= 2)
    return max(1, len(sentences) - short)


def mcalpine_eflaw(text: str) -> float:
    """McAlpine EFLAW = (words + mini-words) / sentences; mini-words have <= 3 characters.

    Words are whitespace-separated after punctuation is removed; a sentence is a run of text
    up to ``.``, ``!`` or ``?`` with more than two words (the textstat conventions). Lower is
    easier; 0 for an empty text.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    n_sentences = _sentence_count(text)
    if n_sentences == 0:
        return 0.0
    n_words = len(_words(text))
    n_mini = sum(1 for w in _PUNCT_ALL.sub("", text).split() if len(w) <= 3)
    return (n_words + n_mini) / n_sentences


class ReadabilityAnnotator:
    column = "mcalpine_eflaw_textstat"

    def annotate(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        texts = check_texts(texts)
        return {self.column: np.array([mcalpine_eflaw(t) for t in texts], dtype=float)}


class ExtremeTokenizedAnnotator:
    """Tokens per character and tokens per kB of each document."""

    def __init__(self, tokenizer: str | object = MINILM) -> None:
        self.tokenizer = TokenizerAdapter(tokenizer)

    def annotate(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        texts = check_texts(texts)
        n_tokens = self.tokenizer.count(texts).astype(float)
        n_chars = np.array([len(t) for t in texts], dtype=float)
        size_kb = np.array([len(t.encode("utf-8")) for t in texts], dtype=float) / 1024.0
        with np.errstate(divide="ignore", invalid="ignore"):
            per_char = np.where(n_chars > 0, n_tokens / np.maximum(n_chars, 1), 0.0)
            per_kb = np.where(size_kb > 0, n_tokens / np.maximum(size_kb, 1e-12), 0.0)
        return {"tokens_per_doc_num_chars": per_char, "tokens_per_doc_size": per_kb}


def calibrate_thresholds(
    bounds: Sequence[float], reference_ratios: np.ndarray, target_ratios: np.ndarray
) -> list[float]:
    """Map bounds defined on one tokenizer's ratio distribution to another's by quantiles.

    Each bound's quantile in ``reference_ratios`` is looked up and the same quantile of
    ``target_ratios`` returned. Used to carry the recipe's StarCoder-based extreme-token
    bounds over to the tokenizer in use.
    """
    bounds = V.check_array(np.atleast_1d(bounds), "bounds", ndim=1, dtype=np.float64)
    reference = np.sort(
        V.check_array(reference_ratios, "reference_ratios", ndim=1, dtype=np.float64)
    )
    target = V.check_array(target_ratios, "target_ratios", ndim=1, dtype=np.float64)
    qs = [np.searchsorted(reference, b, side="right") / reference.size for b in bounds]
    return [float(np.quantile(target, min(max(q, 0.0), 1.0))) for q in qs]


class HashedNgramClassifier:
    """A fastText-style supervised text classifier trained here: hashed word uni+bigrams into
    2^20 buckets and a linear softmax (logistic) layer trained by SGD."""

    def __init__(
        self, n_features: int = 2**20, alpha: float = 1e-6, epochs: int = 5, seed: int = 0
    ) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.linear_model import SGDClassifier

        n_features = V.check_int(n_features, "n_features", low=2)
        alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
        epochs = V.check_int(epochs, "epochs", low=1)
        seed = V.check_int(seed, "seed", low=0)
        self.vectorizer = HashingVectorizer(
            ngram_range=(1, 2), alternate_sign=False, n_features=n_features, norm="l2"
        )
        self.model = SGDClassifier(
            loss="log_loss", alpha=alpha, max_iter=epochs, tol=None, random_state=seed
        )

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> HashedNgramClassifier:
        texts = check_texts(texts)
        labels = np.asarray(labels)
        if labels.ndim != 1 or len(texts) != len(labels):
            raise ValueError(
                f"labels must hold one label per text: {len(texts)} texts, labels {labels.shape}"
            )
        if np.unique(labels).size < 2:
            raise ValueError("labels must hold at least two classes")
        self.model.fit(self.vectorizer.transform(list(texts)), labels)
        self.classes_ = self.model.classes_
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.predict_proba(self.vectorizer.transform(check_texts(texts)))

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.predict(self.vectorizer.transform(check_texts(texts)))


class _FastTextModel:
    """A real fastText ``.bin`` model (needs the optional ``fasttext`` package)."""

    def __init__(self, path: str | Path) -> None:
        try:
            import fasttext
        except ImportError as exc:
            raise ImportError(
                "loading fastText .bin files needs the fasttext package "
                "(e.g. pip install fasttext-numpy2-wheel)"
            ) from exc
        self.model = fasttext.load_model(str(path))
        labels = self.model.get_labels()
        self.classes_ = np.array([lab.replace("__label__", "") for lab in labels])

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        k = len(self.classes_)
        lines = [t.replace("\n", " ") for t in texts]
        labels, probs = self.model.predict(lines, k=k)
        index = {c: i for i, c in enumerate(self.classes_)}
        out = np.zeros((len(lines), k))
        for row, (labs, ps) in enumerate(zip(labels, probs)):
            for lab, p in zip(labs, ps):
                out[row, index[lab.replace("__label__", "")]] = p
        return out


class FastTextQualityAnnotator:
    """P(high-quality label) of each document under a quality classifier.

    Pass a trained :class:`HashedNgramClassifier` (or anything with ``predict_proba`` and
    ``classes_``), or use :meth:`from_file` with a real fastText ``.bin`` model.
    """

    def __init__(self, model, column: str, positive_label: str = "hq") -> None:
        V.check_module_attrs(model, "model", ("predict_proba", "classes_"))
        if not isinstance(column, str) or not column:
            raise TypeError(f"column must be a column name, got {column!r}")
        if positive_label not in list(model.classes_):
            raise ValueError(
                f"positive_label {positive_label!r} is not among {list(model.classes_)}"
            )
        self.model, self.column, self.positive_label = model, column, positive_label

    @classmethod
    def from_file(
        cls, path: str | Path, column: str, positive_label: str
    ) -> FastTextQualityAnnotator:
        return cls(_FastTextModel(path), column, positive_label)

    def annotate(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        proba = self.model.predict_proba(check_texts(texts))
        col = list(self.model.classes_).index(self.positive_label)
        return {self.column: proba[:, col]}


class CategoryAnnotator:
    """The category label of each document: the category's name or ``cc`` (not in it)."""

    def __init__(self, model, category: str, threshold: float = 0.5) -> None:
        V.check_module_attrs(model, "model", ("predict_proba", "classes_"))
        threshold = V.check_probability(threshold, "threshold")
        if category not in list(model.classes_):
            raise ValueError(f"category {category!r} is not among {list(model.classes_)}")
        self.model, self.category, self.threshold = model, category, threshold
        self.column = f"{category}_label"

    @classmethod
    def from_file(cls, path: str | Path, category: str) -> CategoryAnnotator:
        return cls(_FastTextModel(path), category)

    def annotate(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        proba = self.model.predict_proba(check_texts(texts))
        col = list(self.model.classes_).index(self.category)
        labels = np.where(proba[:, col] >= self.threshold, self.category, "cc")
        return {self.column: labels.astype(object)}
