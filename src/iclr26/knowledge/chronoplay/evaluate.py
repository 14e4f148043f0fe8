"""Evaluation (§4.1.2): retrieval Recall@K, F1@K and NDCG@K of the tuples' reference
snippets, per phase; generation correctness and faithfulness on the paper's 0/1/2 scale
normalised to [0, 1] (offline: normalised string match and token overlap instead of an LLM
judge); and the maintenance metrics of the claim checks (stale rate, topic misalignment)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.drift import jsd
from iclr26.knowledge.chronoplay.records import BenchmarkSlice, QATuple
from iclr26.knowledge.chronoplay.retrieval import make_retriever
from iclr26.knowledge.chronoplay.taxonomy import TOPICS

_WORD = re.compile(r"[a-z0-9]+")


def _check_ks(k) -> tuple[int, ...]:
    ks = (k,) if isinstance(k, int | np.integer) and not isinstance(k, bool) else tuple(k)
    if not ks:
        raise ValueError("k is empty")
    return tuple(V.check_int(x, "k", low=1) for x in ks)


def _check_slices(slices) -> list[BenchmarkSlice]:
    if isinstance(slices, BenchmarkSlice):
        slices = [slices]
    slices = list(slices)
    if not slices:
        raise ValueError("slices is empty")
    for i, s in enumerate(slices):
        if not isinstance(s, BenchmarkSlice):
            raise TypeError(f"slices[{i}] must be a BenchmarkSlice, got {type(s).__name__}")
    return slices


def ranking_metrics(
    ranked_ids: Sequence[Sequence[str]], relevant: Sequence[set[str]], ks: Sequence[int]
) -> dict[str, np.ndarray]:
    """Per-query Recall@K, F1@K and NDCG@K (binary relevance) of ranked id lists."""
    if isinstance(ranked_ids, str):
        raise TypeError("ranked_ids must be a list of ranked id lists, got a string")
    ranked_ids, relevant = list(ranked_ids), list(relevant)
    if not ranked_ids:
        raise ValueError("ranked_ids is empty")
    V.check_same_length(ranked_ids=ranked_ids, relevant=relevant)
    ks = _check_ks(ks)
    out = {}
    for k in ks:
        rec, f1, ndcg = [], [], []
        disc = 1.0 / np.log2(np.arange(2, k + 2))
        for ranked, rel in zip(ranked_ids, relevant):
            hits = np.array([r in rel for r in list(ranked)[:k]], dtype=float)
            n_hit = hits.sum()
            r = n_hit / len(rel) if rel else 0.0
            p = n_hit / k
            rec.append(r)
            f1.append(2 * p * r / (p + r) if p + r > 0 else 0.0)
            ideal = disc[: min(k, len(rel))].sum()
            ndcg.append(float((hits * disc[: len(hits)]).sum() / ideal) if ideal > 0 else 0.0)
        out[f"recall@{k}"] = np.asarray(rec)
        out[f"f1@{k}"] = np.asarray(f1)
        out[f"ndcg@{k}"] = np.asarray(ndcg)
    return out


def evaluate_retrieval(retriever, slices, k=(1, 3, 5)) -> list[dict[str, float]]:
    """One row per phase: mean Recall/F1/NDCG@K of ``retriever`` (``"bm25"``, ``"minilm"``,
    ``"tfidf"`` or an object with ``search``) against each tuple's own refs, over the phase's
    corpus (old, superseded snippets included)."""
    retriever = make_retriever(retriever)
    slices = _check_slices(slices)
    ks = _check_ks(k)
    rows = []
    for s in slices:
        if not s.tuples:
            raise ValueError(f"slices[{s.phase}] holds no tuples")
        idx = retriever.search([t.question for t in s.tuples], s.corpus, max(ks))
        ranked = [[s.corpus[int(i)].id for i in row] for row in idx]
        rel = [{r.id for r in t.refs} for t in s.tuples]
        m = ranking_metrics(ranked, rel, ks)
        row = {"phase": s.phase, "n": len(s.tuples)}
        row.update({name: float(v.mean()) for name, v in m.items()})
        rows.append(row)
    return rows


def _norm(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def evaluate_answers(predictions: Sequence[str], tuples: Sequence[QATuple]) -> dict[str, float]:
    """Correctness and faithfulness in [0, 1] (0/1/2 scale / 2, averaged). Correctness: 2 for
    a normalised exact match, 1 when the gold answer's tokens are all in the prediction, else
    0. Faithfulness: 2 when >= 80 % of the prediction's tokens occur in the refs, 1 at >= 50 %."""
    if isinstance(predictions, str):
        raise TypeError("predictions must be a list of strings, got one string")
    predictions, tuples = list(predictions), list(tuples)
    if not tuples:
        raise ValueError("tuples is empty")
    V.check_same_length(predictions=predictions, tuples=tuples)
    corr, faith = [], []
    for pred, t in zip(predictions, tuples):
        p, g = _norm(pred), _norm(t.answer)
        corr.append(2 if p == g else (1 if g and set(g) <= set(p) else 0))
        ref = set(_norm(" ".join(r.content for r in t.refs)))
        share = sum(w in ref for w in p) / len(p) if p else 0.0
        faith.append(2 if share >= 0.8 else (1 if share >= 0.5 else 0))
    return {"correctness": float(np.mean(corr)) / 2, "faithfulness": float(np.mean(faith)) / 2}


def stale_rate(slice_: BenchmarkSlice, world, day: float | None = None) -> float:
    """Share of tuples whose gold answer differs from ``world``'s ground truth on ``day``
    (default: the slice's end)."""
    if not isinstance(slice_, BenchmarkSlice):
        raise TypeError(f"slice_ must be a BenchmarkSlice, got {type(slice_).__name__}")
    V.check_module_attrs(world, "world", ["is_stale"])
    day = slice_.end if day is None else V.check_scalar(day, "day")
    if not slice_.tuples:
        raise ValueError("slice_ holds no tuples")
    return float(np.mean([world.is_stale(t, day) for t in slice_.tuples]))


def topic_misalignment(slice_: BenchmarkSlice) -> float:
    """JSD (nats) between the benchmark's topic mix and the phase's community mix."""
    if not isinstance(slice_, BenchmarkSlice):
        raise TypeError(f"slice_ must be a BenchmarkSlice, got {type(slice_).__name__}")
    if not slice_.tuples:
        raise ValueError("slice_ holds no tuples")
    counts = np.zeros(len(TOPICS))
    for t in slice_.tuples:
        counts[TOPICS.index(t.topic)] += 1
    return jsd(counts, slice_.community_mix)
