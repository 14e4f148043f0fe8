"""Three-digit addition as next-token prediction, with per-token skill labels.

A sequence is ``a1 a2 a3 + b1 b2 b3 = s1 s2 s3 s4`` (the 4-digit sum, most significant digit
first, thousands digit 0 or 1); the loss is taken on the four sum tokens only. Every sum token
is labelled by its digit position (1000s, 100s, 10s, 1s) and its carry-in: whether the column
to its right produces a carry (the thousands digit *is* that carry; the ones digit has none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

PLUS, EQUALS = 10, 11
VOCAB = 12
POSITIONS = ("1000s", "100s", "10s", "1s")


@dataclass(frozen=True)
class AdditionTask:
    """Token sequences for ``n_digits``-digit addition (default 3)."""

    n_digits: int = 3

    def __post_init__(self) -> None:
        V.check_int(self.n_digits, "n_digits", low=1, high=6)

    @property
    def sum_digits(self) -> int:
        return self.n_digits + 1

    @property
    def seq_len(self) -> int:
        return 2 * self.n_digits + 2 + self.sum_digits

    @property
    def answer_slice(self) -> slice:
        """Positions of the *inputs* whose next-token targets are the sum digits."""
        start = 2 * self.n_digits + 1
        return slice(start, start + self.sum_digits)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n random operand pairs (a, b)."""
        n = V.check_int(n, "n", low=1)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        hi = 10**self.n_digits
        return rng.integers(0, hi, n), rng.integers(0, hi, n)

    def encode(self, a: np.ndarray, b: np.ndarray) -> torch.Tensor:
        """Token ids (n, seq_len)."""
        a, b = self._operands(a, b)
        k = self.n_digits

        def digits(x, width):
            return (x[:, None] // 10 ** np.arange(width - 1, -1, -1)) % 10

        seq = np.concatenate(
            [
                digits(a, k),
                np.full((len(a), 1), PLUS),
                digits(b, k),
                np.full((len(a), 1), EQUALS),
                digits(a + b, k + 1),
            ],
            axis=1,
        )
        return torch.as_tensor(seq, dtype=torch.long)

    def carry_labels(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Carry-in (0/1) of each sum token (n, n_digits + 1), most significant first."""
        a, b = self._operands(a, b)
        k = self.n_digits
        carries = np.zeros((len(a), k + 1), dtype=np.int64)  # column c (0 = ones) carry-in
        carry = np.zeros(len(a), dtype=np.int64)
        for col in range(k):
            carries[:, col] = carry
            s = (a // 10**col) % 10 + (b // 10**col) % 10 + carry
            carry = (s >= 10).astype(np.int64)
        carries[:, k] = carry
        return carries[:, ::-1].copy()

    def _operands(self, a, b) -> tuple[np.ndarray, np.ndarray]:
        hi = 10**self.n_digits - 1
        a = V.check_array(a, "a", ndim=1, low=0, high=hi)
        b = V.check_array(b, "b", ndim=1, n_rows=a.shape[0], low=0, high=hi)
        for name, x in (("a", a), ("b", b)):
            if x.dtype.kind == "f" and not np.all(x == np.round(x)):
                raise ValueError(f"{name} must hold integers")
        return a.astype(np.int64), b.astype(np.int64)

    def position_labels(self, n: int) -> np.ndarray:
        n = V.check_int(n, "n", low=1)
        return np.tile(np.arange(self.sum_digits), (n, 1))
