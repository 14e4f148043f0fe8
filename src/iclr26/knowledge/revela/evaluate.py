"""Ranking metrics for one relevant document per query: nDCG@k and Recall@k.

With a single relevant document at 1-based rank r, DCG@k = 1 / log2(r + 1) when r <= k and the
ideal DCG is 1, so nDCG@k = 1 / log2(r + 1) (0 past rank k); Recall@k = [r <= k].
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

__all__ = ["relevant_rank", "ndcg_at_k", "recall_at_k", "retrieval_metrics"]


def relevant_rank(ranked, relevant, k: int | None = None) -> np.ndarray:
    """1-based rank of ``relevant[i]`` in row ``i`` of ``ranked`` (n, >= k), looking at the
    first ``k`` columns (all when ``None``); 0 when absent."""
    ranked = V.check_array(ranked, "ranked", ndim=2, dtype=np.int64)
    relevant = V.check_array(relevant, "relevant", ndim=1, dtype=np.int64, n_rows=len(ranked))
    k = V.check_int(k, "k", low=1, allow_none=True)
    if k is not None:
        ranked = ranked[:, :k]
    hit = ranked == relevant[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)


def _gains(rank: np.ndarray) -> np.ndarray:
    """1 / log2(r + 1) for ranks r >= 1, 0 for a miss (r = 0)."""
    out = np.zeros(rank.shape, dtype=np.float64)
    hit = rank > 0
    out[hit] = 1.0 / np.log2(rank[hit] + 1.0)
    return out


def ndcg_at_k(ranked, relevant, k: int = 10) -> float:
    """Mean nDCG@k over queries with one relevant document each."""
    r = relevant_rank(ranked, relevant, k=V.check_int(k, "k", low=1))
    return float(_gains(r).mean())


def recall_at_k(ranked, relevant, k: int = 10) -> float:
    """Fraction of queries whose relevant document is in the top ``k``."""
    r = relevant_rank(ranked, relevant, k=V.check_int(k, "k", low=1))
    return float((r > 0).mean())


def retrieval_metrics(ranked, relevant, k: int = 10) -> dict[str, float]:
    """``{"ndcg@k": ..., "recall@k": ..., "mrr@k": ...}`` for a ranking (n, >= k)."""
    r = relevant_rank(ranked, relevant, k=V.check_int(k, "k", low=1))
    return {
        f"ndcg@{k}": float(_gains(r).mean()),
        f"recall@{k}": float((r > 0).mean()),
        f"mrr@{k}": float(np.where(r > 0, 1.0 / np.maximum(r, 1), 0.0).mean()),
    }
