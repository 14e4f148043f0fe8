"""Character-level text for NRGPT: the standard library's English prose (or a user file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from iclr26 import validation as V
from iclr26.data import stdlib_corpus


@dataclass
class CharCorpus:
    """A character text and its vocabulary (which holds the unknown marker ``?``)."""

    text: str
    vocab: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"text must be a str, got {type(self.text).__name__}")
        if not self.text:
            raise ValueError("text is empty")
        if isinstance(self.vocab, str) or not all(
            isinstance(ch, str) and len(ch) == 1 for ch in self.vocab
        ):
            raise TypeError("vocab must be a sequence of single characters")
        self.vocab = tuple(self.vocab)
        if len(set(self.vocab)) != len(self.vocab):
            raise ValueError("vocab has repeated characters")
        if "?" not in self.vocab:
            raise ValueError("vocab must hold the unknown marker '?'")

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> torch.Tensor:
        index = {ch: i for i, ch in enumerate(self.vocab)}
        unknown = index["?"]
        return torch.tensor([index.get(ch, unknown) for ch in text], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def split(self, n_train: int, n_val: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The first ``n_train`` characters and the next ``n_val``, encoded."""
        n_train = V.check_int(n_train, "n_train", low=2)
        n_val = V.check_int(n_val, "n_val", low=2)
        if n_train < 2 or n_val < 2 or n_train + n_val > len(self.text):
            raise ValueError(f"cannot take {n_train}+{n_val} characters of {len(self.text)}")
        ids = self.encode(self.text[: n_train + n_val])
        return ids[:n_train], ids[n_train:]


def char_corpus(path: str | Path | None = None, max_vocab: int = 127) -> CharCorpus:
    """Character corpus: the stdlib reference-manual prose, or the text file at ``path``.

    Printable ASCII plus newline form the vocabulary; other characters map to ``?``.
    """
    max_vocab = V.check_int(max_vocab, "max_vocab", low=1)
    if path is not None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"path: no text file at {path}")
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    else:
        text = "\n\n".join(stdlib_corpus("train", kinds=("prose",)))
    if not text:
        raise ValueError("path: the corpus is empty")
    vocab = ["\n"] + [chr(c) for c in range(32, 127)]
    vocab = tuple(vocab[:max_vocab])
    if "?" not in vocab:
        raise ValueError(f"max_vocab={max_vocab} is too small to hold the unknown marker '?'")
    allowed = set(vocab)
    text = "".join(ch if ch in allowed else "?" for ch in text)
    return CharCorpus(text, vocab)


def random_windows(
    ids: torch.Tensor, batch: int, length: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` random (input, next-char target) windows of ``length`` characters."""
    if len(ids) <= length + 1:
        raise ValueError("text shorter than the context")
    starts = torch.randint(0, len(ids) - length - 1, (batch,), generator=gen)
    offsets = torch.arange(length + 1)
    windows = ids[starts[:, None] + offsets]
    return windows[:, :-1], windows[:, 1:]
