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

from .checkpoints import ParamSpace


def make_hvp(
    model: torch.nn.Module, per_example_loss: Callable, X, point: torch.Tensor, space: ParamSpace
) -> Callable[[torch.Tensor], torch.Tensor]:
    """v -> H v for the mean per-example loss at the flat parameter vector ``point``."""
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
    if not checkpoints:
        raise ValueError("need at least one basis checkpoint")
    if k < 1 or iters < 1:
        raise ValueError("k and iters must be positive")
    space = ParamSpace(model)
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

    def per_example_loss(params, X):
        return token_loss(functional_call(model, params, (X,)), X)

    return per_example_loss
