"""The low-rank training subspace (Algorithm 1 of the paper).

At every basis checkpoint the Hessian of the analysis-set loss is deflated by the basis found
so far, Pi H Pi with Pi = I - B B^T, and its top-k eigenvectors are appended. Eigenvectors come
from a fixed number of Lanczos iterations with Hessian-vector products (forward-over-reverse
with ``torch.func``); the Hessian is never formed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from iclr26 import validation as V

from .checkpoints import ParamSpace


def make_hvp(
    model: torch.nn.Module, per_example_loss: Callable, X, point: torch.Tensor, space: ParamSpace
) -> Callable[[torch.Tensor], torch.Tensor]:
    """v -> H v for the mean per-example loss at the flat parameter vector ``point``."""
    if not isinstance(space, ParamSpace):
        raise TypeError(f"space must be a ParamSpace, got {type(space).__name__}")
    if not callable(per_example_loss):
        raise TypeError("per_example_loss must be callable f(params, X)")
    point = space.check_points([point], "point")[0]
    params = space.unflatten(point)

    def mean_loss(p):
        return per_example_loss(p, X).mean()

    gradient = grad(mean_loss)

    def hvp(v: torch.Tensor) -> torch.Tensor:
        _, out = jvp(gradient, (params,), (space.unflatten(v),))
        return space.flatten(out)

    return hvp


def lanczos_top(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    dim: int,
    k: int,
    iters: int,
    deflate: torch.Tensor | None,
    generator: torch.Generator,
    dtype=torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k (largest algebraic) Ritz pairs of Pi A Pi after ``iters`` Lanczos steps with full
    reorthogonalisation; ``deflate`` (m, dim) has orthonormal rows spanning Pi's null space."""
    if not callable(matvec):
        raise TypeError("matvec must be callable v -> A v")
    dim = V.check_int(dim, "dim", low=1)
    k = V.check_int(k, "k", low=1)
    iters = V.check_int(iters, "iters", low=1)
    if k > iters:
        raise ValueError(f"k must be <= iters ({iters}): Lanczos finds at most iters Ritz pairs")
    if deflate is not None:
        V.check_tensor(deflate, "deflate", ndim=2, nonempty=False)
        if deflate.shape[0] and deflate.shape[1] != dim:
            raise ValueError(f"deflate rows have {deflate.shape[1]} entries, dim is {dim}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")

    def project(v):
        if deflate is not None and deflate.shape[0]:
            v = v - deflate.T @ (deflate @ v)
        return v

    q = project(torch.randn(dim, generator=generator, dtype=dtype))
    q = q / q.norm()
    Q, alphas, betas = [q], [], []
    for j in range(iters):
        w = project(matvec(Q[-1]))
        alpha = float(w @ Q[-1])
        alphas.append(alpha)
        basis = torch.stack(Q)
        w = w - basis.T @ (basis @ w)
        w = project(w - basis.T @ (basis @ w))
        beta = float(w.norm())
        if beta < 1e-10 or j == iters - 1:
            break
        betas.append(beta)
        Q.append(w / beta)
    m = len(alphas)
    T = np.diag(alphas) + np.diag(betas[: m - 1], 1) + np.diag(betas[: m - 1], -1)
    evals, evecs = np.linalg.eigh(T)
    order = np.argsort(evals)[::-1][:k]
    basis = torch.stack(Q[:m])
    vecs = torch.as_tensor(evecs[:, order].T.copy(), dtype=dtype) @ basis
    vecs = torch.stack([project(v) for v in vecs])
    return torch.as_tensor(evals[order].copy()), vecs


def build_hessian_basis(
    model: torch.nn.Module,
    per_example_loss: Callable,
    X,
    checkpoints: Sequence[torch.Tensor],
    k: int = 1,
    iters: int = 12,
    seed: int = 0,
) -> tuple[torch.Tensor, np.ndarray]:
    """Orthonormal basis (n_vectors, dim) and the eigenvalue each vector was found with."""
    k = V.check_int(k, "k", low=1)
    iters = V.check_int(iters, "iters", low=1)
    seed = V.check_int(seed, "seed")
    if not callable(per_example_loss):
        raise TypeError("per_example_loss must be callable f(params, X)")
    space = ParamSpace(model)
    checkpoints = space.check_points(checkpoints)
    gen = torch.Generator().manual_seed(int(seed))
    dtype = checkpoints[0].dtype
    basis = torch.zeros(0, space.dim, dtype=dtype)
    eigenvalues = []
    for point in checkpoints:
        hvp = make_hvp(model, per_example_loss, X, point.detach(), space)
        vals, vecs = lanczos_top(hvp, space.dim, k, iters, basis, gen, dtype)
        for val, v in zip(vals, vecs):
            if basis.shape[0]:
                v = v - basis.T @ (basis @ v)
            norm = v.norm()
            if norm < 1e-6:
                continue
            basis = torch.cat([basis, (v / norm)[None]])
            eigenvalues.append(float(val))
    return basis, np.asarray(eigenvalues)


def model_loss_fn(model: torch.nn.Module, token_loss: Callable) -> Callable:
    """Wrap ``token_loss(logits, X) -> per-example losses`` into ``f(params, X)``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(token_loss):
        raise TypeError("token_loss must be callable token_loss(logits, X)")

    def per_example_loss(params, X):
        return token_loss(functional_call(model, params, (X,)), X)

    return per_example_loss
