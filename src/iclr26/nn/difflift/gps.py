"""The GPS node embedder of ∂lift (the paper's better backbone for the lifting's embeddings).

A GraphGPS layer adds, for every node, a local message-passing update (here GIN) and a global
multi-head self-attention update over all nodes of the same graph, each with a residual and a
batch norm, then a feed-forward block (``torch_geometric.nn.GPSConv``). The input carries a
random-walk positional encoding: the return probabilities ``diag(P^t)``, ``t = 1..pe_steps``,
``P = D^-1 A`` (the RWSE that :meth:`GraphData.features` appends), batch-normalised and mapped
to ``pe_dim`` channels that are concatenated with an embedding of the raw node features, as the
released code does (its GPS: PE width 8 out of the hidden width, GIN as the local model, four
attention heads, five layers)."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

__all__ = ["GPSEmbedder", "GNN_KINDS", "make_embedder"]

GNN_KINDS = ("gin", "gps")


def _gps_conv():
    try:
        from torch_geometric.nn import GINConv, GPSConv
    except ImportError as exc:  # the optional [graph] extra
        raise ImportError(
            "gnn='gps' needs torch-geometric (pip install 'iclr26[graph]'); gnn='gin' does not"
        ) from exc
    return GINConv, GPSConv


class GPSEmbedder(nn.Module):
    """GPS layers (GIN local message passing + multi-head attention within each graph) on node
    features whose last ``pe_steps`` columns are the random-walk encoding.

    ``in_dim`` is the full feature width (raw features and RWSE, as for :class:`GINEmbedder`);
    the raw part is mapped to ``hidden − pe_dim`` channels, the RWSE (batch-normalised) to
    ``pe_dim``, and the two are concatenated before the first layer. ``forward(x, edges, batch)``
    returns ``[N, hidden]`` embeddings; ``batch`` (the graph of each node, sorted, as
    :func:`collate` gives it) keeps attention inside each graph."""

    def __init__(
        self,
        in_dim: int,
        hidden: int = 64,
        layers: int = 5,
        *,
        heads: int = 4,
        pe_steps: int = 8,
        pe_dim: int = 8,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
    ):
        super().__init__()
        in_dim = V.check_int(in_dim, "in_dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        layers = V.check_int(layers, "layers", low=1)
        heads = V.check_int(heads, "heads", low=1)
        self.pe_steps = V.check_int(pe_steps, "pe_steps", low=0, high=in_dim - 1)
        pe_dim = V.check_int(pe_dim, "pe_dim", low=0, high=hidden - 1)
        if self.pe_steps == 0:
            pe_dim = 0
        elif pe_dim == 0:
            raise ValueError("pe_dim: must be >= 1 when pe_steps > 0 (the encoding needs channels)")
        if hidden % heads:
            raise ValueError(f"heads: hidden={hidden} must be divisible by heads={heads}")
        dropout = V.check_probability(dropout, "dropout")
        attn_dropout = V.check_probability(attn_dropout, "attn_dropout")
        GINConv, GPSConv = _gps_conv()
        self.node_emb = nn.Linear(in_dim - self.pe_steps, hidden - pe_dim)
        if self.pe_steps:
            self.pe_norm = nn.BatchNorm1d(self.pe_steps)
            self.pe_lin = nn.Linear(self.pe_steps, pe_dim)
        self.convs = nn.ModuleList(
            GPSConv(
                hidden,
                GINConv(
                    nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
                ),
                heads=heads,
                dropout=dropout,
                attn_type="multihead",
                attn_kwargs={"dropout": attn_dropout},
            )
            for _ in range(layers)
        )

    def forward(
        self, x: torch.Tensor, edges: torch.Tensor, batch: torch.Tensor | None = None
    ) -> torch.Tensor:
        if batch is None:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        raw, pe = x[:, : x.shape[1] - self.pe_steps], x[:, x.shape[1] - self.pe_steps :]
        h = self.node_emb(raw)
        if self.pe_steps:
            h = torch.cat([h, self.pe_lin(self.pe_norm(pe))], dim=1)
        edge_index = torch.cat([edges, edges.flip(1)]).t().contiguous()
        for conv in self.convs:
            h = conv(h, edge_index, batch)
        return h


def make_embedder(
    gnn: str, in_dim: int, hidden: int, layers: int | None = None, pe_steps: int = 8
) -> nn.Module:
    """``"gin"``: :class:`GINEmbedder` (``layers`` default 3, the RWSE read as features);
    ``"gps"``: :class:`GPSEmbedder` (default 5 layers, the released code's effective depth;
    the last ``pe_steps`` feature columns are its positional encoding)."""
    from .models import GINEmbedder

    gnn = V.check_choice(gnn, "gnn", GNN_KINDS)
    if gnn == "gin":
        return GINEmbedder(in_dim, hidden, 3 if layers is None else layers)
    return GPSEmbedder(in_dim, hidden, 5 if layers is None else layers, pe_steps=pe_steps)
