"""Liftings of a batch of graphs to cell complexes and hypergraphs: the learned one of ∂lift
and the static rules it is compared with.

Every lifting returns a :class:`LiftedComplex` over the whole batch, stored as index lists so
that message passing is a few ``index_add_`` calls and grows linearly with the size of the
complex:

* 1-cells ``edges [E, 2]`` with weights ``edge_w [E]``;
* 2-cells (cell domain) as ``(cell_of, edge_of)`` pairs (a 2-cell's boundary edges), with
  weights ``cell_w [C]`` and node lists ``cells``;
* hyperedges (hypergraph domain) as ``(he_of, node_of)`` membership pairs with weights
  ``member_w [K]``.

A static lifting has all weights 1. The learned lifting keeps every *candidate* in the lists and
sets its weight to the straight-through value ``b̂ = b + p − stopgrad(p)``: equal to the hard
decision ``b`` in the forward pass (a rejected cell weighs exactly 0), with gradient 1 to its
acceptance probability ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V

from .graphs import GraphBatch

__all__ = [
    "LiftedComplex",
    "straight_through",
    "AcceptanceHead",
    "gumbel_size_mask",
    "lift_static",
    "STATIC_LIFTINGS",
    "CELL_CANDIDATES",
    "CellLifter",
    "SimplicialLifter",
    "HypergraphLifter",
    "DOMAINS",
]

CELL_CANDIDATES = ("cycles", "triangles")
_DENSE_TRIANGLES_MAX = 3000  # nodes per graph up to which triangles come from a dense adjacency

STATIC_LIFTINGS = {
    "cell": ("cycle", "clique", "none"),
    "hypergraph": ("khop", "knn", "clique"),
    "simplicial": ("clique", "none"),
}
DOMAINS = tuple(STATIC_LIFTINGS)
_CELL_LIKE = ("cell", "simplicial")  # domains whose 2-cells hang on a boundary of 1-cells


def straight_through(p: torch.Tensor, hard: torch.Tensor) -> torch.Tensor:
    """``hard + p − stopgrad(p)``: forward value ``hard``, gradient 1 with respect to ``p``."""
    return hard + p - p.detach()


class AcceptanceHead(nn.Module):
    """φ: pooled cell embedding → acceptance probability. An MLP ``d → hidden → 2`` whose
    logits are multiplied by ``sharpen`` before the softmax; ``p = softmax(·)[1]`` (the
    released code's form). ``accept_bias`` shifts the initial logit difference towards
    acceptance (0 leaves PyTorch's initialisation)."""

    def __init__(self, dim: int, hidden: int = 64, sharpen: float = 10.0, accept_bias: float = 0.0):
        super().__init__()
        dim = V.check_int(dim, "dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        self.sharpen = V.check_scalar(sharpen, "sharpen", low=0.0, low_open=True)
        accept_bias = V.check_scalar(accept_bias, "accept_bias")
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        with torch.no_grad():
            self.mlp[-1].bias.copy_(torch.tensor([-accept_bias / 2, accept_bias / 2]))

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        if pooled.shape[0] == 0:
            return pooled.new_zeros(0)
        return F.softmax(self.sharpen * self.mlp(pooled), dim=-1)[:, 1]


def _decide(p: torch.Tensor, stochastic: bool, generator: torch.Generator | None) -> torch.Tensor:
    if stochastic:
        return torch.bernoulli(p.detach(), generator=generator)
    return (p.detach() > 0.5).to(p.dtype)


@dataclass
class LiftedComplex:
    """A batch lifted to a cell complex (``domain="cell"``), a simplicial complex
    (``domain="simplicial"``: the 2-cells are triangles ``[a, b, c]``, ``a < b < c``, the
    2-simplices of a clique complex) or a hypergraph."""

    domain: str
    n_nodes: int
    node_batch: torch.Tensor
    edges: torch.Tensor
    edge_w: torch.Tensor
    edge_batch: torch.Tensor
    # cell domain
    cells: list[list[int]] = field(default_factory=list)
    cell_of: torch.Tensor | None = None
    edge_of: torch.Tensor | None = None
    cell_w: torch.Tensor | None = None
    cell_batch: torch.Tensor | None = None
    # hypergraph domain
    he_of: torch.Tensor | None = None
    node_of: torch.Tensor | None = None
    member_w: torch.Tensor | None = None
    he_batch: torch.Tensor | None = None
    # learned liftings: acceptance probabilities and the candidate counts
    edge_p: torch.Tensor | None = None
    cell_p: torch.Tensor | None = None
    he_p: torch.Tensor | None = None
    k: torch.Tensor | None = None
    stats: dict = field(default_factory=dict)

    @property
    def n_cells(self) -> int:
        if self.domain in _CELL_LIKE:
            return 0 if self.cell_w is None else int(self.cell_w.shape[0])
        return 0 if self.he_batch is None else int(self.he_batch.shape[0])

    def accepted_cells(self) -> list[list[int]]:
        """Node lists of the accepted 2-cells (cell and simplicial domains) or hyperedges."""
        if self.domain in _CELL_LIKE:
            w = self.cell_w.detach().cpu() if self.cell_w is not None else torch.zeros(0)
            return [c for c, wi in zip(self.cells, w.tolist()) if wi > 0.5]
        out: dict[int, list[int]] = {}
        for h, v, w in zip(self.he_of.tolist(), self.node_of.tolist(), self.member_w.tolist()):
            if w > 0.5:
                out.setdefault(h, []).append(v)
        return [sorted(v) for _, v in sorted(out.items())]

    def accepted_edges(self) -> torch.Tensor:
        return self.edges[self.edge_w.detach() > 0.5]

    def boundary_matrices(
        self, *, signed: bool = False, weighted: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense ``B1 [n, E]`` and ``B2 [E, C]`` (cell and simplicial domains) or incidence
        ``H [n, n_hyperedges]`` and an empty matrix (hypergraph), weighted as in message passing
        (``weighted=False``: the bare 0/±1 entries of every candidate).

        ``signed=True`` (cell and simplicial domains) orients each edge ``(u, v)``, ``u < v``,
        from ``u`` to ``v`` (``B1[u, e] = −1``, ``B1[v, e] = +1``) and each 2-cell by the order of
        its node list: ``B2[e, c] = ±1`` as the cell's boundary walk traverses ``e`` along or
        against it. For a triangle ``[a, b, c]`` this is ``∂[a,b,c] = [b,c] − [a,c] + [a,b]``, and
        ``B1 @ B2 = 0`` (a boundary has no boundary)."""
        signed = V.check_bool(signed, "signed")
        weighted = V.check_bool(weighted, "weighted")
        n, E = self.n_nodes, self.edges.shape[0]
        dev = self.edges.device
        ew = self.edge_w.detach() if weighted else torch.ones(E, device=dev)
        B1 = torch.zeros(n, E, device=dev)
        ar = torch.arange(E, device=dev)
        if E:
            B1[self.edges[:, 0], ar] = -ew if signed else ew
            B1[self.edges[:, 1], ar] = ew
        if self.domain in _CELL_LIKE:
            B2 = torch.zeros(E, self.n_cells, device=dev)
            if self.cell_of is not None and self.cell_of.numel():
                cw = self.cell_w.detach() if weighted else torch.ones(self.n_cells, device=dev)
                val = cw[self.cell_of]
                if signed:
                    val = val * self._walk_signs()
                B2[self.edge_of, self.cell_of] = val
            return B1, B2
        if signed:
            raise ValueError("signed: a hypergraph has no oriented boundary (cell domains only)")
        H = torch.zeros(n, self.n_cells, device=dev)
        if self.he_of is not None and self.he_of.numel():
            H[self.node_of, self.he_of] = self.member_w.detach() if weighted else 1.0
        return H, torch.zeros(0, 0, device=dev)

    def _walk_signs(self) -> torch.Tensor:
        """+1 where a 2-cell's boundary walk (its node list, closed) runs along the edge's
        orientation (smaller node to larger), −1 against it; one per ``(cell_of, edge_of)`` pair,
        in the order :func:`_cells_from_cycles` lists them."""
        signs = []
        for c in self.cells:
            signs += [1.0 if a < b else -1.0 for a, b in zip(c, c[1:] + c[:1])]
        return torch.tensor(signs, device=self.edges.device)

    def to_plain(self, graph: int = 0) -> dict:
        """Graph ``graph`` of the batch as a plain, library-free record (the ``toponetx`` export
        target is not built): ``{"domain", "n_nodes", "edges": [[u, v], …] (accepted, u < v),
        "cells": [[…], …] (accepted 2-cells or triangles; hyperedges for a hypergraph),
        "B1", "B2"}`` with node ids local to that graph; ``B1 [n, E]`` and ``B2 [E, C]`` are the
        signed boundary matrices of the accepted cells as numpy arrays (cell and simplicial
        domains; ``B2`` is ``None`` for a hypergraph, ``B1`` its node-hyperedge incidence)."""
        g = self.to_networkx(graph)
        edges = sorted(tuple(sorted(e)) for e in g.edges)
        cells = g.graph["cells"]
        n = g.number_of_nodes()
        if self.domain not in _CELL_LIKE:
            H = np.zeros((n, len(cells)))
            for j, c in enumerate(cells):
                H[c, j] = 1.0
            return {
                "domain": self.domain,
                "n_nodes": n,
                "edges": [list(e) for e in edges],
                "cells": cells,
                "B1": H,
                "B2": None,
            }
        edge_id = {e: i for i, e in enumerate(edges)}
        B1 = np.zeros((n, len(edges)))
        for i, (a, b) in enumerate(edges):
            B1[a, i], B1[b, i] = -1.0, 1.0
        B2 = np.zeros((len(edges), len(cells)))
        for j, c in enumerate(cells):
            for a, b in zip(c, c[1:] + c[:1]):
                B2[edge_id[(min(a, b), max(a, b))], j] = 1.0 if a < b else -1.0
        return {
            "domain": self.domain,
            "n_nodes": n,
            "edges": [list(e) for e in edges],
            "cells": cells,
            "B1": B1,
            "B2": B2,
        }

    def to_networkx(self, graph: int = 0) -> nx.Graph:
        """The accepted 1-skeleton of graph ``graph`` of the batch, with its accepted 2-cells
        (or hyperedges) in ``G.graph["cells"]`` (node ids local to that graph)."""
        graph = V.check_int(graph, "graph", low=0)
        nodes = torch.nonzero(self.node_batch == graph).flatten()
        if nodes.numel() == 0:
            raise ValueError(f"graph: index {graph} is not in this batch")
        lo = int(nodes.min())
        g = nx.Graph()
        g.add_nodes_from(range(nodes.numel()))
        keep = (self.edge_w.detach() > 0.5) & (self.edge_batch == graph)
        g.add_edges_from((self.edges[keep] - lo).tolist())
        cells = []
        for c in self.accepted_cells():
            if c and lo <= c[0] < lo + nodes.numel():
                cells.append([v - lo for v in c])
        g.graph["cells"] = cells
        return g


# ------------------------------------------------------------------ helpers


def _cycle_edges(cycle: list[int], edge_id: dict) -> list[int]:
    return [edge_id[(min(a, b), max(a, b))] for a, b in zip(cycle, cycle[1:] + cycle[:1])]


def _cells_from_cycles(per_graph_cycles, edge_id, device=None):
    """Cells and their (cell, edge) incidence from per-graph node cycles (enumerated on the
    CPU); the index tensors are created on ``device``."""
    cells, cell_of, edge_of, cell_batch = [], [], [], []
    for gi, cycles in per_graph_cycles:
        for cyc in cycles:
            c = len(cells)
            cells.append(list(cyc))
            ids = _cycle_edges(list(cyc), edge_id)
            cell_of += [c] * len(ids)
            edge_of += ids
            cell_batch.append(gi)
    return (
        cells,
        torch.tensor(cell_of, dtype=torch.long, device=device),
        torch.tensor(edge_of, dtype=torch.long, device=device),
        torch.tensor(cell_batch, dtype=torch.long, device=device),
    )


def _basis_cycles(n: int, edges: np.ndarray, offset: int, max_len: int) -> list[list[int]]:
    g = nx.Graph()
    g.add_nodes_from(range(offset, offset + n))
    g.add_edges_from(edges.tolist())
    return [c for c in nx.cycle_basis(g) if 3 <= len(c) <= max_len]


def _triangles(n: int, edges: np.ndarray, offset: int) -> list[list[int]]:
    """Every triangle ``[a, b, c]`` (``a < b < c``, sorted) of a graph on nodes
    ``offset .. offset + n − 1``: for each edge ``(a, b)`` the common neighbours ``c > b``, read
    off a dense adjacency (networkx's clique search for graphs too large for it)."""
    if len(edges) == 0:
        return []
    if n > _DENSE_TRIANGLES_MAX:
        g = nx.Graph()
        g.add_nodes_from(range(offset, offset + n))
        g.add_edges_from(edges.tolist())
        tris = {tuple(sorted(c)) for c in nx.enumerate_all_cliques(g) if len(c) == 3}
        return [list(t) for t in sorted(tris)]
    loc = np.asarray(edges, dtype=np.int64) - offset
    lo, hi = loc.min(1), loc.max(1)
    adj = np.zeros((n, n), dtype=bool)
    adj[lo, hi] = adj[hi, lo] = True
    common = adj[lo] & adj[hi] & (np.arange(n)[None, :] > hi[:, None])
    e, c = np.nonzero(common)
    tris = np.unique(np.stack([lo[e], hi[e], c], 1), axis=0) + offset
    return tris.tolist()


def _knn_within_graph(z: torch.Tensor, batch: torch.Tensor, k: int) -> torch.Tensor:
    """Indices ``[N, k]`` of each node's ``k`` nearest neighbours (Euclidean) inside its own
    graph, nearest first; ``-1`` where the graph has fewer than ``k + 1`` nodes. Distances are
    computed per graph (padded blocks), never across graphs."""
    N, dev = z.shape[0], z.device
    out = torch.full((N, k), -1, dtype=torch.long, device=dev)
    if N == 0 or k == 0:
        return out
    counts = torch.bincount(batch)
    B, nmax = counts.shape[0], int(counts.max())
    starts = torch.cat([counts.new_zeros(1), counts.cumsum(0)[:-1]])
    local = torch.arange(N, device=dev) - starts[batch]
    pad = z.new_zeros(B, nmax, z.shape[1])
    pad[batch, local] = z
    d = torch.cdist(pad, pad)  # [B, nmax, nmax]
    valid = torch.arange(nmax, device=dev)[None, :] < counts[:, None]  # [B, nmax]
    d = d.masked_fill(~valid[:, None, :], float("inf"))
    d.diagonal(dim1=1, dim2=2).fill_(float("inf"))
    kk = min(k, nmax - 1)
    if kk <= 0:
        return out
    vals, idx = torch.topk(d, kk, dim=2, largest=False)  # [B, nmax, kk]
    glob = idx + starts[:, None, None]
    glob = glob.masked_fill(torch.isinf(vals), -1)
    out[:, :kk] = glob[batch, local]
    return out


def _hyperedges_from_sets(sets: list[tuple[int, list[int]]], n_nodes: int, node_batch):
    """Distinct hyperedges (at least two members) from (owner, members) sets; index tensors
    on ``node_batch``'s device."""
    he_of, node_of, he_batch = [], [], []
    owner_batch = node_batch.tolist()
    seen = set()
    for owner, members in sets:
        key = tuple(sorted(members))
        if len(key) < 2 or key in seen:
            continue
        seen.add(key)
        h = len(he_batch)
        he_of += [h] * len(key)
        node_of += list(key)
        he_batch.append(owner_batch[owner])
    dev = node_batch.device
    return (
        torch.tensor(he_of, dtype=torch.long, device=dev),
        torch.tensor(node_of, dtype=torch.long, device=dev),
        torch.tensor(he_batch, dtype=torch.long, device=dev),
    )


def _check_batch(batch) -> GraphBatch:
    if not isinstance(batch, GraphBatch):
        raise TypeError(f"batch: expected a GraphBatch (see collate), got {type(batch).__name__}")
    return batch


def lift_static(
    batch: GraphBatch, kind: str, *, domain: str = "cell", k: int = 5, max_cycle_len: int = 10
) -> LiftedComplex:
    """A fixed lifting of ``batch``.

    Cell domain (input edges are the 1-cells): ``"cycle"`` — a cycle basis of each graph (cycles
    longer than ``max_cycle_len`` dropped) as 2-cells; ``"clique"`` — every triangle inside a
    maximal clique of size ≥ 3; ``"none"`` — the 1-skeleton only.
    Simplicial domain (the 2-skeleton of the clique complex): ``"clique"`` — every triangle as
    a 2-simplex; ``"none"`` — the 1-skeleton only.
    Hypergraph domain: ``"khop"`` — one hyperedge per node, its closed 1-hop neighbourhood;
    ``"knn"`` — the node and its ``k`` nearest neighbours in *input feature* space (within its
    graph); ``"clique"`` — each maximal clique of size ≥ 3. Identical hyperedges are merged."""
    batch = _check_batch(batch)
    domain = V.check_choice(domain, "domain", DOMAINS)
    kind = V.check_choice(kind, "kind", STATIC_LIFTINGS[domain])
    k = V.check_int(k, "k", low=1)
    max_cycle_len = V.check_int(max_cycle_len, "max_cycle_len", low=3)
    edges = batch.edges
    E = edges.shape[0]
    lc = LiftedComplex(
        domain=domain,
        n_nodes=int(batch.x.shape[0]),
        node_batch=batch.batch,
        edges=edges,
        edge_w=torch.ones(E, device=edges.device),
        edge_batch=batch.edge_batch,
    )
    # cycles, cliques and neighbourhoods are enumerated on the CPU, index lists moved after
    dev = edges.device
    ptr = batch.ptr.tolist()
    e_np = edges.cpu().numpy()
    eb = batch.edge_batch.cpu().numpy()
    if domain in _CELL_LIKE:
        if kind == "none":
            per = []
        else:
            per = []
            for gi in range(batch.n_graphs):
                ge = e_np[eb == gi]
                n = ptr[gi + 1] - ptr[gi]
                cyc = (
                    _basis_cycles(n, ge, ptr[gi], max_cycle_len)
                    if kind == "cycle"
                    else _triangles(n, ge, ptr[gi])
                )
                per.append((gi, cyc))
        edge_id = {(a, b): i for i, (a, b) in enumerate(e_np.tolist())}
        lc.cells, lc.cell_of, lc.edge_of, lc.cell_batch = _cells_from_cycles(per, edge_id, dev)
        lc.cell_w = torch.ones(len(lc.cells), device=dev)
        return lc
    sets: list[tuple[int, list[int]]] = []
    N = lc.n_nodes
    if kind == "khop":
        nbrs = [[v] for v in range(N)]
        for a, b in e_np:
            nbrs[a].append(int(b))
            nbrs[b].append(int(a))
        sets = [(v, nb) for v, nb in enumerate(nbrs)]
    elif kind == "knn":
        x_in = torch.cat([g.x for g in batch.graphs])
        idx = _knn_within_graph(x_in, batch.batch.cpu(), k).tolist()
        sets = [(v, [v] + [int(u) for u in idx[v] if u >= 0]) for v in range(N)]
    else:
        for gi in range(batch.n_graphs):
            g = nx.Graph()
            g.add_nodes_from(range(ptr[gi], ptr[gi + 1]))
            g.add_edges_from(e_np[eb == gi].tolist())
            sets += [(c[0], sorted(c)) for c in nx.find_cliques(g) if len(c) >= 3]
    lc.he_of, lc.node_of, lc.he_batch = _hyperedges_from_sets(sets, N, batch.batch)
    lc.member_w = torch.ones(lc.he_of.shape[0], device=dev)
    return lc


def gumbel_size_mask(
    logits: torch.Tensor,
    k_min: int,
    *,
    tau: float = 1.0,
    hard: bool = True,
    stochastic: bool = True,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-node neighbourhood size ``k_v ∈ {k_min, …, k_min + K − 1}`` from ``logits [N, K]``.

    Returns ``(k, mask)``: ``mask [N, k_max]`` with ``mask[v, r−1] = Σ_{k ≥ r} onehot_v[k]`` —
    the membership weight of the rank-``r`` neighbour. With the straight-through Gumbel-softmax
    (``hard=True``) the forward mask is exactly 1 for ranks ``≤ k_v`` and 0 beyond, and the
    size logits get a gradient. ``stochastic=False`` takes the arg-max (evaluation)."""
    V.check_tensor(logits, "logits", ndim=2)
    k_min = V.check_int(k_min, "k_min", low=1)
    tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
    hard = V.check_bool(hard, "hard")
    stochastic = V.check_bool(stochastic, "stochastic")
    K = logits.shape[1]
    if stochastic:
        u = torch.rand(logits.shape, generator=generator, device=logits.device)
        u = u.clamp_(1e-10, 1 - 1e-10)
        g = -torch.log(-torch.log(u))
        soft = F.softmax((logits + g) / tau, dim=-1)
    else:
        soft = F.softmax(logits / tau, dim=-1)
    onehot = F.one_hot(soft.argmax(-1), K).to(soft.dtype)
    y = straight_through(soft, onehot) if hard else soft
    k_max = k_min + K - 1
    # weight of rank r (1-based) = P(k_v >= r); ranks 1..k_min always included
    ge = torch.flip(torch.cumsum(torch.flip(y, [1]), 1), [1])  # ge[:, j] = Σ_{i ≥ j} y_i
    mask = torch.cat([y.new_ones(y.shape[0], k_min - 1), ge], dim=1) if k_min > 1 else ge
    k = (onehot.argmax(-1) + k_min).long()
    return k, mask[:, :k_max]


class CellLifter(nn.Module):
    """∂lift for cell complexes, as the released code builds it: the input edges are always
    1-cells; with ``learn_edges`` each node also proposes edges to its ``knn_edges`` nearest
    neighbours in embedding space (within its graph, pairs not already edges), each accepted by
    an edge head; a cycle basis of the resulting 1-skeleton (cycles of length ≤
    ``max_cycle_len``) gives the candidate 2-cells, each accepted by a cell head. A head sees the
    mean embedding of the cell's nodes.

    ``cell_candidates="triangles"`` proposes every triangle of the resulting 1-skeleton instead
    of its basis cycles (the released node-classification code keeps only basis cycles of length
    3; on one large graph a cycle basis holds few of its triangles, so we enumerate them). Unlike
    a cycle basis, the triangle set does not depend on the order of the nodes."""

    def __init__(
        self,
        dim: int,
        *,
        sharpen: float = 10.0,
        stochastic: bool = True,
        learn_edges: bool = True,
        knn_edges: int = 3,
        max_cycle_len: int = 10,
        accept_bias: float = 0.0,
        cell_candidates: str = "cycles",
    ):
        super().__init__()
        self.stochastic = V.check_bool(stochastic, "stochastic")
        self.learn_edges = V.check_bool(learn_edges, "learn_edges")
        self.cell_candidates = V.check_choice(cell_candidates, "cell_candidates", CELL_CANDIDATES)
        self.knn_edges = V.check_int(knn_edges, "knn_edges", low=0)
        self.max_cycle_len = V.check_int(max_cycle_len, "max_cycle_len", low=3)
        self.edge_head = AcceptanceHead(dim, sharpen=sharpen, accept_bias=accept_bias)
        self.cell_head = AcceptanceHead(dim, sharpen=sharpen, accept_bias=accept_bias)
        self.force_p: float | None = None  # tests: fix every acceptance probability

    def _p(self, head, pooled):
        p = head(pooled)
        if self.force_p is not None:
            p = p * 0 + self.force_p
        return p

    def _candidate_edges(self, batch: GraphBatch, z: torch.Tensor) -> torch.Tensor:
        idx = _knn_within_graph(z.detach(), batch.batch, self.knn_edges)
        src = torch.arange(z.shape[0], device=z.device).repeat_interleave(idx.shape[1])
        dst = idx.flatten()
        ok = dst >= 0
        n = z.shape[0]
        lo = torch.minimum(src[ok], dst[ok])
        hi = torch.maximum(src[ok], dst[ok])
        codes = torch.unique(lo * n + hi)
        if batch.edges.numel():
            existing = batch.edges[:, 0] * n + batch.edges[:, 1]
            codes = codes[~torch.isin(codes, existing)]
        return torch.stack([codes // n, codes % n], 1)

    def forward(self, batch: GraphBatch, z: torch.Tensor, generator=None) -> LiftedComplex:
        batch = _check_batch(batch)
        stochastic = self.stochastic and self.training
        edges, edge_w = batch.edges, z.new_ones(batch.edges.shape[0])
        edge_p = None
        n_candidates = 0
        if self.learn_edges and self.knn_edges:
            extra = self._candidate_edges(batch, z)
            n_candidates = int(extra.shape[0])
            if n_candidates:
                edge_p = self._p(self.edge_head, 0.5 * (z[extra[:, 0]] + z[extra[:, 1]]))
                w = straight_through(edge_p, _decide(edge_p, stochastic, generator))
                edges = torch.cat([edges, extra])
                edge_w = torch.cat([edge_w, w])
        edge_batch = batch.batch[edges[:, 0]] if edges.numel() else batch.edge_batch
        lc = LiftedComplex(
            "cell", int(z.shape[0]), batch.batch, edges, edge_w, edge_batch, edge_p=edge_p
        )
        # cycles and triangles are enumerated on the CPU, their index lists moved after
        keep = (edge_w.detach() > 0.5).cpu().numpy()
        e_np = edges.cpu().numpy()
        eb = edge_batch.cpu().numpy()
        ptr = batch.ptr.tolist()
        per = []
        for gi in range(batch.n_graphs):
            sel = keep & (eb == gi)
            n_gi = ptr[gi + 1] - ptr[gi]
            if self.cell_candidates == "triangles":
                per.append((gi, _triangles(n_gi, e_np[sel], ptr[gi])))
            else:
                per.append((gi, _basis_cycles(n_gi, e_np[sel], ptr[gi], self.max_cycle_len)))
        edge_id = {(a, b): i for i, (a, b) in enumerate(e_np.tolist())}
        dev = z.device
        lc.cells, lc.cell_of, lc.edge_of, lc.cell_batch = _cells_from_cycles(per, edge_id, dev)
        C = len(lc.cells)
        if C:
            members = torch.tensor([v for c in lc.cells for v in c], dtype=torch.long, device=dev)
            owner = torch.repeat_interleave(
                torch.arange(C, device=dev),
                torch.tensor([len(c) for c in lc.cells], device=dev),
            )
            pooled = z.new_zeros(C, z.shape[1]).index_add_(0, owner, z[members])
            pooled = pooled / torch.bincount(owner, minlength=C)[:, None]
            cell_p = self._p(self.cell_head, pooled)
            lc.cell_p = cell_p
            lc.cell_w = straight_through(cell_p, _decide(cell_p, stochastic, generator))
        else:
            lc.cell_p = z.new_zeros(0)
            lc.cell_w = z.new_zeros(0)
        lc.stats = {
            "input_edges": int(batch.edges.shape[0]),
            "candidate_edges": n_candidates,
            "accepted_new_edges": int(keep.sum()) - int(batch.edges.shape[0]),
            "candidate_cells": C,
            "accepted_cells": int((lc.cell_w.detach() > 0.5).sum()),
        }
        return lc


class SimplicialLifter(CellLifter):
    """∂lift for simplicial complexes: the 1-simplices are built as in :class:`CellLifter` (input
    edges kept, k-NN edges in embedding space proposed and accepted by the edge head); the
    candidate 2-simplices are all triangles of the resulting 1-skeleton (the 2-simplices of its
    clique complex), each accepted by the cell head on its nodes' mean embedding. A triangle
    is a candidate only when its three edges are accepted, so the complex is closed under
    faces. Returns a :class:`LiftedComplex` with ``domain="simplicial"``."""

    def __init__(
        self,
        dim: int,
        *,
        sharpen: float = 10.0,
        stochastic: bool = True,
        learn_edges: bool = True,
        knn_edges: int = 3,
        accept_bias: float = 0.0,
    ):
        super().__init__(
            dim,
            sharpen=sharpen,
            stochastic=stochastic,
            learn_edges=learn_edges,
            knn_edges=knn_edges,
            accept_bias=accept_bias,
            cell_candidates="triangles",
        )

    def forward(self, batch: GraphBatch, z: torch.Tensor, generator=None) -> LiftedComplex:
        lc = super().forward(batch, z, generator)
        lc.domain = "simplicial"
        return lc


class HypergraphLifter(nn.Module):
    """∂lift for hypergraphs: per node ``v`` a size ``k_v ∈ [k_min, k_max]`` (straight-through
    Gumbel-softmax over an MLP of ``z_v``), the candidate hyperedge ``{v} ∪ k_v`` nearest
    neighbours of ``v`` in embedding space (within its graph) with membership weights from
    :func:`gumbel_size_mask`, accepted with a head on the weighted mean embedding; identical
    vertex sets are merged (the most probable copy is kept)."""

    def __init__(
        self,
        dim: int,
        *,
        k_range: tuple[int, int] = (2, 10),
        sharpen: float = 10.0,
        stochastic: bool = True,
        tau: float = 1.0,
        accept_bias: float = 0.0,
    ):
        super().__init__()
        if not isinstance(k_range, (tuple, list)) or len(k_range) != 2:
            raise ValueError(f"k_range: expected a pair (k_min, k_max), got {k_range!r}")
        k_min = V.check_int(k_range[0], "k_range[0]", low=1)
        k_max = V.check_int(k_range[1], "k_range[1]", low=k_min)
        self.k_min, self.k_max = k_min, k_max
        self.stochastic = V.check_bool(stochastic, "stochastic")
        self.tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        self.k_mlp = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, k_max - k_min + 1))
        self.head = AcceptanceHead(dim, sharpen=sharpen, accept_bias=accept_bias)

    def forward(self, batch: GraphBatch, z: torch.Tensor, generator=None) -> LiftedComplex:
        batch = _check_batch(batch)
        stochastic = self.stochastic and self.training
        N = z.shape[0]
        k, mask = gumbel_size_mask(
            self.k_mlp(z), self.k_min, tau=self.tau, stochastic=stochastic, generator=generator
        )
        nbr = _knn_within_graph(z.detach(), batch.batch, self.k_max)  # [N, k_max]
        valid = nbr >= 0
        m = mask * valid
        dev = z.device
        owner = torch.arange(N, device=dev)
        # membership: the node itself (weight 1) and its ranked neighbours (weight m)
        rows = torch.cat([owner, owner.repeat_interleave(self.k_max)])
        cols = torch.cat([owner, nbr.clamp_min(0).flatten()])
        w = torch.cat([z.new_ones(N), m.flatten()])
        pooled = z.new_zeros(N, z.shape[1]).index_add_(0, rows, w[:, None] * z[cols])
        pooled = pooled / z.new_zeros(N).index_add_(0, rows, w)[:, None]
        p = self.head(pooled)
        # merge identical vertex sets, keeping the most probable copy
        hard_sets = {}
        order = torch.argsort(p.detach(), descending=True).tolist()
        nbr_l, in_l = nbr.tolist(), (m.detach() > 0.5).tolist()  # one transfer, not one per node
        keep_owner = []
        for v in order:
            members = (v,) + tuple(sorted(u for u, mm in zip(nbr_l[v], in_l[v]) if mm))
            key = tuple(sorted(members))
            if key in hard_sets:
                continue
            hard_sets[key] = v
            keep_owner.append(v)
        keep_owner.sort()
        keep = torch.tensor(keep_owner, dtype=torch.long, device=dev)
        remap = torch.full((N,), -1, dtype=torch.long, device=dev)
        remap[keep] = torch.arange(keep.numel(), device=dev)
        b = straight_through(p, _decide(p, stochastic, generator))
        sel = (remap[rows] >= 0) & (w.detach() > 0.5)
        he_of = remap[rows][sel]
        lc = LiftedComplex(
            "hypergraph",
            N,
            batch.batch,
            batch.edges,
            z.new_ones(batch.edges.shape[0]),
            batch.edge_batch,
        )
        lc.he_of = he_of
        lc.node_of = cols[sel]
        lc.member_w = w[sel] * b[rows[sel]]
        lc.he_batch = batch.batch[keep]
        lc.he_p = p[keep]
        lc.k = k
        lc.stats = {
            "candidate_hyperedges": int(keep.numel()),
            "accepted_hyperedges": int((b.detach()[keep] > 0.5).sum()),
            "mean_k": float(k.float().mean()),
        }
        return lc
