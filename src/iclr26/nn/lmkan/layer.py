"""The lmKAN layer: every output sums one trainable 2-D spline per input pair, read by lookup.

Inputs are grouped in pairs ``(x_{2p}, x_{2p+1})``. Each (output, pair) owns a table of
``(G+1)^2`` values on the tensor-product grid; the spline is piecewise bilinear (degree-1
B-splines), so evaluating it needs the cell index and four table reads. We store every table
of the layer in one matrix ``T`` with ``(G+1)^2 * pairs`` rows and ``out`` columns and evaluate
the whole layer with one ``embedding_bag`` call (a fused gather-accumulate): ``4 * pairs``
weighted rows per sample, ``2 * in * out`` multiply-adds, whatever ``G``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from .grid import locate, sigma_grid

BACKENDS = ("embedding_bag", "dense")
EXTRAPOLATIONS = ("clamp", "linear")


class WeightedLookup(torch.autograd.Function):
    """``y[b] = sum_k w[b, k] * T[rows[b, k]]`` with a scatter-add backward.

    The forward is one ``embedding_bag`` call. Its stock backward sorts the indices on CPU,
    which dominates training time here; the table gradient is a plain ``index_add_`` of
    ``w * grad_y`` into the touched rows, and the weight gradient is ``<T[rows], grad_y>``.
    """

    @staticmethod
    def forward(ctx, rows: torch.Tensor, weights: torch.Tensor, table: torch.Tensor):
        ctx.save_for_backward(rows, weights, table)
        return F.embedding_bag(rows, table, per_sample_weights=weights, mode="sum")

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        rows, weights, table = ctx.saved_tensors
        grad_weights = grad_table = None
        if ctx.needs_input_grad[1]:
            grad_weights = (table[rows] * grad_out.unsqueeze(1)).sum(-1)
        if ctx.needs_input_grad[2]:
            contributions = weights.unsqueeze(-1) * grad_out.unsqueeze(1)
            grad_table = torch.zeros_like(table).index_add_(
                0, rows.reshape(-1), contributions.reshape(-1, table.shape[1])
            )
        return None, grad_weights, grad_table


class LMKAN2d(nn.Module):
    """Lookup multivariate KAN layer with 2-D inner functions (a drop-in for ``nn.Linear``).

    Args:
        in_features: input size; an odd size is zero-padded by one feature.
        out_features: output size.
        num_grids: ``G``, the number of grid intervals per axis.
        init_scale: tables start ``Uniform(-s/sqrt(in), s/sqrt(in))``.
        extrapolate: ``"clamp"`` (default: constant outside the outer knots) or ``"linear"``
            (the official kernel's behaviour: the cell index is clamped to the outer cells and
            the local coordinate is left free, so the outer bilinear patches extend linearly;
            see the README's Deviations for why it is not the default).
        backend: ``"embedding_bag"`` (the lookup) or ``"dense"`` (basis matrix + einsum,
            a naive reference that touches all ``(G+1)^2`` entries per pair).

    The parameter ``table`` has shape ``(pairs, G+1, G+1, out_features)``; entry
    ``table[p, i, j, q]`` is output ``q``'s function of pair ``p`` at knot ``(t_i, t_j)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        num_grids: int = 8,
        init_scale: float = 0.1,
        extrapolate: str = "clamp",
        backend: str = "embedding_bag",
    ) -> None:
        super().__init__()
        in_features = V.check_int(in_features, "in_features", low=1)
        out_features = V.check_int(out_features, "out_features", low=1)
        num_grids = V.check_int(num_grids, "num_grids", low=3)
        init_scale = V.check_scalar(init_scale, "init_scale", low=0.0)
        V.check_choice(extrapolate, "extrapolate", EXTRAPOLATIONS)
        V.check_choice(backend, "backend", BACKENDS)
        self.in_features, self.out_features = in_features, out_features
        self.num_grids, self.extrapolate, self.backend = num_grids, extrapolate, backend
        self.pairs = (in_features + 1) // 2
        self.register_buffer("knots", sigma_grid(num_grids))
        side = num_grids + 1
        bound = init_scale / math.sqrt(in_features)
        self.table = nn.Parameter(torch.empty(self.pairs, side, side, out_features))
        nn.init.uniform_(self.table, -bound, bound)
        # Row offsets of the four corners (0,0), (0,1), (1,0), (1,1) of a cell.
        self.register_buffer("corner_offsets", torch.tensor([0, 1, side, side + 1]))
        self.register_buffer("pair_offsets", torch.arange(self.pairs) * side * side)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"num_grids={self.num_grids}, extrapolate={self.extrapolate!r}, "
            f"backend={self.backend!r}"
        )

    def _pair_coordinates(self, x: torch.Tensor):
        V.check_tensor(x, "x", ndim=2, shape=(None, self.in_features), floating=True)
        if self.in_features % 2:
            x = F.pad(x, (0, 1))
        knots = self.knots.to(x.dtype)
        index, u = locate(x, knots, self.extrapolate)
        return index[:, 0::2], index[:, 1::2], u[:, 0::2], u[:, 1::2]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        i1, i2, u1, u2 = self._pair_coordinates(x)
        if self.backend == "dense":
            return self._dense(i1, i2, u1, u2)
        side = self.num_grids + 1
        base = self.pair_offsets + i1 * side + i2  # (batch, pairs)
        rows = (base.unsqueeze(-1) + self.corner_offsets).reshape(x.shape[0], -1)
        v1, v2 = 1.0 - u1, 1.0 - u2
        weights = torch.stack([v1 * v2, v1 * u2, u1 * v2, u1 * u2], dim=-1).reshape(rows.shape)
        flat = self.table.reshape(-1, self.out_features)
        return WeightedLookup.apply(rows, weights, flat.to(x.dtype))

    def _dense(self, i1, i2, u1, u2) -> torch.Tensor:
        side = self.num_grids + 1
        hat1 = _hat_basis(i1, u1, side)
        hat2 = _hat_basis(i2, u2, side)
        basis = hat1.unsqueeze(-1) * hat2.unsqueeze(-2)  # (batch, pairs, side, side)
        return torch.einsum("bpij,pijo->bo", basis, self.table.to(u1.dtype))

    def flops(self, batch: int = 1) -> int:
        """Inference FLOPs: ``4 * in * out`` for the four weighted reads (multiply + add) plus
        ``~10`` per pair for the index and weight computation (``nn.Linear``: ``2 * in * out``)."""
        return batch * (8 * self.pairs * self.out_features + 10 * self.pairs)

    def hessian_penalty(self) -> torch.Tensor:
        """Mean squared Hessian norm ``f_xx^2 + 2 f_xy^2 + f_yy^2`` over the inner knots of each
        2-D function (finite differences on the non-uniform grid), summed over functions."""
        f = self.table
        t = self.knots.to(f.dtype)
        h = t[1:] - t[:-1]
        hl, hr = h[:-1], h[1:]  # spacings left / right of inner knots 1..G-1
        ax = (hl + hr).view(1, -1, 1, 1)
        fxx = (
            2.0
            / ax
            * (
                (f[:, 2:, 1:-1] - f[:, 1:-1, 1:-1]) / hr.view(1, -1, 1, 1)
                - (f[:, 1:-1, 1:-1] - f[:, :-2, 1:-1]) / hl.view(1, -1, 1, 1)
            )
        )
        ay = (hl + hr).view(1, 1, -1, 1)
        fyy = (
            2.0
            / ay
            * (
                (f[:, 1:-1, 2:] - f[:, 1:-1, 1:-1]) / hr.view(1, 1, -1, 1)
                - (f[:, 1:-1, 1:-1] - f[:, 1:-1, :-2]) / hl.view(1, 1, -1, 1)
            )
        )
        fxy = (f[:, 2:, 2:] - f[:, 2:, :-2] - f[:, :-2, 2:] + f[:, :-2, :-2]) / (ax * ay)
        density = fxx**2 + 2.0 * fxy**2 + fyy**2
        return density.mean(dim=(1, 2)).sum()


def _hat_basis(index: torch.Tensor, u: torch.Tensor, side: int) -> torch.Tensor:
    """Degree-1 B-spline (hat) values on all ``side`` knots: ``1-u`` at ``i``, ``u`` at ``i+1``."""
    basis = u.new_zeros(*index.shape, side)
    basis = basis.scatter(-1, index.unsqueeze(-1), (1.0 - u).unsqueeze(-1))
    return basis.scatter_add(-1, (index + 1).unsqueeze(-1), u.unsqueeze(-1))
