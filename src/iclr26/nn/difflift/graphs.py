"""Graphs as the room uses them, batching, random-walk structural encodings and the two
offline sets of the claim checks (two graph-classification sets and one heterophilous
node-classification graph).

A user's graph is a ``networkx.Graph`` whose nodes carry a feature vector in the node attribute
``x`` (or a :class:`GraphData` built directly). :func:`collate` concatenates graphs into one
:class:`GraphBatch` the way ``torch_geometric.data.Batch`` does (node offsets, a ``batch``
vector); a test checks the two agree where torch-geometric imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch

from iclr26 import validation as V

__all__ = [
    "GraphData",
    "GraphBatch",
    "from_networkx",
    "from_pyg",
    "collate",
    "rwse",
    "make_ring_parity",
    "make_clique_vote",
    "make_cell_heterophily",
    "karate_club",
]


def rwse(edges: np.ndarray, n: int, steps: int = 8) -> np.ndarray:
    """Random-walk structural encoding: ``diag(P^t)`` for ``t = 1..steps`` with ``P = D^-1 A``
    (an isolated node has return probability 0), shape ``(n, steps)``."""
    steps = V.check_int(steps, "steps", low=0)
    A = np.zeros((n, n))
    if len(edges):
        A[edges[:, 0], edges[:, 1]] = 1.0
        A[edges[:, 1], edges[:, 0]] = 1.0
    deg = A.sum(1, keepdims=True)
    P = np.divide(A, deg, out=np.zeros_like(A), where=deg > 0)
    out = np.zeros((n, steps))
    M = np.eye(n)
    for t in range(steps):
        M = M @ P
        out[:, t] = np.diag(M)
    return out


@dataclass
class GraphData:
    """One graph: node features ``x`` ``[n, f]``, undirected edges ``edges`` ``[m, 2]`` (each
    pair once, ``u < v``), an optional graph label ``y`` and the RWSE ``pe`` ``[n, steps]``
    computed at construction. ``meta`` keeps generator ground truth (e.g. planted rings)."""

    x: torch.Tensor
    edges: torch.Tensor
    y: int | None = None
    pe: torch.Tensor | None = None
    meta: dict = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    def features(self) -> torch.Tensor:
        """``x`` with the RWSE appended (the embedder's input)."""
        return self.x if self.pe is None else torch.cat([self.x, self.pe], dim=1)

    def to_networkx(self) -> nx.Graph:
        g = nx.Graph()
        for i in range(self.n_nodes):
            g.add_node(i, x=self.x[i].tolist())
        g.add_edges_from(self.edges.tolist())
        if self.y is not None:
            g.graph["y"] = self.y
        return g


def _clean_edges(edges, n: int, name: str) -> np.ndarray:
    if edges is None:
        raise TypeError(f"{name} must be an array of node pairs, got None")
    if np.asarray(edges).size == 0:  # a graph with no edges: allowed (no 1-cells, no cycles)
        return np.zeros((0, 2), dtype=np.int64)
    e = V.check_array(edges, name, ndim=2)
    if e.shape[1] != 2:
        raise ValueError(f"{name}: expected shape (m, 2), got {e.shape}")
    if not np.all(np.equal(np.mod(e, 1), 0)):
        raise ValueError(f"{name}: node ids must be integers")
    e = e.astype(np.int64)
    if e.min() < 0 or e.max() >= n:
        raise ValueError(f"{name}: node ids must lie in [0, {n}), got [{e.min()}, {e.max()}]")
    loops = int((e[:, 0] == e[:, 1]).sum())
    if loops:
        raise ValueError(
            f"{name}: {loops} self-loop(s); a self-loop is not a 1-cell of a cell complex or a "
            "hyperedge member twice; remove them first (e.g. G.remove_edges_from(nx.selfloop_edges(G)))"
        )
    e = np.sort(e, axis=1)
    return np.unique(e, axis=0)


def make_graph(x, edges, y=None, *, rwse_steps: int = 8, meta: dict | None = None) -> GraphData:
    """A validated :class:`GraphData`: finite 2-D ``x``, integer ``edges`` inside ``[0, n)``
    (duplicates and the order of a pair are merged; self-loops are refused)."""
    x = V.check_array(x, "x", ndim=2, dtype=np.float32)
    n = x.shape[0]
    e = _clean_edges(edges, n, "edges")
    pe = torch.as_tensor(rwse(e, n, rwse_steps), dtype=torch.float32)
    if y is not None:
        y = V.check_int(y, "y", low=0)
    return GraphData(
        x=torch.as_tensor(x), edges=torch.as_tensor(e), y=y, pe=pe, meta=dict(meta or {})
    )


def from_networkx(graph, feature: str = "x", label: str = "y", *, rwse_steps: int = 8) -> GraphData:
    """A ``networkx.Graph`` with node attribute ``feature`` (a vector per node; nodes are taken
    in ``graph.nodes`` order) and an optional graph attribute ``label``."""
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph: expected a networkx.Graph, got {type(graph).__name__}")
    if isinstance(graph, (nx.DiGraph, nx.MultiGraph)):
        raise TypeError("graph: expected an undirected simple nx.Graph (no DiGraph/MultiGraph)")
    nodes = list(graph.nodes)
    if not nodes:
        raise ValueError("graph: has no nodes")
    missing = [v for v in nodes if feature not in graph.nodes[v]]
    if missing:
        raise ValueError(f"graph: node {missing[0]!r} has no {feature!r} attribute")
    index = {v: i for i, v in enumerate(nodes)}
    rows = [np.atleast_1d(np.asarray(graph.nodes[v][feature], dtype=np.float64)) for v in nodes]
    if len({r.shape for r in rows}) != 1:
        raise ValueError(f"graph: node attribute {feature!r} has different lengths across nodes")
    x = np.stack(rows)
    try:
        x = V.check_array(x, "graph node features", ndim=2, dtype=np.float32)
    except ValueError as exc:
        raise ValueError(f"graph: {exc}") from None
    edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
    y = graph.graph.get(label)
    return make_graph(x, edges, y, rwse_steps=rwse_steps)


def _is_pyg(obj) -> bool:
    """A ``torch_geometric.data.Data`` / ``Batch`` (checked by its module; torch-geometric is
    optional, so it is never imported here)."""
    pyg = any(c.__module__.startswith("torch_geometric.") for c in type(obj).__mro__)
    return pyg and hasattr(obj, "edge_index")


def from_pyg(data, *, rwse_steps: int = 8) -> GraphData:
    """A ``torch_geometric.data.Data`` graph (node features ``x`` ``[n, f]``, ``edge_index``
    ``[2, E]`` in one or both directions, an optional graph label ``y`` of one value) as a
    :class:`GraphData`; the pairs are merged as by :func:`make_graph` (self-loops refused) and
    the RWSE is computed here, so ``collate`` of converted graphs equals ``collate`` of the
    same graphs built directly."""
    if not _is_pyg(data) or hasattr(data, "to_data_list"):
        raise TypeError(
            f"data: expected one torch_geometric.data.Data graph, got {type(data).__name__} "
            "(collate accepts a whole Batch)"
        )
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError("data: has no node features x")
    x = V.check_tensor(x, "data.x", ndim=2)
    ei = data.edge_index
    if ei is None:
        ei = torch.zeros((2, 0), dtype=torch.long)
    ei = V.check_tensor(ei, "data.edge_index", ndim=2, integer=True, nonempty=False)
    if ei.shape[0] != 2:
        raise ValueError(f"data.edge_index: expected shape (2, E), got {tuple(ei.shape)}")
    y = getattr(data, "y", None)
    if y is not None:
        y = torch.as_tensor(y)
        if y.numel() != 1:
            raise ValueError(
                f"data.y: expected one graph label, got {y.numel()} values (node labels are "
                "passed to train_node_classifier separately)"
            )
        y = int(y.reshape(-1)[0])
    return make_graph(x.detach().cpu().numpy(), ei.t().cpu().numpy(), y, rwse_steps=rwse_steps)


def _as_graph(g, name: str = "graphs") -> GraphData:
    if isinstance(g, GraphData):
        return g
    if isinstance(g, nx.Graph):
        return from_networkx(g)
    if _is_pyg(g) and not hasattr(g, "to_data_list"):
        return from_pyg(g)
    raise TypeError(
        f"{name}: expected GraphData, networkx.Graph or torch_geometric Data items, got "
        f"{type(g).__name__}"
    )


def _check_graph_record(g: GraphData, i: int) -> None:
    """Shape and dtype checks of a GraphData built directly (make_graph's are the full ones)."""
    name = f"graphs[{i}]"
    V.check_tensor(g.x, f"{name}.x", ndim=2, floating=True)
    e = V.check_tensor(g.edges, f"{name}.edges", ndim=2, integer=True, nonempty=False)
    if e.shape[1] != 2:
        raise ValueError(f"{name}.edges: expected shape (m, 2), got {tuple(e.shape)}")
    if g.pe is not None and (g.pe.dim() != 2 or g.pe.shape[0] != g.n_nodes):
        raise ValueError(f"{name}.pe: expected {g.n_nodes} rows, got shape {tuple(g.pe.shape)}")


def _check_batch_edges(edges, edge_batch, batch, n_nodes: int) -> None:
    """Every edge once, ``u < v`` (so no self-loops), both ends inside the edge's own graph:
    what the liftings assume of a batch (one vectorised pass over the whole batch)."""
    if not edges.numel():
        return
    bad = (edges[:, 0] >= edges[:, 1]) | (edges[:, 0] < 0) | (edges[:, 1] >= n_nodes)
    if not bad.any():
        bad = (batch[edges[:, 0]] != edge_batch) | (batch[edges[:, 1]] != edge_batch)
    if bad.any():
        j = int(torch.nonzero(bad)[0, 0])
        u, v = edges[j].tolist()
        gi = int(edge_batch[j])
        kind = "a self-loop" if u == v else "not a pair u < v of nodes of this graph"
        raise ValueError(
            f"graphs[{gi}].edges: an edge is {kind} (global ids {u}, {v}); build graphs with "
            "make_graph / from_networkx, which merge pairs and refuse self-loops"
        )
    codes = edges[:, 0] * n_nodes + edges[:, 1]
    if torch.unique(codes).numel() != codes.numel():
        raise ValueError(
            "graphs: an edge is listed twice; build graphs with make_graph / from_networkx, "
            "which merge duplicate pairs"
        )


@dataclass
class GraphBatch:
    """Graphs concatenated: ``x`` ``[N, f]`` (features with RWSE), ``edges`` ``[M, 2]`` with
    node offsets applied, ``batch`` ``[N]`` (graph of each node), ``edge_batch`` ``[M]``,
    ``ptr`` (node offsets, length ``n_graphs + 1``), labels ``y`` (or ``None``) and the graphs."""

    x: torch.Tensor
    edges: torch.Tensor
    batch: torch.Tensor
    edge_batch: torch.Tensor
    ptr: torch.Tensor
    y: torch.Tensor | None
    graphs: list[GraphData]

    @property
    def n_graphs(self) -> int:
        return len(self.graphs)

    def to(self, device) -> GraphBatch:
        mv = lambda t: None if t is None else t.to(device)  # noqa: E731
        return GraphBatch(
            mv(self.x),
            mv(self.edges),
            mv(self.batch),
            mv(self.edge_batch),
            mv(self.ptr),
            mv(self.y),
            self.graphs,
        )

    def edge_index(self) -> torch.Tensor:
        """Both directions, ``[2, 2M]``, as torch-geometric stores undirected graphs."""
        e = self.edges
        return torch.cat([e, e.flip(1)], dim=0).t().contiguous()


def collate(graphs, device=None) -> GraphBatch:
    """Concatenate graphs (``GraphData``, networkx graphs or torch-geometric ``Data``; or a
    whole ``torch_geometric.data.Batch``) into a :class:`GraphBatch`. Graphs built directly
    as ``GraphData`` are checked here: finite features, integer edge pairs ``u < v`` inside
    the graph, each once (so no self-loops). The batch is built and checked on the CPU and
    moved to ``device`` when one is given (a name or ``torch.device``)."""
    if device is not None:
        if isinstance(device, bool) or not isinstance(device, (str, torch.device)):
            raise TypeError(f"device: expected a device name or torch.device, got {device!r}")
        try:
            device = torch.device(device)
        except RuntimeError as err:
            raise ValueError(f"device: not a torch device name, got {device!r}") from err
    if _is_pyg(graphs) and hasattr(graphs, "to_data_list"):
        graphs = graphs.to_data_list()
    if isinstance(graphs, (GraphData, nx.Graph)) or _is_pyg(graphs):
        graphs = [graphs]
    if isinstance(graphs, (str, bytes)) or not hasattr(graphs, "__iter__"):
        raise TypeError(f"graphs: expected a list of graphs, got {type(graphs).__name__}")
    graphs = [_as_graph(g) for g in list(graphs)]
    if not graphs:
        raise ValueError("graphs: empty; need at least one graph")
    for i, g in enumerate(graphs):
        _check_graph_record(g, i)
    dims = {g.features().shape[1] for g in graphs}
    if len(dims) != 1:
        raise ValueError(f"graphs: node feature widths differ across graphs: {sorted(dims)}")
    sizes = torch.tensor([g.n_nodes for g in graphs])
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), sizes.cumsum(0)])
    x = torch.cat([g.features() for g in graphs])
    edges = torch.cat([g.edges + ptr[i] for i, g in enumerate(graphs)]).reshape(-1, 2)
    batch = torch.repeat_interleave(torch.arange(len(graphs)), sizes)
    edge_batch = torch.repeat_interleave(
        torch.arange(len(graphs)), torch.tensor([g.n_edges for g in graphs])
    )
    V.check_tensor(x, "graphs: node features")
    _check_batch_edges(edges, edge_batch, batch, int(ptr[-1]))
    ys = [g.y for g in graphs]
    y = None if any(v is None for v in ys) else torch.tensor(ys, dtype=torch.long)
    out = GraphBatch(x, edges, batch, edge_batch, ptr, y, graphs)
    return out if device is None or device.type == "cpu" else out.to(device)


