"""∂lift's GPS embedder: the random-walk encoding by hand, one layer against a dense reference,
permutation equivariance, attention kept inside each graph, the encoding as the only source of
structure it is given, gradients through ∂lift, and the options' validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.nn.difflift import (
    DiffLift,
    GINNet,
    GPSEmbedder,
    StaticLiftNet,
    collate,
    make_ring_parity,
    rwse,
)
from iclr26.nn.difflift.graphs import make_graph

pytest.importorskip("torch_geometric")
torch.set_num_threads(1)


def _cycle(n: int) -> np.ndarray:
    return np.array([[i, (i + 1) % n] for i in range(n)])


def test_rwse_on_a_cycle_by_hand_and_against_torch_geometric():
    # on C6 a closed walk of t steps has an even number of steps; of the 2^t walks from a node,
    # C(t, t/2) return (as many steps each way), plus the 2 that go round the ring when t = 6
    pe = rwse(_cycle(6), 6, steps=6)
    want = [0.0, 2 / 4, 0.0, 6 / 16, 0.0, (20 + 2) / 64]
    np.testing.assert_allclose(pe, np.tile(want, (6, 1)), atol=1e-12)
    # on C3 (a triangle) the return probability after t steps is (1 + 2 (-1/2)^t) / 3
    t = np.arange(1, 9)
    np.testing.assert_allclose(rwse(_cycle(3), 3, 8), np.tile((1 + 2 * (-0.5) ** t) / 3, (3, 1)))
    from torch_geometric.data import Data
    from torch_geometric.transforms import AddRandomWalkPE

    g = make_ring_parity(1, seed=3)[0]
    ei = torch.cat([g.edges, g.edges.flip(1)]).t()
    ref = AddRandomWalkPE(walk_length=8, attr_name="pe")(Data(edge_index=ei, num_nodes=g.n_nodes))
    torch.testing.assert_close(g.pe, ref.pe.float(), atol=1e-5, rtol=1e-5)


def _reference_layer(conv, h, edges, batch):
    """One GPS layer written densely: GIN + residual + BN, attention within each graph +
    residual + BN, their sum + MLP + BN (eval mode)."""
    n = h.shape[0]
    A = torch.zeros(n, n)
    A[edges[:, 0], edges[:, 1]] = 1.0
    A[edges[:, 1], edges[:, 0]] = 1.0
    local = conv.norm1(conv.conv.nn(h + A @ h) + h)
    att = torch.zeros_like(h)
    for b in batch.unique():
        idx = torch.nonzero(batch == b).flatten()
        hb = h[idx][None]
        att[idx] = conv.attn(hb, hb, hb, need_weights=False)[0][0]
    glob = conv.norm2(att + h)
    s = local + glob
    return conv.norm3(s + conv.mlp(s))


def test_gps_layers_match_a_dense_reference_and_read_the_rwse_columns():
    graphs = make_ring_parity(3, seed=4)
    b = collate(graphs)
    d = b.x.shape[1]
    torch.manual_seed(0)
    emb = GPSEmbedder(d, hidden=16, layers=2, heads=4, pe_steps=8, pe_dim=4).eval()
    for m in emb.modules():  # non-trivial running statistics for the batch norms
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    with torch.no_grad():
        raw, pe = b.x[:, : d - 8], b.x[:, d - 8 :]
        h = torch.cat([emb.node_emb(raw), emb.pe_lin(emb.pe_norm(pe))], 1)
        for conv in emb.convs:
            h = _reference_layer(conv, h, b.edges, b.batch)
        torch.testing.assert_close(emb(b.x, b.edges, b.batch), h, atol=1e-5, rtol=1e-5)
    assert emb(b.x, b.edges, b.batch).shape == (b.x.shape[0], 16)
    # the defaults follow the released code: 5 layers, 4 heads, 8 PE channels
    default = GPSEmbedder(d, hidden=32)
    assert len(default.convs) == 5 and default.convs[0].heads == 4
    assert default.pe_lin.out_features == 8 and default.pe_lin.in_features == 8


def test_gps_embeddings_are_permutation_equivariant_and_stay_inside_each_graph():
    g, other = make_ring_parity(2, seed=7)
    perm = torch.randperm(g.n_nodes, generator=torch.Generator().manual_seed(0))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.n_nodes)
    gp = make_graph(g.x[perm].numpy(), inv[g.edges].numpy(), g.y)
    torch.manual_seed(0)
    emb = GPSEmbedder(g.features().shape[1], hidden=16, layers=3).eval()
    with torch.no_grad():
        z = emb(g.features(), g.edges)
        zp = emb(gp.features(), gp.edges)
        torch.testing.assert_close(zp, z[perm], atol=1e-5, rtol=1e-5)
        # attention does not cross graphs: g's embeddings are the same alone and in a batch
        b = collate([other, g])
        zb = emb(b.x, b.edges, b.batch)[other.n_nodes :]
        torch.testing.assert_close(zb, z, atol=1e-5, rtol=1e-5)
    # a whole model is invariant (graph logits) and equivariant (node logits); candidate
    # triangles, since a cycle basis of the enlarged skeleton depends on the node order
    d = g.features().shape[1]
    torch.manual_seed(1)
    model = DiffLift(
        "cell", in_dim=d, hidden=16, tnn_layers=1, gnn="gps", cell_candidates="triangles"
    ).eval()
    node = GINNet(in_dim=d, hidden=16, gnn="gps", task="node").eval()
    with torch.no_grad():
        torch.testing.assert_close(model([g]), model([gp]), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(node([gp]), node([g])[perm], atol=1e-4, rtol=1e-4)


def test_the_random_walk_encoding_is_what_tells_a_hexagon_from_two_triangles():
    # C6 and two disjoint triangles: every node has degree 2, so message passing and attention
    # over equal features cannot tell them apart; the return probabilities can (t = 3: 0 vs 1/4)
    ones6 = np.ones((6, 2))
    two_tri = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 5], [5, 3]])
    torch.manual_seed(0)
    with_pe = [make_graph(ones6, e) for e in (_cycle(6), two_tri)]
    emb = GPSEmbedder(with_pe[0].features().shape[1], hidden=16, layers=2).eval()
    with torch.no_grad():
        z6, z33 = (emb(g.features(), g.edges) for g in with_pe)
    assert (z6 - z33).abs().max() > 1e-3
    no_pe = [make_graph(ones6, e, rwse_steps=0) for e in (_cycle(6), two_tri)]
    emb0 = GPSEmbedder(2, hidden=16, layers=2, pe_steps=0).eval()
    with torch.no_grad():
        z6, z33 = (emb0(g.features(), g.edges) for g in no_pe)
    torch.testing.assert_close(z6, z33)


def test_gradients_reach_every_gps_parameter_and_both_acceptance_heads():
    graphs = make_ring_parity(6, seed=2)
    b = collate(graphs)
    torch.manual_seed(0)
    model = DiffLift("cell", in_dim=b.x.shape[1], hidden=16, tnn_layers=1, gnn="gps")
    model._generator = torch.Generator().manual_seed(0)
    loss = torch.nn.functional.cross_entropy(model.train()(b), b.y)
    loss.backward()
    for name, p in model.embedder.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    for head in (model.lifter.edge_head, model.lifter.cell_head):
        assert sum(p.grad.abs().sum() for p in head.parameters()) > 0
    static = StaticLiftNet("cycle", in_dim=b.x.shape[1], hidden=16, tnn_layers=1, gnn="gps")
    assert len(static.embedder.convs) == 5


def test_gps_options_are_validated():
    with pytest.raises(ValueError, match="heads"):
        GPSEmbedder(12, hidden=18, heads=4)
    with pytest.raises(ValueError, match="pe_steps"):
        GPSEmbedder(8, hidden=16, pe_steps=8)
    with pytest.raises(ValueError, match="pe_dim"):
        GPSEmbedder(12, hidden=16, pe_dim=16)
    with pytest.raises(ValueError, match="gnn"):
        DiffLift("cell", in_dim=12, hidden=16, gnn="gat")
