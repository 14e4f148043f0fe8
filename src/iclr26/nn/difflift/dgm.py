"""DGM, the discrete Differentiable Graph Module (Kazi, Cosmo, Ahmadi, Navab and Bronstein,
2022): a node-level baseline that learns a latent graph and runs a GCN on it.

1. Graph learning: a GCN on the input graph (an MLP with ``use_input_graph=False``) embeds the
   encoded node features; the edge probabilities are ``p_ij = exp(-t · ||z_i - z_j||)`` with a
   learnable temperature ``t``, and each node ``i`` draws exactly ``k`` distinct neighbours by
   Gumbel-top-k on ``log p_ij`` (:func:`gumbel_topk_neighbours`); evaluation takes the ``k``
   most probable ones.
2. Node network: GCN layers on the sampled graph, each node receiving messages from its ``k``
   neighbours (and itself), then an MLP.

The sampling is not differentiable; the graph module trains through the graph loss it shares
with :class:`~iclr26.nn.difflift.dcm.DCM`: per training node, ``(running accuracy - correct)``
times the mean probability ``exp(-t · ||z_i - z_j||)`` of its sampled neighbours (the released
code's bounded form of the paper's sum of log-probabilities; same gradient sign), so that
neighbourhoods of correctly classified nodes become more likely."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from iclr26 import validation as V

from .dcm import _GCN, _GraphLossModel, _pair_mask

__all__ = ["gumbel_topk_neighbours", "DGMGraph", "DGM"]


def gumbel_topk_neighbours(
    logits: torch.Tensor,
    k: int,
    valid: torch.Tensor | None = None,
    *,
    sample: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """For each row ``i`` of ``logits`` ``[N, M]`` (unnormalised log-probabilities), ``k``
    distinct column indices drawn without replacement with probabilities proportional to
    ``exp(logits[i])`` (Gumbel-top-k: the top ``k`` of ``logits + Gumbel noise``); with
    ``sample=False`` the ``k`` largest. ``valid`` ``[N, M]`` (bool) marks the allowed columns;
    every row needs at least ``k`` of them. Returns ``[N, k]`` indices (long)."""
    V.check_tensor(logits, "logits", ndim=2, floating=True)
    k = V.check_int(k, "k", low=1)
    if valid is None:
        valid = torch.ones_like(logits, dtype=torch.bool)
    elif not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool:
        raise TypeError("valid must be a bool tensor")
    elif valid.shape != logits.shape:
        raise ValueError(f"valid: shape {tuple(valid.shape)}, logits {tuple(logits.shape)}")
    V.check_bool(sample, "sample")
    short = int(valid.sum(1).min()) if logits.shape[0] else k
    if short < k:
        raise ValueError(f"k={k}: a row has only {short} allowed neighbours")
    scores = logits.detach()
    if sample:
        u = torch.rand(scores.shape, generator=generator, dtype=scores.dtype, device=scores.device)
        scores = scores - torch.log(-torch.log(u.clamp(1e-12, 1.0 - 1e-7)))
    scores = scores.masked_fill(~valid, float("-inf"))
    return torch.topk(scores, k, dim=1).indices


@dataclass
class DGMGraph:
    """The graph DGM sampled in one forward pass: node ``i``'s neighbours ``neighbours[i]``
    (``[N, k]``), their log-probabilities ``logprob`` (``-t · distance``, ``[N, k]``), the
    directed message list ``edges`` ``[N·k, 2]`` (neighbour → node), the per-node sum
    ``node_logprob`` ``[N]`` and mean probability ``node_prob`` ``[N]`` (the graph loss's
    term)."""

    neighbours: torch.Tensor
    logprob: torch.Tensor
    edges: torch.Tensor
    node_logprob: torch.Tensor
    node_prob: torch.Tensor
    temperature: float


class DGM(_GraphLossModel):
    """The discrete Differentiable Graph Module with a GCN, for node classification (``task``
    is always ``"node"``; see the module docstring).

    ``in_dim``: width of the node features (with the RWSE); ``hidden``: width of every layer;
    ``k``: neighbours sampled per node; ``graph_layers`` GCN layers (on the input graph, or an
    MLP with ``use_input_graph=False``) embed the nodes for the graph; ``conv_layers`` GCN layers
    on the sampled graph; ``temperature``: initial ``t`` (learnt as ``log t``);
    ``graph_loss_reg`` weighs the graph loss."""

    def __init__(
        self,
        in_dim: int = 12,
        hidden: int = 64,
        n_classes: int = 2,
        *,
        k: int = 5,
        graph_layers: int = 2,
        conv_layers: int = 1,
        temperature: float = 4.0,
        dropout: float = 0.5,
        graph_loss_reg: float = 1.0,
        use_input_graph: bool = True,
    ):
        super().__init__()
        self.task = "node"
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        n_classes = V.check_int(n_classes, "n_classes", low=2)
        self.k = V.check_int(k, "k", low=1)
        graph_layers = V.check_int(graph_layers, "graph_layers", low=1)
        conv_layers = V.check_int(conv_layers, "conv_layers", low=1)
        temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        dropout = V.check_probability(dropout, "dropout", open_high=True)
        self.graph_loss_reg = V.check_scalar(graph_loss_reg, "graph_loss_reg", low=0.0)
        self.use_input_graph = V.check_bool(use_input_graph, "use_input_graph")
        self.pre = nn.Sequential(nn.Dropout(dropout), nn.Linear(in_dim, hidden), nn.ReLU())
        self.graph_embed = _GCN(hidden, hidden, graph_layers, dropout)
        self.log_t = nn.Parameter(torch.tensor(float(temperature)).log())
        self.node_net = _GCN(hidden, hidden, conv_layers, dropout)
        self.drop = nn.Dropout(dropout)
        self.post = nn.Sequential(
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_classes)
        )
        self.last_graph: DGMGraph | None = None

    @property
    def temperature(self) -> float:
        return float(self.log_t.detach().exp())

    def infer(self, batch) -> DGMGraph:
        """The graph sampled for ``batch`` (in eval mode: each node's ``k`` nearest)."""
        batch = self._prep(batch)
        return self._infer(batch, self.pre(batch.x))

    def _infer(self, batch, x: torch.Tensor) -> DGMGraph:
        pairs = batch.edges if self.use_input_graph else batch.edges.new_zeros(0, 2)
        z = self.graph_embed(x, pairs)
        valid = _pair_mask(batch.batch)
        t = self.log_t.exp()
        # a distance with a finite gradient at coinciding embeddings
        d = ((z[:, None, :] - z[None, :, :]).pow(2).sum(-1) + 1e-12).sqrt()
        logits = -t * d
        try:
            nb = gumbel_topk_neighbours(logits, self.k, valid, sample=self.training)
        except ValueError as err:
            raise ValueError(f"k={self.k}: every graph needs more than k nodes ({err})") from None
        lp = logits.gather(1, nb)
        n = x.shape[0]
        rows = torch.arange(n, device=x.device)[:, None].expand(n, self.k)
        edges = torch.stack([nb.reshape(-1), rows.reshape(-1)], dim=1)
        return DGMGraph(nb, lp, edges, lp.sum(1), lp.exp().mean(1), float(t.detach()))

    def forward(self, batch) -> torch.Tensor:
        batch = self._prep(batch)
        x = self.pre(batch.x)
        g = self._infer(batch, x)
        self.last_graph = g
        h = self.node_net(x, g.edges, directed=True)
        return self.post(self.drop(h))

    def auxiliary_loss(self, logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor):
        """The graph loss of the last forward pass on the nodes in ``mask``: mean over them of
        ``(running accuracy - correct) · mean_j p_ij`` over each node's sampled neighbours
        (× ``graph_loss_reg``); the running accuracy starts at 0.5 and moves by 0.05."""
        if self.last_graph is None:
            raise RuntimeError("auxiliary_loss: call forward first")
        return self._graph_loss(logits, y, mask, [(self.graph_loss_reg, self.last_graph.node_prob)])
