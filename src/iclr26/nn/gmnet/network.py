"""The GmNet backbone: stem, four stages of downsampler + GmBlocks, BN-pool-linear head.

``gmnet_s3`` is the configuration of the released model (widths 48-384, depths 3/3/8/3,
ReLU6, k = 7); ``GmNetTiny`` is a small 32x32 variant for CPU experiments.
``convert_for_inference`` folds each 1x1 ConvBN into a channels-last Linear, as the release
does before deployment, but keeps the trained weights (BN folded in).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
import torch.fx
from torch import nn

from iclr26 import validation as V
from iclr26.nn.gmnet.block import ConvBN, GmBlock, check_feature_map, make_activation

# The input check stays in traced graphs as a leaf call (see block.check_feature_map).
torch.fx.wrap("check_feature_map")


class GmNet(nn.Module):
    """A GmNet image classifier on (B, in_chans, H, W) inputs."""

    def __init__(
        self,
        num_classes: int = 1000,
        in_chans: int = 3,
        widths: Sequence[int] = (48, 96, 192, 384),
        depths: Sequence[int] = (3, 3, 8, 3),
        mlp_ratio: int = 4,
        kernel_size: int = 7,
        act: str = "relu6",
        gate: str = "self",
        stem_channels: int = 32,
        stem_stride: int = 2,
        downsampler_act: str = "identity",
        f12_bn: bool = False,
        g_bn: bool = True,
        dwconv2_bn: bool = False,
        drop_path_rate: float = 0.0,
        layer_scale: float = 1e-6,
    ) -> None:
        super().__init__()
        widths = _int_sequence("widths", widths, low=1)
        depths = _int_sequence("depths", depths, low=0)
        if len(widths) != len(depths):
            raise ValueError(
                f"widths and depths must have equal length, got {len(widths)} and {len(depths)}"
            )
        num_classes = V.check_int(num_classes, "num_classes", low=1)
        in_chans = V.check_int(in_chans, "in_chans", low=1)
        stem_channels = V.check_int(stem_channels, "stem_channels", low=1)
        V.check_choice(stem_stride, "stem_stride", (1, 2))
        drop_path_rate = V.check_scalar(
            drop_path_rate, "drop_path_rate", low=0.0, high=1.0, high_open=True
        )
        self.num_classes = num_classes
        self.widths, self.depths = tuple(widths), tuple(depths)
        self.stem = nn.Sequential(
            ConvBN(in_chans, stem_channels, 3, stem_stride, 1), make_activation(act)
        )
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        self.stages = nn.ModuleList()
        prev, cursor = stem_channels, 0
        for width, depth in zip(widths, depths):
            blocks = [
                GmBlock(
                    width,
                    mlp_ratio,
                    kernel_size,
                    act,
                    gate,
                    f12_bn,
                    g_bn,
                    dwconv2_bn,
                    rates[cursor + i],
                    layer_scale,
                )
                for i in range(depth)
            ]
            cursor += depth
            down = nn.Sequential(ConvBN(prev, width, 3, 2, 1), make_activation(downsampler_act))
            self.stages.append(nn.Sequential(down, *blocks))
            prev = width
        self.norm = nn.BatchNorm2d(prev)
        self.head = nn.Linear(prev, num_classes)
        self.apply(_init_weights)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The output feature map of every stage."""
        x = check_feature_map(x)
        maps = []
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
            maps.append(x)
        return maps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)[-1]
        return self.head(self.norm(x).mean(dim=(2, 3)))


def _int_sequence(name: str, values, low: int) -> tuple[int, ...]:
    if isinstance(values, int | str) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}")
    if len(values) == 0:
        raise ValueError(f"{name} is empty: it needs one entry per stage")
    return tuple(V.check_int(v, f"{name}[{k}]", low=low) for k, v in enumerate(values))


def _init_weights(module: nn.Module) -> None:
    # The release initialises only Linear layers (trunc-normal 0.02, zero bias); convolutions
    # keep PyTorch's default.
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def gmnet_s3(
    num_classes: int = 1000,
    drop_path_rate: float = 0.0,
    act: str = "relu6",
    gate: str = "self",
    checkpoint: str | None = None,
    **kwargs,
) -> GmNet:
    """GmNet-S3 as released: 7.8 M parameters at 1000 classes, 224x224 inputs."""
    model = GmNet(
        num_classes=num_classes,
        widths=(48, 96, 192, 384),
        depths=(3, 3, 8, 3),
        mlp_ratio=4,
        kernel_size=7,
        act=act,
        gate=gate,
        downsampler_act="identity",
        g_bn=True,
        drop_path_rate=drop_path_rate,
        **kwargs,
    )
    if checkpoint is not None:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        state = state.get("model", state.get("state_dict", state))
        model.load_state_dict(_rename_release_keys(state))
    return model


def _rename_release_keys(state: dict) -> dict:
    # The release's stage layout is Sequential(downsampler, *blocks) like ours; only the head
    # pooling differs (no parameters), so keys match one to one.
    return {k.removeprefix("module."): v for k, v in state.items()}


class GmNetTiny(GmNet):
    """GmNet for 32x32 inputs: stem stride 1, widths 16-128, depths 1/1/2/1, k = 5."""

    def __init__(
        self,
        num_classes: int = 10,
        in_chans: int = 3,
        act: str = "relu6",
        gate: str = "self",
        **kwargs,
    ) -> None:
        opts = dict(
            widths=(16, 32, 64, 128),
            depths=(1, 1, 2, 1),
            kernel_size=5,
            stem_channels=16,
            stem_stride=1,
        )
        opts.update(kwargs)
        super().__init__(num_classes=num_classes, in_chans=in_chans, act=act, gate=gate, **opts)


def _register_with_timm() -> None:
    """Make ``timm.create_model("gmnet_s3")`` work when timm is installed (never required)."""
    try:
        from timm.models import register_model
    except ImportError:
        return

    def factory(pretrained: bool = False, **kwargs) -> GmNet:
        if pretrained:
            raise ValueError("no pretrained weights are bundled; pass checkpoint=PATH")
        return gmnet_s3(**kwargs)

    factory.__name__ = "gmnet_s3"
    factory.__module__ = __name__
    try:
        register_model(factory)
    except (RuntimeError, ValueError):  # already registered on a module reload
        pass


_register_with_timm()


class ChannelLinear(nn.Module):
    """A 1x1 convolution written as a Linear over channels-last features."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.layer = nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            self.layer.weight.copy_(weight)
            self.layer.bias.copy_(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def _fold(conv_bn: ConvBN) -> ChannelLinear:
    conv = conv_bn.conv
    weight = conv.weight.detach().flatten(1)
    bias = conv.bias.detach() if conv.bias is not None else torch.zeros(conv.out_channels)
    if hasattr(conv_bn, "bn"):
        bn = conv_bn.bn
        scale = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
        weight = weight * scale[:, None]
        bias = (bias - bn.running_mean) * scale + bn.bias.detach()
    return ChannelLinear(weight, bias)


def convert_for_inference(model: nn.Module) -> nn.Module:
    """A copy of ``model`` (eval mode) with every 1x1 ConvBN folded into a channels-last Linear."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    converted = copy.deepcopy(model).eval()

    def replace(parent: nn.Module) -> None:
        for name, child in parent.named_children():
            if isinstance(child, ConvBN) and child.kernel_size == 1 and child.conv.groups == 1:
                setattr(parent, name, _fold(child))
            else:
                replace(child)

    replace(converted)
    return converted
