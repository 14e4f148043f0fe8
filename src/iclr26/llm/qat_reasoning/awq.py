"""AWQ (Lin et al., MLSys 2024): activation-aware weight quantization, a PTQ baseline.

A few input channels carry large activations; scaling their weight columns up by ``s`` before
quantization (and the input down by ``1/s``) shrinks their relative rounding error. Per group of
linears that read the same input, ``s = mean|X|^alpha`` over the calibration tokens, normalised
by ``sqrt(max(s) * min(s))``; ``alpha`` is picked from the grid ``{0, 1/n, ..., (n-1)/n}``
(``n = 20``) to minimise the output MSE of the module that holds the group (the attention
module for q/k/v, the MLP for gate/up, else the linears themselves) with ``Q(W diag(s))
diag(s)^-1`` in place of ``W``. The scale is then folded exactly: ``1/s`` into the preceding norm
(its weight and bias) or into the rows of the preceding linear, ``s`` into the group's columns.
An optional clipping search (llm-awq ``auto_clip``) shrinks each (row, group) range to
``[-m, m]``, ``m = max|w| (1 - i/n)``, ``i < max_shrink * n``, minimising the group-wise partial
output error on up to 512 scaled calibration tokens. Quantization itself is the room's
min-max group quantizer, so an AWQ model is an ordinary :class:`QuantLinear` model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.calibrate import block_inputs, check_ids, run_block
from iclr26.llm.qat_reasoning.quant import (
    _grouped,
    check_bits,
    decoder_layers,
    default_targets,
    fake_quant,
    minmax_params,
    quantize_model,
)

SCALE_FLOOR = 1e-4  # llm-awq clamps mean|X|^alpha from below before normalising
# llm-awq leaves the query/key projections unclipped (attention logits are too sensitive)
NO_CLIP = ("q_proj", "k_proj", "query", "key", "Wqkv")
# preferred fold targets among linears whose output width matches (tried first, then the rest)
UNFOLDABLE = ("skip", "explicit")
PREFERRED_PREV = ("v_proj", "up_proj", "fc1", "c_fc", "w3", "dense_h_to_4h")


def rtn_weight(weight: torch.Tensor, bits: int, group_size: int) -> torch.Tensor:
    """The room's min-max group quantizer applied once (fp32 result)."""
    scale, zero = minmax_params(weight, bits, group_size)
    return fake_quant(weight.detach().float(), scale, zero, bits, group_size)[0]


def activation_scale(x: torch.Tensor) -> torch.Tensor:
    """Per-input-channel mean |x| over every token (llm-awq ``get_act_scale``)."""
    return x.detach().abs().reshape(-1, x.shape[-1]).float().mean(0)


def alpha_grid(n_grid: int) -> list[float]:
    """llm-awq's grid: ``i / n_grid`` for ``i = 0 .. n_grid - 1`` (alpha = 1 is not tried)."""
    return [i / n_grid for i in range(n_grid)]


def scales_for(x_mean: torch.Tensor, alpha: float) -> torch.Tensor:
    """``s = max(x_mean^alpha, 1e-4) / sqrt(max(s) min(s))`` (alpha = 0 gives all ones)."""
    s = x_mean.float().pow(alpha).clamp(min=SCALE_FLOOR)
    return s / (s.max() * s.min()).sqrt()


def _check_layer_args(weight, x, bits, group_size, n_grid):
    V.check_tensor(weight, "weight", ndim=2, floating=True)
    V.check_tensor(x, "x", min_ndim=2, floating=True)
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"x has {x.shape[-1]} channels but weight has {weight.shape[1]} inputs")
    return (
        check_bits(bits),
        V.check_int(group_size, "group_size", low=1),
        V.check_int(n_grid, "n_grid", low=1),
    )


