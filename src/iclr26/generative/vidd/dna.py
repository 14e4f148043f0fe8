"""Synthetic "regulatory DNA": an order-1 Markov background with planted PWM motifs, a
non-differentiable motif-grammar reward oracle, naturalness and diversity metrics, and the
reward-query counter that every fine-tuning method goes through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from iclr26 import validation as V

ALPHABET = "ACGT"
MOTIF_LEN = 6
# consensus of the three motifs M1..M3 (their PWMs put 0.85 on the consensus base)
CONSENSUS = ("TGACGT", "CCAATG", "GGGCGG")

__all__ = [
    "ALPHABET",
    "MotifReward",
    "RewardOracle",
    "RayRewardPool",
    "decode",
    "encode",
    "kmer_correlation",
    "make_dna_dataset",
    "pairwise_diversity",
]


def encode(seqs: Sequence[str]) -> np.ndarray:
    """Strings over ``ACGT`` -> int array (n, L)."""
    if isinstance(seqs, str) or not isinstance(seqs, Sequence):
        raise TypeError("seqs must be a sequence of strings")
    if len(seqs) == 0:
        raise ValueError("seqs is empty")
    lut = np.full(256, -1, dtype=np.int64)
    for i, ch in enumerate(ALPHABET):
        lut[ord(ch)] = i
    rows = [lut[np.frombuffer(str(s).encode("ascii", "replace"), dtype=np.uint8)] for s in seqs]
    if len({len(r) for r in rows}) != 1:
        raise ValueError("seqs must all have the same length")
    out = np.stack(rows)
    if (out < 0).any():
        raise ValueError(f"seqs contain characters outside {ALPHABET!r}")
    return out


def decode(tokens: Any) -> list[str]:
    """Int array (n, L) over ``0..3`` -> strings."""
    arr = V.check_array(tokens, "tokens", ndim=2, dtype=None, low=0, high=3)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integers, got {arr.dtype}")
    chars = np.frombuffer(ALPHABET.encode(), dtype=np.uint8)[arr]
    return [row.tobytes().decode() for row in chars]


def _pwms(strength: float = 0.85) -> np.ndarray:
    pwm = np.full((len(CONSENSUS), MOTIF_LEN, 4), (1 - strength) / 3)
    for m, cons in enumerate(CONSENSUS):
        for j, ch in enumerate(cons):
            pwm[m, j, ALPHABET.index(ch)] = strength
    return pwm


def _background(gc: float) -> tuple[np.ndarray, np.ndarray]:
    base = np.array([(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2])  # A C G T
    # mild order-1 dependence: repeat the previous base a little more often
    trans = 0.6 * base[None, :] + 0.4 * np.eye(4)
    trans /= trans.sum(1, keepdims=True)
    return base, trans


def make_dna_dataset(
    n: int = 20000, length: int = 32, gc: float = 0.45, max_motifs: int = 3, seed: int = 0
) -> np.ndarray:
    """``n`` sequences (int array (n, length)) from an order-1 Markov background with
    GC content ``gc`` and 0..``max_motifs`` motif insertions drawn from the PWMs of M1..M3."""
    n = V.check_int(n, "n", low=1)
    length = V.check_int(length, "length", low=MOTIF_LEN)
    gc = V.check_probability(gc, "gc", open_low=True, open_high=True)
    max_motifs = V.check_int(max_motifs, "max_motifs", low=0)
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    base, trans = _background(gc)
    x = np.empty((n, length), dtype=np.int64)
    x[:, 0] = rng.choice(4, size=n, p=base)
    cum = trans.cumsum(1)
    for i in range(1, length):
        u = rng.random(n)
        x[:, i] = (u[:, None] > cum[x[:, i - 1]]).sum(1)
    pwm = _pwms()
    counts = rng.integers(0, max_motifs + 1, size=n)
    for k in range(max_motifs):
        rows = np.flatnonzero(counts > k)
        which = rng.integers(0, len(CONSENSUS), size=rows.size)
        pos = rng.integers(0, length - MOTIF_LEN + 1, size=rows.size)
        for j in range(MOTIF_LEN):
            cum_m = pwm[which, j].cumsum(1)
            u = rng.random(rows.size)
            x[rows, pos + j] = (u[:, None] > cum_m).sum(1)
    return np.minimum(x, 3)


class MotifReward:
    """The synthetic oracle: ``r(x) = #non-overlapping M1 hits + bonus * [an M1 hit followed
    by an M3 hit whose start lies gap_low..gap_high bp after the M1 hit ends] - gc_penalty *
    |GC(x) - gc_target|``. A hit is a window with PWM log-odds (bits) above ``threshold``.
    Accepts strings over ``ACGT`` or an int array; returns a float array."""

    def __init__(
        self,
        threshold: float = 6.0,
        bonus: float = 2.0,
        gap_low: int = 4,
        gap_high: int = 10,
        gc_target: float = 0.45,
        gc_penalty: float = 4.0,
    ) -> None:
        self.threshold = V.check_scalar(threshold, "threshold")
        self.bonus = V.check_scalar(bonus, "bonus")
        self.gap_low = V.check_int(gap_low, "gap_low", low=0)
        self.gap_high = V.check_int(gap_high, "gap_high", low=self.gap_low)
        self.gc_target = V.check_probability(gc_target, "gc_target")
        self.gc_penalty = V.check_scalar(gc_penalty, "gc_penalty", low=0.0)
        self.log_odds = np.log2(_pwms() / 0.25)

    def hits(self, x: np.ndarray, motif: int) -> np.ndarray:
        """Boolean (n, L - 5): windows whose log-odds for motif ``motif`` exceed threshold."""
        n, L = x.shape
        w = L - MOTIF_LEN + 1
        score = np.zeros((n, w))
        for j in range(MOTIF_LEN):
            score += self.log_odds[motif, j][x[:, j : j + w]]
        return score > self.threshold

    def __call__(self, seqs: Any) -> np.ndarray:
        if isinstance(seqs, torch.Tensor) or isinstance(seqs, np.ndarray):
            x = V.check_array(seqs, "seqs", ndim=2, dtype=None, low=0, high=3).astype(np.int64)
        else:
            x = encode(list(seqs))
        n, L = x.shape
        if L < MOTIF_LEN:
            raise ValueError(f"seqs must be at least {MOTIF_LEN} long, got {L}")
        h1, h3 = self.hits(x, 0), self.hits(x, 2)
        # greedy left-to-right count of non-overlapping M1 hits
        count = np.zeros(n)
        free_from = np.zeros(n, dtype=np.int64)
        for i in range(h1.shape[1]):
            take = h1[:, i] & (i >= free_from)
            count += take
            free_from = np.where(take, i + MOTIF_LEN, free_from)
        pair = np.zeros(n, dtype=bool)
        for d in range(MOTIF_LEN + self.gap_low, MOTIF_LEN + self.gap_high + 1):
            if d < h1.shape[1]:
                pair |= (h1[:, : h1.shape[1] - d] & h3[:, d:]).any(1)
        gc = np.isin(x, (1, 2)).mean(1)
        return count + self.bonus * pair - self.gc_penalty * np.abs(gc - self.gc_target)


class RewardOracle:
    """Counts and checks reward queries. ``reward_fn`` is any callable on a list of decoded
    strings returning one finite number per sequence; a NaN/inf or a wrong-length answer
    raises ``ValueError``. ``queries`` counts sequences sent through :meth:`__call__`;
    :meth:`evaluate` scores without counting (for monitoring and final evaluation)."""

    def __init__(self, reward_fn: Callable[[list[str]], Any], decode_fn=decode) -> None:
        if not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
        self.reward_fn = reward_fn
        self.decode_fn = decode_fn
        self.queries = 0
        self.calls = 0

    def _score(self, tokens: torch.Tensor | np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens.cpu() if isinstance(tokens, torch.Tensor) else tokens)
        seqs = self.decode_fn(tokens)
        raw = self.reward_fn(seqs)
        try:
            out = np.asarray(raw, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"reward_fn must return numbers, got {type(raw).__name__}") from None
        if out.shape[0] != len(seqs) or np.ndim(raw) > 1 and np.shape(raw)[0] != len(seqs):
            raise ValueError(f"reward_fn returned {out.shape[0]} values for {len(seqs)} sequences")
        if not np.isfinite(out).all():
            bad = int((~np.isfinite(out)).sum())
            raise ValueError(f"reward_fn returned {bad} non-finite value(s) (NaN or inf)")
        return out

    def __call__(self, tokens) -> np.ndarray:
        out = self._score(tokens)
        self.queries += out.shape[0]
        self.calls += 1
        return out

    def evaluate(self, tokens) -> np.ndarray:
        return self._score(tokens)


class RayRewardPool:
    """A slow reward spread over a pool of Ray actors: the batch is cut into ``chunk``-sized
    pieces and scored in parallel. Callable like ``reward_fn``; ``shutdown()`` frees it.
    Ray is imported only here, so the default path never needs it."""

    def __init__(self, reward_fn: Callable[[list[str]], Any], num_actors: int = 2, chunk: int = 64):
        if not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable, got {type(reward_fn).__name__}")
        self.num_actors = V.check_int(num_actors, "num_actors", low=1)
        self.chunk = V.check_int(chunk, "chunk", low=1)
        import ray
        from ray.util import ActorPool

        from iclr26.ray_local import init_ray

        self._owns_ray = init_ray(self.num_actors)

        @ray.remote(num_cpus=1)
        class _Scorer:
            def __init__(self, fn):
                self.fn = fn

            def score(self, seqs):
                return np.asarray(self.fn(seqs), dtype=np.float64).reshape(-1)

        self._ray = ray
        self._pool = ActorPool([_Scorer.remote(reward_fn) for _ in range(self.num_actors)])

    def __call__(self, seqs: list[str]) -> np.ndarray:
        seqs = list(seqs)
        pieces = [seqs[i : i + self.chunk] for i in range(0, len(seqs), self.chunk)]
        parts = list(self._pool.map(lambda a, p: a.score.remote(p), pieces))
        return np.concatenate(parts) if parts else np.zeros(0)

    def shutdown(self) -> None:
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()


def kmer_correlation(samples: Any, reference: Any, k: int = 3) -> float:
    """Pearson correlation of the k-mer frequency vectors of two int sequence sets."""
    a = V.check_array(samples, "samples", ndim=2, dtype=None, low=0, high=3).astype(np.int64)
    b = V.check_array(reference, "reference", ndim=2, dtype=None, low=0, high=3).astype(np.int64)
    k = V.check_int(k, "k", low=1, high=min(a.shape[1], b.shape[1]))

    def freq(x):
        w = x.shape[1] - k + 1
        code = np.zeros((x.shape[0], w), dtype=np.int64)
        for j in range(k):
            code = code * 4 + x[:, j : j + w]
        return np.bincount(code.ravel(), minlength=4**k).astype(float)

    fa, fb = freq(a), freq(b)
    if fa.std() == 0 or fb.std() == 0:
        return 0.0
    return float(np.corrcoef(fa, fb)[0, 1])


def pairwise_diversity(samples: Any) -> float:
    """Mean pairwise Hamming distance / L over all distinct pairs."""
    x = V.check_array(samples, "samples", ndim=2, dtype=None, low=0, high=3).astype(np.int64)
    n, L = x.shape
    if n < 2:
        raise ValueError(f"samples must hold at least 2 sequences, got {n}")
    onehot = np.eye(4)[x].reshape(n, -1)
    same = onehot @ onehot.T  # matches per pair
    off = ~np.eye(n, dtype=bool)
    return float(((L - same) / L)[off].mean())
