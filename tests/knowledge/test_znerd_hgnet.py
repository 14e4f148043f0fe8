"""Tests of the Z-NERD + HGNet room: OSD and TCQK identities, the structural losses, HGNet's
message passing, the GAT fallback against torch-geometric, SphereLite, the SPHERE reader, the
networkx export and the claims at smoke scale."""

import json

import networkx as nx
import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.knowledge.znerd_hgnet import (
    DOMAINS,
    CAFLoss,
    DenseGATConv,
    Document,
    Entity,
    HashingEncoder,
    HGNet,
    HGNetModule,
    HierarchyLoss,
    KGPipeline,
    MultiScaleTCQKAttention,
    OrthogonalSemanticDecomposition,
    Relation,
    SphereLite,
    StandardAttentionTagger,
    TokenEncoder,
    ZNERDTagger,
    acyclicity,
    bio_labels,
    cycle_rate,
    decode_bio,
    load_sphere,
    orthogonal_semantic_decomposition,
    relation_f1,
    separation,
    span_f1,
    to_networkx,
    topo_targets,
)


@pytest.fixture(scope="module")
def lite():
    return SphereLite(0)


# ---------------------------------------------------------------- OSD


def test_osd_decomposes_the_change_into_parallel_and_orthogonal_parts():
    g = torch.Generator().manual_seed(0)
    e = torch.randn(2, 7, 5, generator=g, dtype=torch.float64)
    v_sus, v_div = orthogonal_semantic_decomposition(e)
    prev, delta = e[:, :-1], e[:, 1:] - e[:, :-1]
    # v_sus is a multiple of E_{t-1}; v_div is orthogonal to it; together they give ΔE
    ratio = v_sus[:, 1:] / prev
    assert torch.allclose(ratio, ratio[..., :1].expand_as(ratio), atol=1e-9)
    assert (v_div[:, 1:] * prev).sum(-1).abs().max() < 1e-5
    assert torch.allclose(v_sus[:, 1:] + v_div[:, 1:], delta, atol=1e-12)
    assert torch.all(v_div[:, 0] == 0) and torch.all(v_sus[:, 0] == 0)


def test_osd_constant_sequence_has_no_turn_and_padding_is_zeroed():
    e = torch.ones(1, 4, 3)
    f = OrthogonalSemanticDecomposition()(e)
    assert f.shape == (1, 4, 6)
    assert torch.allclose(f[..., 3:], torch.zeros(1, 4, 3))
    x = torch.randn(1, 5, 3)
    mask = torch.tensor([[True, True, True, False, False]])
    _, v_div = orthogonal_semantic_decomposition(x, mask)
    assert torch.all(v_div[0, 3:] == 0) and v_div[0, 1:3].abs().sum() > 0


# ---------------------------------------------------------------- TCQK


def _copy_projections(src, dst):
    for name in ("q", "k", "v", "out", "norm"):
        getattr(dst, name).load_state_dict(getattr(src, name).state_dict())


def test_tcqk_with_unit_kernels_equals_standard_attention_and_torch_mha():
    torch.manual_seed(0)
    dim, heads = 16, 4
    x = torch.randn(3, 9, dim)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    tcqk = MultiScaleTCQKAttention(dim, heads, (1, 1), dropout=0.0).eval()
    plain = MultiScaleTCQKAttention(dim, heads, None, dropout=0.0).eval()
    _copy_projections(tcqk, plain)
    assert torch.allclose(tcqk(x, mask)[mask], plain(x, mask)[mask], atol=1e-6)
    ref = torch.nn.MultiheadAttention(dim, heads, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([plain.q.weight, plain.k.weight, plain.v.weight]))
        ref.in_proj_bias.copy_(torch.cat([plain.q.bias, plain.k.bias, plain.v.bias]))
        ref.out_proj.weight.copy_(plain.out.weight)
        ref.out_proj.bias.copy_(plain.out.bias)
    attn, _ = ref(x, x, x, key_padding_mask=~mask)
    expected = plain.norm(x + attn)
    assert torch.allclose(plain(x, mask)[mask], expected[mask], atol=1e-5)