@torch.no_grad()
def awq_search_scale(
    weight: torch.Tensor, x: torch.Tensor, bits: int, group_size: int = 128, n_grid: int = 20
) -> tuple[torch.Tensor, float, list[float]]:
    """AWQ scale search for one weight ``(out, in)`` (or the row-stacked weights of linears
    that share an input) on activations ``x`` ``(..., in)``: the MSE of ``x W^T`` against
    ``x (Q(W diag(s)) diag(s)^-1)^T`` for each alpha of the grid. Returns the best scales
    ``(in,)``, the best alpha and the MSE per alpha (the first entry, alpha = 0, is RTN's)."""
    bits, group_size, n_grid = _check_layer_args(weight, x, bits, group_size, n_grid)
    w = weight.detach().float()
    xf = x.detach().float().reshape(-1, x.shape[-1])
    ref = xf @ w.T
    x_mean = activation_scale(xf)
    losses, best = [], (float("inf"), 0.0, None)
    for alpha in alpha_grid(n_grid):
        s = scales_for(x_mean, alpha)
        w_hat = rtn_weight(w * s, bits, group_size) / s
        loss = float((xf @ w_hat.T - ref).pow(2).mean())
        losses.append(loss)
        if loss < best[0]:
            best = (loss, alpha, s)
    return best[2], best[1], losses


@torch.no_grad()
def awq_clip_search(
    weight: torch.Tensor,
    x: torch.Tensor,
    bits: int,
    group_size: int = 128,
    n_grid: int = 20,
    max_shrink: float = 0.5,
    n_tokens: int = 512,
    row_batch: int = 256,
) -> torch.Tensor:
    """llm-awq ``auto_clip`` for one weight ``(out, in)`` on inputs ``x`` ``(..., in)``: per
    (row, group), the clip value ``m = max|w| (1 - i / n_grid)``, ``i < max_shrink * n_grid``,
    whose min-max quantization of ``clamp(w, -m, m)`` gives the smallest mean squared error of
    the group's partial output ``sum_k x_k w_k`` over (at most about) ``n_tokens`` tokens taken
    at a fixed stride. Returns ``m`` ``(out, n_groups)``."""
    bits, group_size, n_grid = _check_layer_args(weight, x, bits, group_size, n_grid)
    max_shrink = V.check_scalar(max_shrink, "max_shrink", low=0.0, high=1.0, high_open=True)
    n_tokens = V.check_int(n_tokens, "n_tokens", low=1)
    row_batch = V.check_int(row_batch, "row_batch", low=1)
    xf = x.detach().float().reshape(-1, x.shape[-1])
    xf = xf[:: max(1, xf.shape[0] // n_tokens)]
    in_f = weight.shape[1]
    pad = (-in_f) % group_size
    xg = torch.cat([xf, xf.new_zeros(xf.shape[0], pad)], 1).reshape(xf.shape[0], -1, group_size)
    steps = max(1, int(max_shrink * n_grid))
    out = []
    for rows in torch.split(weight.detach().float(), row_batch):
        wg = _grouped(rows, group_size)  # (r, g, k); padded columns meet zero inputs
        ref = torch.einsum("rgk,tgk->rtg", wg, xg)
        org_max = wg.abs().amax(-1)  # (r, g)
        best_err = torch.full_like(org_max, float("inf"))
        best_max = org_max.clone()
        for i in range(steps):
            m = org_max * (1 - i / n_grid)
            clipped = torch.maximum(
                torch.minimum(rows, _cols(m, group_size, in_f)), -_cols(m, group_size, in_f)
            )
            q = _grouped(rtn_weight(clipped, bits, group_size), group_size)
            err = (torch.einsum("rgk,tgk->rtg", q, xg) - ref).pow(2).mean(1)
            better = err < best_err
            best_err = torch.where(better, err, best_err)
            best_max = torch.where(better, m, best_max)
        out.append(best_max)
    return torch.cat(out)


def _cols(per_group: torch.Tensor, group_size: int, in_f: int) -> torch.Tensor:
    """(rows, n_groups) -> (rows, in_f), each group's value repeated over its columns."""
    return per_group.repeat_interleave(group_size, dim=1)[:, :in_f]


@dataclass
class AWQGroup:
    """One scale group of a block: the linears that read one input, where ``1/s`` went
    (``fold_into``: a module name; ``"explicit"`` when no exact fold was found and the layers
    keep ``s`` as an explicit input scale; ``None`` when none was found and the group kept
    scale 1, as llm-awq does), the module whose output the search compared (``inspect``), the
    chosen ``alpha`` and the output MSE per alpha of the grid (``losses[0]`` is RTN's)."""

    block: int
    linears: list[str]
    fold_into: str | None
    inspect: str
    alpha: float
    losses: list[float]


@dataclass
class AWQReport:
    """What :func:`awq_scale` did: the scale groups, per clipped linear the mean clip ratio
    ``m / max|w|``, and the explicit input scales by linear name (``unfoldable="explicit"``)."""

    groups: list[AWQGroup] = field(default_factory=list)
    input_scales: dict[str, torch.Tensor] = field(default_factory=dict)
    clip_ratio: dict[str, float] = field(default_factory=dict)


class _Recorder:
    """Forward hooks that keep every input of the block's linears and every output of its
    other submodules (holding references, so no two live tensors share storage)."""

    def __init__(self, block: nn.Module):
        self.inputs: dict[str, torch.Tensor] = {}
        self.outputs: dict[str, torch.Tensor] = {}
        self.calls: dict[str, tuple] = {}
        self.handles = []
        for name, module in block.named_modules():
            if not name:
                continue
            if isinstance(module, nn.Linear):
                self.handles.append(module.register_forward_pre_hook(self._linear(name)))
            else:
                self.handles.append(
                    module.register_forward_pre_hook(self._call(name), with_kwargs=True)
                )
                self.handles.append(module.register_forward_hook(self._output(name)))

    def _linear(self, name):
        def hook(module, args):
            self.inputs.setdefault(name, args[0].detach())

        return hook

    def _call(self, name):
        def hook(module, args, kwargs):
            self.calls.setdefault(name, (args, dict(kwargs)))

        return hook

    def _output(self, name):
        def hook(module, args, output):
            if isinstance(output, torch.Tensor):
                self.outputs.setdefault(name, output.detach())

        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def _key(t: torch.Tensor) -> tuple:
    return (t.data_ptr(), tuple(t.shape))


def _first_tensor(args: tuple, kwargs: dict):
    if args and isinstance(args[0], torch.Tensor):
        return args[0]
    value = kwargs.get("hidden_states", kwargs.get("x"))
    return value if isinstance(value, torch.Tensor) else None


def _common_parent(names: list[str]) -> str:
    parts = [n.split(".") for n in names]
    common = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return ".".join(common)


def _module_out(out):
    return out[0] if isinstance(out, tuple) else out


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-30))