# ------------------------------------------------------------------ offline generators


def _ring_parity_graph(rng: np.random.Generator, feat_dim: int):
    n_tree = int(rng.integers(15, 26))
    g = (
        nx.random_labeled_tree(n_tree, seed=int(rng.integers(2**31)))
        if hasattr(nx, "random_labeled_tree")
        else nx.random_tree(n_tree, seed=int(rng.integers(2**31)))
    )
    g = nx.Graph(g)
    n_rings = int(rng.integers(2, 6))
    while True:
        sizes = rng.choice([5, 6], size=n_rings)
        if (sizes == 6).sum() != (sizes == 5).sum():
            break
    rings = []
    nxt = g.number_of_nodes()
    for s in sizes:
        anchor = int(rng.integers(0, nxt))
        ring = [anchor] + list(range(nxt, nxt + int(s) - 1))
        nxt += int(s) - 1
        for a, b in zip(ring, ring[1:] + ring[:1]):
            g.add_edge(a, b)
        rings.append(ring)
    n_chords = int(rng.integers(0, 7))
    chords = []
    tries = 0
    while len(chords) < n_chords and tries < 200:
        tries += 1
        a, b = (int(v) for v in rng.integers(0, nxt, size=2))
        if a == b or g.has_edge(a, b):
            continue
        g.add_edge(a, b)
        chords.append((min(a, b), max(a, b)))
    x = rng.normal(size=(nxt, feat_dim))
    label = int((sizes == 6).sum() > (sizes == 5).sum())
    edges = np.array(sorted((min(u, v), max(u, v)) for u, v in g.edges), dtype=np.int64)
    return x, edges, label, {"rings": rings, "chords": chords}


