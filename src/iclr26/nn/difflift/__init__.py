"""∂lift (DiffLift): differentiable lifting of graphs to cell complexes and hypergraphs for
topological neural networks (node embeddings by GIN or GPS), for graph and node
classification, with the static liftings it replaces and the node-level baselines DCM and
DGM."""

from .dcm import DCM, DCMComplex, entmax15, induced_cycles
from .dgm import DGM, DGMGraph, gumbel_topk_neighbours
from .gps import GNN_KINDS, GPSEmbedder
from .graphs import (
    GraphBatch,
    GraphData,
    collate,
    from_networkx,
    karate_club,
    make_cell_heterophily,
    make_clique_vote,
    make_ring_parity,
    rwse,
)
from .lifting import (
    CELL_CANDIDATES,
    STATIC_LIFTINGS,
    AcceptanceHead,
    CellLifter,
    HypergraphLifter,
    LiftedComplex,
    gumbel_size_mask,
    lift_static,
    straight_through,
)
from .models import (
    SKLEARN_EXPECTED_FAILED_CHECKS,
    CWNLite,
    DiffLift,
    DiffLiftClassifier,
    DiffLiftNodeClassifier,
    GINEmbedder,
    GINNet,
    StaticLiftNet,
    UniGCNLite,
    accuracy,
    node_accuracy,
    train_graph_classifier,
    train_node_classifier,
)

__all__ = [
    "CELL_CANDIDATES",
    "STATIC_LIFTINGS",
    "SKLEARN_EXPECTED_FAILED_CHECKS",
    "AcceptanceHead",
    "CWNLite",
    "CellLifter",
    "DCM",
    "DCMComplex",
    "DGM",
    "DGMGraph",
    "DiffLift",
    "DiffLiftClassifier",
    "DiffLiftNodeClassifier",
    "GINEmbedder",
    "GINNet",
    "GNN_KINDS",
    "GPSEmbedder",
    "GraphBatch",
    "GraphData",
    "HypergraphLifter",
    "LiftedComplex",
    "StaticLiftNet",
    "UniGCNLite",
    "accuracy",
    "collate",
    "entmax15",
    "from_networkx",
    "gumbel_size_mask",
    "gumbel_topk_neighbours",
    "induced_cycles",
    "karate_club",
    "lift_static",
    "make_cell_heterophily",
    "make_clique_vote",
    "make_ring_parity",
    "node_accuracy",
    "rwse",
    "straight_through",
    "train_graph_classifier",
    "train_node_classifier",
]
