"""Baselines at the same parameter count: Wanda, magnitude pruning, uniform low-rank + sparse
and uniform truncated SVD, and OWL's layer-wise sparsities for Wanda and SparseGPT.

Wanda (Sun et al., 2024) scores ``|W_ij| * ||X_j||_2`` with the input-activation norms of one
calibration pass and prunes each output row to the target sparsity. Magnitude pruning keeps the
largest ``|W_ij|`` of each matrix. ``uniform_lrs`` uses CAP's own RPCA pools but gives every
matrix the same kept fraction (the ablation that isolates global allocation); ``svd_uniform``
keeps the same rank fraction of every matrix's truncated SVD with no sparse part. OWL (Yin et
al., ICML 2024) gives every block ``l`` its own sparsity from its outlier ratio ``D_l``, the
fraction of Wanda scores of the block above ``M`` times their mean: the ratios are rescaled to
``[0, 2 lambda]``, shifted to the mean kept fraction ``1 - sparsity``, and block ``l`` keeps that
fraction (more outliers, more kept). Each computes
every new weight first and writes them all at the end, so an error leaves the model unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.lrs_compression.allocator import uniform_allocation
from iclr26.llm.lrs_compression.compressor import CAPCompressor, allocation_table, build_module
from iclr26.llm.lrs_compression.layers import LowRankSparseLinear
from iclr26.llm.lrs_compression.targets import (
    DEFAULT_TARGETS,
    check_calibration,
    check_model,
    check_targets,
    find_targets,
    swap_modules,
)
from iclr26.models import hf_compat

__all__ = [
    "LAYER_SPARSITY",
    "magnitude_prune",
    "owl_layer_sparsity",
    "svd_uniform",
    "uniform_lrs",
    "wanda_prune",
]

LAYER_SPARSITY = ("uniform", "owl")


def _sparsity(sparsity: Any) -> float:
    return V.check_scalar(sparsity, "sparsity", low=0.0, high=1.0, high_open=True)


def _write_weights(model: nn.Module, new: dict[nn.Linear, torch.Tensor]) -> nn.Module:
    with torch.no_grad():
        for module, w in new.items():
            module.weight.copy_(w)
    return model


def _row_prune(weight: torch.Tensor, score: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Zero the ``floor(sparsity * in)`` lowest-scoring entries of every row."""
    n_prune = int(sparsity * weight.shape[1])
    if n_prune == 0:
        return weight.clone()
    drop = torch.topk(score, n_prune, dim=1, largest=False).indices
    return weight.clone().scatter_(1, drop, 0.0)


def magnitude_prune(
    model: nn.Module | str, sparsity: float, target_modules: Sequence[str] = DEFAULT_TARGETS
) -> nn.Module:
    """Keep the ``round((1 - sparsity) * m n)`` largest-magnitude entries of every target
    matrix (per-layer uniform sparsity); in place, returns the model."""
    model = check_model(model)
    sparsity = _sparsity(sparsity)
    targets = find_targets(model, check_targets(target_modules))
    new = {}
    for t in targets:
        w = t.module.weight.detach()
        n_keep = w.numel() - int(sparsity * w.numel())
        keep = torch.topk(w.abs().reshape(-1), n_keep).indices
        out = torch.zeros_like(w).reshape(-1)
        out[keep] = w.reshape(-1)[keep]
        new[t.module] = out.reshape(w.shape)
    return _write_weights(model, new)


def activation_norms(
    model: nn.Module,
    calib_input_ids: Any,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    batch_size: int = 8,
) -> dict[str, torch.Tensor]:
    """``||X_j||_2`` over all calibration tokens of every target's input feature ``j``."""
    model = check_model(model)
    ids = check_calibration(calib_input_ids, model)
    targets = find_targets(model, check_targets(target_modules))
    sums = {t.name: torch.zeros(t.shape[1], dtype=torch.float64) for t in targets}
    hooks = []
    for t in targets:

        def hook(module, args, name=t.name):
            x = args[0].detach().reshape(-1, args[0].shape[-1]).double()
            sums[name] += (x * x).sum(0).cpu()

        hooks.append(t.module.register_forward_pre_hook(hook))
    was_training = model.training
    model.eval()
    device = targets[0].module.weight.device
    try:
        with torch.no_grad():
            for batch in torch.split(ids, batch_size):
                hf_compat.causal_lm_logits(model, batch.to(device))
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return {k: v.sqrt() for k, v in sums.items()}


