"""Per-matrix candidate pools: the rank-1 components of RPCA's L and the entries of its S.

After RPCA, the search space of CAP's second stage is small: a matrix keeps a subset of the
singular triplets of L (each costs m + n parameters as two thin factor columns) and a subset of
the non-zero entries of S (each costs one parameter). A pool holds both, with their costs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from iclr26 import validation as V
from iclr26.llm.lrs_compression.rpca import _as_matrix, _check_options, _ialm

__all__ = ["RPCACandidates"]

_MEMORY: dict[str, RPCACandidates] = {}  # pools of this process, keyed by weights + settings


@dataclass
class RPCACandidates:
    """The candidates of one ``m x n`` matrix: triplets ``(U[:, i], sigma[i], V[:, i])`` of L
    (``sigma > 0``, descending) and the non-zero entries of S (flat indices ``row * n + col``)."""

    shape: tuple[int, int]
    U: torch.Tensor  # m x r, float32
    sigma: torch.Tensor  # r
    V: torch.Tensor  # n x r
    sparse_index: torch.Tensor  # nnz, int64 flat indices
    sparse_values: torch.Tensor  # nnz
    cost_sparse: float = 1.0
    info: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def rank(self) -> int:
        return int(self.sigma.numel())

    @property
    def nnz(self) -> int:
        return int(self.sparse_index.numel())

    @property
    def cost_lowrank(self) -> float:
        return float(sum(self.shape))

    @property
    def n_candidates(self) -> int:
        return self.rank + self.nnz

    @property
    def dense_size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def max_rank(self) -> int:
        """The rank above which the two factors alone cost more than the dense matrix."""
        m, n = self.shape
        return (m * n) // (m + n)

    def costs(self) -> torch.Tensor:
        """Cost of every candidate, triplets first (float64)."""
        return torch.cat(
            [
                torch.full((self.rank,), self.cost_lowrank, dtype=torch.float64),
                torch.full((self.nnz,), float(self.cost_sparse), dtype=torch.float64),
            ]
        )

    def magnitudes(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``sigma`` of the triplets and ``|S_ij|`` of the entries (float64)."""
        return self.sigma.double(), self.sparse_values.abs().double()

    def reconstruct(
        self, keep_lowrank: torch.Tensor | None = None, keep_sparse: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``U diag(sigma * keep_lowrank) V^T + S * keep_sparse`` as an ``m x n`` float32
        matrix (``None``: keep all of that pool)."""
        m, n = self.shape
        scale = self.sigma if keep_lowrank is None else self.sigma * keep_lowrank.to(self.sigma)
        out = (self.U * scale) @ self.V.mT if self.rank else self.U.new_zeros(m, n)
        values = self.sparse_values
        if keep_sparse is not None:
            values = values * keep_sparse.to(values)
        out.view(-1).index_add_(0, self.sparse_index, values)
        return out

    @classmethod
    def from_matrix(
        cls,
        W: Any,
        *,
        lam: float | None = None,
        mu: float | None = None,
        rho: float = 1.5,
        tol: float = 1e-7,
        max_iter: int = 500,
        svd: str = "full",
        cost_sparse: float = 1.0,
        name: str = "",
        cache_dir: str | Path | None = None,
    ) -> RPCACandidates:
        """Run RPCA on ``W`` and build its pools; results are kept for the process and, with
        ``cache_dir``, on disk, keyed by a hash of the weights and the RPCA settings."""
        D = _as_matrix(W)
        opts = _check_options(lam, mu, rho, tol, max_iter, svd)
        cost_sparse = V.check_scalar(cost_sparse, "cost_sparse", low=0.0, low_open=True)
        key = _pool_key(D, opts)
        pool = _MEMORY.get(key)
        path = Path(cache_dir) / f"rpca-{key}.pt" if cache_dir is not None else None
        if pool is None and path is not None and path.is_file():
            pool = cls(**torch.load(path, weights_only=False))
        if pool is None:
            split = _ialm(D, *opts)
            flat = split.S.reshape(-1)
            index = torch.nonzero(flat, as_tuple=False).reshape(-1)
            pool = cls(
                shape=(int(D.shape[0]), int(D.shape[1])),
                U=split.U.float().cpu().contiguous(),
                sigma=split.sigma.float().cpu().contiguous(),
                V=split.V.float().cpu().contiguous(),
                sparse_index=index.cpu(),
                sparse_values=flat[index].float().cpu(),
                info=split.info,
            )
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                torch.save(pool._state(), tmp)
                tmp.replace(path)
        _MEMORY[key] = pool
        return pool.with_options(cost_sparse=cost_sparse, name=name)

    def with_options(self, cost_sparse: float, name: str) -> RPCACandidates:
        """The same pools (tensors shared) under another sparse cost and name."""
        state = self._state()
        state.update(cost_sparse=float(cost_sparse), name=name)
        return RPCACandidates(**state)

    def _state(self) -> dict[str, Any]:
        return dict(
            shape=self.shape,
            U=self.U,
            sigma=self.sigma,
            V=self.V,
            sparse_index=self.sparse_index,
            sparse_values=self.sparse_values,
            cost_sparse=self.cost_sparse,
            info=dict(self.info),
            name=self.name,
        )


def _pool_key(D: torch.Tensor, opts: tuple) -> str:
    digest = hashlib.sha256(D.cpu().numpy().tobytes())
    digest.update(repr((tuple(D.shape), opts)).encode())
    return digest.hexdigest()[:24]