class _BlockAWQ:
    """AWQ of one decoder block on its calibration batches (full-precision inputs)."""

    def __init__(
        self, block, index, prefix, targets, batches, bits, group_size, n_grid, unfoldable
    ):
        self.unfoldable = unfoldable
        self.block, self.index, self.prefix = block, index, prefix
        self.targets = targets  # local names of the linears to quantize
        self.batches = batches  # [(hidden, kwargs)]
        self.bits, self.group_size, self.n_grid = bits, group_size, n_grid
        self.modules = dict(block.named_modules())
        self.tol = 1e-4 if next(block.parameters()).dtype == torch.float32 else 3e-2

    def record(self) -> list[_Recorder]:
        records = []
        for hidden, kwargs in self.batches:
            rec = _Recorder(self.block)
            try:
                with torch.no_grad():
                    rec.y = run_block(self.block, hidden, kwargs).detach()
            finally:
                rec.remove()
            records.append(rec)
        return records

    def groups(self, rec: _Recorder) -> list[list[str]]:
        by_input: dict[tuple, list[str]] = {}
        for name, x in rec.inputs.items():
            by_input.setdefault(_key(x), []).append(name)
        return [names for names in by_input.values() if any(n in self.targets for n in names)]

    def inspect_module(self, names: list[str], rec: _Recorder) -> str:
        """The smallest module holding the whole group that is called with the group's input
        as its first tensor (llm-awq's ``module2inspect``); "" means the linears themselves."""
        parent = _common_parent(names)
        while parent:
            call = rec.calls.get(parent)
            if call is not None:
                x = _first_tensor(*call)
                if x is not None and _key(x) == _key(rec.inputs[names[0]]):
                    return parent
            parent = parent.rpartition(".")[0]
        return ""

    def search(self, names, inspect, records) -> tuple[float, torch.Tensor, list[float]]:
        x_mean = torch.stack(
            [
                activation_scale(r.inputs[names[0]]) * r.inputs[names[0]][..., 0].numel()
                for r in records
            ]
        ).sum(0) / sum(r.inputs[names[0]][..., 0].numel() for r in records)
        quantized = [n for n in names if n in self.targets]
        originals = {n: self.modules[n].weight.detach().clone() for n in quantized}

        def outputs(r):
            args, kwargs = r.calls[inspect]
            return _module_out(self.modules[inspect](*args, **kwargs))

        def loss_of(s):
            for n in quantized:
                w = originals[n]
                w_hat = rtn_weight(w.float() * s, self.bits, self.group_size) / s
                self.modules[n].weight.copy_(w_hat.to(w.dtype))
            if not inspect:  # linear outputs: mean ||x dW^T||^2 = trace(dW G dW^T) / (n out)
                sq = sum(
                    float(
                        (
                            (d := self.modules[n].weight.double() - originals[n].double())
                            @ gram
                            * d
                        ).sum()
                    )
                    for n in quantized
                )
                return sq / (n_tokens * width_out)
            sq, count = 0.0, 0
            for r, ref in zip(records, refs):
                diff = outputs(r).float() - ref.float()
                sq += float(diff.pow(2).sum())
                count += diff.numel()
            return sq / max(count, 1)

        with torch.no_grad():
            if inspect:
                refs = [outputs(r).detach() for r in records]
            else:  # the Gram matrix of the inputs gives the same MSE without the tokens
                xs = [r.inputs[names[0]].reshape(-1, r.inputs[names[0]].shape[-1]) for r in records]
                gram = sum(x.double().T @ x.double() for x in xs)
                n_tokens = sum(x.shape[0] for x in xs)
                width_out = sum(self.modules[n].out_features for n in names)
            losses, best = [], (float("inf"), 0.0, None)
            try:
                for alpha in alpha_grid(self.n_grid):
                    s = scales_for(x_mean, alpha)
                    loss = loss_of(s)
                    losses.append(loss)
                    if loss < best[0]:
                        best = (loss, alpha, s)
            finally:
                for n in quantized:
                    self.modules[n].weight.copy_(originals[n])
        return best[1], best[2], losses

    def fold_candidates(self, names, rec) -> list[str]:
        x = rec.inputs[names[0]]
        width = x.shape[-1]
        norms = [
            n
            for n, out in rec.outputs.items()
            if _key(out) == _key(x)
            and isinstance(getattr(self.modules[n], "weight", None), nn.Parameter)
            and tuple(self.modules[n].weight.shape) == (width,)
        ]
        linears = [
            n
            for n, m in self.modules.items()
            if isinstance(m, nn.Linear) and n not in names and m.out_features == width
        ]
        linears.sort(key=lambda n: not n.endswith(PREFERRED_PREV))
        return norms + linears

    @torch.no_grad()
    def fold(self, prev: str, names: list[str], s: torch.Tensor, check) -> bool:
        """Fold ``1/s`` into ``prev`` and ``s`` into the group's columns; keep it only if the
        block still computes the same function on ``check`` (exact up to float rounding)."""
        hidden, kwargs = check
        before = run_block(self.block, hidden, kwargs)  # explicit scales may have changed it
        saved = {
            n: {k: v.detach().clone() for k, v in self.modules[n].state_dict().items()}
            for n in [prev, *names]
        }
        p = self.modules[prev]
        s_p = s.to(p.weight.device)
        if isinstance(p, nn.Linear):
            p.weight.div_(s_p.view(-1, 1).to(p.weight.dtype))
        else:
            p.weight.div_(s_p.to(p.weight.dtype))
        if getattr(p, "bias", None) is not None:
            p.bias.div_(s_p.to(p.bias.dtype))
        for n in names:
            w = self.modules[n].weight
            w.mul_(s.to(w.device, w.dtype).view(1, -1))
        if _rel_err(run_block(self.block, hidden, kwargs), before) <= self.tol:
            return True
        for n, state in saved.items():
            self.modules[n].load_state_dict(state)
        return False

    def run(self, report: AWQReport, clip: dict | None) -> list[torch.Tensor]:
        """Search, fold and (optionally) clip; returns the block's outputs before AWQ."""
        records = self.record()
        check = self.batches[0]
        scaled: dict[str, torch.Tensor] = {}
        for names in self.groups(records[0]):
            inspect = self.inspect_module(names, records[0])
            alpha, s, losses = self.search(names, inspect, records)
            fold_into = None
            if alpha > 0:
                for prev in self.fold_candidates(names, records[0]):
                    if self.fold(prev, names, s, check):
                        fold_into = prev
                        break
            if fold_into is None and alpha > 0 and self.unfoldable == "explicit":
                fold_into = "explicit"
                with torch.no_grad():
                    for n in names:
                        if n in self.targets:
                            w = self.modules[n].weight
                            w.mul_(s.to(w.device, w.dtype).view(1, -1))
                            scaled[n] = s
                            report.input_scales[f"{self.prefix}.{n}"] = s.clone()
            elif fold_into is None:
                alpha = 0.0  # nothing to fold into exactly: the group keeps scale 1 (llm-awq)
            else:
                for n in names:
                    scaled[n] = s
            where = fold_into if fold_into in (None, "explicit") else f"{self.prefix}.{fold_into}"
            report.groups.append(
                AWQGroup(
                    self.index,
                    [f"{self.prefix}.{n}" for n in names],
                    where,
                    f"{self.prefix}.{inspect}" if inspect else "linears",
                    alpha,
                    losses,
                )
            )
        if clip is not None:
            self.clip(records, scaled, report, clip)
        return [r.y for r in records]

    def clip(self, records, scaled, report, clip) -> None:
        for n in sorted(self.targets):
            if n.rsplit(".", 1)[-1] in NO_CLIP or n not in records[0].inputs:
                continue
            x = torch.cat([r.inputs[n].reshape(-1, r.inputs[n].shape[-1]) for r in records])
            if n in scaled:
                x = x / scaled[n].to(x.device, x.dtype)
            w = self.modules[n].weight
            org = _grouped(w.detach().float(), self.group_size).abs().amax(-1)
            m = awq_clip_search(w, x, self.bits, self.group_size, **clip)
            with torch.no_grad():
                mc = _cols(m, self.group_size, w.shape[1]).to(w.dtype)
                w.copy_(torch.maximum(torch.minimum(w, mc), -mc))
            report.clip_ratio[f"{self.prefix}.{n}"] = float((m / org.clamp(min=1e-30)).mean())


