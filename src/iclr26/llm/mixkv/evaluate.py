"""Measurements on a Hugging Face causal LM with a compressed prompt cache: the prompt's
per-layer queries/keys/values, the teacher-forced NLL of a continuation under several policies
(scored once, evaluated many), calibrated head redundancies, and decode speed and cache bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from transformers import DynamicCache

from iclr26 import validation as V
from iclr26.llm.mixkv.integration import (
    KVCompressionConfig,
    KVPolicy,
    _as_policy,
    attention_modules,
    cache_nbytes,
    enable_kv_compression,
)
from iclr26.llm.mixkv.scoring import head_redundancy
from iclr26.models import hf_compat


def _check_ids(ids: Any, name: str, model: Any, min_len: int = 1) -> torch.Tensor:
    V.check_tensor(ids, name, ndim=(1, 2), integer=True, low=0)
    ids = ids[None] if ids.dim() == 1 else ids
    if ids.shape[1] < min_len:
        raise ValueError(f"{name} must hold at least {min_len} tokens per row, got {ids.shape[1]}")
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab is not None and int(ids.max()) >= vocab:
        raise ValueError(
            f"{name} holds token id {int(ids.max())}, outside the vocabulary ({vocab})"
        )
    return ids.long()


def _prompt_cache(model, keys_values) -> DynamicCache:
    cache = hf_compat.empty_cache(model.config)
    for layer, (k, v) in enumerate(keys_values):
        cache.update(k, v, layer)
    return cache


def capture_prompt_kv(model: Any, input_ids: torch.Tensor, window: int = 32) -> dict[str, Any]:
    """One exact forward pass of ``input_ids`` ``[batch, T]``; returns ``{"layers": [(q_win,
    keys, values, scaling) per layer], "last_logits": [batch, vocab]}`` with the last
    ``window`` queries and the cached (post-RoPE) keys and values: the inputs the policies'
    ``select`` takes."""
    window = V.check_int(window, "window", low=1)
    ids = _check_ids(input_ids, "input_ids", model, min_len=window + 1)
    attention_modules(model)
    with enable_kv_compression(model, None, capture_window=window) as state, torch.no_grad():
        cache = hf_compat.empty_cache(model.config)
        logits, _ = hf_compat.forward_with_cache(model, ids, cache)
        layers = [state.captured[i] for i in sorted(state.captured)]
    return {"layers": layers, "last_logits": logits[:, -1].float()}


def continuation_nll(
    model: Any,
    prompt_ids: torch.Tensor,
    cont_ids: torch.Tensor,
    policies: Mapping[str, KVPolicy | KVCompressionConfig],
    *,
    batch: int = 16,
) -> dict[str, torch.Tensor]:
    """Teacher-forced NLL (nats/token, mean over the continuation) of each row of
    ``cont_ids`` ``[N, S]`` after ``prompt_ids`` ``[N, T]``, with the prompt cache compressed
    in evict mode by each policy. The prompt pass is exact and shared: it runs once per batch
    and every policy selects from the same queries, keys and values. Returns ``{name: [N]}``."""
    prompt = _check_ids(prompt_ids, "prompt_ids", model, min_len=2)
    cont = _check_ids(cont_ids, "cont_ids", model, min_len=1)
    if cont.shape[0] != prompt.shape[0]:
        raise ValueError(
            f"cont_ids must have as many rows as prompt_ids ({prompt.shape[0]}), got {cont.shape[0]}"
        )
    batch = V.check_int(batch, "batch", low=1)
    if not isinstance(policies, Mapping) or not policies:
        raise TypeError("policies must be a non-empty mapping of name -> policy")
    resolved = {str(k): _as_policy(p)[0] for k, p in policies.items()}
    if any(p is None for p in resolved.values()):
        raise TypeError("policies must map names to KVPolicy or KVCompressionConfig objects")
    window = max([p.window for p in resolved.values()] + [1])
    out: dict[str, list[torch.Tensor]] = {name: [] for name in resolved}
    model_was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, prompt.shape[0], batch):
                p_ids, c_ids = prompt[start : start + batch], cont[start : start + batch]
                captured = capture_prompt_kv(model, p_ids, window=min(window, p_ids.shape[1] - 1))
                first = torch.log_softmax(captured["last_logits"], -1)
                for name, policy in resolved.items():
                    nll = _continuation_under(model, policy, captured, first, c_ids)
                    out[name].append(nll)
    finally:
        model.train(model_was_training)
    return {name: torch.cat(parts) for name, parts in out.items()}


def _continuation_under(model, policy, captured, first_logp, cont) -> torch.Tensor:
    layers = captured["layers"]
    with enable_kv_compression(model, policy, mode="evict") as state:
        policy = state.policy  # fitted to the model's depth (PyramidKV)
        for layer, (q, k, v, scaling) in enumerate(layers):
            q_win = q[:, :, -policy.window :] if policy.needs_queries else None
            state.install(layer, policy.select(q_win, k, v, layer=layer, scaling=scaling))
        nll0 = -first_logp.gather(-1, cont[:, :1])[:, 0]
        if cont.shape[1] == 1:
            return nll0
        cache = _prompt_cache(model, [(k, v) for _, k, v, _ in layers])
        logits, _ = hf_compat.forward_with_cache(model, cont[:, :-1], cache)
    logp = torch.log_softmax(logits.float(), -1)
    rest = -logp.gather(-1, cont[:, 1:, None])[..., 0]
    return (nll0 + rest.sum(-1)) / cont.shape[1]


def calibrate_redundancy(model: Any, input_ids: torch.Tensor, *, batch: int = 8) -> torch.Tensor:
    """Per-(layer, KV head) mean of the online redundancy ``r_h`` over the rows of
    ``input_ids`` ``[N, T]``: the table ``MixKV(redundancy="calibrated", table=...)`` reads
    (the released code loads such a table). Returns ``[layers, kv_heads]``."""
    ids = _check_ids(input_ids, "input_ids", model, min_len=2)
    batch = V.check_int(batch, "batch", low=1)
    sums: list[torch.Tensor] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, ids.shape[0], batch):
                cache = hf_compat.empty_cache(model.config)
                _, cache = hf_compat.forward_with_cache(model, ids[start : start + batch], cache)
                per_layer = torch.stack(
                    [head_redundancy(layer.keys).sum(0) for layer in cache.layers]
                )
                sums.append(per_layer)
    finally:
        model.train(was_training)
    return torch.stack(sums).sum(0) / ids.shape[0]


def decode_throughput(
    model: Any,
    prompt_ids: torch.Tensor,
    config: KVPolicy | KVCompressionConfig | None,
    *,
    new_tokens: int = 32,
    timer: Callable[..., Any] | None = None,
    repeat: int = 3,
) -> dict[str, Any]:
    """Greedy decode speed after a prompt, with the prompt cache physically compressed by
    ``config`` (``gather`` mode; ``None``: the full cache). The prompt pass runs untimed before
    each timed run; the timed part is ``new_tokens`` one-token steps. ``timer`` is
    ``ctx.timeit`` or :func:`iclr26.claims.timeit` (the default). Returns tokens/s (from the
    minimum CPU and wall time), the cache bytes after the prompt (a load-free count) and the
    timing record."""
    from iclr26.claims import timeit

    ids = _check_ids(prompt_ids, "prompt_ids", model, min_len=2)
    new_tokens = V.check_int(new_tokens, "new_tokens", low=1)
    repeat = V.check_int(repeat, "repeat", low=1)
    policy = _as_policy(config)[0] if config is not None else None
    timer = timeit if timer is None else timer
    holder: dict[str, Any] = {}

    def prefill():
        cache = hf_compat.empty_cache(model.config)
        logits, cache = hf_compat.forward_with_cache(model, ids, cache)
        holder["cache"], holder["next"] = cache, logits[:, -1:].argmax(-1)
        holder["bytes"] = cache_nbytes(cache)

    def decode():
        cache, nxt = holder["cache"], holder["next"]
        for _ in range(new_tokens):
            logits, cache = hf_compat.forward_with_cache(model, nxt, cache)
            nxt = logits[:, -1:].argmax(-1)
        return nxt

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), _compression_context(model, policy):
            sync = torch.cuda.synchronize if ids.device.type == "cuda" else None
            timing = timer(decode, repeat=repeat, setup=prefill, sync=sync)
    finally:
        model.train(was_training)
    n = new_tokens * ids.shape[0]
    return {
        "tokens_per_s_cpu": n / max(timing.cpu_s, 1e-12),
        "tokens_per_s_wall": n / max(timing.wall_s, 1e-12),
        "cache_bytes": holder["bytes"],
        "timing": timing.count(tokens=n, cache_bytes=holder["bytes"]).to_dict(),
    }


def _compression_context(model, policy):
    """``enable_kv_compression(model, policy, mode="gather")``, or a no-op for the full cache."""
    import contextlib

    if policy is None:
        return contextlib.nullcontext()
    return enable_kv_compression(model, policy, mode="gather")
