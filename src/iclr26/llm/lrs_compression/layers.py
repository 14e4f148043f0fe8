"""``LowRankSparseLinear``: a drop-in for ``nn.Linear`` whose weight is ``U V^T + S``.

The low-rank part is two thin factors (``out x r`` and ``in x r``, the singular values split as
their square roots over both), the sparse part a fixed support with trainable values.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from iclr26 import validation as V

__all__ = ["LowRankSparseLinear"]


class LowRankSparseLinear(nn.Module):
    """``y = (x V) U^T + x S^T + b`` with ``U`` (out x r), ``V`` (in x r) and a sparse ``S``
    (out x in) given by ``sparse_rows``, ``sparse_cols`` and ``sparse_values``.

    ``r = 0`` keeps only the sparse path, ``nnz = 0`` only the low-rank path. ``n_params()``
    is ``r (in + out) + nnz`` (indices are not counted, as in the paper; bias apart)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        U: Any = None,
        V_factor: Any = None,
        sparse_rows: Any = None,
        sparse_cols: Any = None,
        sparse_values: Any = None,
        bias: Any = None,
    ):
        super().__init__()
        self.in_features = V.check_int(in_features, "in_features", low=1)
        self.out_features = V.check_int(out_features, "out_features", low=1)
        U = torch.zeros(self.out_features, 0) if U is None else U
        V_factor = torch.zeros(self.in_features, 0) if V_factor is None else V_factor
        V.check_tensor(U, "U", ndim=2, floating=True, nonempty=False)
        V.check_tensor(V_factor, "V_factor", ndim=2, floating=True, nonempty=False)
        if U.shape[0] != self.out_features:
            raise ValueError(
                f"U must have {self.out_features} rows (out_features), got {U.shape[0]}"
            )
        if V_factor.shape[0] != self.in_features:
            raise ValueError(
                f"V_factor must have {self.in_features} rows (in_features), got {V_factor.shape[0]}"
            )
        if U.shape[1] != V_factor.shape[1]:
            raise ValueError(
                f"U and V_factor must have the same rank, got {U.shape[1]} and {V_factor.shape[1]}"
            )
        dtype = U.dtype
        rows = torch.zeros(0, dtype=torch.long) if sparse_rows is None else sparse_rows
        cols = torch.zeros(0, dtype=torch.long) if sparse_cols is None else sparse_cols
        values = torch.zeros(0, dtype=dtype) if sparse_values is None else sparse_values
        V.check_tensor(
            rows,
            "sparse_rows",
            ndim=1,
            integer=True,
            nonempty=False,
            low=0,
            high=self.out_features - 1,
        )
        V.check_tensor(
            cols,
            "sparse_cols",
            ndim=1,
            integer=True,
            nonempty=False,
            low=0,
            high=self.in_features - 1,
        )
        V.check_tensor(values, "sparse_values", ndim=1, floating=True, nonempty=False)
        if not rows.numel() == cols.numel() == values.numel():
            raise ValueError(
                "sparse_rows, sparse_cols and sparse_values must have the same length, got "
                f"{rows.numel()}, {cols.numel()} and {values.numel()}"
            )
        order = torch.argsort(rows.long() * self.in_features + cols.long())  # row-major, coalesced
        self.U = nn.Parameter(U.detach().clone().contiguous())
        self.V = nn.Parameter(V_factor.detach().to(dtype).clone().contiguous())
        self.register_buffer(
            "sparse_indices", torch.stack([rows.long()[order], cols.long()[order]])
        )
        self.sparse_values = nn.Parameter(values.detach().to(dtype)[order].clone())
        if bias is None:
            self.register_parameter("bias", None)
        else:
            V.check_tensor(bias, "bias", shape=(self.out_features,), floating=True)
            self.bias = nn.Parameter(bias.detach().to(dtype).clone())
        self._csr: tuple[int, torch.Tensor] | None = None

    @property
    def rank(self) -> int:
        return int(self.U.shape[1])

    @property
    def nnz(self) -> int:
        return int(self.sparse_values.numel())

    def n_params(self) -> int:
        return self.rank * (self.in_features + self.out_features) + self.nnz

    def dense_weight(self) -> torch.Tensor:
        """``U V^T + S`` as a dense ``out x in`` matrix."""
        w = self.U @ self.V.mT
        return w.index_put(
            (self.sparse_indices[0], self.sparse_indices[1]), self.sparse_values, accumulate=True
        )

    def _sparse(self) -> torch.Tensor:
        shape = (self.out_features, self.in_features)
        if torch.is_grad_enabled() and self.sparse_values.requires_grad:
            return torch.sparse_coo_tensor(
                self.sparse_indices,
                self.sparse_values,
                shape,
                is_coalesced=True,
                check_invariants=False,
            )
        version = self.sparse_values._version
        if (
            self._csr is None
            or self._csr[0] != version
            or self._csr[1].device != self.sparse_values.device
        ):
            coo = torch.sparse_coo_tensor(
                self.sparse_indices,
                self.sparse_values.detach(),
                shape,
                is_coalesced=True,
                check_invariants=False,
            )
            with warnings.catch_warnings():  # CSR support is marked beta; the product is exact
                warnings.simplefilter("ignore", UserWarning)
                self._csr = (version, coo.to_sparse_csr())
        return self._csr[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        flat = x.reshape(-1, self.in_features)
        out = flat.new_zeros(flat.shape[0], self.out_features)
        if self.rank:
            out = (flat @ self.V) @ self.U.mT
        if self.nnz:
            out = out + torch.sparse.mm(self._sparse(), flat.mT).mT
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*lead, self.out_features)

    def flops_per_token(self) -> int:
        """Multiply-adds x 2 of one token through the factors and the sparse part."""
        return 2 * self.n_params()

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"rank={self.rank}, nnz={self.nnz}, bias={self.bias is not None}"
        )

    def _apply(self, fn, recurse=True):  # drop the cached CSR when the module moves
        self._csr = None
        return super()._apply(fn, recurse)
