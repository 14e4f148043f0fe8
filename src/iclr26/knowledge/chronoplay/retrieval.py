"""Retrievers over a growing corpus K_t and the text embedders of the synthesis steps.

``BM25Retriever`` wraps ``bm25s`` (the default retriever of the pipeline and a reference row of
the evaluation); ``DenseRetriever`` ranks by cosine similarity of embeddings: the shared MiniLM
sentence encoder (``iclr26.models.text``, standing in for text-embedding-3-small) or TF-IDF.
Both rebuild their index only when the corpus changes (K only ever grows)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.records import Snippet

EMBEDDERS = ("tfidf", "minilm")
#: texts longer than the MiniLM context (256 word pieces) that were cut, counted per process
TRUNCATED: dict[str, int] = {"minilm": 0}


def _check_queries(queries, name: str = "queries") -> list[str]:
    if isinstance(queries, str):
        raise TypeError(f"{name} must be a list of strings, got one string (wrap it in a list)")
    try:
        queries = list(queries)
    except TypeError:
        raise TypeError(f"{name} must be a list of strings, got {type(queries).__name__}") from None
    if not queries:
        raise ValueError(f"{name} is empty")
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise TypeError(f"{name}[{i}] must be a string, got {type(q).__name__}")
        if not q.strip():
            raise ValueError(f"{name}[{i}] is an empty query")
    return queries


def check_corpus(corpus, name: str = "corpus") -> list[Snippet]:
    if isinstance(corpus, str | bytes):
        raise TypeError(f"{name} must be a list of Snippet, got a string")
    try:
        corpus = list(corpus)
    except TypeError:
        raise TypeError(f"{name} must be a list of Snippet, got {type(corpus).__name__}") from None
    if not corpus:
        raise ValueError(f"{name} is empty: retrieval needs at least one snippet")
    for i, s in enumerate(corpus):
        if not isinstance(s, Snippet):
            raise TypeError(f"{name}[{i}] must be a Snippet, got {type(s).__name__}")
    return corpus


def _corpus_key(corpus: Sequence[Snippet]) -> tuple:
    return (len(corpus), hash(tuple(s.id or s.content for s in corpus)))


def embed_texts(
    texts: Sequence[str], embedder: str | Callable = "tfidf", fit_on=None, device: str = "cpu"
):
    """Unit-norm embeddings of ``texts``: ``"minilm"`` (shared encoder), ``"tfidf"`` (fitted on
    ``fit_on`` or on ``texts``; returns a sparse matrix) or a callable ``list[str] -> array``."""
    texts = _check_queries(texts, "texts")
    if callable(embedder):
        out = V.check_array(embedder(texts), "embedder output", ndim=2, n_rows=len(texts))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
    V.check_choice(embedder, "embedder", EMBEDDERS)
    if embedder == "minilm":
        from iclr26.models import text

        vecs, truncated = text.encode(texts, device=device, return_truncated=True)
        TRUNCATED["minilm"] += truncated
        return vecs
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True).fit(list(fit_on) if fit_on is not None else texts)
    return vec.transform(texts)


def cosine_matrix(a: Sequence[str], b: Sequence[str], embedder: str | Callable = "tfidf"):
    """Cosine similarities ``(len(a), len(b))``; TF-IDF is fitted on ``a + b``."""
    a, b = _check_queries(a, "a"), _check_queries(b, "b")
    if embedder == "tfidf":
        both = embed_texts(a + b, "tfidf")
        ea, eb = both[: len(a)], both[len(a) :]
        return np.asarray((ea @ eb.T).todense())
    ea, eb = embed_texts(a, embedder), embed_texts(b, embedder)
    return np.asarray(ea @ eb.T)


class BM25Retriever:
    """BM25 over the snippets' contents (``bm25s``, English stop words, Lucene scoring)."""

    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1 = V.check_scalar(k1, "k1", low=0.0)
        self.b = V.check_probability(b, "b")
        self._key = None
        self._index = None
        self.index_builds = 0

    def _fit(self, corpus: Sequence[Snippet]) -> None:
        import bm25s

        key = _corpus_key(corpus)
        if key == self._key:
            return
        tokens = bm25s.tokenize([s.content for s in corpus], stopwords="en", show_progress=False)
        index = bm25s.BM25(k1=self.k1, b=self.b)
        index.index(tokens, show_progress=False)
        self._index, self._key = index, key
        self.index_builds += 1

    def search(self, queries: Sequence[str], corpus: Sequence[Snippet], k: int = 5) -> np.ndarray:
        """Indices into ``corpus`` of the top ``k`` snippets per query, best first."""
        import bm25s

        queries = _check_queries(queries)
        corpus = check_corpus(corpus)
        k = V.check_int(k, "k", low=1)
        k = min(k, len(corpus))
        self._fit(corpus)
        q = bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False)
        q = [t if t else ["the"] for t in q]
        docs, _ = self._index.retrieve(
            q, k=k, show_progress=False, n_threads=0, backend_selection="numpy"
        )
        return np.asarray(docs, dtype=np.int64)


