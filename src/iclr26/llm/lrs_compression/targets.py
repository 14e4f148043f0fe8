"""Which linear layers of a causal LM are compressed, and how they are swapped and counted.

Works on any Hugging Face causal LM: the targets are the ``nn.Linear`` modules whose own name
is one of ``target_modules`` (by default the seven projections of a Llama-style block);
embeddings and ``lm_head`` are never targets. Module swaps are all-or-nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.lrs_compression.layers import LowRankSparseLinear

__all__ = [
    "DEFAULT_TARGETS",
    "count_parameters",
    "linear_flops_per_token",
]

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_NEVER = ("lm_head", "embed_tokens", "wte", "embed_out")


@dataclass(frozen=True)
class Target:
    name: str  # dotted module path
    module: nn.Module
    layer: int  # index of the transformer block (-1 when none is in the path)

    @property
    def shape(self) -> tuple[int, int]:
        w = self.module.weight
        return int(w.shape[0]), int(w.shape[1])


def check_model(model: Any, name: str = "model") -> nn.Module:
    """A torch module (a string goes through :func:`iclr26.models.tinylm.load_causal_lm`)."""
    if isinstance(model, str):
        from iclr26.models.tinylm import load_causal_lm

        model = load_causal_lm(model)[0]
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"{name} must be a torch.nn.Module or a model name, got {type(model).__name__}"
        )
    return model


def check_targets(target_modules: Any) -> tuple[str, ...]:
    if isinstance(target_modules, str):
        target_modules = (target_modules,)
    if not isinstance(target_modules, Sequence) or not target_modules:
        raise ValueError("target_modules must be a non-empty sequence of module names")
    for t in target_modules:
        if not isinstance(t, str) or not t:
            raise TypeError(f"target_modules must hold non-empty strings, got {t!r}")
        if t in _NEVER:
            raise ValueError(
                f"target_modules must not name {t!r}: embeddings and lm_head are never compressed"
            )
    return tuple(target_modules)


def find_targets(
    model: nn.Module, target_modules: Sequence[str], *, include_compressed: bool = False
) -> list[Target]:
    """The target linears of ``model`` in module order."""
    kinds = (nn.Linear, LowRankSparseLinear) if include_compressed else (nn.Linear,)
    out = []
    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if (
            leaf in target_modules
            and isinstance(module, kinds)
            and not any(n in name for n in _NEVER)
        ):
            match = re.search(r"\.(\d+)\.", f".{name}.")
            out.append(Target(name, module, int(match.group(1)) if match else -1))
    if not out:
        raise ValueError(
            f"target_modules: no nn.Linear named {', '.join(target_modules)} found in the model"
        )
    return out


def check_calibration(calib: Any, model: nn.Module, name: str = "calib_input_ids") -> torch.Tensor:
    """Token ids ``[n_sequences, seq_len]`` (int) within the model's vocabulary."""
    if isinstance(calib, torch.Tensor):
        V.check_tensor(calib, name, ndim=2, integer=True)
        ids = calib.long()
    else:
        ids = torch.from_numpy(V.check_array(calib, name, ndim=2, dtype=np.int64).copy())
    if ids.shape[1] < 2:
        raise ValueError(f"{name} must hold sequences of at least 2 tokens, got {ids.shape[1]}")
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    vocab = getattr(emb, "num_embeddings", None)
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or (vocab is not None and high >= vocab):
        raise ValueError(
            f"{name} must hold token ids in [0, {vocab}), got values in [{low}, {high}]"
        )
    return ids


def _parent(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    parent_name, _, leaf = name.rpartition(".")
    return (model.get_submodule(parent_name) if parent_name else model), leaf


def swap_modules(model: nn.Module, replacements: Mapping[str, nn.Module]) -> nn.Module:
    """Put every replacement in place, or none: on any error the originals are restored."""
    done: list[tuple[nn.Module, str, nn.Module]] = []
    try:
        for name, new in replacements.items():
            parent, leaf = _parent(model, name)
            done.append((parent, leaf, getattr(parent, leaf)))
            setattr(parent, leaf, new)
    except BaseException:
        for parent, leaf, old in reversed(done):
            setattr(parent, leaf, old)
        raise
    return model


def count_parameters(
    model: nn.Module, target_modules: Sequence[str] = DEFAULT_TARGETS
) -> dict[str, int]:
    """Parameters stored by ``model``: ``total`` (shared tensors once), ``targets`` (the target
    matrices: the non-zeros of a pruned ``nn.Linear`` weight, ``r (m + n) + nnz`` of a
    :class:`LowRankSparseLinear`; biases apart) and ``dense_targets`` (their dense size)."""
    model = check_model(model)
    target_modules = check_targets(target_modules)
    targets = find_targets(model, target_modules, include_compressed=True)
    in_target: dict[int, int] = {}
    dense_targets, kept_targets = 0, 0
    for t in targets:
        m = t.module
        if isinstance(m, LowRankSparseLinear):
            kept = m.n_params()
            for p in (m.U, m.V, m.sparse_values):
                in_target[id(p)] = p.numel()
            dense_targets += m.in_features * m.out_features
        else:
            kept = int(torch.count_nonzero(m.weight))
            in_target[id(m.weight)] = kept
            dense_targets += m.weight.numel()
        kept_targets += kept
    total, seen = 0, set()
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += in_target.get(id(p), p.numel())
    return {"total": total, "targets": kept_targets, "dense_targets": dense_targets}


def linear_flops_per_token(model: nn.Module, *, nonzero: bool = False) -> int:
    """2 x multiply-adds of one token through every linear layer (``lm_head`` included):
    ``in x out`` for an ``nn.Linear`` (a dense kernel runs the zeros of a pruned weight too;
    ``nonzero=True`` counts only its non-zeros), ``r (in + out) + nnz`` for a
    :class:`LowRankSparseLinear`. Attention scores and norms are not counted."""
    model = check_model(model)
    total = 0
    for module in model.modules():
        if isinstance(module, LowRankSparseLinear):
            total += module.flops_per_token()
        elif isinstance(module, nn.Linear):
            w = module.weight
            total += 2 * (int(torch.count_nonzero(w)) if nonzero else w.numel())
    return total
