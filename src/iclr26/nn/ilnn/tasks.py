"""Hierarchical sequence data: DNA evolved down a binary phylogeny (a genomics analogue)."""

from __future__ import annotations

import numpy as np

from iclr26.data import as_rng


def _mutate(seq: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Substitute each position with probability ``rate`` by a different base."""
    hit = rng.random(seq.shape) < rate
    return np.where(hit, (seq + rng.integers(1, 4, seq.shape)) % 4, seq)


def phylo_dna(
    n: int,
    n_leaves: int = 64,
    length: int = 128,
    mut_rate: float = 0.08,
    class_depth: int = 3,
    noise: float = 0.05,
    max_shift: int = 8,
    seed: int | np.random.Generator | None = 0,
    tree_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """One-hot sequences ``(n, length, 4)`` and clade labels ``(n,)``.

    A random root string evolves down a full binary tree with ``n_leaves`` leaves (independent
    substitutions on every branch); the class of a leaf is its ancestor at ``class_depth``
    (``2**class_depth`` classes). Each sample is a random leaf with ``noise`` fresh
    substitutions and a random circular shift of up to ``max_shift``. The tree depends on
    ``tree_seed`` only, so train and test sets share it.
    """
    depth = int(np.log2(n_leaves))
    if 2**depth != n_leaves or not 1 <= class_depth <= depth:
        raise ValueError("n_leaves must be a power of two and 1 <= class_depth <= log2(n_leaves)")
    tree_rng = np.random.default_rng(tree_seed)
    level = tree_rng.integers(0, 4, (1, length))
    for _ in range(depth):
        level = _mutate(np.repeat(level, 2, axis=0), mut_rate, tree_rng)
    rng = as_rng(seed)
    leaf = rng.integers(0, n_leaves, n)
    seqs = _mutate(level[leaf], noise, rng)
    shifts = rng.integers(0, max_shift + 1, n)
    idx = (np.arange(length)[None, :] - shifts[:, None]) % length
    seqs = np.take_along_axis(seqs, idx, axis=1)
    labels = leaf // (n_leaves // 2**class_depth)
    return np.eye(4, dtype=np.float32)[seqs], labels.astype(np.int64)
