"""The SIREN prompt ``Phi(S_u, H_u^(N), d(i))`` (sketch, N most recent interactions, candidate),
the two completion formats (chain of thought and answer-only), the rating parser and the rule
reward of the RL stage: ``R = s_format + (2 - (4 / E_max) |r_hat - r|)`` with ``s_format = +1``
for a well-formed ``<think>..</think><answer>d</answer>`` and ``-1`` otherwise."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.llm.siren.sketch import InterestSketcher, check_history

THINK, END_THINK, ANSWER, END_ANSWER = "<think>", "</think>", "<answer>", "</answer>"
AO_SUFFIX = THINK + END_THINK + ANSWER  # the answer-only (no-think) prefix of the output
RATINGS = (1, 2, 3, 4, 5)
FALLBACK_RATING = 3
_WELL_FORMED = re.compile(r"^\s*<think>(.*?)</think>\s*<answer>\s*(\d)\s*</answer>\s*$", re.S)
_ANSWER = re.compile(r"<answer>\s*(\d+)\s*(?:</answer>|$)", re.S)


class SketchPrompt:
    """Renders the recommendation prompt.

    ``n_recent`` most recent ``(description, rating)`` pairs, preceded by the liked/disliked
    sketch when ``with_sketch``; ``raw_history=k`` gives the "more raw history" baseline
    (``k`` recent items and no sketch), ``with_sketch=False`` the "recent only" one.
    Text: ``Liked: a; b | Disliked: c\\nRecent: <desc> = 4 ; ...\\nCandidate: <desc>\\n``."""

    def __init__(
        self,
        n_recent: int = 10,
        with_sketch: bool = True,
        raw_history: int | None = None,
        token_budget: int | None = None,
    ):
        self.n_recent = V.check_int(n_recent, "n_recent", low=0)
        self.with_sketch = V.check_bool(with_sketch, "with_sketch")
        self.raw_history = V.check_int(raw_history, "raw_history", low=1, allow_none=True)
        self.token_budget = V.check_int(token_budget, "token_budget", low=0, allow_none=True)
        if self.raw_history is not None:
            self.n_recent, self.with_sketch = self.raw_history, False

    @staticmethod
    def render(
        liked: Sequence[str] | None,
        disliked: Sequence[str] | None,
        recent: Sequence[tuple[str, int]],
        candidate: str,
    ) -> str:
        """The prompt text; ``liked``/``disliked`` ``None`` leaves the sketch line out."""
        if not isinstance(candidate, str):
            raise TypeError(f"candidate must be a string, got {type(candidate).__name__}")
        lines = []
        if liked is not None or disliked is not None:
            lines.append(f"Liked: {'; '.join(liked or [])} | Disliked: {'; '.join(disliked or [])}")
        lines.append("Recent: " + " ; ".join(f"{d} = {int(r)}" for d, r in recent))
        lines.append(f"Candidate: {candidate}")
        return "\n".join(lines) + "\n"

    def __call__(
        self,
        history,
        candidate: int,
        item_text: Sequence[str],
        sketcher: InterestSketcher | None = None,
    ) -> str:
        """The prompt for ``candidate`` (an item id indexing ``item_text``) given the user's
        ``history`` of ``(item, rating)`` rows strictly before it."""
        rows = check_history(history)
        n_items = len(item_text)
        cand = V.check_int(candidate, "candidate", low=0, high=n_items - 1)
        if len(rows) and (rows[:, 0].min() < 0 or rows[:, 0].max() >= n_items):
            raise ValueError("history holds item ids outside item_text")
        recent = rows[-self.n_recent :] if self.n_recent else rows[:0]
        pairs = [(item_text[int(i)], int(r)) for i, r in recent]
        liked = disliked = None
        if self.with_sketch:
            if sketcher is None:
                raise ValueError("sketcher is required when with_sketch=True")
            liked, disliked = sketcher.sketch(rows, self.token_budget)
        return self.render(liked, disliked, pairs, item_text[cand])


def parse_rating(text: str) -> tuple[int | None, bool]:
    """``(rating, well_formed)`` of a completion: the digit inside ``<answer>..</answer>``
    (``None`` when missing or outside 1..5), and whether the whole text is
    ``<think>..</think><answer>d</answer>`` with ``d`` in 1..5 (a trailing ``<eos>`` is ok)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    body = text.replace("<eos>", "")
    m = _ANSWER.search(body)
    rating = int(m.group(1)) if m else None
    if rating is not None and rating not in RATINGS:
        rating = None
    full = _WELL_FORMED.match(body)
    well_formed = bool(full) and int(full.group(2)) in RATINGS and rating is not None
    return rating, well_formed


def predicted_rating(text: str) -> int:
    """The rating a completion predicts; malformed output falls back to 3."""
    rating, _ = parse_rating(text)
    return FALLBACK_RATING if rating is None else rating


def siren_reward(
    completions: Sequence[str], ratings, e_max: float = 4.0, **_: object
) -> list[float]:
    """``s_format + (2 - (4 / e_max) |r_hat - r|)`` per completion; an unparsable rating scores
    the accuracy part ``-2``. Works as a TRL reward function (``ratings`` a dataset column)."""
    if isinstance(completions, str) or not isinstance(completions, Sequence):
        raise TypeError("completions must be a sequence of strings")
    if len(completions) == 0:
        raise ValueError("completions is empty")
    gold = V.check_array(ratings, "ratings", ndim=1, n_rows=len(completions), low=1, high=5)
    e_max = V.check_scalar(e_max, "e_max", low=0.0, low_open=True)
    out = []
    for text, r in zip(completions, gold, strict=True):
        if not isinstance(text, str):
            raise TypeError(f"completions must be strings, got {type(text).__name__}")
        pred, ok = parse_rating(text)
        fmt = 1.0 if ok else -1.0
        acc = -2.0 if pred is None else 2.0 - (4.0 / e_max) * abs(pred - float(r))
        out.append(fmt + acc)
    return out


def cot_rationale(topic_name: str, relation: str, recent_mean: float) -> str:
    """The rule-written rationale of the cold start:
    ``<think> topic: a/b/c ; liked ; recent mean 3.4 </think>``."""
    V.check_choice(relation, "relation", ("liked", "disliked", "new"))
    V.check_scalar(recent_mean, "recent_mean", low=0.0, high=5.0)
    return f"{THINK} topic: {topic_name} ; {relation} ; recent mean {recent_mean:.1f} {END_THINK}"


def cot_target(
    history, candidate: int, rating: int, sketcher: InterestSketcher, n_recent: int = 10
) -> str:
    """The cold-start SFT completion: the rule rationale then the gold rating."""
    rows = check_history(history)
    rating = V.check_int(rating, "rating", low=1, high=5)
    topic = sketcher.topic_of(candidate)
    liked, disliked = sketcher.sketch_ids(rows)
    relation = "liked" if topic in liked else "disliked" if topic in disliked else "new"
    recent = rows[-n_recent:, 1] if len(rows) else np.asarray([FALLBACK_RATING])
    rationale = cot_rationale(sketcher.topic_names_[topic], relation, float(np.mean(recent)))
    return f"{rationale}{ANSWER}{rating}{END_ANSWER}"


def ao_answer(rating: int) -> str:
    """The answer-only completion ``<think></think><answer>r</answer>``."""
    rating = V.check_int(rating, "rating", low=1, high=5)
    return f"{AO_SUFFIX}{rating}{END_ANSWER}"