def test_tcqk_kernel_width_bounds_the_receptive_field():
    torch.manual_seed(1)
    layer = MultiScaleTCQKAttention(8, 4, (1, 3, 5, 7), dropout=0.0).eval()
    for conv in list(layer.q_convs) + list(layer.k_convs):
        torch.nn.init.normal_(conv.weight)
    x = torch.randn(1, 15, 8)
    q0, _ = layer.queries_keys(x)
    j = 7
    x2 = x.clone()
    x2[0, j] += 1.0
    q1, _ = layer.queries_keys(x2)
    changed = (q1 - q0).abs().sum(-1)[0] > 1e-6  # (heads, T)
    for g, k in enumerate((1, 3, 5, 7)):
        positions = torch.nonzero(changed[g]).flatten().tolist()
        assert positions == list(range(j - k // 2, j + k // 2 + 1))
    assert layer(x).shape == x.shape


# ---------------------------------------------------------------- structural losses


def test_acyclicity_is_zero_on_a_dag_and_positive_on_a_cycle():
    dag = torch.triu(torch.ones(5, 5), diagonal=1)
    assert float(acyclicity(dag)) == pytest.approx(0.0, abs=1e-5)
    two_cycle = torch.tensor([[0.0, 1.0], [1.0, 0.0]], requires_grad=True)
    value = acyclicity(two_cycle)
    assert float(value.detach()) == pytest.approx(2 * np.cosh(1.0) - 2, rel=1e-5)
    value.backward()
    assert torch.isfinite(two_cycle.grad).all() and two_cycle.grad.abs().sum() > 0


def test_hutchinson_trace_estimate_matches_the_exact_value():
    g = torch.Generator().manual_seed(0)
    a = 0.3 * torch.rand(50, 50, generator=g, dtype=torch.float64)
    exact = acyclicity(a)
    est = acyclicity(a, method="hutchinson", probes=400, terms=20, generator=g)
    assert float(exact) > 1.0
    assert abs(float(est) - float(exact)) / float(exact + 50) < 0.05
    assert abs(float(est) - float(exact)) / float(exact) < 0.05


def test_separation_penalises_shortcuts_only():
    chain = torch.zeros(3, 3)
    chain[0, 1] = chain[1, 2] = 1.0
    assert float(separation(chain)) == 0.0
    chain[0, 2] = 1.0
    assert float(separation(chain)) == pytest.approx(1.0)
    loss = HierarchyLoss(1.0, 0.1)
    assert float(loss(chain.unsqueeze(0))) == pytest.approx(0.1, abs=1e-5)


def test_caf_ranking_zero_when_parents_project_above_children_and_w_stays_unit():
    caf = CAFLoss(3, delta=0.5, gammas=(0.0, 0.0))
    with torch.no_grad():
        caf.raw_direction.copy_(torch.tensor([2.0, 0.0, 0.0]))
    h = torch.tensor([[1.0, 0.3, 0.0], [0.5, -1.0, 2.0], [0.0, 5.0, 1.0]])
    edges = torch.tensor([[1, 0], [2, 1]])  # child -> parent; scores 1.0, 0.5, 0.0 (gaps = δ)
    assert float(caf(h, edges).detach()) == pytest.approx(0.0)
    bad = torch.tensor([[0, 1]])  # parent 1 below child 0 by 0.5: hinge 0.5 + δ
    assert float(caf(h, bad).detach()) == pytest.approx(1.0)
    caf2 = CAFLoss(3)
    opt = torch.optim.SGD(caf2.parameters(), lr=1.0)
    topo = torch.tensor([1.0, 0.5, 0.0])
    caf2(h, edges, topo).backward()
    opt.step()
    assert float(caf2.direction.detach().norm()) == pytest.approx(1.0, abs=1e-6)
    anchors = CAFLoss(3, delta=0.0, gammas=(1.0, 0.0))
    with torch.no_grad():
        anchors.raw_direction.copy_(torch.tensor([1.0, 0.0, 0.0]))
    # roots (y_topo = 1) at score 1, leaves at 0: anchor and ranking losses vanish
    h2 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert float(anchors(h2, torch.tensor([[1, 0]]), torch.tensor([1.0, 0.0])).detach()) == 0.0


# ---------------------------------------------------------------- HGNet and baselines


def test_hgnet_message_passing_reduces_without_edges_and_is_permutation_equivariant():
    torch.manual_seed(0)
    net = HGNetModule(6, hidden=8, layers=2, dropout=0.0).eval()
    h = torch.randn(1, 5, 8)
    zeros = torch.zeros(1, 5, 5)
    expected = h
    for update in net.update:
        expected = update(torch.cat([expected, torch.zeros(1, 5, 24)], dim=-1))
    assert torch.allclose(net.propagate(h, zeros, zeros), expected)
    x = torch.randn(2, 5, 6)
    perm = torch.tensor([3, 0, 4, 1, 2])
    out, out_p = net(x), net(x[:, perm])
    assert torch.allclose(out["h"][:, perm], out_p["h"], atol=1e-5)
    assert torch.allclose(out["logits"][:, perm][:, :, perm], out_p["logits"], atol=1e-5)
    assert torch.allclose(out["latent"].sum(-1)[0].diagonal(), torch.zeros(5))


def test_dense_gat_matches_torch_geometric():
    from torch_geometric.nn import GATConv

    torch.manual_seed(0)
    ref = GATConv(6, 4, heads=2)
    mine = DenseGATConv(6, 4, heads=2)
    with torch.no_grad():
        mine.lin.weight.copy_(ref.lin.weight)
        mine.att_src.copy_(ref.att_src.view(1, 1, 2, 4))
        mine.att_dst.copy_(ref.att_dst.view(1, 1, 2, 4))
        mine.bias.copy_(ref.bias)
    x = torch.randn(1, 5, 6)
    adj = torch.rand(1, 5, 5) > 0.4
    src, dst = adj[0].nonzero(as_tuple=True)
    expected = ref(x[0], torch.stack([src, dst]))
    assert torch.allclose(mine(x, adj)[0], expected, atol=1e-5)


def test_hgnet_fit_predict_and_graph_export(lite):
    train, test = lite.zero_shot_split(16, 6)
    enc = HashingEncoder(16)
    model = HGNet(enc, hidden=16, epochs=2).fit(train)
    assert model.losses_[0] > 0 and np.isfinite(model.losses_).all()
    rels = model.predict(test)
    assert len(rels) == len(test)
    scores = model.abstraction_scores(test)
    assert [len(s) for s in scores] == [len(d.entities) for d in test]
    assert model.forward_flops(5) > model.forward_flops(4)
    tagger = ZNERDTagger(enc, proj_dim=16).fit(train, epochs=1)
    kg = KGPipeline(tagger, model).build([d.text for d in test])
    assert isinstance(kg, nx.DiGraph)
    gold = to_networkx(test)
    child, parent = next((u, v) for u, v, t in gold.edges(data="type") if t == "is-a-subconcept-of")
    assert gold.nodes[parent]["type"] in ("Field", "Method", "Concept")
    assert child != parent


def test_tagger_learns_in_domain_and_baseline_is_parameter_matched(lite):
    docs = lite.documents(40, ("physics",))
    enc = HashingEncoder(32)
    z = ZNERDTagger(enc, proj_dim=32).fit(docs, epochs=20, lr=1e-2, batch_size=8)
    base = StandardAttentionTagger(enc, proj_dim=32)
    assert abs(base.n_parameters() / z.n_parameters() - 1) < 0.1
    assert np.mean(z.losses_[-5:]) < 0.5 * np.mean(z.losses_[:5])
    assert z.evaluate(docs[:10])["f1"] > 0.3


def test_relation_f1_and_cycle_rate_by_hand():
    ents = [Entity(f"T{i}", f"e{i}", "Concept", ((2 * i, 2 * i + 1),)) for i in range(3)]
    doc = Document(
        "a b c d",
        ents,
        [Relation("T1", "T0", "is-a-subconcept-of"), Relation("T1", "T2", "related-to")],
    )
    pred = [
        [
            Relation("T1", "T0", "is-a-subconcept-of"),
            Relation("T0", "T2", "is-a-subconcept-of"),
            Relation("T2", "T1", "related-to"),
        ]
    ]
    out = relation_f1(pred, [doc])
    assert out["hier_f1"] == pytest.approx(2 / 3)  # P 1/2, R 1
    assert out["peer_f1"] == pytest.approx(1.0)  # related-to is symmetric
    assert out["f1"] == pytest.approx(0.8)
    p = np.zeros((3, 3, 4))
    p[0, 1, 1] = p[1, 0, 1] = 0.9
    assert cycle_rate([p, np.zeros((3, 3, 4))]) == 0.5


# ---------------------------------------------------------------- BIO and span F1


def test_bio_labels_repair_and_span_f1():
    offsets = np.array([[0, 3], [4, 8], [9, 12], [13, 15], [16, 20]])
    labels = bio_labels(offsets, [(4, 12, "Method")])
    assert labels.tolist() == [0, 3, 4, 0, 0]
    # I-Concept after O is repaired to a new span; I of another type starts a new span
    ids = np.array([6, 3, 4, 6, 0])
    assert decode_bio(ids, offsets) == [(0, 3, "Concept"), (4, 12, "Method"), (13, 15, "Concept")]
    gold = [[(4, 12, "Method"), (16, 20, "Field")]]
    pred = [[(4, 12, "Concept"), (13, 15, "Concept")]]
    assert span_f1(pred, gold)["f1"] == pytest.approx(0.5)
    assert span_f1(pred, gold, typed=True)["f1"] == 0.0


# ---------------------------------------------------------------- data


def test_spherelite_spans_dag_disjoint_domains_and_determinism(lite):
    docs = lite.documents(40)
    for d in docs:
        for e in d.entities:
            for s, t in e.spans:
                assert d.text[s:t].lower() == e.name
        assert 4 <= len(d.entities) <= 8
    for dom in DOMAINS:
        assert nx.is_directed_acyclic_graph(lite.kg(dom))
        assert 100 <= lite.kg(dom).number_of_nodes() <= 300
    words = {d: lite.domain_words(d) for d in DOMAINS}
    assert not (words["physics"] | words["biology"]) & (
        words["computer_science"] | words["materials"]
    )
    train, test = lite.zero_shot_split(10, 10)
    assert {d.domain for d in train} == {"physics", "biology"}
    assert {d.domain for d in test} == {"computer_science", "materials"}
    again = SphereLite(0).documents(40)
    assert [d.text for d in again] == [d.text for d in docs]
    assert SphereLite(1).documents(3)[0].text != docs[0].text
    tt = topo_targets(docs[0])
    assert max(tt.values()) == 1.0 and min(tt.values()) == 0.0


def _record(text, name, span):
    return {
        "text": text,
        "entities": [
            {"id": "T0", "name": name, "span": span, "type": "Method"},
            {"id": "T1", "name": "b", "span": [6, 7], "type": "Field"},
        ],
        "relations": [{"source": "T0", "target": "T1", "type": "is-a-subconcept-of"}],
    }


def test_load_sphere_reads_and_reports_broken_offsets(tmp_path):
    good = _record("aaa x b", "aaa", [0, 3])
    bad = _record("aaa x b", "aaa", [2, 40])
    path = tmp_path / "cs.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match="cs.jsonl:2.*broken offset"):
        load_sphere(path)
    docs, report = load_sphere(path, errors="skip", return_report=True)
    assert report.kept == 1 and report.rejected == 1 and "outside" in report.reasons[0]
    assert docs[0].relations[0].type == "is-a-subconcept-of" and docs[0].domain == "cs"
    wrong_text = _record("aaa x b", "zzz", [0, 3])
    path.write_text(json.dumps(wrong_text) + "\n")
    with pytest.raises(ValueError, match="not the entity name"):
        load_sphere(path)


def test_token_encoder_chunks_long_texts_and_aligns_offsets():
    enc = TokenEncoder(max_length=16)
    text = " ".join(["quantum optics depends on harmonic lattice"] * 8)
    ((feats, offs),) = enc.encode([text])
    assert enc.n_chunked == 1
    assert feats.shape == (len(offs), 384) and np.isfinite(feats).all()
    assert text[offs[0][0] : offs[0][1]] == "quantum"
    assert np.all(np.diff(offs[:, 0]) > 0)


def test_token_encoder_counts_windowed_texts_read_back_from_its_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    long_text = " ".join(["quantum optics depends on harmonic lattice"] * 8)
    texts = [long_text, "graph kernels", long_text + " again"]
    first = TokenEncoder(max_length=16, cache=True)
    feats = first.encode(texts)
    assert first.n_chunked == 2
    again = TokenEncoder(max_length=16, cache=True)  # reads the features from disk
    assert [f.shape for f, _ in again.encode(texts)] == [f.shape for f, _ in feats]
    assert again.n_chunked == 2 and again._model is None


# ---------------------------------------------------------------- claims


@pytest.mark.parametrize("name", ["cross-domain-ner", "hierarchical-re"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("znerd_hgnet", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced")
    assert not contract_problems(record)
