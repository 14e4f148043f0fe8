"""The dense retriever E_Theta that Revela trains, its corpus index and BM25 beside it.

:class:`RevelaRetriever` wraps any Hugging Face encoder or decoder backbone: ``eos`` pooling
(the hidden state of an end-of-sequence token appended to the text, RepLLaMA-style, for decoder
LMs) or ``mean`` pooling (BERT-style, e.g. MiniLM), L2-normalised, with the paper's
``"Query: "`` / ``"Passage: "`` prefixes. ``encode`` follows the sentence-transformers signature.
:class:`CorpusIndex` is an exact inner-product index over document chunks: a document longer than
the retriever's context is cut into token windows (counted in ``n_chunked_documents``), and a
document scores the best of its chunks. It saves to and loads from a folder.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.knowledge.revela.data import _check_texts

__all__ = [
    "RevelaRetriever",
    "CorpusIndex",
    "BM25Retriever",
    "code_tokenize",
    "QUERY_PREFIX",
    "PASSAGE_PREFIX",
]

QUERY_PREFIX = "Query: "
PASSAGE_PREFIX = "Passage: "
_CONFIG_NAME = "revela_retriever.json"


def _check_nonblank(texts, name: str) -> list[str]:
    """A list of strings none of which is blank: an empty query or document has no content to
    match, and ranking for it would be an arbitrary order that looks like an answer."""
    texts = _check_texts(texts, name)
    for i, t in enumerate(texts):
        if not t.strip():
            raise ValueError(f"{name}[{i}] is blank: an empty text cannot be searched or indexed")
    return texts


class RevelaRetriever(torch.nn.Module):
    """A bi-encoder: ``backbone`` (a HF base model returning ``last_hidden_state``) and its
    ``tokenizer``; ``pooling`` is ``"eos"`` or ``"mean"``; ``max_length`` counts tokens,
    prefix and appended eos included."""

    def __init__(self, backbone, tokenizer, pooling: str = "eos", max_length: int = 160):
        super().__init__()
        V.check_module_attrs(backbone, "backbone", ("forward", "config"))
        V.check_module_attrs(tokenizer, "tokenizer", ("encode", "__call__"))
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.pooling = V.check_choice(pooling, "pooling", ("eos", "mean"))
        self.max_length = V.check_int(max_length, "max_length", low=4)
        if self.pooling == "eos" and tokenizer.eos_token_id is None:
            raise ValueError("tokenizer: eos pooling needs a tokenizer with an eos token")
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))

    # ------------------------------------------------------------ constructors

    @classmethod
    def from_causal_lm(
        cls, name_or_model="quick", tokenizer=None, pooling: str = "eos", max_length: int = 160
    ) -> RevelaRetriever:
        """A retriever from a *copy* of a causal LM's decoder: a tiny size name or HF id/path
        (through ``iclr26.models.tinylm.load_causal_lm``) or a model object with ``tokenizer``."""
        if isinstance(name_or_model, (str, os.PathLike)):
            from iclr26.models.tinylm import load_causal_lm

            model, tok = load_causal_lm(name_or_model)
        else:
            if tokenizer is None:
                raise TypeError("tokenizer: required when a model object is passed")
            model, tok = name_or_model, tokenizer
        V.check_module_attrs(model, "model", ("get_decoder",))
        backbone = copy.deepcopy(model.get_decoder())
        for p in backbone.parameters():
            p.requires_grad_(True)
        return cls(backbone, tok, pooling=pooling, max_length=max_length)

    @classmethod
    def from_sentence_transformer(
        cls, pooling: str = "mean", max_length: int = 256
    ) -> RevelaRetriever:
        """A trainable copy of the shared all-MiniLM-L6-v2 encoder (``iclr26.models.text``)."""
        from iclr26.models import text

        model, tok = text.load_minilm("cpu")
        backbone = copy.deepcopy(model)
        for p in backbone.parameters():
            p.requires_grad_(True)
        return cls(backbone, tok, pooling=pooling, max_length=max_length)

    # ------------------------------------------------------------ tokenisation and pooling

    @property
    def device(self) -> torch.device:
        return next(self.backbone.parameters()).device

    def _ids(self, texts: list[str], prefix: str) -> list[list[int]]:
        tok = self.tokenizer
        if self.pooling == "eos":
            body = self.max_length - 1
            out = []
            for t in texts:
                ids = tok.encode(prefix + t, add_special_tokens=False)[:body]
                out.append(ids + [tok.eos_token_id])
            return out
        enc = tok([prefix + t for t in texts], truncation=True, max_length=self.max_length)
        return [list(x) for x in enc["input_ids"]]

    def _pad(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        length = max(len(x) for x in ids)
        arr = torch.full((len(ids), length), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), length), dtype=torch.long)
        for k, x in enumerate(ids):
            arr[k, : len(x)] = torch.tensor(x, dtype=torch.long)
            mask[k, : len(x)] = 1
        return arr.to(self.device), mask.to(self.device)

    def embed(self, texts, prefix: str = PASSAGE_PREFIX) -> torch.Tensor:
        """Differentiable embeddings (n, d), L2-normalised (the training path)."""
        texts = _check_texts(texts, "texts")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix: expected a string, got {type(prefix).__name__}")
        ids, mask = self._pad(self._ids(texts, prefix))
        hidden = self.backbone(input_ids=ids, attention_mask=mask).last_hidden_state
        if self.pooling == "eos":
            last = mask.sum(1) - 1
            pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        else:
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)
        return F.normalize(pooled.float(), dim=-1)

    def encode(
        self,
        sentences,
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        normalize_embeddings: bool = True,
        prefix: str | None = None,
    ) -> np.ndarray:
        """Embed ``sentences`` without gradients: float32 ``(n, d)``, unit rows (the
        sentence-transformers signature; ``prefix`` defaults to ``"Passage: "``). Texts are
        sorted by length inside so padding stays small."""
        single = isinstance(sentences, str)
        texts = _check_texts([sentences] if single else sentences, "sentences")
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        V.check_bool(convert_to_numpy, "convert_to_numpy")
        V.check_bool(normalize_embeddings, "normalize_embeddings")
        prefix = PASSAGE_PREFIX if prefix is None else prefix
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = None
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                for start in range(0, len(texts), batch_size):
                    idx = order[start : start + batch_size]
                    emb = self.embed([texts[k] for k in idx], prefix=prefix).cpu().numpy()
                    if out is None:
                        out = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
                    out[idx] = emb
        finally:
            self.train(was_training)
        return out[0] if single else out

    # ------------------------------------------------------------ corpus search

    def _document_windows(self, documents: list[str]) -> tuple[list[str], list[int]]:
        """Cut documents longer than the context into token windows; returns chunk texts and
        the document of each chunk."""
        tok = self.tokenizer
        room = self.max_length - len(tok.encode(PASSAGE_PREFIX, add_special_tokens=False)) - 2
        room = max(room, 1)
        texts, owner = [], []
        for k, doc in enumerate(documents):
            ids = tok.encode(doc, add_special_tokens=False)
            if len(ids) <= room:
                texts.append(doc)
                owner.append(k)
                continue
            for start in range(0, len(ids), room):
                texts.append(tok.decode(ids[start : start + room]))
                owner.append(k)
        return texts, owner

    def index(self, documents, batch_size: int = 32) -> CorpusIndex:
        """Embed a corpus into a :class:`CorpusIndex` (documents over ``max_length`` tokens are
        chunked into windows; the index counts them)."""
        documents = _check_nonblank(documents, "documents")
        texts, owner = self._document_windows(documents)
        emb = self.encode(texts, batch_size=batch_size, prefix=PASSAGE_PREFIX)
        return CorpusIndex(emb, owner, n_documents=len(documents))

    def search(self, queries, index: CorpusIndex, k: int = 10, batch_size: int = 32):
        """Top-``k`` documents per query: ``(doc_ids (n, k), scores (n, k))``."""
        queries = _check_nonblank(queries, "queries")
        if not isinstance(index, CorpusIndex):
            raise TypeError(f"index: expected a CorpusIndex, got {type(index).__name__}")
        q = self.encode(queries, batch_size=batch_size, prefix=QUERY_PREFIX)
        return index.search(q, k=k)

    # ------------------------------------------------------------ persistence

    def save_pretrained(self, folder) -> Path:
        """A HF-style folder: backbone and tokenizer ``save_pretrained`` plus the pooling."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        cfg = {"pooling": self.pooling, "max_length": self.max_length}
        (folder / _CONFIG_NAME).write_text(json.dumps(cfg))
        return folder

    @classmethod
    def load(cls, folder) -> RevelaRetriever:
        from transformers import AutoModel, AutoTokenizer

        folder = Path(folder)
        if not (folder / _CONFIG_NAME).is_file():
            raise FileNotFoundError(f"folder: no {_CONFIG_NAME} in {folder}")
        cfg = json.loads((folder / _CONFIG_NAME).read_text())
        backbone = AutoModel.from_pretrained(folder)
        tok = AutoTokenizer.from_pretrained(folder)
        return cls(backbone, tok, pooling=cfg["pooling"], max_length=cfg["max_length"])


