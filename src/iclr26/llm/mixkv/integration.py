"""KV-cache compression inside any Hugging Face decoder, through transformers' own hooks.

:func:`enable_kv_compression` registers an attention function (``"kvc_sdpa"`` / ``"kvc_eager"``)
in transformers' ``AttentionInterface`` and switches the model to it for the duration of a
``with`` block. On the prompt forward pass it computes exact attention, then hands the last
``window`` queries and the layer's keys and values (after RoPE, as cached) to the policy
(SnapKV, AdaKV, PyramidKV, MixKV, ...) and stores which prefix tokens each KV head keeps. Later passes
then run in one of two modes:

* ``"evict"``: the full cache stays; dropped prefix positions are masked per KV head for every
  new query. Exact for any per-head budgets; used for quality measurements.
* ``"gather"``: the kept pairs are physically gathered into a :class:`CompressedCache` (a
  ``DynamicCache`` whose layers remember the logical length, so positions, RoPE and masks stay
  right). Uniform budgets need no mask; AdaKV's variable ones are padded to the largest head
  and masked. Used for memory and latency.

Kept tokens keep their original RoPE rotation, as in SnapKV/AdaKV. The model is restored on
exit, also after an error.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from iclr26 import validation as V
from iclr26.llm.mixkv.policies import (
    AdaKV,
    FullKV,
    KVPolicy,
    MixKV,
    PyramidKV,
    RandomKV,
    Selection,
    SnapKV,
    StreamingKV,
)
from iclr26.llm.mixkv.scoring import GQA_REDUCTIONS, POOLINGS

MODES = ("evict", "gather")
METHODS = (
    "full",
    "snapkv",
    "adakv",
    "pyramidkv",
    "mixkv",
    "snapkv+mixkv",
    "adakv+mixkv",
    "pyramidkv+mixkv",
    "random",
    "streaming",
)
BASES = ("snapkv", "adakv", "pyramidkv")
_STATE_ATTR = "_kv_compression_state"
_BASE_IMPL = {"sdpa": "kvc_sdpa", "eager": "kvc_eager"}


# ----------------------------------------------------------------- configuration


@dataclass
class KVCompressionConfig:
    """What to compress and how. ``method``: ``full``, ``snapkv``, ``adakv``, ``pyramidkv``,
    ``mixkv`` (on ``base``), ``snapkv+mixkv``, ``adakv+mixkv``, ``pyramidkv+mixkv``, ``random``
    or ``streaming``. ``budget``: kept tokens per KV head *including* the ``window`` (for
    PyramidKV the mean over layers). ``mode``: ``evict`` (mask) or ``gather`` (physically
    smaller cache). ``adakv_skip``: AdaKV's ``skip``; ``pyramid_beta`` and ``num_layers``:
    PyramidKV's (``num_layers`` ``None``: taken from the model)."""

    method: str = "mixkv"
    base: str = "snapkv"
    budget: int = 64
    window: int = 32
    kernel: int = 5
    pooling: str = "avg"
    gqa: str = "mean"
    adakv_floor: float = 0.2
    adakv_normalize: bool = True
    adakv_skip: int = 0
    pyramid_beta: float = 20.0
    num_layers: int | None = None
    redundancy: str | float = "online"
    table: torch.Tensor | None = None
    mode: str = "evict"
    sinks: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        V.check_choice(self.method, "method", METHODS)
        V.check_choice(self.base, "base", BASES)
        V.check_choice(self.mode, "mode", MODES)
        V.check_choice(self.pooling, "pooling", POOLINGS)
        V.check_choice(self.gqa, "gqa", GQA_REDUCTIONS)
        self.policy()  # validates budget, window, kernel, floor, redundancy, table, sinks

    def policy(self) -> KVPolicy:
        """The :class:`KVPolicy` this configuration describes."""
        method, base = self.method, self.base
        if "+" in method:
            base, method = method.split("+")
        if method == "full":
            return FullKV()
        if method == "random":
            return RandomKV(self.budget, self.window, seed=self.seed)
        if method == "streaming":
            return StreamingKV(self.budget, self.window, sinks=self.sinks)
        kw = dict(kernel=self.kernel, pooling=self.pooling, gqa=self.gqa)
        inner_name = base if method == "mixkv" else method
        if inner_name == "adakv":
            inner = AdaKV(
                self.budget,
                self.window,
                floor=self.adakv_floor,
                normalize=self.adakv_normalize,
                skip=self.adakv_skip,
                **kw,
            )
        elif inner_name == "pyramidkv":
            inner = PyramidKV(
                self.budget, self.window, beta=self.pyramid_beta, num_layers=self.num_layers, **kw
            )
        else:
            inner = SnapKV(self.budget, self.window, **kw)
        if method == "mixkv":
            return MixKV(inner, redundancy=self.redundancy, table=self.table)
        return inner


