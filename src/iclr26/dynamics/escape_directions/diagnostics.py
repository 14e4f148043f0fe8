"""Theorem 3.1's quantities for any bias-free MLP: per-layer singular-value ratio s1/s2, the
tail energy sum_{i>=2} s_i^2 / sum_i s_i^2 of weights and of post-activations, and the ReLU
linearity gap ||Z^sigma - Z||^2 / ||Z||^2. For the optimal escape direction the tails and
the gap are O(l^{-1/2}) and s1/s2 >= l^{1/4} beyond a finite number of early layers."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V


def _spectrum_stats(M: torch.Tensor) -> tuple[float, float]:
    s = torch.linalg.svdvals(M.detach().to(torch.float64))
    energy = float((s**2).sum())
    ratio = float(s[0] / s[1]) if s.numel() > 1 and s[1] > 0 else float("inf")
    tail = float((s[1:] ** 2).sum() / energy) if energy > 0 else 0.0
    return ratio, tail


def _linear_layers(model: nn.Module) -> list[nn.Linear]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    layers = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not layers:
        raise TypeError("model has no nn.Linear layers")
    if any(layer.bias is not None for layer in layers):
        raise ValueError("model must be bias-free: the escape-direction diagnostics assume it")
    for i, layer in enumerate(layers):
        V.check_tensor(layer.weight.detach(), f"model layer {i + 1} weight")
    return layers


def layer_rank_profile(model: nn.Module, X=None) -> dict[str, np.ndarray]:
    """Per-layer rank diagnostics of a bias-free MLP (its ``nn.Linear`` layers in order,
    with ReLU between them). Activation statistics need inputs ``X``; without them they are NaN.

    Returns arrays indexed by layer l = 1..L: ``sv_ratio`` (s1/s2 of W_l), ``weight_tail``,
    ``activation_tail`` and ``linearity_gap`` (hidden layers only; NaN for the output layer).
    """
    layers = _linear_layers(model)
    L = len(layers)
    ratio, w_tail = np.empty(L), np.empty(L)
    a_tail, gap = np.full(L, np.nan), np.full(L, np.nan)
    for i, layer in enumerate(layers):
        ratio[i], w_tail[i] = _spectrum_stats(layer.weight)
    if X is not None:
        if isinstance(X, torch.Tensor):
            X = V.check_tensor(X, "X", ndim=2, shape=(None, layers[0].in_features))
        else:
            X = torch.as_tensor(V.check_array(X, "X", ndim=2, shape=(None, layers[0].in_features)))
        X = X.to(layers[0].weight.dtype)
        h = X
        with torch.no_grad():
            for i, layer in enumerate(layers[:-1]):
                pre = layer(h)
                h = torch.relu(pre)
                a_tail[i] = _spectrum_stats(h)[1]
                denom = float((pre**2).sum())
                gap[i] = float(((h - pre) ** 2).sum()) / denom if denom > 0 else np.nan
    return {
        "layer": np.arange(1, L + 1),
        "sv_ratio": ratio,
        "weight_tail": w_tail,
        "activation_tail": a_tail,
        "linearity_gap": gap,
    }


def weight_rank_profile(weights) -> dict[str, np.ndarray]:
    """s1/s2 and tail energy of a list of weight matrices (e.g. snapshots)."""
    if isinstance(weights, torch.Tensor | np.ndarray) or not isinstance(weights, list | tuple):
        raise TypeError("weights must be a list of weight matrices")
    if not weights:
        raise ValueError("weights is empty: give at least one matrix")
    weights = [
        V.check_tensor(torch.as_tensor(V.check_array(W, f"weights[{i}]", ndim=2)), f"weights[{i}]")
        if not isinstance(W, torch.Tensor)
        else V.check_tensor(W, f"weights[{i}]", ndim=2)
        for i, W in enumerate(weights)
    ]
    stats = [_spectrum_stats(W) for W in weights]
    return {
        "layer": np.arange(1, len(stats) + 1),
        "sv_ratio": np.array([s[0] for s in stats]),
        "weight_tail": np.array([s[1] for s in stats]),
    }
