"""Geometric discriminant analysis (GDA): a linear direction as CDB0 plus a correction.

Any linear discriminant direction can be written w = gamma (I + C) w_CDB0, with w_CDB0 the
unit centroid direction and C a correction matrix. For Fisher LDA, w_LDA is proportional to
S_w^-1 (mu_1 - mu_0), so C = s S_w^-1 - I with S_w the within-class scatter; choosing the scale
s = trace(S_w) / M makes C vanish exactly when the scatter is isotropic, which is when LDA
collapses onto CDB0.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def gda_lda_decomposition(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w_CDB0, C) with the Fisher-LDA direction proportional to (I + C) w_CDB0.

    ``y`` holds two classes; the larger label (sorted order) is the positive one, so
    w_CDB0 points from the centroid of the smaller label to that of the larger. A singular
    scatter is inverted by pseudo-inverse (the minimum-norm LDA direction).
    """
    X = V.check_array(X, "X", ndim=2, dtype=np.float64)
    y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=X.shape[0])
    classes = np.unique(y)
    if classes.size != 2:
        raise ValueError(f"gda_lda_decomposition needs exactly 2 classes, got {classes.size}")
    positive = y == classes[1]
    mu_pos, mu_neg = X[positive].mean(axis=0), X[~positive].mean(axis=0)
    difference = mu_pos - mu_neg
    norm = np.linalg.norm(difference)
    if norm == 0:
        raise ValueError("X: the two class centroids coincide; CDB0 is undefined")
    centred = np.where(positive[:, None], X - mu_pos, X - mu_neg)
    scatter = centred.T @ centred
    scale = np.trace(scatter) / X.shape[1]
    correction = scale * np.linalg.pinv(scatter, hermitian=True) - np.eye(X.shape[1])
    return difference / norm, correction
