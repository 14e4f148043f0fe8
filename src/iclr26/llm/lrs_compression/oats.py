"""OATS baseline (Zhang et al., ICLR 2025): outlier-aware pruning through a sparse plus
low-rank decomposition of every weight.

Each target weight ``W`` (out x in) is scaled by the input-activation norms of its calibration
inputs, ``D = diag(||X_j||_2)``, so that columns fed by outlier features weigh more; then
``W D ≈ L + S`` by alternating minimisation of ``||W D - L - S||_F²``: ``L`` is the best rank-r
approximation of ``W D - S`` (truncated SVD) and ``S`` keeps the ``k`` largest-magnitude
entries of every row of ``W D - L`` (hard thresholding), starting from ``S = 0``. Each half-step
minimises the objective over its own block, so it never increases. The result is unscaled,
``Ŵ = (L + S) D⁻¹``. A kept fraction ``1 - sparsity`` of the matrix is split between the parts by
``rank_ratio``: ``r = floor(rank_ratio (1 - sparsity) m n / (m + n))`` and
``k = floor((1 - rank_ratio)(1 - sparsity) n)`` per row. As in the released code, blocks are
compressed one after another, each calibrated on the outputs of the blocks already compressed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.lrs_compression.baselines import activation_norms
from iclr26.llm.lrs_compression.layers import LowRankSparseLinear
from iclr26.llm.lrs_compression.sparsegpt import _block_output, _blocks, _first_block_inputs
from iclr26.llm.lrs_compression.targets import (
    DEFAULT_TARGETS,
    Target,
    check_calibration,
    check_model,
    check_targets,
    find_targets,
    swap_modules,
)

__all__ = ["oats_budget", "oats_decompose_weight", "oats_prune"]

_DTYPES = (torch.float32, torch.float64)


def oats_budget(shape: Sequence[int], sparsity: float, rank_ratio: float) -> tuple[int, int]:
    """``(rank, row_nnz)`` of one ``out x in`` matrix that keeps ``1 - sparsity`` of its
    parameters, ``rank_ratio`` of them in the low-rank part: ``rank (out + in) + out row_nnz``
    never exceeds ``(1 - sparsity) out in``."""
    if not isinstance(shape, Sequence) or len(shape) != 2:
        raise TypeError(f"shape must be a pair (out, in), got {shape!r}")
    m = V.check_int(shape[0], "shape[0]", low=1)
    n = V.check_int(shape[1], "shape[1]", low=1)
    sparsity = V.check_scalar(sparsity, "sparsity", low=0.0, high=1.0, high_open=True)
    rank_ratio = V.check_scalar(rank_ratio, "rank_ratio", low=0.0, high=1.0)
    keep = 1.0 - sparsity
    # the small slack keeps exact products such as 0.375 x 128 from rounding down to 47
    rank = int(rank_ratio * keep * m * n / (m + n) + 1e-9)
    row_nnz = int((1.0 - rank_ratio) * keep * n + 1e-9)
    return rank, row_nnz


def _row_threshold(residual: torch.Tensor, row_nnz: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the ``row_nnz`` largest-magnitude entries of every row; the rest become zero."""
    support = torch.zeros_like(residual, dtype=torch.bool)
    if row_nnz > 0:
        keep = torch.topk(residual.abs(), row_nnz, dim=1).indices
        support.scatter_(1, keep, True)
    return residual * support, support


