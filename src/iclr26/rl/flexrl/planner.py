"""FlexRL's cost-aware load-balancing planner (FlexUlysses' hybrid sequence sharding) and the
veRL-style equal-count split it replaces.

Cost of a sequence of ``L`` tokens: ``c(L) = a L + b L^2`` (linear layers + dense attention);
a contiguous chunk ``[s, e)`` of it costs ``a (e - s) + b (e - s) e`` (its queries score all keys
up to ``e``), so the chunks of a split sequence never cost more than the whole. With the target
per-worker cost ``C* = sum_i c(L_i) / W``, a sequence with ``c(L) > theta C*`` is cut into
``k = min(W, ceil(c(L) / (theta C*)))`` chunks of equal cost, run by a group of ``k`` workers
(a contiguous window of ranks, the least-loaded one); the remaining whole sequences are placed
longest-processing-time first (LPT) on the least-loaded worker. Pure Python: usable with any
framework."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V


@dataclass(frozen=True)
class CostModel:
    """``c(L) = a L + b L^2`` (any unit: seconds, FLOPs)."""

    a: float
    b: float

    def __post_init__(self) -> None:
        V.check_scalar(self.a, "a", low=0.0)
        V.check_scalar(self.b, "b", low=0.0)
        if self.a == 0 and self.b == 0:
            raise ValueError("a and b must not both be 0 (every sequence would cost nothing)")

    def __call__(self, length) -> np.ndarray | float:
        L = np.asarray(length, dtype=np.float64)
        out = self.a * L + self.b * L * L
        return float(out) if out.ndim == 0 else out

    def chunk(self, start: int, end: int) -> float:
        """Cost of the chunk ``[start, end)`` of a longer sequence."""
        n = end - start
        return self.a * n + self.b * n * end

    def memory(self, length) -> np.ndarray | float:
        """Activation memory is linear in ``L`` (``m(L) ∝ L``): returned in tokens."""
        return np.asarray(length, dtype=np.float64) * 1.0


def profile_cost_model(
    model,
    lengths: Sequence[int] = (64, 128, 256, 512, 1024),
    rows: int = 4,
    repeat: int = 3,
) -> CostModel:
    """Fit ``c(L) = a L + b L^2`` (seconds) by timing ``model``'s forward on ``rows`` rows of
    each length (minimum over ``repeat`` runs; non-negative least squares)."""
    import torch
    from scipy.optimize import nnls

    from iclr26.rl.flexrl.model import TinyVLM

    if not isinstance(model, TinyVLM):
        raise TypeError(f"model must be a TinyVLM, got {type(model).__name__}")
    lengths = V.check_array(lengths, "lengths", ndim=1, low=1, dtype=np.int64)
    if len(lengths) < 2:
        raise ValueError("lengths needs at least 2 distinct lengths to fit two coefficients")
    if int(lengths.max()) > model.max_len:
        raise ValueError(f"lengths must be <= the model's max_len {model.max_len}")
    rows = V.check_int(rows, "rows", low=1)
    repeat = V.check_int(repeat, "repeat", low=1)
    times = []
    with torch.no_grad():
        for L in lengths:
            ids = torch.zeros((rows, int(L)), dtype=torch.long)
            patches = torch.zeros((0, model.patch_dim))
            model(patches, ids)  # warm-up
            best = math.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                model(patches, ids)
                best = min(best, time.perf_counter() - t0)
            times.append(best)
    L = lengths.astype(np.float64)
    (a, b), _ = nnls(np.stack([L, L * L], axis=1), np.asarray(times))
    if a == 0 and b == 0:
        b = float(np.mean(np.asarray(times) / (L * L)))
    return CostModel(float(a), float(b))


def flops_cost_model(model) -> CostModel:
    """The load-free cost model of a :class:`TinyVLM`: forward FLOPs per row."""
    from iclr26.rl.flexrl.model import TinyVLM

    if not isinstance(model, TinyVLM):
        raise TypeError(f"model must be a TinyVLM, got {type(model).__name__}")
    b = 4.0 * model.d_model * model.n_layers  # scores + weighted values, per layer
    return CostModel(float(model.flops_per_row(1) - b), b)


Item = tuple[int, int, int]  # (sample index, token start, token end)


@dataclass
class Plan:
    """Per-worker work lists: ``assignments[w]`` = ``[(sample, start, end), ...]``;
    ``groups[sample]`` = the ranks (in chunk order) of a split sample; ``loads`` = predicted
    per-worker cost."""

    n_workers: int
    assignments: list[list[Item]]
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)

    @property
    def predicted_imbalance(self) -> float:
        """max / mean of the predicted per-worker cost (1 = perfectly balanced)."""
        loads = np.asarray(self.loads, dtype=np.float64)
        return float(loads.max() / loads.mean()) if loads.mean() > 0 else 1.0


def _check_lengths(lengths) -> np.ndarray:
    arr = V.check_array(lengths, "lengths", ndim=1, dtype=np.int64)
    bad = np.flatnonzero(arr < 1)
    if bad.size:
        raise ValueError(
            f"lengths must be >= 1 token; sample {int(bad[0])} has {int(arr[bad[0]])} "
            "(a sample with no tokens cannot be scheduled)"
        )
    return arr


def _check_cost(cost) -> CostModel:
    if cost is None:
        return CostModel(1.0, 0.0)
    if not isinstance(cost, CostModel):
        raise TypeError(f"cost must be a CostModel or None, got {type(cost).__name__}")
    return cost


def equal_chunks(length: int, k: int, cost: CostModel, min_chunk: int = 1) -> list[int]:
    """Chunk boundaries ``[0, e_1, ..., L]`` cutting a sequence into ``k`` contiguous chunks of
    (nearly) equal cost under ``cost.chunk`` (bisection on the per-chunk target)."""
    length = V.check_int(length, "length", low=1)
    k = V.check_int(k, "k", low=1)
    if not isinstance(cost, CostModel):
        raise TypeError(f"cost must be a CostModel, got {type(cost).__name__}")
    min_chunk = V.check_int(min_chunk, "min_chunk", low=1)
    k = min(k, max(1, length // max(1, min_chunk)))
    if k <= 1:
        return [0, length]

    def ends_for(target: float) -> list[int]:
        bounds, s = [0], 0
        for _ in range(k - 1):
            # largest n with a n + b n (s + n) <= target
            a, b = cost.a, cost.b
            if b > 0:
                lin = a + b * s
                n = int((-lin + math.sqrt(lin * lin + 4 * b * target)) / (2 * b))
            else:
                n = int(target / a)
            n = max(min_chunk, n)
            s = min(length, s + n)
            bounds.append(s)
        bounds.append(length)
        return bounds

    lo, hi = 0.0, cost(length)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        b = ends_for(mid)
        if cost.chunk(b[-2], b[-1]) > mid:  # the last chunk is too expensive: raise the target
            lo = mid
        else:
            hi = mid
    bounds = ends_for(hi)
    # keep every chunk non-empty and at least min_chunk long (merge from the end if needed)
    out = [0]
    for e in bounds[1:]:
        if e - out[-1] >= min_chunk or e == length:
            out.append(e)
    if len(out) > 2 and out[-1] - out[-2] < min_chunk:
        del out[-2]
    return out


def plan_hybrid_shards(
    lengths,
    n_workers: int,
    cost: CostModel | None = None,
    shard_threshold: float = 0.5,
    min_chunk: int = 1,
    memory_limit: int | None = None,
) -> Plan:
    """FlexUlysses' hybrid plan (see the module docstring) for sequences of ``lengths`` tokens
    over ``n_workers``. ``shard_threshold`` (theta) = ``inf`` disables splitting (pure LPT);
    ``min_chunk`` is the shortest chunk allowed; ``memory_limit`` (tokens, activation memory
    ``m(L) ∝ L``) is the longest chunk one worker may hold: longer sequences are split into
    more chunks until every chunk fits (an error if even ``n_workers`` chunks do not)."""
    lengths = _check_lengths(lengths)
    W = V.check_int(n_workers, "n_workers", low=1)
    cost = _check_cost(cost)
    theta = V.check_scalar(
        shard_threshold, "shard_threshold", low=0.0, low_open=True, allow_inf=True
    )
    min_chunk = V.check_int(min_chunk, "min_chunk", low=1)
    memory_limit = V.check_int(memory_limit, "memory_limit", low=1, allow_none=True)
    costs = np.asarray(cost(lengths), dtype=np.float64).reshape(-1)
    target = costs.sum() / W
    loads = [0.0] * W
    assignments: list[list[Item]] = [[] for _ in range(W)]
    groups: dict[int, tuple[int, ...]] = {}
    order = np.argsort(-costs, kind="stable")
    whole = []
    for i in order:
        i = int(i)
        k = 1
        if W > 1 and math.isfinite(theta) and costs[i] > theta * target:
            k = min(W, math.ceil(costs[i] / (theta * target)))
        bounds = equal_chunks(int(lengths[i]), k, cost, min_chunk) if k > 1 else [0, lengths[i]]
        while memory_limit is not None and max(np.diff(bounds)) > memory_limit:
            if k >= W:
                raise ValueError(
                    f"memory_limit: sample {i} ({int(lengths[i])} tokens) does not fit in "
                    f"{W} chunks of at most {memory_limit} tokens"
                )
            k += 1
            bounds = equal_chunks(int(lengths[i]), k, cost, min_chunk)
        k = len(bounds) - 1
        if k == 1:
            whole.append(i)
            continue
        chunk_costs = [cost.chunk(bounds[j], bounds[j + 1]) for j in range(k)]
        best, best_r = math.inf, 0
        for r in range(W - k + 1):  # contiguous window minimising the resulting maximum
            peak = max(loads[r + j] + chunk_costs[j] for j in range(k))
            if peak < best - 1e-12:
                best, best_r = peak, r
        ranks = tuple(range(best_r, best_r + k))
        groups[i] = ranks
        for j, rank in enumerate(ranks):
            assignments[rank].append((i, int(bounds[j]), int(bounds[j + 1])))
            loads[rank] += chunk_costs[j]
    heap = [(loads[w], w) for w in range(W)]
    heapq.heapify(heap)
    for i in whole:  # already longest first
        load, w = heapq.heappop(heap)
        assignments[w].append((i, 0, int(lengths[i])))
        loads[w] = load + float(costs[i])
        heapq.heappush(heap, (loads[w], w))
    return Plan(W, assignments, groups, loads)


def plan_equal_count(lengths, n_workers: int, cost: CostModel | None = None) -> Plan:
    """veRL's default dispatch: contiguous split of the batch into ``n_workers`` parts of equal
    sample count; every sequence whole. ``loads`` use ``cost`` (token count by default)."""
    lengths = _check_lengths(lengths)
    W = V.check_int(n_workers, "n_workers", low=1)
    cost = _check_cost(cost)
    parts = np.array_split(np.arange(len(lengths)), W)
    assignments = [[(int(i), 0, int(lengths[i])) for i in part] for part in parts]
    loads = [float(sum(cost(int(lengths[i])) for i in part)) for part in parts]
    return Plan(W, assignments, {}, loads)
