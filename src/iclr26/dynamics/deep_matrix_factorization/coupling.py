"""Coupled dynamics: how the residual of one observed entry drives another entry's motion.

Under gradient flow the end-to-end matrix moves as dW/dt = -sum_l A_l A_l^T R B_l^T B_l. A unit
residual at observed entry (k, c) therefore moves entry (i, j) at rate
K[(i, j), (k, c)] = sum_l (A_l A_l^T)_{ik} (B_l^T B_l)_{cj}. The dynamics is *decoupled* when K
vanishes between different entries (or, for block observations, between blocks). For depth 2 and
diagonal observations every term has an identity factor, so K is diagonal at every
initialisation; from depth 3 the middle factors mix all indices. (This index is our formalisation
of the paper's coupling condition; see the room README.)
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from iclr26 import validation as V

from .factorization import check_factors, prefix_suffix


def _check_mask(mask, shape=None) -> np.ndarray:
    mask = V.check_array(mask, "mask", ndim=2, dtype=None)
    if mask.dtype != bool:
        if mask.dtype.kind not in "biuf" or not np.isin(mask, (0, 1)).all():
            raise ValueError("mask must be boolean (or 0/1)")
        mask = mask.astype(bool)
    if shape is not None and mask.shape != tuple(shape):
        raise ValueError(f"mask has shape {mask.shape}, the product {tuple(shape)}")
    if not mask.any():
        raise ValueError("mask has no observed entries")
    return mask


def _check(factors, mask) -> tuple[list[np.ndarray], np.ndarray]:
    factors = check_factors(factors, batched=False)
    if len(factors) < 2:
        raise ValueError("factors must hold at least two matrices W_1 ... W_L")
    n, m = factors[-1].shape[0], factors[0].shape[1]
    return factors, _check_mask(mask, (n, m))


def coupling_matrix(factors, mask) -> tuple[np.ndarray, np.ndarray]:
    """K over the observed entries (in ``np.argwhere(mask)`` order) and those entries."""
    factors, mask = _check(factors, mask)
    A, B = prefix_suffix(factors)
    entries = np.argwhere(mask)
    rows, cols = entries[:, 0], entries[:, 1]
    K = np.zeros((len(entries), len(entries)))
    for l in range(len(factors)):
        left = np.eye(factors[-1].shape[0]) if A[l] is None else A[l] @ A[l].T
        right = np.eye(factors[0].shape[1]) if B[l] is None else B[l].T @ B[l]
        K += left[np.ix_(rows, rows)] * right[np.ix_(cols, cols)].T
    return K, entries


def observation_blocks(mask) -> np.ndarray:
    """Block label of every observed entry: connected components of the bipartite
    row-column graph of the mask (each entry of a diagonal mask is its own block)."""
    mask = _check_mask(mask)
    n, m = mask.shape
    r, c = np.nonzero(mask)
    graph = coo_matrix((np.ones(r.size), (r, n + c)), shape=(n + m, n + m))
    _, labels = connected_components(graph, directed=False)
    return labels[r]


def coupling_index(factors, mask, between_blocks: bool = True) -> float:
    """||K_off||_F / ||diag K||_F, where K_off keeps the pairs of observed entries in different
    observation blocks (``between_blocks=True``) or all pairs of different entries."""
    between_blocks = V.check_bool(between_blocks, "between_blocks")
    K, _ = coupling_matrix(factors, mask)
    if between_blocks:
        blocks = observation_blocks(mask)
        off = blocks[:, None] != blocks[None, :]
    else:
        off = ~np.eye(K.shape[0], dtype=bool)
    diag = np.sqrt((np.diag(K) ** 2).sum())
    return float(np.sqrt((K[off] ** 2).sum()) / max(diag, 1e-300))
