"""Verifiable rewards of the arithmetic analogue: exact answer inside ``<answer>...</answer>``
(the release's accuracy term), an optional efficient-length term, and a weighted composite."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.rl.revisual_r1.pad import efficient_length_reward

ANSWER = re.compile(r"<answer>(-?\d+)</answer>")
RELEASE_WEIGHTS = {
    "accuracy": 0.8,
    "self_critique": 0.05,
    "image_revisit": 0.05,
    "repetition": 0.05,
    "length": 0.05,
}


def parse_answer(completion: str) -> int | None:
    """The integer of the first ``<answer>`` tag, or None when the completion has none."""
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a string, got {type(completion).__name__}")
    m = ANSWER.search(completion)
    return int(m.group(1)) if m else None


def accuracy_reward(prompts, completions: Sequence[str], answer: Sequence[int] | None = None, **_):
    """1 where the parsed answer equals the target (``answer`` column, or ``prompt.answer``)."""
    targets = answer if answer is not None else [p.answer for p in prompts]
    V.check_same_length(completions=completions, answer=targets)
    return np.array(
        [float(parse_answer(c) == int(a)) for c, a in zip(completions, targets)], dtype=np.float64
    )


class CompositeReward:
    """``sum_k w_k * r_k(prompts, completions, **columns)`` over named reward components.

    The release's math reward weights accuracy 0.8 and four auxiliary terms 0.05 each
    (:data:`RELEASE_WEIGHTS`); pass only the components you have. ``length_budget`` adds the
    efficient-length term on completion length in characters-as-tokens."""

    def __init__(
        self,
        components: Mapping[str, Callable] | None = None,
        weights: Mapping[str, float] | None = None,
        length_budget: float | None = None,
        tokens: Callable[[str], int] = len,
    ):
        components = dict(components or {"accuracy": accuracy_reward})
        if length_budget is not None:
            V.check_scalar(length_budget, "length_budget", low=0.0, low_open=True)
            components["length"] = lambda p, c, **kw: efficient_length_reward(
                [tokens(x) for x in c], length_budget
            )
        if weights is None:
            weights = {k: RELEASE_WEIGHTS.get(k, 1.0) for k in components}
        weights = dict(weights)
        for k in components:
            if k not in weights:
                raise ValueError(f"weights has no entry for component {k!r}")
            V.check_scalar(weights[k], f"weights[{k!r}]")
            if not callable(components[k]):
                raise TypeError(f"components[{k!r}] must be callable")
        self.components, self.weights = components, weights

    def __call__(self, prompts, completions, **columns) -> np.ndarray:
        total = np.zeros(len(completions))
        for k, fn in self.components.items():
            r = V.check_array(
                fn(prompts, completions, **columns),
                f"reward {k!r}",
                ndim=1,
                n_rows=len(completions),
            )
            total += self.weights[k] * r
        return total
