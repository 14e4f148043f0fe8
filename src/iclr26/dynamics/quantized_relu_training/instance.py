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

from iclr26 import validation as V

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


def _check_domain_array(value, name: str, domain: QuantizedDomain, **kw) -> np.ndarray:
    """A finite, non-empty integer array with every entry in Z_d."""
    arr = V.check_array(value, name, **kw)
    if not domain.contains(arr):
        raise ValueError(f"{name} must hold integers in Z_{domain.d} = [{domain.lo}, {domain.hi}]")
    return arr.astype(np.int64)


def deduplicate(X: np.ndarray, Y: np.ndarray, domain: QuantizedDomain) -> DistinctData:
    """Distinct inputs and distinct (input, label) pairs with multiplicities, vectorised."""
    if not isinstance(domain, QuantizedDomain):
        raise TypeError(f"domain must be a QuantizedDomain, got {type(domain).__name__}")
    X = _check_domain_array(X, "X", domain, ndim=2)
    Y = _check_domain_array(Y, "Y", domain, ndim=2, n_rows=X.shape[0])
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
        X = _check_domain_array(X, "X", self.domain, ndim=2, shape=(None, architecture.alpha))
        Y = V.check_array(Y, "Y", ndim=(1, 2), n_rows=X.shape[0])
        if Y.ndim == 1:
            Y = Y[:, None]
        Y = _check_domain_array(Y, "Y", self.domain, shape=(X.shape[0], architecture.omega))
        ell = V.check_int(ell, "ell", low=0, allow_none=True)
        V.check_choice(output_activation, "output_activation", OUTPUT_ACTIVATIONS)
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
        if missing_w:
            raise ValueError(f"weights lack the edges {missing_w[:3]}")
        if missing_b:
            raise ValueError(f"biases lack the neurons {missing_b[:3]}")
        for name, values in (
            ("weights", [weights[e] for e in arch.edges]),
            ("biases", [biases[v] for v in arch.computed]),
        ):
            _check_domain_array(values, name, self.domain, ndim=1)
        w = {v: np.array([[weights[(u, v)] for u in arch.predecessors[v]]]) for v in arch.computed}
        b = {v: np.array([biases[v]]) for v in arch.computed}
        return w, b

    def predict(self, weights, biases, X=None) -> np.ndarray:
        """Outputs (n x omega) of the network given by ``weights``/``biases`` on X."""
        if X is None:
            X = self.X
        else:
            X = _check_domain_array(
                X, "X", self.domain, ndim=2, shape=(None, self.architecture.alpha)
            )
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
    if not isinstance(arch, Architecture):
        raise TypeError(f"arch must be an Architecture, got {type(arch).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
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
    noise = V.check_probability(noise, "noise")
    n = V.check_int(n, "n", low=1)
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
    n = V.check_int(n, "n", low=1)
    V.check_choice(output_activation, "output_activation", OUTPUT_ACTIVATIONS)
    rng = np.random.default_rng(seed)
    arch = layered(alpha, widths, omega)
    dom = QuantizedDomain(d)
    X = rng.integers(dom.lo, dom.hi + 1, size=(n, alpha))
    low = 0 if output_activation == "relu_d" else dom.lo
    Y = rng.integers(low, dom.hi + 1, size=(n, omega))
    return QNNTInstance(arch, X, Y, d, ell, output_activation)