def make_ring_parity(n_graphs: int, seed: int = 0, *, feat_dim: int = 4, rwse_steps: int = 8):
    """Molecule-like graphs where cycles decide the label (the cell-domain check).

    A random tree of 15–25 nodes with 2–5 planted rings of size 5 or 6 fused onto it (each ring
    shares one node with what was built before) plus 0–6 random chords that create spurious
    cycles of other lengths; node features are Gaussian noise. Label 1 iff the planted rings
    have more hexagons than pentagons (ties are redrawn). ``meta["rings"]`` and
    ``meta["chords"]`` keep the ground truth."""
    n_graphs = V.check_int(n_graphs, "n_graphs", low=1)
    seed = V.check_int(seed, "seed", low=0)
    feat_dim = V.check_int(feat_dim, "feat_dim", low=1)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_graphs):
        x, e, y, meta = _ring_parity_graph(rng, feat_dim)
        out.append(make_graph(x, e, y, rwse_steps=rwse_steps, meta=meta))
    return out


def make_clique_vote(
    n_graphs: int,
    seed: int = 0,
    *,
    n_background: int = 30,
    p: float = 0.08,
    noise: float = 0.5,
    rwse_steps: int = 8,
):
    """Graphs where planted cliques decide the label (the hypergraph-domain check).

    An Erdős–Rényi background (``n_background`` nodes, edge probability ``p``) with 3 planted
    4- or 5-cliques on disjoint background nodes; clique members carry a team feature
    (+1 for team A, −1 for team B, plus Gaussian ``noise``) in feature 0 and background nodes a
    random ±1; label = team of the majority of the planted cliques. ``meta["cliques"]`` and
    ``meta["teams"]`` keep the ground truth. Features: ``[team ± noise, 3 × N(0, 1)]``."""
    n_graphs = V.check_int(n_graphs, "n_graphs", low=1)
    seed = V.check_int(seed, "seed", low=0)
    n_background = V.check_int(n_background, "n_background", low=15)
    p = V.check_probability(p, "p")
    noise = V.check_scalar(noise, "noise", low=0.0)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_graphs):
        g = nx.gnp_random_graph(n_background, p, seed=int(rng.integers(2**31)))
        sizes = rng.choice([4, 5], size=3)
        members = rng.permutation(n_background)
        cliques, start = [], 0
        for s in sizes:
            c = sorted(int(v) for v in members[start : start + int(s)])
            start += int(s)
            cliques.append(c)
            g.add_edges_from((a, b) for i, a in enumerate(c) for b in c[i + 1 :])
        teams = rng.choice([1.0, -1.0], size=3)
        team = rng.choice([1.0, -1.0], size=n_background)
        for c, t in zip(cliques, teams):
            team[c] = t
        x = np.column_stack(
            [team + noise * rng.normal(size=n_background), rng.normal(size=(n_background, 3))]
        )
        label = int((teams > 0).sum() >= 2)
        edges = np.array(sorted((min(u, v), max(u, v)) for u, v in g.edges), dtype=np.int64)
        out.append(
            make_graph(
                x,
                edges,
                label,
                rwse_steps=rwse_steps,
                meta={"cliques": cliques, "teams": teams.tolist()},
            )
        )
    return out