def _check_model_args(model, calib_ids, bits, group_size, n_grid, batch_size, targets):
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    bits = check_bits(bits)
    group_size = V.check_int(group_size, "group_size", low=1)
    n_grid = V.check_int(n_grid, "n_grid", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    ids = check_ids(calib_ids, "calib_ids", model)
    if isinstance(targets, str):
        raise TypeError("targets must be a sequence of module names, not one string")
    names = default_targets(model) if targets is None else list(targets)
    if not names:
        raise ValueError("targets is empty: nothing to quantize")
    modules = dict(model.named_modules())
    for name in names:
        if not isinstance(modules.get(name), nn.Linear):
            raise ValueError(f"targets: {name!r} is not an nn.Linear of the model")
        V.check_tensor(modules[name].weight.detach(), f"targets: {name}.weight", floating=True)
    return bits, group_size, n_grid, batch_size, ids, names


def awq_scale(
    model: nn.Module,
    calib_ids,
    bits: int,
    group_size: int = 128,
    n_grid: int = 20,
    clip: bool = False,
    clip_grid: int = 20,
    max_shrink: float = 0.5,
    clip_tokens: int = 512,
    batch_size: int = 8,
    targets: Sequence[str] | None = None,
    unfoldable: str = "skip",
) -> tuple[nn.Module, AWQReport]:
    """The AWQ transform of ``model`` before quantization: a deep copy whose decoder linears
    carry the searched scales folded in (and, with ``clip=True``, their clipped ranges), and
    the :class:`AWQReport`. Without clipping the copy computes the same function as
    ``model`` (up to float rounding). Block inputs come from the full-precision stream, as in
    llm-awq. ``calib_ids`` is ``(n, seq_len)`` token ids or a :class:`MixedDomainCalibration`.

    A group whose ``1/s`` has no exact home (e.g. ``o_proj`` under grouped-query attention,
    where ``v_proj`` is narrower) keeps scale 1 with ``unfoldable="skip"`` (llm-awq); with
    ``"explicit"`` its weight columns are scaled anyway and ``report.input_scales`` holds the
    ``s`` that the layer must divide its input by (:func:`awq_quantize` sets it on the
    :class:`QuantLinear`); the copy alone then differs from ``model`` in those layers."""
    bits, group_size, n_grid, batch_size, ids, names = _check_model_args(
        model, calib_ids, bits, group_size, n_grid, batch_size, targets
    )
    V.check_bool(clip, "clip")
    unfoldable = V.check_choice(unfoldable, "unfoldable", UNFOLDABLE)
    clip_kw = None
    if clip:
        clip_kw = {
            "n_grid": V.check_int(clip_grid, "clip_grid", low=1),
            "max_shrink": V.check_scalar(
                max_shrink, "max_shrink", low=0.0, high=1.0, high_open=True
            ),
            "n_tokens": V.check_int(clip_tokens, "clip_tokens", low=1),
        }
    scaled = copy.deepcopy(model)
    was_training = scaled.training
    scaled.eval()
    layers = decoder_layers(scaled)
    prefix = next(n for n, m in scaled.named_modules() if m is layers)
    batches = [block_inputs(scaled, batch) for batch in torch.split(ids, batch_size)]
    report = AWQReport()
    for index, block in enumerate(layers):
        here = f"{prefix}.{index}."
        local = {n[len(here) :] for n in names if n.startswith(here)}
        if local:
            job = _BlockAWQ(
                block, index, here[:-1], local, batches, bits, group_size, n_grid, unfoldable
            )
            outputs = job.run(report, clip_kw)
        else:
            with torch.no_grad():
                outputs = [run_block(block, h, kw).detach() for h, kw in batches]
        # the next block sees the full-precision stream (the block's output before AWQ)
        batches = [(y, kw) for y, (_, kw) in zip(outputs, batches)]
    scaled.train(was_training)
    return scaled, report


def awq_quantize(
    model: nn.Module,
    calib_ids,
    bits: int,
    group_size: int = 128,
    n_grid: int = 20,
    clip: bool = True,
    batch_size: int = 8,
    targets: Sequence[str] | None = None,
    unfoldable: str = "skip",
    **clip_options,
) -> nn.Module:
    """AWQ PTQ baseline: a quantized deep copy of ``model`` (the input is unchanged) whose
    :class:`QuantLinear` modules hold the room's min-max group quantization of the scaled (and,
    by default, clipped) weights; it exports and reloads like RTN and GPTQ models. The
    :class:`AWQReport` is kept as ``awq_report_`` on the returned model. ``clip_options``:
    ``clip_grid``, ``max_shrink``, ``clip_tokens`` of :func:`awq_scale`."""
    scaled, report = awq_scale(
        model,
        calib_ids,
        bits,
        group_size,
        n_grid,
        clip,
        batch_size=batch_size,
        targets=targets,
        unfoldable=unfoldable,
        **clip_options,
    )
    names = default_targets(model) if targets is None else list(targets)
    qmodel = quantize_model(scaled, bits, group_size, names)
    layers = dict(qmodel.named_modules())
    for name, s in report.input_scales.items():
        layers[name].set_input_scale(s)
    qmodel.awq_report_ = report
    return qmodel
