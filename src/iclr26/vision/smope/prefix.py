"""Prefix attention on any protocol ViT, and the frozen-backbone base of every prompt method.

Prefix tuning adds learnable key/value vectors to a frozen attention layer: for token i the
softmax runs over ``[prefix logits_i ; q_i k_n / sqrt(d_h)]`` and the values are
``[prefix values ; v_n]``. Each method here decides only *which* prefix logits and values a
layer gets (SMoPE: the aggregated score of its top-K experts; L2P/CODA: prompt tokens chosen
or weighted by a query pass). :func:`patch_attention` replaces ``block.attn.forward`` of the
chosen blocks with a prefix-aware forward written against the protocol names only
(``attn.qkv``, ``attn.num_heads``, ``attn.proj``, optional ``scale``/``q_norm``/``k_norm``/
``norm``/``proj_drop``); while no method is active the patched forward is the original one, so
one backbone may be shared by several wrappers. :class:`PassCounter` counts actual backbone
passes (calls of ``patch_embed``), a load-free cost.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import attention_qkv, check_images, check_vit, pooled

_SLOT = "_iclr26_prefix"  # the active prefix function of an attention module (or absent)
_PATCHED = "_iclr26_prefix_patched"
_ORIGINAL = "_iclr26_prefix_original"

PrefixFn = Callable[[torch.Tensor, float], tuple[torch.Tensor, torch.Tensor]]


def prefix_attention(attn: nn.Module, x: torch.Tensor, prefix: PrefixFn) -> torch.Tensor:
    """Multi-head attention of a protocol ``attn`` module on tokens ``x`` (B, T, D) with a
    prefix: ``prefix(q, scale)`` returns the prefix logits (B, H, T, P), already scaled, and
    the prefix values (B, H, P, d_h); the softmax runs over prefix and token logits jointly."""
    b, t, d = x.shape
    q, k, v = attention_qkv(attn, x)
    scale = float(getattr(attn, "scale", q.shape[-1] ** -0.5))
    prefix_logits, prefix_values = prefix(q, scale)
    logits = torch.cat([prefix_logits, (q @ k.transpose(-2, -1)) * scale], dim=-1)
    weights = logits.softmax(dim=-1)
    out = weights @ torch.cat([prefix_values.to(v.dtype), v], dim=2)
    out = out.transpose(1, 2).reshape(b, t, d)
    norm = getattr(attn, "norm", None)
    if isinstance(norm, nn.Module):
        out = norm(out)
    out = attn.proj(out)
    drop = getattr(attn, "proj_drop", None)
    return drop(out) if isinstance(drop, nn.Module) else out


def _patched_forward(self: nn.Module, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    prefix = self.__dict__.get(_SLOT)
    if prefix is None:
        original = self.__dict__.get(_ORIGINAL)
        if original is not None:
            return original(x, *args, **kwargs)
        return type(self).forward(self, x, *args, **kwargs)
    return prefix_attention(self, x, prefix)


def patch_attention(vit: nn.Module, layers: Iterable[int]) -> None:
    """Replace ``vit.blocks[l].attn.forward`` for ``l`` in ``layers`` by the prefix-aware
    forward (idempotent; the original forward runs while no prefix is active)."""
    check_vit(vit, "vit")
    for layer in check_layers(layers, len(vit.blocks)):
        attn = vit.blocks[layer].attn
        if attn.__dict__.get(_PATCHED):
            continue
        V.check_module_attrs(attn, f"backbone.blocks[{layer}].attn", ("qkv", "num_heads", "proj"))
        if "forward" in attn.__dict__:  # already replaced by someone else: chain it
            attn.__dict__[_ORIGINAL] = attn.__dict__["forward"]
        attn.forward = types.MethodType(_patched_forward, attn)
        attn.__dict__[_PATCHED] = True


def input_channels(vit: nn.Module) -> int | None:
    """The image channels the backbone's patch embedding takes (None when unknown)."""
    pe = vit.patch_embed
    conv = getattr(pe, "proj", None)
    if not isinstance(conv, nn.Conv2d):
        conv = next((m for m in pe.modules() if isinstance(m, nn.Conv2d)), None)
    return int(conv.in_channels) if conv is not None else None


def check_layers(layers: Iterable[int], depth: int, name: str = "layers") -> tuple[int, ...]:
    """Distinct block indices in ``[0, depth)``, sorted."""
    if isinstance(layers, int | np.integer):
        raise TypeError(f"{name} must be a sequence of block indices, got the integer {layers}")
    try:
        items = list(layers)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of block indices") from None
    if not items:
        raise ValueError(f"{name} is empty: give at least one block index")
    out = sorted({V.check_int(i, name, low=0, high=depth - 1) for i in items})
    if len(out) != len(items):
        raise ValueError(f"{name} holds a repeated block index: {items}")
    return tuple(out)


class PassCounter:
    """Counts images sent through a backbone (a forward hook on ``patch_embed``): ``images``
    after a block of code, divided by the images given, is the backbone passes per image."""

    def __init__(self, vit: nn.Module):
        V.check_module_attrs(vit, "vit", ("patch_embed",))
        if not isinstance(vit.patch_embed, nn.Module):
            raise TypeError("vit.patch_embed must be an nn.Module")
        self.vit = vit
        self.images = 0
        self.calls = 0
        self._handle = None

    def _hook(self, module, inputs, output) -> None:
        self.calls += 1
        self.images += int(inputs[0].shape[0])

    def __enter__(self) -> PassCounter:
        self._handle = self.vit.patch_embed.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def per_image(self, n_images: int) -> float:
        return self.images / max(int(n_images), 1)


