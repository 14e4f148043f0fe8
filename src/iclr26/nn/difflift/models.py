"""The embedder, the two topological networks, ∂lift end to end, the static-lifting and
no-lifting baselines, training, and scikit-learn-style classifiers: of graphs (a list of
networkx graphs) and of the nodes of one graph (``task="node"``)."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V

from .gps import make_embedder
from .graphs import GraphBatch, GraphData, _as_graph, collate
from .lifting import (
    CELL_CANDIDATES,
    DOMAINS,
    STATIC_LIFTINGS,
    CellLifter,
    HypergraphLifter,
    LiftedComplex,
    SimplicialLifter,
    lift_static,
)

__all__ = [
    "GINEmbedder",
    "CWNLite",
    "UniGCNLite",
    "DiffLift",
    "StaticLiftNet",
    "GINNet",
    "train_graph_classifier",
    "accuracy",
    "DiffLiftClassifier",
    "train_node_classifier",
    "node_accuracy",
    "DiffLiftNodeClassifier",
]

TASKS = ("graph", "node")


def _mlp(d_in: int, d: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d, d))


def _scatter_sum(src: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
    return src.new_zeros(n, src.shape[1]).index_add_(0, index, src)


def _weighted_mean_pool(x, w, owner, n_groups):
    """Per group Σ w·x / Σ w (weights detached in the denominator; zeros for an empty group)."""
    if x.shape[0] == 0:
        return x.new_zeros(n_groups, x.shape[1])
    num = _scatter_sum(w[:, None] * x, owner, n_groups)
    den = x.new_zeros(n_groups).index_add_(0, owner, w.detach())
    return num / den.clamp_min(1.0)[:, None]


def _cell_members(lc: LiftedComplex) -> tuple[torch.Tensor, torch.Tensor]:
    """(node, 2-cell) incidence pairs of a cell-domain complex as two index tensors, on the
    complex's device."""
    dev = lc.edges.device
    if not lc.cells:
        empty = torch.zeros(0, dtype=torch.long, device=dev)
        return empty, empty
    nodes = torch.tensor([v for c in lc.cells for v in c], dtype=torch.long, device=dev)
    owner = torch.repeat_interleave(
        torch.arange(len(lc.cells), device=dev),
        torch.tensor([len(c) for c in lc.cells], device=dev),
    )
    return nodes, owner


