"""The simplicial network of ∂lift's simplicial domain: an SCN2-style network (the simplicial
TNN of the paper's experiments, Yang, Sala and Bogdan's simplicial convolution as TopoModelX
implements it) on a lifted simplicial complex of 0-, 1- and 2-simplices.

Each rank ``r`` is convolved with its normalised Hodge-type operator, as the released code builds
them from the (unsigned) incidence matrices: ``L0 = B1 W1 B1ᵀ`` (the graph Laplacian ``D − A``
of the accepted edges, signed), ``L1 = |B1|ᵀ|B1| W1 + |B2| W2 |B2|ᵀ W1`` (lower plus upper
adjacency of the edges), ``L2 = |B2|ᵀ W1 |B2| W2`` (triangles sharing an edge), each
normalised as ``D^{-1/2} L D^{-1/2}`` with ``D`` the absolute row sums of ``L``. ``W1``, ``W2``
are the straight-through weights of the edges and triangles (1 for a static lifting), so a
rejected simplex sends nothing and the acceptance heads get the task gradient through every
operator. ``cross_rank=True`` adds the boundary and coboundary messages between neighbouring
ranks (an SCCN-style layer). Messages are index lists and ``index_add_``; :func:`hodge_operators`
builds the same operators densely for inspection and tests."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V

from .lifting import LiftedComplex
from .models import TASKS, CWNLite, _cell_members, _scatter_sum, _weighted_mean_pool

__all__ = ["SCNLite", "hodge_operators"]


def _check_complex(lc) -> LiftedComplex:
    if not isinstance(lc, LiftedComplex):
        raise TypeError(f"lc: expected a LiftedComplex, got {type(lc).__name__}")
    if lc.domain == "hypergraph":
        raise ValueError("lc: a hypergraph has no simplicial operators (cell or simplicial domain)")
    return lc


class _Operators:
    """The three weighted operators of one complex, applied by index lists (no dense matrices);
    the normalisers ``D^{-1/2}`` are computed once per forward pass (detached)."""

    def __init__(self, lc: LiftedComplex):
        self.N, self.E, self.C = lc.n_nodes, int(lc.edges.shape[0]), lc.n_cells
        self.u = lc.edges[:, 0] if self.E else None
        self.v = lc.edges[:, 1] if self.E else None
        self.we = lc.edge_w
        self.wc = lc.cell_w if self.C else lc.edge_w.new_zeros(0)
        self.cell_of, self.edge_of = lc.cell_of, lc.edge_of
        with torch.no_grad():
            self.d0 = self._inv_sqrt(self._abs_rows0())
            # the absolute row sums of an operator with non-negative entries: itself on ones
            ones1 = self.we.new_ones(self.E, 1)
            self.d1 = self._inv_sqrt(self._apply1(ones1, detach=True)[:, 0])
            ones2 = self.we.new_ones(self.C, 1)
            self.d2 = self._inv_sqrt(self._apply2(ones2, detach=True)[:, 0]) if self.C else None

    @staticmethod
    def _inv_sqrt(rows: torch.Tensor) -> torch.Tensor:
        return torch.where(rows > 0, rows.clamp_min(1e-12).rsqrt(), torch.zeros_like(rows))

    def _abs_rows0(self) -> torch.Tensor:
        rows = self.we.new_zeros(self.N)
        if self.E:
            w = self.we.detach()
            rows.index_add_(0, self.u, 2 * w).index_add_(0, self.v, 2 * w)
        return rows

    def _apply0(self, h: torch.Tensor) -> torch.Tensor:
        """``L0 h``: at each node ``Σ_{e = {x, y} ∋ x} w_e (h_x − h_y)``."""
        if not self.E:
            return torch.zeros_like(h)
        diff = self.we[:, None] * (h[self.u] - h[self.v])
        return _scatter_sum(diff, self.u, self.N) - _scatter_sum(diff, self.v, self.N)

    def _apply1(self, h: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """``L1 h = |B1|ᵀ|B1| W1 h + |B2| W2 |B2|ᵀ W1 h`` (self terms included)."""
        if not self.E:
            return torch.zeros_like(h)
        we = self.we.detach() if detach else self.we
        wh = we[:, None] * h
        at_nodes = _scatter_sum(wh, self.u, self.N) + _scatter_sum(wh, self.v, self.N)
        out = at_nodes[self.u] + at_nodes[self.v]
        if self.C:
            wc = self.wc.detach() if detach else self.wc
            per_cell = _scatter_sum(wh[self.edge_of], self.cell_of, self.C)
            out = out + _scatter_sum(
                wc[self.cell_of, None] * per_cell[self.cell_of], self.edge_of, self.E
            )
        return out

    def _apply2(self, h: torch.Tensor, detach: bool = False) -> torch.Tensor:
        """``L2 h = |B2|ᵀ W1 |B2| W2 h`` (self terms included)."""
        we = self.we.detach() if detach else self.we
        wc = self.wc.detach() if detach else self.wc
        at_edges = _scatter_sum(wc[self.cell_of, None] * h[self.cell_of], self.edge_of, self.E)
        at_edges = we[:, None] * at_edges
        return _scatter_sum(at_edges[self.edge_of], self.cell_of, self.C)

    def conv(self, r: int, h: torch.Tensor) -> torch.Tensor:
        """``D_r^{-1/2} L_r D_r^{-1/2} h``."""
        d = (self.d0, self.d1, self.d2)[r]
        apply = (self._apply0, self._apply1, self._apply2)[r]
        return d[:, None] * apply(d[:, None] * h)


def hodge_operators(lc: LiftedComplex) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The normalised operators ``(N0 [n, n], N1 [E, E], N2 [C, C])`` that :class:`SCNLite`
    applies to a cell- or simplicial-domain complex, built densely from its boundary matrices
    (weights detached): ``L0 = B1 W1 B1ᵀ`` (signed ``B1``), ``L1 = |B1|ᵀ|B1| W1 + |B2| W2 |B2|ᵀ
    W1``, ``L2 = |B2|ᵀ W1 |B2| W2``, each ``D^{-1/2} L D^{-1/2}`` with ``D`` the absolute row
    sums (a zero row stays zero)."""
    lc = _check_complex(lc)
    B1, B2 = lc.boundary_matrices(signed=True, weighted=False)
    W1 = torch.diag(lc.edge_w.detach())
    W2 = torch.diag(lc.cell_w.detach()) if lc.n_cells else B1.new_zeros(0, 0)
    A1, A2 = B1.abs(), B2.abs()
    L0 = B1 @ W1 @ B1.T
    L1 = A1.T @ A1 @ W1 + A2 @ W2 @ A2.T @ W1
    L2 = A2.T @ W1 @ A2 @ W2

    def norm(L):
        rows = L.abs().sum(1)
        d = torch.where(rows > 0, rows.clamp_min(1e-12).rsqrt(), torch.zeros_like(rows))
        return d[:, None] * L * d[None, :]

    return norm(L0), norm(L1), norm(L2)