def _background_edges(rng, y, n_edges: int, homophily: float) -> np.ndarray:
    """``n_edges`` distinct random pairs; each is within one class with probability
    ``homophily`` and between two different classes otherwise."""
    n = len(y)
    classes = [np.flatnonzero(y == c) for c in range(int(y.max()) + 1)]
    others = [np.flatnonzero(y != c) for c in range(len(classes))]
    chosen: set[tuple[int, int]] = set()
    for _ in range(50):
        need = n_edges - len(chosen)
        if need <= 0:
            break
        m = 2 * need + 8
        u = rng.integers(0, n, size=m)
        same = rng.random(m) < homophily
        v = np.empty(m, dtype=np.int64)
        for i in range(m):  # a draw per candidate pair; the sets are small
            pool = classes[y[u[i]]] if same[i] else others[y[u[i]]]
            v[i] = pool[rng.integers(0, len(pool))]
        for a, b in zip(u.tolist(), v.tolist()):
            if a != b and len(chosen) < n_edges:
                chosen.add((min(a, b), max(a, b)))
    return np.array(sorted(chosen), dtype=np.int64).reshape(-1, 2)


def make_cell_heterophily(
    n_nodes: int = 300,
    n_classes: int = 3,
    seed: int = 0,
    *,
    cell_size: int = 3,
    degree: float = 6.0,
    homophily: float = 0.0,
    signal: float = 1.0,
    feat_dim: int = 8,
    rwse_steps: int = 8,
) -> tuple[GraphData, np.ndarray]:
    """One heterophilous node-classification graph in which planted cells decide the labels
    (the node-level check; offline stand-in for Texas/Wisconsin-like graphs).

    Nodes get balanced labels in ``n_classes`` classes. The nodes of each class are split into
    groups of ``cell_size`` wired as a cycle (a triangle for 3): the planted cells, whose members
    all share one label. Background edges (``degree · n / 2`` of them, mean background degree
    ``degree``) join nodes of the same class with probability ``homophily`` and of different
    classes otherwise, so most of a node's neighbours carry another label, and random triangles
    mixing classes appear among them. Features: ``signal · onehot(label)`` in the first
    ``n_classes`` of ``feat_dim`` dimensions plus unit Gaussian noise in all of them, weak for one
    node and stronger averaged over a cell. Returns ``(graph, labels)``; ``graph.meta`` keeps
    ``"cells"`` (node lists) and ``"y"``."""
    n_nodes = V.check_int(n_nodes, "n_nodes", low=6)
    n_classes = V.check_int(n_classes, "n_classes", low=2)
    seed = V.check_int(seed, "seed", low=0)
    cell_size = V.check_int(cell_size, "cell_size", low=3)
    degree = V.check_scalar(degree, "degree", low=0.0)
    homophily = V.check_probability(homophily, "homophily")
    signal = V.check_scalar(signal, "signal", low=0.0)
    feat_dim = V.check_int(feat_dim, "feat_dim", low=n_classes)
    if n_nodes < n_classes * cell_size:
        raise ValueError(
            f"n_nodes: need at least n_classes * cell_size = {n_classes * cell_size} nodes, "
            f"got {n_nodes}"
        )
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n_nodes) % n_classes)
    cells: list[list[int]] = []
    planted: set[tuple[int, int]] = set()
    for c in range(n_classes):
        members = rng.permutation(np.flatnonzero(y == c))
        for s in range(0, len(members) - cell_size + 1, cell_size):
            cell = [int(v) for v in members[s : s + cell_size]]
            cells.append(cell)
            for a, b in zip(cell, cell[1:] + cell[:1]):
                planted.add((min(a, b), max(a, b)))
    n_bg = int(round(degree * n_nodes / 2))
    bg = _background_edges(rng, y, n_bg, homophily) if n_bg else np.zeros((0, 2), np.int64)
    edges = np.array(sorted(planted | {tuple(e) for e in bg.tolist()}), dtype=np.int64)
    x = rng.normal(size=(n_nodes, feat_dim))
    x[np.arange(n_nodes), y] += signal
    graph = make_graph(x, edges, rwse_steps=rwse_steps, meta={"cells": cells, "y": y.tolist()})
    return graph, y


def karate_club(*, rwse_steps: int = 8) -> tuple[GraphData, np.ndarray]:
    """Zachary's karate club (``networkx.karate_club_graph``, 34 members, 78 ties) for node
    classification: features are one-hot member ids (the usual choice when nodes carry none),
    labels 0 for "Mr. Hi"'s faction and 1 for the "Officer"'s."""
    g = nx.karate_club_graph()
    nodes = sorted(g.nodes)
    y = np.array([int(g.nodes[v]["club"] != "Mr. Hi") for v in nodes])
    edges = np.array([(min(u, v), max(u, v)) for u, v in g.edges], dtype=np.int64)
    return make_graph(np.eye(len(nodes)), edges, rwse_steps=rwse_steps, meta={"y": y.tolist()}), y
