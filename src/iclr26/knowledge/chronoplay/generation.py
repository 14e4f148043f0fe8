"""The pluggable generator and judge of the synthesis pipeline (§3.2, App. D.3-D.4).

A generator is a callable ``generator(fields) -> dict`` with the keys ``question``, ``answer``,
``refs`` (snippets) and optionally ``qtype`` and ``meta``; ``fields`` carries the template, its
topic, the retrieved snippets C_ref, the persona, the sampled question type, the corpus K_t and a
random generator. A generator may also offer ``hypothesize(template, ner, rng) -> (q, a)`` for the
HyDE step. A judge is a callable ``judge(qa) -> bool``.

``ExtractiveTemplateGenerator`` (offline default) fills a template's typed placeholders with
entities found in C_ref and answers from the newest snippet of K_t that states the asked fact;
it never invents facts. ``LLMGenerator`` wraps any ``str -> str`` client (an OpenAI-compatible
server via ``OpenAICompatibleClient``, a ``transformers`` pipeline) and parses its JSON answer.
``RuleJudge`` is the offline quality control."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.records import QATuple, Snippet, Template
from iclr26.knowledge.chronoplay.retrieval import _corpus_key
from iclr26.knowledge.chronoplay.taxonomy import ATTRIBUTES, ENTITY_TYPES, QUESTION_TYPES

_PLACEHOLDER = re.compile(r"\[(" + "|".join(ENTITY_TYPES) + r")\]")
_WORD = re.compile(r"[a-z0-9]+")
_PHRASES = "|".join(re.escape(v[0]) for v in ATTRIBUTES.values())
_STATEMENT = re.compile(
    r"^(?:Patch \S+ notes: )?(?P<ent>.+?) (?P<attr>" + _PHRASES + r") is (?:now )?"
    r"(?P<val>.+?)(?: \(was [^)]*\))?\.$"
)
_PHRASE_TO_ATTR = {v[0]: k for k, v in ATTRIBUTES.items()}


class GenerationError(RuntimeError):
    """The generator could not produce a tuple from these fields (counted as a rejection)."""


# ---------------------------------------------------------------------- templates
def infer_relation(text: str) -> tuple[str, list[str], list[str]] | None:
    """What a template asks, read from its placeholders and cue words: ``(kind, placeholder
    types, relation)``. Two placeholders of one type -> comparative on a numeric attribute;
    an entity-valued attribute followed by an attribute of that value's type -> multi-hop;
    else extractive. ``None`` when no cue matches the placeholder's type."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a template string, got {type(text).__name__}")
    types = _PLACEHOLDER.findall(text)
    if not types or len(set(types)) != 1 or len(types) > 2:
        return None
    etype = types[0]
    words = _WORD.findall(_PLACEHOLDER.sub(" ", text).lower())

    def cued(t: str) -> list[str]:
        hits = []
        for attr, (_, holders, _, cues) in ATTRIBUTES.items():
            if t in holders and any(w.startswith(c) for w in words for c in cues):
                hits.append(attr)
        return hits

    first = cued(etype)
    if not first:
        return None
    if len(types) == 2:
        numeric = [a for a in first if ATTRIBUTES[a][2] is None and a != "gpu"]
        return ("comparative", types, numeric[:1]) if numeric else None
    for a in first:
        value_type = ATTRIBUTES[a][2]
        if value_type is not None:
            second = [b for b in cued(value_type) if b != a]
            if second:
                return "multi-hop", types, [a, second[0]]
    return "extractive", types, [first[0]]


def fill_template(text: str, names: Sequence[str]) -> str:
    for name in names:
        text = _PLACEHOLDER.sub(name, text, count=1)
    return text


# ---------------------------------------------------------------------- facts in K_t
class FactIndex:
    """Statements ``<entity> <attribute phrase> is <value>.`` found in the corpus text, so
    the newest statement of a fact can be cited."""

    def __init__(self, corpus: Sequence[Snippet]):
        self.facts: dict[tuple[str, str], list[tuple[float, int, str]]] = {}
        for i, snip in enumerate(corpus):
            for sentence in re.split(r"(?<=\.)\s+", snip.content.strip()):
                m = _STATEMENT.match(sentence)
                if m is None:
                    continue
                key = (m.group("ent").strip().lower(), _PHRASE_TO_ATTR[m.group("attr")])
                t = -np.inf if snip.timestamp is None else snip.timestamp
                self.facts.setdefault(key, []).append((t, i, m.group("val").strip()))
        self.size = len(corpus)

    def newest(self, entity: str, attr: str) -> tuple[int, str] | None:
        hits = self.facts.get((entity.lower(), attr))
        if not hits:
            return None
        t, i, v = max(hits)
        return i, v


_FACT_CACHE: dict[tuple, FactIndex] = {}


def fact_index(corpus: Sequence[Snippet]) -> FactIndex:
    key = _corpus_key(corpus)
    idx = _FACT_CACHE.get(key)
    if idx is None:
        if len(_FACT_CACHE) > 16:
            _FACT_CACHE.clear()
        idx = _FACT_CACHE[key] = FactIndex(corpus)
    return idx


