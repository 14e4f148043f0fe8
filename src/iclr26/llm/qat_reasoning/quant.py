"""Weight-only fake quantization: ``QuantLinear`` and the module swap.

Asymmetric uniform quantization per (output row, group of ``group_size`` consecutive input
columns), as in EfficientQAT/OmniQuant: ``Q = clamp(round(W / s) + round(z), 0, 2^b - 1)`` and
``W_hat = (Q - round(z)) * s``. Scale ``s`` and zero point ``z`` are learnable and real-valued;
rounding passes gradients straight through (STE), so the latent weight ``W``, ``s`` and ``z`` all
train. Initialisation is min-max round-to-nearest (RTN): ``s = (max - min) / (2^b - 1)``,
``z = round(-min / s)``. When ``in_features`` is not a multiple of ``group_size`` the last group
is shorter (it is padded with copies of its last column for the min/max, never changing them).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V

VALID_BITS = (2, 3, 4, 8)
SCALE_MIN = 1e-8  # s is clamped from below (straight through) so W / s never blows up


def check_bits(bits) -> int:
    """``bits`` as an int from {2, 3, 4, 8}; anything else is refused naming ``bits``."""
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise TypeError(f"bits must be an integer from {VALID_BITS}, got {bits!r}")
    V.check_choice(bits, "bits", VALID_BITS)
    return int(bits)


def round_ste(x: torch.Tensor) -> torch.Tensor:
    """round(x) forward, identity backward."""
    return (x.round() - x).detach() + x


def clamp_ste(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """clamp forward, identity backward (as EfficientQAT clamps s and z)."""
    return (x.clamp(low, high) - x).detach() + x


def _grouped(weight: torch.Tensor, group_size: int) -> torch.Tensor:
    """(out, in) -> (out, n_groups, group_size); a short last group is padded by repeating its
    last column, which leaves every group's min and max unchanged."""
    out_f, in_f = weight.shape
    pad = (-in_f) % group_size
    if pad:
        weight = torch.cat([weight, weight[:, -1:].expand(out_f, pad)], dim=1)
    return weight.reshape(out_f, -1, group_size)


def minmax_params(weight: torch.Tensor, bits: int, group_size: int):
    """RTN (min-max) scale and zero point per (row, group), in fp32."""
    groups = _grouped(weight.detach().float(), group_size)
    low, high = groups.amin(-1), groups.amax(-1)
    scale = ((high - low) / (2**bits - 1)).clamp(min=SCALE_MIN)
    zero = (-low / scale).round().clamp(0, 2**bits - 1)
    return scale, zero


