"""DCM, the Differentiable Cell Complex Module (Battiloro, Spinelli et al., ICLR 2024): the node-
level baseline that ∂lift is compared with.

DCM infers the whole complex from node embeddings in two steps and then runs message passing on
it at node and edge level:

1. α-DGM (latent graph): a GCN on the input graph embeds the (encoded) node features; each row
   of negative pairwise distances is standardised with a learnable scale (a scalar ``gamma`` and
   shift) and mapped to a sparse distribution by 1.5-entmax; an edge joins ``i`` and ``j`` when
   either direction has non-zero probability.
2. PIM (polygons): the candidate 2-cells are the induced (chordless) cycles of length
   ``3 … max_polygon`` of the inferred graph; each gets a score from the embeddings of its
   boundary edges (an edge's embedding is the sum of its endpoints'), the scores of all
   candidates are standardised the same way and 1.5-entmax over them keeps a sparse subset.
3. Cell complex network: a GCN on the inferred graph for the nodes, and for the edges a CW layer
   (a linear term plus GCN-normalised messages over the lower adjacency, edges sharing a node,
   and the upper adjacency, edges on a common accepted polygon); each node's output is its own
   features ‖ the sum of its edges', then an MLP.

The discrete graph and polygon choices are trained with the graph loss of the differentiable
graph module (Kazi et al.): per training node, the log-probability of its inferred edges (and of
the accepted polygons through it) weighted by ``running accuracy - correct``, so that choices
around correctly classified nodes become more likely. :func:`train_node_classifier` adds this
loss through :meth:`DCM.auxiliary_loss`."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .models import _GraphModel

__all__ = ["entmax15", "induced_cycles", "DCMComplex", "DCM"]


def entmax15(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """1.5-entmax along ``dim`` (Peters, Niculae and Martins, 2019): ``p = [z/2 - τ]_+²`` with
    the threshold ``τ`` that makes ``p`` sum to one. Sparse (exact zeros) and differentiable
    almost everywhere; computed exactly by sorting."""
    V.check_tensor(scores, "scores", floating=True, min_ndim=1)
    z = scores.transpose(dim, -1) / 2.0
    z = z - z.max(dim=-1, keepdim=True).values.detach()
    zs, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    with torch.no_grad():  # the support size: the largest k whose threshold is below z_(k)
        mean = zs.cumsum(-1) / k
        delta = (1.0 - k * ((zs * zs).cumsum(-1) / k - mean * mean)) / k
        tau = mean - delta.clamp_min(0.0).sqrt()
        support = (tau <= zs).sum(dim=-1, keepdim=True).clamp_min(1)
    # the threshold again, differentiably, from the support alone (a square root of a positive
    # number: no 0 · inf in the backward pass from the thresholds of other support sizes)
    inside = (k < support + 0.5).to(z.dtype)
    ks = support.to(z.dtype)
    mean = (zs * inside).sum(-1, keepdim=True) / ks
    mean_sq = (zs * zs * inside).sum(-1, keepdim=True) / ks
    delta = (1.0 - ks * (mean_sq - mean * mean)) / ks
    tau_star = mean - delta.clamp_min(1e-12).sqrt()
    p = (z - tau_star).clamp_min(0.0) ** 2
    return p.transpose(dim, -1)


def induced_cycles(edges, n_nodes: int, max_len: int = 4) -> list[list[int]]:
    """The induced (chordless) cycles of length ``3 … max_len`` of an undirected graph given as
    an ``[E, 2]`` edge list over ``n_nodes`` nodes, each as its node sequence around the cycle
    starting at its smallest node; sorted, so the result does not depend on the edge order."""
    n_nodes = V.check_int(n_nodes, "n_nodes", low=0)
    max_len = V.check_int(max_len, "max_len", low=3)
    if isinstance(edges, torch.Tensor):
        edges = edges.detach().cpu().numpy()
    e = np.asarray(edges)
    if e.size:
        e = V.check_array(e, "edges", shape=(None, 2), dtype=np.int64, low=0, high=n_nodes - 1)
    e = e.reshape(-1, 2).tolist()
    g = nx.Graph()
    g.add_nodes_from(range(n_nodes))
    g.add_edges_from((a, b) for a, b in e if a != b)
    out = []
    for cyc in nx.chordless_cycles(g, length_bound=max_len):
        if len(cyc) < 3:
            continue
        i = cyc.index(min(cyc))
        cyc = cyc[i:] + cyc[:i]
        if cyc[-1] < cyc[1]:  # one orientation per cycle
            cyc = [cyc[0]] + cyc[1:][::-1]
        out.append(cyc)
    return sorted(out, key=lambda c: (len(c), c))


@dataclass
class DCMComplex:
    """The complex DCM inferred for one forward pass: ``edges`` ``[E, 2]`` (``i < j``) with
    their probability ``edge_prob`` (the mean of the two directions' entmax probabilities),
    every candidate polygon in ``candidates`` with ``polygon_prob`` (entmax over the candidates;
    accepted where non-zero), and per node the log-probability of its edges and of the accepted
    polygons through it, which the graph loss uses."""

    edges: torch.Tensor
    edge_prob: torch.Tensor
    candidates: list[list[int]]
    polygon_prob: torch.Tensor
    node_edge_logprob: torch.Tensor
    node_polygon_logprob: torch.Tensor
    stats: dict = field(default_factory=dict)

    def accepted_polygons(self) -> list[list[int]]:
        keep = (self.polygon_prob.detach() > 0).tolist()
        return [c for c, k in zip(self.candidates, keep) if k]


class _ScaleShift(nn.Module):
    """Standardise the last axis (over the entries in ``valid``), then ``gamma · z + beta`` with
    scalar learnable ``gamma`` and ``beta`` (the released code's LayerNorm of the scores)."""

    def __init__(self, gamma: float):
        super().__init__()
        self.gamma = nn.Parameter(torch.tensor(float(gamma)))
        self.beta = nn.Parameter(torch.tensor(0.0))

    def forward(self, s: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        cnt = valid.sum(-1, keepdim=True).clamp_min(1)
        mean = (s * valid).sum(-1, keepdim=True) / cnt
        var = (((s - mean) * valid) ** 2).sum(-1, keepdim=True) / (cnt - 1).clamp_min(1)
        # (var + eps)^1/2: finite gradient when every score of a row is equal
        std = torch.where(cnt > 1, (var + 1e-12).sqrt(), torch.ones_like(var))
        return self.gamma * (s - mean) / (std + 1e-6) + self.beta


def _gcn_weights(src: torch.Tensor, dst: torch.Tensor, n: int) -> torch.Tensor:
    """Symmetric GCN normalisation ``d_src^-1/2 d_dst^-1/2`` of a directed message list."""
    dev = dst.device
    deg = torch.zeros(n, device=dev).index_add_(0, dst, torch.ones(dst.shape[0], device=dev))
    dinv = deg.pow(-0.5).masked_fill(deg == 0, 0.0)
    return dinv[src] * dinv[dst]


def _both_ways(pairs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if pairs.numel() == 0:
        empty = torch.zeros(0, dtype=torch.long, device=pairs.device)
        return empty, empty
    return torch.cat([pairs[:, 0], pairs[:, 1]]), torch.cat([pairs[:, 1], pairs[:, 0]])


class _GCNLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int, self_loops: bool = True):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_out))
        self.self_loops = self_loops

    def forward(self, x: torch.Tensor, pairs: torch.Tensor, directed: bool = False) -> torch.Tensor:
        """``pairs`` ``[P, 2]``: undirected pairs, each passed both ways, or with ``directed``
        messages ``pairs[:, 0] → pairs[:, 1]`` (normalised by the receivers' in-degree)."""
        n = x.shape[0]
        src, dst = (pairs[:, 0], pairs[:, 1]) if directed else _both_ways(pairs)
        if self.self_loops:
            loop = torch.arange(n, device=x.device)
            src, dst = torch.cat([src, loop]), torch.cat([dst, loop])
        h = self.lin(x)
        out = torch.zeros_like(h)
        if src.numel():
            w = _gcn_weights(src, dst, n)
            out = out.index_add(0, dst, w[:, None] * h[src])
        return out + self.bias


class _GCN(nn.Module):
    """GCN layers with dropout before each and ReLU after each (as in the released code)."""

    def __init__(self, d_in: int, d: int, layers: int, dropout: float):
        super().__init__()
        self.convs = nn.ModuleList(_GCNLayer(d_in if i == 0 else d, d) for i in range(layers))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pairs: torch.Tensor, directed: bool = False) -> torch.Tensor:
        for conv in self.convs:
            x = conv(self.drop(x), pairs, directed).relu()
        return x


