"""Verifiable multi-step arithmetic with a text and a multimodal face (the small analogue of
ReVisual-R1's math-reasoning data).

A problem ``(a op b) op c`` with single-digit operands and ops in ``{+, -, *}`` is posed either
as text (``(3+4)*5=``) or with every operand replaced by an ``<img>`` slot filled by a real
handwritten digit from scikit-learn's bundled ``load_digits`` (8x8, 1 797 scans). Images are
split per class into train and test scans, so test problems use unseen handwriting.
Chain-of-thought targets spell the perception and each step:
``<think>3+4=7;7*5=35</think><answer>35</answer>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V

OPS = ("+", "-", "*")
IMAGE_TOKEN = "<img>"
MODALITIES = ("text", "image")
SPLITS = ("train", "test")


def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


@dataclass
class Problem:
    """One problem: operands, ops (applied left to right with brackets), the answer, the
    modality, and for ``image`` problems one 8x8 scan per operand (values 0..16)."""

    operands: tuple[int, ...]
    ops: tuple[str, ...]
    modality: str = "text"
    images: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.operands, str) or len(self.operands) == 0:
            raise ValueError("operands must be a non-empty sequence of digits")
        self.operands = tuple(V.check_int(x, "operands", low=0, high=9) for x in self.operands)
        self.ops = tuple(V.check_choice(o, "ops", OPS) for o in self.ops)
        if len(self.ops) != len(self.operands) - 1:
            raise ValueError(
                f"ops must have one entry fewer than operands, got {len(self.ops)} "
                f"for {len(self.operands)} operands"
            )
        V.check_choice(self.modality, "modality", MODALITIES)
        if self.modality == "image":
            if self.images is None:
                raise ValueError("images are required for an image problem")
            self.images = V.check_array(
                self.images, "images", ndim=2, shape=(len(self.operands), 64), low=0.0, high=16.0
            ).astype(np.float32)
        elif self.images is not None:
            raise ValueError("images must be None for a text problem")

    @property
    def answer(self) -> int:
        value = self.operands[0]
        for op, x in zip(self.ops, self.operands[1:]):
            value = _apply(value, op, x)
        return value

    def _expr(self, symbols: list[str]) -> str:
        expr = symbols[0]
        for i, (op, x) in enumerate(zip(self.ops, symbols[1:])):
            expr = f"{expr}{op}{x}"
            if i < len(self.ops) - 1:
                expr = f"({expr})"
        return expr

    @property
    def prompt(self) -> str:
        symbols = [str(x) for x in self.operands]
        if self.modality == "image":
            symbols = [IMAGE_TOKEN] * len(self.operands)
        return self._expr(symbols) + "="

    @property
    def chain_of_thought(self) -> str:
        """``<think>`` trace (each step ``x op y = t``; steps joined by ``;``) and the answer."""
        steps, value = [], self.operands[0]
        for op, x in zip(self.ops, self.operands[1:]):
            new = _apply(value, op, x)
            steps.append(f"{value}{op}{x}={new}")
            value = new
        return f"<think>{';'.join(steps)}</think>{self.direct_answer}"

    @property
    def direct_answer(self) -> str:
        return f"<answer>{self.answer}</answer>"


class ArithmeticReasoningTasks:
    """Seeded generator of :class:`Problem` s over the bundled handwritten digits.

    ``n_steps``: how many operations per problem (an int, or a tuple to draw from uniformly);
    ``ops``: the operations drawn from;
    ``test_fraction``: share of each digit class's scans kept for test problems."""

    def __init__(
        self, seed: int = 0, n_steps=(1, 2), test_fraction: float = 0.3, ops: Sequence[str] = OPS
    ):
        self.seed = V.check_int(seed, "seed", low=0)
        if isinstance(ops, str) or len(ops) == 0:
            raise ValueError("ops must be a non-empty list drawn from +, -, *")
        self.ops = tuple(V.check_choice(o, "ops", OPS) for o in ops)
        steps = (n_steps,) if isinstance(n_steps, int | np.integer) else tuple(n_steps)
        if not steps:
            raise ValueError("n_steps must name at least one step count")
        self.n_steps = tuple(V.check_int(s, "n_steps", low=1, high=3) for s in steps)
        self.test_fraction = V.check_scalar(
            test_fraction, "test_fraction", low=0.0, high=1.0, low_open=True, high_open=True
        )
        from sklearn.datasets import load_digits

        digits = load_digits()
        rng = np.random.default_rng(self.seed)
        self._scans: dict[str, list[np.ndarray]] = {"train": [], "test": []}
        for d in range(10):
            rows = np.flatnonzero(digits.target == d)
            rng.shuffle(rows)
            n_test = max(1, round(len(rows) * self.test_fraction))
            self._scans["test"].append(digits.data[rows[:n_test]].astype(np.float32))
            self._scans["train"].append(digits.data[rows[n_test:]].astype(np.float32))
        self.rng = rng

    def scans(self, digit: int, split: str = "train") -> np.ndarray:
        """All scans of ``digit`` in ``split`` (``[n, 64]``, values 0..16)."""
        V.check_choice(split, "split", SPLITS)
        return self._scans[split][V.check_int(digit, "digit", low=0, high=9)]

    def sample(
        self,
        n: int,
        split: str = "train",
        modality: str = "image",
        n_steps=None,
        rng: np.random.Generator | None = None,
    ) -> list[Problem]:
        """``n`` random problems; image problems draw a fresh scan of ``split`` per operand."""
        n = V.check_int(n, "n", low=1)
        V.check_choice(split, "split", SPLITS)
        V.check_choice(modality, "modality", MODALITIES)
        rng = self.rng if rng is None else rng
        if n_steps is None:
            choices = self.n_steps
        elif isinstance(n_steps, int | np.integer):
            choices = (V.check_int(n_steps, "n_steps", low=1, high=3),)
        else:
            choices = tuple(V.check_int(s, "n_steps", low=1, high=3) for s in n_steps)
        out = []
        for _ in range(n):
            k = int(rng.choice(choices))
            operands = tuple(int(x) for x in rng.integers(0, 10, size=k + 1))
            ops = tuple(str(o) for o in rng.choice(self.ops, size=k))
            images = None
            if modality == "image":
                images = np.stack(
                    [
                        self._scans[split][d][rng.integers(len(self._scans[split][d]))]
                        for d in operands
                    ]
                )
            out.append(Problem(operands, ops, modality, images))
        return out

    def captions(self, n: int, split: str = "train", rng=None) -> list[Problem]:
        """Perception examples: a single scan, prompt ``<img>=`` and answer the digit."""
        n = V.check_int(n, "n", low=1)
        V.check_choice(split, "split", SPLITS)
        rng = self.rng if rng is None else rng
        out = []
        for d in rng.integers(0, 10, size=n):
            d = int(d)
            scan = self._scans[split][d][rng.integers(len(self._scans[split][d]))]
            out.append(Problem((d,), (), "image", scan[None]))
        return out
