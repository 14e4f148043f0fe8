"""Sequence tasks for the two-stage procedure: 3-digit addition and character-level text.

A task offers ``sample(split, batch, gen)`` -> (inputs, targets, loss mask) over the splits
``wts`` (weights), ``arch`` (held-out data for the splines) and ``test``, plus ``evaluate``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

SPLITS = ("wts", "arch", "test")


def masked_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean cross-entropy of ``model(x)`` against ``y`` over the positions ``mask`` keeps;
    ``batch = (x, y, mask)`` as a task's ``sample`` returns it."""
    if not callable(model):
        raise TypeError(f"model must be callable (an nn.Module), got {type(model).__name__}")
    if not isinstance(batch, tuple | list) or len(batch) != 3:
        raise TypeError("batch must be a tuple (x, y, mask)")
    x, y, mask = batch
    V.check_tensor(x, "x", ndim=2, integer=True)
    V.check_tensor(y, "y", shape=tuple(x.shape), integer=True)
    V.check_tensor(mask, "mask", shape=tuple(x.shape))
    if not bool(mask.any()):
        raise ValueError("mask keeps no position: the loss would be 0/0")
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
    mask = mask.flatten().float()
    return (loss * mask).sum() / mask.sum()


METRICS = ("exact", "token")


class _AnswerTask:
    """Shared sampling and evaluation for tasks whose loss covers the last ``answer_len``
    targets of fixed-length sequences stored in ``self.data[split]``."""

    data: dict
    answer_len: int
    metric: str

    def _check(self) -> None:
        V.check_choice(self.metric, "metric", METRICS)
        V.check_scalar(
            self.arch_fraction, "arch_fraction", low=0, high=1, low_open=True, high_open=True
        )
        V.check_int(self.n_train, "n_train", low=10)
        V.check_int(self.n_test, "n_test", low=1)
        V.check_int(self.seed, "seed", low=0)

    def _split(self, seqs: torch.Tensor, n_train: int) -> None:
        n_arch = int(round(self.arch_fraction * n_train))
        n_wts = n_train - n_arch
        self.data = {"wts": seqs[:n_wts], "arch": seqs[n_wts:n_train], "test": seqs[n_train:]}

    def _batch(self, seqs: torch.Tensor):
        x, y = seqs[:, :-1], seqs[:, 1:]
        mask = torch.zeros_like(y, dtype=torch.bool)
        mask[:, -self.answer_len :] = True
        return x, y, mask

    def sample(self, split: str, batch: int, gen: torch.Generator):
        V.check_choice(split, "split", SPLITS)
        V.check_int(batch, "batch", low=1)
        seqs = self.data[split]
        return self._batch(seqs[torch.randint(0, len(seqs), (batch,), generator=gen)])

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str = "test") -> float:
        """Exact-match accuracy of the answer (teacher-forced = greedy when all digits are
        right), or with ``metric="token"`` the accuracy per answer token."""
        was = model.training
        model.eval()
        x, y, mask = self._batch(self.data[split])
        hit = model(x).argmax(-1) == y
        if self.metric == "exact":
            score = (hit | ~mask).all(-1).float().mean()
        else:
            score = hit[mask].float().mean()
        model.train(was)
        return float(score)