class GINEmbedder(nn.Module):
    """GIN (``h' = MLP((1 + ε) h + Σ_{u ∈ N(v)} h_u)``, ε = 0 as in torch-geometric's default
    ``GINConv``) over the input edges; ``layers`` layers of width ``hidden`` with ReLU between.
    Input: node features with the RWSE appended (:meth:`GraphData.features`)."""

    def __init__(self, in_dim: int, hidden: int = 64, layers: int = 3, dropout: float = 0.0):
        super().__init__()
        in_dim = V.check_int(in_dim, "in_dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        layers = V.check_int(layers, "layers", low=1)
        dropout = V.check_probability(dropout, "dropout")
        self.convs = nn.ModuleList(
            nn.Sequential(
                nn.Linear(in_dim if i == 0 else hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
            )
            for i in range(layers)
        )
        self.dropout = dropout

    def forward(
        self, x: torch.Tensor, edges: torch.Tensor, batch: torch.Tensor | None = None
    ) -> torch.Tensor:
        # ``batch`` only completes the embedders' common interface (GIN does not need it)
        src = torch.cat([edges[:, 0], edges[:, 1]])
        dst = torch.cat([edges[:, 1], edges[:, 0]])
        h = x
        for i, conv in enumerate(self.convs):
            agg = h.new_zeros(h.shape).index_add_(0, dst, h[src]) if src.numel() else 0.0
            h = conv(h + agg)
            if i < len(self.convs) - 1:
                h = F.dropout(F.relu(h), self.dropout, self.training)
        return h


class CWNLite(nn.Module):
    """A simplified CW network on a lifted cell complex (0-, 1- and 2-cells).

    Features: ``x0`` given; ``x1`` = mean of its endpoints; ``x2`` = sum of its boundary edges
    (the sum keeps the cell's size visible). Per layer, synchronously, each with an MLP and a
    residual: nodes ← adjacent nodes + incident edges; edges ← boundary nodes + lower-adjacent
    edges (sharing a node) + co-faces + upper-adjacent edges (sharing a 2-cell); 2-cells ←
    boundary edges. Every message from a cell is multiplied by that cell's weight (1 for static
    liftings, the straight-through decision for ∂lift). Readout (``task="graph"``): weighted mean
    per dimension, concatenated, MLP. ``task="node"``: each node's features, the weighted mean of
    its incident edges and the weighted mean of the 2-cells containing it (the signal of the
    higher cells propagated down, as the released code's node readout does), concatenated, MLP:
    logits per node.

    ``aggregate="sum"`` sums the messages; ``"mean"`` divides each kind of message by its
    (weighted) number of senders, which keeps activations bounded on one large graph whose nodes
    have many neighbours (the node-level models use it)."""

    def __init__(
        self,
        hidden: int,
        n_classes: int,
        layers: int = 4,
        dropout: float = 0.5,
        task: str = "graph",
        aggregate: str = "sum",
    ):
        super().__init__()
        hidden = V.check_int(hidden, "hidden", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=1)
        layers = V.check_int(layers, "layers", low=0)
        dropout = V.check_probability(dropout, "dropout")
        self.task = V.check_choice(task, "task", TASKS)
        self.mean = V.check_choice(aggregate, "aggregate", ("sum", "mean")) == "mean"
        self.init2 = nn.Linear(hidden, hidden)
        self.node = nn.ModuleList(_mlp(3 * hidden, hidden, dropout) for _ in range(layers))
        self.edge = nn.ModuleList(_mlp(5 * hidden, hidden, dropout) for _ in range(layers))
        self.cell = nn.ModuleList(_mlp(2 * hidden, hidden, dropout) for _ in range(layers))
        self.readout = nn.Sequential(
            nn.Linear(3 * hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x0: torch.Tensor, lc: LiftedComplex, n_graphs: int) -> torch.Tensor:
        N, E = x0.shape[0], lc.edges.shape[0]
        u, v = (lc.edges[:, 0], lc.edges[:, 1]) if E else (None, None)
        we = lc.edge_w
        C = lc.n_cells
        wc = lc.cell_w if C else x0.new_zeros(0)
        cell_of, edge_of = lc.cell_of, lc.edge_of
        x1 = 0.5 * (x0[u] + x0[v]) if E else x0.new_zeros(0, x0.shape[1])
        x2 = (
            self.init2(_scatter_sum(x1[edge_of], cell_of, C)) if C else x0.new_zeros(0, x0.shape[1])
        )
        norm = self._normalisers(lc, N) if self.mean else None
        for node_mlp, edge_mlp, cell_mlp in zip(self.node, self.edge, self.cell):
            if E:
                wx1 = we[:, None] * x1
                adj = _scatter_sum(we[:, None] * x0[v], u, N) + _scatter_sum(
                    we[:, None] * x0[u], v, N
                )
                inc = _scatter_sum(wx1, u, N) + _scatter_sum(wx1, v, N)  # S[v] = Σ_{e∋v} w_e x1
                bnd = we[:, None] * (x0[u] + x0[v])
                lower = we[:, None] * (inc[u] + inc[v] - 2 * wx1)
                if norm is not None:
                    adj, inc = adj / norm["node"], inc / norm["node"]
                    bnd, lower = bnd / 2, lower / norm["lower"]
            else:
                adj = inc = torch.zeros_like(x0)
                bnd = lower = x1
            if C:
                coface = _scatter_sum(wc[cell_of, None] * x2[cell_of], edge_of, E)
                tot = _scatter_sum(x1[edge_of], cell_of, C)  # T[c] = Σ_{e∈c} x1
                upper = _scatter_sum(wc[cell_of, None] * (tot[cell_of] - x1[edge_of]), edge_of, E)
                cbnd = tot
                if norm is not None:
                    coface, upper = coface / norm["coface"], upper / norm["upper"]
                    cbnd = cbnd / norm["cell"]
            else:
                coface = upper = torch.zeros_like(x1)
                cbnd = x2
            new0 = x0 + node_mlp(torch.cat([x0, adj, inc], 1))
            new1 = x1 + edge_mlp(torch.cat([x1, bnd, lower, coface, upper], 1)) if E else x1
            new2 = x2 + cell_mlp(torch.cat([x2, cbnd], 1)) if C else x2
            x0, x1, x2 = new0, new1, new2
        if self.task == "node":
            return self.readout(torch.cat([x0, *self._down(x1, x2, lc, N)], 1))
        pooled = [
            _weighted_mean_pool(x0, x0.new_ones(N), lc.node_batch, n_graphs),
            _weighted_mean_pool(x1, we, lc.edge_batch, n_graphs),
            _weighted_mean_pool(x2, wc, lc.cell_batch if C else lc.node_batch[:0], n_graphs),
        ]
        return self.readout(torch.cat(pooled, 1))

    @staticmethod
    def _normalisers(lc: LiftedComplex, n: int) -> dict:
        """Weighted sender counts (detached, at least 1) of each kind of message."""
        E, C = lc.edges.shape[0], lc.n_cells
        we = lc.edge_w.detach()
        out = {}
        deg = we.new_zeros(n)
        if E:
            deg.index_add_(0, lc.edges[:, 0], we).index_add_(0, lc.edges[:, 1], we)
            lower = deg[lc.edges[:, 0]] + deg[lc.edges[:, 1]] - 2 * we
            out["lower"] = lower.clamp_min(1.0)[:, None]
        out["node"] = deg.clamp_min(1.0)[:, None]
        if C:
            wc = lc.cell_w.detach()
            size = torch.bincount(lc.cell_of, minlength=C).to(we.dtype)
            cof = we.new_zeros(E).index_add_(0, lc.edge_of, wc[lc.cell_of])
            up = we.new_zeros(E).index_add_(0, lc.edge_of, (wc * (size - 1))[lc.cell_of])
            out["coface"] = cof.clamp_min(1.0)[:, None]
            out["upper"] = up.clamp_min(1.0)[:, None]
            out["cell"] = size.clamp_min(1.0)[:, None]
        return out

    @staticmethod
    def _down(x1, x2, lc: LiftedComplex, n: int) -> list[torch.Tensor]:
        E, C = lc.edges.shape[0], lc.n_cells
        if E:
            ends = torch.cat([lc.edges[:, 0], lc.edges[:, 1]])
            from_edges = _weighted_mean_pool(
                torch.cat([x1, x1]), torch.cat([lc.edge_w, lc.edge_w]), ends, n
            )
        else:
            from_edges = x1.new_zeros(n, x1.shape[1])
        if C:
            nodes, owner = _cell_members(lc)
            from_cells = _weighted_mean_pool(x2[owner], lc.cell_w[owner], nodes, n)
        else:
            from_cells = x1.new_zeros(n, x1.shape[1])
        return [from_edges, from_cells]


class UniGCNLite(nn.Module):
    """A UniGCN-style hypergraph network: hyperedge features are the weighted mean of their
    members, ``x_u' = x_u + ReLU(W [x_u ‖ Σ_e H[u,e] x_e / Σ_e H[u,e]])``; readout
    (``task="graph"``) = mean of nodes ‖ weighted mean of hyperedges → MLP; ``task="node"``:
    each node ‖ the weighted mean of its hyperedges → MLP, logits per node."""

    def __init__(
        self,
        hidden: int,
        n_classes: int,
        layers: int = 4,
        dropout: float = 0.5,
        task: str = "graph",
    ):
        super().__init__()
        hidden = V.check_int(hidden, "hidden", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=1)
        layers = V.check_int(layers, "layers", low=0)
        dropout = V.check_probability(dropout, "dropout")
        self.task = V.check_choice(task, "task", TASKS)
        self.layers = nn.ModuleList(nn.Linear(2 * hidden, hidden) for _ in range(layers))
        self.dropout = dropout
        self.readout = nn.Sequential(
            nn.Linear(2 * hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, n_classes),
        )

    def _edge_feats(self, x, lc, H):
        w = lc.member_w
        num = _scatter_sum(w[:, None] * x[lc.node_of], lc.he_of, H)
        den = x.new_zeros(H).index_add_(0, lc.he_of, w.detach()).clamp_min(1e-9)
        return num / den[:, None]

    def _node_msg(self, x, lc, H):
        if not H:
            return torch.zeros_like(x)
        N = x.shape[0]
        xe = self._edge_feats(x, lc, H)
        w = lc.member_w
        num = _scatter_sum(w[:, None] * xe[lc.he_of], lc.node_of, N)
        den = x.new_zeros(N).index_add_(0, lc.node_of, w.detach()).clamp_min(1e-9)
        return num / den[:, None]

    def forward(self, x0: torch.Tensor, lc: LiftedComplex, n_graphs: int) -> torch.Tensor:
        N = x0.shape[0]
        H = lc.n_cells
        x = x0
        for lin in self.layers:
            msg = self._node_msg(x, lc, H)
            x = x + F.dropout(F.relu(lin(torch.cat([x, msg], 1))), self.dropout, self.training)
        if self.task == "node":
            return self.readout(torch.cat([x, self._node_msg(x, lc, H)], 1))
        if H:
            xe = self._edge_feats(x, lc, H)
            he_w = x.new_zeros(H).index_add_(0, lc.he_of, lc.member_w)
            he_w = he_w / x.new_zeros(H).index_add_(0, lc.he_of, lc.member_w.detach()).clamp_min(
                1e-9
            )
            pooled_e = _weighted_mean_pool(xe, he_w, lc.he_batch, n_graphs)
        else:
            pooled_e = x.new_zeros(n_graphs, x.shape[1])
        pooled_n = _weighted_mean_pool(x, x.new_ones(N), lc.node_batch, n_graphs)
        return self.readout(torch.cat([pooled_n, pooled_e], 1))


def _tnn(domain, hidden, n_classes, layers, dropout, task="graph"):
    if domain == "simplicial":
        from .simplicial import SCNLite  # imports this module

        return SCNLite(hidden, n_classes, layers=layers, dropout=dropout, task=task)
    if domain == "cell":
        # one large graph: mean messages (sums grow with the degree at every layer)
        agg = "mean" if task == "node" else "sum"
        return CWNLite(hidden, n_classes, layers=layers, dropout=dropout, task=task, aggregate=agg)
    return UniGCNLite(hidden, n_classes, layers=layers, dropout=dropout, task=task)


def _node_encoder(task: str, in_dim: int, hidden: int) -> nn.Module | None:
    """For node classification the TNN starts from the encoded input features and the GNN
    embeddings only drive the lifting, as in the released node-level code (a GIN's first sum
    over a heterophilous neighbourhood can cancel a node's own class signal)."""
    if task != "node":
        return None
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU())


class _GraphModel(nn.Module):
    def _tnn_input(self, batch, z: torch.Tensor) -> torch.Tensor:
        encoder = self._modules.get("encoder")
        return z if encoder is None else encoder(batch.x)

    def _prep(self, batch):
        if not isinstance(batch, GraphBatch):
            batch = collate(batch)
        dev = next(self.parameters()).device
        if batch.x.device != dev:  # a batch built on another device follows the model
            batch = batch.to(dev)
        if batch.x.shape[1] != self.in_dim:
            raise ValueError(
                f"batch: node features (with RWSE) have width {batch.x.shape[1]}, the model "
                f"expects in_dim={self.in_dim}"
            )
        V.check_tensor(batch.x, "batch.x")
        return batch


class DiffLift(_GraphModel):
    """∂lift end to end: node embedder (``gnn="gin"``: :class:`GINEmbedder`; ``"gps"``:
    :class:`GPSEmbedder`, whose positional encoding is the last ``pe_steps`` feature columns,
    the RWSE) → learned lifting (cell complex, simplicial complex or hypergraph) →
    ``CWNLite`` / ``SCNLite`` / ``UniGCNLite`` → class logits, trained jointly on the task loss
    only.

    ``in_dim`` is the width of node features with the RWSE appended. ``stochastic=True`` samples
    acceptance as Bernoulli(p) during training (the paper); evaluation always thresholds at 0.5
    (the released code thresholds in training too: ``stochastic=False``). ``task="graph"`` gives
    one row of logits per graph, ``task="node"`` one per node (node classification: the lifting
    is the same, the TNN starts from the encoded input features instead of the embeddings, and
    the readout keeps the nodes). ``cell_candidates`` (cell domain): ``"cycles"``
    (basis cycles, the default) or ``"triangles"`` of the 1-skeleton as candidate 2-cells; the
    simplicial domain (:class:`SimplicialLifter`) always proposes the triangles."""

    def __init__(
        self,
        domain: str = "cell",
        in_dim: int = 12,
        hidden: int = 64,
        n_classes: int = 2,
        *,
        gnn: str = "gin",
        gnn_layers: int | None = None,
        pe_steps: int = 8,
        tnn_layers: int = 4,
        k_range: tuple[int, int] = (2, 10),
        sharpen: float = 10.0,
        stochastic: bool = True,
        learn_edges: bool = True,
        knn_edges: int = 3,
        max_cycle_len: int = 10,
        dropout: float = 0.5,
        accept_bias: float = 0.0,
        task: str = "graph",
        cell_candidates: str | None = None,
    ):
        super().__init__()
        self.domain = V.check_choice(domain, "domain", DOMAINS)
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        self.task = V.check_choice(task, "task", TASKS)
        hidden = V.check_int(hidden, "hidden", low=1)
        self.embedder = make_embedder(gnn, in_dim, hidden, gnn_layers, pe_steps)
        if cell_candidates is not None:
            cell_candidates = V.check_choice(cell_candidates, "cell_candidates", CELL_CANDIDATES)
        if self.domain == "simplicial":
            if cell_candidates not in (None, "triangles"):
                raise ValueError(
                    "cell_candidates: the simplicial domain's candidate 2-simplices are the "
                    f"triangles, got {cell_candidates!r}"
                )
            self.lifter = SimplicialLifter(
                hidden,
                sharpen=sharpen,
                stochastic=stochastic,
                learn_edges=learn_edges,
                knn_edges=knn_edges,
                accept_bias=accept_bias,
            )
        elif self.domain == "cell":
            self.lifter = CellLifter(
                hidden,
                sharpen=sharpen,
                stochastic=stochastic,
                learn_edges=learn_edges,
                knn_edges=knn_edges,
                max_cycle_len=max_cycle_len,
                accept_bias=accept_bias,
                cell_candidates=cell_candidates or "cycles",
            )
        else:
            self.lifter = HypergraphLifter(
                hidden,
                k_range=k_range,
                sharpen=sharpen,
                stochastic=stochastic,
                accept_bias=accept_bias,
            )
        self.tnn = _tnn(self.domain, hidden, n_classes, tnn_layers, dropout, self.task)
        self.encoder = _node_encoder(self.task, in_dim, hidden)
        self._generator: torch.Generator | None = None
        self.last_lift: LiftedComplex | None = None

    def lift(self, batch) -> LiftedComplex:
        """The lifted complex of ``batch`` (a GraphBatch, a graph or a list of graphs)."""
        batch = self._prep(batch)
        return self.lifter(batch, self.embedder(batch.x, batch.edges, batch.batch), self._generator)

    def forward(self, batch) -> torch.Tensor:
        batch = self._prep(batch)
        z = self.embedder(batch.x, batch.edges, batch.batch)
        lc = self.lifter(batch, z, self._generator)
        self.last_lift = lc
        return self.tnn(self._tnn_input(batch, z), lc, batch.n_graphs)


class StaticLiftNet(_GraphModel):
    """The same embedder and TNN as :class:`DiffLift` on a fixed lifting (:func:`lift_static`);
    ``gnn`` and ``task`` as in :class:`DiffLift`."""

    def __init__(
        self,
        lifting: str = "cycle",
        domain: str = "cell",
        in_dim: int = 12,
        hidden: int = 64,
        n_classes: int = 2,
        *,
        gnn: str = "gin",
        gnn_layers: int | None = None,
        pe_steps: int = 8,
        tnn_layers: int = 4,
        max_cycle_len: int = 10,
        knn_k: int = 5,
        dropout: float = 0.5,
        task: str = "graph",
    ):
        super().__init__()
        self.domain = V.check_choice(domain, "domain", DOMAINS)
        self.lifting = V.check_choice(lifting, "lifting", STATIC_LIFTINGS[self.domain])
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        self.task = V.check_choice(task, "task", TASKS)
        self.max_cycle_len = V.check_int(max_cycle_len, "max_cycle_len", low=3)
        self.knn_k = V.check_int(knn_k, "knn_k", low=1)
        self.embedder = make_embedder(gnn, in_dim, hidden, gnn_layers, pe_steps)
        self.tnn = _tnn(self.domain, hidden, n_classes, tnn_layers, dropout, self.task)
        self.encoder = _node_encoder(self.task, in_dim, hidden)
        self.last_lift: LiftedComplex | None = None
        self._lifted_batch: GraphBatch | None = None

    def lift(self, batch) -> LiftedComplex:
        batch = self._prep(batch)
        return lift_static(
            batch, self.lifting, domain=self.domain, k=self.knn_k, max_cycle_len=self.max_cycle_len
        )

    def forward(self, batch) -> torch.Tensor:
        batch = self._prep(batch)
        z = self.embedder(batch.x, batch.edges, batch.batch)
        # a static lifting does not depend on the parameters: in training, reuse it while the
        # same batch object comes back (full-batch node training passes one batch every epoch);
        # evaluation always lifts, so forward timings include the lifting
        if self.training and self.last_lift is not None and self._lifted_batch is batch:
            lc = self.last_lift
        else:
            lc = self.lift(batch)
        self.last_lift, self._lifted_batch = lc, batch
        return self.tnn(self._tnn_input(batch, z), lc, batch.n_graphs)


class GINNet(_GraphModel):
    """No lifting: the same embedder (``gnn`` as in :class:`DiffLift`), mean pooling and an MLP
    head (``task="node"``: the head on each node's embedding)."""

    def __init__(
        self,
        in_dim: int = 12,
        hidden: int = 64,
        n_classes: int = 2,
        *,
        gnn: str = "gin",
        gnn_layers: int | None = None,
        pe_steps: int = 8,
        dropout: float = 0.5,
        task: str = "graph",
    ):
        super().__init__()
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        self.task = V.check_choice(task, "task", TASKS)
        self.embedder = make_embedder(gnn, in_dim, hidden, gnn_layers, pe_steps)
        dropout = V.check_probability(dropout, "dropout")
        self.head = nn.Sequential(
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, n_classes)
        )

    def forward(self, batch) -> torch.Tensor:
        batch = self._prep(batch)
        z = self.embedder(batch.x, batch.edges, batch.batch)
        if self.task == "node":
            return self.head(z)
        pooled = _weighted_mean_pool(z, z.new_ones(z.shape[0]), batch.batch, batch.n_graphs)
        return self.head(pooled)


def _check_graphs(graphs, name="graphs", labels=True) -> list[GraphData]:
    if isinstance(graphs, (str, bytes)) or not hasattr(graphs, "__iter__"):
        raise TypeError(f"{name}: expected a list of graphs, got {type(graphs).__name__}")
    out = [_as_graph(g, name) for g in graphs]
    if not out:
        raise ValueError(f"{name}: empty; need at least one graph")
    if labels and any(g.y is None for g in out):
        raise ValueError(f"{name}: every graph needs a label y")
    return out


def _check_task(model, task: str) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    have = getattr(model, "task", "graph")
    if have != task:
        raise ValueError(
            f"model: built for task={have!r}, this function needs task={task!r} "
            f"(pass task={task!r} when constructing it)"
        )


def check_device(device) -> torch.device:
    """``device`` as a ``torch.device``: a name such as ``"cpu"`` or ``"cuda:0"``, or a
    ``torch.device``; a CUDA device needs a visible GPU."""
    if isinstance(device, bool) or not isinstance(device, (str, torch.device)):
        raise TypeError(f"device: expected a device name or torch.device, got {device!r}")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device: not a torch device name, got {device!r}") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device!r} requested but no CUDA device is available")
    return dev


