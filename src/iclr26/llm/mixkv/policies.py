"""Which prompt KV pairs each KV head keeps: SnapKV, AdaKV, PyramidKV, MixKV on any of them,
and the reference policies FullKV, RandomKV and StreamingKV.

A policy sees one layer at the end of the prompt forward pass (window queries, keys, values)
and returns a :class:`Selection`: a boolean keep mask ``[batch, kv_heads, T]``. The budget
``B`` counts every kept token of a KV head *including* the observation window of ``w`` tokens
(as in the AdaKV path of the official code), so ``C = B - w`` prefix tokens are chosen.
SnapKV keeps the top-``C`` per head; AdaKV spreads ``H_kv * C`` over the layer's heads from
the global top of their pooled scores, with a floor ``floor * C`` per head (Feng et al. 2024);
PyramidKV gives lower layers more of the model's ``L * C`` prefix slots than upper ones (Cai et
al. 2024) and ranks by SnapKV's score within a layer; MixKV replaces the per-head ranking score by the importance/diversity mixture and, on AdaKV,
keeps AdaKV's capacities computed from the attention score alone (on PyramidKV, the layer's
budget).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from fractions import Fraction

import torch

from iclr26 import validation as V
from iclr26.llm.mixkv.scoring import (
    GQA_REDUCTIONS,
    _batched,
    _mixkv_core,
    _snapkv_core,
    check_kernel,
)

REDUNDANCY_MODES = ("online", "calibrated")


@dataclass
class Selection:
    """Kept prompt positions of one layer: ``keep[b, h, t]`` is True when KV head ``h`` keeps
    token ``t``. ``counts`` is the number kept per head."""

    keep: torch.Tensor

    def __post_init__(self) -> None:
        V.check_tensor(self.keep, "keep", ndim=(2, 3))
        if self.keep.dtype != torch.bool:
            raise TypeError(f"keep must be a boolean tensor, got {self.keep.dtype}")

    @property
    def counts(self) -> torch.Tensor:
        return self.keep.sum(dim=-1)

    @property
    def uniform(self) -> bool:
        """Every head of every row keeps the same number of tokens."""
        c = self.counts
        return bool((c == c.reshape(-1)[0]).all())

    def gather_plan(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(index, valid)``, both ``[batch, kv_heads, M]`` with ``M`` the largest count: the
        kept positions in increasing order (padded with the last kept one), and which entries
        are real (all True when the budgets are uniform)."""
        counts = self.counts
        m = int(counts.max())
        t = self.keep.shape[-1]
        pos = torch.arange(t, device=self.keep.device).expand_as(self.keep)
        # kept positions first, in order; dropped ones pushed past the end
        order = torch.where(self.keep, pos, pos + t).sort(dim=-1).values[..., :m]
        valid = torch.arange(m, device=self.keep.device) < counts[..., None]
        last = order.gather(-1, (counts[..., None] - 1).clamp(min=0))
        index = torch.where(valid, order, last)
        return index, valid


def _keep_from_prefix(prefix_keep: torch.Tensor, window: int) -> Selection:
    b, h, _ = prefix_keep.shape
    window_keep = torch.ones(b, h, window, dtype=torch.bool, device=prefix_keep.device)
    return Selection(torch.cat([prefix_keep, window_keep], dim=-1))


def topk_mask(scores: torch.Tensor, capacity: torch.Tensor | int) -> torch.Tensor:
    """Boolean mask of the ``capacity`` highest scores along the last axis (``capacity`` an
    int or a ``[batch, heads]`` tensor of per-head counts)."""
    order = scores.argsort(dim=-1, descending=True, stable=True)
    if isinstance(capacity, int):
        rank_keep = torch.zeros_like(scores, dtype=torch.bool)
        rank_keep[..., :capacity] = True
    else:
        ranks = torch.arange(scores.shape[-1], device=scores.device)
        rank_keep = ranks < capacity[..., None]
    return torch.zeros_like(rank_keep).scatter(-1, order, rank_keep)


