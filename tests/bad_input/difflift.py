"""Bad input for the ∂lift room."""

import networkx as nx
import numpy as np
import torch

from iclr26.nn.difflift import (
    DCM,
    DGM,
    AcceptanceHead,
    CellLifter,
    CWNLite,
    DiffLift,
    DiffLiftClassifier,
    DiffLiftNodeClassifier,
    GINEmbedder,
    GINNet,
    GPSEmbedder,
    HypergraphLifter,
    SCNLite,
    SimplicialLifter,
    StaticLiftNet,
    UniGCNLite,
    accuracy,
    collate,
    entmax15,
    from_networkx,
    from_pyg,
    gumbel_size_mask,
    gumbel_topk_neighbours,
    hodge_operators,
    induced_cycles,
    lift_static,
    make_cell_heterophily,
    make_clique_vote,
    make_ring_parity,
    node_accuracy,
    rwse,
    train_graph_classifier,
    train_node_classifier,
)
from iclr26.nn.difflift.graphs import make_graph

NAN = float("nan")


def _nx(x=None, loops=False):
    g = nx.path_graph(3)
    for v in g.nodes:
        g.nodes[v]["x"] = [0.0, 1.0] if x is None else x
    if loops:
        g.add_edge(1, 1)
    return g


def _batch():
    return collate([make_graph(np.ones((3, 2)), [[0, 1], [1, 2]], 0)])


