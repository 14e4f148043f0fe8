"""∂lift's device handling: the CPU default reproduces the earlier results, ``device="cpu"``
passed explicitly changes nothing, a bad device is refused, the claims pick ``ctx.device`` at
full scale only, and (where a GPU is visible) one small training runs on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26.claims import Context, Scale
from iclr26.nn.difflift import (
    DCM,
    DGM,
    DiffLift,
    accuracy,
    collate,
    lift_static,
    make_cell_heterophily,
    make_clique_vote,
    make_ring_parity,
    node_accuracy,
    train_graph_classifier,
    train_node_classifier,
)
from iclr26.nn.difflift.claims import _device
from iclr26.nn.difflift.models import predict_logits

# losses and accuracies of the runs below, computed before the models took a device argument
REF_CELL_LOSS = [0.6918730735778809, 0.721614420413971]
REF_CELL_LOGITS = [
    [0.1181170865893364, 0.0696214810013771],
    [0.11507575213909149, 0.06959982216358185],
]
REF_HG_LOSS = [0.6714430451393127, 0.6655833721160889]
REF_HG_ACC = 0.8333333134651184
REF_NODE_LOSS = [1.0731050968170166, 1.097337007522583, 1.0880235433578491]
REF_DCM_LOSS = [1.0409406423568726, 0.5602023601531982, 0.9830203056335449]
REF_DGM_LOSS = [1.2861273288726807, 1.1723252534866333, 1.1437190771102905]
# The values were recorded on one CPU; other CPUs' torch kernels (seen with both AVX2 and AVX512
# kernels) change the hypergraph and DCM losses in the fourth digit (hypergraph 0.67190 /
# 0.66589), the cell losses not at all. So the trained values other than the cell losses are
# held to 2e-3 (relative); the default-vs-CPU identities below are exact everywhere.
KERNEL_REL = 2e-3


def _graph_runs(**kw):
    rp, cv = make_ring_parity(24, seed=1), make_clique_vote(16, seed=2)
    torch.manual_seed(0)
    cell = DiffLift("cell", in_dim=rp[0].features().shape[1], hidden=16, tnn_layers=1)
    cell_loss = train_graph_classifier(cell, rp[:16], epochs=2, seed=0, **kw)
    cell_acc = accuracy(cell, rp[16:], **kw)
    torch.manual_seed(0)
    hg = DiffLift("hypergraph", in_dim=cv[0].features().shape[1], hidden=16, tnn_layers=1)
    hg_loss = train_graph_classifier(hg, cv[:10], epochs=2, seed=0, **kw)
    return dict(
        cell_loss=cell_loss,
        cell_acc=cell_acc,
        cell_logits=predict_logits(cell, rp[16:]),
        hg_loss=hg_loss,
        hg_acc=accuracy(hg, cv[10:], **kw),
    )


def _node_runs(**kw):
    g, y = make_cell_heterophily(60, 3, seed=5)
    train = np.random.default_rng(0).permutation(60) < 30
    d = g.features().shape[1]
    out = {}
    builds = {
        "learned": lambda: DiffLift(
            "cell",
            in_dim=d,
            hidden=16,
            n_classes=3,
            tnn_layers=1,
            cell_candidates="triangles",
            task="node",
        ),  # fmt: skip
        "dcm": lambda: DCM(in_dim=d, hidden=16, n_classes=3, conv_layers=1),
        "dgm": lambda: DGM(in_dim=d, hidden=16, n_classes=3, conv_layers=1),
    }
    for name, build in builds.items():
        torch.manual_seed(0)
        model = build()
        out[name] = train_node_classifier(model, g, y, train, epochs=3, seed=0, **kw)
        out[name + "_acc"] = node_accuracy(model, g, y, ~train, **kw)
    return out


def test_default_device_reproduces_the_earlier_results_and_explicit_cpu_is_identical():
    default, cpu = _graph_runs(), _graph_runs(device="cpu")
    assert default["cell_loss"] == pytest.approx(REF_CELL_LOSS, rel=1e-6, abs=1e-7)
    assert default["cell_logits"][:2].tolist() == pytest.approx(
        np.asarray(REF_CELL_LOGITS), rel=1e-5, abs=1e-7
    )
    assert default["hg_loss"] == pytest.approx(REF_HG_LOSS, rel=KERNEL_REL, abs=1e-7)
    assert default["hg_acc"] == pytest.approx(REF_HG_ACC)
    assert default["cell_logits"].device.type == "cpu"
    for key in ("cell_loss", "cell_acc", "hg_loss", "hg_acc"):
        assert default[key] == cpu[key], key
    assert torch.equal(default["cell_logits"], cpu["cell_logits"])
    node_default, node_cpu = _node_runs(), _node_runs(device=torch.device("cpu"))
    assert node_default["learned"] == pytest.approx(REF_NODE_LOSS, rel=KERNEL_REL, abs=1e-7)
    assert node_default["dcm"] == pytest.approx(REF_DCM_LOSS, rel=KERNEL_REL, abs=1e-7)
    assert node_default["dgm"] == pytest.approx(REF_DGM_LOSS, rel=KERNEL_REL, abs=1e-7)
    assert node_default == node_cpu


@pytest.mark.parametrize("bad, error", [("gpu9", ValueError), (0, TypeError), (None, TypeError)])
def test_a_bad_device_is_refused_by_name(bad, error):
    g, y = make_cell_heterophily(18, 3, seed=0, degree=2.0)
    model = DiffLift("cell", in_dim=g.features().shape[1], hidden=4, n_classes=3, task="node")
    mask = np.ones(18, dtype=bool)
    graphs = make_ring_parity(2)
    gmodel = DiffLift("cell", in_dim=graphs[0].features().shape[1], hidden=4)
    calls = [
        lambda: train_graph_classifier(gmodel, graphs, epochs=1, device=bad),
        lambda: accuracy(gmodel, graphs, device=bad),
        lambda: train_node_classifier(model, g, y, mask, epochs=1, device=bad),
        lambda: node_accuracy(model, g, y, mask, device=bad),
    ]
    for call in calls:
        with pytest.raises(error, match="device"):
            call()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a GPU")
def test_cuda_without_a_gpu_is_refused():
    graphs = make_ring_parity(2)
    gmodel = DiffLift("cell", in_dim=graphs[0].features().shape[1], hidden=4)
    with pytest.raises(ValueError, match="device: 'cuda'.*no CUDA"):
        train_graph_classifier(gmodel, graphs, epochs=1, device="cuda")


def test_claims_use_the_context_device_at_full_scale_only():
    assert _device(Context(scale=Scale.SMOKE, device="cuda")) == "cpu"
    assert _device(Context(scale=Scale.QUICK, device="cuda")) == "cpu"
    assert _device(Context(scale=Scale.FULL, device="cuda:1")) == "cuda:1"
    assert _device(Context(scale=Scale.FULL, device="cpu")) == "cpu"


def test_batches_and_static_liftings_follow_the_device_of_their_input():
    graphs = make_ring_parity(3, seed=2)
    b = collate(graphs, device="cpu")
    ref = collate(graphs)
    assert torch.equal(b.x, ref.x) and torch.equal(b.edges, ref.edges)
    # the static lifting's tensors are created on the batch's device
    lc = lift_static(ref, "cycle")
    assert lc.cell_of.device == lc.edge_w.device == ref.x.device


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("domain", ["cell", "simplicial", "hypergraph"])
def test_one_small_training_runs_on_cuda(domain):
    graphs = make_ring_parity(12, seed=3)
    torch.manual_seed(0)
    model = DiffLift(domain, in_dim=graphs[0].features().shape[1], hidden=8, tnn_layers=1)
    losses = train_graph_classifier(model, graphs[:8], epochs=2, seed=0, device="cuda")
    assert next(model.parameters()).device.type == "cuda"
    assert len(losses) == 2 and all(np.isfinite(losses))
    lc = model.eval().lift(collate(graphs[8:], device="cuda"))
    assert lc.edges.device.type == "cuda" and lc.node_batch.device.type == "cuda"
    acc = accuracy(model, graphs[8:], device="cuda")
    assert 0.0 <= acc <= 1.0
    assert predict_logits(model, graphs[8:]).device.type == "cpu"
    g, y = make_cell_heterophily(40, 3, seed=1)
    mask = np.arange(40) < 20
    for node_model in (
        DiffLift("cell", in_dim=g.features().shape[1], hidden=8, n_classes=3, task="node"),
        DCM(in_dim=g.features().shape[1], hidden=8, n_classes=3),
        DGM(in_dim=g.features().shape[1], hidden=8, n_classes=3),
    ):
        hist = train_node_classifier(node_model, g, y, mask, epochs=2, device="cuda")
        assert all(np.isfinite(hist))
        assert 0.0 <= node_accuracy(node_model, g, y, ~mask, device="cuda") <= 1.0