def make_policy(name: str, budget: int, window: int = 32, **options: Any) -> KVPolicy:
    """A policy by name (``snapkv``, ``adakv``, ``pyramidkv``, ``snapkv+mixkv``,
    ``adakv+mixkv``, ``pyramidkv+mixkv``, ``random``, ``streaming``, ``full``); ``options`` are
    further :class:`KVCompressionConfig` fields."""
    return KVCompressionConfig(method=name, budget=budget, window=window, **options).policy()


# ----------------------------------------------------------------- the compressed cache


class CompressedLayer(DynamicLayer):
    """A dynamic cache layer that can be shrunk to kept positions while remembering the
    logical length (tokens seen), so that positions and masks continue correctly."""

    is_croppable = False

    def _logical(self) -> int:
        return getattr(self, "logical_length", 0)

    def update(self, key_states, value_states, *args, **kwargs):
        self.logical_length = self._logical() + key_states.shape[-2]
        return super().update(key_states, value_states, *args, **kwargs)

    def physical_length(self) -> int:
        if not getattr(self, "is_initialized", False) or self.keys is None:
            return 0
        return int(self.keys.shape[-2]) if self.keys.numel() else 0

    def get_seq_length(self) -> int:
        return self._logical()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        phys = self.physical_length()
        return phys + query_length, self._logical() - phys

    def compress(self, index: torch.Tensor) -> None:
        """Keep, per row and KV head, the positions ``index`` ``[batch, kv_heads, M]``."""
        gather = index[..., None].expand(-1, -1, -1, self.keys.shape[-1])
        self.keys = self.keys.gather(2, gather)
        self.values = self.values.gather(
            2, index[..., None].expand(-1, -1, -1, self.values.shape[-1])
        )

    def crop(self, tokens_to_remove: int) -> None:
        if self.physical_length() != self._logical():
            raise NotImplementedError("a compressed cache layer cannot be cropped")
        super().crop(tokens_to_remove)
        self.logical_length = self.physical_length()

    def reset(self) -> None:
        super().reset()
        self.logical_length = 0


class CompressedCache(DynamicCache):
    """A ``DynamicCache`` whose prompt part is physically reduced to the kept KV pairs.

    Pass one to ``generate(..., past_key_values=cache)`` (``cache=`` in transformers 5) inside
    :func:`enable_kv_compression` in ``gather`` mode, or let the context create it: an empty
    cache (or none) handed to the model is replaced by a fresh ``CompressedCache``.
    ``get_seq_length`` reports tokens seen (so RoPE positions continue), ``nbytes`` the bytes
    actually stored."""

    def __init__(self, config: Any | None = None):
        layer_cls = CompressedLayer
        if config is not None:
            text = (
                config.get_text_config(decoder=True)
                if hasattr(config, "get_text_config")
                else config
            )
            V.check_module_attrs(text, "config", ["num_hidden_layers"])
            _check_full_attention(text, "config")
            Cache.__init__(self, layers=[layer_cls() for _ in range(text.num_hidden_layers)])
        else:
            Cache.__init__(self, layer_class_to_replicate=layer_cls)
        self.valid: dict[int, torch.Tensor] = {}

    def compress_layer(self, layer_idx: int, selection: Selection) -> torch.Tensor | None:
        """Gather layer ``layer_idx`` to ``selection``'s kept positions; returns the padding
        mask ``[batch, kv_heads, M]`` when the per-head counts differ (else ``None``)."""
        index, valid = selection.gather_plan()
        self.layers[layer_idx].compress(index.to(self.layers[layer_idx].keys.device))
        mask = None if bool(valid.all()) else valid
        if mask is not None:
            self.valid[layer_idx] = mask
        return mask

    def nbytes(self) -> int:
        return cache_nbytes(self)