def _owl_options(owl_m: Any, owl_lambda: Any) -> tuple[float, float]:
    owl_m = V.check_scalar(owl_m, "owl_m", low=0.0, low_open=True)
    owl_lambda = V.check_scalar(owl_lambda, "owl_lambda", low=0.0)
    return owl_m, owl_lambda


def _owl_from_scores(
    scores: dict[int, list[torch.Tensor]], sparsity: float, owl_m: float, owl_lambda: float
) -> tuple[dict[int, float], dict[int, float]]:
    """Layer sparsities and outlier ratios from each layer's Wanda scores."""
    layers = sorted(scores)
    ratio = []
    for layer in layers:
        flat = torch.cat([s.reshape(-1).double() for s in scores[layer]])
        ratio.append(float((flat > owl_m * flat.mean()).double().mean()))
    r = torch.tensor(ratio, dtype=torch.float64)
    spread = float(r.max() - r.min())
    # equal ratios (or one layer) leave nothing to spread: every layer gets the target
    scaled = (r - r.min()) / spread * 2 * owl_lambda if spread > 0 else torch.zeros_like(r)
    kept = scaled - scaled.mean() + (1.0 - sparsity)
    per_layer = {layer: float(1.0 - k) for layer, k in zip(layers, kept)}
    low, high = min(per_layer.values()), max(per_layer.values())
    if low < 0.0 or high >= 1.0:
        raise ValueError(
            f"owl_lambda={owl_lambda:g} spreads the layer sparsities to [{low:.4g}, {high:.4g}] "
            f"around sparsity={sparsity:g}, outside [0, 1); use a smaller owl_lambda"
        )
    return per_layer, dict(zip(layers, ratio))


def owl_layer_sparsity(
    model: nn.Module | str,
    calib_input_ids: Any,
    sparsity: float,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    owl_m: float = 5.0,
    owl_lambda: float = 0.08,
    norms: dict[str, torch.Tensor] | None = None,
) -> dict[str, dict[int, float]]:
    """OWL's sparsity of every layer (transformer block): ``{"sparsity": {layer: s_l},
    "outlier_ratio": {layer: D_l}}`` with ``D_l`` the fraction of the block's Wanda scores
    ``|W_ij| ||X_j||`` (all its targets together) above ``owl_m`` times their mean, and
    ``1 - s_l = 2 owl_lambda (D_l - min D) / (max D - min D) - mean(...) + 1 - sparsity``, so
    the layer sparsities average to ``sparsity``. ``norms`` (from :func:`activation_norms`)
    skips the calibration pass."""
    model = check_model(model)
    sparsity = _sparsity(sparsity)
    owl_m, owl_lambda = _owl_options(owl_m, owl_lambda)
    targets = find_targets(model, check_targets(target_modules))
    if norms is None:
        norms = activation_norms(model, calib_input_ids, target_modules)
    scores: dict[int, list[torch.Tensor]] = {}
    for t in targets:
        w = t.module.weight.detach()
        scores.setdefault(t.layer, []).append(w.abs() * norms[t.name].to(w)[None, :])
    per_layer, ratios = _owl_from_scores(scores, sparsity, owl_m, owl_lambda)
    return {"sparsity": per_layer, "outlier_ratio": ratios}