# ---------------------------------------------------------------------- generators
class ExtractiveTemplateGenerator:
    """Offline generator: deterministic given ``fields["rng"]``; never invents facts.

    Placeholders are filled, type-matched, with entities that occur in the retrieved snippets
    C_ref (in rank order); the answer is the value stated by the *newest* snippet of K_t that
    states the asked fact (for multi-hop: the chain's last value; comparative: the name with the
    larger value); the refs are those snippets."""

    def hypothesize(self, template: Template, ner, rng: np.random.Generator) -> tuple[str, str]:
        """HyDE step: the template with plausible (random, type-matched) names and an answer
        sentence without a value."""
        if not isinstance(template, Template):
            raise TypeError(f"template must be a Template, got {type(template).__name__}")
        rel = infer_relation(template.text)
        if rel is None:
            raise GenerationError(f"template {template.text!r} asks nothing this world states")
        kind, types, relation = rel
        pool = {t: [n for n, ty in ner.types.items() if ty == t] for t in set(types)}
        names = [str(n) for n in rng.choice(pool[types[0]], size=len(types), replace=False)]
        question = fill_template(template.text, names)
        answer = " ".join(f"{n} {ATTRIBUTES[relation[0]][0]} is" for n in names)
        return question, answer

    def __call__(self, fields: dict[str, Any]) -> dict[str, Any]:
        _check_fields(fields, ("template", "refs", "corpus", "ner"))
        template: Template = fields["template"]
        rel = infer_relation(template.text)
        if rel is None:
            raise GenerationError(f"template {template.text!r} asks nothing this world states")
        kind, types, relation = rel
        ner, corpus = fields["ner"], fields["corpus"]
        ranked: list[str] = []
        for snip in fields["refs"]:
            for _, _, name in ner.spans(snip.content):
                if ner.types.get(name) == types[0] and name not in ranked:
                    ranked.append(name)
        if len(ranked) < len(types):
            raise GenerationError("the retrieved snippets hold too few entities of the asked type")
        names = ranked[: len(types)]
        facts = fact_index(corpus)
        refs, values = [], []
        for name in names:
            hit = facts.newest(name, relation[0])
            if hit is None:
                raise GenerationError(f"no snippet states the {relation[0]} of {name}")
            refs.append(hit[0])
            values.append(hit[1])
        if kind == "multi-hop":
            hit = facts.newest(values[0], relation[1])
            if hit is None:
                raise GenerationError(f"no snippet states the {relation[1]} of {values[0]}")
            refs.append(hit[0])
            answer = hit[1]
        elif kind == "comparative":
            a, b = (float(v) for v in values)
            if a == b:
                raise GenerationError("the compared values are equal")
            answer = names[0] if a > b else names[1]
        else:
            answer = values[0]
        question = fill_template(template.text, names)
        persona = fields.get("persona")
        if persona is not None and persona.lead:
            question = f"{persona.lead} {question[0].lower()}{question[1:]}"
        ref_snips = [corpus[i] for i in dict.fromkeys(refs)]
        meta = {"kind": kind, "entities": names, "relation": relation, "template": template.text}
        return {
            "question": question,
            "answer": answer,
            "refs": ref_snips,
            "qtype": kind,
            "meta": meta,
        }


def _check_fields(fields: Any, keys: Sequence[str]) -> None:
    if not isinstance(fields, dict):
        raise TypeError(f"fields must be a dict of prompt fields, got {type(fields).__name__}")
    missing = [k for k in keys if k not in fields]
    if missing:
        raise ValueError(f"fields lacks {', '.join(missing)}")
    if not isinstance(fields["template"], Template):
        raise TypeError(
            f"fields['template'] must be a Template, got {type(fields['template']).__name__}"
        )


def _extract_json(text: str) -> Any:
    m = re.search(r"<json>(.*?)</json>", text, re.S)
    body = m.group(1) if m else text
    start = min([i for i in (body.find("["), body.find("{")) if i >= 0], default=-1)
    if start < 0:
        raise GenerationError("the model answer holds no JSON")
    try:
        return json.JSONDecoder().raw_decode(body[start:])[0]
    except json.JSONDecodeError as exc:
        raise GenerationError(f"the model answer is not valid JSON: {exc}") from None


