"""Baselines: homology transfer (the "MSA-like" template predictor: nearest training sequence by
identity, copy its structure or label) and propensity-only design (argmax secondary-structure
propensity given the true secondary structure)."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.generative.flexprotein.data import PROPENSITY, ProteinSet, sequence_identity


class HomologyBaseline:
    """Template transfer from the most identical training chain (equal-length Hamming identity;
    ties go to the first). ``fit(train, labels=None)``, then ``predict_structure(tokens)``
    (Å, ``(B, N, 3)``), ``predict_label(tokens)`` and ``identity_`` of the last query."""

    def fit(self, train: ProteinSet, labels=None) -> HomologyBaseline:
        if not isinstance(train, ProteinSet):
            raise TypeError(f"train must be a ProteinSet, got {type(train).__name__}")
        if len(train) == 0:
            raise ValueError("train is empty")
        self.tokens_ = V.check_array(train.tokens, "train.tokens", ndim=2, dtype=None)
        self.coords_ = V.check_array(train.coords, "train.coords", ndim=3, dtype=np.float64)
        self.labels_ = None
        if labels is not None:
            self.labels_ = V.check_array(labels, "labels", ndim=1, n_rows=len(train), dtype=None)
        return self

    def _nearest(self, tokens) -> np.ndarray:
        if not hasattr(self, "tokens_"):
            raise RuntimeError("HomologyBaseline is not fitted; call fit first")
        q = V.check_array(tokens, "tokens", ndim=2, dtype=None)
        if q.shape[1] != self.tokens_.shape[1]:
            raise ValueError(f"tokens must have length {self.tokens_.shape[1]}, got {q.shape[1]}")
        ident = sequence_identity(q, self.tokens_)
        self.identity_ = ident.max(1)
        return ident.argmax(1)

    def predict_structure(self, tokens) -> np.ndarray:
        idx = self._nearest(tokens)
        return self.coords_[idx]

    def predict_label(self, tokens) -> np.ndarray:
        idx = self._nearest(tokens)
        if self.labels_ is None:
            raise RuntimeError("labels were not given to fit")
        idx = self._nearest(tokens)
        return self.labels_[idx]


def propensity_design(ss) -> np.ndarray:
    """The most likely residue of each position's secondary structure ``(B, N)`` -> tokens."""
    s = V.check_array(ss, "ss", ndim=(1, 2), dtype=None)
    if s.dtype.kind not in "iu" or s.min() < 0 or s.max() > 2:
        raise ValueError("ss must be integers in {0 (helix), 1 (strand), 2 (loop)}")
    return PROPENSITY.argmax(1)[s]
