"""Pools, labels and label oracles for the active-learning experiments (all synthetic)."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.classic.dt_active_learning.hypotheses import GridTreeClass, StumpClass


class LabelOracle:
    """Label-query callback over a fixed pool that counts distinct and repeated queries."""

    def __init__(self, labels: np.ndarray):
        labels = V.check_array(labels, "labels", ndim=1)
        if not np.isin(labels, (0, 1)).all():
            raise ValueError("labels must be 0/1")
        self.labels = labels
        self.queried = np.zeros(self.labels.shape[0], dtype=bool)
        self.n_queries = 0

    def __call__(self, idx) -> np.ndarray:
        idx = V.check_array(np.ravel(idx), "idx", ndim=1, min_rows=0, dtype=None)
        if idx.size and idx.dtype.kind not in "iu":
            raise TypeError(f"idx must hold integer pool indices, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.labels.shape[0]):
            raise ValueError(f"idx: query index outside the pool 0..{self.labels.shape[0] - 1}")
        idx = idx.astype(int)
        self.queried[idx] = True
        self.n_queries += idx.size
        return self.labels[idx]

    @property
    def n_labels(self) -> int:
        return int(self.queried.sum())


def random_grid_tree(w: int, rng: np.random.Generator) -> tuple:
    """A random depth-2 tree (f, a, c_L, c_R) whose two children both split (other feature)."""
    w = V.check_int(w, "w", low=2)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    f = int(rng.integers(2))
    a = int(rng.integers(w - 1))
    codes = [(1, 2), (2, 1)]
    children = []
    for _ in range(2):
        b = int(rng.integers(w - 1))
        lo, hi = codes[int(rng.integers(2))]
        children.append(2 + 4 * b + 2 * (lo - 1) + (hi - 1))
    return (f, a, children[0], children[1])


def make_grid_task(w: int = 32, dim: int = 2, depth: int = 2, n_flips: int = 0, random_state=None):
    """Grid pool {0..w-1}^2, labels of a random depth-2 tree with ``n_flips`` labels flipped.

    Returns (X (w*w, 2) int, y (w*w,), h_star index).
    """
    w = V.check_int(w, "w", low=2)
    if V.check_int(dim, "dim") != 2 or V.check_int(depth, "depth") != 2:
        raise ValueError("dim and depth: make_grid_task builds 2-D depth-2 tasks")
    n_flips = V.check_int(n_flips, "n_flips", low=0, high=w * w)
    rng = np.random.default_rng(random_state)
    cls = GridTreeClass(w)
    h_star = random_grid_tree(w, rng)
    y = cls.predict_cells(h_star).ravel().copy()
    flip = rng.choice(w * w, size=n_flips, replace=False)
    y[flip] = 1 - y[flip]
    X = np.stack(np.meshgrid(np.arange(w), np.arange(w), indexing="ij"), -1).reshape(-1, 2)
    return X, y, h_star


def make_stump_task(n: int, n_flips: int = 0, noise: float = 0.0, random_state=None):
    """1-D pool 0..n-1 labelled by a stump at a random position, then corrupted by ``n_flips``
    flipped labels and/or i.i.d. flips with probability ``noise``. Returns (X (n, 1), y, h_star)."""
    n = V.check_int(n, "n", low=2)
    n_flips = V.check_int(n_flips, "n_flips", low=0, high=n)
    noise = V.check_scalar(noise, "noise", low=0.0, high=0.5, high_open=True)
    rng = np.random.default_rng(random_state)
    a = int(rng.integers(n // 8, n - n // 8))
    h_star = (0, a)
    y = StumpClass(n).predict_cells(h_star).copy()
    if n_flips:
        flip = rng.choice(n, size=n_flips, replace=False)
        y[flip] = 1 - y[flip]
    if noise > 0:
        y = np.where(rng.random(n) < noise, 1 - y, y).astype(np.int8)
    return np.arange(n)[:, None], y, h_star


def line_pool_class(n: int, allow_feature_reuse: bool = False) -> GridTreeClass:
    """Depth-2 trees over the anti-diagonal pool {(i, n-1-i)}: an n x n grid of candidate
    thresholds with one pool point per diagonal cell."""
    n = V.check_int(n, "n", low=2)
    weights = np.fliplr(np.eye(n))
    return GridTreeClass(n, allow_feature_reuse=allow_feature_reuse, weights=weights)


def optimal_error(cls, labels: np.ndarray) -> tuple[float, tuple]:
    """Exact ERM over the whole pool: (OPT as a fraction of the pool, its index)."""
    V.check_module_attrs(cls, "cls", ("cell_shape", "weights", "errors", "argmin", "full_mask"))
    labels = V.check_array(labels, "labels", dtype=None)
    if labels.size != int(np.prod(cls.cell_shape)):
        raise ValueError(
            f"labels must have one label per cell ({int(np.prod(cls.cell_shape))}), "
            f"got {labels.size}"
        )
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0/1")
    labels = labels.reshape(cls.cell_shape)
    table = cls.errors(cls.weights * (labels == 0), cls.weights * (labels == 1))
    idx = cls.argmin(table, cls.full_mask())
    return float(table[idx]) / float(cls.weights.sum()), idx
