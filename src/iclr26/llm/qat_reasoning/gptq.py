"""GPTQ (Frantar et al. 2023), a short torch reference used as the PTQ baseline.

Per linear layer, ``H = 2 X X^T / n`` from its calibration inputs plus ``damp * mean(diag H)``
on the diagonal. Columns are quantized left to right; each column's quantization error is
spread over the columns not yet quantized through the upper Cholesky factor of ``H^-1``
(lazy batch updates in blocks). Group scales and zero points (min-max, as RTN) are recomputed
from the error-updated weights at each group boundary. With ``act_order`` the columns are
visited by decreasing ``diag H`` and the group parameters are fixed up front from the original
weights ("static groups"), so groups stay runs of consecutive input columns. Layers are
quantized block by block, each block seeing the outputs of the already quantized ones.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.calibrate import check_ids, model_device
from iclr26.llm.qat_reasoning.quant import (
    QuantLinear,
    _set_module,
    check_bits,
    decoder_layers,
    default_targets,
    minmax_params,
)


class _Stop(Exception):
    pass


def _quantize_column(w, scale, zero, qmax):
    q = (torch.round(w / scale) + zero).clamp(0, qmax)
    return q, (q - zero) * scale


def gptq_layer(
    weight: torch.Tensor,
    hessian: torch.Tensor,
    bits: int,
    group_size: int,
    damp: float = 0.01,
    act_order: bool = False,
    block_size: int = 128,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GPTQ of one weight ``(out, in)`` with Hessian ``(in, in)``; returns integer codes
    ``(out, in)``, scales and zero points ``(out, n_groups)``."""
    bits = check_bits(bits)
    group_size = V.check_int(group_size, "group_size", low=1)
    damp = V.check_scalar(damp, "damp", low=0.0, low_open=True)
    V.check_tensor(weight, "weight", ndim=2, floating=True)
    out_f, in_f = weight.shape
    V.check_tensor(hessian, "hessian", shape=(in_f, in_f), floating=True)
    qmax = 2**bits - 1
    W = weight.detach().float().clone()
    H = hessian.detach().float().clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    n_groups = -(-in_f // group_size)
    scales = torch.zeros(out_f, n_groups, device=W.device)
    zeros = torch.zeros(out_f, n_groups, device=W.device)
    perm = torch.arange(in_f, device=W.device)
    if act_order:
        s0, z0 = minmax_params(W, bits, group_size)  # static groups from the original weights
        scales.copy_(s0)
        zeros.copy_(z0)
        perm = torch.argsort(torch.diag(H), descending=True)
        W, H = W[:, perm], H[perm][:, perm]
    H += damp * torch.mean(torch.diag(H)) * torch.eye(in_f, device=W.device)
    L = torch.linalg.cholesky(H)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(L), upper=True)
    Q = torch.zeros_like(W)
    block = max(group_size, (block_size // group_size) * group_size)
    for i1 in range(0, in_f, block):
        i2 = min(i1 + block, in_f)
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        E1 = torch.zeros_like(W1)
        H1 = Hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = i1 + i
            if not act_order and col % group_size == 0:  # group boundary: fresh min-max
                s, z = minmax_params(W1[:, i : i + group_size], bits, group_size)
                scales[:, col // group_size] = s[:, 0]
                zeros[:, col // group_size] = z[:, 0]
            g = int(perm[col]) // group_size
            q, deq = _quantize_column(W1[:, i], scales[:, g], zeros[:, g], qmax)
            Q1[:, i] = q
            err = (W1[:, i] - deq) / H1[i, i]
            W1[:, i:] -= err[:, None] * H1[i, i:][None, :]
            E1[:, i] = err
        Q[:, i1:i2] = Q1
        W[:, i2:] -= E1 @ Hinv[i1:i2, i2:]
    if act_order:
        Q = Q[:, torch.argsort(perm)]
    return Q.to(torch.uint8), scales, zeros


def gptq_quantize(
    model: nn.Module,
    calib_ids,
    bits: int,
    group_size: int = 128,
    damp: float = 0.01,
    act_order: bool = False,
    batch_size: int = 8,
    targets: Sequence[str] | None = None,
) -> nn.Module:
    """GPTQ PTQ baseline: a quantized deep copy of ``model`` (QuantLinear modules holding the
    GPTQ codes); ``calib_ids`` is ``(n, seq_len)`` token ids. The input model is unchanged."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    bits = check_bits(bits)
    group_size = V.check_int(group_size, "group_size", low=1)
    damp = V.check_scalar(damp, "damp", low=0.0, low_open=True)
    V.check_bool(act_order, "act_order")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    ids = check_ids(calib_ids, "calib_ids", model)
    if isinstance(targets, str):
        raise TypeError("targets must be a sequence of module names, not one string")
    names = default_targets(model) if targets is None else list(targets)
    modules = dict(model.named_modules())
    for name in names:
        if not isinstance(modules.get(name), nn.Linear):
            raise ValueError(f"targets: {name!r} is not an nn.Linear of the model")
    qmodel = copy.deepcopy(model)
    qmodel.eval()
    device = model_device(qmodel)
    layers = decoder_layers(qmodel)
    prefix = next(n for n, m in qmodel.named_modules() if m is layers)
    for index, layer in enumerate(layers):
        here = [n for n in names if n.startswith(f"{prefix}.{index}.")]
        if not here:
            continue
        qmods = dict(qmodel.named_modules())
        hessians = {n: None for n in here}
        counts = dict.fromkeys(here, 0)

        def make_hook(name, hessians=hessians, counts=counts):
            def hook(module, args):
                x = args[0].detach().float().reshape(-1, args[0].shape[-1])
                h = 2.0 * x.T @ x
                hessians[name] = h if hessians[name] is None else hessians[name] + h
                counts[name] += x.shape[0]

            return hook

        handles = [qmods[n].register_forward_pre_hook(make_hook(n)) for n in here]

        def stop(module, args, output):
            raise _Stop

        handles.append(layer.register_forward_hook(stop))
        try:
            with torch.no_grad():
                for batch in torch.split(ids, batch_size):
                    try:
                        qmodel(input_ids=batch.to(device), use_cache=False)
                    except _Stop:
                        pass
        finally:
            for h in handles:
                h.remove()
        for name in here:
            lin = qmods[name]
            H = hessians[name] / max(counts[name], 1)
            codes, scale, zero = gptq_layer(lin.weight, H, bits, group_size, damp, act_order)
            q = QuantLinear.from_linear(lin, bits, group_size)
            q.load_export(codes.to(lin.weight.device), scale, zero)
            _set_module(qmodel, name, q)
    return qmodel