def _sampler(device: torch.device, seed: int) -> torch.Generator:
    """The acceptance-sampling generator, on ``device`` (the sampled tensors live there)."""
    gen = torch.Generator() if device.type == "cpu" else torch.Generator(device=device)
    return gen.manual_seed(seed)


def train_graph_classifier(
    model: nn.Module,
    graphs,
    *,
    epochs: int = 25,
    lr: float = 1e-3,
    batch_size: int = 32,
    seed: int = 0,
    progress=None,
    device="cpu",
) -> list[float]:
    """Adam on the cross-entropy over shuffled mini-batches; returns the mean loss per epoch.
    ``progress(epoch, loss)`` is called after each epoch when given. The model is moved to
    ``device`` (and stays there) and each mini-batch is built on the CPU and moved to it; the
    shuffling draws on the CPU whatever the device."""
    graphs = _check_graphs(graphs)
    _check_task(model, "graph")
    epochs = V.check_int(epochs, "epochs", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    seed = V.check_int(seed, "seed", low=0)
    device = check_device(device)
    model.to(device)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    if hasattr(model, "_generator"):
        model._generator = _sampler(device, seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(graphs), generator=gen).tolist()
        total, count = 0.0, 0
        for i in range(0, len(order), batch_size):
            b = collate([graphs[j] for j in order[i : i + batch_size]], device=device)
            loss = F.cross_entropy(model(b), b.y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * b.n_graphs
            count += b.n_graphs
        history.append(total / count)
        if progress is not None:
            progress(epoch, history[-1])
    return history


@torch.no_grad()
def predict_logits(model: nn.Module, graphs, batch_size: int = 64) -> torch.Tensor:
    """Class logits ``[n_graphs, n_classes]`` (eval mode), computed on the model's device and
    returned on the CPU."""
    graphs = _check_graphs(graphs, labels=False)
    model.eval()
    dev = next(model.parameters()).device
    return torch.cat(
        [
            model(collate(graphs[i : i + batch_size], device=dev)).cpu()
            for i in range(0, len(graphs), batch_size)
        ]
    )


def accuracy(model: nn.Module, graphs, batch_size: int = 64, *, device="cpu") -> float:
    """Test accuracy with deterministic acceptance (eval mode); the model is moved to
    ``device`` and evaluated there."""
    graphs = _check_graphs(graphs)
    _check_task(model, "graph")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    model.to(check_device(device))
    y = torch.tensor([g.y for g in graphs])
    return float((predict_logits(model, graphs, batch_size).argmax(1) == y).float().mean())


class DiffLiftClassifier(ClassifierMixin, BaseEstimator):
    """scikit-learn-style graph classifier: ``fit(graphs, y)`` on a list of ``networkx.Graph``
    (node attribute ``x``) or :class:`GraphData`, ``predict`` / ``predict_proba`` / ``score``.
    ``lifting="learned"`` is ∂lift; a static lifting name gives the baseline with the same
    networks; ``"none"`` with ``domain="cell"`` or ``"simplicial"`` is the 1-skeleton only;
    ``domain="simplicial"`` lifts to the clique complex's triangles and runs :class:`SCNLite`.

    X is a list of graphs, not a matrix, so ``check_estimator``'s array-based checks do not
    apply (see ``SKLEARN_EXPECTED_FAILED_CHECKS``); ``clone``, ``get_params`` and ``score`` do."""

    def __init__(
        self,
        domain: str = "cell",
        lifting: str = "learned",
        hidden: int = 64,
        epochs: int = 25,
        lr: float = 1e-3,
        batch_size: int = 32,
        seed: int = 0,
        stochastic: bool = True,
        learn_edges: bool = True,
    ):
        self.domain = domain
        self.lifting = lifting
        self.hidden = hidden
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.seed = seed
        self.stochastic = stochastic
        self.learn_edges = learn_edges

    def _graphs_and_labels(self, graphs, y):
        gs = _check_graphs(graphs, labels=False)
        if y is None:
            if any(g.y is None for g in gs):
                raise ValueError("y: not given and some graphs carry no graph['y'] label")
            y = [g.y for g in gs]
        y = np.asarray(y)
        if y.dtype.kind in "fc" or y.dtype.kind in "iub":
            y = V.check_array(y, "y", ndim=1)
        elif y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
        if len(y) != len(gs):
            raise ValueError(f"y: has {len(y)} labels for {len(gs)} graphs")
        return gs, y

    def fit(self, graphs, y=None):
        domain = V.check_choice(self.domain, "domain", DOMAINS)
        V.check_choice(self.lifting, "lifting", ("learned",) + STATIC_LIFTINGS[domain])
        gs, y = self._graphs_and_labels(graphs, y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes")
        gs = [GraphData(g.x, g.edges, int(c), g.pe, g.meta) for g, c in zip(gs, codes)]
        in_dim = gs[0].features().shape[1]
        kw = dict(
            in_dim=in_dim,
            hidden=V.check_int(self.hidden, "hidden", low=1),
            n_classes=len(self.classes_),
        )
        if self.lifting == "learned":
            self.model_ = DiffLift(
                domain, stochastic=self.stochastic, learn_edges=self.learn_edges, **kw
            )
        else:
            self.model_ = StaticLiftNet(self.lifting, domain, **kw)
        self.loss_curve_ = train_graph_classifier(
            self.model_,
            gs,
            epochs=self.epochs,
            lr=self.lr,
            batch_size=self.batch_size,
            seed=self.seed,
        )
        self.n_features_in_ = in_dim
        return self

    def predict_proba(self, graphs) -> np.ndarray:
        if not hasattr(self, "model_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("DiffLiftClassifier: call fit before predict")
        return F.softmax(predict_logits(self.model_, graphs), dim=1).numpy()

    def predict(self, graphs) -> np.ndarray:
        return self.classes_[self.predict_proba(graphs).argmax(1)]


# ------------------------------------------------------------------ node classification


def _check_node_targets(graph, y, mask, mask_name: str = "train_mask"):
    """A validated graph, integer labels ``[n]`` and a boolean node mask ``[n]`` that selects
    at least one node, all of whose labels are ``>= 0``."""
    if isinstance(graph, (list, tuple)):
        raise TypeError("graph: expected one graph (networkx.Graph or GraphData), got a list")
    g = _as_graph(graph, "graph")
    n = g.n_nodes
    y = V.check_array(y, "y", ndim=1, dtype=np.int64)
    if y.shape[0] != n:
        raise ValueError(f"y: has {y.shape[0]} labels for a graph of {n} nodes")
    mask = V.check_array(mask, mask_name, ndim=1, dtype=None)
    if mask.dtype != np.bool_:
        raise TypeError(f"{mask_name}: expected a boolean array, got dtype {mask.dtype}")
    if mask.shape[0] != n:
        raise ValueError(f"{mask_name}: has {mask.shape[0]} entries for a graph of {n} nodes")
    if not mask.any():
        raise ValueError(f"{mask_name}: selects no node")
    if (y[mask] < 0).any():
        raise ValueError(f"y: negative label on a node that {mask_name} selects")
    return g, torch.as_tensor(y), torch.as_tensor(mask)


def train_node_classifier(
    model: nn.Module,
    graph,
    y,
    train_mask,
    *,
    epochs: int = 100,
    lr: float = 1e-2,
    seed: int = 0,
    progress=None,
    device="cpu",
) -> list[float]:
    """Transductive node classification: full-batch Adam on the cross-entropy of the nodes in
    ``train_mask`` (a model built with ``task="node"``; the whole graph is seen, only the masked
    labels are used), plus the model's ``auxiliary_loss(logits, y, mask)`` where it has one
    (:class:`DCM`'s graph loss). Returns the training loss per epoch. The model, the graph and
    the labels are moved to ``device`` (the model stays there)."""
    _check_task(model, "node")
    g, y, mask = _check_node_targets(graph, y, train_mask)
    epochs = V.check_int(epochs, "epochs", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    seed = V.check_int(seed, "seed", low=0)
    device = check_device(device)
    model.to(device)
    y, mask = y.to(device), mask.to(device)
    torch.manual_seed(seed)
    if hasattr(model, "_generator"):
        model._generator = _sampler(device, seed + 1)
    batch = collate([g], device=device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    # a model with its own training signal (DCM's graph loss) adds it to the cross-entropy
    extra = getattr(model, "auxiliary_loss", None)
    if hasattr(model, "reset_auxiliary"):
        model.reset_auxiliary()
    history = []
    for epoch in range(epochs):
        model.train()
        logits = model(batch)
        loss = F.cross_entropy(logits[mask], y[mask])
        if extra is not None:
            loss = loss + extra(logits, y, mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
        if progress is not None:
            progress(epoch, history[-1])
    return history


@torch.no_grad()
def node_accuracy(model: nn.Module, graph, y, mask, *, device="cpu") -> float:
    """Accuracy on the nodes in ``mask`` with deterministic acceptance (eval mode); the model
    is moved to ``device`` and evaluated there."""
    _check_task(model, "node")
    g, y, mask = _check_node_targets(graph, y, mask, "mask")
    device = check_device(device)
    pred = model.to(device).eval()(collate([g], device=device)).argmax(1).cpu()
    return float((pred[mask] == y[mask]).float().mean())


class DiffLiftNodeClassifier(ClassifierMixin, BaseEstimator):
    """scikit-learn-style transductive node classifier on one graph: ``fit(graph, y)`` where
    ``graph`` is a ``networkx.Graph`` (node attribute ``x``) or :class:`GraphData` and ``y`` holds
    one label per node, ``-1`` for an unlabelled node (scikit-learn's semi-supervised
    convention; or pass ``train_mask``); ``predict(graph)`` / ``predict_proba(graph)`` give every
    node's label / class probabilities; ``score(graph, y)`` is the accuracy over the labelled
    nodes. ``lifting="learned"`` is ∂lift with ``task="node"``; a static lifting name (or
    ``"none"`` in the cell and simplicial domains) gives the baseline with the same networks; ``"gnn"`` the
    embedder alone. ``cell_candidates`` as in :class:`DiffLift`."""

    def __init__(
        self,
        domain: str = "cell",
        lifting: str = "learned",
        hidden: int = 64,
        tnn_layers: int = 2,
        epochs: int = 100,
        lr: float = 1e-2,
        seed: int = 0,
        stochastic: bool = True,
        learn_edges: bool = True,
        cell_candidates: str = "triangles",
    ):
        self.domain = domain
        self.lifting = lifting
        self.hidden = hidden
        self.tnn_layers = tnn_layers
        self.epochs = epochs
        self.lr = lr
        self.seed = seed
        self.stochastic = stochastic
        self.learn_edges = learn_edges
        self.cell_candidates = cell_candidates

    def fit(self, graph, y, train_mask=None):
        domain = V.check_choice(self.domain, "domain", DOMAINS)
        lifting = V.check_choice(
            self.lifting, "lifting", ("learned", "gnn") + STATIC_LIFTINGS[domain]
        )
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of node labels, got shape {y.shape}")
        if train_mask is None:
            if y.dtype.kind not in "iuf":
                raise ValueError(
                    "y: non-numeric labels need train_mask (unlabelled nodes are marked -1 only "
                    "in numeric labels)"
                )
            y = V.check_array(y, "y", ndim=1)
            train_mask = y != -1
        train_mask = np.asarray(train_mask)
        if train_mask.shape != y.shape:
            raise ValueError(f"train_mask: shape {train_mask.shape} differs from y's {y.shape}")
        if train_mask.dtype != np.bool_:
            raise TypeError(f"train_mask: expected a boolean array, got dtype {train_mask.dtype}")
        if not train_mask.any():
            raise ValueError("y: no labelled node (all -1 or train_mask all False)")
        self.classes_, codes = np.unique(y[train_mask], return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes among the labelled nodes")
        target = np.full(len(y), -1, dtype=np.int64)
        target[train_mask] = codes
        g = _as_graph(graph, "graph") if not isinstance(graph, (list, tuple)) else None
        if g is None:
            raise TypeError("graph: expected one graph (networkx.Graph or GraphData), got a list")
        in_dim = g.features().shape[1]
        kw = dict(
            in_dim=in_dim,
            hidden=V.check_int(self.hidden, "hidden", low=1),
            n_classes=len(self.classes_),
            task="node",
        )
        layers = V.check_int(self.tnn_layers, "tnn_layers", low=0)
        if lifting == "learned":
            self.model_ = DiffLift(
                domain,
                stochastic=self.stochastic,
                learn_edges=self.learn_edges,
                cell_candidates=self.cell_candidates,
                tnn_layers=layers,
                **kw,
            )
        elif lifting == "gnn":
            self.model_ = GINNet(**kw)
        else:
            self.model_ = StaticLiftNet(lifting, domain, tnn_layers=layers, **kw)
        self.loss_curve_ = train_node_classifier(
            self.model_, g, target, train_mask, epochs=self.epochs, lr=self.lr, seed=self.seed
        )
        self.n_features_in_ = in_dim
        return self

    def predict_proba(self, graph) -> np.ndarray:
        if not hasattr(self, "model_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("DiffLiftNodeClassifier: call fit before predict")
        if isinstance(graph, (list, tuple)):
            raise TypeError("graph: expected one graph (networkx.Graph or GraphData), got a list")
        g = _as_graph(graph, "graph")
        with torch.no_grad():
            logits = self.model_.eval()(collate([g]))
        return F.softmax(logits, dim=1).numpy()

    def predict(self, graph) -> np.ndarray:
        return self.classes_[self.predict_proba(graph).argmax(1)]

    def score(self, graph, y, sample_weight=None) -> float:
        """Accuracy over the nodes whose label is not ``-1``."""
        y = np.asarray(y)
        keep = ~((y == -1) if y.dtype.kind in "iuf" else np.zeros(len(y), bool))
        pred = self.predict(graph)
        if len(y) != len(pred):
            raise ValueError(f"y: has {len(y)} labels for a graph of {len(pred)} nodes")
        if not keep.any():
            raise ValueError("y: no labelled node to score")
        w = None if sample_weight is None else np.asarray(sample_weight)[keep]
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y[keep], pred[keep], sample_weight=w))


from iclr26.sklearn_contract import expected_failed_checks  # noqa: E402

SKLEARN_EXPECTED_FAILED_CHECKS = expected_failed_checks(
    "fit takes a list of graphs (networkx.Graph or GraphData), not a data matrix X"
)
