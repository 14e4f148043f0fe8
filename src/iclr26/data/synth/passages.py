"""Synthetic passage-conflict QA: the offline stand-in for CounterFact used by SEKA's claim checks.

Prompts list short passages (``P1: The code of Zarl is 4 7. P2: ...``) and ask about one
entity. The task fine-tune mixes *relevance QA* (three passages about different entities; the
answer is the asked entity's value) with *conflict QA* (passages give different values for the
same entity; the target is always the **first** passage's value, a prior the model follows like
a memorised fact). Evaluation prompts are conflict prompts whose highlighted passage is a later
one (the "new fact"): steering succeeds when the highlighted value becomes more likely than the
first one (efficacy score, ES). Held-out phrasings give the paraphrase score (PS). Projection
triplets use other attributes (colours, birthplaces) than the evaluation (codes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

COLOURS = ("red", "blue", "green", "black", "white", "pink", "grey", "brown", "gold", "teal")
CITIES = (
    "Lima",
    "Oslo",
    "Cairo",
    "Delhi",
    "Quito",
    "Riga",
    "Sofia",
    "Tunis",
    "Hanoi",
    "Dakar",
    "Accra",
    "Baku",
)
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"

# attribute -> (statement, question) for the training phrasing and the held-out paraphrase
TEMPLATES = {
    "code": (
        ("The code of {e} is {v}.", "What is the code of {e}?"),
        ("{e} has the code {v}.", "Which code does {e} have?"),
    ),
    "colour": (
        ("The colour of {e} is {v}.", "What is the colour of {e}?"),
        ("{e} has the colour {v}.", "Which colour does {e} have?"),
    ),
    "birthplace": (
        ("{e} was born in {v}.", "Where was {e} born?"),
        ("The birthplace of {e} is {v}.", "What is the birthplace of {e}?"),
    ),
}
ATTRIBUTES = tuple(TEMPLATES)


def entity(rng: np.random.Generator) -> str:
    parts = [
        rng.choice(list(_CONSONANTS)).upper(),
        rng.choice(list(_VOWELS)),
        rng.choice(list(_CONSONANTS)),
    ]
    if rng.random() < 0.5:
        parts += [rng.choice(list(_VOWELS)), rng.choice(list(_CONSONANTS))]
    return "".join(parts)


def values(attribute: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct values of an attribute."""
    if attribute == "code":
        picked = rng.choice(100, size=n, replace=False)
        return [f"{v // 10} {v % 10}" for v in picked]
    pool = COLOURS if attribute == "colour" else CITIES
    return [str(v) for v in rng.choice(pool, size=n, replace=False)]


def _entities(n: int, rng: np.random.Generator) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        e = entity(rng)
        if e not in names:
            names.append(e)
    return names


def _prompt(passages: list[str], question: str, highlight: int | None = None) -> str:
    shown = []
    for i, text in enumerate(passages):
        piece = f"P{i + 1}: {text}"
        shown.append(f"**{piece}**" if i == highlight else piece)
    return " ".join(shown) + f" Question: {question}\nAnswer:"


def relevance_example(rng: np.random.Generator, attribute: str | None = None) -> tuple[str, str]:
    """(prompt, completion): three passages about different entities, one is asked about."""
    attribute = attribute or str(rng.choice(ATTRIBUTES))
    (stmt, quest), _ = TEMPLATES[attribute]
    names = _entities(3, rng)
    vals = values(attribute, 3, rng)
    asked = int(rng.integers(3))
    passages = [stmt.format(e=e, v=v) for e, v in zip(names, vals)]
    return _prompt(passages, quest.format(e=names[asked])), f" {vals[asked]}"


def conflict_example(rng: np.random.Generator, attribute: str | None = None) -> tuple[str, str]:
    """(prompt, completion): 2-3 passages give different values for one entity; the target is
    the first passage's value."""
    attribute = attribute or str(rng.choice(ATTRIBUTES))
    (stmt, quest), _ = TEMPLATES[attribute]
    name = _entities(1, rng)[0]
    vals = values(attribute, int(rng.integers(2, 4)), rng)
    passages = [stmt.format(e=name, v=v) for v in vals]
    return _prompt(passages, quest.format(e=name)), f" {vals[0]}"


def training_examples(n: int, seed: int = 0, relevance_share: float = 0.6) -> list[tuple[str, str]]:
    """The fine-tune mixture: ``relevance_share`` relevance QA, the rest conflict QA."""
    n = V.check_int(n, "n", low=1)
    relevance_share = V.check_scalar(relevance_share, "relevance_share", low=0.0, high=1.0)
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    return [
        relevance_example(rng) if rng.random() < relevance_share else conflict_example(rng)
        for _ in range(n)
    ]


@dataclass(frozen=True)
class ConflictPrompt:
    """An evaluation item: the marked prompt, its unmarked twin, new (highlighted) and old
    (first passage) values, the attribute and whether it uses the held-out phrasing."""

    marked: str
    plain: str
    new: str
    old: str
    attribute: str
    paraphrase: bool


def conflict_prompts(
    n: int, seed: int, attributes=("code",), paraphrase: bool = False
) -> list[ConflictPrompt]:
    """``n`` conflict prompts whose highlighted passage is not the first one."""
    n = V.check_int(n, "n", low=1)
    if isinstance(attributes, str) or not len(attributes):
        raise ValueError(f"attributes must be a non-empty sequence of {', '.join(ATTRIBUTES)}")
    for a in attributes:
        V.check_choice(a, "attributes", ATTRIBUTES)
    paraphrase = V.check_bool(paraphrase, "paraphrase")
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    out = []
    for i in range(n):
        attribute = attributes[i % len(attributes)]
        stmt, quest = TEMPLATES[attribute][1 if paraphrase else 0]
        name = _entities(1, rng)[0]
        k = int(rng.integers(2, 4))
        vals = values(attribute, k, rng)
        target = int(rng.integers(1, k))
        passages = [stmt.format(e=name, v=v) for v in vals]
        question = quest.format(e=name)
        out.append(
            ConflictPrompt(
                marked=_prompt(passages, question, highlight=target),
                plain=_prompt(passages, question),
                new=f" {vals[target]}",
                old=f" {vals[0]}",
                attribute=attribute,
                paraphrase=paraphrase,
            )
        )
    return out