class DenseRetriever:
    """Cosine-similarity retrieval with ``embedder`` = ``"minilm"``, ``"tfidf"`` or a callable.

    Snippet embeddings are cached by snippet id and query embeddings by text, so a growing
    corpus and repeated queries are encoded once."""

    def __init__(self, embedder: str | Callable = "minilm", device: str = "cpu"):
        if not callable(embedder):
            V.check_choice(embedder, "embedder", EMBEDDERS)
        self.embedder = embedder
        if not isinstance(device, str):
            raise TypeError(f"device must be a device name such as 'cpu', got {device!r}")
        self.device = device
        self.name = embedder if isinstance(embedder, str) else "dense"
        self._cache: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self._tfidf = None
        self._key = None
        self.encoded = 0

    def _doc_matrix(self, corpus: Sequence[Snippet]):
        if self.embedder == "tfidf":
            from sklearn.feature_extraction.text import TfidfVectorizer

            key = _corpus_key(corpus)
            if key != self._key:
                texts = [s.content for s in corpus]
                self._tfidf = TfidfVectorizer(sublinear_tf=True).fit(texts)
                self._docs = self._tfidf.transform(texts)
                self._key = key
            return self._docs
        missing = [s for s in corpus if (s.id or s.content) not in self._cache]
        if missing:
            vecs = embed_texts([s.content for s in missing], self.embedder, device=self.device)
            self.encoded += len(missing)
            for s, v in zip(missing, vecs):
                self._cache[s.id or s.content] = np.asarray(v, dtype=np.float32)
        return np.stack([self._cache[s.id or s.content] for s in corpus])

    def search(self, queries: Sequence[str], corpus: Sequence[Snippet], k: int = 5) -> np.ndarray:
        queries = _check_queries(queries)
        corpus = check_corpus(corpus)
        k = V.check_int(k, "k", low=1)
        k = min(k, len(corpus))
        docs = self._doc_matrix(corpus)
        if self.embedder == "tfidf":
            sims = np.asarray((self._tfidf.transform(queries) @ docs.T).todense())
        else:
            todo = list(dict.fromkeys(q for q in queries if q not in self._queries))
            if todo:
                for q, v in zip(
                    todo, np.asarray(embed_texts(todo, self.embedder, device=self.device))
                ):
                    self._queries[q] = v
                if len(self._queries) > 100_000:
                    self._queries.clear()
            sims = np.stack([self._queries[q] for q in queries]) @ docs.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        return np.take_along_axis(top, order, axis=1)


def make_retriever(retriever, device: str = "cpu") -> BM25Retriever | DenseRetriever:
    """``"bm25"``, ``"minilm"``, ``"tfidf"`` or any object with ``search(queries, corpus, k)``."""
    if isinstance(retriever, str):
        V.check_choice(retriever, "retriever", ("bm25", *EMBEDDERS))
        if retriever == "bm25":
            return BM25Retriever()
        return DenseRetriever(retriever, device=device)
    return V.check_module_attrs(retriever, "retriever", ["search"])
