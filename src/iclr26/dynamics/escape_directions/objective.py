"""The escape problem at the origin saddle (Section 2-3 of the paper).

Near theta = 0 the cost C(f_theta(X)) is dominated by its first-order term
L_0(theta) = Tr[G^T Y_theta] with G = dC/dY at Y = 0. L_0 is L-homogeneous, so gradient
flow splits into a fast motion of the direction on the sphere and a slow growth of the norm;
escape directions are KKT points of L_0 on ||theta||^2 = L, and the optimal one minimises L_0
there, with escape speed s = -L_0. We maximise the scale-free speed
s(theta) = -L_0(theta) (L / ||theta||^2)^{L/2} with Adam from random restarts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from iclr26 import validation as V

from .model import BiasFreeReLUMLP, _forward, check_activation, check_weights, check_widths


def _as_tensor(a, name: str, dtype=None) -> torch.Tensor:
    """A finite, non-empty 2-D floating tensor (numpy arrays and lists are converted)."""
    if isinstance(a, torch.Tensor):
        t = a
    else:
        t = torch.as_tensor(V.check_array(a, name, ndim=2))
    if not torch.is_floating_point(t):
        t = t.to(torch.get_default_dtype())
    V.check_tensor(t, name, ndim=2, floating=True)
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)})")
    return t.to(dtype) if dtype is not None else t


def _check_data(X, G) -> tuple[torch.Tensor, torch.Tensor]:
    X, G = _as_tensor(X, "X"), _as_tensor(G, "G")
    if X.shape[0] != G.shape[0]:
        raise ValueError(f"G must have one row per row of X ({X.shape[0]}), got {G.shape[0]}")
    return X, G.to(X.dtype)


def _check_model(model) -> BiasFreeReLUMLP:
    if not isinstance(model, BiasFreeReLUMLP):
        raise TypeError(f"model must be a BiasFreeReLUMLP, got {type(model).__name__}")
    return model


def mse_gradient_at_zero(Y) -> torch.Tensor:
    """G = dC/dY at Y = 0 for C(Y) = ||Y - Y*||^2 / (2N): G = -Y*/N."""
    Y = _as_tensor(Y, "Y")
    return -Y / Y.shape[0]


def local_loss(model: BiasFreeReLUMLP, X, G) -> torch.Tensor:
    """L_0(theta) = sum_n <G_n, f_theta(x_n)>."""
    _check_model(model)
    X, G = _check_data(X, G)
    if X.shape[1] != model.widths[0] or G.shape[1] != model.widths[-1]:
        raise ValueError(
            f"X has {X.shape[1]} and G {G.shape[1]} columns; the model's widths {model.widths}"
        )
    return (G.to(model.weights[0].dtype) * model(X.to(model.weights[0].dtype))).sum()


def escape_speed(model: BiasFreeReLUMLP, X, G) -> torch.Tensor:
    """Scale-free escape speed s(theta) = -L_0(theta) (L/||theta||^2)^{L/2}."""
    L = _check_model(model).depth
    return -local_loss(model, X, G) * (L / model.squared_norm()) ** (L / 2)


def balance(weights: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Rescale every layer to unit Frobenius norm (||theta||^2 = L). For a positively
    homogeneous network this only multiplies the output by a positive constant, and among all
    rescalings with the same function it minimises ||theta||, so the speed cannot decrease."""
    weights = check_weights(weights)
    norms = [W.norm() for W in weights]
    if any(float(n) == 0.0 for n in norms):
        raise ValueError("weights must all be non-zero to be balanced (a zero layer has no scale)")
    return [W / n for W, n in zip(weights, norms)]


@dataclass
class EscapeDirection:
    """The best escape direction found: its speed, the network (balanced, ||theta||^2 = L),
    the final speed of every restart and the speed curve of the best restart."""

    speed: float
    model: BiasFreeReLUMLP
    restart_speeds: list[float] = field(default_factory=list)
    history: list[float] = field(default_factory=list)