CASES = [
    ("GPSEmbedder", "range", lambda: GPSEmbedder(12, hidden=18, heads=4), ValueError, "heads"),
    ("GPSEmbedder", "range", lambda: GPSEmbedder(8, hidden=16, pe_steps=8), ValueError, "pe_steps"),
    ("from_networkx", "nan", lambda: from_networkx(_nx([NAN, 1.0])), ValueError, "graph"),
    ("from_networkx", "inf", lambda: from_networkx(_nx([np.inf, 1.0])), ValueError, "graph"),
    ("from_networkx", "empty", lambda: from_networkx(nx.Graph()), ValueError, "graph"),
    ("from_networkx", "other", lambda: from_networkx(_nx(loops=True)), ValueError, "self-loop"),
    ("from_networkx", "type", lambda: from_networkx(nx.DiGraph([(0, 1)])), TypeError, "graph"),
    ("collate", "empty", lambda: collate([]), ValueError, "graphs"),
    ("collate", "type", lambda: collate([np.ones(3)]), TypeError, "graphs"),
    (
        "collate",
        "shape",
        lambda: collate(
            [make_graph(np.ones((2, 2)), [[0, 1]]), make_graph(np.ones((2, 3)), [[0, 1]])]
        ),
        ValueError,
        "graphs",
    ),
    ("rwse", "range", lambda: rwse(np.zeros((0, 2), dtype=int), 2, steps=-1), ValueError, "steps"),
    ("make_ring_parity", "range", lambda: make_ring_parity(0), ValueError, "n_graphs"),
    ("make_ring_parity", "range", lambda: make_ring_parity(2, feat_dim=0), ValueError, "feat_dim"),
    ("make_clique_vote", "range", lambda: make_clique_vote(2, p=1.5), ValueError, "p"),
    ("make_clique_vote", "range", lambda: make_clique_vote(2, noise=NAN), ValueError, "noise"),
    ("lift_static", "range", lambda: lift_static(_batch(), "star"), ValueError, "kind"),
    (
        "lift_static",
        "range",
        lambda: lift_static(_batch(), "cycle", max_cycle_len=2),
        ValueError,
        "max_cycle_len",
    ),
    ("lift_static", "type", lambda: lift_static([1, 2], "cycle"), TypeError, "batch"),
    (
        "gumbel_size_mask",
        "range",
        lambda: gumbel_size_mask(torch.zeros(2, 3), 0),
        ValueError,
        "k_min",
    ),
    (
        "gumbel_size_mask",
        "nan",
        lambda: gumbel_size_mask(torch.full((2, 3), NAN), 2),
        ValueError,
        "logits",
    ),
    (
        "gumbel_size_mask",
        "range",
        lambda: gumbel_size_mask(torch.zeros(2, 3), 2, tau=0.0),
        ValueError,
        "tau",
    ),
    ("AcceptanceHead", "range", lambda: AcceptanceHead(4, sharpen=0.0), ValueError, "sharpen"),
    ("AcceptanceHead", "range", lambda: AcceptanceHead(4, sharpen=NAN), ValueError, "sharpen"),
    ("CellLifter", "range", lambda: CellLifter(4, knn_edges=-1), ValueError, "knn_edges"),
    ("CellLifter", "type", lambda: CellLifter(4, stochastic="yes"), TypeError, "stochastic"),
    (
        "HypergraphLifter",
        "range",
        lambda: HypergraphLifter(4, k_range=(5, 2)),
        ValueError,
        "k_range",
    ),
    ("HypergraphLifter", "other", lambda: HypergraphLifter(4, k_range=3), ValueError, "k_range"),
    ("GINEmbedder", "range", lambda: GINEmbedder(0), ValueError, "in_dim"),
    ("GINEmbedder", "range", lambda: GINEmbedder(3, dropout=1.5), ValueError, "dropout"),
    ("CWNLite", "range", lambda: CWNLite(8, 0), ValueError, "n_classes"),
    ("UniGCNLite", "range", lambda: UniGCNLite(8, 2, dropout=NAN), ValueError, "dropout"),
    ("DiffLift", "range", lambda: DiffLift("simplex"), ValueError, "domain"),
    ("DiffLift", "range", lambda: DiffLift("cell", in_dim=10, sharpen=-1.0), ValueError, "sharpen"),
    ("DiffLift", "shape", lambda: DiffLift("cell", in_dim=7)(_batch()), ValueError, "in_dim"),
    (
        "DiffLift",
        "nan",
        lambda: DiffLift("cell", in_dim=10)(
            collate([make_graph(np.ones((3, 2)), [[0, 1]], 0)]).__class__(
                torch.full((3, 10), NAN),
                torch.tensor([[0, 1]]),
                torch.zeros(3, dtype=torch.long),
                torch.zeros(1, dtype=torch.long),
                torch.tensor([0, 3]),
                None,
                [None],
            )
        ),
        ValueError,
        "batch.x",
    ),
    ("StaticLiftNet", "range", lambda: StaticLiftNet("khop", "cell"), ValueError, "lifting"),
    ("GINNet", "range", lambda: GINNet(in_dim=0), ValueError, "in_dim"),
    (
        "train_graph_classifier",
        "empty",
        lambda: train_graph_classifier(GINNet(10), []),
        ValueError,
        "graphs",
    ),
    (
        "train_graph_classifier",
        "other",
        lambda: train_graph_classifier(GINNet(10), [make_graph(np.ones((3, 2)), [[0, 1]])]),
        ValueError,
        "label",
    ),
    (
        "train_graph_classifier",
        "range",
        lambda: train_graph_classifier(GINNet(10), make_ring_parity(2), lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "train_graph_classifier",
        "range",
        lambda: train_graph_classifier(GINNet(12), make_ring_parity(2), epochs=0),
        ValueError,
        "epochs",
    ),
    ("accuracy", "empty", lambda: accuracy(GINNet(12), []), ValueError, "graphs"),
    (
        "train_graph_classifier",
        "range",
        lambda: train_graph_classifier(GINNet(12), make_ring_parity(2), device="gpu9"),
        ValueError,
        "device",
    ),
    (
        "train_graph_classifier",
        "type",
        lambda: train_graph_classifier(GINNet(12), make_ring_parity(2), device=0),
        TypeError,
        "device",
    ),
    (
        "accuracy",
        "range",
        lambda: accuracy(GINNet(12), make_ring_parity(2), device="nodevice"),
        ValueError,
        "device",
    ),
    ("collate", "type", lambda: collate(make_ring_parity(2), device=1.5), TypeError, "device"),
    (
        "DiffLiftClassifier",
        "range",
        lambda: DiffLiftClassifier(lifting="star").fit(make_ring_parity(4)),
        ValueError,
        "lifting",
    ),
    (
        "DiffLiftClassifier",
        "shape",
        lambda: DiffLiftClassifier().fit(make_ring_parity(4), [0, 1]),
        ValueError,
        "y",
    ),
    (
        "DiffLiftClassifier",
        "other",
        lambda: DiffLiftClassifier().fit(make_ring_parity(4), [1, 1, 1, 1]),
        ValueError,
        "y",
    ),
    ("DiffLiftClassifier", "type", lambda: DiffLiftClassifier().fit("graphs"), TypeError, "graphs"),
]


def _node_graph():
    return make_cell_heterophily(18, 3, seed=0, degree=2.0)


def _node_model(task="node"):
    return GINNet(in_dim=16, hidden=4, n_classes=3, task=task)


_MASK = np.ones(18, dtype=bool)

CASES += [
    ("make_cell_heterophily", "range", lambda: make_cell_heterophily(4), ValueError, "n_nodes"),
    (
        "make_cell_heterophily",
        "range",
        lambda: make_cell_heterophily(30, homophily=1.5),
        ValueError,
        "homophily",
    ),
    (
        "make_cell_heterophily",
        "nan",
        lambda: make_cell_heterophily(30, signal=NAN),
        ValueError,
        "signal",
    ),
    (
        "make_cell_heterophily",
        "range",
        lambda: make_cell_heterophily(30, n_classes=3, feat_dim=2),
        ValueError,
        "feat_dim",
    ),
    (
        "make_cell_heterophily",
        "other",
        lambda: make_cell_heterophily(8, n_classes=3, cell_size=3),
        ValueError,
        "n_nodes",
    ),
    ("CWNLite", "range", lambda: CWNLite(8, 2, task="edge"), ValueError, "task"),
    ("CWNLite", "range", lambda: CWNLite(8, 2, aggregate="max"), ValueError, "aggregate"),
    ("DiffLift", "range", lambda: DiffLift("cell", task="link"), ValueError, "task"),
    (
        "DiffLift",
        "range",
        lambda: DiffLift("cell", cell_candidates="squares"),
        ValueError,
        "cell_candidates",
    ),
    (
        "CellLifter",
        "range",
        lambda: CellLifter(4, cell_candidates="cliques"),
        ValueError,
        "cell_candidates",
    ),
    (
        "train_node_classifier",
        "other",
        lambda: train_node_classifier(_node_model("graph"), *_node_graph(), _MASK),
        ValueError,
        "model",
    ),
    (
        "train_node_classifier",
        "shape",
        lambda: train_node_classifier(_node_model(), _node_graph()[0], np.zeros(5), _MASK),
        ValueError,
        "y",
    ),
    (
        "train_node_classifier",
        "empty",
        lambda: train_node_classifier(_node_model(), *_node_graph(), np.zeros(18, dtype=bool)),
        ValueError,
        "train_mask",
    ),
    (
        "train_node_classifier",
        "dtype",
        lambda: train_node_classifier(_node_model(), *_node_graph(), np.ones(18)),
        TypeError,
        "train_mask",
    ),
    (
        "train_node_classifier",
        "nan",
        lambda: train_node_classifier(_node_model(), *_node_graph(), _MASK, lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "train_node_classifier",
        "type",
        lambda: train_node_classifier(_node_model(), [_node_graph()[0]], _node_graph()[1], _MASK),
        TypeError,
        "graph",
    ),
    (
        "node_accuracy",
        "range",
        lambda: node_accuracy(_node_model(), *_node_graph(), _MASK, device="tpu:x"),
        ValueError,
        "device",
    ),
    (
        "train_node_classifier",
        "type",
        lambda: train_node_classifier(_node_model(), *_node_graph(), _MASK, device=True),
        TypeError,
        "device",
    ),
    (
        "node_accuracy",
        "range",
        lambda: node_accuracy(_node_model(), _node_graph()[0], -np.ones(18), _MASK),
        ValueError,
        "y",
    ),
    (
        "node_accuracy",
        "type",
        lambda: node_accuracy(_node_model(), _node_graph()[0], _node_graph()[1], None),
        TypeError,
        "mask",
    ),
    (
        "DiffLiftNodeClassifier",
        "range",
        lambda: DiffLiftNodeClassifier(lifting="star").fit(*_node_graph()),
        ValueError,
        "lifting",
    ),
    (
        "DiffLiftNodeClassifier",
        "other",
        lambda: DiffLiftNodeClassifier().fit(_node_graph()[0], -np.ones(18)),
        ValueError,
        "y",
    ),
    (
        "DiffLiftNodeClassifier",
        "nan",
        lambda: DiffLiftNodeClassifier().fit(_node_graph()[0], np.full(18, NAN)),
        ValueError,
        "y",
    ),
    (
        "DiffLiftNodeClassifier",
        "shape",
        lambda: DiffLiftNodeClassifier().fit(_node_graph()[0], np.array(["a"] * 18), _MASK[:3]),
        ValueError,
        "train_mask",
    ),
    (
        "DiffLiftNodeClassifier",
        "type",
        lambda: DiffLiftNodeClassifier().fit([_node_graph()[0]], _node_graph()[1]),
        TypeError,
        "graph",
    ),
]


def _nan_batch():
    b = _batch()
    b.x[0, 0] = NAN
    return b


CASES += [
    ("DCM", "range", lambda: DCM(4, max_polygon=2), ValueError, "max_polygon"),
    ("DCM", "range", lambda: DCM(4, gamma=0.0), ValueError, "gamma"),
    ("DCM", "range", lambda: DCM(4, graph_loss_reg=NAN), ValueError, "graph_loss_reg"),
    ("DCM", "type", lambda: DCM(4, use_input_graph="yes"), TypeError, "use_input_graph"),
    ("DCM", "shape", lambda: DCM(7)(_batch()), ValueError, "in_dim"),
    ("DCM", "nan", lambda: DCM(10)(_nan_batch()), ValueError, "batch.x"),
    ("DGM", "range", lambda: DGM(4, k=0), ValueError, "k"),
    ("DGM", "range", lambda: DGM(4, temperature=0.0), ValueError, "temperature"),
    ("DGM", "range", lambda: DGM(4, graph_loss_reg=NAN), ValueError, "graph_loss_reg"),
    ("DGM", "type", lambda: DGM(4, use_input_graph="yes"), TypeError, "use_input_graph"),
    ("DGM", "shape", lambda: DGM(7)(_batch()), ValueError, "in_dim"),
    ("DGM", "nan", lambda: DGM(10)(_nan_batch()), ValueError, "batch.x"),
    (
        "gumbel_topk_neighbours",
        "nan",
        lambda: gumbel_topk_neighbours(torch.tensor([[0.0, NAN]]), 1),
        ValueError,
        "logits",
    ),
    (
        "gumbel_topk_neighbours",
        "range",
        lambda: gumbel_topk_neighbours(torch.zeros(2, 3), 4),
        ValueError,
        "k=4",
    ),
    (
        "gumbel_topk_neighbours",
        "shape",
        lambda: gumbel_topk_neighbours(torch.zeros(2, 3), 1, torch.ones(2, 2, dtype=torch.bool)),
        ValueError,
        "valid",
    ),
    (
        "gumbel_topk_neighbours",
        "type",
        lambda: gumbel_topk_neighbours(torch.zeros(2, 3), 1, torch.ones(2, 3)),
        TypeError,
        "valid",
    ),
    ("entmax15", "nan", lambda: entmax15(torch.tensor([0.0, NAN])), ValueError, "scores"),
    ("entmax15", "inf", lambda: entmax15(torch.tensor([0.0, np.inf])), ValueError, "scores"),
    ("entmax15", "empty", lambda: entmax15(torch.zeros(0)), ValueError, "scores"),
    ("entmax15", "dtype", lambda: entmax15(torch.ones(3, dtype=torch.long)), TypeError, "scores"),
    ("entmax15", "type", lambda: entmax15(np.ones(3)), TypeError, "scores"),
    ("induced_cycles", "range", lambda: induced_cycles([[0, 5]], 3), ValueError, "edges"),
    ("induced_cycles", "range", lambda: induced_cycles([[0, 1]], 2, 2), ValueError, "max_len"),
    ("induced_cycles", "shape", lambda: induced_cycles([[0, 1, 2]], 3), ValueError, "edges"),
]


def _pyg(x, edge_index, **kw):
    from torch_geometric.data import Data  # the optional extra; only these cases need it

    return Data(x=torch.as_tensor(x), edge_index=torch.as_tensor(edge_index), **kw)


def _record(x, edges):
    from iclr26.nn.difflift import GraphData

    return GraphData(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(edges))


CASES += [
    ("from_pyg", "type", lambda: from_pyg(np.ones((3, 2))), TypeError, "data"),
    ("from_pyg", "nan", lambda: from_pyg(_pyg([[NAN], [1.0]], [[0], [1]])), ValueError, "data.x"),
    (
        "from_pyg",
        "shape",
        lambda: from_pyg(_pyg(np.ones((2, 1)), [[0, 1]])),
        ValueError,
        "data.edge",
    ),
    ("from_pyg", "other", lambda: from_pyg(_pyg(np.ones((2, 1)), [[1], [1]])), ValueError, "loop"),
    (
        "from_pyg",
        "shape",
        lambda: from_pyg(_pyg(np.ones((2, 1)), [[0], [1]], y=torch.zeros(2))),
        ValueError,
        "data.y",
    ),
    ("collate", "other", lambda: collate([_record(np.ones((2, 1)), [[1, 1]])]), ValueError, "loop"),
    (
        "collate",
        "nan",
        lambda: collate([_record([[NAN], [1.0]], np.zeros((0, 2), dtype=int))]),
        ValueError,
        r"graphs\[0\]\.x",
    ),
    (
        "collate",
        "range",
        lambda: collate([_record(np.ones((2, 1)), [[0, 2]])]),
        ValueError,
        "edges",
    ),
]


def _hyper():
    return lift_static(_batch(), "khop", domain="hypergraph")


CASES += [
    ("SCNLite", "range", lambda: SCNLite(8, 2, layers=-1), ValueError, "layers"),
    ("SCNLite", "nan", lambda: SCNLite(8, 2, dropout=NAN), ValueError, "dropout"),
    ("SCNLite", "type", lambda: SCNLite(8, 2, cross_rank="yes"), TypeError, "cross_rank"),
    ("SCNLite", "range", lambda: SCNLite(8, 2, task="edge"), ValueError, "task"),
    ("SCNLite", "other", lambda: SCNLite(2, 2)(torch.zeros(3, 2), _hyper(), 1), ValueError, "lc"),
    ("SimplicialLifter", "range", lambda: SimplicialLifter(4, knn_edges=-1), ValueError, "knn"),
    (
        "SimplicialLifter",
        "type",
        lambda: SimplicialLifter(4, stochastic=1),
        TypeError,
        "stochastic",
    ),
    ("SimplicialLifter", "range", lambda: SimplicialLifter(4, sharpen=0.0), ValueError, "sharpen"),
    ("hodge_operators", "type", lambda: hodge_operators(np.eye(3)), TypeError, "lc"),
    ("hodge_operators", "other", lambda: hodge_operators(_hyper()), ValueError, "lc"),
    (
        "DiffLift",
        "range",
        lambda: DiffLift("simplicial", cell_candidates="cycles"),
        ValueError,
        "cell_candidates",
    ),
    (
        "lift_static",
        "range",
        lambda: lift_static(_batch(), "cycle", domain="simplicial"),
        ValueError,
        "kind",
    ),
    ("StaticLiftNet", "range", lambda: StaticLiftNet("khop", "simplicial"), ValueError, "lifting"),
    (
        "DiffLiftClassifier",
        "range",
        lambda: DiffLiftClassifier("simplicial", "cycle").fit(make_ring_parity(4)),
        ValueError,
        "lifting",
    ),
]

EXEMPT = {
    "karate_club": "takes no data; returns a fixed bundled graph",
    "GraphData": "a record dataclass; graphs are validated by from_networkx / make_graph",
    "GraphBatch": "a record dataclass built by collate, which validates its graphs",
    "LiftedComplex": "a record dataclass returned by the liftings; takes no user data",
    "straight_through": "a one-line autograd identity on tensors the liftings make",
    "DCMComplex": "a record dataclass returned by DCM.infer; takes no user data",
    "DGMGraph": "a record dataclass returned by DGM.infer; takes no user data",
}
