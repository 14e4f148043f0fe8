"""∂lift (DiffLift): differentiable lifting of graphs to cell complexes and hypergraphs for
topological neural networks, with the static liftings it replaces."""

from .graphs import (
    GraphBatch,
    GraphData,
    collate,
    from_networkx,
    make_clique_vote,
    make_ring_parity,
    rwse,
)
from .lifting import (
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
    GINEmbedder,
    GINNet,
    StaticLiftNet,
    UniGCNLite,
    accuracy,
    train_graph_classifier,
)

__all__ = [
    "STATIC_LIFTINGS",
    "SKLEARN_EXPECTED_FAILED_CHECKS",
    "AcceptanceHead",
    "CWNLite",
    "CellLifter",
    "DiffLift",
    "DiffLiftClassifier",
    "GINEmbedder",
    "GINNet",
    "GraphBatch",
    "GraphData",
    "HypergraphLifter",
    "LiftedComplex",
    "StaticLiftNet",
    "UniGCNLite",
    "accuracy",
    "collate",
    "from_networkx",
    "gumbel_size_mask",
    "lift_static",
    "make_clique_vote",
    "make_ring_parity",
    "rwse",
    "straight_through",
    "train_graph_classifier",
]
