"""Stage 1: block-wise quantization calibration (EfficientQAT "Block-AP").

The calibration sequences pass through the embeddings once; then, block by block, the
quantized block is trained (AdamW on its latent weights and on its scales and zero points,
cosine learning rates) to reproduce the full-precision block's output: loss
``MSE(Block_q(X_q), Block_fp(X_fp))``, where ``X_fp`` is the full-precision stream and ``X_q`` the
quantized one. Both streams then advance through their own block. Any Hugging Face decoder
works: each block is called with the keyword arguments (rotary embeddings, mask, positions)
the model itself passes to its first block, captured by a forward pre-hook.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.quant import QuantLinear, decoder_layers, quant_layers


class _Captured(Exception):
    pass


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def check_ids(ids, name: str, model: nn.Module) -> torch.Tensor:
    """A 2-D integer tensor of token ids valid for ``model``'s vocabulary."""
    if hasattr(ids, "input_ids") and not isinstance(ids, torch.Tensor):
        ids = ids.input_ids  # a MixedDomainCalibration or a tokenizer batch
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a 2-D LongTensor of token ids, got {type(ids).__name__}")
    V.check_tensor(ids, name, ndim=2, integer=True, low=0)
    if ids.shape[1] < 2:
        raise ValueError(f"{name} needs sequences of at least 2 tokens, got {ids.shape[1]}")
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab is not None and int(ids.max()) >= vocab:
        raise ValueError(f"{name} holds token id {int(ids.max())} >= vocab_size {vocab}")
    return ids.long()


