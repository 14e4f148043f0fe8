"""Token features from a shared text encoder, with character offsets, cached per text.

Both stages of the pipeline read the same frozen encoder outputs (the paper fine-tunes SciBERT;
the offline stand-in is the shared MiniLM, a 6-layer BERT). :class:`TokenEncoder` returns, for
each text, the last hidden states of its word pieces (special tokens dropped) and their
``[start, end)`` character offsets. A text longer than the model's context is split into
consecutive windows of ``max_length - 2`` word pieces that are encoded separately and joined
(counted in ``n_chunked``); nothing is truncated. Features are kept in memory per text and, with
``cache=True``, on disk under the package cache directory, so claim re-runs skip the encoder.

:class:`HashingEncoder` is a dependency-free contextual stand-in (seeded word vectors mixed with
their neighbours) for tests and examples that must run in milliseconds.
"""

from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np

from iclr26 import validation as V

__all__ = ["TokenEncoder", "HashingEncoder", "check_texts"]


def check_texts(texts, name: str = "texts") -> list[str]:
    if isinstance(texts, str | bytes):
        raise TypeError(f"{name}: expected a list of strings, got one string (wrap it in a list)")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"{name}: expected a list of strings, got {type(texts).__name__}") from None
    if not texts:
        raise ValueError(f"{name} is empty: need at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
        if not t.strip():
            raise ValueError(f"{name}[{i}]: the text is empty")
    return texts


class _FeatureCache:
    dim: int

    def _init_cache(self) -> None:
        self._memory: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def encode(self, texts) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(features (T, dim) float32, offsets (T, 2) int64), ...]`` per text."""
        texts = check_texts(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._memory))
        if missing:
            for text, out in zip(missing, self._encode_many(missing)):
                self._memory[text] = out
        return [self._memory[t] for t in texts]

    def forget(self) -> None:
        self._memory.clear()


class HashingEncoder(_FeatureCache):
    """Seeded per-word vectors (``\\w+`` words and punctuation), each mixed with half of its
    neighbours' vectors so that a token's feature depends on its context."""

    def __init__(self, dim: int = 32, seed: int = 0):
        self.dim = V.check_int(dim, "dim", low=2)
        self.seed = V.check_int(seed, "seed", low=0)
        self.name = f"hash{self.dim}-{self.seed}"
        self.n_chunked = 0
        self._init_cache()

    def _vector(self, word: str) -> np.ndarray:
        rng = np.random.default_rng([self.seed, zlib.crc32(word.lower().encode())])
        return rng.standard_normal(self.dim).astype(np.float32)

    def _encode_many(self, texts):
        out = []
        for text in texts:
            found = [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
            base = np.stack([self._vector(text[s:e]) for s, e in found])
            mixed = base.copy()
            mixed[1:] += 0.5 * base[:-1]
            mixed[:-1] += 0.5 * base[1:]
            out.append((mixed, np.asarray(found, dtype=np.int64)))
        return out


class TokenEncoder(_FeatureCache):
    """Frozen Hugging Face encoder: ``"minilm"`` (the shared all-MiniLM-L6-v2) or any name or
    path ``AutoModel.from_pretrained`` accepts (e.g. ``allenai/scibert_scivocab_uncased``)."""

    def __init__(
        self,
        name: str = "minilm",
        *,
        max_length: int = 256,
        batch_size: int = 32,
        device: str = "cpu",
        cache: bool = False,
    ):
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        self.name = name
        self.max_length = V.check_int(max_length, "max_length", low=8)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.device = str(device)
        self.cache = V.check_bool(cache, "cache")
        self.n_chunked = 0
        self._model = None
        self._tokenizer = None
        self._init_cache()

    def _load(self):
        if self._model is None:
            if self.name == "minilm":
                from iclr26.models.text import load_minilm

                self._model, self._tokenizer = load_minilm(self.device)
            else:
                from transformers import AutoModel, AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(self.name)
                self._model = AutoModel.from_pretrained(self.name).eval().to(self.device)
                for p in self._model.parameters():
                    p.requires_grad_(False)
            self.dim = int(self._model.config.hidden_size)
        return self._model, self._tokenizer

    @property
    def dim(self) -> int:  # type: ignore[override]
        if "_dim" not in self.__dict__:
            self._load()
        return self.__dict__["_dim"]

    @dim.setter
    def dim(self, value: int) -> None:
        self.__dict__["_dim"] = value

    def _disk_path(self, texts):
        from iclr26.data.stdlib import cache_dir

        digest = hashlib.sha1((self.name + str(self.max_length)).encode())
        for t in texts:
            digest.update(t.encode())
            digest.update(b"\0")
        return cache_dir() / "znerd_hgnet" / f"features-{digest.hexdigest()[:20]}.npz"

    def _encode_many(self, texts):
        if self.cache:
            path = self._disk_path(texts)
            if path.is_file():
                data = np.load(path)
                feats, offs, lens = data["features"], data["offsets"], data["lengths"]
                self.dim = int(data["dim"])
                cuts = np.cumsum(lens)[:-1]
                # a text's features hold all its word pieces, so the windowed ones are those
                # longer than one window (counted as if the model had run)
                self.n_chunked += int((lens > self.max_length - 2).sum())
                return list(zip(np.split(feats, cuts), np.split(offs, cuts)))
        out = self._run_model(texts)
        if self.cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                path,
                features=np.concatenate([f for f, _ in out]),
                offsets=np.concatenate([o for _, o in out]),
                lengths=np.asarray([len(f) for f, _ in out]),
                dim=np.asarray(self.dim),
            )
        return out

    def _run_model(self, texts):
        import torch

        model, tok = self._load()
        window = self.max_length - 2
        pieces: list[tuple[int, list[int], np.ndarray]] = []  # (text index, ids, offsets)
        for i, text in enumerate(texts):
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, offs = enc["input_ids"], np.asarray(enc["offset_mapping"], dtype=np.int64)
            if len(ids) == 0:
                raise ValueError(f"texts[{i}]: the tokenizer produced no tokens")
            if len(ids) > window:
                self.n_chunked += 1
            for s in range(0, len(ids), window):
                pieces.append((i, ids[s : s + window], offs[s : s + window]))
        order = sorted(range(len(pieces)), key=lambda k: len(pieces[k][1]))
        feats: list[np.ndarray | None] = [None] * len(pieces)
        cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id or 0
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                idx = order[b : b + self.batch_size]
                longest = max(len(pieces[k][1]) for k in idx) + 2
                input_ids = torch.full((len(idx), longest), pad, dtype=torch.long)
                attention = torch.zeros((len(idx), longest), dtype=torch.long)
                for row, k in enumerate(idx):
                    seq = [cls, *pieces[k][1], sep]
                    input_ids[row, : len(seq)] = torch.tensor(seq)
                    attention[row, : len(seq)] = 1
                hidden = (
                    model(
                        input_ids=input_ids.to(self.device),
                        attention_mask=attention.to(self.device),
                    )
                    .last_hidden_state.float()
                    .cpu()
                    .numpy()
                )
                for row, k in enumerate(idx):
                    feats[k] = hidden[row, 1 : 1 + len(pieces[k][1])]
        out_f: list[list[np.ndarray]] = [[] for _ in texts]
        out_o: list[list[np.ndarray]] = [[] for _ in texts]
        for k, (i, _, offs) in enumerate(pieces):
            out_f[i].append(feats[k])
            out_o[i].append(offs)
        return [
            (np.concatenate(f).astype(np.float32), np.concatenate(o)) for f, o in zip(out_f, out_o)
        ]
