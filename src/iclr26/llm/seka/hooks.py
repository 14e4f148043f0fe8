"""Removable forward hooks that edit the pre-RoPE keys of highlighted prompt tokens.

Two kinds of hook are attached together and removed together (also when attaching fails
half-way, or when the guarded block raises), so a model is never left half-modified:

* a forward pre-hook on the decoder stack decides, per forward call, whether this call is the
  *prefill* of the highlighted prompt: the KV cache is empty and the input has the mask's
  (batch, length) shape. Decode steps (cache non-empty) are never edited; their cache already
  holds the edited keys, and newly generated tokens are never steered;
* a forward hook on each selected layer's key module (``k_norm`` if present, else ``k_proj``)
  replaces the keys at highlighted positions by ``edit(layer, keys)``. The attention kernel
  (eager, SDPA, FlashAttention) then runs unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

import torch

from iclr26 import validation as V
from iclr26.llm.seka.sites import attention_sites, decoder_stack, kv_geometry

# edit(layer, selected keys (N, H_kv, d) float32, row index of each (N,)) -> edited keys
KeyEdit = Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor]


def _cache_length(kwargs: dict) -> int:
    for name in ("cache", "past_key_values"):
        cache = kwargs.get(name)
        if cache is None:
            continue
        getter = getattr(cache, "get_seq_length", None)
        if callable(getter):
            return int(getter())
        try:  # legacy tuple caches
            return int(cache[0][0].shape[-2])
        except (TypeError, IndexError, AttributeError):
            return 0
    return 0


def check_steer_mask(steer_mask, input_ids=None) -> torch.Tensor:
    """A (B, T) boolean mask (0/1 integers accepted); shape must match ``input_ids``."""
    V.check_tensor(steer_mask, "steer_mask", ndim=(1, 2), nonempty=True)
    if steer_mask.dtype != torch.bool:
        if steer_mask.is_floating_point() or not ((steer_mask == 0) | (steer_mask == 1)).all():
            raise TypeError(f"steer_mask must be boolean (or 0/1 integers), got {steer_mask.dtype}")
        steer_mask = steer_mask.bool()
    if steer_mask.dim() == 1:
        steer_mask = steer_mask[None]
    if input_ids is not None:
        V.check_tensor(input_ids, "input_ids", ndim=(1, 2), integer=True)
        shape = tuple(input_ids.shape) if input_ids.dim() == 2 else (1, input_ids.shape[0])
        if tuple(steer_mask.shape) != shape:
            raise ValueError(
                f"steer_mask has shape {tuple(steer_mask.shape)}, input_ids has {shape}"
            )
    return steer_mask


@contextmanager
def key_edit_hooks(model, steer_mask: torch.Tensor, layers: Sequence[int], edit: KeyEdit):
    """Attach the prefill gate and the key hooks of ``layers``; yield; remove them all."""
    sites = {s.layer: s for s in attention_sites(model)}  # raises before anything is attached
    geometry = kv_geometry(model)
    owner, _ = decoder_stack(model)
    unknown = [ell for ell in layers if ell not in sites]
    if unknown:
        raise ValueError(f"layers {unknown} are not layers of the model (0..{len(sites) - 1})")
    mask_cpu = steer_mask.bool()
    gate = {"active": False, "mask": None}

    def prefill_gate(_module, args, kwargs):
        x = kwargs.get("input_ids")
        if x is None:
            x = kwargs.get("inputs_embeds")
        if x is None and args:
            x = args[0]
        gate["active"] = (
            x is not None
            and tuple(x.shape[:2]) == tuple(mask_cpu.shape)
            and _cache_length(kwargs) == 0
        )
        if gate["active"]:
            gate["mask"] = mask_cpu.to(x.device)

    def make_hook(layer: int):
        def hook(_module, _inputs, output):
            if not gate["active"] or not isinstance(output, torch.Tensor):
                return None
            mask = gate["mask"]
            if tuple(output.shape[:2]) != tuple(mask.shape) or not bool(mask.any()):
                return None
            keys = output.reshape(*output.shape[:2], geometry.n_kv_heads, geometry.head_dim)
            rows = mask.nonzero(as_tuple=True)
            selected = keys[rows].float()  # (N, H, d)
            edited = edit(layer, selected, rows[0]).to(output.dtype)
            new = keys.clone()
            new[rows] = edited
            return new.reshape(output.shape)

        return hook

    handles = []
    try:
        handles.append(owner.register_forward_pre_hook(prefill_gate, with_kwargs=True))
        for ell in layers:
            handles.append(sites[ell].key_module.register_forward_hook(make_hook(ell)))
        yield
    finally:
        for handle in handles:
            handle.remove()
        gate["mask"] = None