def cache_nbytes(cache: Any) -> int:
    """Bytes held by the key and value tensors of a transformers cache (a load-free count)."""
    V.check_module_attrs(cache, "cache", ["layers"])
    total = 0
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return int(total)


# ----------------------------------------------------------------- the attention hook


def _eager_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
    n_rep = query.shape[1] // key.shape[1]
    k = key.repeat_interleave(n_rep, dim=1) if n_rep > 1 else key
    v = value.repeat_interleave(n_rep, dim=1) if n_rep > 1 else value
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    logits = torch.matmul(query, k.transpose(2, 3)) * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            logits = logits.masked_fill(~attention_mask, torch.finfo(logits.dtype).min)
        else:
            logits = logits + attention_mask[..., : k.shape[-2]]
    elif query.shape[2] > 1:
        logits = logits.masked_fill(
            ~_causal(query.shape[2], k.shape[2], query.device), float("-inf")
        )
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, v).transpose(1, 2).contiguous(), weights


def _base_attention(name: str):
    if name == "eager":
        return _eager_attention
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward


def _causal(q_len: int, kv_len: int, device) -> torch.Tensor:
    """``[q, kv]``: query ``i`` (the last ``q`` positions) sees keys ``j <= kv - q + i``."""
    rows = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)
    return torch.arange(kv_len, device=device)[None, :] <= rows


@dataclass
class _LayerEntry:
    prefix_len: int  # keys present when the selection was made
    keep: torch.Tensor  # [batch, kv_heads, prefix_len]
    physical_valid: torch.Tensor | None = None  # gather mode: padding mask of the kept part
    physical: bool = False

    def key_mask(self, kv_len: int) -> torch.Tensor | None:
        """Per-KV-head key mask ``[batch, kv_heads, kv_len]`` for a later pass, or ``None``."""
        if self.physical:
            if self.physical_valid is None:
                return None
            stored = self.physical_valid
        else:
            stored = self.keep
            if bool(stored.all()):
                return None
        if kv_len < stored.shape[-1]:
            raise RuntimeError(
                f"the cache holds {kv_len} keys, fewer than the {stored.shape[-1]} it held at "
                "selection; a compressed cache cannot be cropped"
            )
        extra = torch.ones(*stored.shape[:2], kv_len - stored.shape[-1], dtype=torch.bool)
        return torch.cat([stored, extra.to(stored.device)], dim=-1)


@dataclass
class KVCompressionState:
    """What :func:`enable_kv_compression` yields: the policy, the mode, and per layer the kept
    positions of the current sequence (``selections``)."""

    policy: KVPolicy | None
    mode: str
    base_implementation: str
    selections: dict[int, Selection] = field(default_factory=dict)
    entries: dict[int, _LayerEntry] = field(default_factory=dict)
    captured: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor, float | None]] = field(
        default_factory=dict
    )
    capture_window: int = 0
    recording: bool = True
    cache: Any = None
    config: Any = None

    def begin_sequence(self) -> None:
        self.selections.clear()
        self.entries.clear()
        self.captured.clear()

    def new_cache(self) -> CompressedCache:
        """A fresh :class:`CompressedCache` for this model."""
        return CompressedCache(self.config)

    def install(self, layer: int, selection: Selection, cache: Any = None) -> None:
        """Use ``selection`` for ``layer`` from now on (physically when ``cache`` is a
        :class:`CompressedCache`)."""
        self.selections[layer] = selection
        entry = _LayerEntry(prefix_len=selection.keep.shape[-1], keep=selection.keep)
        if isinstance(cache, CompressedCache):
            entry.physical_valid = cache.compress_layer(layer, selection)
            entry.physical = True
        self.entries[layer] = entry

    def attend(self, module, query, key, value, attention_mask, **kwargs):
        base = _base_attention(self.base_implementation)
        layer = getattr(module, "layer_idx", None)
        q_len, kv_len = query.shape[2], key.shape[2]
        entry = self.entries.get(layer)
        if entry is None:
            out = base(module, query, key, value, attention_mask, **kwargs)
            if self.recording and q_len == kv_len:
                self._on_prompt(module, query, key, value, attention_mask, kwargs.get("scaling"))
            return out
        extra = entry.key_mask(kv_len)
        model_mask_fits = attention_mask is None or attention_mask.shape[-1] == kv_len
        if extra is None and model_mask_fits:
            return base(module, query, key, value, attention_mask, **kwargs)
        if entry.physical:
            # Physical layers may differ in length (AdaKV pads each layer to its own largest
            # head) while the model sizes one mask for all of them; prompts are unpadded, so
            # the model's mask only carries causality, which _combine rebuilds per layer.
            attention_mask = None
            if extra is None:
                extra = torch.ones(*key.shape[:2], kv_len, dtype=torch.bool, device=key.device)
        mask = _combine(attention_mask, extra, query.shape[1], q_len, kv_len, query.dtype)
        return base(module, query, key, value, mask, **kwargs)

    def _on_prompt(self, module, query, key, value, attention_mask, scaling) -> None:
        _refuse_padding(attention_mask)
        layer = module.layer_idx
        if self.capture_window:
            w = min(self.capture_window, query.shape[2])
            self.captured[layer] = (
                query[:, :, -w:].detach(),
                key.detach(),
                value.detach(),
                scaling,
            )
        if self.policy is None:
            return
        w = self.policy.window
        q_win = query[:, :, -w:] if self.policy.needs_queries else None
        selection = self.policy.select(q_win, key, value, layer=layer, scaling=scaling)
        self.install(layer, selection, self.cache if self.mode == "gather" else None)


