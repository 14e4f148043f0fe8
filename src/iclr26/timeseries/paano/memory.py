"""The memory bank of normal-patch embeddings and the patch score (Sec. 3.4).

The bank holds the embeddings h of the training patches, compressed by mini-batch k-means run
on the L2-normalised embeddings: for every cluster the real embedding nearest to the centroid
is kept (a coreset, never the centroids themselves). A query patch scores the mean distance to
its k nearest bank entries.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.neighbors import NearestNeighbors


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
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.top_k = top_k
        self.metric = metric

    def fit(
        self, embeddings: np.ndarray, ratio: float = 0.1, min_size: int = 500, random_state=0
    ) -> MemoryBank:
        emb = np.asarray(embeddings, dtype=np.float32)
        self.indices_ = kmeans_coreset(emb, ratio, min_size, random_state)
        self.entries_ = emb[self.indices_]
        k = min(self.top_k, len(self.entries_))
        self._nn = NearestNeighbors(n_neighbors=k, metric=self.metric).fit(self.entries_)
        return self

    def score(self, embeddings: np.ndarray) -> np.ndarray:
        """Mean distance of each query embedding to its k nearest bank entries."""
        dist, _ = self._nn.kneighbors(np.asarray(embeddings, dtype=np.float32))
        return dist.mean(axis=1)
