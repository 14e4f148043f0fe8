"""Spectral summaries of a completed matrix."""

from __future__ import annotations

import numpy as np


def singular_value_ratio(W: np.ndarray, floor: float = 1e-300) -> np.ndarray:
    """sigma_2 / sigma_1 (batched over leading axes); values below ~1e-12 are numerical noise."""
    s = np.linalg.svd(np.asarray(W, dtype=np.float64), compute_uv=False)
    return s[..., 1] / np.maximum(s[..., 0], floor)


def effective_rank(W: np.ndarray) -> np.ndarray:
    """exp of the entropy of the normalised singular values (Roy and Vetterli, 2007)."""
    s = np.linalg.svd(np.asarray(W, dtype=np.float64), compute_uv=False)
    p = s / np.maximum(s.sum(axis=-1, keepdims=True), 1e-300)
    logp = np.log(np.where(p > 0, p, 1.0))
    return np.exp(-(p * logp).sum(axis=-1))


def nuclear_over_frobenius(W: np.ndarray) -> np.ndarray:
    s = np.linalg.svd(np.asarray(W, dtype=np.float64), compute_uv=False)
    return s.sum(axis=-1) / np.maximum(np.sqrt((s**2).sum(axis=-1)), 1e-300)


def relative_error(W: np.ndarray, M: np.ndarray, test_mask: np.ndarray) -> np.ndarray:
    """||P_test(W - M)||_F / ||P_test(M)||_F (batched over W's leading axis)."""
    num = np.sqrt((((W - M) * test_mask) ** 2).sum(axis=(-2, -1)))
    return num / max(float(np.sqrt(((M * test_mask) ** 2).sum())), 1e-300)
