"""Zero-shot scores and the distributional filter (DIAL step 1).

``zero_shot_probs`` is CLIP's zero-shot rule, ``softmax_c(cos(e, t_c) / T)``; the margin of a
point is the gap between its top two class probabilities. Within each predicted class the
margins of the probably-affected points (minority-group candidates, whose spurious feature
argues for another class) form a separate low-confidence mode: a two-component 1-D Gaussian
mixture finds it, and when the two modes are not separated by one pooled standard deviation
the lowest ``quantile`` of the margins is taken instead (the fallback is recorded).
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def check_embeddings(value, name: str, d: int | None = None, min_rows: int = 1) -> np.ndarray:
    """A finite float64 matrix (n, d) with no all-zero row (a direction is needed)."""
    arr = V.check_array(value, name, ndim=2, dtype=np.float64, min_rows=min_rows)
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the embedding size), got {arr.shape[1]}")
    if np.any(np.linalg.norm(arr, axis=1) == 0):
        raise ValueError(f"{name} has an all-zero row; embeddings need a direction")
    return arr


def zero_shot_probs(img_emb, class_text_emb, temperature: float = 0.01) -> np.ndarray:
    """``p(c | x) = softmax_c(cos(e(x), t_c) / T)`` (n, n_classes)."""
    E = check_embeddings(img_emb, "img_emb")
    T = check_embeddings(class_text_emb, "class_text_emb", d=E.shape[1])
    if len(T) < 2:
        raise ValueError(f"class_text_emb must hold at least 2 classes, got {len(T)}")
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    logits = _unit(E) @ _unit(T).T / temperature
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(1, keepdims=True)


def margins(probs) -> tuple[np.ndarray, np.ndarray]:
    """``(predicted class, p_top - p_second)`` of a probability matrix (n, n_classes)."""
    P = V.check_array(probs, "probs", ndim=2, low=0.0, high=1.0, min_cols=2)
    order = np.argsort(-P, axis=1)
    rows = np.arange(len(P))
    return order[:, 0], P[rows, order[:, 0]] - P[rows, order[:, 1]]


class MarginFilter:
    """The per-predicted-class split of the margins into an affected (low) and an unaffected
    mode, fitted on a pool and reapplied to new points: a 2-component 1-D Gaussian mixture
    whose lower-mean component is the affected mode when the two means are at least one
    pooled standard deviation apart and the mixture beats one Gaussian on BIC; otherwise (or with ``method="quantile"``) the lowest
    ``quantile`` of the pool's margins. ``record_`` says which rule each class used."""

    def __init__(self, method: str = "gmm", quantile: float = 0.2, seed: int = 0):
        self.method = V.check_choice(method, "method", ("gmm", "quantile"))
        self.quantile = V.check_probability(quantile, "quantile", open_low=True, open_high=True)
        self.seed = V.check_int(seed, "seed", low=0)

    def _fit_class(self, m: np.ndarray):
        from sklearn.mixture import GaussianMixture

        if self.method == "gmm" and len(m) >= 4 and np.ptp(m) > 1e-9:
            gmm = GaussianMixture(2, random_state=self.seed, reg_covar=1e-6).fit(m[:, None])
            means = gmm.means_.ravel()
            sd = np.sqrt(gmm.covariances_.reshape(2))
            pooled = np.sqrt(0.5 * (sd[0] ** 2 + sd[1] ** 2))
            low = int(np.argmin(means))
            split = gmm.predict(m[:, None]) == low
            one = GaussianMixture(1, reg_covar=1e-6).fit(m[:, None])
            bimodal = gmm.bic(m[:, None]) < one.bic(m[:, None])
            if bimodal and abs(means[0] - means[1]) >= pooled and 0 < split.sum() < len(m):
                return ("gmm", gmm, low)
        return ("quantile", float(np.quantile(m, self.quantile)), None)

    @staticmethod
    def _apply(rule, m: np.ndarray) -> np.ndarray:
        kind, model, low = rule
        if kind == "gmm":
            return model.predict(m[:, None]) == low
        return m <= model

    def fit(self, probs) -> MarginFilter:
        pred, m = margins(probs)
        self.rules_, self.record_ = {}, {}
        for c in np.unique(pred):
            sel = m[pred == c]
            rule = self._fit_class(sel)
            self.rules_[int(c)] = rule
            share = float(self._apply(rule, sel).mean())
            self.record_[int(c)] = {"rule": rule[0], "n": int(len(sel)), "affected_share": share}
        return self

    def predict(self, probs) -> np.ndarray:
        """The boolean mask of affected points (a class not predicted in the pool: none)."""
        if not hasattr(self, "rules_"):
            raise RuntimeError("MarginFilter is not fitted; call fit(probs) first")
        pred, m = margins(probs)
        mask = np.zeros(len(m), dtype=bool)
        for c, rule in self.rules_.items():
            sel = pred == c
            if sel.any():
                mask[sel] = self._apply(rule, m[sel])
        return mask


def affected_set(
    probs, method: str = "gmm", quantile: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, dict]:
    """The boolean mask of the probably-affected points of a pool and the record of how each
    predicted class was split (``"gmm"``, or the ``"quantile"`` fallback, and the share).

    Only model scores enter: no label of any kind."""
    filt = MarginFilter(method, quantile, seed).fit(probs)
    return filt.predict(probs), filt.record_
