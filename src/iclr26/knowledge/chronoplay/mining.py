"""Community asset mining (§3.1.2, App. D.2): topic labels, question templates with typed
placeholders, personas, and semantic de-duplication (drop an item whose cosine similarity to an
already kept one exceeds 0.7, the paper's value)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.generation import infer_relation
from iclr26.knowledge.chronoplay.ner import GazetteerNER
from iclr26.knowledge.chronoplay.records import CommunityQuestion, Persona, Template, check_topic
from iclr26.knowledge.chronoplay.retrieval import cosine_matrix
from iclr26.knowledge.chronoplay.taxonomy import TOPICS


def semantic_dedup(
    texts: Sequence[str], threshold: float = 0.7, embedder: str | Callable = "tfidf"
) -> list[int]:
    """Indices of the texts kept by greedy de-duplication in input order: a text is dropped
    when its cosine similarity to any kept text exceeds ``threshold``."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, got one string")
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty")
    threshold = V.check_scalar(threshold, "threshold", low=-1.0, high=1.0)
    sims = cosine_matrix(texts, texts, embedder)
    kept: list[int] = []
    for i in range(len(texts)):
        if not kept or sims[i, kept].max() <= threshold:
            kept.append(i)
    return kept


class TopicClassifier:
    """Community question -> sub-topic (the paper uses an LLM): ``HashingVectorizer`` features
    and a linear ``SGDClassifier`` fitted on labelled questions."""

    def fit(self, texts: Sequence[str], topics: Sequence[str]) -> TopicClassifier:
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.linear_model import SGDClassifier

        texts, topics = list(texts), list(topics)
        if not texts:
            raise ValueError("texts is empty")
        V.check_same_length(texts=texts, topics=topics)
        for t in topics:
            check_topic(t, "topics")
        self.vectorizer_ = HashingVectorizer(
            n_features=2**16, ngram_range=(1, 2), alternate_sign=False
        )
        self.model_ = SGDClassifier(
            loss="log_loss", alpha=1e-5, max_iter=30, tol=None, random_state=0
        )
        self.model_.fit(self.vectorizer_.transform(texts), topics)
        return self

    def predict(self, texts: Sequence[str]) -> list[str]:
        if not hasattr(self, "model_"):
            raise RuntimeError("TopicClassifier is not fitted; call fit first")
        texts = list(texts)
        if not texts:
            raise ValueError("texts is empty")
        return list(self.model_.predict(self.vectorizer_.transform(texts)))


def mine_templates(
    questions: Sequence[CommunityQuestion],
    ner: GazetteerNER,
    *,
    personas: Sequence[Persona] = (),
    threshold: float = 0.7,
    embedder: str | Callable = "tfidf",
    classifier: TopicClassifier | None = None,
) -> list[Template]:
    """Templates T_comm from community questions: strip a persona's opening phrase, replace
    entity names by typed placeholders, keep questions that ask something answerable (a
    placeholder and a cue), and de-duplicate per topic at cosine > ``threshold``. Topics come
    from the questions' labels, or from ``classifier`` when a label is missing."""
    questions = list(questions)
    if not questions:
        raise ValueError("questions is empty: template mining needs community questions")
    if not ner.types:
        raise ValueError("ner must be built from a name -> type mapping to tag placeholders")
    leads = sorted({p.lead for p in personas if p.lead}, key=len, reverse=True)
    missing = [i for i, q in enumerate(questions) if q.topic is None]
    predicted = {}
    if missing:
        if classifier is None:
            raise ValueError("questions without a topic label need a fitted classifier")
        predicted = dict(zip(missing, classifier.predict([questions[i].text for i in missing])))
    by_topic: dict[str, list[str]] = {}
    seen: set[str] = set()
    for i, q in enumerate(questions):
        text = q.text
        for lead in leads:
            if text.startswith(lead + " "):
                text = text[len(lead) + 1 :]
                text = text[0].upper() + text[1:]
                break
        tagged, _ = ner.tag(text)
        if tagged in seen or infer_relation(tagged) is None:
            continue
        seen.add(tagged)
        by_topic.setdefault(q.topic or predicted[i], []).append(tagged)
    out = []
    for topic in TOPICS:
        texts = by_topic.get(topic, [])
        if texts:
            out += [Template(texts[k], topic) for k in semantic_dedup(texts, threshold, embedder)]
    return out


def mine_personas(
    personas: Sequence[Persona | str], threshold: float = 0.7, embedder: str | Callable = "tfidf"
) -> list[Persona]:
    """Personas U_comm (descriptions or ``Persona`` objects), de-duplicated at cosine >
    ``threshold`` on their descriptions."""
    if isinstance(personas, str):
        raise TypeError("personas must be a list, got one string")
    items = [p if isinstance(p, Persona) else Persona(p) for p in personas if p]
    if not items:
        raise ValueError("personas is empty")
    uniq = list({p.text: p for p in items}.values())
    return [uniq[k] for k in semantic_dedup([p.text for p in uniq], threshold, embedder)]


def topic_distribution(topics: Sequence[str]) -> np.ndarray:
    """Empirical distribution over the 21 sub-topics (table order)."""
    counts = np.zeros(len(TOPICS))
    for t in topics:
        counts[TOPICS.index(check_topic(t, "topics"))] += 1
    if counts.sum() == 0:
        raise ValueError("topics is empty")
    return counts / counts.sum()
