"""CAP's second stage: a probabilistic global allocation of ranks and sparsities.

Every candidate k of every matrix (a singular triplet of L, cost m + n; an entry of S, cost 1)
gets a keep-probability s_k. Masks m ~ Bernoulli(s) are sampled, the masked model's loss L(m) is
measured with a forward pass only, and s moves along the score-function (REINFORCE) estimate
g_k = (L - delta)(m_k - s_k) / (s_k(1 - s_k) + eps) with a running baseline delta, followed by
the Euclidean projection onto {0 <= s <= 1, c^T s <= K}. A cost-aware global top-K turns the
final probabilities into hard masks, so ranks and sparsities are spread over the layers by one
ranking.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.lrs_compression.candidates import RPCACandidates

__all__ = [
    "ProbabilisticAllocator",
    "finalize",
    "project_budget",
    "score_function_gradient",
    "uniform_allocation",
]

Masks = list[tuple[torch.Tensor, torch.Tensor]]
INITS = ("energy", "magnitude", "uniform")
BASELINES = ("ema", "window")


def _vector(z: Any, name: str) -> torch.Tensor:
    if isinstance(z, torch.Tensor):
        V.check_tensor(z, name, ndim=1, floating=True)
        return z.detach().double()
    return torch.from_numpy(V.check_array(z, name, ndim=1, dtype=np.float64).copy())


def project_budget(z: Any, cost: Any, budget: float, *, iterations: int = 100) -> torch.Tensor:
    """Euclidean projection of ``z`` onto ``{0 <= s <= 1, cost^T s <= budget}``.

    ``clip(z, 0, 1)`` when that is feasible; otherwise ``clip(z - nu * cost, 0, 1)`` with the
    multiplier ``nu > 0`` found by bisection so that the budget holds with equality (the upper
    end of the bracket is returned, so the result is always feasible). Float64."""
    z = _vector(z, "z")
    cost = _vector(cost, "cost")
    if cost.shape != z.shape:
        raise ValueError(f"cost must have the shape of z {tuple(z.shape)}, got {tuple(cost.shape)}")
    if bool((cost <= 0).any()):
        raise ValueError("cost must be > 0 everywhere")
    budget = V.check_scalar(budget, "budget", low=0.0)
    iterations = V.check_int(iterations, "iterations", low=1)
    clipped = z.clamp(0.0, 1.0)
    if float(cost @ clipped) <= budget:
        return clipped
    nu = _budget_multiplier(z, cost, budget, iterations)
    return (z - nu * cost).clamp(0.0, 1.0)


def _project(
    z: torch.Tensor, cost: torch.Tensor, budget: float, start: float
) -> tuple[torch.Tensor, float]:
    """:func:`project_budget` without checks, Newton started at ``start``; also returns nu."""
    clipped = z.clamp(0.0, 1.0)
    if float(cost @ clipped) <= budget:
        return clipped, 0.0
    nu = _budget_multiplier(z, cost, budget, 100, start)
    return (z - nu * cost).clamp(0.0, 1.0), nu


def _budget_multiplier(
    z: torch.Tensor, cost: torch.Tensor, budget: float, iterations: int, start: float = 0.0
) -> float:
    """The smallest ``nu >= 0`` with ``cost^T clip(z - nu cost, 0, 1) <= budget``: safeguarded
    Newton steps on the piecewise-linear, non-increasing spend (exact once the active set is
    found), falling back to bisection of the bracket; returns the feasible end."""
    lo, hi = 0.0, float((z / cost).max().clamp(min=0.0))  # at hi every entry is clipped to 0
    nu = start if 0.0 < start < hi else lo
    for _ in range(iterations):
        shifted = z - nu * cost
        spend = float(cost @ shifted.clamp(0.0, 1.0))
        if spend > budget:
            lo = nu
        else:
            hi = nu
            if spend >= budget * (1 - 1e-12):
                break
        active = (shifted > 0) & (shifted < 1)
        slope = float((cost[active] ** 2).sum())
        step = nu + (spend - budget) / slope if slope > 0 else None
        nu = step if step is not None and lo < step < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(hi, 1e-300):
            break
    return hi


def score_function_gradient(
    loss: Any, masks: Any, probabilities: Any, baseline: float = 0.0, eps: float = 1e-6
) -> torch.Tensor:
    """REINFORCE estimate of d E[L(m)] / d s for independent Bernoulli masks:
    ``mean_j (loss_j - baseline) (m_j - s) / (s (1 - s) + eps)``.

    ``loss`` is one number per sample (``n``), ``masks`` is ``n x d`` (or ``d`` for one sample),
    ``probabilities`` is ``d`` in [0, 1]."""
    s = _vector(probabilities, "probabilities")
    V.check_tensor(s, "probabilities", low=0.0, high=1.0)
    m = masks.detach().double() if isinstance(masks, torch.Tensor) else None
    if m is None:
        m = torch.from_numpy(V.check_array(masks, "masks", ndim=(1, 2), dtype=np.float64).copy())
    V.check_tensor(m, "masks", ndim=(1, 2), low=0.0, high=1.0)
    m = m.reshape(1, -1) if m.dim() == 1 else m
    if m.shape[1] != s.numel():
        raise ValueError(
            f"masks must have {s.numel()} columns (one per probability), got {m.shape[1]}"
        )
    loss_t = torch.as_tensor(loss, dtype=torch.float64).reshape(-1)
    V.check_tensor(loss_t, "loss")
    if loss_t.numel() != m.shape[0]:
        raise ValueError(
            f"loss must have one value per mask row ({m.shape[0]}), got {loss_t.numel()}"
        )
    baseline = V.check_scalar(baseline, "baseline")
    eps = V.check_scalar(eps, "eps", low=0.0)
    return _gradient(loss_t, m, s, baseline, eps)


def _gradient(
    loss: torch.Tensor, masks: torch.Tensor, s: torch.Tensor, baseline: float, eps: float
) -> torch.Tensor:
    advantage = (loss - baseline)[:, None]
    return (advantage * (masks - s) / (s * (1.0 - s) + eps)).mean(0)


# ----------------------------------------------------------------- layout over all pools


class _Layout:
    """One flat vector over the candidates of all pools (per pool: triplets, then entries)."""

    def __init__(self, pools: Sequence[RPCACandidates]):
        self.pools = list(pools)
        sizes = [p.n_candidates for p in self.pools]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.cost = torch.cat([p.costs() for p in self.pools]) if self.pools else torch.zeros(0)
        self.is_lowrank = torch.cat(
            [
                torch.cat(
                    [torch.ones(p.rank, dtype=torch.bool), torch.zeros(p.nnz, dtype=torch.bool)]
                )
                for p in self.pools
            ]
        )
        self.dense_size = sum(p.dense_size for p in self.pools)

    def split(self, flat: torch.Tensor) -> Masks:
        out = []
        for p, a in zip(self.pools, self.offsets[:-1]):
            out.append((flat[a : a + p.rank], flat[a + p.rank : a + p.n_candidates]))
        return out

    def magnitude_scores(self) -> torch.Tensor:
        """sigma / max sigma and |S| / max |S| over all pools (each type normalised alone)."""
        sig = torch.cat([p.magnitudes()[0] for p in self.pools])
        ent = torch.cat([p.magnitudes()[1] for p in self.pools])
        sig = sig / sig.max() if sig.numel() and sig.max() > 0 else sig
        ent = ent / ent.max() if ent.numel() and ent.max() > 0 else ent
        return self._interleave(sig, ent)

    def energy_scores(self) -> torch.Tensor:
        """Root energy per parameter, comparable across types: ``sigma / sqrt(m + n)`` for a
        triplet and ``|S_ij| / sqrt(cost_sparse)`` for an entry, over the largest of all."""
        sig = torch.cat([p.magnitudes()[0] / p.cost_lowrank**0.5 for p in self.pools])
        ent = torch.cat([p.magnitudes()[1] / float(p.cost_sparse) ** 0.5 for p in self.pools])
        both = torch.cat([sig, ent])
        top = float(both.max()) if both.numel() else 0.0
        if top > 0:
            sig, ent = sig / top, ent / top
        return self._interleave(sig, ent)

    def _interleave(self, sig: torch.Tensor, ent: torch.Tensor) -> torch.Tensor:
        pieces, i, j = [], 0, 0
        for p in self.pools:
            pieces += [sig[i : i + p.rank], ent[j : j + p.nnz]]
            i, j = i + p.rank, j + p.nnz
        return torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.float64)

    def eligible(self) -> torch.Tensor:
        """False for triplets beyond a matrix's ``max_rank`` (they would make the factors cost
        more than the dense matrix)."""
        flags = []
        for p in self.pools:
            lowrank = torch.arange(p.rank) < p.max_rank  # sigma is sorted descending
            flags += [lowrank, torch.ones(p.nnz, dtype=torch.bool)]
        return torch.cat(flags) if flags else torch.zeros(0, dtype=torch.bool)


def _check_pools(pools: Any) -> list[RPCACandidates]:
    if isinstance(pools, RPCACandidates):
        pools = [pools]
    if not isinstance(pools, Sequence) or not pools:
        raise ValueError("pools must be a non-empty sequence of RPCACandidates")
    for i, p in enumerate(pools):
        if not isinstance(p, RPCACandidates):
            raise TypeError(f"pools[{i}] must be an RPCACandidates, got {type(p).__name__}")
    return list(pools)


def _check_budget(budget: Any, dense_size: int) -> float:
    budget = V.check_scalar(budget, "budget", low=0.0, low_open=True)
    if budget > dense_size:
        raise ValueError(
            f"budget must not exceed the dense size of the target matrices ({dense_size}), "
            f"got {budget:g}"
        )
    return budget


def _greedy_topk(order: torch.Tensor, cost: torch.Tensor, budget: float) -> torch.Tensor:
    """Walk candidates in ``order``, keeping each one whose cost still fits (exactly the
    sequential greedy, vectorised: items that do not fit now never fit later)."""
    keep = torch.zeros(cost.numel(), dtype=torch.bool)
    rest, left = order, float(budget)
    while rest.numel():
        rest = rest[cost[rest] <= left + 1e-9]
        if not rest.numel():
            break
        cum = torch.cumsum(cost[rest], 0)
        n_fit = int(torch.searchsorted(cum, torch.tensor(left + 1e-9, dtype=cum.dtype), right=True))
        keep[rest[:n_fit]] = True
        left -= float(cum[n_fit - 1]) if n_fit else 0.0
        rest = rest[n_fit + 1 :] if n_fit < rest.numel() else rest[:0]
    return keep


def finalize(
    pools: Sequence[RPCACandidates], probabilities: Any, budget: float, tie_scores: Any = None
) -> Masks:
    """Hard masks from keep-probabilities: candidates sorted by probability (ties broken by
    ``tie_scores``, default the energy score), added greedily while the total cost stays
    within ``budget``; a matrix never keeps more than ``max_rank`` triplets."""
    pools = _check_pools(pools)
    layout = _Layout(pools)
    budget = _check_budget(budget, layout.dense_size)
    s = _vector(probabilities, "probabilities")
    if s.numel() != layout.cost.numel():
        raise ValueError(
            f"probabilities must have one entry per candidate ({layout.cost.numel()}), got {s.numel()}"
        )
    V.check_tensor(s, "probabilities", low=0.0, high=1.0)
    tie = layout.energy_scores() if tie_scores is None else _vector(tie_scores, "tie_scores")
    eligible = layout.eligible()
    # lexicographic order: probability first, tie score second (both descending)
    order = torch.from_numpy(np.lexsort((-tie.numpy(), -s.numpy())).astype(np.int64))
    order = order[eligible[order]]
    keep = _greedy_topk(order, layout.cost, budget)
    return layout.split(keep)


def uniform_allocation(
    pools: Sequence[RPCACandidates], keep_fraction: float, score: str = "energy"
) -> Masks:
    """The same pools, every matrix with the same kept fraction of its dense size, filled by
    the matrix's own ranking (``score="energy"``: root energy per parameter;
    ``"magnitude"``: triplets by sigma first, then entries by |S|)."""
    pools = _check_pools(pools)
    keep_fraction = V.check_scalar(keep_fraction, "keep_fraction", low=0.0, high=1.0, low_open=True)
    score = V.check_choice(score, "score", ("energy", "magnitude"))
    out: Masks = []
    for p in pools:
        layout = _Layout([p])
        if score == "energy":
            tie = layout.energy_scores()
        else:  # every triplet ranks above every entry
            sig, ent = p.magnitudes()
            tie = torch.cat(
                [1.0 + sig / sig.max().clamp(min=1e-30), ent / ent.max().clamp(min=1e-30)]
            )
        order = torch.argsort(tie, descending=True, stable=True)
        order = order[layout.eligible()[order]]
        keep = _greedy_topk(order, layout.cost, keep_fraction * p.dense_size)
        out += layout.split(keep)
    return out


# ----------------------------------------------------------------- the allocator


class ProbabilisticAllocator:
    """Keep-probabilities for every candidate, trained by REINFORCE under one budget.

    ``fit(pools, budget, loss_fn)``: ``loss_fn(masks)`` gets one ``(lowrank, sparse)`` pair of
    float 0/1 tensors per pool and returns the scalar loss of that masked model (a forward
    pass, no gradient). Each of ``steps`` steps samples ``n_samples`` masks, updates the
    baseline (``"ema"``: ``delta <- beta delta + (1 - beta) L``, ``delta = L`` at the first step;
    ``"window"``: mean of the last ``window`` losses), takes ``s <- Pi(s - lr g)`` and records
    the loss. ``init`` chooses the starting probabilities: ``"energy"`` (root energy per
    parameter, scaled so the expected cost equals the budget), ``"magnitude"`` (sigma / max
    sigma and |S| / max |S|, then projected) or ``"uniform"``. Results: ``probabilities_``,
    ``initial_probabilities_``, ``losses_``, ``masks_`` (hard masks after :func:`finalize`)."""

    def __init__(
        self,
        steps: int = 384,
        lr: float = 0.05,
        baseline: str = "ema",
        beta: float = 0.9,
        window: int = 5,
        n_samples: int = 1,
        init: str = "energy",
        eps: float = 1e-6,
        seed: int = 0,
    ):
        self.steps = V.check_int(steps, "steps", low=0)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.baseline = V.check_choice(baseline, "baseline", BASELINES)
        self.beta = V.check_scalar(beta, "beta", low=0.0, high=1.0, high_open=True)
        self.window = V.check_int(window, "window", low=1)
        self.n_samples = V.check_int(n_samples, "n_samples", low=1)
        self.init = V.check_choice(init, "init", INITS)
        self.eps = V.check_scalar(eps, "eps", low=0.0)
        self.seed = V.check_int(seed, "seed")

    def initial_probabilities(self, pools: Sequence[RPCACandidates], budget: float) -> torch.Tensor:
        layout = _Layout(_check_pools(pools))
        budget = _check_budget(budget, layout.dense_size)
        cost = layout.cost
        if self.init == "magnitude":
            return project_budget(layout.magnitude_scores(), cost, budget)
        if self.init == "uniform":
            return torch.full_like(cost, min(1.0, budget / float(cost.sum())))
        score = layout.energy_scores()
        if float(cost.sum()) <= budget:
            return torch.ones_like(cost)
        lo, hi = 0.0, 1.0  # scale a with cost^T clip(a * score, 0, 1) = budget
        while float(cost @ (hi * score).clamp(0.0, 1.0)) < budget and hi < 1e12:
            hi *= 2.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if float(cost @ (mid * score).clamp(0.0, 1.0)) > budget:
                hi = mid
            else:
                lo = mid
        return (lo * score).clamp(0.0, 1.0)

    def fit(
        self,
        pools: Sequence[RPCACandidates],
        budget: float,
        loss_fn: Callable[[Masks], float],
        progress: Callable[[int, int, float], None] | None = None,
    ) -> ProbabilisticAllocator:
        pools = _check_pools(pools)
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        layout = _Layout(pools)
        budget = _check_budget(budget, layout.dense_size)
        s = self.initial_probabilities(pools, budget)
        self.initial_probabilities_ = s.clone()
        gen = torch.Generator().manual_seed(self.seed)
        recent: deque[float] = deque(maxlen=self.window)
        delta: float | None = None
        nu = 0.0
        self.losses_: list[float] = []
        for step in range(self.steps):
            masks = torch.bernoulli(s.expand(self.n_samples, -1), generator=gen)
            losses = []
            for row in masks:
                value = float(loss_fn([(a.float(), b.float()) for a, b in layout.split(row)]))
                if not np.isfinite(value):
                    raise FloatingPointError(f"loss_fn returned {value} at step {step}")
                losses.append(value)
            mean_loss = float(np.mean(losses))
            if self.baseline == "ema":
                delta = (
                    mean_loss if delta is None else self.beta * delta + (1 - self.beta) * mean_loss
                )
            else:
                recent.append(mean_loss)
                delta = float(np.mean(recent))
            loss_t = torch.tensor(losses, dtype=torch.float64)
            grad = _gradient(loss_t, masks, s, delta, self.eps)
            s, nu = _project(s - self.lr * grad, layout.cost, budget, nu)
            self.losses_.append(mean_loss)
            if progress is not None:
                progress(step + 1, self.steps, mean_loss)
        self.probabilities_ = s
        self.budget_ = budget
        self.masks_ = finalize(pools, s, budget)
        return self