class LLMGenerator:
    """An LLM as generator: ``client(prompt: str) -> str``.

    The prompt states the task (topic, template, question type, persona, numbered reference
    snippets) and asks for ``<json>[{"question": ..., "answer": ..., "references": [i, ...]}]
    </json>``; ``references`` are indices of the given snippets (all of them when absent)."""

    def __init__(self, client: Callable[[str], str], *, max_refs: int = 5):
        if not callable(client):
            raise TypeError(f"client must be a callable str -> str, got {type(client).__name__}")
        self.client = client
        self.max_refs = V.check_int(max_refs, "max_refs", low=1)

    def prompt(self, fields: dict[str, Any]) -> str:
        template: Template = fields["template"]
        persona = fields.get("persona")
        docs = "\n".join(
            f"[{i}] ({s.timestamp}) {s.content}"
            for i, s in enumerate(fields["refs"][: self.max_refs])
        )
        return (
            "You write one question-answer pair for a game RAG benchmark.\n"
            f"Topic: {template.topic}\nQuestion type: {fields.get('qtype', 'extractive')}\n"
            f"Question template from real players: {template.text}\n"
            f"Player persona: {persona.text if persona else 'none'}\n"
            f"Reference documents (newest facts win):\n{docs}\n"
            "Answer only from the documents; do not write 'according to the document'.\n"
            'Reply as <json>[{"question": "...", "answer": "...", "references": [0]}]</json>'
        )

    def hypothesize(self, template: Template, ner, rng: np.random.Generator) -> tuple[str, str]:
        reply = self.client(
            "Fill the placeholders of this player question with plausible names and write a "
            f"plausible short answer.\nTemplate: {template.text}\n"
            'Reply as <json>{"question": "...", "answer": "..."}</json>'
        )
        data = _extract_json(str(reply))
        if isinstance(data, list):
            data = data[0] if data else {}
        if not isinstance(data, dict) or "question" not in data:
            raise GenerationError("the model's hypothetical pair lacks a question")
        return str(data["question"]), str(data.get("answer", ""))

    def __call__(self, fields: dict[str, Any]) -> dict[str, Any]:
        _check_fields(fields, ("template", "refs"))
        data = _extract_json(str(self.client(self.prompt(fields))))
        if isinstance(data, list):
            if not data:
                raise GenerationError("the model answer is an empty list")
            data = data[0]
        if not isinstance(data, dict) or "question" not in data or "answer" not in data:
            raise GenerationError("the model answer lacks 'question' or 'answer'")
        given = list(fields["refs"][: self.max_refs])
        idx = data.get("references")
        if isinstance(idx, list) and idx and all(isinstance(i, int) for i in idx):
            refs = [given[i] for i in idx if 0 <= i < len(given)]
        else:
            refs = given
        return {
            "question": str(data["question"]),
            "answer": str(data["answer"]),
            "refs": refs,
            "qtype": fields.get("qtype", QUESTION_TYPES[0]),
            "meta": {},
        }


class OpenAICompatibleClient:
    """``client(prompt) -> str`` for a chat-completions server the user runs (``base_url``
    like ``http://localhost:8000/v1``). Uses only the standard library; never called in
    tests."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        temperature: float = 0.7,
        timeout: float = 120.0,
    ):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model name, got {model!r}")
        self.base_url, self.model, self.api_key = base_url.rstrip("/"), model, api_key
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0)
        self.timeout = V.check_scalar(timeout, "timeout", low=0.0, low_open=True)

    def __call__(self, prompt: str) -> str:  # pragma: no cover - needs a server
        import urllib.request

        body = json.dumps(
            {
                "model": self.model,
                "temperature": self.temperature,
                "messages": [{"role": "user", "content": prompt}],
            }
        ).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, method="POST")
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read())["choices"][0]["message"]["content"]


# ---------------------------------------------------------------------- judge
def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class RuleJudge:
    """Offline quality control: the answer is in the refs (substring, or token overlap
    ``>= overlap``), the question names >= 1 entity of σ, it does not say "according to the
    document", and it has ``min_words`` to ``max_words`` words."""

    BANNED = ("according to the document", "according to the text", "in the document")

    def __init__(self, overlap: float = 0.8, min_words: int = 5, max_words: int = 60):
        self.overlap = V.check_probability(overlap, "overlap", open_low=True)
        self.min_words = V.check_int(min_words, "min_words", low=1)
        self.max_words = V.check_int(max_words, "max_words", low=self.min_words)

    def problems(self, qa: QATuple) -> list[str]:
        """The rules ``qa`` breaks (empty when it passes)."""
        if not isinstance(qa, QATuple):
            raise TypeError(f"qa must be a QATuple, got {type(qa).__name__}")
        out = []
        ref_text = " ".join(r.content for r in qa.refs).lower()
        answer = qa.answer.strip().lower()
        if not answer:
            out.append("empty answer")
        elif answer not in ref_text:
            ans_tok, ref_tok = _tokens(answer), set(_tokens(ref_text))
            share = sum(t in ref_tok for t in ans_tok) / max(len(ans_tok), 1)
            if share < self.overlap:
                out.append("answer not supported by the refs")
        q = qa.question.lower()
        if not any(e.lower() in q for e in qa.entities):
            out.append("question names no entity of the refs")
        if any(b in q or b in answer for b in self.BANNED):
            out.append("refers to 'the document'")
        n = len(qa.question.split())
        if not self.min_words <= n <= self.max_words:
            out.append(f"question has {n} words")
        return out

    def __call__(self, qa: QATuple) -> bool:
        return not self.problems(qa)
