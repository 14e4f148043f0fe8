"""The interest sketcher (SIREN section 3.1): topics are found once on the whole catalogue by
k-means over item-description embeddings, each topic gets a short name, and a user's full
history is reduced to the topics it rated at or above ``theta`` on average (liked) and the
touched topics below it (disliked), ordered by how often the user met them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V

ENCODERS = ("minilm", "tfidf")


def embed_descriptions(descriptions: Sequence[str], encoder: str = "minilm", seed: int = 0):
    """Unit-norm embeddings of ``descriptions``: all-MiniLM-L6-v2 (mean pooled, the shared
    ``iclr26.models.text`` encoder) or TF-IDF followed by a 128-d truncated SVD."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    V.check_choice(encoder, "encoder", ENCODERS)
    texts = _check_texts(descriptions, "descriptions")
    if encoder == "minilm":
        from iclr26.models import text

        # batches of similar length pad less (a third less encoder time on the quick
        # catalogue); the embeddings agree with the unsorted order to float rounding (~1e-7)
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), text.MINILM_DIM), dtype=np.float64)
        out[order] = text.encode([texts[i] for i in order])
        return out
    tfidf = TfidfVectorizer(stop_words="english").fit_transform(texts)
    dim = min(128, tfidf.shape[1] - 1, len(texts) - 1)
    if dim < 1:
        return normalize(tfidf.toarray())
    svd = TruncatedSVD(n_components=dim, random_state=seed).fit_transform(tfidf)
    return normalize(svd)


def _check_texts(values, name: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a sequence of strings")
    texts = list(values)
    if not texts:
        raise ValueError(f"{name} is empty")
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{k}] must be a string, got {type(t).__name__}")
    return texts


def check_history(history, name: str = "history") -> np.ndarray:
    """``history`` as an int array ``(n, 2)`` of ``(item, rating)``; empty is allowed."""
    arr = np.asarray(history) if not isinstance(history, np.ndarray) else history
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    return V.check_array(arr, name, ndim=2, shape=(None, 2), dtype=np.int64)