def adakv_capacities(
    scores: torch.Tensor, capacity: int, floor: float = 0.2, normalize: bool = True
) -> torch.Tensor:
    """AdaKV's head-adaptive capacities within one layer: take the global top ``H * C`` of the
    heads' scores ``[batch, heads, P]``, count the hits per head ``n_h``, and give each head
    ``n_h (1 - floor) + floor * C``, rounded by largest remainder so that every row sums to
    exactly ``H * C``. ``normalize`` first scales each head's scores by the share of its mass
    in its own top-``C`` (on in the released MixKV runs). Returns ``[batch, heads]``."""
    V.check_tensor(scores, "scores", ndim=(2, 3), floating=True)
    squeeze = scores.dim() == 2
    scores = scores[None] if squeeze else scores
    capacity = V.check_int(capacity, "capacity", low=1, high=scores.shape[-1])
    floor = V.check_probability(floor, "floor")
    caps = _adakv_core(scores, capacity, floor, V.check_bool(normalize, "normalize"))
    return caps[0] if squeeze else caps


def _adakv_core(scores: torch.Tensor, capacity: int, floor: float, normalize: bool):
    """:func:`adakv_capacities` on checked ``[batch, heads, P]`` scores."""
    b, h, p = scores.shape
    ranked = scores.float().sort(dim=-1, descending=True).values
    if normalize:
        share = ranked[..., :capacity].sum(-1, keepdim=True) / (
            ranked.sum(-1, keepdim=True) + 1e-12
        )
        ranked = ranked * share
    flat_top = ranked.reshape(b, h * p).topk(h * capacity, dim=-1).indices // p
    hits = torch.zeros(b, h, dtype=torch.float64, device=scores.device)
    hits.scatter_add_(-1, flat_top, torch.ones_like(flat_top, dtype=torch.float64))
    target = hits * (1.0 - floor) + floor * capacity
    caps = target.floor()
    short = (h * capacity - caps.sum(-1)).round().long()
    remainder_rank = (target - caps).argsort(dim=-1, descending=True, stable=True)
    bonus = torch.arange(h, device=scores.device)[None, :] < short[:, None]
    caps = caps + torch.zeros_like(caps).scatter(-1, remainder_rank, bonus.double())
    return caps.long()