def fake_quant(
    weight: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int, group_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dequantized weight, integer codes) of ``weight`` under per-group ``scale``/``zero``;
    computed in fp32 with straight-through rounding."""
    out_f, in_f = weight.shape
    qmax = 2**bits - 1
    groups = _grouped(weight.float(), group_size)
    s = clamp_ste(scale.float(), SCALE_MIN, float("inf")).unsqueeze(-1)
    z = clamp_ste(round_ste(zero.float()), 0, qmax).unsqueeze(-1)
    codes = (round_ste(groups / s) + z).clamp(0, qmax)
    dequant = ((codes - z) * s).reshape(out_f, -1)[:, :in_f]
    return dequant, codes.reshape(out_f, -1)[:, :in_f]


class QuantLinear(nn.Module):
    """A drop-in ``nn.Linear`` whose weight is fake-quantized to ``bits`` per group.

    Parameters: ``weight`` (out, in) latent full-precision weight, ``bias``, ``scale`` and
    ``zero_point`` (out, n_groups). ``train_weight``/``train_scale``/``train_zero`` set which of
    them require gradients. The forward pass runs the quantizer in fp32 and casts the
    dequantized weight to the input's dtype, so the module works in bf16/fp16 models.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bits: int = 4,
        group_size: int = 128,
        bias: bool = True,
        train_weight: bool = True,
        train_scale: bool = True,
        train_zero: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.in_features = V.check_int(in_features, "in_features", low=1)
        self.out_features = V.check_int(out_features, "out_features", low=1)
        self.bits = check_bits(bits)
        self.group_size = V.check_int(group_size, "group_size", low=1)
        V.check_bool(bias, "bias")
        self.n_groups = -(-self.in_features // self.group_size)
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self.out_features, self.in_features, **kw))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        self.bias = nn.Parameter(torch.zeros(self.out_features, **kw)) if bias else None
        self.scale = nn.Parameter(torch.ones(self.out_features, self.n_groups, **kw))
        self.zero_point = nn.Parameter(torch.zeros(self.out_features, self.n_groups, **kw))
        self.register_buffer("input_scale", None)  # optional explicit AWQ scale, see below
        self.set_trainable(train_weight, train_scale, train_zero)
        self.init_minmax()

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, bits: int = 4, group_size: int = 128, **flags
    ) -> QuantLinear:
        """A QuantLinear holding a copy of ``linear``'s weight and bias, RTN-initialised."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        w = linear.weight
        q = cls(
            linear.in_features,
            linear.out_features,
            bits,
            group_size,
            bias=linear.bias is not None,
            device=w.device,
            dtype=w.dtype,
            **flags,
        )
        with torch.no_grad():
            q.weight.copy_(w)
            if linear.bias is not None:
                q.bias.copy_(linear.bias)
        q.init_minmax()
        return q

    def set_trainable(self, weight: bool = True, scale: bool = True, zero: bool = True) -> None:
        """Which parameters train (the bias follows the weight)."""
        for name, flag in (("train_weight", weight), ("train_scale", scale), ("train_zero", zero)):
            V.check_bool(flag, name)
        self.weight.requires_grad_(weight)
        if self.bias is not None:
            self.bias.requires_grad_(weight)
        self.scale.requires_grad_(scale)
        self.zero_point.requires_grad_(zero)

    @torch.no_grad()
    def init_minmax(self) -> None:
        """Reset ``scale``/``zero_point`` to min-max RTN of the current weight."""
        scale, zero = minmax_params(self.weight, self.bits, self.group_size)
        self.scale.copy_(scale)
        self.zero_point.copy_(zero)

    @torch.no_grad()
    def set_input_scale(self, scale: torch.Tensor | None) -> None:
        """Keep an explicit per-input-channel scale ``s`` (``(in_features,)``, positive): the
        layer then computes ``(x / s) W_hat^T``, where ``W_hat`` quantizes the column-scaled
        weight it holds. AWQ uses it where ``1/s`` cannot be folded into a preceding op;
        ``None`` removes it."""
        if scale is None:
            self.input_scale = None
            return
        V.check_tensor(scale, "scale", shape=(self.in_features,), floating=True, low=0)
        if bool((scale <= 0).any()):
            raise ValueError("scale must be > 0 in every channel")
        self.input_scale = scale.detach().to(self.weight.device, self.weight.dtype).clone()

    def quant_parameters(self) -> list[nn.Parameter]:
        return [self.scale, self.zero_point]

    def dequantized_weight(self) -> torch.Tensor:
        """The fake-quantized weight W_hat (fp32, differentiable w.r.t. W, s and z)."""
        return fake_quant(self.weight, self.scale, self.zero_point, self.bits, self.group_size)[0]

    @torch.no_grad()
    def codes(self) -> torch.Tensor:
        """Integer codes Q in [0, 2^bits - 1], (out, in) uint8."""
        q = fake_quant(self.weight, self.scale, self.zero_point, self.bits, self.group_size)[1]
        return q.round().to(torch.uint8)

    @torch.no_grad()
    def export(self) -> dict[str, torch.Tensor | int]:
        """Integer codes, per-group scales (fp32) and integer zero points (uint8), plus the
        layout; :meth:`load_export` inverts it exactly."""
        zero = self.zero_point.float().round().clamp(0, 2**self.bits - 1)
        out = {
            "codes": self.codes(),
            "scale": self.scale.detach().float().clamp(min=SCALE_MIN).clone(),
            "zero": zero.to(torch.uint8),
            "bits": self.bits,
            "group_size": self.group_size,
            "in_features": self.in_features,
        }
        if self.bias is not None:
            out["bias"] = self.bias.detach().clone()
        if self.input_scale is not None:
            out["input_scale"] = self.input_scale.detach().clone()
        return out

    @torch.no_grad()
    def load_export(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> None:
        """Set the module so that its fake quantization yields exactly ``codes``: the latent
        weight becomes the dequantized ``(codes - zero) * scale``."""
        shape = (self.out_features, self.in_features)
        gshape = (self.out_features, self.n_groups)
        V.check_tensor(codes, "codes", shape=shape, low=0, high=2**self.bits - 1)
        V.check_tensor(scale, "scale", shape=gshape, floating=True, low=0)
        V.check_tensor(zero, "zero", shape=gshape, low=0, high=2**self.bits - 1)
        s = scale.float().clamp(min=SCALE_MIN)
        z = zero.float()
        cols = torch.arange(self.in_features, device=codes.device) // self.group_size
        w = (codes.float() - z[:, cols]) * s[:, cols]
        self.weight.copy_(w.to(self.weight.dtype))
        self.scale.copy_(s.to(self.scale.dtype))
        self.zero_point.copy_(z.to(self.zero_point.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.input_scale is not None:
            x = x / self.input_scale.to(x.dtype)
        w = self.dequantized_weight().to(x.dtype)
        bias = None if self.bias is None else self.bias.to(x.dtype)
        return F.linear(x, w, bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bits={self.bits}, group_size={self.group_size}, bias={self.bias is not None}"
            + (", input_scale" if self.input_scale is not None else "")
        )


# ------------------------------------------------------------------ the module swap


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The list of transformer blocks of a Hugging Face causal LM (``model.model.layers`` for
    Llama/Qwen/Mistral/Gemma, ``model.transformer.h``, ``model.gpt_neox.layers``)."""
    for path in ("model.layers", "model.decoder.layers", "transformer.h", "gpt_neox.layers"):
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList) and len(obj) > 0:
            return obj
    raise TypeError(
        f"model must be a Hugging Face causal LM with its blocks at model.model.layers "
        f"(or transformer.h / gpt_neox.layers); {type(model).__name__} has none"
    )


