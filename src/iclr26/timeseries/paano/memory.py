"""The memory bank of normal-patch embeddings and the patch score (Sec. 3.4).

The bank holds the embeddings h of the training patches, compressed by mini-batch k-means run
on the L2-normalised embeddings: for every cluster the real embedding nearest to the centroid
is kept (a coreset, never the centroids themselves). A query patch scores the mean distance to
its k nearest bank entries.

The scores of the training patches themselves, from which the detection threshold is taken,
must not come from a bank that holds those same patches (or their stride-1 neighbours, which
overlap them in all but a few steps): :meth:`MemoryBank.held_out_score` scores each training
patch against the bank entries whose patches do not overlap it, as a test patch is scored.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.neighbors import NearestNeighbors

from iclr26 import validation as V


def coreset_size(n: int, ratio: float, min_size: int = 500) -> int:
    """Bank size for n training patches: ``round(ratio * n)``, at least ``min(min_size, n - 1)``,
    at most n - 1; all n when n <= 1 or ``ratio >= 1``."""
    if ratio >= 1 or n <= 1:
        return n
    wanted = int(round(ratio * n))
    return max(min(min_size, n - 1), min(wanted, n - 1))


def kmeans_coreset(
    embeddings: np.ndarray, ratio: float, min_size: int = 500, random_state: int = 0
) -> np.ndarray:
    """Indices of the coreset: for each k-means cluster the member nearest to its centroid."""
    embeddings = V.check_array(embeddings, "embeddings", ndim=2)
    ratio = V.check_scalar(ratio, "ratio", low=0.0, high=1.0, low_open=True)
    min_size = V.check_int(min_size, "min_size", low=0)
    n = embeddings.shape[0]
    size = coreset_size(n, ratio, min_size)
    if size >= n:
        return np.arange(n)
    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    km = MiniBatchKMeans(
        n_clusters=size,
        init="k-means++",
        random_state=random_state,
        batch_size=max(8192, size),
        max_iter=50,
        n_init=1,
        reassignment_ratio=0.01,
    ).fit(unit)
    nearest = NearestNeighbors(n_neighbors=1).fit(unit)
    return nearest.kneighbors(km.cluster_centers_, return_distance=False)[:, 0]


class MemoryBank:
    """Normal-patch embeddings and their k-nearest-neighbour patch score."""

    def __init__(self, top_k: int = 3, metric: str = "euclidean"):
        self.top_k = V.check_int(top_k, "top_k", low=1)
        if not isinstance(metric, str):
            raise TypeError(f"metric must be a distance name (str), got {type(metric).__name__}")
        self.metric = metric

    def fit(
        self, embeddings: np.ndarray, ratio: float = 0.1, min_size: int = 500, random_state=0
    ) -> MemoryBank:
        emb = V.check_array(embeddings, "embeddings", ndim=2).astype(np.float32)
        self.indices_ = kmeans_coreset(emb, ratio, min_size, random_state)
        self.entries_ = emb[self.indices_]
        k = min(self.top_k, len(self.entries_))
        self._nn = NearestNeighbors(n_neighbors=k, metric=self.metric).fit(self.entries_)
        return self

    def _check_queries(self, embeddings) -> np.ndarray:
        if not hasattr(self, "entries_"):
            raise RuntimeError("MemoryBank is not fitted; call fit(embeddings) first")
        dim = self.entries_.shape[1]
        q = V.check_array(embeddings, "embeddings", ndim=2, shape=(None, dim))
        return q.astype(np.float32)

    def score(self, embeddings: np.ndarray) -> np.ndarray:
        """Mean distance of each query embedding to its k nearest bank entries."""
        dist, _ = self._nn.kneighbors(self._check_queries(embeddings))
        return dist.mean(axis=1)

    def held_out_score(self, embeddings: np.ndarray, exclusion: int) -> np.ndarray:
        """Scores of the embeddings the bank was fitted on, each against the bank entries
        whose source index differs from its own by at least ``exclusion`` (for stride-1
        patches of length w, ``exclusion=w`` leaves out every patch that overlaps it).

        A query with fewer than k such entries uses the ones it has; one with none (a
        training series shorter than about two patches) keeps its in-sample score."""
        q = self._check_queries(embeddings)
        exclusion = V.check_int(exclusion, "exclusion", low=1)
        n = q.shape[0]
        bank_pos = np.sort(self.indices_)
        pos = np.arange(n)
        lo = np.searchsorted(bank_pos, pos - exclusion, side="right")
        hi = np.searchsorted(bank_pos, pos + exclusion, side="left")
        excluded = hi - lo  # bank entries overlapping each query
        n_bank = len(self.entries_)
        k = min(self.top_k, n_bank)
        n_query = min(n_bank, k + int(excluded.max()))
        nn = NearestNeighbors(n_neighbors=n_query, metric=self.metric).fit(self.entries_)
        dist, idx = nn.kneighbors(q)
        src = self.indices_[idx]  # source position of every neighbour
        far = np.abs(src - pos[:, None]) >= exclusion
        # the first k far neighbours of each row (neighbours come sorted by distance)
        rank = np.cumsum(far, axis=1)
        use = far & (rank <= k)
        counts = use.sum(axis=1)
        held = (dist * use).sum(axis=1) / np.maximum(counts, 1)
        if np.any(counts == 0):
            warnings.warn(
                f"{int((counts == 0).sum())} training patch(es) have no non-overlapping bank "
                "entry (training series too short); their in-sample scores are used, which "
                "biases the threshold low",
                RuntimeWarning,
                stacklevel=2,
            )
            held = np.where(counts > 0, held, dist[:, :k].mean(axis=1))
        return held