class CorpusIndex:
    """Exact inner-product search over chunk embeddings; a document scores its best chunk.

    ``embeddings`` (n_chunks, d) float32 unit rows, ``owner[c]`` the document of chunk ``c``.
    ``n_chunked_documents`` counts the documents that were cut into more than one chunk."""

    def __init__(self, embeddings, owner=None, n_documents: int | None = None):
        emb = V.check_array(embeddings, "embeddings", ndim=2, dtype=np.float32)
        owner = np.arange(len(emb)) if owner is None else owner
        owner = V.check_array(owner, "owner", ndim=1, dtype=np.int64, n_rows=len(emb), low=0)
        n_docs = int(owner.max()) + 1 if n_documents is None else n_documents
        n_docs = V.check_int(n_docs, "n_documents", low=int(owner.max()) + 1)
        self.embeddings = np.ascontiguousarray(emb)
        self.owner = owner
        self.n_documents = n_docs
        counts = np.bincount(owner, minlength=n_docs)
        self.n_chunked_documents = int((counts > 1).sum())
        self._multi = bool(self.n_chunked_documents)

    @property
    def n_chunks(self) -> int:
        return len(self.embeddings)

    @property
    def dim(self) -> int:
        return self.embeddings.shape[1]

    def scores(self, queries) -> np.ndarray:
        """Document scores (n_queries, n_documents): the max over each document's chunks."""
        q = V.check_array(queries, "queries", ndim=2, dtype=np.float32, shape=(None, self.dim))
        chunk_scores = q @ self.embeddings.T
        if not self._multi:
            return chunk_scores
        out = np.full((len(q), self.n_documents), -np.inf, dtype=np.float32)
        np.maximum.at(out.T, self.owner, chunk_scores.T)
        return out

    def search(self, queries, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` documents per query row: ``(doc_ids (n, k), scores (n, k))``, best first."""
        k = V.check_int(k, "k", low=1)
        scores = self.scores(queries)
        k = min(k, scores.shape[1])
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        return np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, 1)

    def save(self, folder) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "embeddings.npy", self.embeddings)
        np.save(folder / "owner.npy", self.owner)
        (folder / "index.json").write_text(json.dumps({"n_documents": self.n_documents}))
        return folder

    @classmethod
    def load(cls, folder) -> CorpusIndex:
        folder = Path(folder)
        if not (folder / "index.json").is_file():
            raise FileNotFoundError(f"folder: no index.json in {folder}")
        meta = json.loads((folder / "index.json").read_text())
        return cls(
            np.load(folder / "embeddings.npy"),
            np.load(folder / "owner.npy"),
            n_documents=meta["n_documents"],
        )


_IDENT = re.compile(r"[A-Za-z]+|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def code_tokenize(text: str) -> list[str]:
    """Lower-cased word tokens with snake_case and CamelCase split (``parseHTTPHeader_v2`` ->
    ``parse http header v 2``), the code-aware tokenisation of the BM25 reference row."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a string, got {type(text).__name__}")
    out = []
    for word in _IDENT.findall(text):
        out.extend(p.lower() for p in _CAMEL.findall(word))
    return out


class BM25Retriever:
    """BM25 (``bm25s``, Lucene variant, k1 = 1.5, b = 0.75) over :func:`code_tokenize` tokens."""

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1 = V.check_scalar(k1, "k1", low=0.0)
        self.b = V.check_probability(b, "b")
        self._bm25 = None

    def index(self, documents) -> BM25Retriever:
        import bm25s

        documents = _check_nonblank(documents, "documents")
        # a document of punctuation only has no word token; it stays in the index, unmatched
        tokens = [code_tokenize(d) or ["<empty>"] for d in documents]
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        self._bm25.index(tokens, show_progress=False)
        self.n_documents = len(documents)
        return self

    def search(self, queries, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        queries = _check_nonblank(queries, "queries")
        k = V.check_int(k, "k", low=1)
        if self._bm25 is None:
            raise RuntimeError("index: call index(documents) before search")
        k = min(k, self.n_documents)
        tokens = [code_tokenize(q) for q in queries]
        for i, t in enumerate(tokens):
            if not t:
                raise ValueError(f"queries[{i}] has no word token for BM25: {queries[i]!r}")
        # tokens outside the corpus vocabulary score 0 (bm25s ignores them)
        docs, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return np.asarray(docs, dtype=np.int64), np.asarray(scores, dtype=np.float32)
