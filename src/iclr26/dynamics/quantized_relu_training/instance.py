"""Training instances of d-QNNT: an architecture, data in Z_d^alpha x Z_d^omega, an error budget.

Every solver first deduplicates the data: p <= min(n, d^alpha) distinct inputs and, per
distinct (input, label) pair, its multiplicity. The error of a network is the number of data
points whose output vector differs from the label; on the deduplicated data it is
sum over pairs of count * [output(x) != y].
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .architecture import Architecture, layered
from .domain import OUTPUT_ACTIVATIONS, QuantizedDomain


@dataclass(frozen=True)
class DistinctData:
    """Deduplicated data: distinct inputs ``inputs`` (p x alpha) and distinct (input, label)
    pairs given by ``pair_input`` (index into inputs), ``pair_label`` (q x omega), ``pair_count``."""

    inputs: np.ndarray
    pair_input: np.ndarray
    pair_label: np.ndarray
    pair_count: np.ndarray

    @property
    def p(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def n(self) -> int:
        return int(self.pair_count.sum())


def _row_codes(rows: np.ndarray, base: int, lo: int) -> np.ndarray | None:
    """Integer code of each row in base ``base`` (None when it would overflow int64)."""
    if rows.shape[1] * np.log2(base) >= 62:
        return None
    weights = base ** np.arange(rows.shape[1], dtype=np.int64)
    return (rows.astype(np.int64) - lo) @ weights


def deduplicate(X: np.ndarray, Y: np.ndarray, domain: QuantizedDomain) -> DistinctData:
    """Distinct inputs and distinct (input, label) pairs with multiplicities, vectorised."""
    joint = np.concatenate([X, Y], axis=1)
    codes = _row_codes(joint, domain.d, domain.lo)
    if codes is None:
        pairs, pair_count = np.unique(joint, axis=0, return_counts=True)
    else:
        uniq, first, pair_count = np.unique(codes, return_index=True, return_counts=True)
        pairs = joint[first]
    alpha = X.shape[1]
    in_codes = _row_codes(pairs[:, :alpha], domain.d, domain.lo)
    if in_codes is None:
        inputs, pair_input = np.unique(pairs[:, :alpha], axis=0, return_inverse=True)
    else:
        _, first_in, pair_input = np.unique(in_codes, return_index=True, return_inverse=True)
        inputs = pairs[first_in, :alpha]
    return DistinctData(
        inputs=inputs.astype(np.int64),
        pair_input=pair_input.reshape(-1).astype(np.int64),
        pair_label=pairs[:, alpha:].astype(np.int64),
        pair_count=pair_count.astype(np.int64),
    )


def forward_batch(
    arch: Architecture,
    domain: QuantizedDomain,
    inputs: np.ndarray,
    weights: Mapping[Hashable, np.ndarray],
    biases: Mapping[Hashable, np.ndarray],
    output_activation: str = "relu_d",
) -> np.ndarray:
    """Outputs of a batch of C networks on p inputs: array (C, omega, p).

    ``weights[v]`` is (C, indeg(v)) aligned with ``arch.predecessors[v]``; ``biases[v]`` is (C,).
    """
    values: dict[Hashable, np.ndarray] = {
        u: inputs[:, i].astype(np.int32)[None, :] for i, u in enumerate(arch.inputs)
    }
    outputs = set(arch.outputs)
    for v in arch.computed:
        w = np.asarray(weights[v], dtype=np.int32)
        pre = -np.asarray(biases[v], dtype=np.int32)[:, None]
        for k, u in enumerate(arch.predecessors[v]):
            pre = pre + w[:, k, None] * values[u]
        kind = output_activation if v in outputs else "relu_d"
        values[v] = domain.activate(pre, kind)
    batch = max(np.asarray(biases[v]).shape[0] for v in arch.computed)
    out = [np.broadcast_to(values[v], (batch, inputs.shape[0])) for v in arch.outputs]
    return np.stack(out, axis=1)


def pair_errors(outputs: np.ndarray, data: DistinctData, positions: Sequence[int] | None = None):
    """Errors of a batch of output signatures (C, k, p) on the pairs; ``positions`` says which
    outputs the k rows are (default all)."""
    labels = data.pair_label if positions is None else data.pair_label[:, list(positions)]
    at_pairs = outputs[:, :, data.pair_input]  # (C, k, q)
    wrong = np.any(at_pairs != labels.T[None, :, :], axis=1)
    return wrong.astype(np.int64) @ data.pair_count


class QNNTInstance:
    """One d-QNNT instance: is there an assignment with at most ``ell`` errors on (X, Y)?

    ``ell=None`` asks for the minimum error. ``output_activation`` is ReLU_d (the paper's
    definition; labels below zero are then unreachable) or ``"clip"`` into Z_d.
    """

    def __init__(
        self,
        architecture: Architecture,
        X,
        Y,
        d: int = 2,
        ell: int | None = None,
        output_activation: str = "relu_d",
    ) -> None:
        if not isinstance(architecture, Architecture):
            raise TypeError("architecture must be an Architecture (see layered())")
        self.domain = QuantizedDomain(d)
        X = np.asarray(X)
        Y = np.asarray(Y)
        if Y.ndim == 1:
            Y = Y[:, None]
        if X.ndim != 2 or X.shape[1] != architecture.alpha:
            raise ValueError(f"X must have shape (n, {architecture.alpha}), got {X.shape}")
        if Y.ndim != 2 or Y.shape != (X.shape[0], architecture.omega):
            raise ValueError(
                f"Y must have shape ({X.shape[0]}, {architecture.omega}), got {Y.shape}"
            )
        if X.shape[0] == 0:
            raise ValueError("the training set is empty")
        for name, arr in (("X", X), ("Y", Y)):
            if not self.domain.contains(arr):
                raise ValueError(
                    f"{name} has entries outside Z_{d} = [{self.domain.lo}, {self.domain.hi}]"
                )
        if ell is not None and (not isinstance(ell, (int, np.integer)) or ell < 0):
            raise ValueError(f"ell must be a non-negative integer or None, got {ell!r}")
        if output_activation not in OUTPUT_ACTIVATIONS:
            raise ValueError(f"output_activation must be one of {OUTPUT_ACTIVATIONS}")
        self.architecture = architecture
        self.X = X.astype(np.int64)
        self.Y = Y.astype(np.int64)
        self.d = int(d)
        self.ell = None if ell is None else int(ell)
        self.output_activation = output_activation
        self._distinct: DistinctData | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    def distinct(self) -> DistinctData:
        if self._distinct is None:
            self._distinct = deduplicate(self.X, self.Y, self.domain)
        return self._distinct

    def _check_parameters(self, weights, biases) -> tuple[dict, dict]:
        arch = self.architecture
        if not isinstance(weights, Mapping) or not isinstance(biases, Mapping):
            raise TypeError("weights and biases must be mappings {(u, v): w} and {v: b}")
        missing_w = [e for e in arch.edges if e not in weights]
        missing_b = [v for v in arch.computed if v not in biases]
        if missing_w or missing_b:
            raise ValueError(f"missing weights {missing_w[:3]} / biases {missing_b[:3]}")
        values = [weights[e] for e in arch.edges] + [biases[v] for v in arch.computed]
        if not self.domain.contains(np.asarray(values)):
            raise ValueError(
                f"weights/biases must be integers in Z_{self.d} = [{self.domain.lo}, {self.domain.hi}]"
            )
        w = {v: np.array([[weights[(u, v)] for u in arch.predecessors[v]]]) for v in arch.computed}
        b = {v: np.array([biases[v]]) for v in arch.computed}
        return w, b

    def predict(self, weights, biases, X=None) -> np.ndarray:
        """Outputs (n x omega) of the network given by ``weights``/``biases`` on X."""
        X = self.X if X is None else np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.architecture.alpha or not self.domain.contains(X):
            raise ValueError(f"X must be (n, {self.architecture.alpha}) with entries in Z_{self.d}")
        w, b = self._check_parameters(weights, biases)
        out = forward_batch(self.architecture, self.domain, X, w, b, self.output_activation)
        return out[0].T

    def evaluate(self, weights, biases) -> int:
        """Number of training points (on the raw data) whose output differs from the label."""
        return int(np.any(self.predict(weights, biases) != self.Y, axis=1).sum())

    def __repr__(self) -> str:
        return f"QNNTInstance(n={self.n}, d={self.d}, ell={self.ell}, {self.architecture!r})"


def random_network(arch: Architecture, d: int, rng: np.random.Generator) -> tuple[dict, dict]:
    """Weights and biases drawn uniformly from Z_d."""
    dom = QuantizedDomain(d)
    weights = {e: int(rng.integers(dom.lo, dom.hi + 1)) for e in arch.edges}
    biases = {v: int(rng.integers(dom.lo, dom.hi + 1)) for v in arch.computed}
    return weights, biases


def planted_instance(
    alpha: int,
    widths: Sequence[int],
    omega: int,
    n: int,
    d: int = 2,
    noise: float = 0.0,
    seed: int | np.random.Generator | None = 0,
    ell: int | None = None,
    output_activation: str = "relu_d",
) -> QNNTInstance:
    """Inputs uniform in Z_d^alpha, labels from a random quantized network of the same
    architecture (error 0 attainable when ``noise == 0``); a ``noise`` fraction of labels is
    redrawn uniformly."""
    if not 0.0 <= noise <= 1.0:
        raise ValueError("noise must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    arch = layered(alpha, widths, omega)
    dom = QuantizedDomain(d)
    X = rng.integers(dom.lo, dom.hi + 1, size=(n, alpha))
    teacher = QNNTInstance(arch, X, np.zeros((n, omega), dtype=int), d, None, output_activation)
    Y = teacher.predict(*random_network(arch, d, rng))
    flip = rng.random(n) < noise
    Y[flip] = rng.integers(dom.lo, dom.hi + 1, size=(int(flip.sum()), omega))
    return QNNTInstance(arch, X, Y, d, ell, output_activation)


def random_labels_instance(
    alpha: int,
    widths: Sequence[int],
    omega: int,
    n: int,
    d: int = 2,
    seed: int | np.random.Generator | None = 0,
    ell: int | None = None,
    output_activation: str = "relu_d",
) -> QNNTInstance:
    """Inputs and labels uniform in Z_d (labels restricted to the output range)."""
    rng = np.random.default_rng(seed)
    arch = layered(alpha, widths, omega)
    dom = QuantizedDomain(d)
    X = rng.integers(dom.lo, dom.hi + 1, size=(n, alpha))
    low = 0 if output_activation == "relu_d" else dom.lo
    Y = rng.integers(low, dom.hi + 1, size=(n, omega))
    return QNNTInstance(arch, X, Y, d, ell, output_activation)
