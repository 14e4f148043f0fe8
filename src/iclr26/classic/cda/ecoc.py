"""One-vs-one error-correcting output codes: K(K-1)/2 binary CDAs and their hinge decoding."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """Class-index pairs (i, j), i < j; in pair p, class j is the positive class."""
    n_classes = V.check_int(n_classes, "n_classes", low=2)
    return [(i, j) for i in range(n_classes - 1) for j in range(i + 1, n_classes)]


def coding_matrix(n_classes: int) -> np.ndarray:
    """M in {-1, 0, +1}^{K x P}: +1 for a pair's positive class, -1 for its negative class."""
    pairs = ovo_pairs(n_classes)
    n_classes = int(n_classes)
    M = np.zeros((n_classes, len(pairs)))
    for p, (i, j) in enumerate(pairs):
        M[i, p], M[j, p] = -1.0, 1.0
    return M


def hinge_loss(scores: np.ndarray, coding: np.ndarray) -> np.ndarray:
    """Class losses L_c = sum_p 1/2 max(0, -M_cp f_p(x)) for pair scores (n, P); shape (n, K)."""
    coding = V.check_array(coding, "coding", ndim=2, dtype=np.float64, low=-1.0, high=1.0)
    scores = V.check_array(
        scores, "scores", ndim=2, dtype=np.float64, shape=(None, coding.shape[1])
    )
    return 0.5 * np.maximum(0.0, -scores[:, None, :] * coding[None, :, :]).sum(axis=-1)
