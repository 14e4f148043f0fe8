"""The data model of §3: authority snippets k = (content, timestamp, entities), community
templates (text with typed placeholders, topic) and personas, evaluation tuples
d = (question, answer, refs, topic θ, timestamp τ, entities σ) with τ = max_k k_τ and
σ = ∪_k k_σ over the refs, benchmark slices B_t = (K_t, D_t), and an append-only JSONL store
that keeps every accepted tuple on disk the moment it is accepted."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.taxonomy import TOPICS

ORIGINS = ("launch", "inherited", "knowledge", "interest", "rebuild")


def check_topic(topic: Any, name: str = "topic") -> str:
    if not isinstance(topic, str):
        raise TypeError(f"{name} must be one of the 21 sub-topic names, got {type(topic).__name__}")
    return V.check_choice(topic, name, TOPICS)


def check_text(text: Any, name: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"{name} is empty")
    return text


@dataclass(frozen=True)
class Snippet:
    """One authority-knowledge snippet (a wiki page or a patch note)."""

    content: str
    timestamp: float | None
    entities: frozenset[str] = frozenset()
    id: str = ""
    source: str = "wiki"

    def __post_init__(self) -> None:
        check_text(self.content, "content")
        if self.timestamp is not None:
            V.check_scalar(self.timestamp, "timestamp")
        if isinstance(self.entities, str):
            raise TypeError("entities must be a collection of names, got one string")
        object.__setattr__(self, "entities", frozenset(self.entities))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "timestamp": self.timestamp,
            "entities": sorted(self.entities),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snippet:
        return cls(d["content"], d["timestamp"], frozenset(d["entities"]), d["id"], d["source"])


@dataclass(frozen=True)
class Template:
    """A community question template: text with typed placeholders such as ``[WEAPON]``."""

    text: str
    topic: str

    def __post_init__(self) -> None:
        check_text(self.text, "text")
        check_topic(self.topic)


@dataclass(frozen=True)
class Persona:
    """A player persona; ``lead`` is the phrase it opens a question with (may be empty)."""

    text: str
    lead: str = ""

    def __post_init__(self) -> None:
        check_text(self.text, "text")


@dataclass(frozen=True)
class CommunityQuestion:
    """A timestamped player question (the topic label comes from the simulator or a
    classifier)."""

    text: str
    timestamp: float
    topic: str | None = None
    persona: str | None = None

    def __post_init__(self) -> None:
        check_text(self.text, "text")
        V.check_scalar(self.timestamp, "timestamp")
        if self.topic is not None:
            check_topic(self.topic)


@dataclass(frozen=True)
class QATuple:
    """An evaluation tuple. ``timestamp`` (τ) and ``entities`` (σ) follow from the refs;
    τ is ``None`` when no ref carries a time. ``meta`` holds what the generator knows about
    the asked facts (entities filled in, relation) so a simulator can check the answer."""

    question: str
    answer: str
    refs: tuple[Snippet, ...]
    topic: str
    timestamp: float | None
    entities: frozenset[str]
    qtype: str = "extractive"
    persona: str | None = None
    origin: str = "launch"
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_refs(
        cls,
        question: str,
        answer: str,
        refs: Sequence[Snippet],
        topic: str,
        **kw: Any,
    ) -> QATuple:
        refs = tuple(refs)
        times = [r.timestamp for r in refs if r.timestamp is not None]
        ents = frozenset().union(*(r.entities for r in refs)) if refs else frozenset()
        return cls(question, answer, refs, topic, max(times) if times else None, ents, **kw)

    def with_origin(self, origin: str) -> QATuple:
        return replace(self, origin=V.check_choice(origin, "origin", ORIGINS))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "references": [r.to_dict() for r in self.refs],
            "question_topic": self.topic,
            "time": self.timestamp,
            "entities": sorted(self.entities),
            "question_type": self.qtype,
            "persona": self.persona,
            "origin": self.origin,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QATuple:
        return cls(
            d["question"],
            d["answer"],
            tuple(Snippet.from_dict(r) for r in d["references"]),
            d["question_topic"],
            d["time"],
            frozenset(d["entities"]),
            d.get("question_type", "extractive"),
            d.get("persona"),
            d.get("origin", "launch"),
            d.get("meta", {}),
        )


@dataclass
class BenchmarkSlice:
    """B_t = (K_t, D_t) for one phase: the corpus known at the phase end, the tuples, the
    phase interval and the community topic mix of the phase."""

    phase: int
    start: float
    end: float
    corpus: list[Snippet]
    tuples: list[QATuple]
    community_mix: Any = None
    synthesized: int = 0

    def origin_counts(self) -> dict[str, int]:
        counts = Counter(t.origin for t in self.tuples)
        return {o: int(counts.get(o, 0)) for o in ORIGINS}

    def topic_counts(self) -> dict[str, int]:
        return dict(Counter(t.topic for t in self.tuples))

    def to_jsonl(self, path: str | os.PathLike) -> Path:
        """One tuple per line, with the release's field names (question, answer,
        references, question_topic, time, entities) plus phase and origin."""
        path = Path(path)
        with path.open("w", encoding="utf-8") as fh:
            for t in self.tuples:
                fh.write(json.dumps({"phase": self.phase, **t.to_dict()}) + "\n")
        return path


class QAStore:
    """Append-only JSONL of accepted tuples keyed by synthesis request number.

    Each accepted tuple is written and flushed as soon as the judge accepts it, so an
    interrupted run loses nothing; a rerun with the same seed replays stored requests instead
    of calling the generator again. A torn last line (killed mid-write) is ignored and counted
    in ``torn_lines``; the next append starts on a fresh line, so it is not glued to the torn
    one."""

    def __init__(self, path: str | os.PathLike):
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a file path, got {type(path).__name__}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._items: dict[int, QATuple] = {}
        self.torn_lines = 0
        self._open_line = False  # the file ends without a newline (a torn last write)
        if self.path.exists():
            with self.path.open("rb") as fh:
                if fh.seek(0, os.SEEK_END) > 0:
                    fh.seek(-1, os.SEEK_END)
                    self._open_line = fh.read(1) != b"\n"
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                        self._items[int(rec["request"])] = QATuple.from_dict(rec["tuple"])
                    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                        self.torn_lines += 1

    def __len__(self) -> int:
        return len(self._items)

    def get(self, request: int) -> QATuple | None:
        return self._items.get(request)

    def append(self, request: int, item: QATuple) -> None:
        rec = {"request": int(request), "tuple": item.to_dict()}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(("\n" if self._open_line else "") + json.dumps(rec) + "\n")
            fh.flush()
        self._open_line = False
        self._items[int(request)] = item

    def tuples(self) -> list[QATuple]:
        return [self._items[k] for k in sorted(self._items)]


def topic_counts(tuples: Iterable[QATuple]) -> Counter:
    return Counter(t.topic for t in tuples)
