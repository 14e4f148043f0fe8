"""The scikit-learn-style facade over texts and the empirical Lipschitz estimate used by the
bound diagnostic."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

from iclr26 import validation as V
from iclr26.llm.task_arithmetic_fairness.editing import evaluate, lambda_sweep, select_lambda
from iclr26.llm.task_arithmetic_fairness.fairness import check_groups
from iclr26.llm.task_arithmetic_fairness.model import (
    Encoded,
    encode,
    finetune_full,
    predict_proba,
    sequence_classifier,
    subgroup_task_vectors,
)
from iclr26.llm.task_arithmetic_fairness.task_vector import (
    TaskVector,
    combine_coefficients,
    merge,
)
from iclr26.sklearn_contract import expected_failed_checks

__all__ = ["TaskArithmeticFairClassifier", "estimate_lipschitz", "SKLEARN_EXPECTED_FAILED_CHECKS"]

SKLEARN_EXPECTED_FAILED_CHECKS = expected_failed_checks(
    "fit takes texts and their subgroup labels (fit(texts, y, groups)), not a numeric matrix X"
)


def _vector_list(vectors) -> list[TaskVector]:
    items = list(vectors.values()) if isinstance(vectors, Mapping) else list(vectors)
    if not items:
        raise ValueError("vectors is empty: pass at least one TaskVector")
    for i, tv in enumerate(items):
        if not isinstance(tv, TaskVector):
            raise TypeError(f"vectors[{i}] must be a TaskVector, got {type(tv).__name__}")
    return items


def estimate_lipschitz(
    model,
    vectors,
    enc: Encoded,
    *,
    n_directions: int = 8,
    radius: float = 0.05,
    seed: int = 0,
) -> dict:
    """An empirical lower estimate of L, the Lipschitz constant of the prediction score
    P(y = 1 | x; θ) in θ near ``model``: the largest ``max_x |s(θ + Δ) − s(θ)| / ‖Δ‖`` over
    ``n_directions`` random directions Δ in span{τ_g} (Gaussian coefficients), each scaled to
    ``‖Δ‖ = radius · mean_g ‖τ_g‖``. Only a diagnostic: a lower bound on the true L."""
    items = _vector_list(vectors)
    if not isinstance(enc, Encoded):
        raise TypeError(f"enc must be an Encoded batch (see encode), got {type(enc).__name__}")
    n_directions = V.check_int(n_directions, "n_directions", low=1)
    radius = V.check_scalar(radius, "radius", low=0.0, low_open=True)
    seed = V.check_int(seed, "seed", low=0)
    mean_norm = float(np.mean([tv.norm() for tv in items]))
    if not mean_norm > 0:
        raise ValueError("vectors: every task vector is zero; the span has no direction")
    rng = np.random.default_rng(seed)
    s0 = predict_proba(model, enc)
    ratios = []
    for _ in range(n_directions):
        a = rng.normal(size=len(items))
        direction = sum(float(c) * tv for c, tv in zip(a, items))
        norm = direction.norm()
        if not norm > 0:
            continue
        scale = radius * mean_norm / norm
        moved = direction.apply_to(model, scale=scale)
        s1 = predict_proba(moved, enc)
        ratios.append(float(np.max(np.abs(s1 - s0)) / (radius * mean_norm)))
    return {
        "L": float(max(ratios)),
        "ratios": ratios,
        "step_norm": radius * mean_norm,
        "mean_tau_norm": mean_norm,
    }


class TaskArithmeticFairClassifier(ClassifierMixin, BaseEstimator):
    """Binary text classifier built by task arithmetic over subgroup task vectors.

    ``fit(texts, y, groups, val=(texts, y, groups))`` puts a classification head on the causal
    LM ``base`` (a tiny-LM size name, a model id, or a ``(causal_lm, tokenizer)`` pair; or
    ``"minilm"``: the pretrained MiniLM encoder of :func:`encoder_classifier`), fully
    fine-tunes one copy per subgroup to get τ_g, and merges θ₀ + Σ_g λ_g τ_g. With
    ``lam="auto"`` λ is chosen on the validation set by ``selection`` along ``grid``
    (``"fair_guarded"`` also fine-tunes the full model once to get its reference accuracy);
    a number fixes λ. Attributes: ``lambda_``, ``task_vectors_``, ``sweep_``, ``model_``,
    ``classes_``. ``predict`` / ``predict_proba`` / ``score`` take a list of texts.

    X is a list of texts with a separate ``groups`` argument, so ``check_estimator``'s
    array-based checks do not apply (see ``SKLEARN_EXPECTED_FAILED_CHECKS``)."""

    def __init__(
        self,
        base="quick",
        lam="auto",
        selection: str = "fair_guarded",
        convention: str = "sum",
        grid=None,
        epochs: int = 2,
        lr: float = 3e-4,
        batch_size: int = 32,
        max_length: int = 48,
        seed: int = 0,
    ):
        self.base = base
        self.lam = lam
        self.selection = selection
        self.convention = convention
        self.grid = grid
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_length = max_length
        self.seed = seed

    @staticmethod
    def _texts(texts, name: str) -> list[str]:
        if isinstance(texts, str):
            raise TypeError(f"{name}: expected a list of texts, got one string")
        texts = list(texts)
        if not texts:
            raise ValueError(f"{name}: empty; need at least one text")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
        return texts

    def _labels(self, y, n: int, name: str) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != n:
            raise ValueError(f"{name}: expected {n} labels in a 1-D array, got shape {y.shape}")
        unknown = set(np.unique(y).tolist()) - set(self.classes_.tolist())
        if unknown:
            raise ValueError(f"{name}: labels {sorted(unknown)} were not seen in fit's y")
        return np.searchsorted(self.classes_, y)

    def fit(self, texts, y, groups, val=None):
        texts = self._texts(texts, "texts")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(texts):
            raise ValueError(f"y: expected {len(texts)} labels in a 1-D array, got {y.shape}")
        if y.dtype.kind in "fc":
            V.check_array(y, "y", ndim=1)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(f"y: needs exactly two classes, got {len(self.classes_)}")
        codes = np.searchsorted(self.classes_, y)
        check_groups(groups, len(texts))
        V.check_choice(self.convention, "convention", ("sum", "mean"))
        epochs = V.check_int(self.epochs, "epochs", low=1)
        lr = V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        batch_size = V.check_int(self.batch_size, "batch_size", low=1)
        max_length = V.check_int(self.max_length, "max_length", low=2)
        seed = V.check_int(self.seed, "seed", low=0)
        auto = isinstance(self.lam, str)
        if auto:
            V.check_choice(self.lam, "lam", ("auto",))
            V.check_choice(self.selection, "selection", ("fair_guarded", "acc", "code_rule"))
            if val is None:
                raise ValueError("val: lam='auto' needs a validation set (texts, y, groups)")
            if not isinstance(val, (tuple, list)) or len(val) != 3:
                raise ValueError("val: expected a (texts, y, groups) triple")
        else:
            V.check_scalar(self.lam, "lam")
        grid = (
            tuple(round(0.1 * i, 1) for i in range(11))
            if self.grid is None
            else tuple(V.check_array(self.grid, "grid", ndim=1, dtype=np.float64))
        )
        base, tok = sequence_classifier(self.base, seed=seed)
        enc = encode(tok, texts, max_length=max_length)
        train = dict(epochs=epochs, lr=lr, batch_size=batch_size, seed=seed)
        with torch.random.fork_rng():
            self.task_vectors_ = subgroup_task_vectors(base, enc, codes, groups, **train)
        items = list(self.task_vectors_.values())
        self.sweep_ = None
        if auto:
            vt = self._texts(val[0], "val texts")
            vy = self._labels(val[1], len(vt), "val y")
            check_groups(val[2], len(vt), "val groups")
            venc = encode(tok, vt, max_length=max_length)
            sets = {"val": (venc, vy, val[2])}
            self.sweep_ = lambda_sweep(base, self.task_vectors_, sets, grid, self.convention)
            ref = None
            if self.selection == "fair_guarded":
                fft = finetune_full(base, enc, codes, **train)
                ref = evaluate(fft, venc, vy, val[2])["accuracy"]
            self.lambda_ = select_lambda(self.sweep_, self.selection, reference_accuracy=ref)
        else:
            self.lambda_ = float(self.lam)
        coeffs = combine_coefficients(self.lambda_, len(items), self.convention)
        self.model_ = merge(base, items, coeffs)
        self.tokenizer_ = tok
        return self

    def predict_proba(self, texts) -> np.ndarray:
        if not hasattr(self, "model_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("TaskArithmeticFairClassifier: call fit before predict")
        texts = self._texts(texts, "texts")
        p1 = predict_proba(self.model_, encode(self.tokenizer_, texts, max_length=self.max_length))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, texts) -> np.ndarray:
        return self.classes_[(self.predict_proba(texts)[:, 1] >= 0.5).astype(int)]
