"""Export of a quantized model as packed integer codes, and its reload.

Codes and zero points are bit-packed (``bits`` bits each, little-endian within a byte stream),
scales are stored as fp16, explicit per-channel input scales (AWQ layers whose scale could
not be folded, if any) in the model's dtype, everything else (embeddings, norms, ``lm_head``) keeps its dtype.
Files: ``config.json`` (the Hugging Face config), ``quantized.safetensors`` and
``quant_config.json`` (bits, group size, module shapes, tied-weight aliases).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.quant import check_bits, quant_layers, quantize_model

FORMAT = "iclr26-qat-packed-v1"


def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack non-negative integers < 2**bits into a uint8 stream (``ceil(n * bits / 8)`` bytes)."""
    bits = check_bits(bits)
    V.check_tensor(codes, "codes", low=0, high=2**bits - 1, nonempty=False)
    flat = codes.detach().reshape(-1).cpu().numpy().astype(np.uint8)
    if bits == 8:
        return torch.from_numpy(flat.copy())
    planes = (flat[:, None] >> np.arange(bits, dtype=np.uint8)) & 1  # (n, bits), LSB first
    return torch.from_numpy(np.packbits(planes.reshape(-1), bitorder="little"))


def unpack_bits(packed: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: the first ``count`` integers as uint8."""
    bits = check_bits(bits)
    count = V.check_int(count, "count", low=0)
    raw = packed.detach().reshape(-1).cpu().numpy().astype(np.uint8)
    if raw.size * 8 < count * bits:
        raise ValueError(f"packed holds {raw.size} bytes, fewer than {count} x {bits} bits")
    if bits == 8:
        return torch.from_numpy(raw[:count].copy())
    planes = np.unpackbits(raw, bitorder="little")[: count * bits].reshape(count, bits)
    values = (planes << np.arange(bits, dtype=np.uint8)).sum(axis=1).astype(np.uint8)
    return torch.from_numpy(values)


def save_quantized(model: nn.Module, folder: str | os.PathLike) -> dict[str, int]:
    """Write ``model`` (with QuantLinear modules) as packed codes; returns the bytes written
    per file and in total."""
    from safetensors.torch import save_file

    layers = quant_layers(model)
    if not layers:
        raise ValueError("model has no QuantLinear modules; quantize it first")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    modules = {}
    bits = {q.bits for q in layers.values()}
    groups = {q.group_size for q in layers.values()}
    for name, q in layers.items():
        exp = q.export()
        tensors[f"{name}.qweight"] = pack_bits(exp["codes"], q.bits)
        tensors[f"{name}.qzeros"] = pack_bits(exp["zero"], q.bits)
        tensors[f"{name}.scales"] = exp["scale"].to(torch.float16).cpu()
        if q.bias is not None:
            tensors[f"{name}.bias"] = exp["bias"].cpu()
        if q.input_scale is not None:
            tensors[f"{name}.input_scale"] = exp["input_scale"].cpu()
        modules[name] = {
            "out_features": q.out_features,
            "in_features": q.in_features,
            "bits": q.bits,
            "group_size": q.group_size,
            "bias": q.bias is not None,
            "input_scale": q.input_scale is not None,
        }
    quant_prefixes = tuple(f"{n}." for n in layers)
    seen: dict[int, str] = {}
    aliases = {}
    for key, value in model.state_dict().items():
        if key.startswith(quant_prefixes):
            continue
        ptr = value.data_ptr()
        if ptr in seen:  # tied weights (e.g. lm_head = embed_tokens) are stored once
            aliases[key] = seen[ptr]
            continue
        seen[ptr] = key
        tensors[key] = value.detach().cpu().contiguous()
    save_file(tensors, str(folder / "quantized.safetensors"))
    meta = {
        "format": FORMAT,
        "bits": sorted(bits),
        "group_size": sorted(groups),
        "modules": modules,
        "aliases": aliases,
    }
    (folder / "quant_config.json").write_text(json.dumps(meta, indent=1))
    if getattr(model, "config", None) is not None:
        model.config.save_pretrained(folder)
    sizes = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    sizes["total"] = sum(sizes.values())
    return sizes


def load_quantized(folder: str | os.PathLike, model: nn.Module | None = None) -> nn.Module:
    """Rebuild a quantized model from :func:`save_quantized` output. ``model`` (optional) is an
    unquantized model of the same architecture to load into; by default it is built from the
    saved ``config.json`` with ``AutoModelForCausalLM.from_config``. The QuantLinear modules
    reproduce the saved codes exactly."""
    from safetensors.torch import load_file

    folder = Path(folder)
    meta_path = folder / "quant_config.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"folder {str(folder)!r} holds no quant_config.json")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"folder: unknown format {meta.get('format')!r}, expected {FORMAT!r}")
    tensors = load_file(str(folder / "quantized.safetensors"))
    if model is None:
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(folder)
        model = AutoModelForCausalLM.from_config(config)
    modules = meta["modules"]
    by_bits: dict[tuple[int, int], list[str]] = {}
    for name, info in modules.items():
        by_bits.setdefault((info["bits"], info["group_size"]), []).append(name)
    for (b, g), names in by_bits.items():
        quantize_model(model, b, g, targets=names)
    layers = quant_layers(model)
    with torch.no_grad():
        for name, info in modules.items():
            q = layers[name]
            n_groups = q.n_groups
            out_f, in_f = info["out_features"], info["in_features"]
            codes = unpack_bits(tensors[f"{name}.qweight"], q.bits, out_f * in_f)
            zero = unpack_bits(tensors[f"{name}.qzeros"], q.bits, out_f * n_groups)
            q.load_export(
                codes.reshape(out_f, in_f).to(q.weight.device),
                tensors[f"{name}.scales"].float().reshape(out_f, n_groups).to(q.weight.device),
                zero.reshape(out_f, n_groups).to(q.weight.device),
            )
            if q.bias is not None:
                q.bias.copy_(tensors[f"{name}.bias"])
            if info.get("input_scale"):
                q.set_input_scale(tensors[f"{name}.input_scale"])
    rest = {
        k: v
        for k, v in tensors.items()
        if not k.endswith((".qweight", ".qzeros", ".scales"))
        and not (k.endswith(".bias") and k[: -len(".bias")] in modules)
        and not (k.endswith(".input_scale") and k[: -len(".input_scale")] in modules)
    }
    for key, source in meta.get("aliases", {}).items():
        rest[key] = tensors[source]
    missing, unexpected = model.load_state_dict(rest, strict=False)
    quant_keys = {
        f"{n}.{p}"
        for n in modules
        for p in ("weight", "bias", "scale", "zero_point", "input_scale")
    }
    missing = [k for k in missing if k not in quant_keys]
    if missing or unexpected:
        raise ValueError(
            f"folder: checkpoint does not match the model (missing {missing[:5]}, "
            f"unexpected {unexpected[:5]})"
        )
    model.eval()
    return model


def folder_bytes(folder: str | os.PathLike) -> int:
    """Total size of the files in ``folder`` (what a checkpoint costs on disk)."""
    if not Path(folder).is_dir():
        raise ValueError(f"folder {str(folder)!r} is not a directory")
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def storage_bits(model: nn.Module) -> dict[str, float]:
    """Analytic storage of the quantized linears: code bits, zero-point bits and fp16 scale
    bits, and the resulting bits per weight."""
    layers = quant_layers(model)
    if not layers:
        raise ValueError("model has no QuantLinear modules; quantize it first")
    weights = sum(q.in_features * q.out_features for q in layers.values())
    code_bits = sum(q.bits * q.in_features * q.out_features for q in layers.values())
    zero_bits = sum(q.bits * q.out_features * q.n_groups for q in layers.values())
    scale_bits = sum(16 * q.out_features * q.n_groups for q in layers.values())
    return {
        "weights": weights,
        "code_bits": code_bits,
        "zero_bits": zero_bits,
        "scale_bits": scale_bits,
        "bits_per_weight": (code_bits + zero_bits + scale_bits) / max(weights, 1),
    }