def block_inputs(model: nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Hidden states entering the first decoder block for ``ids`` and the keyword arguments
    the model calls its blocks with (KV cache switched off)."""
    layers = decoder_layers(model)
    captured: dict = {}

    def hook(module, args, kwargs):
        captured["hidden"] = args[0] if args else kwargs["hidden_states"]
        captured["kwargs"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}
        raise _Captured

    handle = layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model(input_ids=ids.to(model_device(model)), use_cache=False)
    except _Captured:
        pass
    finally:
        handle.remove()
    if "hidden" not in captured:
        raise TypeError("model: its first decoder block was never called")
    kwargs = dict(captured["kwargs"])
    for key in ("past_key_value", "past_key_values", "cache", "layer_past"):
        if key in kwargs:
            kwargs[key] = None
    if "use_cache" in kwargs:
        kwargs["use_cache"] = False
    return captured["hidden"].detach(), kwargs


def run_block(block: nn.Module, hidden: torch.Tensor, kwargs: dict) -> torch.Tensor:
    out = block(hidden, **kwargs)
    return out[0] if isinstance(out, tuple) else out


@dataclass
class CalibrationReport:
    """What stage 1 did: per-block MSE at the RTN start and after training, steps, and
    ``seconds``, the wall time of the call (a plain timer for the user's information; no claim
    check reads it)."""

    mse_init: list[float] = field(default_factory=list)
    mse_final: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def blockwise_calibrate(
    model_q: nn.Module,
    model_fp: nn.Module,
    calib_ids,
    epochs: int = 2,
    lr_quant: float = 1e-4,
    lr_weight: float | None = None,
    batch_size: int = 4,
    weight_decay: float = 0.0,
    min_lr_factor: float = 20.0,
    progress: Callable[[int, int, float], None] | None = None,
) -> CalibrationReport:
    """Block-wise calibration of the quantized ``model_q`` against the full-precision
    ``model_fp`` (same architecture) on ``calib_ids`` (``(n, seq_len)`` token ids or a
    :class:`MixedDomainCalibration`). ``lr_weight`` defaults to 1e-5 (2e-5 at 2 bits), the
    paper's values; 0 freezes the latent weights. ``model_q`` is changed in place; after an
    error it is restored to its state before the call. ``progress(block, n_blocks, mse)``
    is told after each block."""
    if not quant_layers(model_q):
        raise ValueError("model_q has no QuantLinear modules; call quantize_model first")
    if quant_layers(model_fp):
        raise ValueError("model_fp must be the full-precision model, but it holds QuantLinear")
    blocks_q, blocks_fp = decoder_layers(model_q), decoder_layers(model_fp)
    if len(blocks_q) != len(blocks_fp):
        raise ValueError(f"model_q has {len(blocks_q)} blocks but model_fp has {len(blocks_fp)}")
    ids = check_ids(calib_ids, "calib_ids", model_q)
    epochs = V.check_int(epochs, "epochs", low=0)
    lr_quant = V.check_scalar(lr_quant, "lr_quant", low=0.0)
    bits = min(q.bits for q in quant_layers(model_q).values())
    if lr_weight is None:
        lr_weight = 2e-5 if bits <= 2 else 1e-5
    lr_weight = V.check_scalar(lr_weight, "lr_weight", low=0.0)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
    min_lr_factor = V.check_scalar(min_lr_factor, "min_lr_factor", low=1.0)
    if epochs > 0 and lr_quant == 0 and lr_weight == 0:
        raise ValueError("lr_quant and lr_weight are both 0: nothing would train")

    saved = _snapshot(model_q)
    flags = {n: p.requires_grad for n, p in model_q.named_parameters()}
    was_training = model_q.training, model_fp.training
    try:
        return _calibrate(
            model_q,
            model_fp,
            ids,
            epochs,
            lr_quant,
            lr_weight,
            batch_size,
            weight_decay,
            min_lr_factor,
            progress,
        )
    except BaseException:
        model_q.load_state_dict(saved)
        raise
    finally:
        for n, p in model_q.named_parameters():
            p.requires_grad_(flags[n])
        model_q.train(was_training[0])
        model_fp.train(was_training[1])


def _calibrate(
    model_q,
    model_fp,
    ids,
    epochs,
    lr_quant,
    lr_weight,
    batch_size,
    weight_decay,
    min_lr_factor,
    progress,
) -> CalibrationReport:
    started = time.perf_counter()
    model_q.eval()  # no dropout; gradients still flow
    model_fp.eval()
    blocks_q, blocks_fp = decoder_layers(model_q), decoder_layers(model_fp)
    batches = list(torch.split(torch.arange(ids.shape[0]), batch_size))
    x_fp, x_q, kwargs = [], [], []
    for index in batches:
        hidden, kw = block_inputs(model_fp, ids[index])
        hidden_q, kw_q = block_inputs(model_q, ids[index])
        x_fp.append(hidden)
        x_q.append(hidden_q)
        kwargs.append((kw, kw_q))
    report = CalibrationReport()
    for p in model_q.parameters():
        p.requires_grad_(False)
    for layer_index, (block_q, block_fp) in enumerate(zip(blocks_q, blocks_fp)):
        with torch.no_grad():
            targets = [run_block(block_fp, x, kw[0]) for x, kw in zip(x_fp, kwargs)]
            init = [
                float(nn.functional.mse_loss(run_block(block_q, x, kw[1]).float(), y.float()))
                for x, y, kw in zip(x_q, targets, kwargs)
            ]
        report.mse_init.append(sum(init) / len(init))
        if epochs > 0:
            report.steps += _train_block(
                block_q,
                x_q,
                targets,
                kwargs,
                epochs,
                lr_quant,
                lr_weight,
                weight_decay,
                min_lr_factor,
            )
        with torch.no_grad():
            x_q = [run_block(block_q, x, kw[1]).detach() for x, kw in zip(x_q, kwargs)]
            final = [
                float(nn.functional.mse_loss(x.float(), y.float())) for x, y in zip(x_q, targets)
            ]
        report.mse_final.append(sum(final) / len(final))
        x_fp = targets
        if progress is not None:
            progress(layer_index + 1, len(blocks_q), report.mse_final[-1])
    report.seconds = time.perf_counter() - started
    return report


def _train_block(
    block, x_q, targets, kwargs, epochs, lr_quant, lr_weight, weight_decay, min_lr_factor
) -> int:
    quant = [m for m in block.modules() if isinstance(m, QuantLinear)]
    groups = []
    if lr_quant > 0:
        qp = [p for m in quant for p in m.quant_parameters()]
        groups.append({"params": qp, "lr": lr_quant})
    if lr_weight > 0:
        wp = [m.weight for m in quant] + [m.bias for m in quant if m.bias is not None]
        groups.append({"params": wp, "lr": lr_weight})
    for g in groups:
        for p in g["params"]:
            p.requires_grad_(True)
    opt = torch.optim.AdamW(groups, weight_decay=weight_decay)
    total = epochs * len(x_q)
    base = [g["lr"] for g in opt.param_groups]
    step = 0
    for _ in range(epochs):
        for x, y, kw in zip(x_q, targets, kwargs):
            loss = nn.functional.mse_loss(run_block(block, x, kw[1]).float(), y.float())
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"block reconstruction loss became {float(loss)}; lower lr_quant/lr_weight"
                )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            frac = 0.5 * (1 + math.cos(math.pi * step / total))  # cosine to lr / min_lr_factor
            for g, lr in zip(opt.param_groups, base):
                g["lr"] = lr / min_lr_factor + (lr - lr / min_lr_factor) * frac
    for g in groups:
        for p in g["params"]:
            p.requires_grad_(False)
    return step
