"""∂lift's simplicial domain: signed boundaries (∂∘∂ = 0, Betti numbers of known complexes),
the clique-complex lifting and its learned selection, the simplicial network's operators by hand
and against a dense reference, invariances, gradients into the lifting, and the plain export."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from iclr26.nn.difflift import (
    DiffLift,
    DiffLiftClassifier,
    DiffLiftNodeClassifier,
    SCNLite,
    SimplicialLifter,
    StaticLiftNet,
    collate,
    from_networkx,
    hodge_operators,
    lift_static,
    make_cell_heterophily,
    make_clique_vote,
    make_ring_parity,
    train_graph_classifier,
)
from iclr26.nn.difflift.graphs import make_graph
from iclr26.nn.difflift.simplicial import _Operators

torch.set_num_threads(1)


def _graph(g: nx.Graph, dim: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    for v in g.nodes:
        g.nodes[v]["x"] = rng.normal(size=dim).tolist()
    return from_networkx(g)


def _simplicial(g: nx.Graph):
    return lift_static(collate([_graph(g)]), "clique", domain="simplicial")


def _betti(lc) -> tuple[int, int, int]:
    B1, B2 = (m.numpy() for m in lc.boundary_matrices(signed=True))
    r1 = np.linalg.matrix_rank(B1) if B1.size else 0
    r2 = np.linalg.matrix_rank(B2) if B2.size else 0
    return lc.n_nodes - r1, B1.shape[1] - r1 - r2, B2.shape[1] - r2


def test_boundary_of_a_boundary_is_zero():
    for seed in range(3):
        lc = _simplicial(nx.gnp_random_graph(14, 0.6, seed=seed))
        assert lc.n_cells > 10
        B1, B2 = lc.boundary_matrices(signed=True)
        assert torch.equal(B1 @ B2, torch.zeros(B1.shape[0], B2.shape[1]))
        # each triangle [a, b, c] has boundary [b, c] − [a, c] + [a, b]
        eid = {tuple(e): i for i, e in enumerate(lc.edges.tolist())}
        for j, (a, b, c) in enumerate(lc.cells):
            want = torch.zeros(B2.shape[0])
            want[eid[(b, c)]], want[eid[(a, c)]], want[eid[(a, b)]] = 1.0, -1.0, 1.0
            torch.testing.assert_close(B2[:, j], want)
    # the signs follow any 2-cell's boundary walk: basis cycles of the cell domain too
    lc = lift_static(collate(make_ring_parity(6, seed=2)), "cycle")
    B1, B2 = lc.boundary_matrices(signed=True)
    assert torch.equal(B1 @ B2, torch.zeros(B1.shape[0], B2.shape[1]))
    # a wrong sign on one entry would break it
    B2[lc.edge_of[0], lc.cell_of[0]] *= -1
    assert (B1 @ B2).abs().sum() > 0


def test_incidence_counts_and_betti_numbers_of_known_complexes():
    k4 = _simplicial(nx.complete_graph(4))  # the hollow tetrahedron: a 2-sphere
    assert k4.edges.shape[0] == 6 and k4.n_cells == 4
    B1, B2 = (m.abs() for m in k4.boundary_matrices(signed=True))
    assert torch.equal(B1.sum(0), torch.full((6,), 2.0))
    assert torch.equal(B2.sum(0), torch.full((4,), 3.0))
    assert torch.equal(B2.sum(1), torch.full((6,), 2.0))  # each edge lies in two triangles
    assert _betti(k4) == (1, 0, 1)
    assert _betti(_simplicial(nx.octahedral_graph())) == (1, 0, 1)  # 8 triangles, a sphere
    assert _simplicial(nx.octahedral_graph()).n_cells == 8
    assert _betti(_simplicial(nx.cycle_graph(5))) == (1, 1, 0)  # no triangle: one hole
    diamond = nx.Graph([(0, 1), (1, 2), (2, 0), (1, 3), (3, 2)])
    assert _betti(_simplicial(diamond)) == (1, 0, 0)
    two = nx.disjoint_union(nx.cycle_graph(6), nx.complete_graph(3))
    assert _betti(_simplicial(two)) == (2, 1, 0)
    # the Hodge 1-Laplacian's kernel has dimension β1
    lc = _simplicial(nx.disjoint_union(nx.cycle_graph(5), nx.complete_graph(5)))
    B1, B2 = lc.boundary_matrices(signed=True)
    L1 = B1.T @ B1 + B2 @ B2.T
    assert int((torch.linalg.eigvalsh(L1) < 1e-6).sum()) == _betti(lc)[1] == 1
    # the clique lifting's triangles are exactly networkx's 3-cliques
    g = nx.gnp_random_graph(16, 0.4, seed=9)
    tris = {tuple(sorted(c)) for c in nx.enumerate_all_cliques(g) if len(c) == 3}
    assert {tuple(c) for c in _simplicial(g).cells} == tris
    assert lift_static(collate([_graph(g)]), "none", domain="simplicial").n_cells == 0


def test_operators_by_hand_on_one_triangle():
    N0, N1, N2 = hodge_operators(_simplicial(nx.complete_graph(3)))
    L0 = torch.tensor([[2.0, -1, -1], [-1, 2, -1], [-1, -1, 2]])
    torch.testing.assert_close(N0, L0 / 4)  # absolute row sums 4
    # edges: every pair shares a node (down 1, diagonal 2) and the triangle (up 1)
    L1 = torch.full((3, 3), 2.0) + torch.eye(3)
    torch.testing.assert_close(N1, L1 / 7)
    torch.testing.assert_close(N2, torch.ones(1, 1))


def test_network_operators_match_the_dense_reference_with_rejected_simplices():
    lc = _simplicial(nx.gnp_random_graph(12, 0.5, seed=4))
    gen = torch.Generator().manual_seed(0)
    lc.edge_w = (torch.rand(lc.edges.shape[0], generator=gen) > 0.3).float()
    lc.cell_w = (torch.rand(lc.n_cells, generator=gen) > 0.4).float()
    assert 0 < lc.edge_w.sum() < len(lc.edge_w) and 0 < lc.cell_w.sum() < len(lc.cell_w)
    ops = _Operators(lc)
    dense = hodge_operators(lc)
    for r, n in enumerate((lc.n_nodes, lc.edges.shape[0], lc.n_cells)):
        h = torch.randn(n, 5, generator=gen)
        torch.testing.assert_close(ops.conv(r, h), dense[r] @ h, atol=1e-5, rtol=1e-5)
    # a rejected triangle sends nothing: its column of N1's upper part and of N2 is zero
    off = torch.nonzero(lc.cell_w == 0).flatten()
    assert torch.equal(dense[2][:, off], torch.zeros(lc.n_cells, off.numel()))


def _permuted(g, seed=0):
    perm = torch.randperm(g.n_nodes, generator=torch.Generator().manual_seed(seed))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.n_nodes)
    return make_graph(g.x[perm].numpy(), inv[g.edges].numpy(), g.y), perm


@pytest.mark.parametrize("cross_rank", [False, True])
def test_graph_logits_are_permutation_invariant(cross_rank):
    g = make_clique_vote(1, seed=3)[0]  # planted cliques: many triangles
    gp, _ = _permuted(g)
    d = g.features().shape[1]
    torch.manual_seed(4)  # an initialisation that keeps some of the proposed edges
    model = DiffLift("simplicial", in_dim=d, hidden=16, tnn_layers=2).eval()
    model.tnn = SCNLite(16, 2, layers=2, cross_rank=cross_rank).eval()
    with torch.no_grad():
        st = model.lift(collate([g])).stats
        assert st["accepted_cells"] > 0 and 0 < st["accepted_new_edges"] < st["candidate_edges"]
        torch.testing.assert_close(model(collate([g])), model(collate([gp])), atol=1e-4, rtol=1e-4)
    static = StaticLiftNet("clique", "simplicial", in_dim=d, hidden=16, tnn_layers=2).eval()
    with torch.no_grad():
        torch.testing.assert_close(
            static(collate([g])), static(collate([gp])), atol=1e-4, rtol=1e-4
        )


def test_node_logits_are_permutation_equivariant():
    g, _ = make_cell_heterophily(40, 2, seed=1)
    gp, perm = _permuted(g, seed=2)
    torch.manual_seed(0)
    model = DiffLift(
        "simplicial", in_dim=g.features().shape[1], hidden=8, tnn_layers=2, task="node"
    ).eval()
    with torch.no_grad():
        out, outp = model(collate([g])), model(collate([gp]))
    assert out.shape == (40, 2)
    torch.testing.assert_close(out[perm], outp, atol=1e-4, rtol=1e-4)


def test_gradients_reach_the_edge_and_triangle_scores():
    graphs = make_clique_vote(4, seed=0)
    batch = collate(graphs)
    torch.manual_seed(0)
    model = DiffLift("simplicial", in_dim=graphs[0].features().shape[1], hidden=16, tnn_layers=2)
    model.train()
    z = model.embedder(batch.x, batch.edges, batch.batch)
    lc = model.lifter(batch, z, torch.Generator().manual_seed(0))
    assert lc.cell_p.numel() > 0 and lc.edge_p is not None
    loss = torch.nn.functional.cross_entropy(model.tnn(z, lc, batch.n_graphs), batch.y)
    g_cell, g_edge = torch.autograd.grad(loss, [lc.cell_p, lc.edge_p], retain_graph=True)
    assert g_cell.abs().sum() > 0 and g_edge.abs().sum() > 0
    loss.backward()
    for head in (model.lifter.cell_head, model.lifter.edge_head):
        assert sum(p.grad.abs().sum() for p in head.parameters()) > 0


def test_forced_acceptance_reduces_to_the_static_liftings():
    graphs = make_clique_vote(3, seed=5)
    batch = collate(graphs)
    d = graphs[0].features().shape[1]
    torch.manual_seed(0)
    model = DiffLift("simplicial", in_dim=d, hidden=16, tnn_layers=2).eval()
    with torch.no_grad():
        z = model.embedder(batch.x, batch.edges, batch.batch)
        model.lifter.force_p = 0.0  # nothing new enters: the 1-skeleton of the input graph
        none = model.tnn(z, lift_static(batch, "none", domain="simplicial"), 3)
        lc0 = model.lifter(batch, z)
        assert lc0.stats["accepted_cells"] == 0 and lc0.stats["accepted_new_edges"] == 0
        torch.testing.assert_close(model.tnn(z, lc0, 3), none)
        model.lifter.force_p = 1.0
        model.lifter.learn_edges = False  # every triangle of the input graph: the clique lifting
        lc1 = model.lifter(batch, z)
        static = lift_static(batch, "clique", domain="simplicial")
        assert lc1.cells == static.cells
        torch.testing.assert_close(model.tnn(z, lc1, 3), model.tnn(z, static, 3))
        assert not torch.allclose(model.tnn(z, lc1, 3), none)  # the triangles do count


def test_learned_complex_is_closed_under_faces_and_exports():
    g = make_clique_vote(1, seed=2)[0]
    torch.manual_seed(1)
    model = DiffLift("simplicial", in_dim=g.features().shape[1], hidden=16).train()
    lc = model.lift(collate([g]))  # sampled acceptance: some edges and triangles rejected
    kept = {tuple(e) for e in lc.accepted_edges().tolist()}
    for a, b, c in lc.accepted_cells():
        assert {(a, b), (a, c), (b, c)} <= kept
    plain = lc.to_plain(0)
    assert plain["domain"] == "simplicial" and len(plain["edges"]) == len(kept)
    assert plain["B1"].shape == (g.n_nodes, len(kept))
    assert plain["B2"].shape == (len(kept), len(lc.accepted_cells()))
    np.testing.assert_array_equal(plain["B1"] @ plain["B2"], 0.0)
    with pytest.raises(ValueError, match="graph"):
        lc.to_plain(3)
    hyper = lift_static(collate([g]), "clique", domain="hypergraph").to_plain()
    assert hyper["B2"] is None and hyper["B1"].shape[0] == g.n_nodes


def test_training_and_the_facades_in_the_simplicial_domain():
    graphs = make_clique_vote(8, seed=11)
    d = graphs[0].features().shape[1]
    torch.manual_seed(0)
    model = DiffLift("simplicial", in_dim=d, hidden=16, tnn_layers=1, dropout=0.0)
    losses = train_graph_classifier(model, graphs, epochs=15, batch_size=8, lr=1e-2)
    assert losses[-1] < losses[0] - 0.05
    nx_graphs = [g.to_networkx() for g in graphs]
    for lifting in ("learned", "clique"):
        clf = DiffLiftClassifier("simplicial", lifting, hidden=8, epochs=1).fit(nx_graphs)
        assert clf.predict(nx_graphs).shape == (8,)
    g, y = make_cell_heterophily(30, 2, seed=0)
    node = DiffLiftNodeClassifier("simplicial", hidden=8, tnn_layers=1, epochs=2)
    assert node.fit(g, np.where(np.arange(30) % 2 == 0, y, -1)).predict(g).shape == (30,)
    assert isinstance(model.lifter, SimplicialLifter)
