"""Swap the MLP activations of a Hugging Face transformer for learned (frozen) splines, and
save / load such a patched model.

Only activations inside an MLP (feed-forward) block are replaced: the owner module is an MLP by
its class or attribute name (``mlp``, ``intermediate``, ``ffn``, ``feed_forward``, ...) or holds
an ``fc1``/``fc2`` pair (OPT-style decoder layers). Poolers, heads and attention modules are
never touched (BERT's and ViT's pooler ``Tanh`` stays a ``Tanh``).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.nn.learned_nonlinearities.spline import LinearSpline, Nonlinearities

# Attribute names under which transformers' MLP blocks keep their activation module.
_ACT_ATTRS = ("act", "act_fn", "activation_fn", "activation", "intermediate_act_fn")
_MLP_NAME = re.compile(
    r"(mlp|intermediate|feed_?forward|ffn|dense_?relu_?dense|dense_?act_?dense|dense_?gated)",
    re.IGNORECASE,
)
_NOT_MLP = re.compile(r"(pool|head|classifier|predict|score|attn|attention)", re.IGNORECASE)
CONFIG_KEY = "learned_nonlinearities"


def _is_activation(module: nn.Module) -> bool:
    if isinstance(module, (nn.GELU, nn.ReLU, nn.SiLU, nn.Tanh, nn.Mish, nn.GLU)):
        return True
    return type(module).__module__.startswith("transformers.activations")


def _is_mlp_owner(name: str, module: nn.Module) -> bool:
    parts = name.split(".") if name else []
    kind = type(module).__name__
    if any(_NOT_MLP.search(p) for p in parts) or _NOT_MLP.search(kind):
        return False
    if _MLP_NAME.search(kind) or (parts and _MLP_NAME.search(parts[-1])):
        return True
    fc1, fc2 = getattr(module, "fc1", None), getattr(module, "fc2", None)
    return isinstance(fc1, nn.Linear) and isinstance(fc2, nn.Linear)


def mlp_activation_sites(model: nn.Module) -> list[tuple[str, nn.Module, str]]:
    """``(owner name, owner module, attribute)`` of every MLP activation, in module order."""
    sites = []
    for name, module in model.named_modules():
        if not _is_mlp_owner(name, module):
            continue
        for attr in _ACT_ATTRS:
            child = getattr(module, attr, None)
            if isinstance(child, nn.Module) and _is_activation(child):
                sites.append((name, module, attr))
    return sites


def patch_hf_activations(
    model: nn.Module, theta: Nonlinearities | LinearSpline, freeze: bool = True
) -> list[str]:
    """Replace every MLP activation module of ``model`` by the MLP spline of ``theta``.

    Layer ``i`` (in module order) gets ``theta``'s spline for layer ``i`` (shared when
    ``theta`` has one). With ``freeze`` each site gets its own frozen copy of the spline values;
    without, the sites share ``theta``'s splines and train with the model. The splines
    evaluate in float32 and return the input's dtype, so bf16/fp16 models work. Returns the
    dotted names of the replaced modules; raises if none was found.

    A model with a ``config`` (any ``transformers`` model) records the patch there, so
    ``model.save_pretrained(path)`` followed by :func:`load_patched_pretrained` restores it
    (a plain ``from_pretrained`` would rebuild the original activations).
    """
    if isinstance(theta, Nonlinearities):
        if theta.mlp is None:
            raise ValueError("theta has no MLP spline to insert")
        splines = list(theta.mlp)
    elif isinstance(theta, LinearSpline):
        splines = [theta]
    else:
        raise TypeError(
            f"theta must be a Nonlinearities or a LinearSpline, got {type(theta).__name__}"
        )
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module (a transformers model), got {type(model)}")
    freeze = V.check_bool(freeze, "freeze")
    targets = mlp_activation_sites(model)
    if not targets:
        raise ValueError("model has no MLP activation module to replace")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    replaced, record = [], []
    for layer, (name, module, attr) in enumerate(targets):
        index = layer % len(splines)
        spline = splines[index]
        if freeze:
            spline = copy.deepcopy(spline).to(device)
            spline.values.requires_grad_(False)
        setattr(module, attr, spline)
        full = f"{name}.{attr}" if name else attr
        replaced.append(full)
        record.append({"module": full, "spline": index, **_spline_spec(spline)})
    config = getattr(model, "config", None)
    if config is not None:
        setattr(config, CONFIG_KEY, {"sites": record, "shared": not freeze})
    return replaced


def _spline_spec(spline: LinearSpline) -> dict:
    return {
        "n_anchors": spline.n_anchors,
        "x_range": spline.x_range,
        "per_channel": spline.per_channel,
        "channels": int(spline.values.shape[0]) if spline.per_channel else None,
    }


def _read_state(path: Path) -> dict[str, torch.Tensor]:
    """The tensors ``save_pretrained`` wrote (safetensors, sharded or not; or a torch bin)."""
    from safetensors.torch import load_file

    index = path / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        state: dict[str, torch.Tensor] = {}
        for name in files:
            state.update(load_file(str(path / name)))
        return state
    if (path / "model.safetensors").is_file():
        return load_file(str(path / "model.safetensors"))
    if (path / "pytorch_model.bin").is_file():
        return torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"path {path} holds no model.safetensors or pytorch_model.bin")


def _set_submodule(model: nn.Module, dotted: str, module: nn.Module) -> None:
    owner_name, _, attr = dotted.rpartition(".")
    owner = model.get_submodule(owner_name) if owner_name else model
    setattr(owner, attr, module)


def load_patched_pretrained(model_class, path, **kwargs) -> nn.Module:
    """``model_class.from_pretrained(path, **kwargs)`` for a model saved after
    :func:`patch_hf_activations`: the recorded MLP activations are replaced again by splines
    holding the saved values (frozen unless the patch shared trainable splines).

    ``model_class`` is any ``transformers`` class with ``from_pretrained`` (``AutoModel...``
    classes included)."""
    V.check_module_attrs(model_class, "model_class", ["from_pretrained"])
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"path {path} is not a saved model directory")
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the spline tensors are "unused" to from_pretrained
    try:
        model = model_class.from_pretrained(path, **kwargs)
    finally:
        hf_logging.set_verbosity(verbosity)
    spec = getattr(model.config, CONFIG_KEY, None)
    if not spec or "sites" not in spec:
        raise ValueError(f"path {path} holds no patched model (its config has no {CONFIG_KEY!r})")
    state = _read_state(path)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    made: dict[int, LinearSpline] = {}
    for site in spec["sites"]:
        shared = spec.get("shared", False) and site["spline"] in made
        if shared:
            spline = made[site["spline"]]
        else:
            spline = LinearSpline(
                site["n_anchors"],
                site["x_range"],
                per_channel=site["per_channel"],
                channels=site["channels"],
            )
            source = _saved_key(site["module"], state) or _first_saved(spec, site["spline"], state)
            with torch.no_grad():
                spline.values.copy_(state[source].to(spline.values.dtype))
            spline.values.requires_grad_(bool(spec.get("shared", False)))
            spline = spline.to(device)
            made[site["spline"]] = spline
        _set_submodule(model, site["module"], spline)
    return model


def _saved_key(module: str, state: dict) -> str | None:
    """The checkpoint key of a site's spline values. ``save_pretrained`` may rename module
    prefixes to a legacy layout (``layers.0`` -> ``encoder.layer.0``), so when the name itself
    is absent, the key must end with the same owner and attribute and carry the same layer
    numbers; it is used only when exactly one key does."""
    key = f"{module}.values"
    if key in state:
        return key
    tail = "." + ".".join(module.split(".")[-2:]) + ".values"
    digits = re.findall(r"\d+", module)
    hits = [
        k
        for k in state
        if (k.endswith(tail) or k == tail[1:])
        and re.findall(r"\d+", k[: -len(".values")]) == digits
    ]
    return hits[0] if len(hits) == 1 else None


def _first_saved(spec: dict, index: int, state: dict) -> str:
    # Shared splines may be saved once (duplicates of a shared tensor are dropped on save).
    for site in spec["sites"]:
        key = _saved_key(site["module"], state)
        if site["spline"] == index and key is not None:
            return key
    raise ValueError(
        f"path holds no patched model: its config records a patch but no values of spline "
        f"{index} were saved (was it saved from a model loaded without the patch?)"
    )