def _refuse_padding(attention_mask) -> None:
    if attention_mask is None or not isinstance(attention_mask, torch.Tensor):
        return
    last = attention_mask[:, 0, -1, :]
    visible = last if last.dtype == torch.bool else last > torch.finfo(last.dtype).min / 2
    if not bool(visible.all()):
        raise ValueError(
            "attention_mask: padded prompts are not supported by KV compression; "
            "compress one unpadded prompt per row (equal lengths)"
        )


def _combine(attention_mask, extra, n_heads, q_len, kv_len, dtype):
    """The model's mask AND the per-KV-head key mask, as ``[batch, q_heads, q, kv]``."""
    n_rep = n_heads // extra.shape[1]
    keys = extra.repeat_interleave(n_rep, dim=1)[:, :, None, :]
    if attention_mask is None:
        causal = _causal(q_len, kv_len, extra.device)[None, None] if q_len > 1 else True
        return keys & causal
    mask = attention_mask[..., :kv_len]
    if mask.dtype == torch.bool:
        return keys & mask
    return torch.where(keys, mask, torch.finfo(mask.dtype).min)


def _compressed_attention(module, query, key, value, attention_mask, **kwargs):
    state = getattr(module, _STATE_ATTR, None)
    if state is None:  # a model switched to our name outside the context manager
        return _base_attention("sdpa")(module, query, key, value, attention_mask, **kwargs)
    return state.attend(module, query, key, value, attention_mask, **kwargs)


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask, sdpa_mask

    AttentionInterface.register("kvc_sdpa", _compressed_attention)
    AttentionInterface.register("kvc_eager", _compressed_attention)
    AttentionMaskInterface.register("kvc_sdpa", sdpa_mask)
    AttentionMaskInterface.register("kvc_eager", eager_mask)


# ----------------------------------------------------------------- the context manager


def _check_full_attention(config: Any, name: str = "model") -> None:
    types = getattr(config, "layer_types", None)
    if types and any(t != "full_attention" for t in types):
        raise ValueError(
            f"{name}: only full-attention layers can be compressed; this config has layer types "
            f"{sorted(set(types))}"
        )


def attention_modules(model: Any) -> list[torch.nn.Module]:
    """The attention modules of a Hugging Face decoder that the hook can serve (they carry
    ``layer_idx`` and ``num_key_value_groups``); raises when the model cannot be hooked."""
    try:
        from transformers import PreTrainedModel
    except ImportError:  # pragma: no cover
        raise TypeError("model must be a Hugging Face PreTrainedModel") from None
    if not isinstance(model, PreTrainedModel):
        raise TypeError(f"model must be a Hugging Face PreTrainedModel, got {type(model).__name__}")
    cls = type(model)
    if not (
        getattr(cls, "_supports_attention_backend", False) and cls._can_set_attn_implementation()
    ):
        raise ValueError(
            f"model: {cls.__name__} attention cannot be hooked: it does not dispatch through "
            "transformers' AttentionInterface"
        )
    mods = [
        m
        for m in model.modules()
        if isinstance(getattr(m, "layer_idx", None), int) and hasattr(m, "num_key_value_groups")
    ]
    if not mods:
        raise ValueError(f"model: {cls.__name__} has no attention layers that can be hooked")
    if len({m.layer_idx for m in mods}) != len(mods):
        raise ValueError(f"model: {cls.__name__} has several attention modules per layer index")
    return mods