def tfidf_topic_names(
    descriptions: list[str], labels: np.ndarray, nearest: list[np.ndarray], n_terms: int = 3
) -> list[str]:
    """Each topic's name: its ``n_terms`` highest summed TF-IDF terms over the descriptions
    nearest its centre, joined by ``/``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(stop_words="english")
    weights = vec.fit_transform(descriptions)
    vocab = np.asarray(vec.get_feature_names_out())
    names = []
    for rows in nearest:
        score = np.asarray(weights[rows].sum(axis=0)).ravel()
        top = np.lexsort((vocab, -score))[:n_terms]  # ties broken alphabetically
        names.append("/".join(vocab[top]))
    return names


class InterestSketcher(BaseEstimator):
    """Catalogue topics and per-user liked/disliked topic sketches.

    ``fit(item_ids, descriptions)`` embeds every description (``encoder``), clusters the
    catalogue into ``n_topics`` with k-means (k-means++, ``n_init=10``) and names each topic
    from the ``top_m`` descriptions nearest its centre (3 TF-IDF terms, or ``namer(list of
    descriptions) -> str``). ``sketch(history)`` returns ``(liked, disliked)`` topic names:
    liked when the mean rating of the history items in the topic is ``>= theta``, disliked when
    the topic was touched with a mean below ``theta``; untouched topics appear in neither. Both
    lists are ordered by count (descending), ties by topic id.

    Fitted attributes: ``labels_`` (topic of each item, in the order given), ``centers_``,
    ``topic_names_``, ``item_index_`` (item id -> row)."""

    def __init__(
        self,
        n_topics: int = 20,
        theta: float = 4.0,
        top_m: int = 100,
        encoder: str = "minilm",
        namer: Callable[[list[str]], str] | None = None,
        seed: int = 0,
    ):
        self.n_topics = n_topics
        self.theta = theta
        self.top_m = top_m
        self.encoder = encoder
        self.namer = namer
        self.seed = seed

    def _check_params(self) -> None:
        V.check_int(self.n_topics, "n_topics", low=1)
        V.check_scalar(self.theta, "theta")
        V.check_int(self.top_m, "top_m", low=1)
        V.check_choice(self.encoder, "encoder", ENCODERS)
        V.check_int(self.seed, "seed", low=0)
        if self.namer is not None and not callable(self.namer):
            raise TypeError("namer must be callable or None")

    def fit(self, item_ids, descriptions, embeddings=None) -> InterestSketcher:
        """Cluster the catalogue (items only: never ratings). ``embeddings`` (``(n, d)``)
        skips the encoder."""
        from sklearn.cluster import KMeans

        self._check_params()
        texts = _check_texts(descriptions, "descriptions")
        ids = V.check_array(item_ids, "item_ids", ndim=1, dtype=np.int64)
        V.check_same_length(item_ids=ids, descriptions=texts)
        if len(np.unique(ids)) != len(ids):
            raise ValueError("item_ids must be unique")
        if self.n_topics > len(texts):
            raise ValueError(
                f"n_topics ({self.n_topics}) must not exceed the number of items ({len(texts)})"
            )
        if embeddings is None:
            emb = embed_descriptions(texts, self.encoder, self.seed)
        else:
            emb = V.check_array(embeddings, "embeddings", ndim=2, n_rows=len(texts))
        km = KMeans(self.n_topics, init="k-means++", n_init=10, random_state=self.seed).fit(emb)
        self.labels_ = km.labels_.astype(np.int64)
        self.centers_ = km.cluster_centers_
        dist = ((emb[:, None, :] - self.centers_[None]) ** 2).sum(-1)
        nearest = []
        for k in range(self.n_topics):
            members = np.flatnonzero(self.labels_ == k)
            order = members[np.argsort(dist[members, k], kind="stable")]
            nearest.append(order[: self.top_m])
        if self.namer is None:
            self.topic_names_ = tfidf_topic_names(texts, self.labels_, nearest)
        else:
            self.topic_names_ = [str(self.namer([texts[i] for i in rows])) for rows in nearest]
        self.item_index_ = {int(i): k for k, i in enumerate(ids)}
        self.n_items_ = len(ids)
        return self

    def topic_of(self, item) -> int:
        """The topic id of one item id."""
        check_is_fitted(self, "labels_")
        key = int(item)
        if key not in self.item_index_:
            raise KeyError(f"item {key} is not in the fitted catalogue")
        return int(self.labels_[self.item_index_[key]])

    def topic_stats(self, history) -> tuple[np.ndarray, np.ndarray]:
        """Per-topic count and mean rating of ``history`` (mean 0 where untouched)."""
        check_is_fitted(self, "labels_")
        rows = check_history(history)
        counts = np.zeros(self.n_topics)
        sums = np.zeros(self.n_topics)
        if len(rows):
            unknown = [int(i) for i in rows[:, 0] if int(i) not in self.item_index_]
            if unknown:
                raise ValueError(f"history holds items not in the catalogue: {unknown[:5]}")
            topics = self.labels_[[self.item_index_[int(i)] for i in rows[:, 0]]]
            np.add.at(counts, topics, 1.0)
            np.add.at(sums, topics, rows[:, 1].astype(float))
        means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
        return counts, means

    def sketch_ids(self, history, token_budget: int | None = None, count_tokens=None):
        """``(liked topic ids, disliked topic ids)``; with ``token_budget`` the least
        frequent topics are dropped until the names fit (``count_tokens(name) -> int``,
        default: words in the name)."""
        counts, means = self.topic_stats(history)
        order = np.lexsort((np.arange(self.n_topics), -counts))
        touched = [int(k) for k in order if counts[k] > 0]
        if token_budget is not None:
            V.check_int(token_budget, "token_budget", low=0)
            count = count_tokens or (lambda s: len(s.replace("/", " ").split()))
            kept, used = [], 0
            for k in touched:  # most frequent first, so the least frequent are dropped
                cost = int(count(self.topic_names_[k]))
                if used + cost > token_budget:
                    break
                kept.append(k)
                used += cost
            touched = kept
        liked = [k for k in touched if means[k] >= self.theta]
        disliked = [k for k in touched if means[k] < self.theta]
        return liked, disliked

    def sketch(self, history, token_budget: int | None = None, count_tokens=None):
        """``(liked names, disliked names)`` of a history of ``(item, rating)`` rows."""
        liked, disliked = self.sketch_ids(history, token_budget, count_tokens)
        return [self.topic_names_[k] for k in liked], [self.topic_names_[k] for k in disliked]