def _pair_mask(node_batch: torch.Tensor) -> torch.Tensor:
    """``[N, N]``: True where ``i != j`` lie in the same graph of the batch (the pairs a latent
    graph may join)."""
    n = node_batch.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=node_batch.device)
    return (node_batch[:, None] == node_batch[None, :]) & ~eye


class _GraphLossModel(_GraphModel):
    """Node classifiers whose discrete graph choices train through the graph loss of the
    differentiable graph module (Kazi et al.): per training node, ``(running accuracy -
    correct) · log-probability`` of the choices around it, so that choices around correctly
    classified nodes become more likely. Shared by :class:`DCM` and :class:`DGM`."""

    _running_acc: torch.Tensor | None = None

    def reset_auxiliary(self) -> None:
        """Forget the running per-node accuracy of the graph loss (a new training run)."""
        self._running_acc = None

    def _graph_loss(self, logits, y, mask, terms) -> torch.Tensor:
        """``terms``: ``(weight, per-node log-probability [N])`` pairs of the last forward pass;
        the loss is ``Σ weight · mean over mask of (running acc - correct) · log-prob``. The
        running accuracy starts at 0.5 and moves by 0.05 towards each step's correctness."""
        V.check_tensor(logits, "logits", ndim=2, floating=True)
        n = terms[0][1].shape[0]
        if logits.shape[0] != n:
            raise ValueError(f"logits: {logits.shape[0]} rows, the last forward pass had {n} nodes")
        correct = (logits.detach()[mask].argmax(1) == y[mask]).float()
        if self._running_acc is None or self._running_acc.shape != correct.shape:
            self._running_acc = torch.full_like(correct, 0.5)
        weight = self._running_acc - correct
        loss = sum(reg * (weight * lp[mask]).mean() for reg, lp in terms)
        self._running_acc = 0.95 * self._running_acc + 0.05 * correct
        return loss


