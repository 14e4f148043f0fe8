"""An interpolated Kneser-Ney trigram word language model: the data-quality probe.

The highest order uses discounted counts, the lower orders continuation counts (how many
distinct words precede a word or bigram), each interpolated with the next lower order; the
unigram continuation distribution is interpolated with a uniform one over the vocabulary so
that every in-vocabulary word has non-zero probability. Words outside ``vocab`` map to
``<unk>``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

from iclr26 import validation as V
from iclr26.llm.gneissweb.tokenizer import check_texts

_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
UNK, BOS, EOS = "<unk>", "<s>", "</s>"


def words(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


class KneserNeyTrigramLM:
    def __init__(
        self,
        discount: float = 0.75,
        vocab: Iterable[str] | None = None,
        uniform_weight: float = 0.01,
    ) -> None:
        self.discount = V.check_scalar(
            discount, "discount", low=0.0, high=1.0, low_open=True, high_open=True
        )
        self.uniform_weight = V.check_scalar(
            uniform_weight, "uniform_weight", low=0.0, high=1.0, low_open=True
        )
        if isinstance(vocab, str):
            raise TypeError("vocab must be a collection of words, not one string")
        self.vocab = set(vocab) if vocab is not None else None

    def _sentences(self, texts: Iterable[str]) -> Iterable[list[str]]:
        for text in texts:
            toks = words(text)
            if self.vocab is not None:
                toks = [t if t in self.vocab else UNK for t in toks]
            if toks:
                yield [BOS, BOS, *toks, EOS]

    def fit(self, texts: Iterable[str]) -> KneserNeyTrigramLM:
        texts = check_texts(texts)
        tri: Counter = Counter()
        for s in self._sentences(texts):
            tri.update(zip(s, s[1:], s[2:]))
        if not tri:
            raise ValueError("texts is empty: no training text")
        self.tri = tri
        self.ctx2 = Counter()  # c(u v .)
        self.types2 = Counter()  # N1+(u v .)
        cont_bi = Counter()  # N1+(. v w)
        for (u, v, w), c in tri.items():
            self.ctx2[(u, v)] += c
            self.types2[(u, v)] += 1
            cont_bi[(v, w)] += 1
        self.cont_bi = cont_bi
        self.cont_ctx1 = Counter()  # N1+(. v .) = sum_w N1+(. v w)
        self.types1 = Counter()  # N1+ of w following v in continuation counts
        cont_uni = Counter()  # N1+(. w)
        for (v, w), c in cont_bi.items():
            self.cont_ctx1[v] += c
            self.types1[v] += 1
            cont_uni[w] += 1
        self.cont_uni = cont_uni
        self.cont_total = sum(cont_uni.values())
        vocab = set(self.vocab or ()) | set(cont_uni) | {UNK, EOS}
        self.vocab_size = len(vocab)
        return self

    def _p_uni(self, w: str) -> float:
        cont = self.cont_uni.get(w, 0) / self.cont_total
        return (1 - self.uniform_weight) * cont + self.uniform_weight / self.vocab_size

    def _p_bi(self, v: str, w: str) -> float:
        total = self.cont_ctx1.get(v, 0)
        if not total:
            return self._p_uni(w)
        d = self.discount
        head = max(self.cont_bi.get((v, w), 0) - d, 0.0) / total
        return head + d * self.types1[v] / total * self._p_uni(w)

    def prob(self, u: str, v: str, w: str) -> float:
        total = self.ctx2.get((u, v), 0)
        if not total:
            return self._p_bi(v, w)
        d = self.discount
        head = max(self.tri.get((u, v, w), 0) - d, 0.0) / total
        return head + d * self.types2[(u, v)] / total * self._p_bi(v, w)

    def perplexity(self, texts: Iterable[str]) -> float:
        if not hasattr(self, "tri"):
            raise RuntimeError("KneserNeyTrigramLM is not fitted; call fit(texts) first")
        texts = check_texts(texts)
        log_sum, n = 0.0, 0
        for s in self._sentences(texts):
            for u, v, w in zip(s, s[1:], s[2:]):
                log_sum += math.log(self.prob(u, v, w))
                n += 1
        if n == 0:
            raise ValueError("texts is empty: no evaluation text")
        return math.exp(-log_sum / n)


def build_vocab(texts: Iterable[str], min_count: int = 2) -> set[str]:
    counts: Counter = Counter()
    for text in texts:
        counts.update(words(text))
    return {w for w, c in counts.items() if c >= min_count}


def sample_token_budget(texts: list[str], budget: int, seed: int = 0) -> list[str]:
    """Documents in a seeded random order until ``budget`` word tokens are reached."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(len(texts))
    out, used = [], 0
    for i in order:
        if used >= budget:
            break
        n = len(words(texts[i]))
        out.append(texts[i])
        used += n
    return out
