"""Block partition: one block per transformer layer, found on the common module layouts."""

from __future__ import annotations

import torch
from torch import nn

# Attribute paths of the layer list in common model families (Llama/Qwen, GPT-2, NeoX, OPT, ...).
LAYER_PATHS = (
    "model.layers",
    "transformer.h",
    "gpt_neox.layers",
    "model.decoder.layers",
    "decoder.layers",
    "transformer.blocks",
    "transformer.layers",
    "blocks",
    "layers",
    "h",
)


def _get(module: nn.Module, path: str):
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def find_blocks(model: nn.Module) -> list[list[nn.Parameter]]:
    """The parameters of each transformer layer, in depth order (block 0 next to the input).

    Parameters outside the layers (embeddings, final norm, LM head) belong to no block."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for path in LAYER_PATHS:
        layers = _get(model, path)
        if isinstance(layers, (nn.ModuleList, nn.Sequential)) and len(layers) > 0:
            blocks = [[p for p in layer.parameters()] for layer in layers]
            if all(blocks):
                return blocks
    raise ValueError(
        "could not find the transformer layers of this model; pass blocks=[[params], ...]"
    )


def check_blocks(blocks) -> list[list[nn.Parameter]]:
    blocks = [list(b) for b in blocks]
    if len(blocks) == 0 or any(len(b) == 0 for b in blocks):
        raise ValueError(
            "blocks is empty: it must be a non-empty list of non-empty parameter lists"
        )
    seen: set[int] = set()
    for block in blocks:
        for p in block:
            if not isinstance(p, torch.Tensor):
                raise TypeError("blocks must contain tensors (parameters)")
            if id(p) in seen:
                raise ValueError("a parameter appears in two blocks")
            seen.add(id(p))
    return blocks
