"""Hierarchical sequence data: DNA evolved down a binary phylogeny (a genomics analogue)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np

from iclr26 import validation as V
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
    n = V.check_int(n, "n", low=1)
    n_leaves = V.check_int(n_leaves, "n_leaves", low=2)
    length = V.check_int(length, "length", low=1)
    mut_rate = V.check_probability(mut_rate, "mut_rate")
    noise = V.check_probability(noise, "noise")
    max_shift = V.check_int(max_shift, "max_shift", low=0)
    depth = int(np.log2(n_leaves))
    if 2**depth != n_leaves:
        raise ValueError(f"n_leaves must be a power of two, got {n_leaves}")
    class_depth = V.check_int(class_depth, "class_depth", low=1, high=depth)
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


def load_cifar10(
    root: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The user's CIFAR-10 (python-pickle batches ``data_batch_1..5`` and ``test_batch``) from
    ``root`` or the directory named by ``$ICLR26_CIFAR10``, as float32 images ``(N, 3, 32, 32)``
    scaled to [0, 1] and int64 labels: ``(x_train, y_train, x_test, y_test)``. Nothing is
    downloaded; a missing directory or batch raises ``FileNotFoundError``."""
    root = root if root is not None else os.environ.get("ICLR26_CIFAR10")
    if not root:
        raise FileNotFoundError("set ICLR26_CIFAR10 to the directory of the CIFAR-10 batches")
    folder = Path(root)

    def read(name: str) -> tuple[np.ndarray, np.ndarray]:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"CIFAR-10 batch {name!r} not found in {folder}")
        with path.open("rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
            raise ValueError(f"{name}: expected (N, 3072) uint8 rows, got {data.shape}")
        images = data.reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
        return images, np.asarray(batch[b"labels"], dtype=np.int64)

    parts = [read(f"data_batch_{k}") for k in range(1, 6)]
    x_test, y_test = read("test_batch")
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])
    return x_train, y_train, x_test, y_test