class _CWLayer(nn.Module):
    """Edge update: linear term + GCN-normalised lower- and upper-adjacency messages."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.own = nn.Linear(d_in, d_out)
        self.lower = _GCNLayer(d_in, d_out, self_loops=False)
        self.upper = _GCNLayer(d_in, d_out, self_loops=False)

    def forward(self, xe, lower_pairs, upper_pairs):
        return self.own(xe) + self.lower(xe, lower_pairs) + self.upper(xe, upper_pairs)


def _lower_adjacency(edges: torch.Tensor, n: int) -> torch.Tensor:
    """Pairs ``(a, b)``, ``a < b``, of edges that share a node."""
    n_e, dev = edges.shape[0], edges.device
    if n_e < 2:
        return torch.zeros(0, 2, dtype=torch.long, device=dev)
    inc = torch.zeros(n, n_e, device=dev)
    ids = torch.arange(n_e, device=dev)
    inc[edges[:, 0], ids] = 1.0
    inc[edges[:, 1], ids] = 1.0
    shared = torch.triu(inc.t() @ inc, diagonal=1)
    return shared.nonzero()


def _upper_adjacency(polygons, edge_id: dict, device=None) -> torch.Tensor:
    """Pairs ``(a, b)``, ``a < b``, of distinct edges on a common polygon (on ``device``)."""
    pairs = set()
    for cyc in polygons:
        ids = sorted(edge_id[tuple(sorted(p))] for p in zip(cyc, cyc[1:] + cyc[:1]))
        pairs.update((a, b) for i, a in enumerate(ids) for b in ids[i + 1 :])
    if not pairs:
        return torch.zeros(0, 2, dtype=torch.long, device=device)
    return torch.tensor(sorted(pairs), dtype=torch.long, device=device)


class DCM(_GraphLossModel):
    """The Differentiable Cell Complex Module with its cell complex network, for node
    classification (``task`` is always ``"node"``; see the module docstring).

    ``in_dim``: width of the node features (with the RWSE the package appends); ``hidden``: width
    of every layer; ``dgm_layers`` GCN layers embed the nodes for the α-DGM (on the input graph;
    ``use_input_graph=False`` uses an MLP instead, as when no graph is given); ``conv_layers``
    GCN / CW layers in the cell complex network; ``max_polygon``: longest induced cycle that is
    a candidate 2-cell; ``gamma``: initial scale of the edge scores (the polygon scores start at
    1); ``graph_loss_reg`` / ``poly_loss_reg`` weigh the two graph-loss terms."""

    def __init__(
        self,
        in_dim: int = 12,
        hidden: int = 64,
        n_classes: int = 2,
        *,
        dgm_layers: int = 2,
        conv_layers: int = 1,
        max_polygon: int = 4,
        gamma: float = 50.0,
        dropout: float = 0.5,
        graph_loss_reg: float = 1.0,
        poly_loss_reg: float = 1.0,
        use_input_graph: bool = True,
    ):
        super().__init__()
        self.task = "node"
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=2)
        dgm_layers = V.check_int(dgm_layers, "dgm_layers", low=1)
        conv_layers = V.check_int(conv_layers, "conv_layers", low=1)
        self.max_polygon = V.check_int(max_polygon, "max_polygon", low=3)
        gamma = V.check_scalar(gamma, "gamma", low=0.0, low_open=True)
        dropout = V.check_probability(dropout, "dropout", open_high=True)
        self.graph_loss_reg = V.check_scalar(graph_loss_reg, "graph_loss_reg", low=0.0)
        self.poly_loss_reg = V.check_scalar(poly_loss_reg, "poly_loss_reg", low=0.0)
        self.use_input_graph = V.check_bool(use_input_graph, "use_input_graph")
        self.pre = nn.Sequential(nn.Dropout(dropout), nn.Linear(in_dim, hidden), nn.ReLU())
        self.dgm_embed = _GCN(hidden, hidden, dgm_layers, dropout)
        self.edge_scale = _ScaleShift(gamma)
        self.poly_scale = _ScaleShift(1.0)
        self.node_net = _GCN(hidden, hidden, conv_layers, dropout)
        self.edge_net = nn.ModuleList(_CWLayer(hidden, hidden) for _ in range(conv_layers))
        self.drop = nn.Dropout(dropout)
        self.post = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_classes)
        )
        self.last_complex: DCMComplex | None = None

    # ---------------------------------------------------------------- the two inference steps

    def _infer_graph(self, z: torch.Tensor, node_batch: torch.Tensor):
        valid = _pair_mask(node_batch)
        scores = self.edge_scale(-torch.cdist(z, z), valid)
        # entries outside the graph (or on the diagonal) sit just below the row's minimum and are
        # zeroed after the entmax, so they never become edges
        low = scores.masked_fill(~valid, float("inf")).min(-1, keepdim=True).values.detach()
        scores = torch.where(valid, scores, low - 1.0)
        p = entmax15(scores, dim=-1) * valid
        sym = (p + p.t()) / 2
        edges = torch.triu(sym.detach() > 0, diagonal=1).nonzero()
        return edges, sym[edges[:, 0], edges[:, 1]]

    def _infer_polygons(self, z, edges, n):
        candidates = induced_cycles(edges, n, self.max_polygon)
        if not candidates:
            return candidates, z.new_zeros(0)
        edge_id = {(int(a), int(b)): i for i, (a, b) in enumerate(edges.tolist())}
        ze = z[edges[:, 0]] + z[edges[:, 1]]
        scores = []
        for cyc in candidates:
            ids = [edge_id[tuple(sorted(p))] for p in zip(cyc, cyc[1:] + cyc[:1])]
            d = torch.cdist(ze[ids], ze[ids])
            iu = torch.triu_indices(len(ids), len(ids), offset=1, device=z.device)
            scores.append(d[iu[0], iu[1]].mean())
        s = torch.stack(scores)[None]
        q = entmax15(self.poly_scale(s, torch.ones_like(s, dtype=torch.bool)), dim=-1)[0]
        return candidates, q

    def infer(self, batch) -> DCMComplex:
        """The cell complex inferred for ``batch`` (a GraphBatch, a graph or a list of graphs)."""
        batch = self._prep(batch)
        return self._infer(batch, self.pre(batch.x))

    def _infer(self, batch, x: torch.Tensor) -> DCMComplex:
        n = x.shape[0]
        # the α-DGM embeds the encoded features without sending gradient back into the encoder
        pairs = batch.edges if self.use_input_graph else batch.edges.new_zeros(0, 2)
        z = self.dgm_embed(x.detach(), pairs)
        edges, w = self._infer_graph(z, batch.batch)
        candidates, q = self._infer_polygons(z, edges, n)
        lp_e = x.new_zeros(n)
        if edges.numel():
            lw = torch.log(w.clamp_min(1e-12))
            lp_e = lp_e.index_add(0, edges[:, 0], lw).index_add(0, edges[:, 1], lw)
        lp_p = x.new_zeros(n)
        keep = q.detach() > 0
        if keep.any():
            nodes, owner = [], []
            for i, (cyc, k) in enumerate(zip(candidates, keep.tolist())):
                if k:
                    nodes += cyc
                    owner += [i] * len(cyc)
            lq = torch.log(q.clamp_min(1e-12))
            nodes_t = torch.tensor(nodes, device=x.device)
            lp_p = lp_p.index_add(0, nodes_t, lq[torch.tensor(owner, device=x.device)])
        stats = {
            "edges": int(edges.shape[0]),
            "candidate_polygons": len(candidates),
            "accepted_polygons": int(keep.sum()),
        }
        return DCMComplex(edges, w, candidates, q, lp_e, lp_p, stats)

    # ---------------------------------------------------------------- network and losses

    def forward(self, batch) -> torch.Tensor:
        batch = self._prep(batch)
        x = self.pre(batch.x)
        cx = self._infer(batch, x)
        self.last_complex = cx
        n = x.shape[0]
        edges = cx.edges
        xn = self.node_net(x, edges)
        if edges.numel():
            edge_id = {(int(a), int(b)): i for i, (a, b) in enumerate(edges.tolist())}
            lower = _lower_adjacency(edges, n)
            upper = _upper_adjacency(cx.accepted_polygons(), edge_id, edges.device)
            xe = x[edges[:, 0]] + x[edges[:, 1]]
            for layer in self.edge_net:
                xe = layer(self.drop(xe), lower, upper).relu()
            xed = torch.zeros_like(xn).index_add(0, edges[:, 0], xe).index_add(0, edges[:, 1], xe)
        else:
            xed = torch.zeros_like(xn)
        return self.post(self.drop(torch.cat([xn, xed], dim=1)))

    def auxiliary_loss(self, logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor):
        """The graph loss of the last forward pass on the nodes in ``mask``: mean over them of
        ``(running accuracy - correct) · log-probability`` of their edges (× ``graph_loss_reg``)
        and of their accepted polygons (× ``poly_loss_reg``); the running accuracy starts at 0.5
        and moves by 0.05 towards each step's correctness."""
        if self.last_complex is None:
            raise RuntimeError("auxiliary_loss: call forward first")
        cx = self.last_complex
        terms = [
            (self.graph_loss_reg, cx.node_edge_logprob),
            (self.poly_loss_reg, cx.node_polygon_logprob),
        ]
        return self._graph_loss(logits, y, mask, terms)