class KVPolicy:
    """Base of every eviction policy: the budget ``B`` (kept tokens per KV head, window
    included) and the observation window ``w``."""

    name = "policy"
    needs_queries = True

    def __init__(self, budget: int, window: int):
        self.window = V.check_int(window, "window", low=1)
        self.budget = V.check_int(budget, "budget", low=1)
        if self.budget <= self.window:
            raise ValueError(
                f"budget must exceed the window (it counts the {self.window} window tokens "
                f"plus at least one chosen one), got budget={self.budget}"
            )

    @property
    def capacity(self) -> int:
        """``C = B - w``: prefix tokens chosen per head on average."""
        return self.budget - self.window

    def __repr__(self) -> str:
        return f"{type(self).__name__}(budget={self.budget}, window={self.window})"

    def for_layers(self, num_layers: int) -> KVPolicy:
        """This policy for a model of ``num_layers`` attention layers (the same object unless
        the policy's budgets depend on the depth, see :class:`PyramidKV`)."""
        V.check_int(num_layers, "num_layers", low=1)
        return self

    def _inputs(self, q_win, keys, values):
        k4, squeeze = _batched(keys, "keys")
        v4, _ = _batched(values, "values")
        if v4.shape[:3] != k4.shape[:3]:
            raise ValueError(
                f"values must have shape (batch, kv_heads, T, *) like keys {tuple(keys.shape)}, "
                f"got {tuple(values.shape)}"
            )
        t = k4.shape[2]
        if self.budget > t:
            raise ValueError(
                f"budget ({self.budget} tokens per head) is larger than the prompt ({t} tokens)"
            )
        q4 = None
        if self.needs_queries:
            if q_win is None:
                raise TypeError(f"q_win must be a torch.Tensor for {type(self).__name__}")
            q4, _ = _batched(q_win, "q_win")
            if q4.shape[2] != self.window:
                raise ValueError(
                    f"q_win must hold the {self.window} window queries, got {q4.shape[2]}"
                )
            if (
                q4.shape[0] != k4.shape[0]
                or q4.shape[1] % k4.shape[1]
                or q4.shape[-1] != k4.shape[-1]
            ):
                raise ValueError(
                    f"q_win {tuple(q4.shape)} must share the batch and head_dim of keys "
                    f"{tuple(k4.shape)} and have a multiple of its heads"
                )
        return q4, k4, v4, squeeze

    def select(
        self,
        q_win: torch.Tensor | None,
        keys: torch.Tensor,
        values: torch.Tensor,
        *,
        layer: int | None = None,
        scaling: float | None = None,
    ) -> Selection:
        """The kept positions of one layer (``[batch, kv_heads, T]``; unbatched input gives
        an unbatched mask). ``q_win`` holds the last ``window`` prompt queries."""
        q4, k4, v4, squeeze = self._inputs(q_win, keys, values)
        if k4.shape[2] == self.budget:  # nothing to evict
            sel = Selection(torch.ones(k4.shape[:3], dtype=torch.bool, device=k4.device))
        else:
            sel = self._select(q4, k4, v4, layer=layer, scaling=scaling)
        return Selection(sel.keep[0]) if squeeze else sel

    def _select(self, q4, k4, v4, *, layer, scaling) -> Selection:  # pragma: no cover
        # the hook each policy defines; KVPolicy itself only checks arguments and is not a policy
        raise NotImplementedError(f"{type(self).__name__} does not define _select")


class FullKV(KVPolicy):
    """Keep everything (the reference every gap is measured against)."""

    name = "full"
    needs_queries = False

    def __init__(self):
        self.window = 0
        self.budget = None

    def __repr__(self) -> str:
        return "FullKV()"

    def select(self, q_win, keys, values, *, layer=None, scaling=None) -> Selection:
        k4, squeeze = _batched(keys, "keys")
        keep = torch.ones(k4.shape[:3], dtype=torch.bool, device=k4.device)
        return Selection(keep[0] if squeeze else keep)


class SnapKV(KVPolicy):
    """SnapKV (Li et al. 2024): each KV head keeps its top-``C`` prefix tokens by the pooled
    window attention of :func:`~iclr26.llm.mixkv.snapkv_scores`, plus the window. Defaults
    follow the AdaKV path of the official code: window 32, kernel 7, max pooling, GQA mean
    (the repository's SnapKV class uses window 64, kernel 5 and average pooling)."""

    name = "snapkv"

    def __init__(
        self,
        budget: int,
        window: int = 32,
        kernel: int = 5,
        pooling: str = "avg",
        gqa: str = "mean",
    ):
        super().__init__(budget, window)
        self.kernel, self.pooling = check_kernel(kernel, pooling)
        self.gqa = V.check_choice(gqa, "gqa", GQA_REDUCTIONS)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(budget={self.budget}, window={self.window}, "
            f"kernel={self.kernel}, pooling={self.pooling!r}, gqa={self.gqa!r})"
        )

    def scores(self, q4, k4, *, scaling=None) -> torch.Tensor:
        """Pooled window attention ``[batch, kv_heads, P]`` of checked 4-D inputs."""
        return _snapkv_core(q4, k4, self.kernel, self.pooling, self.gqa, scaling)

    def capacities(self, attention: torch.Tensor, layer: int | None = None) -> torch.Tensor | int:
        """Prefix tokens each KV head keeps in ``layer``, given its pooled ``attention``
        ``[batch, kv_heads, P]``: an int for every head, or a ``[batch, kv_heads]`` tensor."""
        return self.capacity

    def _select(self, q4, k4, v4, *, layer, scaling) -> Selection:
        att = self.scores(q4, k4, scaling=scaling)
        return _keep_from_prefix(topk_mask(att, self.capacities(att, layer)), self.window)