def _layer_prefix(model: nn.Module) -> str:
    layers = decoder_layers(model)
    for name, module in model.named_modules():
        if module is layers:
            return name
    raise TypeError("model: its decoder layers are not registered submodules")


def default_targets(model: nn.Module) -> list[str]:
    """Names of every ``nn.Linear`` inside the decoder blocks (embeddings and ``lm_head`` stay
    full precision, the usual convention)."""
    prefix = _layer_prefix(model)
    return [
        name
        for name, module in model.named_modules()
        if name.startswith(prefix + ".") and isinstance(module, nn.Linear)
    ]


def _set_module(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)


def quantize_model(
    model: nn.Module,
    bits: int = 4,
    group_size: int = 128,
    targets: Sequence[str] | None = None,
    train_weight: bool = True,
    train_scale: bool = True,
    train_zero: bool = True,
) -> nn.Module:
    """Swap the ``targets`` (default: every ``nn.Linear`` in the decoder blocks) of ``model``
    for RTN-initialised :class:`QuantLinear` modules, in place; returns ``model``.

    Every argument is checked and every replacement built before the first swap, so a failure
    leaves the model untouched."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    bits = check_bits(bits)
    group_size = V.check_int(group_size, "group_size", low=1)
    if isinstance(targets, str):
        raise TypeError("targets must be a sequence of module names, not one string")
    names = default_targets(model) if targets is None else list(targets)
    if not names:
        raise ValueError("targets is empty: nothing to quantize")
    modules = dict(model.named_modules())
    replacements = {}
    for name in names:
        module = modules.get(name)
        if module is None:
            raise ValueError(f"targets: model has no module named {name!r}")
        if isinstance(module, QuantLinear):
            raise ValueError(f"targets: {name!r} is already quantized")
        if not isinstance(module, nn.Linear):
            raise TypeError(f"targets: {name!r} is a {type(module).__name__}, not nn.Linear")
        V.check_tensor(module.weight.detach(), f"targets: {name}.weight", floating=True)
        replacements[name] = QuantLinear.from_linear(
            module,
            bits,
            group_size,
            train_weight=train_weight,
            train_scale=train_scale,
            train_zero=train_zero,
        )
    for name, new in replacements.items():
        _set_module(model, name, new)
    return model


def rtn_quantize(
    model: nn.Module, bits: int, group_size: int = 128, targets: Sequence[str] | None = None
) -> nn.Module:
    """Round-to-nearest PTQ baseline: a quantized deep copy of ``model`` with min-max scales and
    no data (the input model is not changed)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_bits(bits)
    V.check_int(group_size, "group_size", low=1)
    return quantize_model(copy.deepcopy(model), bits, group_size, targets)


def quant_layers(model: nn.Module) -> dict[str, QuantLinear]:
    """The model's QuantLinear modules by name."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return {n: m for n, m in model.named_modules() if isinstance(m, QuantLinear)}


def dequantize_model(model: nn.Module) -> nn.Module:
    """Replace every QuantLinear by a plain ``nn.Linear`` holding its dequantized weight, in
    place, so ``save_pretrained`` writes an ordinary checkpoint of the quantized model."""
    layers = quant_layers(model)
    if not layers:
        raise ValueError("model has no QuantLinear modules to dequantize")
    new = {}
    for name, q in layers.items():
        w = q.weight
        lin = nn.Linear(
            q.in_features, q.out_features, bias=q.bias is not None, device=w.device, dtype=w.dtype
        )
        with torch.no_grad():
            w_hat = q.dequantized_weight()
            if q.input_scale is not None:  # (x / s) W_hat^T = x (W_hat / s)^T
                w_hat = w_hat / q.input_scale.float()
            lin.weight.copy_(w_hat.to(w.dtype))
            if q.bias is not None:
                lin.bias.copy_(q.bias)
        new[name] = lin
    for name, lin in new.items():
        _set_module(model, name, lin)
    return model
