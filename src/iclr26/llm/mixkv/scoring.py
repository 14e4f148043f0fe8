"""Per-token scores of the prompt KV pairs of one layer: SnapKV's pooled window attention, the
value norm, the key diversity and the head redundancy that mixes them (MixKV).

Shapes follow the Hugging Face cache: keys and values ``[batch, kv_heads, T, head_dim]``, taken
after RoPE as they sit in the cache; the observation-window queries ``[batch, q_heads, w,
head_dim]`` are the last ``w`` prompt queries. Every score is over the prefix (positions
``0 .. T-w-1``): the window itself is always kept. Unbatched inputs (``[heads, T, head_dim]``)
are accepted and give unbatched scores. Every term costs O(T) per head except the window
attention, which is the base method's own cost.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr26 import validation as V

POOLINGS = ("max", "avg", "none")
GQA_REDUCTIONS = ("mean", "max")
_EPS = 1e-8


def _batched(x: torch.Tensor, name: str, *, finite: bool = True) -> tuple[torch.Tensor, bool]:
    """``x`` as a 4-D tensor and whether a batch axis was added."""
    V.check_tensor(x, name, ndim=(3, 4), floating=True, allow_nan=not finite, allow_inf=not finite)
    return (x[None], True) if x.dim() == 3 else (x, False)


def _check_pair(keys: torch.Tensor, values: torch.Tensor | None) -> None:
    if values is not None and (
        values.shape[:-1] != keys.shape[:-1] or values.dtype.is_floating_point is False
    ):
        raise ValueError(
            f"values must have shape (batch, kv_heads, T, *) like keys {tuple(keys.shape)}, "
            f"got {tuple(values.shape)}"
        )


def window_attention(
    q_win: torch.Tensor, keys: torch.Tensor, *, scaling: float | None = None
) -> torch.Tensor:
    """Softmax attention of the ``w`` window queries over all ``T`` keys, causal inside the
    window (query ``i`` sits at position ``T - w + i``): ``[batch, q_heads, w, T]`` in float32.
    Query head ``h`` reads KV head ``h // (q_heads / kv_heads)`` (grouped-query attention)."""
    _, h_q, w, d = q_win.shape
    b, h_kv, t, _ = keys.shape
    if h_q % h_kv:
        raise ValueError(f"q_win has {h_q} heads, not a multiple of the {h_kv} key heads")
    if w > t:
        raise ValueError(f"q_win has {w} window queries but keys hold only {t} tokens")
    scale = 1.0 / math.sqrt(d) if scaling is None else float(scaling)
    k = keys.float().repeat_interleave(h_q // h_kv, dim=1)
    logits = torch.matmul(q_win.float(), k.transpose(-1, -2)) * scale
    pos_q = torch.arange(t - w, t, device=keys.device)[:, None]
    future = torch.arange(t, device=keys.device)[None, :] > pos_q
    logits = logits.masked_fill(future, float("-inf"))
    return torch.softmax(logits, dim=-1)


def pool_scores(scores: torch.Tensor, kernel: int, pooling: str) -> torch.Tensor:
    """1-D pooling along positions (stride 1, padding ``kernel // 2``, length kept)."""
    if pooling == "none" or kernel == 1:
        return scores
    lead = scores.shape[:-1]
    flat = scores.reshape(-1, 1, scores.shape[-1])
    if pooling == "max":
        out = F.max_pool1d(flat, kernel_size=kernel, stride=1, padding=kernel // 2)
    else:
        out = F.avg_pool1d(flat, kernel_size=kernel, stride=1, padding=kernel // 2)
    return out.reshape(*lead, -1)


def check_kernel(kernel: int, pooling: str) -> tuple[int, str]:
    kernel = V.check_int(kernel, "kernel", low=1)
    if kernel % 2 == 0:
        raise ValueError(f"kernel must be odd so that pooling keeps the length, got {kernel}")
    pooling = V.check_choice(pooling, "pooling", POOLINGS)
    return kernel, pooling


def snapkv_scores(
    q_win: torch.Tensor,
    keys: torch.Tensor,
    *,
    kernel: int = 5,
    pooling: str = "avg",
    gqa: str = "mean",
    scaling: float | None = None,
) -> torch.Tensor:
    """SnapKV's importance of each prefix token: the window queries' attention (causal inside
    the window, scaled by ``1/sqrt(d)`` unless ``scaling`` is given), averaged over the ``w``
    queries, reduced over the query heads that share a KV head (``gqa`` mean or max), then
    pooled over positions (``pooling`` max/avg/none, odd ``kernel``). Returns
    ``[batch, kv_heads, T - w]`` (``[kv_heads, T - w]`` for unbatched input)."""
    kernel, pooling = check_kernel(kernel, pooling)
    gqa = V.check_choice(gqa, "gqa", GQA_REDUCTIONS)
    if scaling is not None:
        scaling = V.check_scalar(scaling, "scaling", low=0.0, low_open=True)
    q4, squeeze = _batched(q_win, "q_win")
    k4, _ = _batched(keys, "keys")
    if q4.shape[0] != k4.shape[0] or q4.shape[-1] != k4.shape[-1]:
        raise ValueError(
            f"q_win {tuple(q_win.shape)} and keys {tuple(keys.shape)} must share batch and head_dim"
        )
    if q4.shape[1] % k4.shape[1]:
        raise ValueError(
            f"q_win has {q4.shape[1]} heads, not a multiple of the {k4.shape[1]} key heads"
        )
    if q4.shape[2] >= k4.shape[2]:
        raise ValueError(
            f"q_win has {q4.shape[2]} window queries; keys need more than that, got {k4.shape[2]}"
        )
    out = _snapkv_core(q4, k4, kernel, pooling, gqa, scaling)
    return out[0] if squeeze else out


def _snapkv_core(q4, k4, kernel: int, pooling: str, gqa: str, scaling) -> torch.Tensor:
    """:func:`snapkv_scores` on checked 4-D inputs."""
    w, t = q4.shape[2], k4.shape[2]
    attn = window_attention(q4, k4, scaling=scaling)[..., : t - w].mean(dim=-2)
    b, h_q, p = attn.shape
    grouped = attn.view(b, k4.shape[1], h_q // k4.shape[1], p)
    reduced = grouped.mean(dim=2) if gqa == "mean" else grouped.amax(dim=2)
    return pool_scores(reduced, kernel, pooling)


def head_redundancy(keys: torch.Tensor) -> torch.Tensor:
    """Online redundancy of each head: the mean pairwise cosine between its ``T`` keys over
    distinct pairs, ``(T * ||mean_i k_i/||k_i|| ||^2 - 1) / (T - 1)``, computed in O(T).
    ``keys`` is ``[..., T, head_dim]``; the result drops the last two axes (``(kv_heads,)``
    for ``[kv_heads, T, d]``)."""
    V.check_tensor(keys, "keys", min_ndim=2, floating=True)
    if keys.shape[-2] < 2:
        raise ValueError(f"keys must hold at least 2 tokens to compare, got {keys.shape[-2]}")
    return _redundancy_from_mean(F.normalize(keys.float(), dim=-1).mean(dim=-2), keys.shape[-2])


def _redundancy_from_mean(mean_unit_key: torch.Tensor, t: int) -> torch.Tensor:
    return (t * mean_unit_key.pow(2).sum(-1) - 1.0) / (t - 1)


def _minmax_to_mean(score: torch.Tensor, target_mean: torch.Tensor) -> torch.Tensor:
    """Min-max normalise along positions, then rescale so its mean equals ``target_mean``.
    (The min-max range cancels in the rescale, so it is folded away: one pass fewer.)"""
    lo = score.amin(dim=-1, keepdim=True)
    return (score - lo) * (target_mean / (score.mean(dim=-1, keepdim=True) - lo + _EPS))


def _check_window(window: int, t: int) -> int:
    window = V.check_int(window, "window", low=0)
    if window >= t:
        raise ValueError(f"window must leave a prefix: window={window} with only {t} tokens")
    return window


def diversity_scores(keys: torch.Tensor, window: int) -> torch.Tensor:
    """Raw diversity of each prefix token: ``-cos(k_i, mean of all T unit keys)``
    (the mean includes the window, as in the official code): ``[..., T - window]``."""
    V.check_tensor(keys, "keys", min_ndim=2, floating=True)
    window = _check_window(window, keys.shape[-2])
    unit = F.normalize(keys.float(), dim=-1)
    mean = unit.mean(dim=-2, keepdim=True)
    return -(unit[..., : keys.shape[-2] - window, :] * mean).sum(-1)


def value_norm_scores(values: torch.Tensor, window: int) -> torch.Tensor:
    """Intrinsic importance of each prefix token: ``||v_i||_2``: ``[..., T - window]``."""
    V.check_tensor(values, "values", min_ndim=2, floating=True)
    return _value_norm(values, _check_window(window, values.shape[-2]))


def _value_norm(values: torch.Tensor, window: int) -> torch.Tensor:
    return values[..., : values.shape[-2] - window, :].float().norm(dim=-1)


def mixkv_scores(
    attention: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    redundancy: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """MixKV's composite score of each prefix token:
    ``s = r_h * s_div + (1 - r_h) * (s_att + s_vn)``, where ``s_att`` is the base method's
    ``attention`` score ``[batch, kv_heads, P]``, ``s_vn`` the value norm and ``s_div`` the key
    diversity, each min-max normalised and rescaled to the mean of ``s_att``, and ``r_h`` the
    head redundancy (``None``: online from ``keys``; a tensor broadcastable to ``[batch,
    kv_heads]``; or one number for every head). The window length is ``T - P``."""
    k4, squeeze = _batched(keys, "keys")
    v4, _ = _batched(values, "values")
    _check_pair(k4, v4)
    V.check_tensor(attention, "attention", ndim=keys.dim() - 1, floating=True)
    att4 = attention[None] if squeeze else attention
    b, h, t, _ = k4.shape
    if att4.shape[:2] != (b, h) or att4.shape[-1] >= t:
        raise ValueError(
            f"attention must have shape (batch, kv_heads, P) with P < T={t} for keys "
            f"{tuple(keys.shape)}, got {tuple(attention.shape)}"
        )
    if isinstance(redundancy, torch.Tensor):
        V.check_tensor(redundancy, "redundancy", floating=True, low=-1.0, high=1.0)
        redundancy = redundancy.float().expand(b, h)
    elif redundancy is not None:
        redundancy = V.check_scalar(redundancy, "redundancy", low=-1.0, high=1.0)
    out = _mixkv_core(att4, k4, v4, redundancy)
    return out[0] if squeeze else out


def _mixkv_core(att: torch.Tensor, k4: torch.Tensor, v4: torch.Tensor, redundancy) -> torch.Tensor:
    """:func:`mixkv_scores` on checked 4-D inputs; ``redundancy`` ``None`` (online), a
    ``[batch, kv_heads]`` tensor or a number."""
    b, h, t, _ = k4.shape
    p = att.shape[-1]
    keys = k4.float()
    # unit keys are never materialised: with inv_i = 1/||k_i||, the mean unit key is
    # inv^T K / T and cos(k_i, mean) = inv_i * (K mean)_i (two reads of K, no write)
    inv = torch.linalg.vector_norm(keys, dim=-1).clamp_min(1e-12).reciprocal()
    mean = (inv[..., None, :] @ keys)[..., 0, :] / t  # over all T tokens, window included
    if redundancy is None:
        r = _redundancy_from_mean(mean, t)
    elif isinstance(redundancy, torch.Tensor):
        r = redundancy.float().to(att.device)
    else:
        r = torch.full((b, h), float(redundancy), device=att.device)
    att = att.float()
    target = att.mean(dim=-1, keepdim=True)
    diversity = -(keys[:, :, :p] @ mean[..., None])[..., 0] * inv[..., :p]
    # value norm and diversity normalised together: [2, batch, kv_heads, P]
    both = _minmax_to_mean(torch.stack([_value_norm(v4, t - p), diversity]), target)
    return torch.lerp(att + both[0], both[1], r[..., None])