class AdaKV(SnapKV):
    """AdaKV (Feng et al. 2024): SnapKV's scores, with the layer's ``H_kv * C`` prefix slots
    spread over its KV heads by :func:`adakv_capacities` (``floor`` of ``C`` guaranteed to each
    head, ``normalize`` on as in the released runs); each head keeps its top-``cap_h``.

    ``skip``: the first ``skip`` layers (``layer < skip``) keep the uniform ``C`` per head, as
    SnapKV does, instead of the adaptive split; they are still compressed (the released code's
    ``skip`` option; 0 in its runs). With ``skip > 0``, ``select`` needs ``layer``."""

    name = "adakv"

    def __init__(
        self,
        budget: int,
        window: int = 32,
        kernel: int = 5,
        pooling: str = "avg",
        gqa: str = "mean",
        floor: float = 0.2,
        normalize: bool = True,
        skip: int = 0,
    ):
        super().__init__(budget, window, kernel, pooling, gqa)
        self.floor = V.check_probability(floor, "floor")
        self.normalize = V.check_bool(normalize, "normalize")
        self.skip = V.check_int(skip, "skip", low=0)

    def __repr__(self) -> str:
        extra = f", skip={self.skip}" if self.skip else ""
        return super().__repr__()[:-1] + f", floor={self.floor}{extra})"

    def capacities(self, attention: torch.Tensor, layer: int | None = None) -> torch.Tensor | int:
        if self.skip:
            if layer is None:
                raise TypeError(f"layer must be given to select with AdaKV skip={self.skip}")
            if V.check_int(layer, "layer", low=0) < self.skip:
                return self.capacity
        return _adakv_core(attention, self.capacity, self.floor, self.normalize)


def _pyramid_capacities(
    capacity: int, window: int, num_layers: int, beta: float, prompt_len: int | None
) -> list[int]:
    """PyramidKV's prefix capacity per layer (checked arguments), summing to exactly
    ``num_layers * capacity``: exact linear targets, rounded by largest remainder."""
    if num_layers == 1 or (prompt_len is not None and prompt_len < 2 * capacity):
        return [capacity] * num_layers  # one layer, or a short prompt: SnapKV's uniform split
    c = Fraction(capacity)
    low = c / Fraction(beta)
    high = 2 * c - low
    if prompt_len is not None and high >= prompt_len - window:
        high = Fraction(prompt_len - window)  # the bottom layer cannot keep more than the prefix
        low = 2 * c - high
    step = (high - low) / (num_layers - 1)
    targets = [high - layer * step for layer in range(num_layers)]
    caps = [math.floor(t) for t in targets]
    short = num_layers * capacity - sum(caps)
    # largest remainder first, lower layer first on ties: keeps the budgets non-increasing
    order = sorted(range(num_layers), key=lambda i: (caps[i] - targets[i], i))
    for i in order[:short]:
        caps[i] += 1
    return caps


def pyramid_budgets(
    budget: int,
    window: int,
    num_layers: int,
    beta: float = 20.0,
    prompt_len: int | None = None,
) -> torch.Tensor:
    """PyramidKV's per-layer budgets (kept tokens per KV head, window included), bottom layer
    first: ``[num_layers]`` integers summing to exactly ``num_layers * budget``, non-increasing
    with depth. With ``C = budget - window``, the prefix capacities fall linearly from
    ``2C - C / beta`` at layer 0 to ``C / beta`` at the top, and are rounded by largest
    remainder. Given ``prompt_len`` ``T``, the bottom layer is capped at the prefix ``T - window``
    (the top then gets ``2C - (T - window)``), and a prompt shorter than ``2C`` gets the uniform
    ``budget`` in every layer, as in the released PyramidKV code. Raises when a layer would keep
    no prefix token."""
    window = V.check_int(window, "window", low=1)
    budget = V.check_int(budget, "budget", low=1)
    if budget <= window:
        raise ValueError(f"budget must exceed the window ({window}), got budget={budget}")
    num_layers = V.check_int(num_layers, "num_layers", low=1)
    beta = V.check_scalar(beta, "beta", low=1.0)
    if prompt_len is not None:
        prompt_len = V.check_int(prompt_len, "prompt_len", low=budget)
    caps = _pyramid_capacities(budget - window, window, num_layers, beta, prompt_len)
    if caps[-1] < 1:
        raise ValueError(
            f"budget={budget} is too small for PyramidKV over {num_layers} layers with "
            f"beta={beta:g}: layer {caps.index(0)} would keep no token beyond the {window}-token "
            "window; raise the budget or lower beta"
        )
    return torch.tensor(caps, dtype=torch.long) + window


