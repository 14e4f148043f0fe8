"""Saving and loading a compressed model: the HF config, a manifest of the swapped modules
(shapes, rank, nnz, bias) and the weights as safetensors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from torch import nn

from iclr26.llm.lrs_compression.layers import LowRankSparseLinear
from iclr26.llm.lrs_compression.targets import check_model, swap_modules

__all__ = ["load_compressed", "save_compressed"]

MANIFEST = "cap_modules.json"
WEIGHTS = "model.safetensors"


def save_compressed(model: nn.Module, folder: str | os.PathLike) -> Path:
    """Write ``model`` (with its :class:`LowRankSparseLinear` modules) to ``folder``."""
    from safetensors.torch import save_model

    model = check_model(model)
    if not isinstance(folder, (str, os.PathLike)) or not os.fspath(folder):
        raise TypeError("folder must be a non-empty path")
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "save_pretrained"):
        raise TypeError("model must be a Hugging Face model (it has no config to save)")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    modules = [
        dict(
            name=name,
            in_features=m.in_features,
            out_features=m.out_features,
            rank=m.rank,
            nnz=m.nnz,
            bias=m.bias is not None,
            dtype=str(m.U.dtype).removeprefix("torch."),
        )
        for name, m in model.named_modules()
        if isinstance(m, LowRankSparseLinear)
    ]
    config.save_pretrained(folder)
    (folder / MANIFEST).write_text(json.dumps({"modules": modules}, indent=1), encoding="utf-8")
    save_model(model, str(folder / WEIGHTS))
    return folder


def load_compressed(folder: str | os.PathLike, **from_config_kwargs: Any) -> nn.Module:
    """The model saved by :func:`save_compressed` (built from its config, modules swapped to
    the recorded shapes, weights loaded strictly)."""
    import torch
    from safetensors.torch import load_model
    from transformers import AutoConfig, AutoModelForCausalLM

    if not isinstance(folder, (str, os.PathLike)) or not os.fspath(folder):
        raise TypeError(f"folder must be a non-empty path, got {type(folder).__name__}")
    folder = Path(folder)
    if not (folder / MANIFEST).is_file() or not (folder / WEIGHTS).is_file():
        raise FileNotFoundError(
            f"folder {folder} holds no compressed model ({MANIFEST}, {WEIGHTS})"
        )
    config = AutoConfig.from_pretrained(folder)
    model = AutoModelForCausalLM.from_config(config, **from_config_kwargs)
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    replacements = {}
    for entry in manifest["modules"]:
        dtype = getattr(torch, entry.get("dtype", "float32"))
        n, m, r, k = entry["in_features"], entry["out_features"], entry["rank"], entry["nnz"]
        replacements[entry["name"]] = LowRankSparseLinear(
            n,
            m,
            U=torch.zeros(m, r, dtype=dtype),
            V_factor=torch.zeros(n, r, dtype=dtype),
            sparse_rows=torch.zeros(k, dtype=torch.long),
            sparse_cols=torch.zeros(k, dtype=torch.long),
            sparse_values=torch.zeros(k, dtype=dtype),
            bias=torch.zeros(m, dtype=dtype) if entry["bias"] else None,
        )
    swap_modules(model, replacements)
    load_model(model, str(folder / WEIGHTS), strict=True)
    for module in model.modules():
        if isinstance(module, LowRankSparseLinear):
            module._csr = None
    model.eval()
    return model
