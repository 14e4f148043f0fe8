"""The paper's editing knobs: the global-λ sweep over merged subgroup vectors, the rules that
pick λ on validation data, and injecting one subgroup's vector into a fine-tuned model."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.llm.task_arithmetic_fairness.fairness import fairness_report
from iclr26.llm.task_arithmetic_fairness.model import Encoded, predict_proba
from iclr26.llm.task_arithmetic_fairness.task_vector import (
    CONVENTIONS,
    TaskVector,
    combine_coefficients,
    merge,
)

DEFAULT_GRID = tuple(round(0.1 * i, 1) for i in range(11))
RULES = ("fair_guarded", "acc", "code_rule")


def _check_vectors(vectors) -> list[TaskVector]:
    items = list(vectors.values()) if isinstance(vectors, Mapping) else list(vectors)
    if not items:
        raise ValueError("vectors is empty: the sweep needs at least one task vector")
    for i, tv in enumerate(items):
        if not isinstance(tv, TaskVector):
            raise TypeError(f"vectors[{i}] must be a TaskVector, got {type(tv).__name__}")
    return items


def _check_eval_sets(eval_sets) -> dict:
    if not isinstance(eval_sets, Mapping) or not eval_sets:
        raise ValueError("eval_sets must be a non-empty mapping name -> (enc, y, groups)")
    out = {}
    for name, triple in eval_sets.items():
        if not isinstance(triple, Sequence) or len(triple) != 3:
            raise ValueError(f"eval_sets[{name!r}] must be (enc, y, groups)")
        enc, y, groups = triple
        if not isinstance(enc, Encoded):
            raise TypeError(f"eval_sets[{name!r}][0] must be an Encoded batch")
        if groups is None:
            raise ValueError(f"eval_sets[{name!r}] groups are missing: the sweep needs them")
        out[str(name)] = (enc, np.asarray(y), groups)
    return out


def evaluate(model, enc: Encoded, y, groups, threshold: float = 0.5) -> dict:
    """:func:`fairness_report` of ``model``'s thresholded predictions."""
    threshold = V.check_probability(threshold, "threshold", open_low=True, open_high=True)
    pred = (predict_proba(model, enc) >= threshold).astype(np.int64)
    return fairness_report(y, pred, groups)


def lambda_sweep(
    base,
    vectors,
    eval_sets,
    grid: Sequence[float] = DEFAULT_GRID,
    convention: str = "sum",
) -> list[dict]:
    """One row per λ of ``grid``: θ(λ) = θ₀ + λ Σ_g τ_g (``"sum"``) or θ₀ + λ mean_g τ_g
    (``"mean"``), evaluated with :func:`fairness_report` on every ``eval_sets[name] =
    (enc, y, groups)``. Row: ``{"lam": λ, name: report, ...}``."""
    items = _check_vectors(vectors)
    sets = _check_eval_sets(eval_sets)
    V.check_choice(convention, "convention", CONVENTIONS)
    grid = V.check_array(grid, "grid", ndim=1, dtype=np.float64)
    rows = []
    for lam in grid:
        coeffs = combine_coefficients(float(lam), len(items), convention)
        model = merge(base, items, coeffs)
        row = {"lam": float(lam)}
        for name, (enc, y, groups) in sets.items():
            row[name] = evaluate(model, enc, y, groups)
        rows.append(row)
    return rows


def select_lambda(
    sweep: Sequence[Mapping],
    rule: str = "fair_guarded",
    split: str = "val",
    reference_accuracy: float | None = None,
    tolerance: float = 0.02,
) -> float:
    """λ picked from the ``split`` rows of a sweep.

    ``"acc"``: the most accurate λ. ``"fair_guarded"``: the λ of least DPD + EOD among those
    with accuracy ≥ ``reference_accuracy`` − ``tolerance`` (the FFT model's validation
    accuracy); when no λ meets the guard it warns and returns the most accurate one.
    ``"code_rule"``: the official script's rule (least DPD and least EOD; if they differ, the
    one with larger 2/(DPD+EOD)), applied here to validation rows, not test rows.
    """
    V.check_choice(rule, "rule", RULES)
    if not isinstance(sweep, Sequence) or not sweep:
        raise ValueError("sweep is empty: pass the rows lambda_sweep returned")
    if any(split not in row or "lam" not in row for row in sweep):
        raise ValueError(f"sweep rows must carry 'lam' and the split {split!r}")
    lams = np.array([row["lam"] for row in sweep], dtype=float)
    acc = np.array([row[split]["accuracy"] for row in sweep])
    dpd = np.array([row[split]["dpd"] for row in sweep])
    eod = np.array([row[split]["eod"] for row in sweep])
    if rule == "acc":
        return float(lams[int(np.argmax(acc))])
    if rule == "code_rule":
        i, j = int(np.nanargmin(dpd)), int(np.nanargmin(eod))
        if i == j:
            return float(lams[i])
        score = 2.0 / np.maximum(dpd + eod, 1e-12)
        return float(lams[i] if score[i] >= score[j] else lams[j])
    if reference_accuracy is None:
        raise ValueError("reference_accuracy is required by the fair_guarded rule")
    reference_accuracy = V.check_probability(reference_accuracy, "reference_accuracy")
    tolerance = V.check_scalar(tolerance, "tolerance", low=0.0, high=1.0)
    ok = acc >= reference_accuracy - tolerance
    if not ok.any():
        warnings.warn(
            "no λ meets the accuracy guard of fair_guarded; returning the most accurate λ",
            stacklevel=2,
        )
        return float(lams[int(np.argmax(acc))])
    unfair = np.where(ok, dpd + eod, np.inf)
    return float(lams[int(np.argmin(unfair))])


def inject_subgroup(model, vector: TaskVector, lam: float):
    """θ_new = θ_model + λ τ_g: add one subgroup's task vector to a fine-tuned model."""
    if not isinstance(vector, TaskVector):
        raise TypeError(f"vector must be a TaskVector, got {type(vector).__name__}")
    lam = V.check_scalar(lam, "lam")
    return vector.apply_to(model, scale=lam)
