"""``TinyConvNet``: four 3x3 conv blocks (conv, BatchNorm, ReLU) with output stride 1-8.

``forward(x)`` returns the globally average-pooled feature (B, out_dim) (or logits when
``num_classes > 0``); ``forward_features(x)`` the dense map (B, out_dim, H / stride,
W / stride). With ``stride=8`` the last three blocks halve the resolution; with ``stride=1``
none does.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V


class TinyConvNet(nn.Module):
    def __init__(
        self,
        width: int = 32,
        out_dim: int = 64,
        stride: int = 1,
        in_chans: int = 3,
        num_classes: int = 0,
    ):
        super().__init__()
        width = V.check_int(width, "width", low=1)
        out_dim = V.check_int(out_dim, "out_dim", low=1)
        stride = V.check_choice(stride, "stride", (1, 2, 4, 8))
        in_chans = V.check_int(in_chans, "in_chans", low=1)
        num_classes = V.check_int(num_classes, "num_classes", low=0)
        n_down = {1: 0, 2: 1, 4: 2, 8: 3}[stride]
        channels = [in_chans, width, width, 2 * width, out_dim]
        strides = [1] + [2 if i >= 3 - n_down else 1 for i in range(3)]
        layers = []
        for i in range(4):
            layers += [
                nn.Conv2d(
                    channels[i], channels[i + 1], 3, stride=strides[i], padding=1, bias=False
                ),
                nn.BatchNorm2d(channels[i + 1]),
                nn.ReLU(inplace=True),
            ]
        self.features = nn.Sequential(*layers)
        self.stride = stride
        self.embed_dim = self.num_features = self.out_dim = out_dim
        self.num_classes = num_classes
        self.head = nn.Linear(out_dim, num_classes) if num_classes else nn.Identity()
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def reset_classifier(self, num_classes: int) -> None:
        num_classes = V.check_int(num_classes, "num_classes", low=0)
        self.num_classes = num_classes
        self.head = nn.Linear(self.out_dim, num_classes) if num_classes else nn.Identity()

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(x).mean((2, 3)))
