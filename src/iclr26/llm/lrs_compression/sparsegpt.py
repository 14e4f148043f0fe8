"""SparseGPT baseline (Frantar & Alistarh, ICML 2023): one-shot pruning by approximate
layer-wise reconstruction.

Every linear layer gets the Hessian ``H = 2 X Xᵀ / n`` of its reconstruction loss
``||W X - Ŵ X||²`` from calibration inputs (``n`` counts sequences). Columns are visited left to
right; pruning weight ``w_iq`` and compensating the not-yet-visited weights of its row is the
Optimal Brain Surgeon step ``δ = -(w_iq / [H⁻¹]_qq) [H⁻¹]_q,:`` on the remaining columns, and
the rows of the upper Cholesky factor of ``H⁻¹`` hold those successive inverses, so one
factorisation serves every column. Columns go in blocks of 128 with lazy updates of the columns
after the block; the mask of each block is chosen when the block starts, by the OBS saliency
``w² / [chol(H⁻¹)]_qq²`` (or ``prunen`` of every ``prunem`` consecutive columns for N:M).
Layers are calibrated in sequence: the inputs of block ``l`` come from blocks ``0..l-1``
already pruned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.lrs_compression.baselines import LAYER_SPARSITY, _owl_options, owl_layer_sparsity
from iclr26.llm.lrs_compression.targets import (
    DEFAULT_TARGETS,
    Target,
    check_calibration,
    check_model,
    check_targets,
    find_targets,
)
from iclr26.models import hf_compat

__all__ = ["SparseGPT", "sparsegpt_prune", "sparsegpt_prune_weight"]

# Groups of a Llama-style block pruned one after the other with ``true_sequential=True``: each
# group's Hessians come from inputs in which the groups before it are already pruned.
TRUE_SEQUENTIAL_GROUPS = (
    ("k_proj", "v_proj", "q_proj"),
    ("o_proj",),
    ("up_proj", "gate_proj"),
    ("down_proj",),
)


def _check_pattern(
    sparsity: Any, prunen: Any, prunem: Any, blocksize: Any, percdamp: Any
) -> tuple[float, int, int, int, float]:
    prunen = V.check_int(prunen, "prunen", low=0)
    prunem = V.check_int(prunem, "prunem", low=0)
    blocksize = V.check_int(blocksize, "blocksize", low=1)
    percdamp = V.check_scalar(percdamp, "percdamp", low=0.0)
    if prunen == 0:
        if prunem != 0:
            raise ValueError(
                f"prunen must be > 0 when prunem is set, got prunen=0, prunem={prunem}"
            )
        if sparsity is None:
            raise TypeError("sparsity must be a number in [0, 1) (or give prunen and prunem)")
        sparsity = V.check_scalar(sparsity, "sparsity", low=0.0, high=1.0, high_open=True)
        return sparsity, 0, 0, blocksize, percdamp
    if prunem <= prunen:
        raise ValueError(f"prunem must exceed prunen for N:M sparsity, got {prunen}:{prunem}")
    if blocksize % prunem:
        raise ValueError(f"blocksize must be a multiple of prunem={prunem}, got {blocksize}")
    pattern = prunen / prunem
    if sparsity is not None:
        sparsity = V.check_scalar(sparsity, "sparsity", low=0.0, high=1.0, high_open=True)
        if abs(sparsity - pattern) > 1e-12:
            raise ValueError(
                f"sparsity must be None or prunen/prunem = {pattern:g} for {prunen}:{prunem} "
                f"sparsity, got {sparsity:g}"
            )
    return pattern, prunen, prunem, blocksize, percdamp


def _upper_cholesky_of_inverse(hessian: torch.Tensor, percdamp: float) -> torch.Tensor:
    """Dampen ``H`` by ``percdamp`` x its mean diagonal, invert it through its Cholesky factor
    and return the upper Cholesky factor of ``H⁻¹``."""
    damp = percdamp * hessian.diagonal().mean()
    hessian.diagonal().add_(damp)
    factor, info = torch.linalg.cholesky_ex(hessian)
    if int(info) != 0:
        raise ValueError(
            "hessian is not positive definite after dampening; use a larger percdamp "
            f"(got percdamp={percdamp:g})"
        )
    inverse = torch.cholesky_inverse(factor)
    upper, info = torch.linalg.cholesky_ex(inverse, upper=True)
    if int(info) != 0:
        raise ValueError(
            f"the inverse hessian is not positive definite; use a larger percdamp (got {percdamp:g})"
        )
    return upper


def _prune(
    weight: torch.Tensor,
    hessian: torch.Tensor,
    sparsity: float,
    prunen: int,
    prunem: int,
    blocksize: int,
    percdamp: float,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The column sweep on checked inputs (``hessian`` is overwritten)."""
    rows, columns = weight.shape
    W = weight.detach().to(hessian.dtype).clone()
    H = hessian
    dead = H.diagonal() == 0  # inputs never active: no information, prune them for free
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    U = _upper_cholesky_of_inverse(H, percdamp)
    losses = torch.zeros(rows, dtype=W.dtype, device=W.device)
    n_blocks = 0
    for i1 in range(0, columns, blocksize):
        i2 = min(i1 + blocksize, columns)
        count = i2 - i1
        n_blocks += 1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        U1 = U[i1:i2, i1:i2]
        d = U1.diagonal()
        mask1 = torch.zeros_like(W1, dtype=torch.bool)
        if prunen == 0:
            # adaptive mask: the lowest OBS saliencies of the whole block, chosen at its start
            n_prune = int(sparsity * rows * count)
            if n_prune:
                saliency = (W1 / d[None, :]) ** 2
                drop = torch.topk(saliency.reshape(-1), n_prune, largest=False).indices
                mask1.view(-1)[drop] = True
        for i in range(count):
            w = W1[:, i]
            if prunen and i % prunem == 0:
                saliency = (W1[:, i : i + prunem] / d[None, i : i + prunem]) ** 2
                drop = torch.topk(saliency, prunen, dim=1, largest=False).indices
                mask1.scatter_(1, i + drop, True)
            q = torch.where(mask1[:, i], torch.zeros_like(w), w)
            Q1[:, i] = q
            err = (w - q) / d[i]
            losses += err**2 / 2
            # OBS compensation of the rest of the block (the later blocks are updated lazily)
            W1[:, i:] -= err[:, None] * U1[i, i:][None, :]
            Err1[:, i] = err
        W[:, i1:i2] = Q1
        W[:, i2:] -= Err1 @ U[i1:i2, i2:]
    info = {
        "rows": rows,
        "columns": columns,
        "hessian_size": columns * columns,
        "blocks": n_blocks,
        "dead_columns": int(dead.sum()),
        "loss": float(losses.sum()),
        "sparsity": float((W == 0).sum()) / W.numel(),
    }
    return W.to(weight.dtype), info


