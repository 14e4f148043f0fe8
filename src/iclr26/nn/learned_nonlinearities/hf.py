"""Swap the MLP activations of a Hugging Face transformer for learned (frozen) splines."""

from __future__ import annotations

import copy

from torch import nn

from iclr26.nn.learned_nonlinearities.spline import LinearSpline, Nonlinearities

# Attribute names under which transformers' MLP blocks keep their activation module.
_ACT_ATTRS = ("act", "act_fn", "activation_fn", "activation", "intermediate_act_fn")


def _is_activation(module: nn.Module) -> bool:
    if isinstance(module, (nn.GELU, nn.ReLU, nn.SiLU, nn.Tanh, nn.Mish, nn.GLU)):
        return True
    return type(module).__module__.startswith("transformers.activations")


def patch_hf_activations(
    model: nn.Module, theta: Nonlinearities | LinearSpline, freeze: bool = True
) -> list[str]:
    """Replace every MLP activation module of ``model`` by the MLP spline of ``theta``.

    Layer ``i`` (in module order) gets ``theta``'s spline for layer ``i`` (shared when
    ``theta`` has one). With ``freeze`` the spline values are copied and not trained.
    Returns the dotted names of the replaced modules; raises if none was found.
    """
    if isinstance(theta, Nonlinearities):
        if theta.mlp is None:
            raise ValueError("theta has no MLP spline to insert")
        splines = list(theta.mlp)
    elif isinstance(theta, LinearSpline):
        splines = [theta]
    else:
        raise TypeError("theta must be a Nonlinearities or a LinearSpline")
    if not isinstance(model, nn.Module):
        raise TypeError("model must be an nn.Module (a transformers model)")
    targets = []
    for name, module in model.named_modules():
        for attr in _ACT_ATTRS:
            child = getattr(module, attr, None)
            if isinstance(child, nn.Module) and _is_activation(child):
                targets.append((name, module, attr))
    if not targets:
        raise ValueError("no MLP activation module found to replace")
    replaced = []
    for layer, (name, module, attr) in enumerate(targets):
        spline = splines[layer % len(splines)]
        if freeze:
            spline = copy.deepcopy(spline)
            spline.values.requires_grad_(False)
        setattr(module, attr, spline)
        replaced.append(f"{name}.{attr}" if name else attr)
    return replaced