class PyramidKV(SnapKV):
    """PyramidKV (Cai et al. 2024): SnapKV's scores and per-head top-k within a layer, with
    budgets that fall linearly from the bottom layer to the top (:func:`pyramid_budgets`,
    ``beta`` 20 as in the released code) and add up to ``num_layers * budget``. The window is
    kept in every layer. ``num_layers`` may be left ``None``: :func:`enable_kv_compression`
    sets it from the model. ``select`` needs ``layer``."""

    name = "pyramidkv"

    def __init__(
        self,
        budget: int,
        window: int = 32,
        kernel: int = 5,
        pooling: str = "avg",
        gqa: str = "mean",
        beta: float = 20.0,
        num_layers: int | None = None,
    ):
        super().__init__(budget, window, kernel, pooling, gqa)
        self.beta = V.check_scalar(beta, "beta", low=1.0)
        self.num_layers = None
        if num_layers is not None:
            self.num_layers = V.check_int(num_layers, "num_layers", low=1)
            pyramid_budgets(self.budget, self.window, self.num_layers, self.beta)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", beta={self.beta:g}, num_layers={self.num_layers})"

    def for_layers(self, num_layers: int) -> PyramidKV:
        num_layers = V.check_int(num_layers, "num_layers", low=1)
        if self.num_layers is None:
            bound = copy.copy(self)
            bound.num_layers = num_layers
            pyramid_budgets(bound.budget, bound.window, num_layers, bound.beta)
            return bound
        if self.num_layers != num_layers:
            raise ValueError(
                f"num_layers: the policy was built for {self.num_layers} layers, the model has "
                f"{num_layers}"
            )
        return self

    def layer_budgets(self, prompt_len: int | None = None) -> torch.Tensor:
        """Budget of every layer (window included), ``[num_layers]``, for a prompt of
        ``prompt_len`` tokens (``None``: a long one)."""
        if self.num_layers is None:
            raise TypeError("num_layers must be set (PyramidKV(..., num_layers=L))")
        return pyramid_budgets(self.budget, self.window, self.num_layers, self.beta, prompt_len)

    def capacities(self, attention: torch.Tensor, layer: int | None = None) -> int:
        if self.num_layers is None:
            raise TypeError(
                "num_layers must be set to select with PyramidKV: pass num_layers=, or run it "
                "through enable_kv_compression"
            )
        if layer is None:
            raise TypeError("layer must be given to select with PyramidKV")
        layer = V.check_int(layer, "layer", low=0, high=self.num_layers - 1)
        budgets = self.layer_budgets(attention.shape[-1] + self.window)
        return int(budgets[layer]) - self.window