def find_escape_direction(
    widths: Sequence[int],
    X,
    G,
    *,
    restarts: int = 5,
    steps: int = 1500,
    lr: float = 0.01,
    rank_one: bool = False,
    activation: str = "relu",
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> EscapeDirection:
    """Maximise s(theta) with Adam from ``restarts`` random starts theta ~ N(0, 1/fan_in),
    all restarts optimised together as one batch. After each step theta is projected back to
    ||theta||^2 = L (s is scale-free, so this only keeps Adam's step size meaningful).
    ``rank_one=True`` parametrises every layer as a_l b_l^T (the best rank-one speed)."""
    widths = check_widths(widths)
    check_activation(activation)
    restarts = V.check_int(restarts, "restarts", low=1)
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    rank_one = V.check_bool(rank_one, "rank_one")
    seed = V.check_int(seed, "seed")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    X, G = _check_data(X, G)
    if X.shape[1] != widths[0] or G.shape[1] != widths[-1]:
        raise ValueError(f"X has {X.shape[1]} and G {G.shape[1]} columns; widths {widths}")
    X, G = X.to(dtype), G.to(dtype)
    L = len(widths) - 1
    gen = torch.Generator().manual_seed(int(seed))
    shapes = list(zip(widths[1:], widths[:-1]))
    if rank_one:
        params = []
        for out, inp in shapes:
            params.append(torch.randn(restarts, out, generator=gen, dtype=dtype))
            params.append(torch.randn(restarts, inp, generator=gen, dtype=dtype) / math.sqrt(inp))
    else:
        params = [
            torch.randn(restarts, o, i, generator=gen, dtype=dtype) / math.sqrt(i)
            for o, i in shapes
        ]
    params = [p.requires_grad_() for p in params]

    def weights_of(ps):
        if rank_one:
            return [ps[2 * k][:, :, None] * ps[2 * k + 1][:, None, :] for k in range(L)]
        return list(ps)

    def speeds(ps):
        ws = weights_of(ps)
        sq = sum((W**2).sum(dim=(1, 2)) for W in ws)
        out = _forward(ws, X, activation)  # (R, N, d_out)
        l0 = (out * G).sum(dim=(1, 2))
        return -l0 * (L / sq) ** (L / 2)

    def project(ps):
        with torch.no_grad():
            sq = sum((W**2).sum(dim=(1, 2)) for W in weights_of(ps))
            factor = (L / sq) ** (1 / (2 * (2 if rank_one else 1)))
            for p in ps:
                p.mul_(factor.view(-1, *([1] * (p.ndim - 1))))

    project(params)
    opt = torch.optim.Adam(params, lr=lr)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        s = speeds(params)
        (-s.sum()).backward()
        opt.step()
        project(params)
        history.append(s.detach())
    with torch.no_grad():
        final = speeds(params)
        best = int(torch.argmax(final))
        ws = balance([W[best] for W in weights_of(params)])
    model = BiasFreeReLUMLP.from_weights(ws, activation=activation)
    with torch.no_grad():
        speed = float(escape_speed(model, X, G))
    return EscapeDirection(
        speed=speed,
        model=model,
        restart_speeds=final.tolist(),
        history=[float(h[best]) for h in history],
    )


def circle_counterexample(n_points: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Example 1 of the paper: points on the unit circle at angles 2 pi k / n with
    alternating cost gradient G_k = (-1)^k (scalar output, no 1/N). For n = 8 and depth 3,
    the best rank-one escape speed is sqrt(2) - 1 while a rank-two first layer reaches 1/2."""
    n_points = V.check_int(n_points, "n_points", low=2)
    if n_points % 2:
        raise ValueError(f"n_points must be even, got {n_points}")
    angles = 2 * math.pi * torch.arange(n_points, dtype=torch.float64) / n_points
    X = torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
    G = ((-1.0) ** torch.arange(n_points, dtype=torch.float64))[:, None]
    return X, G