def oats_decompose_weight(
    weight: Any,
    rank: int,
    row_nnz: int,
    scale: Any = None,
    iterations: int = 80,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
    """OATS on one matrix: ``weight D ≈ L + S`` with ``rank(L) <= rank`` and ``row_nnz``
    entries per row of ``S``, by ``iterations`` rounds of truncated SVD and row-wise hard
    thresholding (``D = diag(scale)``, the identity when ``scale`` is None).

    Returns ``U`` (out x rank), ``V_factor`` (in x rank), the sparse part (out x in, zeros off
    its support) and ``info``, all unscaled so that ``weight ≈ U V_factorᵀ + sparse``.
    ``info["objective"][t]`` is ``||weight D - L_t - S_t||_F²`` after round ``t``;
    ``info["support"]`` is the boolean support of the sparse part."""
    V.check_tensor(weight, "weight", ndim=2, floating=True)
    m, n = weight.shape
    rank = V.check_int(rank, "rank", low=0, high=min(m, n))
    row_nnz = V.check_int(row_nnz, "row_nnz", low=0, high=n)
    iterations = V.check_int(iterations, "iterations", low=1)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    w = weight.detach().to(dtype)
    if scale is None:
        d = torch.ones(n, dtype=dtype, device=w.device)
    else:
        V.check_tensor(scale, "scale", shape=(n,), floating=True, low=0.0)
        d = scale.detach().to(device=w.device, dtype=dtype)
        if not bool((d > 0).any()):
            raise ValueError("scale must have at least one positive entry (all inputs are zero)")
        # an input that is zero on every calibration token leaves its column free; a floor on
        # its scale keeps the unscaling finite and that column's weights close to the original
        d = d.clamp_min(float(d.max()) * 1e-8)
    target = w * d
    sparse = torch.zeros_like(target)
    support = torch.zeros_like(target, dtype=torch.bool)
    left = torch.zeros(m, 0, dtype=dtype, device=w.device)
    right = torch.zeros(0, n, dtype=dtype, device=w.device)
    objective = []
    for _ in range(iterations):
        if rank > 0:
            u, s, vh = torch.linalg.svd(target - sparse, full_matrices=False)
            root = s[:rank].sqrt()
            left, right = u[:, :rank] * root, root[:, None] * vh[:rank]
        low_rank = left @ right
        sparse, support = _row_threshold(target - low_rank, row_nnz)
        objective.append(float(((target - low_rank - sparse) ** 2).sum()))
    U = left.to(weight.dtype)
    V_factor = (right / d).mT.to(weight.dtype)
    info = {
        "objective": objective,
        "relative_error": (objective[-1] / max(float((target**2).sum()), 1e-300)) ** 0.5,
        "rank": rank,
        "row_nnz": row_nnz,
        "svds": iterations if rank > 0 else 0,
        "support": support,
    }
    return U, V_factor, (sparse / d).to(weight.dtype), info


def _compressed_module(
    t: Target, scale: torch.Tensor, sparsity: float, rank_ratio: float, iterations: int, dtype
) -> tuple[LowRankSparseLinear, dict[str, Any]]:
    rank, row_nnz = oats_budget(t.shape, sparsity, rank_ratio)
    weight = t.module.weight.detach()
    U, V_factor, sparse, info = oats_decompose_weight(
        weight, rank, row_nnz, scale=scale.to(weight.device), iterations=iterations, dtype=dtype
    )
    rows, cols = info.pop("support").nonzero(as_tuple=True)
    bias = t.module.bias.detach() if t.module.bias is not None else None
    module = LowRankSparseLinear(
        t.shape[1],
        t.shape[0],
        U=U,
        V_factor=V_factor,
        sparse_rows=rows,
        sparse_cols=cols,
        sparse_values=sparse[rows, cols],
        bias=bias,
    ).to(weight.device)
    objective = info.pop("objective")
    record = {
        "name": t.name,
        "layer": t.layer,
        "shape": list(t.shape),
        "nnz": module.nnz,
        "params": module.n_params(),
        "dense": t.shape[0] * t.shape[1],
        "objective_first": objective[0],
        "objective_last": objective[-1],
        **info,
    }
    return module, record


def _square_sum_hook(sums: dict[str, torch.Tensor], name: str):
    """A forward hook adding the squared inputs of every token, per feature, to ``sums[name]``."""

    def hook(module, args, out):
        x = args[0].detach().reshape(-1, args[0].shape[-1]).double()
        sums[name] += (x * x).sum(0).cpu()

    return hook


def _sequential_oats(
    model: nn.Module, ids: torch.Tensor, targets: list[Target], settings: dict, batch_size: int
) -> tuple[dict[str, nn.Module], dict[str, Any]]:
    """Compress block after block in place; returns the original modules (to restore on an
    error) and the statistics."""
    blocks, per_block = _blocks(model, targets)
    inputs = _first_block_inputs(model, blocks[0], ids, batch_size)
    originals: dict[str, nn.Module] = {}
    records, forwards = [], 0
    try:
        for b, block in enumerate(blocks):
            group = per_block.get(b, [])
            sums = {t.name: torch.zeros(t.shape[1], dtype=torch.float64) for t in group}

            hooks = [t.module.register_forward_hook(_square_sum_hook(sums, t.name)) for t in group]
            try:
                for hidden, args, kwargs in inputs:
                    block(hidden, *args, **kwargs)
                    forwards += 1
            finally:
                for h in hooks:
                    h.remove()
            replacements = {}
            for t in group:
                module, record = _compressed_module(t, sums[t.name].sqrt(), **settings)
                replacements[t.name] = module
                records.append(record)
            originals.update({t.name: t.module for t in group})
            swap_modules(model, replacements)
            new_inputs = []
            for hidden, args, kwargs in inputs:
                new_inputs.append((_block_output(block(hidden, *args, **kwargs)), args, kwargs))
                forwards += 1
            inputs = new_inputs
    except BaseException:
        swap_modules(model, originals)
        raise
    return originals, {"modules": records, "block_forwards": forwards}


def oats_prune(
    model: nn.Module | str,
    calib_input_ids: Any,
    sparsity: float,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    *,
    rank_ratio: float = 0.25,
    iterations: int = 80,
    sequential: bool = True,
    batch_size: int = 8,
    dtype: torch.dtype = torch.float32,
) -> nn.Module:
    """OATS on every target of a causal LM at ``1 - sparsity`` of its parameters, each target
    swapped for a :class:`LowRankSparseLinear` (``U V_factorᵀ`` plus the sparse part); in place,
    returns the model.

    ``sequential=True`` (the released code) calibrates block after block on the outputs of the
    blocks already compressed; ``False`` takes every target's activation norms from one pass of
    the dense model, as Wanda does. ``model.oats_stats_`` records per module its rank, sparse
    entries, parameters and the objective after the first and last rounds, and in all
    ``params``, ``svds`` and ``block_forwards``. On an error the model is left unchanged."""
    model = check_model(model)
    sparsity = V.check_scalar(sparsity, "sparsity", low=0.0, high=1.0, high_open=True)
    rank_ratio = V.check_scalar(rank_ratio, "rank_ratio", low=0.0, high=1.0)
    iterations = V.check_int(iterations, "iterations", low=1)
    sequential = V.check_bool(sequential, "sequential")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    targets = find_targets(model, check_targets(target_modules))
    ids = check_calibration(calib_input_ids, model)
    settings = dict(sparsity=sparsity, rank_ratio=rank_ratio, iterations=iterations, dtype=dtype)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if sequential:
                _, stats = _sequential_oats(model, ids, targets, settings, batch_size)
            else:
                norms = activation_norms(model, ids, target_modules, batch_size)
                replacements, records = {}, []
                for t in targets:
                    module, record = _compressed_module(t, norms[t.name], **settings)
                    replacements[t.name] = module
                    records.append(record)
                swap_modules(model, replacements)
                stats = {"modules": records, "block_forwards": 0}
    finally:
        model.train(was_training)
    records = stats["modules"]
    stats.update(
        params=sum(r["params"] for r in records),
        dense=sum(r["dense"] for r in records),
        svds=sum(r["svds"] for r in records),
        iterations=iterations,
        rank_ratio=rank_ratio,
        calibration_sequences=int(ids.shape[0]),
    )
    model.oats_stats_ = stats
    return model
