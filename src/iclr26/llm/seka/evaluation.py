"""Efficacy (ES) and paraphrase (PS) scores, dev-split selection of gains and filters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr26.llm.seka.steering import SEKA, continuation_logprobs
from iclr26.llm.seka.tasks import ConflictPrompt

GAIN_GRID = (0.5, 1.0, 1.5, 2.0, 3.0)
MIN_DIFF_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def efficacy(model, tok, prompts: Sequence[ConflictPrompt], method=None) -> float:
    """CounterFact's efficacy score: the share of prompts where the highlighted ("new") value
    has a higher teacher-forced log-probability than the first passage's ("old") value.
    ``method=None`` scores the unsteered model on the unmarked prompts."""
    texts = [p.marked if method is not None else p.plain for p in prompts]
    both = continuation_logprobs(
        model,
        tok,
        texts + texts,
        [p.new for p in prompts] + [p.old for p in prompts],
        method=method,
    )
    n = len(prompts)
    return float(np.mean(both[:n] > both[n:]))


def select_seka(
    model, tok, proj, dev: Sequence[ConflictPrompt], gains=GAIN_GRID, min_diffs=MIN_DIFF_GRID
) -> tuple[float, float, np.ndarray]:
    """The (g+, min_diff) pair with the best dev ES (first in grid order on ties; g- = 0)."""
    table = np.zeros((len(min_diffs), len(gains)))
    seen: dict[bytes, int] = {}  # thresholds that steer the same heads give the same scores
    for i, delta in enumerate(min_diffs):
        filtered = proj.refilter(delta).without_negative()
        key = filtered.applied_mask.numpy().tobytes()
        if key in seen:
            table[i] = table[seen[key]]
            continue
        seen[key] = i
        for j, g in enumerate(gains):
            table[i, j] = efficacy(model, tok, dev, SEKA(model, tok, filtered, g, 0.0))
    i, j = np.unravel_index(int(np.argmax(table)), table.shape)
    return float(gains[j]), float(min_diffs[i]), table


def select_gain(make, model, tok, dev: Sequence[ConflictPrompt], gains=GAIN_GRID):
    """The gain with the best dev ES for a method built by ``make(gain)``."""
    scores = np.array([efficacy(model, tok, dev, make(g)) for g in gains])
    return float(gains[int(np.argmax(scores))]), scores
