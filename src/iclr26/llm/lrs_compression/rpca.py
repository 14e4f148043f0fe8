"""Robust PCA (principal component pursuit) by the inexact augmented Lagrangian method.

CAP's first stage splits every weight matrix W into a low-rank part L and a sparse part S by
solving min ||L||_* + lambda ||S||_1 subject to W = L + S with lambda = 1/sqrt(max(m, n)), the
value the paper keeps fixed (it sets the nature of the split, not the compression rate). The
solver is the inexact ALM of Lin, Chen & Ma (2010): a singular-value-thresholding step for L, a
soft-thresholding step for S, a dual ascent on Y, and a growing penalty mu.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from iclr26 import validation as V

__all__ = ["rpca", "shrink", "singular_value_threshold"]


def shrink(x: torch.Tensor, tau: float) -> torch.Tensor:
    """Entrywise soft thresholding ``sign(x) * max(|x| - tau, 0)`` (the prox of tau*||.||_1)."""
    V.check_tensor(x, "x", floating=True)
    tau = V.check_scalar(tau, "tau", low=0.0)
    return _shrink(x, tau)


def _shrink(x: torch.Tensor, tau: float) -> torch.Tensor:
    return torch.sign(x) * torch.clamp(x.abs() - tau, min=0.0)


def singular_value_threshold(
    x: torch.Tensor, tau: float, rank_hint: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SVT factors: ``U, sigma - tau, V`` for the singular values above ``tau`` (the prox of
    tau*||.||_*). ``rank_hint`` computes only that many leading triplets (``svd_lowrank``)."""
    V.check_tensor(x, "x", ndim=2, floating=True)
    tau = V.check_scalar(tau, "tau", low=0.0)
    rank_hint = V.check_int(rank_hint, "rank_hint", low=1, allow_none=True)
    return _svt(x, tau, rank_hint)


def _svt(x: torch.Tensor, tau: float, rank_hint: int | None):
    if rank_hint is None or rank_hint >= min(x.shape):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        v = vh.mT
    else:
        u, s, v = torch.svd_lowrank(x, q=rank_hint, niter=2)
    keep = s > tau
    return u[:, keep], s[keep] - tau, v[:, keep]


@dataclass
class _Split:
    """What the solver ends with: the factors of L, the sparse part and the run's record."""

    U: torch.Tensor  # m x r
    sigma: torch.Tensor  # r
    V: torch.Tensor  # n x r
    S: torch.Tensor  # m x n
    info: dict[str, Any]

    @property
    def L(self) -> torch.Tensor:
        return (self.U * self.sigma) @ self.V.mT


def _as_matrix(W: Any) -> torch.Tensor:
    if isinstance(W, torch.Tensor):
        V.check_tensor(W, "W", ndim=2, floating=True)
        return W.detach().to(torch.float64)  # stays on its device (RPCA runs there)
    arr = V.check_array(W, "W", ndim=2, dtype=np.float64)
    return torch.from_numpy(np.ascontiguousarray(arr))


def _check_options(lam, mu, rho, tol, max_iter, svd):
    lam = V.check_scalar(lam, "lam", low=0.0, low_open=True, allow_none=True)
    mu = V.check_scalar(mu, "mu", low=0.0, low_open=True, allow_none=True)
    rho = V.check_scalar(rho, "rho", low=1.0, low_open=True)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True, high=1.0)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    svd = V.check_choice(svd, "svd", ("full", "lowrank"))
    return lam, mu, rho, tol, max_iter, svd


def _ialm(
    D: torch.Tensor,
    lam: float | None,
    mu: float | None,
    rho: float,
    tol: float,
    max_iter: int,
    svd: str,
) -> _Split:
    """Inexact ALM on a float64 matrix ``D`` (already validated)."""
    m, n = D.shape
    lam = 1.0 / math.sqrt(max(m, n)) if lam is None else lam
    norm_fro = float(torch.linalg.matrix_norm(D))
    empty = D.new_zeros(m, 0), D.new_zeros(0), D.new_zeros(n, 0)
    if norm_fro == 0.0:
        info = dict(iterations=0, rank=0, nnz=0, residual=0.0, converged=True, lam=lam)
        return _Split(*empty, torch.zeros_like(D), info)
    norm_two = float(torch.linalg.matrix_norm(D, 2))
    norm_inf = float(D.abs().max()) / lam
    Y = D / max(norm_two, norm_inf)  # dual init of Lin et al.: J(D) = max(||D||_2, ||D||_inf/lam)
    mu = 1.25 / norm_two if mu is None else mu
    mu_max = mu * 1e7
    S = torch.zeros_like(D)
    U, sigma, Vf = empty
    full_rank = min(m, n)
    rank_hint = min(10, full_rank) if svd == "lowrank" else None
    residual, converged, k = float("inf"), False, 0
    while k < max_iter:
        k += 1
        U, sigma, Vf = _svt(D - S + Y / mu, 1.0 / mu, rank_hint)
        L = (U * sigma) @ Vf.mT
        S = _shrink(D - L + Y / mu, lam / mu)
        Z = D - L - S
        Y = Y + mu * Z
        mu = min(mu * rho, mu_max)
        residual = float(torch.linalg.matrix_norm(Z)) / norm_fro
        if rank_hint is not None:  # adaptive rank for the partial SVD (Lin et al.'s rule)
            found = sigma.numel()
            if found < rank_hint:
                rank_hint = min(found + 1, full_rank)
            else:
                rank_hint = min(found + max(1, round(0.05 * full_rank)), full_rank)
        if residual < tol:
            converged = True
            break
    info = dict(
        iterations=k,
        rank=int(sigma.numel()),
        nnz=int(torch.count_nonzero(S)),
        residual=residual,
        converged=converged,
        lam=lam,
    )
    info["sparse_density"] = info["nnz"] / (m * n)
    return _Split(U, sigma, Vf, S, info)


def rpca(
    W: Any,
    lam: float | None = None,
    mu: float | None = None,
    rho: float = 1.5,
    tol: float = 1e-7,
    max_iter: int = 500,
    svd: str = "full",
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """Split ``W`` (m x n, tensor or array) into low-rank ``L`` and sparse ``S`` with
    ``W = L + S`` (principal component pursuit, inexact ALM).

    ``lam`` defaults to ``1/sqrt(max(m, n))``, ``mu`` to ``1.25/||W||_2``; the penalty grows
    by ``rho`` per iteration up to ``1e7`` times its start. Stops when
    ``||W - L - S||_F / ||W||_F < tol`` or after ``max_iter`` iterations. ``svd="lowrank"``
    uses ``torch.svd_lowrank`` with an adaptive rank (large matrices). Computed in float64;
    returns ``L`` and ``S`` as tensors of ``W``'s floating dtype (float64 for arrays) and
    ``info`` (iterations, rank of L, nnz of S, residual, converged, lam, sparse_density)."""
    D = _as_matrix(W)
    lam, mu, rho, tol, max_iter, svd = _check_options(lam, mu, rho, tol, max_iter, svd)
    split = _ialm(D, lam, mu, rho, tol, max_iter, svd)
    dtype = W.dtype if isinstance(W, torch.Tensor) else torch.float64
    return split.L.to(dtype), split.S.to(dtype), split.info