def wanda_prune(
    model: nn.Module | str,
    calib_input_ids: Any,
    sparsity: float,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    layer_sparsity: str = "uniform",
    owl_m: float = 5.0,
    owl_lambda: float = 0.08,
) -> nn.Module:
    """Wanda: prune each output row of every target to ``sparsity`` by ``|W_ij| ||X_j||_2``
    (activation norms from one pass over ``calib_input_ids``); in place, returns the model.

    ``layer_sparsity="owl"`` prunes the targets of layer ``l`` to OWL's ``s_l`` instead (see
    :func:`owl_layer_sparsity`; they average to ``sparsity`` over the layers) and records them
    in ``model.owl_``."""
    model = check_model(model)
    sparsity = _sparsity(sparsity)
    layer_sparsity = V.check_choice(layer_sparsity, "layer_sparsity", LAYER_SPARSITY)
    owl_m, owl_lambda = _owl_options(owl_m, owl_lambda)
    targets = find_targets(model, check_targets(target_modules))
    norms = activation_norms(model, calib_input_ids, target_modules)
    owl = None
    if layer_sparsity == "owl":
        owl = owl_layer_sparsity(
            model, None, sparsity, target_modules, owl_m, owl_lambda, norms=norms
        )
    new = {}
    for t in targets:
        w = t.module.weight.detach()
        score = w.abs() * norms[t.name].to(w)[None, :]
        s = owl["sparsity"][t.layer] if owl is not None else sparsity
        new[t.module] = _row_prune(w, score, s)
    _write_weights(model, new)
    if owl is not None:
        model.owl_ = owl
    return model


def uniform_lrs(
    model: nn.Module | str,
    ratio: float,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    score: str = "energy",
    compressor: CAPCompressor | None = None,
) -> nn.Module:
    """CAP's RPCA pools with the same kept fraction ``1 - ratio`` in every matrix, filled by
    the matrix's own ranking (``score``: see :func:`uniform_allocation`); swaps the targets for
    :class:`LowRankSparseLinear` in place. ``compressor`` supplies the RPCA settings (and its
    pool cache); ``model.uniform_allocation_`` records the per-module result."""
    model = check_model(model)
    ratio = V.check_scalar(ratio, "ratio", low=0.0, high=1.0, high_open=True)
    if compressor is not None and not isinstance(compressor, CAPCompressor):
        raise TypeError(f"compressor must be a CAPCompressor, got {type(compressor).__name__}")
    cap = compressor or CAPCompressor(target_modules=target_modules)
    targets = find_targets(model, check_targets(target_modules))
    pools = cap.build_pools(model)
    masks = uniform_allocation(pools, 1.0 - ratio, score=score)
    replacements = {
        t.name: build_module(p, ml, ms, t.module) for t, p, (ml, ms) in zip(targets, pools, masks)
    }
    table = allocation_table([t.name for t in targets], [t.layer for t in targets], pools, masks)
    swap_modules(model, replacements)
    model.uniform_allocation_ = table
    return model


def svd_uniform(
    model: nn.Module | str, ratio: float, target_modules: Sequence[str] = DEFAULT_TARGETS
) -> nn.Module:
    """Truncated SVD of every target at rank ``floor((1 - ratio) m n / (m + n))`` (no sparse
    part); swaps the targets for :class:`LowRankSparseLinear` in place."""
    model = check_model(model)
    ratio = V.check_scalar(ratio, "ratio", low=0.0, high=1.0, high_open=True)
    targets = find_targets(model, check_targets(target_modules))
    replacements = {}
    for t in targets:
        w = t.module.weight.detach()
        m, n = w.shape
        rank = int((1.0 - ratio) * m * n // (m + n))
        u, s, vh = torch.linalg.svd(w.double(), full_matrices=False)
        root = s[:rank].sqrt()
        bias = t.module.bias.detach() if t.module.bias is not None else None
        replacements[t.name] = LowRankSparseLinear(
            n,
            m,
            U=(u[:, :rank] * root).to(w.dtype),
            V_factor=(vh[:rank].mT * root).to(w.dtype),
            bias=bias,
        ).to(w.device)
    return swap_modules(model, replacements)
