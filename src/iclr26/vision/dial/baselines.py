"""Zero-shot debiasing baselines DIAL is compared with, on the same embeddings.

- :class:`ZeroShot`: plain CLIP zero-shot classification.
- :class:`OrthProj`: Chuang et al. (2023), "Debiasing vision-language models via biased
  prompts": the class text embeddings are projected onto the orthogonal complement of the span
  of the spurious prompts' embeddings (text side; the same spurious names DIAL gets).
- :class:`RoboShotLite`: RoboShot (Adila et al., 2024) without its LLM: the differences of
  hand-written pairs of spurious descriptors are projected out of every image embedding.
- :class:`PCARemoval`: label-free, the "is the SAE needed?" control: the top principal
  components of the affected points replace the SAE atoms; same filter, same (k, alpha) rule.
- :class:`GroupOracleProbe`: a group-balanced logistic-regression probe trained with group
  labels: an upper bound, reported only.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from iclr26 import validation as V
from iclr26.vision.dial.dial import _FilterRemoveBase
from iclr26.vision.dial.filtering import _unit, check_embeddings, zero_shot_probs
from iclr26.vision.dial.removal import subspace_basis


def _check_classes(T, d: int) -> np.ndarray:
    T = check_embeddings(T, "class_text_emb", d=d)
    if len(T) < 2:
        raise ValueError(f"class_text_emb must hold at least 2 classes, got {len(T)}")
    return T


class _ZeroShotPredict:
    def _check_fitted(self):
        if not hasattr(self, "class_text_emb_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")

    def transform(self, X) -> np.ndarray:
        self._check_fitted()
        return _unit(check_embeddings(X, "X", d=self.n_features_in_))

    def predict_proba(self, X) -> np.ndarray:
        return zero_shot_probs(self.transform(X), self.class_text_emb_, self.temperature)

    def predict(self, X) -> np.ndarray:
        return self.predict_proba(X).argmax(1)


class ZeroShot(_ZeroShotPredict, BaseEstimator):
    """``argmax_c cos(e, t_c)``; ``fit(X, class_text_emb)`` only stores the prompts."""

    def __init__(self, temperature: float = 0.01):
        self.temperature = temperature

    def fit(self, X, class_text_emb):
        V.check_scalar(self.temperature, "temperature", low=0.0, low_open=True)
        E = check_embeddings(X, "X")
        self.class_text_emb_ = _check_classes(class_text_emb, E.shape[1])
        self.n_features_in_ = E.shape[1]
        return self


class OrthProj(_ZeroShotPredict, BaseEstimator):
    """Class prompts projected with ``P = I - A (A^T A)^+ A^T``, ``A`` the spurious prompts'
    embeddings as columns; images are left unchanged."""

    def __init__(self, temperature: float = 0.01):
        self.temperature = temperature

    def fit(self, X, class_text_emb, spurious_text_emb):
        V.check_scalar(self.temperature, "temperature", low=0.0, low_open=True)
        E = check_embeddings(X, "X")
        T = _check_classes(class_text_emb, E.shape[1])
        S = check_embeddings(spurious_text_emb, "spurious_text_emb", d=E.shape[1])
        A = S.T
        P = np.eye(E.shape[1]) - A @ np.linalg.pinv(A.T @ A) @ A.T
        projected = T @ P
        if np.any(np.linalg.norm(projected, axis=1) < 1e-8):
            raise ValueError("spurious_text_emb spans a class prompt; nothing would be left")
        self.projection_ = P
        self.class_text_emb_ = _unit(projected)
        self.n_features_in_ = E.shape[1]
        return self


class RoboShotLite(_ZeroShotPredict, BaseEstimator):
    """Harmful-insight removal of RoboShot with hand-written insights: for every pair of
    descriptor embeddings ``(a_i, b_i)`` the direction ``a_i - b_i`` is projected out of each
    image embedding (Gram-Schmidt over the insights, then re-normalisation)."""

    def __init__(self, temperature: float = 0.01):
        self.temperature = temperature

    def fit(self, X, class_text_emb, insight_pairs_emb):
        V.check_scalar(self.temperature, "temperature", low=0.0, low_open=True)
        E = check_embeddings(X, "X")
        self.class_text_emb_ = _check_classes(class_text_emb, E.shape[1])
        pairs = V.check_array(insight_pairs_emb, "insight_pairs_emb", ndim=3, dtype=np.float64,
                              shape=(None, 2, E.shape[1]))  # fmt: skip
        diffs = pairs[:, 0] - pairs[:, 1]
        if np.all(np.linalg.norm(diffs, axis=1) < 1e-9):
            raise ValueError("insight_pairs_emb: every pair is identical; nothing to remove")
        self.basis_ = subspace_basis(diffs[np.linalg.norm(diffs, axis=1) >= 1e-9])
        self.n_features_in_ = E.shape[1]
        return self

    def transform(self, X) -> np.ndarray:
        E = super().transform(X)
        return _unit(E - (E @ self.basis_) @ self.basis_.T)


class PCARemoval(_FilterRemoveBase):
    """Label-free control: the same filter and (k, alpha) rule as DIAL, with the top
    principal components of the affected points (centred) as the candidate directions."""

    def __init__(
        self,
        filter: str = "gmm",
        quantile: float = 0.2,
        k_grid=range(1, 9),
        alpha_grid=(0.25, 0.5, 0.75, 1.0),
        apply_to: str = "affected",
        temperature: float = 0.01,
        min_agreement: float = 0.98,
        n_directions: int | None = None,
        alpha: float | None = None,
        seed: int = 0,
    ):
        self.filter = filter
        self.quantile = quantile
        self.k_grid = k_grid
        self.alpha_grid = alpha_grid
        self.apply_to = apply_to
        self.temperature = temperature
        self.min_agreement = min_agreement
        self.n_directions = n_directions
        self.alpha = alpha
        self.seed = seed

    def fit(self, X, class_text_emb):
        self._check_common()
        E = _unit(check_embeddings(X, "X", min_rows=4))
        T = _check_classes(class_text_emb, E.shape[1])
        n_max = self.n_directions if self.n_directions is not None else max(self.k_grid_)
        if n_max > E.shape[1]:
            raise ValueError(f"k_grid asks for up to {n_max} principal components, but the "
                             f"embeddings have only {E.shape[1]} dimensions")  # fmt: skip
        self.n_features_in_ = E.shape[1]
        self.class_text_emb_ = T
        affected = self._filter(E, T)
        A = E[affected]
        if len(A) < 2:
            self.directions_ = np.zeros((0, E.shape[1]))
            self.k_, self.alpha_, self.search_, self.basis_ = 0, 0.0, [], None
        else:
            _, _, Vt = np.linalg.svd(A - A.mean(0), full_matrices=False)
            self._choose(E, T, affected, Vt[: min(n_max, len(Vt))])
        self._finish_report(E, affected, {})
        return self


class GroupOracleProbe(ClassifierMixin, BaseEstimator):
    """Logistic regression on standardised embeddings with every (class, group) cell
    weighted equally: uses group labels, so it is an upper bound, not a competitor."""

    def __init__(self, C: float = 1.0, max_iter: int = 2000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y, groups):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        V.check_scalar(self.C, "C", low=0.0, low_open=True)
        V.check_int(self.max_iter, "max_iter", low=1)
        E = check_embeddings(X, "X", min_rows=2)
        y = V.check_array(y, "y", ndim=1, dtype=np.int64, n_rows=len(E))
        groups = V.check_array(groups, "groups", ndim=1, dtype=np.int64, n_rows=len(E))
        if len(np.unique(y)) < 2:
            raise ValueError("y must contain at least two classes")
        _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
        weight = (len(E) / (len(counts) * counts))[inverse]
        self.model_ = make_pipeline(StandardScaler(), LogisticRegression(C=self.C,
                                    max_iter=self.max_iter))  # fmt: skip
        self.model_.fit(E, y, logisticregression__sample_weight=weight)
        self.classes_ = self.model_.classes_
        self.n_features_in_ = E.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise RuntimeError("GroupOracleProbe is not fitted; call fit first")
        return self.model_.predict(check_embeddings(X, "X", d=self.n_features_in_))


def default_insights(values=("water", "land")) -> list[tuple[str, str]]:
    """Hand-written RoboShot-style harmful insights for a two-valued background attribute."""
    from iclr26.vision.dial.text import check_texts

    values = check_texts(values, "values")
    if len(values) != 2:
        raise ValueError(f"values must name exactly 2 attribute values, got {len(values)}")
    a, b = values
    return [
        (f"a photo of a {a} background", f"a photo of a {b} background"),
        (f"a {a} scene", f"a {b} scene"),
        (f"an image with {a} behind the object", f"an image with {b} behind the object"),
    ]