class MixKV(KVPolicy):
    """MixKV on a base policy (SnapKV, AdaKV or PyramidKV): the per-head ranking score becomes
    ``r_h * diversity + (1 - r_h) * (attention + value norm)`` (:func:`mixkv_scores`), with the
    head redundancy ``r_h`` computed ``"online"`` from the prompt keys (the paper's formula),
    read from a ``"calibrated"`` per-(layer, head) ``table`` (what the released code loads;
    :func:`~iclr26.llm.mixkv.calibrate_redundancy` builds it), or fixed to one number in
    [0, 1] for ablations. On AdaKV the head capacities still come from the attention score; on
    PyramidKV each layer keeps its pyramid budget."""

    def __init__(
        self,
        base: SnapKV,
        redundancy: str | float = "online",
        table: torch.Tensor | None = None,
    ):
        if not isinstance(base, SnapKV):
            raise TypeError(
                f"base must be a SnapKV, AdaKV or PyramidKV policy, got {type(base).__name__}"
            )
        self.base = base
        self.window, self.budget = base.window, base.budget
        if isinstance(redundancy, str):
            self.redundancy = V.check_choice(redundancy, "redundancy", REDUNDANCY_MODES)
        else:
            self.redundancy = V.check_probability(redundancy, "redundancy")
        self.table = None
        if self.redundancy == "calibrated":
            if table is None:
                raise TypeError("table must be a [layers, kv_heads] tensor for calibrated mode")
            self.table = V.check_tensor(table, "table", ndim=2, floating=True, low=-1.0, high=1.0)
        elif table is not None:
            raise ValueError("table is only used with redundancy='calibrated'")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.base.name}+mixkv"

    def __repr__(self) -> str:
        return f"MixKV(base={self.base!r}, redundancy={self.redundancy!r})"

    def for_layers(self, num_layers: int) -> MixKV:
        base = self.base.for_layers(num_layers)
        if base is self.base:
            return self
        bound = copy.copy(self)
        bound.base = base
        return bound

    def head_weights(self, k4: torch.Tensor, layer: int | None) -> torch.Tensor | None:
        """``r_h`` per row and KV head, ``[batch, kv_heads]`` (``None`` for online: the
        scoring computes it from the same unit keys as the diversity)."""
        b, h = k4.shape[:2]
        if self.redundancy == "online":
            return None
        if self.redundancy == "calibrated":
            if layer is None:
                raise TypeError("layer must be given with redundancy='calibrated'")
            layer = V.check_int(layer, "layer", low=0, high=self.table.shape[0] - 1)
            if self.table.shape[1] != h:
                raise ValueError(f"table has {self.table.shape[1]} heads per layer; keys have {h}")
            return self.table[layer].float().to(k4.device).expand(b, h)
        return torch.full((b, h), float(self.redundancy), device=k4.device)

    def _select(self, q4, k4, v4, *, layer, scaling) -> Selection:
        att = self.base.scores(q4, k4, scaling=scaling)
        mixed = _mixkv_core(att, k4, v4, self.head_weights(k4, layer))
        return _keep_from_prefix(topk_mask(mixed, self.base.capacities(att, layer)), self.window)


class RandomKV(KVPolicy):
    """Reference: each head keeps ``C`` uniformly random prefix tokens, plus the window."""

    name = "random"
    needs_queries = False

    def __init__(self, budget: int, window: int = 32, seed: int = 0):
        super().__init__(budget, window)
        self.seed = V.check_int(seed, "seed", low=0)
        self._generator = torch.Generator().manual_seed(self.seed)

    def _select(self, q4, k4, v4, *, layer, scaling) -> Selection:
        b, h, t = k4.shape[:3]
        noise = torch.rand(b, h, t - self.window, generator=self._generator).to(k4.device)
        return _keep_from_prefix(topk_mask(noise, self.capacity), self.window)


class StreamingKV(KVPolicy):
    """Reference (StreamingLLM): the first ``sinks`` tokens plus the most recent
    ``B - sinks`` (which cover the window)."""

    name = "streaming"
    needs_queries = False

    def __init__(self, budget: int, window: int = 32, sinks: int = 4):
        super().__init__(budget, window)
        self.sinks = V.check_int(sinks, "sinks", low=0, high=self.capacity)

    def _select(self, q4, k4, v4, *, layer, scaling) -> Selection:
        b, h, t = k4.shape[:3]
        pos = torch.arange(t, device=k4.device)
        keep = (pos < self.sinks) | (pos >= t - (self.budget - self.sinks))
        return Selection(keep.expand(b, h, t).clone())
