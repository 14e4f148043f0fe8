"""Multi-stage QA synthesis (§3.2, App. D.3-D.4): template sampling by topic, a HyDE step
(a hypothetical question-answer pair retrieves the reference snippets C_ref), persona matching
(the most similar persona if its similarity reaches λ_p), question-type sampling, generation,
and quality control with re-sampling of another template of the same topic on failure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.generation import (
    ExtractiveTemplateGenerator,
    RuleJudge,
    infer_relation,
)
from iclr26.knowledge.chronoplay.mining import mine_personas, mine_templates
from iclr26.knowledge.chronoplay.ner import GazetteerNER
from iclr26.knowledge.chronoplay.records import (
    CommunityQuestion,
    Persona,
    QATuple,
    Template,
    check_topic,
)
from iclr26.knowledge.chronoplay.retrieval import check_corpus, make_retriever
from iclr26.knowledge.chronoplay.taxonomy import QUESTION_TYPES


class SynthesisError(RuntimeError):
    """Every attempt for one requested tuple was rejected (counted in ``stats``)."""


class SynthesisPipeline:
    """``synthesize(topic, corpus) -> QATuple``.

    ``retriever``: ``"bm25"`` (bm25s), ``"minilm"``, ``"tfidf"`` or an object with
    ``search(queries, corpus, k)``; ``generator``: a callable (default
    :class:`ExtractiveTemplateGenerator`); ``judge``: a callable ``QATuple -> bool`` (default
    :class:`RuleJudge`; a judge that raises counts as a rejection, reported in ``stats``);
    ``ner``: the entity extractor E (for the offline generator a ``GazetteerNER`` built from
    a name -> type mapping, e.g. ``ToyGameWorld.ner``); ``templates`` / ``personas``:
    community assets (or call :meth:`mine`); ``persona_threshold`` λ_p; ``n_refs`` the size of
    C_ref; ``max_attempts`` templates tried per tuple (the paper retries until success)."""

    def __init__(
        self,
        retriever: Any = "bm25",
        generator: Callable | None = None,
        judge: Callable | None = None,
        *,
        ner: GazetteerNER,
        templates: Sequence[Template] = (),
        personas: Sequence[Persona] = (),
        persona_threshold: float = 0.3,
        embedder: str | Callable = "tfidf",
        n_refs: int = 3,
        max_attempts: int = 5,
        question_types: Sequence[str] = QUESTION_TYPES,
    ):
        self.retriever = make_retriever(retriever)
        self.generator = ExtractiveTemplateGenerator() if generator is None else generator
        if not callable(self.generator):
            raise TypeError(f"generator must be callable, got {type(self.generator).__name__}")
        self.judge = RuleJudge() if judge is None else judge
        if not callable(self.judge):
            raise TypeError(f"judge must be callable, got {type(self.judge).__name__}")
        if not callable(ner):
            raise TypeError(
                f"ner must be a callable text -> set of entities, got {type(ner).__name__}"
            )
        if isinstance(self.generator, ExtractiveTemplateGenerator) and not getattr(
            ner, "types", None
        ):
            raise ValueError(
                "ner must map entity names to types (GazetteerNER({name: type})) for the "
                "extractive generator to fill typed placeholders"
            )
        self.ner = ner
        self.persona_threshold = V.check_scalar(
            persona_threshold, "persona_threshold", low=-1.0, high=1.0
        )
        self.embedder = embedder
        self.n_refs = V.check_int(n_refs, "n_refs", low=1)
        self.max_attempts = V.check_int(max_attempts, "max_attempts", low=1)
        self.question_types = tuple(
            V.check_choice(q, "question_types", QUESTION_TYPES) for q in question_types
        )
        if not self.question_types:
            raise ValueError("question_types is empty")
        self.set_assets(templates, personas)
        self.stats: Counter = Counter()
        self.errors: list[str] = []

    # ------------------------------------------------------------------ assets
    def set_assets(self, templates: Sequence[Template], personas: Sequence[Persona]) -> None:
        templates, personas = list(templates), list(personas)
        for i, t in enumerate(templates):
            if not isinstance(t, Template):
                raise TypeError(f"templates[{i}] must be a Template, got {type(t).__name__}")
        for i, p in enumerate(personas):
            if not isinstance(p, Persona):
                raise TypeError(f"personas[{i}] must be a Persona, got {type(p).__name__}")
        self.templates = templates
        self.personas = personas
        self.by_topic: dict[str, list[Template]] = {}
        for t in templates:
            self.by_topic.setdefault(t.topic, []).append(t)
        self._persona_vec = None

    def mine(
        self,
        questions: Sequence[CommunityQuestion],
        personas: Sequence[Persona] = (),
        threshold: float = 0.7,
    ) -> SynthesisPipeline:
        """Mine templates (and de-duplicate personas) from community questions."""
        personas = mine_personas(personas, threshold, self.embedder) if personas else []
        templates = mine_templates(
            questions, self.ner, personas=personas, threshold=threshold, embedder=self.embedder
        )
        self.set_assets(templates, personas)
        return self

    def _persona_matrix(self):
        texts = [p.text for p in self.personas]
        if self.embedder == "tfidf":
            from sklearn.feature_extraction.text import TfidfVectorizer

            vec = TfidfVectorizer(sublinear_tf=True).fit(texts + [t.text for t in self.templates])
            self._analyzer = vec.build_analyzer()
            self._vocab, self._idf = vec.vocabulary_, vec.idf_
            mat = np.asarray(vec.transform(texts).todense())
        else:
            from iclr26.knowledge.chronoplay.retrieval import embed_texts

            mat = np.asarray(embed_texts(texts, self.embedder))
        return mat

    def _embed_query(self, text: str) -> np.ndarray:
        if self.embedder != "tfidf":
            from iclr26.knowledge.chronoplay.retrieval import embed_texts

            return np.asarray(embed_texts([text], self.embedder))[0]
        v = np.zeros(len(self._idf))
        for tok, n in Counter(self._analyzer(text)).items():
            j = self._vocab.get(tok)
            if j is not None:
                v[j] = (1.0 + np.log(n)) * self._idf[j]
        norm = np.linalg.norm(v)
        return v / norm if norm > 0 else v

    def _match_persona(self, text: str) -> tuple[Persona | None, float]:
        """The most similar persona to the hypothetical pair, if similarity >= λ_p."""
        if not self.personas:
            return None, float("nan")
        if self._persona_vec is None:
            self._persona_vec = self._persona_matrix()
        sims = self._persona_vec @ self._embed_query(text)
        best = int(np.argmax(sims))
        if sims[best] >= self.persona_threshold:
            return self.personas[best], float(sims[best])
        return None, float(sims[best])

    # ------------------------------------------------------------------ synthesis
    def synthesize(
        self,
        topic: str,
        corpus: Sequence,
        *,
        rng: np.random.Generator | int | None = None,
    ) -> QATuple:
        """One tuple of ``topic`` from corpus K_t; raises :class:`SynthesisError` after
        ``max_attempts`` rejected templates."""
        topic = check_topic(topic)
        corpus = check_corpus(corpus)
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        pool = self.by_topic.get(topic, [])
        self.stats["requests"] += 1
        if not pool:
            self.stats["failed_requests"] += 1
            raise SynthesisError(f"no template of topic {topic!r}: mine community data first")
        order = list(rng.permutation(len(pool)))
        while len(order) < self.max_attempts:
            order += list(rng.permutation(len(pool)))
        for attempt in range(self.max_attempts):
            template = pool[order[attempt]]
            self.stats["attempts"] += 1
            try:
                qa = self._attempt(template, topic, corpus, rng)
            except Exception as exc:  # a failing generator is a counted rejection
                self.stats["generator_failures"] += 1
                self._note(f"generator: {type(exc).__name__}: {exc}")
                continue
            self.stats["judge_calls"] += 1
            try:
                ok = bool(self.judge(qa))
            except Exception as exc:  # a raising judge is a counted, reported rejection
                self.stats["judge_errors"] += 1
                self._note(f"judge: {type(exc).__name__}: {exc}")
                continue
            if ok:
                self.stats["accepted"] += 1
                return qa
            self.stats["judge_rejections"] += 1
        self.stats["failed_requests"] += 1
        raise SynthesisError(f"{self.max_attempts} attempts for topic {topic!r} were rejected")

    def _note(self, message: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(message)

    def _attempt(self, template: Template, topic: str, corpus, rng) -> QATuple:
        hypo = getattr(self.generator, "hypothesize", None)
        if hypo is not None:
            h_question, h_answer = hypo(template, self.ner, rng)
        else:
            h_question, h_answer = template.text, ""
        query = f"{h_question} {h_answer}".strip()
        self.stats["retrievals"] += 1
        idx = self.retriever.search([query], corpus, self.n_refs)[0]
        refs = [corpus[int(i)] for i in idx]
        persona, _ = self._match_persona(query)
        rel = infer_relation(template.text)
        if rel is not None and rel[0] in self.question_types:
            qtype = rel[0]
        else:
            qtype = str(rng.choice(self.question_types))
        fields = {
            "template": template,
            "topic": topic,
            "refs": refs,
            "persona": persona,
            "qtype": qtype,
            "corpus": corpus,
            "ner": self.ner,
            "rng": rng,
        }
        self.stats["generator_calls"] += 1
        out = self.generator(fields)
        if not isinstance(out, dict) or not {"question", "answer", "refs"} <= set(out):
            raise TypeError("generator must return a dict with question, answer and refs")
        return QATuple.from_refs(
            out["question"],
            out["answer"],
            out["refs"],
            topic,
            qtype=out.get("qtype", qtype),
            persona=persona.text if persona is not None else None,
            meta=dict(out.get("meta") or {}),
        )
