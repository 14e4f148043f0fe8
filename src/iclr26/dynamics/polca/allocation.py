"""POLCA: per-example loss change allocated to the basis directions (Eqs. 2-8 of the paper).

Between checkpoints theta_t and theta_{t+1} (Delta_t = theta_{t+1} - theta_t), example x and a
unit basis vector b:
  first order   P1(x, b, t) = <b, grad L(x; theta_t)> <b, Delta_t>
  second order  h(x, b, t)  = 1/2 (b^T H_t(x) b) <b, Delta_t>^2                 ("exact")
            or  h~(x, b, t) = 1/2 (b^T H_t(X) b) <b, Delta_t>^2 P1(x)/sum_x' P1(x')   ("proportional")
with H_t(X) the Hessian of the summed loss. <b, grad L(x)> for *all* examples is one forward-mode
JVP of the vector of per-example losses along b, and b^T H(x) b a JVP of that JVP; both are
vmapped over the basis, so no per-example gradient is ever materialised.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.func import jvp, vmap

from iclr26 import validation as V

from .checkpoints import ParamSpace

ORTHONORMAL_TOL = 1e-3  # |B B^T - I| allowed (float32 Lanczos vectors)


def check_basis(basis, dim: int, name: str = "basis") -> torch.Tensor:
    """Finite rows of length ``dim`` that are orthonormal: the allocation to b is only a share
    of the loss change when the b are unit vectors and mutually orthogonal."""
    basis = V.check_tensor(basis, name, ndim=2, floating=True)
    if basis.shape[1] != dim:
        raise ValueError(f"{name} vectors have {basis.shape[1]} entries, the model {dim}")
    gram = (basis.double() @ basis.double().T).cpu()
    eye = torch.eye(gram.shape[0], dtype=gram.dtype)
    norms_off = (gram.diagonal() - 1.0).abs().max().item()
    if norms_off > ORTHONORMAL_TOL:
        raise ValueError(
            f"{name} rows must be unit vectors (norms off by up to {norms_off:.3g}); normalise them"
        )
    off = (gram - eye).abs().max().item()
    if off > ORTHONORMAL_TOL:
        raise ValueError(f"{name} rows must be orthogonal (|B B^T - I| up to {off:.3g})")
    return basis


SECOND_ORDER = ("exact", "proportional", None)


def directional_derivatives(
    per_example_loss: Callable,
    params: dict,
    X,
    tangents: dict,
    second: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Per-example losses, first and (optionally) second directional derivatives along a batch
    of tangents (leading axis = basis vectors): (n,), (k, n), (k, n)."""
    if not callable(per_example_loss):
        raise TypeError("per_example_loss must be callable f(params, X)")
    if not isinstance(params, dict) or not isinstance(tangents, dict):
        raise TypeError("params and tangents must be dicts of tensors (name -> tensor)")
    if set(params) != set(tangents):
        raise ValueError("tangents must have the same keys as params")
    for key, value in params.items():
        V.check_tensor(value, f"params[{key!r}]")
        V.check_tensor(tangents[key], f"tangents[{key!r}]", min_ndim=1)
    second = V.check_bool(second, "second")

    def first(p, t):
        return jvp(lambda q: per_example_loss(q, X), (p,), (t,))

    def both(t):
        if not second:
            loss, d1 = first(params, t)
            return loss, d1, torch.zeros_like(d1)
        (loss, d1), (_, d2) = jvp(lambda q: first(q, t), (params,), (t,))
        return loss, d1, d2

    loss, d1, d2 = vmap(both)(tangents)
    return loss[0], d1, (d2 if second else None)


def polca(
    model: torch.nn.Module,
    per_example_loss: Callable,
    X,
    checkpoints: Sequence[torch.Tensor],
    basis: torch.Tensor,
    second_order: str | None = "exact",
    chunk: int = 16,
) -> dict:
    """Allocations (n_basis, T-1, n_examples), per-example exact losses (T, n_examples) and the
    decomposition throughput (examples per second per checkpoint)."""
    V.check_choice(second_order, "second_order", SECOND_ORDER)
    if not callable(per_example_loss):
        raise TypeError("per_example_loss must be callable f(params, X)")
    chunk = V.check_int(chunk, "chunk", low=1)
    space = ParamSpace(model)
    checkpoints = space.check_points(checkpoints, min_count=2)
    basis = check_basis(basis, space.dim)
    T = len(checkpoints)
    alloc, losses, seconds = [], [], 0.0
    need_second = second_order is not None
    for t in range(T):
        start = time.perf_counter()
        params = space.unflatten(checkpoints[t])
        d1s, d2s, loss = [], [], None
        for c in range(0, basis.shape[0], chunk):
            tangents = space.unflatten(basis[c : c + chunk])
            loss, d1, d2 = directional_derivatives(
                per_example_loss, params, X, tangents, need_second and t < T - 1
            )
            d1s.append(d1)
            if d2 is not None:
                d2s.append(d2)
        losses.append(loss.detach())
        if t < T - 1:
            delta = checkpoints[t + 1] - checkpoints[t]
            step = basis @ delta  # <b, Delta_t>
            d1 = torch.cat(d1s)
            first = d1 * step[:, None]
            if second_order == "exact":
                second = 0.5 * torch.cat(d2s) * (step**2)[:, None]
            elif second_order == "proportional":
                d2 = torch.cat(d2s)
                curvature = d2.sum(dim=1, keepdim=True)  # b^T H(X) b of the summed loss
                share = first / first.sum(dim=1, keepdim=True).where(
                    first.sum(dim=1, keepdim=True) != 0, torch.ones(())
                )
                second = 0.5 * curvature * (step**2)[:, None] * share
            else:
                second = torch.zeros_like(first)
            alloc.append((first + second).detach())
        seconds += time.perf_counter() - start
    n_examples = int(losses[0].numel())
    return {
        "allocations": torch.stack(alloc, dim=1).numpy(),
        "losses": torch.stack(losses).numpy(),
        "examples_per_second": n_examples * T / max(seconds, 1e-12),
        "seconds": seconds,
    }


def projected_loss(allocations: np.ndarray) -> np.ndarray:
    """Cumulative allocations (Eq. 8): (n_basis, T, n_examples), zero at the first checkpoint."""
    A = V.check_array(allocations, "allocations", ndim=3)
    zero = np.zeros((A.shape[0], 1, A.shape[2]), dtype=A.dtype)
    return np.concatenate([zero, np.cumsum(A, axis=1)], axis=1)
