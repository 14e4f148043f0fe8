"""Polyadic task generators: 2-fold function composition (Peng et al. 2024 style) and Match3
(Sanford et al. 2023). Tasks that need triples of tokens or a chain of look-ups, which one layer
of softmax self-attention cannot represent."""

from __future__ import annotations

import numpy as np

from iclr26.data.synthetic import as_rng

TYPE_F, TYPE_G, TYPE_QUERY = 0, 1, 2


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")


def function_composition(
    m: int = 12, n_samples: int = 1000, seed: int | np.random.Generator | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """2-fold composition: tokens ``(n_samples, 2m+1, 3)`` of ``(type, arg, val)`` and labels.

    Each sample draws fresh ``f, g: [m] -> [m]``; its ``2m`` pair tokens ``(f, a, f(a))`` and
    ``(g, b, g(b))`` appear in random order, followed by a query token ``(q, x, m)`` (``m`` is
    the "no value" id). The label is ``g(f(x))``. Tokens carry no positions.
    """
    _check_counts(m=m, n_samples=n_samples)
    if m < 2 or n_samples < 1:
        raise ValueError("need m >= 2 and n_samples >= 1")
    rng = as_rng(seed)
    f = rng.integers(0, m, size=(n_samples, m))
    g = rng.integers(0, m, size=(n_samples, m))
    x = rng.integers(0, m, size=n_samples)
    args = np.broadcast_to(np.arange(m), (n_samples, m))
    f_tok = np.stack([np.full((n_samples, m), TYPE_F), args, f], axis=-1)
    g_tok = np.stack([np.full((n_samples, m), TYPE_G), args, g], axis=-1)
    pairs = np.concatenate([f_tok, g_tok], axis=1)
    order = np.argsort(rng.random((n_samples, 2 * m)), axis=1)
    pairs = np.take_along_axis(pairs, order[..., None], axis=1)
    query = np.stack([np.full(n_samples, TYPE_QUERY), x, np.full(n_samples, m)], axis=-1)
    tokens = np.concatenate([pairs, query[:, None, :]], axis=1).astype(np.int64)
    labels = g[np.arange(n_samples), f[np.arange(n_samples), x]]
    return tokens, labels.astype(np.int64)


def match3(
    n: int = 16,
    modulus: int = 37,
    n_samples: int = 1000,
    seed: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Match3 (Sanford et al. 2023): ``y_i = 1`` iff some ``j, k`` have ``x_i + x_j + x_k = 0 mod M``.

    ``j`` and ``k`` range over all positions (repeats allowed). Returns integer sequences
    ``(n_samples, n)`` with entries in ``[0, modulus)`` and binary labels ``(n_samples, n)``.
    """
    _check_counts(n=n, modulus=modulus, n_samples=n_samples)
    if n < 1 or modulus < 2 or n_samples < 1:
        raise ValueError("need n >= 1, modulus >= 2 and n_samples >= 1")
    rng = as_rng(seed)
    x = rng.integers(0, modulus, size=(n_samples, n))
    pair_sums = (x[:, :, None] + x[:, None, :]) % modulus  # (s, j, k)
    present = np.zeros((n_samples, modulus), dtype=bool)
    np.put_along_axis(present, pair_sums.reshape(n_samples, -1), True, axis=1)
    needed = (-x) % modulus
    labels = np.take_along_axis(present, needed, axis=1)
    return x.astype(np.int64), labels.astype(np.int64)