def sparsegpt_prune_weight(
    weight: torch.Tensor,
    hessian: torch.Tensor,
    sparsity: float | None,
    *,
    prunen: int = 0,
    prunem: int = 0,
    blocksize: int = 128,
    percdamp: float = 0.01,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Prune one weight ``[out, in]`` with the Hessian ``[in, in]`` of its inputs.

    Unstructured: every block of ``blocksize`` columns loses its ``floor(sparsity x out x
    count)`` lowest-saliency weights. ``prunen``/``prunem`` > 0: N:M sparsity instead
    (``sparsity`` None or ``prunen / prunem``). Computes in the Hessian's dtype (float32 at
    least); returns the new weight (the input is untouched) and ``info`` (``loss``: the summed
    OBS errors ``(w - q)² / (2 [chol(H⁻¹)]_qq²)``, equal to ``tr(ΔW H ΔWᵀ) / 2`` with the
    damped ``H``; ``blocks``, ``columns``, ``hessian_size``, ``dead_columns``, ``sparsity``)."""
    V.check_tensor(weight, "weight", ndim=2, floating=True)
    V.check_tensor(
        hessian, "hessian", ndim=2, shape=(weight.shape[1], weight.shape[1]), floating=True
    )
    sparsity, prunen, prunem, blocksize, percdamp = _check_pattern(
        sparsity, prunen, prunem, blocksize, percdamp
    )
    if prunem and weight.shape[1] % prunem:
        raise ValueError(
            f"prunem={prunem} must divide the number of input columns, got {weight.shape[1]}"
        )
    dtype = torch.promote_types(hessian.dtype, torch.float32)
    H = hessian.detach().to(device=weight.device, dtype=dtype).clone()
    return _prune(weight, H, sparsity, prunen, prunem, blocksize, percdamp)


class SparseGPT:
    """The Hessian of one linear layer's inputs, accumulated over calibration batches, and the
    pruner that uses it.

    ``add_batch(inputs)`` takes ``[tokens, in]`` (one sample) or ``[batch, seq, in]`` (``batch``
    samples) and keeps ``H = 2 / n Σ X Xᵀ`` over the ``n`` samples seen so far; ``prune(sparsity,
    ...)`` returns the pruned weight (see :func:`sparsegpt_prune_weight`) without writing it and
    stores its ``info_``."""

    def __init__(self, layer: nn.Linear, dtype: torch.dtype = torch.float32):
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"layer must be a torch.nn.Linear, got {type(layer).__name__}")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        self.layer = layer
        self.columns = int(layer.weight.shape[1])
        self.hessian = torch.zeros(
            self.columns, self.columns, dtype=dtype, device=layer.weight.device
        )
        self.n_samples = 0
        self.info_: dict[str, Any] | None = None

    def add_batch(self, inputs: torch.Tensor) -> SparseGPT:
        V.check_tensor(inputs, "inputs", ndim=(2, 3), floating=True)
        if inputs.shape[-1] != self.columns:
            raise ValueError(
                f"inputs must have {self.columns} features in the last dimension, "
                f"got shape {tuple(inputs.shape)}"
            )
        self._accumulate(inputs)
        return self

    def _accumulate(self, inputs: torch.Tensor) -> None:
        batch = 1 if inputs.dim() == 2 else int(inputs.shape[0])
        x = inputs.detach().reshape(-1, self.columns).to(self.hessian)
        # running mean over samples, as in the reference: H <- H n/(n+b) + 2/(n+b) XᵀX
        self.hessian *= self.n_samples / (self.n_samples + batch)
        self.n_samples += batch
        x = x * (2.0 / self.n_samples) ** 0.5
        self.hessian += x.T @ x

    def prune(
        self,
        sparsity: float | None,
        *,
        prunen: int = 0,
        prunem: int = 0,
        blocksize: int = 128,
        percdamp: float = 0.01,
    ) -> torch.Tensor:
        if self.n_samples == 0:
            raise ValueError("inputs: no calibration inputs were added (call add_batch first)")
        weight, self.info_ = sparsegpt_prune_weight(
            self.layer.weight.detach(),
            self.hessian,
            sparsity,
            prunen=prunen,
            prunem=prunem,
            blocksize=blocksize,
            percdamp=percdamp,
        )
        return weight


# ------------------------------------------------------------------ sequential calibration


class _Inputs(Exception):
    """Raised by the hook on the first block once its inputs are recorded."""


def _blocks(model: nn.Module, targets: list[Target]) -> tuple[nn.ModuleList, dict[int, list]]:
    """The list of transformer blocks that holds every target, and the targets per block."""
    container, per_block = None, {}
    for t in targets:
        parts = t.name.split(".")
        index = next((k for k, p in enumerate(parts) if p.isdigit()), None)
        path = ".".join(parts[:index]) if index is not None else None
        if path is None or (container is not None and path != container):
            raise ValueError(
                "target_modules: SparseGPT calibrates block by block and needs every target "
                f"inside one indexed list of blocks (such as model.layers); got {t.name!r}"
            )
        container = path
        per_block.setdefault(int(parts[index]), []).append(t)
    blocks = model.get_submodule(container) if container else None
    if not isinstance(blocks, nn.ModuleList):
        raise ValueError(f"target_modules: {container!r} is not an nn.ModuleList of blocks")
    return blocks, per_block


def _groups(block_targets: list[Target], true_sequential: bool) -> list[list[Target]]:
    if not true_sequential:
        return [block_targets]
    leaf = {t: t.name.rsplit(".", 1)[-1] for t in block_targets}
    groups = [[t for t in block_targets if leaf[t] in names] for names in TRUE_SEQUENTIAL_GROUPS]
    known = {n for names in TRUE_SEQUENTIAL_GROUPS for n in names}
    groups.append([t for t in block_targets if leaf[t] not in known])
    return [g for g in groups if g]


def _block_output(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple | list) else out


def _first_block_inputs(
    model: nn.Module, first: nn.Module, ids: torch.Tensor, batch_size: int
) -> list[tuple[torch.Tensor, tuple, dict]]:
    """Hidden states, extra arguments and keyword arguments (mask, positions, rotary
    embeddings) with which the model calls its first block, per calibration batch."""
    captured: list[tuple[torch.Tensor, tuple, dict]] = []

    def catch(module, args, kwargs):
        kwargs = dict(kwargs)
        hidden = args[0] if args else kwargs.pop("hidden_states")
        captured.append((hidden, tuple(args[1:]), kwargs))
        raise _Inputs

    hook = first.register_forward_pre_hook(catch, with_kwargs=True)
    device = next(first.parameters()).device
    try:
        for batch in torch.split(ids, batch_size):
            try:
                hf_compat.causal_lm_logits(model, batch.to(device), use_cache=False)
            except _Inputs:
                pass
    finally:
        hook.remove()
    return captured


def _sequential(
    model: nn.Module,
    ids: torch.Tensor,
    targets: list[Target],
    options: dict[str, Any],
    true_sequential: bool,
    batch_size: int,
    layer_sparsity: dict[int, float] | None = None,
) -> dict[str, Any]:
    blocks, per_block = _blocks(model, targets)
    for t in targets:
        if options["prunem"] and t.shape[1] % options["prunem"]:
            raise ValueError(
                f"prunem={options['prunem']} must divide the input columns of {t.name} ({t.shape[1]})"
            )
    inputs = _first_block_inputs(model, blocks[0], ids, batch_size)
    modules, forwards = [], 0
    for b, block in enumerate(blocks):
        for group in _groups(per_block.get(b, []), true_sequential):
            gpts = {t.name: SparseGPT(t.module) for t in group}
            hooks = [
                t.module.register_forward_hook(
                    lambda mod, args, out, g=gpts[t.name]: g._accumulate(args[0])
                )
                for t in group
            ]
            try:
                for hidden, args, kwargs in inputs:
                    block(hidden, *args, **kwargs)
                    forwards += 1
            finally:
                for h in hooks:
                    h.remove()
            block_options = dict(options)
            if layer_sparsity is not None:
                block_options["sparsity"] = layer_sparsity.get(b, options["sparsity"])
            for t in group:
                weight = gpts[t.name].prune(**block_options)
                t.module.weight.copy_(weight)
                modules.append({"name": t.name, "layer": b, **gpts[t.name].info_})
                del gpts[t.name]
        # the next block sees this block's output with its weights pruned
        new_inputs = []
        for hidden, args, kwargs in inputs:
            new_inputs.append((_block_output(block(hidden, *args, **kwargs)), args, kwargs))
            forwards += 1
        inputs = new_inputs
    return {
        "modules": modules,
        "columns_processed": sum(m["columns"] for m in modules),
        "hessian_entries": sum(m["hessian_size"] for m in modules),
        "block_forwards": forwards,
        "calibration_sequences": int(ids.shape[0]),
        "loss": sum(m["loss"] for m in modules),
    }


def sparsegpt_prune(
    model: nn.Module | str,
    calib_input_ids: Any,
    sparsity: float | None,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    *,
    prunen: int = 0,
    prunem: int = 0,
    blocksize: int = 128,
    percdamp: float = 0.01,
    true_sequential: bool = False,
    batch_size: int = 8,
    layer_sparsity: str = "uniform",
    owl_m: float = 5.0,
    owl_lambda: float = 0.08,
) -> nn.Module:
    """SparseGPT on every target of a causal LM, block after block; in place, returns the model.

    The first block's inputs are recorded from one pass over ``calib_input_ids``; each block
    then runs on them with hooks that accumulate its targets' Hessians, its targets are pruned
    (all at once, or by ``TRUE_SEQUENTIAL_GROUPS`` with ``true_sequential=True``), and the
    pruned block's outputs become the next block's inputs. ``model.sparsegpt_stats_`` records
    per module ``loss``, ``blocks``, ``columns``, ``hessian_size`` and the realised sparsity,
    and in all ``columns_processed``, ``hessian_entries`` and ``block_forwards``. On an error
    every weight is restored. ``layer_sparsity="owl"`` prunes block ``l`` to OWL's ``s_l``
    (:func:`owl_layer_sparsity`, from the dense model's Wanda scores; unstructured only),
    recorded in ``model.owl_``."""
    model = check_model(model)
    sparsity, prunen, prunem, blocksize, percdamp = _check_pattern(
        sparsity, prunen, prunem, blocksize, percdamp
    )
    true_sequential = V.check_bool(true_sequential, "true_sequential")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    layer_sparsity = V.check_choice(layer_sparsity, "layer_sparsity", LAYER_SPARSITY)
    owl_m, owl_lambda = _owl_options(owl_m, owl_lambda)
    if layer_sparsity == "owl" and prunen:
        raise ValueError("layer_sparsity='owl' needs unstructured sparsity (prunen=prunem=0)")
    targets = find_targets(model, check_targets(target_modules))
    ids = check_calibration(calib_input_ids, model)
    if ids.shape[0] == 0:
        raise ValueError("calib_input_ids is empty")
    owl = None
    if layer_sparsity == "owl":
        owl = owl_layer_sparsity(model, ids, sparsity, target_modules, owl_m, owl_lambda)
    options = dict(
        sparsity=sparsity, prunen=prunen, prunem=prunem, blocksize=blocksize, percdamp=percdamp
    )
    original = [(t.module.weight, t.module.weight.detach().clone()) for t in targets]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            stats = _sequential(
                model,
                ids,
                targets,
                options,
                true_sequential,
                batch_size,
                owl["sparsity"] if owl is not None else None,
            )
    except BaseException:
        with torch.no_grad():
            for param, value in original:
                param.copy_(value)
        raise
    finally:
        model.train(was_training)
    model.sparsegpt_stats_ = stats
    if owl is not None:
        model.owl_ = owl
    return model
