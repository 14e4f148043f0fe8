"""The bias-free deep ReLU network of the paper: f(x) = W_L s(W_{L-1} ... s(W_1 x)).

Without biases the network is L-homogeneous in its parameters, f_{c theta} = c^L f_theta,
which is what makes the origin a saddle with well-defined escape directions.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from iclr26 import validation as V

ACTIVATIONS = ("relu", "linear")


def check_widths(widths: Sequence[int]) -> list[int]:
    if isinstance(widths, str) or not isinstance(widths, Sequence):
        raise TypeError(f"widths must be a sequence of positive integers, got {widths!r}")
    widths = list(widths)
    if len(widths) < 3:
        raise ValueError(
            f"widths must list input, at least one hidden and the output size (depth >= 2), "
            f"got {widths}"
        )
    return [V.check_int(w, f"widths[{i}]", low=1) for i, w in enumerate(widths)]


def check_activation(activation: str) -> str:
    return V.check_choice(activation, "activation", ACTIVATIONS)


def check_weights(weights, name: str = "weights") -> list[torch.Tensor]:
    """A list of finite floating-point weight matrices (out, in), or batches (R, out, in),
    whose shapes chain."""
    if isinstance(weights, torch.Tensor) or not isinstance(weights, Sequence) or not weights:
        raise TypeError(f"{name} must be a non-empty list of weight matrices")
    out = [
        V.check_tensor(W, f"{name}[{i}]", ndim=(2, 3), floating=True) for i, W in enumerate(weights)
    ]
    for i in range(1, len(out)):
        if out[i].shape[-1] != out[i - 1].shape[-2]:
            raise ValueError(
                f"{name}[{i}] has {out[i].shape[-1]} inputs, {name}[{i - 1}] "
                f"{out[i - 1].shape[-2]} outputs"
            )
    return out


def forward_weights(
    weights: Sequence[torch.Tensor], X: torch.Tensor, activation: str = "relu"
) -> torch.Tensor:
    """Network output for weight matrices (out, in), or batches of them (R, out, in) for R
    independent networks evaluated at once (output (R, N, d_out))."""
    weights = check_weights(weights)
    check_activation(activation)
    X = V.check_tensor(X, "X", ndim=2, floating=True)
    if X.shape[1] != weights[0].shape[-1]:
        raise ValueError(
            f"X has {X.shape[1]} columns, the first layer {weights[0].shape[-1]} inputs"
        )
    return _forward(weights, X.to(weights[0].dtype), activation)


def _forward(weights, X, activation: str = "relu") -> torch.Tensor:
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
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
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
        return _forward(self.weights, X, self.activation)

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
        weights = check_weights(weights)
        if any(W.ndim != 2 for W in weights):
            raise ValueError("weights must be 2-D matrices (out, in), not batches")
        widths = [int(weights[0].shape[1])] + [int(W.shape[0]) for W in weights]
        model = cls(widths, activation=activation, dtype=weights[0].dtype)
        with torch.no_grad():
            for layer, W in zip(model.layers, weights):
                layer.weight.copy_(W)
        return model
