"""∂lift: straight-through decisions, the Gumbel size mask, boundary consistency, the static
liftings on hand-checkable graphs, invariances, the generators, batching and GIN against
torch-geometric, training, the scikit-learn facades, and node classification."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from sklearn.base import clone

from iclr26.nn.difflift import (
    CellLifter,
    DiffLift,
    DiffLiftClassifier,
    DiffLiftNodeClassifier,
    GINEmbedder,
    GINNet,
    StaticLiftNet,
    collate,
    from_networkx,
    gumbel_size_mask,
    karate_club,
    lift_static,
    make_cell_heterophily,
    make_clique_vote,
    make_ring_parity,
    node_accuracy,
    rwse,
    straight_through,
    train_node_classifier,
)
from iclr26.nn.difflift.graphs import make_graph

torch.set_num_threads(1)


def nxg(g: nx.Graph, dim: int = 3, seed: int = 0) -> nx.Graph:
    rng = np.random.default_rng(seed)
    for v in g.nodes:
        g.nodes[v]["x"] = rng.normal(size=dim).tolist()
    return g


def test_straight_through_value_and_gradient():
    p = torch.tensor([0.2, 0.7, 0.5], requires_grad=True)
    hard = (p.detach() > 0.5).float()
    b = straight_through(p, hard)
    assert torch.equal(b.detach(), hard)
    up = torch.tensor([1.0, -2.0, 3.0])
    (g,) = torch.autograd.grad((b * up).sum(), p)
    torch.testing.assert_close(g, up)


def test_gumbel_mask_is_hard_membership_with_gradient():
    torch.manual_seed(0)
    logits = torch.randn(6, 9, requires_grad=True)  # k in 2..10
    k, mask = gumbel_size_mask(logits, 2, generator=torch.Generator().manual_seed(1))
    assert mask.shape == (6, 10)
    for v in range(6):
        expect = (torch.arange(1, 11) <= k[v]).float()
        torch.testing.assert_close(mask[v].detach(), expect)
    w = torch.linspace(0, 1, 10)
    (g,) = torch.autograd.grad((mask * w).sum(), logits)
    assert g.abs().sum() > 0
    # deterministic mode takes the arg-max size
    k2, _ = gumbel_size_mask(logits, 2, stochastic=False)
    assert torch.equal(k2, logits.argmax(1) + 2)


def test_static_liftings_on_hand_checkable_graphs():
    ring = collate([from_networkx(nxg(nx.cycle_graph(6)))])
    lc = lift_static(ring, "cycle")
    assert len(lc.cells) == 1 and sorted(lc.cells[0]) == list(range(6))
    k4 = collate([from_networkx(nxg(nx.complete_graph(4)))])
    assert len(lift_static(k4, "clique").cells) == 4  # four triangles in the cell domain
    assert lift_static(k4, "clique", domain="hypergraph").accepted_cells() == [[0, 1, 2, 3]]
    assert len(lift_static(ring, "khop", domain="hypergraph").accepted_cells()) == 6
    assert lift_static(ring, "none").n_cells == 0
    # k-NN hyperedges stay inside their own graph
    two = collate(
        [from_networkx(nxg(nx.path_graph(5))), from_networkx(nxg(nx.path_graph(5), seed=1))]
    )
    lc = lift_static(two, "knn", domain="hypergraph", k=3)
    for cell in lc.accepted_cells():
        assert len({int(two.batch[v]) for v in cell}) == 1


def _closed_walks(lc):
    """Every accepted 2-cell's boundary edges are accepted 1-cells and each node of the cell
    has even degree in its boundary (a closed walk)."""
    accepted = lc.edge_w.detach() > 0.5
    for c in range(lc.n_cells):
        if lc.cell_w[c] <= 0.5:
            continue
        eids = lc.edge_of[lc.cell_of == c]
        assert accepted[eids].all()
        deg = torch.bincount(lc.edges[eids].flatten(), minlength=lc.n_nodes)
        assert (deg % 2 == 0).all()


def test_learned_cells_are_consistent_and_force_zero_gives_the_skeleton():
    graphs = make_ring_parity(6, seed=3)
    d = graphs[0].features().shape[1]
    model = DiffLift("cell", in_dim=d, hidden=16, tnn_layers=1)
    model.lifter.force_p = 1.0
    lc = model.eval().lift(collate(graphs))
    assert lc.stats["accepted_cells"] == lc.n_cells > 0
    _closed_walks(lc)
    model.lifter.force_p = 0.0
    lc = model.lift(collate(graphs))
    assert lc.stats["accepted_cells"] == 0 and lc.stats["accepted_new_edges"] == 0
    assert lc.accepted_edges().shape[0] == sum(g.n_edges for g in graphs)
    out = model(collate(graphs))
    assert out.shape == (6, 2) and torch.isfinite(out).all()


def test_gradient_reaches_both_acceptance_heads():
    graphs = make_ring_parity(8, seed=4)
    d = graphs[0].features().shape[1]
    torch.manual_seed(0)
    model = DiffLift("cell", in_dim=d, hidden=16, tnn_layers=1, sharpen=1.0)
    b = collate(graphs)
    loss = torch.nn.functional.cross_entropy(model.train()(b), b.y)
    loss.backward()
    for head in (model.lifter.edge_head, model.lifter.cell_head):
        assert sum(p.grad.abs().sum() for p in head.parameters()) > 0
    hmodel = DiffLift("hypergraph", in_dim=d, hidden=16, tnn_layers=1, sharpen=1.0)
    loss = torch.nn.functional.cross_entropy(hmodel.train()(b), b.y)
    loss.backward()
    assert sum(p.grad.abs().sum() for p in hmodel.lifter.k_mlp.parameters()) > 0
    assert sum(p.grad.abs().sum() for p in hmodel.lifter.head.parameters()) > 0


@pytest.mark.parametrize("domain", ["cell", "hypergraph"])
def test_permutation_invariance(domain):
    g = make_ring_parity(1, seed=7)[0]
    perm = torch.randperm(g.n_nodes, generator=torch.Generator().manual_seed(0))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.n_nodes)
    gp = make_graph(g.x[perm].numpy(), inv[g.edges].numpy(), g.y)
    d = g.features().shape[1]
    torch.manual_seed(0)
    model = DiffLift(domain, in_dim=d, hidden=16, tnn_layers=2).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(collate([g])), model(collate([gp])), atol=1e-4, rtol=1e-4)
    static = StaticLiftNet(
        "cycle" if domain == "cell" else "khop", domain, in_dim=d, hidden=16
    ).eval()
    with torch.no_grad():
        torch.testing.assert_close(
            static(collate([g])), static(collate([gp])), atol=1e-4, rtol=1e-4
        )


def test_generators_match_their_ground_truth_and_are_seeded():
    graphs = make_ring_parity(30, seed=5)
    for g in graphs:
        sizes = [len(r) for r in g.meta["rings"]]
        assert g.y == int(sizes.count(6) > sizes.count(5))
        assert sizes.count(6) != sizes.count(5)
        edges = {tuple(e) for e in g.edges.tolist()}
        for r in g.meta["rings"]:
            for a, b in zip(r, r[1:] + r[:1]):
                assert (min(a, b), max(a, b)) in edges
        assert len(set(map(tuple, g.meta["chords"]))) == len(g.meta["chords"])
        assert g.edges.shape[0] == len(edges)  # no duplicate edges
    again = make_ring_parity(30, seed=5)
    assert all(
        torch.equal(a.edges, b.edges) and torch.equal(a.x, b.x) for a, b in zip(graphs, again)
    )
    votes = make_clique_vote(10, seed=2)
    for g in votes:
        teams = g.meta["teams"]
        assert g.y == int(sum(t > 0 for t in teams) >= 2)
        for c in g.meta["cliques"]:
            e = {tuple(x) for x in g.edges.tolist()}
            assert all((a, b) in e for i, a in enumerate(c) for b in c[i + 1 :])


def test_rwse_by_hand():
    # a path 0-1-2: from 1, two steps return with probability 1; from 0, with probability 1/2
    pe = rwse(np.array([[0, 1], [1, 2]]), 3, steps=2)
    np.testing.assert_allclose(pe[:, 0], 0.0)
    np.testing.assert_allclose(pe[:, 1], [0.5, 1.0, 0.5])
    pe = rwse(np.array([[0, 1], [1, 2], [2, 0]]), 3, steps=3)
    np.testing.assert_allclose(pe[:, 1], 0.5)
    np.testing.assert_allclose(pe[:, 2], 0.25)
    assert np.all(rwse(np.zeros((0, 2), dtype=int), 2, 3) == 0)  # isolated nodes


def test_batching_and_gin_match_torch_geometric():
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch, Data
    from torch_geometric.nn import GINConv

    graphs = make_ring_parity(4, seed=9)
    ours = collate(graphs)
    ref = Batch.from_data_list(
        [
            Data(
                x=g.features(),
                edge_index=torch.cat([g.edges, g.edges.flip(1)]).t(),
                y=torch.tensor([g.y]),
            )
            for g in graphs
        ]
    )
    assert torch.equal(ours.batch, ref.batch) and torch.equal(ours.ptr, ref.ptr)
    assert torch.equal(ours.x, ref.x) and torch.equal(ours.y, ref.y)
    a = {tuple(e) for e in ours.edge_index().t().tolist()}
    assert a == {tuple(e) for e in ref.edge_index.t().tolist()}
    assert len(a) == ref.edge_index.shape[1]  # no edge twice
    emb = GINEmbedder(ours.x.shape[1], hidden=8, layers=2)
    h = ref.x
    for i, conv in enumerate(emb.convs):
        h = GINConv(conv)(h, ref.edge_index)
        if i < 1:
            h = torch.relu(h)
    torch.testing.assert_close(emb.eval()(ours.x, ours.edges), h, atol=1e-5, rtol=1e-5)
    assert pyg.__version__


def test_torch_geometric_batches_are_accepted_and_equal_the_dense_batcher():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Batch, Data

    from iclr26.nn.difflift import from_pyg

    graphs = make_ring_parity(5, seed=4)
    data = [  # raw features, one direction per edge for one graph, both for the others
        Data(
            x=g.x,
            edge_index=(g.edges if i == 0 else torch.cat([g.edges, g.edges.flip(1)])).t(),
            y=torch.tensor([g.y]),
        )
        for i, g in enumerate(graphs)
    ]
    ours, theirs = collate(graphs), collate(Batch.from_data_list(data))
    for key in ("x", "edges", "batch", "edge_batch", "ptr", "y"):
        assert torch.equal(getattr(ours, key), getattr(theirs, key)), key
    assert torch.equal(collate(data).x, ours.x)  # a list of Data, too
    model = DiffLift("cell", in_dim=ours.x.shape[1], hidden=8, tnn_layers=1).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(Batch.from_data_list(data)), model(ours))
    assert from_pyg(data[1]).y == graphs[1].y
    with pytest.raises(ValueError, match="self-loop"):
        from_pyg(Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0, 1], [1, 1]])))


def test_graph_records_built_directly_are_checked_when_batched():
    from iclr26.nn.difflift import GraphData

    x = torch.ones(3, 2)
    ok = GraphData(x, torch.tensor([[0, 1], [1, 2]]))
    assert collate([ok]).edges.shape == (2, 2)
    for edges, match in (
        ([[1, 1]], "self-loop"),
        ([[2, 1]], "u < v"),
        ([[0, 3]], "u < v"),
        ([[0, 1], [0, 1]], "twice"),
    ):
        with pytest.raises(ValueError, match=match):
            collate([ok, GraphData(x, torch.tensor(edges))])
    with pytest.raises(ValueError, match=r"graphs\[0\].x contains NaN"):
        collate([GraphData(torch.tensor([[float("nan"), 1.0]]), torch.zeros((0, 2), dtype=int))])
    with pytest.raises(TypeError, match="edges"):
        collate([GraphData(x, torch.tensor([[0.0, 1.0]]))])


def test_graph_without_edges_and_isolated_nodes_run():
    # a graph with no edges has no 1-cells, cycles, triangles or k-hop hyperedges beyond its
    # nodes; every model must still give finite logits for it, alone or beside another graph
    g = make_graph(np.random.default_rng(0).normal(size=(4, 3)), np.zeros((0, 2)), 1)
    h = make_graph(np.random.default_rng(1).normal(size=(6, 3)), [[0, 1], [1, 2], [2, 0]], 0)
    d = g.features().shape[1]
    models = [
        DiffLift("cell", in_dim=d, hidden=8),
        DiffLift("simplicial", in_dim=d, hidden=8),
        DiffLift("hypergraph", in_dim=d, hidden=8),
        StaticLiftNet("cycle", in_dim=d, hidden=8),
        StaticLiftNet("clique", "simplicial", in_dim=d, hidden=8),
        GINNet(in_dim=d, hidden=8),
    ]
    models += [
        StaticLiftNet(k, "hypergraph", in_dim=d, hidden=8) for k in ("khop", "knn", "clique")
    ]
    for model in models:
        for graphs in ([g], [g, h]):
            out = model.eval()(collate(graphs))
            assert out.shape == (len(graphs), 2) and torch.isfinite(out).all()
    for domain in ("cell", "simplicial", "hypergraph"):
        out = DiffLift(domain, in_dim=d, hidden=8, task="node").eval()(collate([g]))
        assert out.shape == (4, 2) and torch.isfinite(out).all()
    lc = DiffLift("simplicial", in_dim=d, hidden=8).eval().lift(collate([g]))
    assert lc.stats["input_edges"] == 0 and lc.edges.shape[0] == lc.stats["candidate_edges"]


def test_training_reduces_the_loss_and_the_classifier_facade():
    from iclr26.nn.difflift import train_graph_classifier

    graphs = make_ring_parity(8, seed=11)
    d = graphs[0].features().shape[1]
    torch.manual_seed(0)
    model = DiffLift("cell", in_dim=d, hidden=16, tnn_layers=1, dropout=0.0)
    losses = train_graph_classifier(model, graphs, epochs=15, batch_size=8, lr=1e-2)
    assert losses[-1] < losses[0] - 0.05
    nx_graphs = [g.to_networkx() for g in graphs]
    clf = DiffLiftClassifier(hidden=8, epochs=2, batch_size=4)
    assert clone(clf).get_params() == clf.get_params()
    labels = np.array(["ring-a" if g.y else "ring-b" for g in graphs])
    clf.fit(nx_graphs, labels)
    assert set(clf.predict(nx_graphs)) <= {"ring-a", "ring-b"}
    proba = clf.predict_proba(nx_graphs)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-6)
    assert 0.0 <= clf.score(nx_graphs, labels) <= 1.0
    static = DiffLiftClassifier(lifting="cycle", hidden=8, epochs=1).fit(
        nx_graphs
    )  # labels in graph["y"]
    assert static.predict(nx_graphs).shape == (8,)


def test_lifted_complex_exports_to_networkx():
    g = make_ring_parity(1, seed=12)[0]
    d = g.features().shape[1]
    lc = lift_static(collate([g, g]), "cycle")
    out = lc.to_networkx(1)
    assert out.number_of_nodes() == g.n_nodes and out.number_of_edges() == g.n_edges
    assert len(out.graph["cells"]) == len(nx.cycle_basis(g.to_networkx()))
    with pytest.raises(ValueError, match="graph"):
        lc.to_networkx(5)
    assert CellLifter(d).knn_edges == 3


@pytest.mark.parametrize(
    "name",
    [
        "learned-vs-static-cell",
        "learned-vs-static-hypergraph",
        "what-was-learned",
        "node-classification-heterophily",
    ],
)
def test_claims_at_smoke_scale(name, tmp_path):
    from iclr26.claims import run_claim

    record = run_claim("difflift", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced"), record.get("reason")
    assert record["metrics"] and record["baseline"]
    if name == "learned-vs-static-cell":
        # reported in the same run: forward time and cells per graph of every lifting, and the
        # growth with graph size of the learned and the static liftings, counts beside times
        m = record["metrics"]
        cost = m["forward_cost"]
        assert {"gin", "cycle", "clique", "learned"} <= set(cost)
        assert all(c["timing"]["count_graphs"] > 0 for c in cost.values())
        assert cost["cycle"]["cells_per_graph"] > 0
        assert set(m["loglog_slope"]) == {"learned", "cycle", "clique"}
        for sweep in (m["size_sweep"], *m["size_sweep_static"].values()):
            rows = sweep["rows"]
            assert len(rows) >= 2 and np.isfinite(sweep["loglog_slope"])
            assert rows[-1]["nodes_per_graph"] > rows[0]["nodes_per_graph"]
            assert all(r["cells_per_graph"] >= 0 for r in rows)
        cyc = m["size_sweep_static"]["cycle"]["rows"]  # copies of a graph: more basis cycles
        assert cyc[-1]["cells_per_graph"] > cyc[0]["cells_per_graph"]
        assert m["train_graph_passes"] > 0


# ------------------------------------------------------------------ node classification


def test_triangles_are_exactly_the_graphs_triangles():
    from iclr26.nn.difflift import lifting

    g = nxg(nx.gnp_random_graph(40, 0.2, seed=3))
    lc = lift_static(collate([from_networkx(g)]), "clique")
    want = sorted(tuple(sorted(c)) for c in nx.enumerate_all_cliques(g) if len(c) == 3)
    assert sorted(tuple(c) for c in lc.cells) == want
    edges = np.array(sorted((min(a, b), max(a, b)) for a, b in g.edges)) + 5
    dense = lifting._triangles(40, edges, 5)
    old = lifting._DENSE_TRIANGLES_MAX
    lifting._DENSE_TRIANGLES_MAX = 10  # the networkx path for large graphs
    try:
        assert lifting._triangles(40, edges, 5) == dense
    finally:
        lifting._DENSE_TRIANGLES_MAX = old


def test_cell_heterophily_generator_and_karate():
    g, y = make_cell_heterophily(90, 3, seed=4, degree=4.0)
    assert g.n_nodes == 90 and np.bincount(y).tolist() == [30, 30, 30]
    edges = {tuple(e) for e in g.edges.tolist()}
    assert len(g.meta["cells"]) == 30
    for cell in g.meta["cells"]:
        assert len({int(y[v]) for v in cell}) == 1  # a planted cell shares one label
        for a, b in zip(cell, cell[1:] + cell[:1]):
            assert (min(a, b), max(a, b)) in edges
    e = g.edges.numpy()
    planted = 90  # a triangle per cell: 3 same-class edges each
    same = int((y[e[:, 0]] == y[e[:, 1]]).sum())
    assert same == planted  # homophily=0: every background edge joins two classes
    assert abs(len(edges) - planted - 180) <= 6  # about degree * n / 2 background edges
    g2, y2 = make_cell_heterophily(90, 3, seed=4, degree=4.0)
    assert torch.equal(g.edges, g2.edges) and torch.equal(g.x, g2.x) and (y == y2).all()
    # the signal is the class one-hot in the first n_classes features
    means = np.stack([g.x.numpy()[y == c, :3].mean(0) for c in range(3)])
    assert (means.argmax(1) == np.arange(3)).all()
    k, ky = karate_club()
    assert k.n_nodes == 34 and k.n_edges == 78 and np.bincount(ky).tolist() == [17, 17]


NODE_MODELS = {
    "cell-triangles": lambda d: DiffLift(
        "cell",
        in_dim=d,
        hidden=16,
        n_classes=3,
        tnn_layers=2,
        task="node",
        cell_candidates="triangles",
    ),
    "hypergraph": lambda d: DiffLift(
        "hypergraph", in_dim=d, hidden=16, n_classes=3, tnn_layers=2, task="node"
    ),
    "static-clique": lambda d: StaticLiftNet(
        "clique", in_dim=d, hidden=16, n_classes=3, tnn_layers=2, task="node"
    ),
    "gnn": lambda d: GINNet(in_dim=d, hidden=16, n_classes=3, task="node"),
}


@pytest.mark.parametrize("name", list(NODE_MODELS))
def test_node_outputs_have_node_shape_and_are_permutation_equivariant(name):
    g, _ = make_cell_heterophily(30, 3, seed=1, degree=3.0)
    perm = torch.randperm(g.n_nodes, generator=torch.Generator().manual_seed(2))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.n_nodes)
    gp = make_graph(g.x[perm].numpy(), inv[g.edges].numpy())
    torch.manual_seed(0)
    model = NODE_MODELS[name](g.features().shape[1]).eval()
    with torch.no_grad():
        out, out_p = model(collate([g])), model(collate([gp]))
    assert out.shape == (30, 3) and torch.isfinite(out).all()
    torch.testing.assert_close(out_p, out[perm], atol=1e-4, rtol=1e-4)
    if name == "cell-triangles":  # the lifting is not trivial: cells and proposed edges exist
        lc = model.lift(collate([g]))
        assert lc.n_cells > 0 and lc.stats["candidate_edges"] > 0


def test_node_readout_sees_the_cells_and_gradients_reach_the_heads():
    g, y = make_cell_heterophily(30, 3, seed=5, degree=3.0)
    d = g.features().shape[1]
    torch.manual_seed(0)
    model = DiffLift(
        "cell",
        in_dim=d,
        hidden=16,
        n_classes=3,
        tnn_layers=1,
        task="node",
        cell_candidates="triangles",
        sharpen=1.0,
    )
    b = collate([g])
    model.lifter.force_p = 1.0
    with torch.no_grad():
        all_cells = model.eval()(b)
    model.lifter.force_p = 0.0
    with torch.no_grad():
        no_cells = model(b)
    lc = model.lift(b)
    in_cell = torch.zeros(30, dtype=torch.bool)
    in_cell[torch.tensor([v for c in lift_static(b, "clique").cells for v in c])] = True
    # rejecting every proposed edge and 2-cell changes the logits of nodes in 2-cells
    assert lc.stats["accepted_cells"] == 0
    assert not torch.allclose(all_cells[in_cell], no_cells[in_cell])
    model.lifter.force_p = None
    loss = torch.nn.functional.cross_entropy(model.train()(b), torch.as_tensor(y))
    loss.backward()
    for head in (model.lifter.edge_head, model.lifter.cell_head):
        assert sum(p.grad.abs().sum() for p in head.parameters()) > 0


def test_node_training_learns_a_toy_task_and_the_node_classifier_facade():
    # a toy the node readout must solve: mostly planted same-class triangles, clear features
    g, y = make_cell_heterophily(90, 3, seed=6, degree=1.0, signal=2.0)
    train = np.random.default_rng(0).random(90) < 0.6
    torch.manual_seed(0)
    model = DiffLift(
        "cell",
        in_dim=g.features().shape[1],
        hidden=16,
        n_classes=3,
        tnn_layers=1,
        task="node",
        cell_candidates="triangles",
        dropout=0.0,
    )
    losses = train_node_classifier(model, g, y, train, epochs=40, lr=1e-2)
    assert losses[-1] < 0.5 * losses[0]
    assert node_accuracy(model, g, y, ~train) > 0.75  # chance is 1/3
    with pytest.raises(ValueError, match="task"):
        train_node_classifier(DiffLift("cell", in_dim=12), g, y, train)
    # scikit-learn style: -1 marks unlabelled nodes
    partial = np.where(train, y, -1)
    clf = DiffLiftNodeClassifier(hidden=8, epochs=5)
    assert clone(clf).get_params() == clf.get_params()
    clf.fit(g.to_networkx(), partial)
    assert clf.predict(g).shape == (90,) and set(clf.classes_) == {0, 1, 2}
    np.testing.assert_allclose(clf.predict_proba(g).sum(1), 1.0, atol=1e-6)
    assert 0.0 <= clf.score(g, np.where(train, -1, y)) <= 1.0
    names = np.array(["a", "b", "c"])[y]
    for lifting in ("gnn", "cycle"):
        est = DiffLiftNodeClassifier(lifting=lifting, hidden=8, epochs=2)
        est.fit(g, names, train_mask=train)
        assert set(est.predict(g)) <= {"a", "b", "c"}


# ------------------------------------------------------------------ DCM (node-level baseline)


def _entmax15_bisection(z: np.ndarray) -> np.ndarray:
    """Reference 1.5-entmax: bisection on the threshold of sum([z/2 - tau]_+^2) = 1."""
    x = z / 2.0
    lo, hi = x.max() - 1.0, x.max()
    for _ in range(200):
        tau = (lo + hi) / 2
        if (np.clip(x - tau, 0, None) ** 2).sum() > 1.0:
            lo = tau
        else:
            hi = tau
    return np.clip(x - (lo + hi) / 2, 0, None) ** 2


def test_entmax15_matches_bisection_is_sparse_and_has_exact_gradients():
    from iclr26.nn.difflift import entmax15

    rng = np.random.default_rng(0)
    z = rng.normal(scale=3.0, size=(6, 9))
    p = entmax15(torch.tensor(z)).numpy()
    for row, want in zip(p, map(_entmax15_bisection, z)):
        np.testing.assert_allclose(row, want, atol=1e-9)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert (p == 0).any() and (p > 0).any(1).all()
    # along another axis, shift invariance, and a wide gap gives the arg-max one-hot
    np.testing.assert_allclose(entmax15(torch.tensor(z.T), dim=0).numpy(), p.T, atol=1e-12)
    np.testing.assert_allclose(entmax15(torch.tensor(z + 7.0)).numpy(), p, atol=1e-9)
    onehot = entmax15(torch.tensor([[0.0, 10.0, 1.0]]))
    assert torch.equal(onehot, torch.tensor([[0.0, 1.0, 0.0]]))
    zt = torch.tensor(z[:2], requires_grad=True)
    assert torch.autograd.gradcheck(entmax15, (zt,))
    # the Jacobian diag(s) - s s^T / sum(s), s = sqrt(p) on the support, also where ties and a
    # far outlier make other support sizes' thresholds degenerate (no NaN)
    zt = torch.tensor([[0.0, 0.0, 0.0, -50.0]], requires_grad=True)
    (grad,) = torch.autograd.grad(entmax15(zt)[0, 0], zt)
    sq = np.sqrt(1 / 3)
    np.testing.assert_allclose(grad[0].numpy(), [sq - sq / 3, -sq / 3, -sq / 3, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="scores"):
        entmax15(torch.tensor([[0.0, float("nan")]]))


def test_induced_cycles_by_hand_and_against_brute_force():
    from itertools import combinations

    from iclr26.nn.difflift import induced_cycles

    k4 = np.array(list(nx.complete_graph(4).edges))
    assert induced_cycles(k4, 4) == [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]  # squares: chords
    c4 = np.array(list(nx.cycle_graph(4).edges))
    assert induced_cycles(c4, 4) == [[0, 1, 2, 3]]
    c5 = np.array(list(nx.cycle_graph(5).edges))
    assert induced_cycles(c5, 5, max_len=4) == [] and len(induced_cycles(c5, 5, 5)) == 1
    house = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [2, 4], [3, 4]])
    # the outer 5-cycle has the chord (2, 3): not induced, unlike in a cycle basis
    assert induced_cycles(house, 5, max_len=5) == [[2, 3, 4], [0, 1, 2, 3]]
    g = nx.gnp_random_graph(12, 0.35, seed=1)
    edges = np.array(list(g.edges))
    got = {frozenset(c) for c in induced_cycles(edges, 12, max_len=4)}
    want = set()
    for k in (3, 4):
        for sub in combinations(range(12), k):
            h = g.subgraph(sub)
            if nx.is_connected(h) and all(d == 2 for _, d in h.degree):
                want.add(frozenset(sub))
    assert got == want and len(want) > 5
    shuffled = edges[np.random.default_rng(0).permutation(len(edges))][:, ::-1]
    assert induced_cycles(shuffled, 12) == induced_cycles(edges, 12)


def _dcm(in_dim, **kw):
    from iclr26.nn.difflift import DCM

    torch.manual_seed(0)
    return DCM(in_dim, hidden=16, n_classes=3, dropout=0.0, **kw)


def test_dcm_latent_graph_follows_the_embedding_geometry():
    model = _dcm(4)
    # two tight clusters far apart: every inferred edge stays inside a cluster
    rng = np.random.default_rng(0)
    z = torch.tensor(
        np.concatenate([rng.normal(0, 0.1, (6, 3)), rng.normal(5, 0.1, (6, 3))]),
        dtype=torch.float32,
    )
    edges, w = model._infer_graph(z, torch.zeros(12, dtype=torch.long))
    assert len(edges) and ((edges < 6).sum(1) != 1).all()
    assert (edges[:, 0] < edges[:, 1]).all() and (w > 0).all() and (w <= 1).all()
    # a very sharp scale keeps one neighbour per row: the union of nearest-neighbour pairs
    with torch.no_grad():
        model.edge_scale.gamma.fill_(1e4)
    z = torch.randn(15, 3)
    edges, _ = model._infer_graph(z, torch.zeros(15, dtype=torch.long))
    d = torch.cdist(z, z).fill_diagonal_(float("inf"))
    nn1 = {tuple(sorted((i, int(d[i].argmin())))) for i in range(15)}
    assert {tuple(e) for e in edges.tolist()} == nn1
    # two graphs in one batch are never joined
    edges, _ = model._infer_graph(torch.randn(10, 3), torch.tensor([0] * 5 + [1] * 5))
    assert ((edges < 5).sum(1) != 1).all()


def test_dcm_complex_is_consistent_and_outputs_are_equivariant():
    from iclr26.nn.difflift import induced_cycles

    g, y = make_cell_heterophily(60, 3, seed=2)
    model = _dcm(g.features().shape[1], gamma=5.0).eval()  # a denser latent graph
    cx = model.infer(g)
    edges = {tuple(e) for e in cx.edges.tolist()}
    assert len(edges) == len(cx.edges) and all(a < b for a, b in edges)
    assert cx.candidates == induced_cycles(cx.edges, 60, 4) and cx.candidates
    for cyc in cx.candidates:
        assert all(tuple(sorted(p)) in edges for p in zip(cyc, cyc[1:] + cyc[:1]))
    torch.testing.assert_close(cx.polygon_prob.sum(), torch.tensor(1.0))
    acc = cx.accepted_polygons()
    assert 0 < len(acc) < len(cx.candidates)  # entmax keeps a sparse subset
    assert (
        torch.isfinite(cx.node_edge_logprob).all() and torch.isfinite(cx.node_polygon_logprob).all()
    )
    on_poly = {v for c in acc for v in c}
    assert all((cx.node_polygon_logprob[v] < 0) == (v in on_poly) for v in range(60))
    out = model(collate([g]))
    assert out.shape == (60, 3)
    perm = np.random.default_rng(0).permutation(60)
    inv = np.argsort(perm)
    pg = make_graph(g.x.numpy()[perm], inv[g.edges.numpy()])
    torch.testing.assert_close(model(collate([pg])), out[perm], atol=1e-5, rtol=1e-5)


def test_dcm_graph_loss_is_the_only_signal_into_the_inference_modules():
    import torch.nn.functional as F

    g, y = make_cell_heterophily(60, 3, seed=2)
    model = _dcm(g.features().shape[1], gamma=5.0).train()
    yt, mask = torch.as_tensor(y), torch.arange(60) % 2 == 0
    logits = model(collate([g]))
    F.cross_entropy(logits[mask], yt[mask]).backward(retain_graph=True)
    for name, p in model.named_parameters():
        seen = p.grad is not None and p.grad.abs().sum() > 0
        assert seen == (name.split(".")[0] in ("pre", "node_net", "edge_net", "post")), name
    model.zero_grad()
    aux = model.auxiliary_loss(logits, yt, mask)
    cx = model.last_complex
    correct = (logits.argmax(1) == yt)[mask].float()
    want = ((0.5 - correct) * (cx.node_edge_logprob[mask] + cx.node_polygon_logprob[mask])).mean()
    torch.testing.assert_close(aux, want)
    aux.backward()
    for p in (model.dgm_embed.convs[0].lin.weight, model.edge_scale.gamma, model.poly_scale.gamma):
        assert p.grad is not None and p.grad.abs().sum() > 0
    torch.testing.assert_close(model._running_acc, 0.475 + 0.05 * correct)
    with pytest.raises(ValueError, match="logits"):
        model.auxiliary_loss(logits[:5], yt, mask)


def test_dcm_learns_a_toy_task_and_validates_its_inputs():
    from iclr26.nn.difflift import DCM

    g, y = make_cell_heterophily(90, 3, seed=6, degree=1.0, signal=2.0)
    train = np.random.default_rng(0).random(90) < 0.6
    model = _dcm(g.features().shape[1])
    train_node_classifier(model, g, y, train, epochs=40, lr=1e-2)
    assert node_accuracy(model, g, y, train) > 0.9
    assert node_accuracy(model, g, y, ~train) > 0.6  # chance is 1/3
    for kw, name in [
        ({"in_dim": 0}, "in_dim"),
        ({"max_polygon": 2}, "max_polygon"),
        ({"gamma": 0.0}, "gamma"),
        ({"dropout": 1.0}, "dropout"),
        ({"graph_loss_reg": -1.0}, "graph_loss_reg"),
        ({"use_input_graph": 1}, "use_input_graph"),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):
            DCM(**{"in_dim": 4, **kw})
    with pytest.raises(ValueError, match="in_dim"):
        DCM(in_dim=3)(collate([g]))
    x = g.x.clone()
    x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model(collate([make_graph(x.numpy(), g.edges.numpy())]))


def test_dcm_gcn_layers_match_torch_geometric():
    pytest.importorskip("torch_geometric")
    from torch_geometric.nn import GCNConv

    from iclr26.nn.difflift.dcm import _GCNLayer

    torch.manual_seed(0)
    pairs = torch.tensor([[0, 1], [1, 2], [2, 3], [0, 2], [4, 5]])
    x = torch.randn(7, 5)  # node 6 isolated
    index = torch.cat([pairs, pairs.flip(1)]).t()
    for loops in (True, False):
        ours, ref = _GCNLayer(5, 3, self_loops=loops), GCNConv(5, 3, add_self_loops=loops)
        with torch.no_grad():
            ours.lin.weight.copy_(ref.lin.weight)
            ours.bias.copy_(ref.bias)
        torch.testing.assert_close(ours(x, pairs), ref(x, index))


# ------------------------------------------------------------------ DGM (node-level baseline)


def _dgm(in_dim, **kw):
    from iclr26.nn.difflift import DGM

    torch.manual_seed(0)
    return DGM(in_dim, hidden=16, n_classes=3, dropout=0.0, **kw)


def test_gumbel_topk_draws_k_distinct_neighbours_with_the_temperature_law():
    from iclr26.nn.difflift import gumbel_topk_neighbours

    gen = torch.Generator().manual_seed(0)
    d = torch.tensor([0.0, 0.5, 1.0, 2.0])  # distances of four candidates
    draws = 20000
    for t in (0.5, 3.0):
        logits = (-t * d).expand(draws, 4)
        first = gumbel_topk_neighbours(logits, 1, generator=gen)[:, 0]
        freq = torch.bincount(first, minlength=4).double() / draws
        want = torch.softmax(-t * d.double(), 0)  # p_j ∝ exp(-t d_j)
        torch.testing.assert_close(freq, want, atol=0.015, rtol=0)
    # k draws: distinct, allowed columns only, exactly k per row
    logits = torch.randn(50, 12)
    valid = torch.rand(50, 12) > 0.3
    valid[:, :4] = True
    nb = gumbel_topk_neighbours(logits, 4, valid, generator=gen)
    assert nb.shape == (50, 4)
    assert all(len(set(r)) == 4 for r in nb.tolist())
    assert valid.gather(1, nb).all()
    # without sampling: the k largest
    top = gumbel_topk_neighbours(logits, 3, sample=False)
    assert torch.equal(top.sort(1).values, logits.topk(3, 1).indices.sort(1).values)
    with pytest.raises(ValueError, match="k=5"):
        gumbel_topk_neighbours(logits, 5, valid & (torch.arange(12) < 4))


def test_dgm_samples_exactly_k_neighbours_per_node_and_is_equivariant():
    g, y = make_cell_heterophily(60, 3, seed=2)
    model = _dgm(g.features().shape[1], k=4)
    for mode in (model.train(), model.eval()):
        sg = mode.infer(g)
        assert sg.neighbours.shape == (60, 4)
        recv = torch.bincount(sg.edges[:, 1], minlength=60)
        assert (recv == 4).all() and (sg.edges[:, 0] != sg.edges[:, 1]).all()
        assert all(len(set(r)) == 4 for r in sg.neighbours.tolist())
        torch.testing.assert_close(sg.node_logprob, sg.logprob.sum(1))
        torch.testing.assert_close(sg.node_prob, sg.logprob.exp().mean(1))
        assert (sg.logprob <= 0).all()
    # eval: each node's k nearest in the embedding; two graphs in a batch never mix
    two = collate([g, g])
    sg = model.eval().infer(two)
    assert (two.batch[sg.edges[:, 0]] == two.batch[sg.edges[:, 1]]).all()
    out = model(collate([g]))
    assert out.shape == (60, 3)
    perm = np.random.default_rng(0).permutation(60)
    inv = np.argsort(perm)
    pg = make_graph(g.x.numpy()[perm], inv[g.edges.numpy()])
    torch.testing.assert_close(model(collate([pg])), out[perm], atol=1e-5, rtol=1e-5)
    # a higher temperature concentrates the training samples on the nearest neighbours
    model.train()
    torch.manual_seed(1)
    with torch.no_grad():
        z = model.graph_embed(model.pre(collate([g]).x), collate([g]).edges)
        dist = torch.cdist(z, z).fill_diagonal_(float("inf"))
        rank = dist.argsort(1).argsort(1)  # 0 = nearest

        def mean_rank(t):
            model.log_t.fill_(float(np.log(t)))
            return rank.gather(1, model.infer(g).neighbours).float().mean()

        # k = 4 nearest: mean rank 1.5; uniform over the 59 others: 29
        assert mean_rank(1e3) < 3.0 and mean_rank(1e-3) > 20.0


def test_dgm_graph_loss_sign_and_what_it_trains():
    import torch.nn.functional as F

    g, y = make_cell_heterophily(60, 3, seed=2)
    model = _dgm(g.features().shape[1], k=3).train()
    yt, mask = torch.as_tensor(y), torch.arange(60) % 2 == 0
    logits = model(collate([g]))
    F.cross_entropy(logits[mask], yt[mask]).backward(retain_graph=True)
    assert model.log_t.grad is None and model.graph_embed.convs[0].lin.weight.grad is None
    model.zero_grad()
    sg = model.last_graph
    lp = sg.logprob  # keep the per-edge log-probabilities' gradient
    lp.retain_grad()
    aux = model.auxiliary_loss(logits, yt, mask)
    correct = (logits.argmax(1) == yt)[mask].float()
    want = ((0.5 - correct) * sg.logprob[mask].exp().mean(1)).mean()
    torch.testing.assert_close(aux, want)
    aux.backward()
    g_lp = lp.grad.sum(1)
    # descending the loss raises the log-probability of the edges around correct nodes and
    # lowers it around wrong ones; unlabelled nodes get no signal
    idx = torch.nonzero(mask)[:, 0]
    assert (g_lp[idx[correct == 1]] < 0).all() and (g_lp[idx[correct == 0]] > 0).all()
    assert (g_lp[~mask] == 0).all() and 0 < correct.sum() < len(correct)
    assert model.log_t.grad is not None and model.log_t.grad != 0
    torch.testing.assert_close(model._running_acc, 0.475 + 0.05 * correct)
    with pytest.raises(ValueError, match="logits"):
        model.auxiliary_loss(logits[:5], yt, mask)


def test_dgm_learns_a_toy_task_and_validates_its_inputs():
    from iclr26.nn.difflift import DGM

    g, y = make_cell_heterophily(90, 3, seed=6, degree=1.0, signal=2.0)
    train = np.random.default_rng(0).random(90) < 0.6
    model = _dgm(g.features().shape[1])
    train_node_classifier(model, g, y, train, epochs=40, lr=1e-2)
    assert node_accuracy(model, g, y, train) > 0.85
    assert node_accuracy(model, g, y, ~train) > 0.6  # chance is 1/3
    for kw, name in [
        ({"in_dim": 0}, "in_dim"),
        ({"k": 0}, "k"),
        ({"temperature": 0.0}, "temperature"),
        ({"dropout": 1.0}, "dropout"),
        ({"graph_loss_reg": -1.0}, "graph_loss_reg"),
        ({"use_input_graph": 1}, "use_input_graph"),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):
            DGM(**{"in_dim": 4, **kw})
    with pytest.raises(ValueError, match="in_dim"):
        DGM(in_dim=3)(collate([g]))
    with pytest.raises(ValueError, match="k=90"):
        DGM(g.features().shape[1], k=90)(collate([g]))
