"""Discrete geodesics under a pulled-back metric (spec step 3 and stage 2).

A path gamma = (z_0, ..., z_T) has the discrete energy
E(gamma) = (T / 2) * sum_t ||phi(z_{t+1}) - phi(z_t)||^2,
whose minimisers with fixed ends are discrete geodesics of G = J_phi^T J_phi; no Jacobian is
formed. ``refine_path`` is PCG's stage 2: both ends frozen, Adam on the interior points.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from iclr26 import validation as V


def path_energy(points: torch.Tensor) -> torch.Tensor:
    """E per path for embedded points (B, T + 1, D) (or one path (T + 1, D)): (B,) or ()."""
    V.check_tensor(points, "points", ndim=(2, 3), floating=True)
    if points.shape[-2] < 2:
        raise ValueError(f"points must hold at least 2 points per path, got {points.shape[-2]}")
    steps = points[..., 1:, :] - points[..., :-1, :]
    n_steps = steps.shape[-2]
    return 0.5 * n_steps * (steps * steps).sum((-1, -2))


def step_lengths(points: torch.Tensor) -> torch.Tensor:
    """||phi_{t+1} - phi_t|| per step, (B, T)."""
    V.check_tensor(points, "points", ndim=3, floating=True)
    return (points[:, 1:] - points[:, :-1]).norm(dim=-1)


def straight_path(z_start: torch.Tensor, z_end: torch.Tensor, n_points: int) -> torch.Tensor:
    """Equispaced points from ``z_start`` to ``z_end`` (both (B, d)): (B, n_points + 1, d)."""
    V.check_tensor(z_start, "z_start", ndim=2, floating=True)
    V.check_tensor(z_end, "z_end", shape=tuple(z_start.shape), floating=True)
    n_points = V.check_int(n_points, "n_points", low=1)
    t = torch.linspace(0, 1, n_points + 1, dtype=z_start.dtype, device=z_start.device)
    return z_start[:, None] + t[None, :, None] * (z_end - z_start)[:, None]


def refine_path(
    embed: Callable[[torch.Tensor], torch.Tensor],
    path: torch.Tensor,
    steps: int = 200,
    lr: float = 0.05,
) -> tuple[torch.Tensor, list[float], int]:
    """Minimise E over the interior points of ``path`` (B, T + 1, d), ends fixed.

    ``embed`` maps latents (N, d) to embedded points (N, D) (phi o g in PCG). Returns the
    refined path, the total energy before each step and after the last one, and the number
    of latents passed through ``embed`` (each forward is followed by one backward)."""
    V.check_tensor(path, "path", ndim=3, floating=True)
    steps = V.check_int(steps, "steps", low=0)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch, n_plus_1, dim = path.shape
    if n_plus_1 < 3 or steps == 0:
        with torch.no_grad():
            e = path_energy(embed(path.reshape(-1, dim)).reshape(batch, n_plus_1, -1))
        return path.detach().clone(), [float(e.sum())], batch * n_plus_1
    with torch.no_grad():
        ends = embed(torch.cat([path[:, 0], path[:, -1]])).reshape(2, batch, 1, -1)
    interior = path[:, 1:-1].detach().clone().requires_grad_(True)
    opt = torch.optim.Adam([interior], lr=lr)
    history, n_embedded = [], 2 * batch
    for _ in range(steps + 1):
        inner = embed(interior.reshape(-1, dim)).reshape(batch, n_plus_1 - 2, -1)
        energy = path_energy(torch.cat([ends[0], inner, ends[1]], 1)).sum()
        history.append(float(energy.detach()))
        n_embedded += interior.shape[0] * interior.shape[1]
        if len(history) > steps:
            break
        opt.zero_grad(set_to_none=True)
        energy.backward()
        opt.step()
    out = torch.cat([path[:, :1], interior.detach(), path[:, -1:]], 1)
    return out, history, n_embedded