def _as_policy(config: KVCompressionConfig | KVPolicy | None) -> tuple[KVPolicy | None, str | None]:
    if config is None:
        return None, None
    if isinstance(config, KVCompressionConfig):
        return config.policy(), config.mode
    if isinstance(config, KVPolicy):
        return config, None
    raise TypeError(
        f"config must be a KVCompressionConfig or a KVPolicy, got {type(config).__name__}"
    )


@contextlib.contextmanager
def enable_kv_compression(
    model: Any,
    config: KVCompressionConfig | KVPolicy | None,
    *,
    mode: str | None = None,
    capture_window: int = 0,
):
    """Run every forward pass and ``generate()`` of ``model`` inside the block with the KV
    cache compressed by ``config`` (a :class:`KVCompressionConfig` or a policy such as
    ``MixKV(SnapKV(64, 16))``; ``None`` only records, see ``capture_window``). A policy whose
    budgets depend on the depth (PyramidKV) is fitted to the model's layer count; the state
    holds that fitted policy.

    ``mode`` (``"evict"`` or ``"gather"``) overrides the config's. A call whose cache is empty
    (or absent) starts a new sequence: its prompt pass selects the kept tokens per layer.
    ``capture_window > 0`` also keeps the prompt's last ``capture_window`` queries and its keys
    and values per layer in ``state.captured``. Yields the :class:`KVCompressionState`. The
    model's attention implementation, modules and hooks are restored on exit."""
    policy, cfg_mode = _as_policy(config)
    mode = V.check_choice(mode if mode is not None else (cfg_mode or "evict"), "mode", MODES)
    capture_window = V.check_int(capture_window, "capture_window", low=0)
    mods = attention_modules(model)
    if policy is not None:
        policy = policy.for_layers(max(m.layer_idx for m in mods) + 1)
    _check_full_attention(model.config)
    current = getattr(model.config, "_attn_implementation", None) or "eager"
    if current in ("kvc_sdpa", "kvc_eager"):
        raise ValueError("model: KV compression is already enabled on this model")
    if current not in _BASE_IMPL:
        raise ValueError(
            f"model: attention implementation {current!r} is not supported; load the model with "
            "attn_implementation='sdpa' or 'eager'"
        )
    _register()
    from iclr26.models import hf_compat

    state = KVCompressionState(
        policy=policy,
        mode=mode,
        base_implementation=current,
        capture_window=capture_window,
        config=model.config,
    )
    cache_key = hf_compat.cache_kwarg(model)

    def before(module, args, kwargs):
        name = next((k for k in ("cache", "past_key_values") if kwargs.get(k) is not None), None)
        cache = kwargs.get(name) if name else None
        fresh = cache is None or cache.get_seq_length() == 0
        use_cache = kwargs.get("use_cache")
        use_cache = getattr(model.config, "use_cache", True) if use_cache is None else use_cache
        if fresh:
            state.begin_sequence()
        state.recording = fresh
        if mode == "gather" and fresh and use_cache:
            if cache is None or type(cache) is DynamicCache:
                cache = state.new_cache()
                kwargs.pop("past_key_values", None)
                kwargs[cache_key] = cache
            elif not isinstance(cache, CompressedCache):
                raise TypeError(
                    f"cache: gather mode needs a DynamicCache or CompressedCache, got {type(cache).__name__}"
                )
        state.cache = cache
        return args, kwargs

    def after(module, args, kwargs, output):
        state.cache = None

    handles = []
    try:
        for m in mods:
            setattr(m, _STATE_ATTR, state)
        hf_compat.set_attention(model, _BASE_IMPL[current])
        handles.append(model.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(model.register_forward_hook(after, with_kwargs=True))
        yield state
    finally:
        for h in handles:
            h.remove()
        for m in mods:
            if _STATE_ATTR in m.__dict__:
                delattr(m, _STATE_ATTR)
        hf_compat.set_attention(model, current)
