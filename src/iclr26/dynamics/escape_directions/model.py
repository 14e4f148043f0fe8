"""The bias-free deep ReLU network of the paper: f(x) = W_L s(W_{L-1} ... s(W_1 x)).

Without biases the network is L-homogeneous in its parameters, f_{c theta} = c^L f_theta,
which is what makes the origin a saddle with well-defined escape directions.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

ACTIVATIONS = ("relu", "linear")


def check_widths(widths: Sequence[int]) -> list[int]:
    widths = list(widths)
    if len(widths) < 3:
        raise ValueError(
            f"widths must list input, at least one hidden and the output size (depth >= 2), "
            f"got {widths}"
        )
    if any(not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in widths):
        raise ValueError(f"widths must be positive integers, got {widths}")
    return widths


def check_activation(activation: str) -> str:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


def forward_weights(
    weights: Sequence[torch.Tensor], X: torch.Tensor, activation: str = "relu"
) -> torch.Tensor:
    """Network output for weight matrices (out, in), or batches of them (R, out, in) for R
    independent networks evaluated at once (output (R, N, d_out))."""
    h = X
    for i, W in enumerate(weights):
        h = h @ W.transpose(-1, -2)
        if i < len(weights) - 1 and activation == "relu":
            h = torch.relu(h)
    return h


class BiasFreeReLUMLP(nn.Module):
    """Fully connected network without biases; ``widths = [d_in, h_1, ..., h_{L-1}, d_out]``.

    ``activation="linear"`` gives the deep linear network (for sanity checks).
    """

    def __init__(
        self,
        widths: Sequence[int],
        activation: str = "relu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.widths = check_widths(widths)
        self.activation = check_activation(activation)
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=False, dtype=dtype) for a, b in zip(self.widths, self.widths[1:])
        )

    @property
    def depth(self) -> int:
        return len(self.layers)

    @property
    def weights(self) -> list[torch.Tensor]:
        return [layer.weight for layer in self.layers]

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return forward_weights(self.weights, X, self.activation)

    def hidden_representations(self, X: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(pre-activation Z_l, post-activation Z_l^sigma) of every hidden layer."""
        out, h = [], X
        for layer in self.layers[:-1]:
            pre = layer(h)
            h = torch.relu(pre) if self.activation == "relu" else pre
            out.append((pre, h))
        return out

    def squared_norm(self) -> torch.Tensor:
        return sum((W**2).sum() for W in self.weights)

    @classmethod
    def from_weights(cls, weights: Sequence[torch.Tensor], activation: str = "relu"):
        widths = [int(weights[0].shape[1])] + [int(W.shape[0]) for W in weights]
        model = cls(widths, activation=activation, dtype=weights[0].dtype)
        with torch.no_grad():
            for layer, W in zip(model.layers, weights):
                layer.weight.copy_(W)
        return model
