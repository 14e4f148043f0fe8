"""Optional feature maps phi applied to keys before projecting (and undone after editing).

The identity is the default; ``tanh`` and ``elu`` are invertible on their range, so the edit is
done in phi-space and mapped back with phi^-1 (clamped into the range first).
``squared_exp`` (exp(-k^2 / 2)) loses the sign of ``k``: its inverse takes the sign of the
original key, ``k' = sign(k) sqrt(-2 log y)``.
"""

from __future__ import annotations

import torch

FEATURES = ("tanh", "elu", "squared_exp")
_EPS = 1e-4


def phi(x: torch.Tensor, name: str | None) -> torch.Tensor:
    if name is None:
        return x
    if name == "tanh":
        return torch.tanh(x)
    if name == "elu":
        return torch.where(x >= 0, x, torch.expm1(x))
    if name == "squared_exp":
        return torch.exp(-0.5 * x * x)
    raise ValueError(f"feature must be one of None, {', '.join(FEATURES)}; got {name!r}")


def phi_inv(y: torch.Tensor, name: str | None, original: torch.Tensor) -> torch.Tensor:
    if name is None:
        return y
    if name == "tanh":
        return torch.atanh(y.clamp(-1 + _EPS, 1 - _EPS))
    if name == "elu":
        return torch.where(y >= 0, y, torch.log1p(y.clamp(min=-1 + _EPS)))
    if name == "squared_exp":
        sign = torch.where(original >= 0, 1.0, -1.0).to(y.dtype)
        return sign * torch.sqrt(-2.0 * torch.log(y.clamp(_EPS, 1.0)))
    raise ValueError(f"feature must be one of None, {', '.join(FEATURES)}; got {name!r}")