@dataclass
class AdditionTask(_AnswerTask):
    """``a+b=s`` with 3-digit operands (most-significant first) and the sum written
    least-significant first; loss on the answer digits only. Splits are disjoint pairs."""

    n_digits: int = 3
    n_train: int = 20_000
    n_test: int = 2_000
    arch_fraction: float = 0.2
    seed: int = 0
    metric: str = "exact"

    PLUS, EQUALS = 10, 11
    vocab_size: int = 12

    def __post_init__(self) -> None:
        V.check_int(self.n_digits, "n_digits", low=1)
        self._check()
        space = 10 ** (2 * self.n_digits)
        if self.n_train + self.n_test > space:
            raise ValueError("more examples requested than distinct pairs exist")
        rng = np.random.default_rng(self.seed)
        pairs = rng.choice(space, self.n_train + self.n_test, replace=False)
        a, b = pairs // 10**self.n_digits, pairs % 10**self.n_digits
        self._split(self._encode(a, b), self.n_train)

    @property
    def context(self) -> int:
        return 3 * self.n_digits + 2

    @property
    def answer_len(self) -> int:
        return self.n_digits + 1

    def _digits(self, v: np.ndarray, n: int) -> np.ndarray:
        return (v[:, None] // 10 ** np.arange(n)[None, :]) % 10  # least significant first

    def _encode(self, a: np.ndarray, b: np.ndarray) -> torch.Tensor:
        n = self.n_digits
        cols = [
            self._digits(a, n)[:, ::-1],
            np.full((len(a), 1), self.PLUS),
            self._digits(b, n)[:, ::-1],
            np.full((len(a), 1), self.EQUALS),
            self._digits(a + b, n + 1),
        ]
        return torch.from_numpy(np.concatenate(cols, axis=1).astype(np.int64))


@dataclass
class CopyTask(_AnswerTask):
    """COPY: ``length`` random symbols, a separator, then the same symbols again; loss on the
    copy only. Splits hold distinct sequences."""

    length: int = 6
    n_symbols: int = 10
    n_train: int = 20_000
    n_test: int = 2_000
    arch_fraction: float = 0.2
    seed: int = 0
    metric: str = "exact"

    def __post_init__(self) -> None:
        V.check_int(self.length, "length", low=1)
        V.check_int(self.n_symbols, "n_symbols", low=2)
        self._check()
        space = self.n_symbols**self.length
        if self.n_train + self.n_test > space:
            raise ValueError("more examples requested than distinct sequences exist")
        rng = np.random.default_rng(self.seed)
        codes = rng.choice(space, self.n_train + self.n_test, replace=False)
        sym = (codes[:, None] // self.n_symbols ** np.arange(self.length)[None, :]) % self.n_symbols
        sep = np.full((len(codes), 1), self.n_symbols)
        seqs = np.concatenate([sym, sep, sym], axis=1).astype(np.int64)
        self._split(torch.from_numpy(seqs), self.n_train)

    @property
    def vocab_size(self) -> int:
        return self.n_symbols + 1

    @property
    def context(self) -> int:
        return 2 * self.length

    @property
    def answer_len(self) -> int:
        return self.length


@dataclass
class TextTask:
    """Character-level next-token prediction on token-id streams per split."""

    streams: dict
    vocab_size: int
    context: int = 64
    n_eval_windows: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.streams, dict) or set(self.streams) != set(SPLITS):
            raise ValueError(f"streams must be a dict with the splits {SPLITS}")
        self.vocab_size = V.check_int(self.vocab_size, "vocab_size", low=2)
        self.context = V.check_int(self.context, "context", low=1)
        self.n_eval_windows = V.check_int(self.n_eval_windows, "n_eval_windows", low=1)
        for split, ids in self.streams.items():
            V.check_tensor(ids, f"streams[{split!r}]", ndim=1, integer=True)
            if ids.numel() < self.context + 2:
                raise ValueError(
                    f"streams[{split!r}] has {ids.numel()} tokens; a window needs "
                    f"context + 2 = {self.context + 2}"
                )

    def sample(self, split: str, batch: int, gen: torch.Generator):
        V.check_choice(split, "split", SPLITS)
        V.check_int(batch, "batch", low=1)
        ids = self.streams[split]
        starts = torch.randint(0, len(ids) - self.context - 1, (batch,), generator=gen)
        w = ids[starts[:, None] + torch.arange(self.context + 1)]
        x, y = w[:, :-1], w[:, 1:]
        return x, y, torch.ones_like(y, dtype=torch.bool)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str = "test") -> float:
        """Next-character accuracy on fixed evaluation windows."""
        was = model.training
        model.eval()
        x, y, _ = self.sample(split, self.n_eval_windows, torch.Generator().manual_seed(123))
        acc = float((model(x).argmax(-1) == y).float().mean())
        model.train(was)
        return acc


_CHARS = ["\n"] + [chr(c) for c in range(32, 127)]


def _encode_chars(text: str) -> torch.Tensor:
    """Printable ASCII and newline -> ids 0..95; any other character -> the id of ``?``."""
    table = np.full(128, _CHARS.index("?"), dtype=np.int64)
    for i, ch in enumerate(_CHARS):
        table[ord(ch)] = i
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    codes = np.where(codes < 128, codes, ord("?"))
    return torch.from_numpy(table[codes])


def text_task(
    kind: str = "prose", context: int = 64, n_eval_windows: int = 64, max_files: int | None = None
) -> TextTask:
    """A stdlib corpus (``"prose"``: the reference manual; ``"code"``: Python sources) at
    character level: train -> wts, val -> arch, test -> test. ``max_files`` caps the files
    read per split (the code corpus is about 10 M characters)."""
    from iclr26.data import stdlib_corpus

    V.check_choice(kind, "kind", ("prose", "code"))
    V.check_int(context, "context", low=1)
    V.check_int(n_eval_windows, "n_eval_windows", low=1)
    V.check_int(max_files, "max_files", low=1, allow_none=True)
    streams = {
        name: _encode_chars("\n\n".join(stdlib_corpus(split, kinds=(kind,), max_files=max_files)))
        for name, split in (("wts", "train"), ("arch", "val"), ("test", "test"))
    }
    return TextTask(streams, len(_CHARS), context, n_eval_windows)


def prose_task(context: int = 64, n_eval_windows: int = 64) -> TextTask:
    """The stdlib prose corpus, character level: train -> wts, val -> arch, test -> test."""
    return text_task("prose", context, n_eval_windows)