class SCNLite(nn.Module):
    """An SCN2-style simplicial network on a lifted complex (0-, 1- and 2-simplices).

    Features: ``x0`` given; ``x1`` = a linear map of the mean of the edge's endpoints; ``x2`` =
    a linear map of the mean of the triangle's vertices. Per layer and rank ``r``:
    ``x_r ← x_r + Dropout(ReLU(W_r [N_r x_r]))`` with ``N_r`` the normalised operator of the
    module docstring (the SCN2 update ``σ(N_r x_r W_r)`` with a residual); with
    ``cross_rank=True`` the input of ``W_r`` also holds the weighted mean of the rank ``r − 1``
    faces (boundary) and of the rank ``r + 1`` cofaces (coboundary). Readout
    (``task="graph"``): weighted mean per rank, concatenated, MLP; ``task="node"``: each node ‖
    the weighted mean of its edges ‖ of its triangles, MLP (as :class:`CWNLite`)."""

    def __init__(
        self,
        hidden: int,
        n_classes: int,
        layers: int = 4,
        dropout: float = 0.5,
        task: str = "graph",
        cross_rank: bool = False,
    ):
        super().__init__()
        hidden = V.check_int(hidden, "hidden", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=1)
        layers = V.check_int(layers, "layers", low=0)
        self.dropout = V.check_probability(dropout, "dropout")
        self.task = V.check_choice(task, "task", TASKS)
        self.cross_rank = V.check_bool(cross_rank, "cross_rank")
        self.init1 = nn.Linear(hidden, hidden)
        self.init2 = nn.Linear(hidden, hidden)
        widths = (2, 3, 2) if self.cross_rank else (1, 1, 1)
        self.convs = nn.ModuleList(
            nn.ModuleList(nn.Linear(k * hidden, hidden) for k in widths) for _ in range(layers)
        )
        self.readout = nn.Sequential(
            nn.Linear(3 * hidden, hidden),
            nn.ReLU(),
            nn.Dropout(self.dropout),
            nn.Linear(hidden, n_classes),
        )

    def _cross(self, x0, x1, x2, lc: LiftedComplex, ops: _Operators):
        """Boundary and coboundary messages: weighted means over faces and cofaces."""
        N, E, C = ops.N, ops.E, ops.C
        if E:
            ends = torch.cat([ops.u, ops.v])
            w2 = torch.cat([ops.we, ops.we])
            up0 = _weighted_mean_pool(torch.cat([x1, x1]), w2, ends, N)
            down1 = 0.5 * (x0[ops.u] + x0[ops.v])
        else:
            up0, down1 = torch.zeros_like(x0), x1
        if C:
            up1 = _weighted_mean_pool(x2[ops.cell_of], ops.wc[ops.cell_of], ops.edge_of, E)
            down2 = _weighted_mean_pool(x1[ops.edge_of], ops.we[ops.edge_of], ops.cell_of, C)
        else:
            up1, down2 = torch.zeros_like(x1), x2
        return [up0], [down1, up1], [down2]

    def forward(self, x0: torch.Tensor, lc: LiftedComplex, n_graphs: int) -> torch.Tensor:
        lc = _check_complex(lc)
        ops = _Operators(lc)
        N, E, C = ops.N, ops.E, ops.C
        x1 = self.init1(0.5 * (x0[ops.u] + x0[ops.v])) if E else x0.new_zeros(0, x0.shape[1])
        if C:
            nodes, owner = _cell_members(lc)
            x2 = self.init2(_weighted_mean_pool(x0[nodes], x0.new_ones(len(nodes)), owner, C))
        else:
            x2 = x0.new_zeros(0, x0.shape[1])
        for lin0, lin1, lin2 in self.convs:
            extra = self._cross(x0, x1, x2, lc, ops) if self.cross_rank else ([], [], [])
            new = []
            for r, (x, lin) in enumerate(zip((x0, x1, x2), (lin0, lin1, lin2))):
                if x.shape[0] == 0:
                    new.append(x)
                    continue
                msg = lin(torch.cat([ops.conv(r, x), *extra[r]], 1))
                new.append(x + F.dropout(F.relu(msg), self.dropout, self.training))
            x0, x1, x2 = new
        if self.task == "node":
            return self.readout(torch.cat([x0, *CWNLite._down(x1, x2, lc, N)], 1))
        pooled = [
            _weighted_mean_pool(x0, x0.new_ones(N), lc.node_batch, n_graphs),
            _weighted_mean_pool(x1, ops.we, lc.edge_batch, n_graphs),
            _weighted_mean_pool(x2, ops.wc, lc.cell_batch if C else lc.node_batch[:0], n_graphs),
        ]
        return self.readout(torch.cat(pooled, 1))