class PromptedViT(nn.Module):
    """A frozen protocol ViT, a linear head over ``num_classes`` and the class-incremental
    masks: during training only the current task's classes are live (past and future logits
    are -inf, the heuristic of the CODA-P code base); at evaluation every seen class is.

    Subclasses implement ``_prefix(position, q, scale)`` for the prompted ``layers`` (position
    = index into ``self.layers``) and may override ``begin_task``/``end_task``/
    ``prompt_loss``. The backbone is frozen in place (``requires_grad=False``, eval mode)."""

    backbone_passes_per_image: int = 1
    trained_by_gradient: bool = True

    def __init__(self, vit: nn.Module, num_classes: int, layers: Sequence[int]):
        super().__init__()
        check_vit(vit, "vit")
        if not isinstance(vit, nn.Module):
            raise TypeError(f"vit must be an nn.Module, got {type(vit).__name__}")
        self.num_classes = V.check_int(num_classes, "num_classes", low=2)
        self.layers = check_layers(layers, len(vit.blocks))
        self.embed_dim = int(vit.embed_dim)
        self.num_heads = int(vit.blocks[self.layers[0]].attn.num_heads)
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"vit.embed_dim ({self.embed_dim}) is not divisible by num_heads ({self.num_heads})"
            )
        self.head_dim = self.embed_dim // self.num_heads
        self.in_chans = input_channels(vit)
        for p in vit.parameters():
            p.requires_grad_(False)
        vit.eval()
        self.backbone = vit
        patch_attention(vit, self.layers)
        self.head = nn.Linear(self.embed_dim, self.num_classes)
        self.register_buffer("seen", torch.zeros(self.num_classes, dtype=torch.bool))
        self.register_buffer("current", torch.zeros(self.num_classes, dtype=torch.bool))
        self.task_count = 0

    # ------------------------------------------------------------------ modes and masks
    def train(self, mode: bool = True) -> PromptedViT:
        super().train(mode)
        self.backbone.eval()  # frozen: never in training mode (dropout, norms)
        return self

    def check_classes(self, classes) -> torch.Tensor:
        arr = V.check_array(classes, "classes", ndim=1, dtype=None)
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
                arr = arr.astype(np.int64)
            else:
                raise TypeError(f"classes must hold integer class ids, got dtype {arr.dtype}")
        if arr.min() < 0 or arr.max() >= self.num_classes:
            raise ValueError(
                f"classes must lie in [0, {self.num_classes - 1}], got {arr.min()}..{arr.max()}"
            )
        return torch.as_tensor(arr, dtype=torch.long)

    def begin_task(self, classes) -> None:
        """Open a task whose classes are ``classes`` (integer ids)."""
        idx = self.check_classes(classes).to(self.seen.device)
        self.current.zero_()
        self.current[idx] = True
        self.seen[idx] = True

    def end_task(self, x: torch.Tensor | None = None) -> None:
        """Close the current task (``x``: its training images, for methods that need them)."""
        self.task_count += 1

    def prompt_loss(self) -> torch.Tensor:
        """The method's auxiliary loss of the last forward (0 for plain prompts)."""
        return self.head.weight.new_zeros(())

    # ------------------------------------------------------------------ forward
    def _prefix(self, position: int, q: torch.Tensor, scale: float):
        # each prompt method defines its prefix; PromptedViT holds what they share
        raise NotImplementedError(f"{type(self).__name__} does not define _prefix")

    def _prepare(self, x: torch.Tensor) -> None:
        """Called once per forward before the prompted pass (e.g. a query pass)."""

    @contextmanager
    def prefixes_active(self):
        """Inside: the patched blocks use this model's prefixes."""
        attns = [self.backbone.blocks[layer].attn for layer in self.layers]
        for position, attn in enumerate(attns):
            attn.__dict__[_SLOT] = lambda q, scale, _p=position: self._prefix(_p, q, scale)
        try:
            yield
        finally:
            for attn in attns:
                attn.__dict__.pop(_SLOT, None)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The final-layer class-token feature (B, D) with this model's prompts."""
        check_images(x, "x", channels=self.in_chans)
        self._prepare(x)
        with self.prefixes_active():
            return pooled(self.backbone, x)

    def mask_logits(self, logits: torch.Tensor) -> torch.Tensor:
        live = self.current if self.training else self.seen
        if not bool(live.any()):
            return logits
        return logits.masked_fill(~live, float("-inf"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_classes); classes not live in this mode are -inf."""
        return self.mask_logits(self.head(self.features(x)))

    # ------------------------------------------------------------------ accounting
    def prompt_parameters(self) -> list[nn.Parameter]:
        head = {id(p) for p in self.head.parameters()}
        backbone = {id(p) for p in self.backbone.parameters()}
        return [p for p in self.parameters() if id(p) not in head and id(p) not in backbone]

    def param_count(self, include_head: bool = False) -> int:
        """Learnable prompt parameters (keys, values, prompt keys/attention vectors), counted
        as the paper does; ``include_head`` adds the linear head."""
        include_head = V.check_bool(include_head, "include_head")
        n = sum(p.numel() for p in self.prompt_parameters())
        if include_head:
            n += sum(p.numel() for p in self.head.parameters())
        return int(n)


def uniform_prompt(*shape: int) -> nn.Parameter:
    """A prompt tensor initialised uniformly in [0, 1), as the official code does."""
    return nn.Parameter(torch.rand(*shape))
