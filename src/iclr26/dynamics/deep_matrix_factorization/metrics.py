"""Spectral summaries of a completed matrix."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def _check_matrices(W, name: str = "W") -> np.ndarray:
    """A finite matrix (or a batch of them) with at least two singular values."""
    W = V.check_array(W, name, ndim=(2, 3, 4), dtype=np.float64)
    if min(W.shape[-2:]) < 1:
        raise ValueError(f"{name} is empty (shape {W.shape})")
    return W


def singular_value_ratio(W: np.ndarray, floor: float = 1e-300) -> np.ndarray:
    """sigma_2 / sigma_1 (batched over leading axes); values below ~1e-12 are numerical noise."""
    W = _check_matrices(W)
    if min(W.shape[-2:]) < 2:
        raise ValueError(f"W must have at least two singular values, got shape {W.shape}")
    floor = V.check_scalar(floor, "floor", low=0.0, low_open=True)
    s = np.linalg.svd(W, compute_uv=False)
    return s[..., 1] / np.maximum(s[..., 0], floor)


def effective_rank(W: np.ndarray) -> np.ndarray:
    """exp of the entropy of the normalised singular values (Roy and Vetterli, 2007)."""
    s = np.linalg.svd(_check_matrices(W), compute_uv=False)
    p = s / np.maximum(s.sum(axis=-1, keepdims=True), 1e-300)
    logp = np.log(np.where(p > 0, p, 1.0))
    return np.exp(-(p * logp).sum(axis=-1))


def nuclear_over_frobenius(W: np.ndarray) -> np.ndarray:
    """||W||_* / ||W||_F (between 1 and sqrt(rank))."""
    s = np.linalg.svd(_check_matrices(W), compute_uv=False)
    return s.sum(axis=-1) / np.maximum(np.sqrt((s**2).sum(axis=-1)), 1e-300)


def relative_error(W: np.ndarray, M: np.ndarray, test_mask: np.ndarray) -> np.ndarray:
    """||P_test(W - M)||_F / ||P_test(M)||_F (batched over W's leading axis)."""
    W = _check_matrices(W)
    M = V.check_array(M, "M", ndim=(2, 3), dtype=np.float64)
    test_mask = V.check_array(test_mask, "test_mask", ndim=(2, 3), dtype=None)
    if M.shape[-2:] != W.shape[-2:] or test_mask.shape[-2:] != W.shape[-2:]:
        raise ValueError(
            f"M {M.shape} and test_mask {test_mask.shape} must match W's matrices {W.shape[-2:]}"
        )
    if not np.asarray(test_mask, dtype=bool).any():
        raise ValueError("test_mask has no held-out entries")
    num = np.sqrt((((W - M) * test_mask) ** 2).sum(axis=(-2, -1)))
    return num / max(float(np.sqrt(((M * test_mask) ** 2).sum())), 1e-300)
