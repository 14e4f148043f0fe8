"""Claim checks of ∂lift on the two offline graph sets of the spec.

L1 (quick): with the same embedder and TNN (CWNLite), the learned cell-complex lifting beats
the static cycle and clique liftings on ring parity, and is not worse than the GIN without a
lifting. Reported in the same run: forward time per graph and cells per graph of every lifting,
and how the forward time grows with graph size (log-log slope). Beside the criterion: the
simplicial domain (SCNLite on the clique complex's triangles, static and learned; the paper's
SCN2 rows) at every scale, and ∂lift with the GPS embedder at full scale (and in the smoke
plumbing run; its training alone exceeds the quick budget).
L2 (full; a small run at smoke): the same for the hypergraph domain on clique vote with
UniGCNLite against k-hop, k-NN and clique hyperedges.
L3 (quick): what was learned — the accepted 2-cells of ∂lift are more often planted rings than
the cells of the static cycle lifting (precision), with recall reported.
L4 (quick): node classification on a heterophilous graph whose planted cells decide the labels:
∂lift (learned edges and triangles, node readout) against the static cycle and clique liftings
with the same networks and the GNN alone; the paper's node-level baseline DCM (latent graph by
α-entmax, induced-cycle polygons) is trained in the same run and reported beside them, outside
the criterion, and so is DGM (k sampled neighbours per node by Gumbel-top-k, GCN); the karate
club is run beside it as a sanity demo.

The trained models of L1 are kept (state dicts under ``out_dir/cache``, keyed by the settings and
the room's source code) so that L3 of the same run reuses ∂lift instead of training it again;
a file lock per model makes a claim running beside another wait for a model being trained
rather than train it a second time."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from iclr26.claims import (  # noqa: E402
    Context,
    Result,
    Scale,
    build_lock,
    claim,
    mark_threshold,
)
from iclr26.models.tinylm.train import torch_threads  # noqa: E402
from iclr26.nn.difflift.dcm import DCM  # noqa: E402
from iclr26.nn.difflift.dgm import DGM  # noqa: E402
from iclr26.nn.difflift.graphs import (  # noqa: E402
    collate,
    karate_club,
    make_cell_heterophily,
    make_clique_vote,
    make_graph,
    make_ring_parity,
)
from iclr26.nn.difflift.lifting import lift_static  # noqa: E402
from iclr26.nn.difflift.models import (  # noqa: E402
    DiffLift,
    GINNet,
    StaticLiftNet,
    accuracy,
    node_accuracy,
    train_graph_classifier,
    train_node_classifier,
)

SLUG = "difflift"
MARGIN = 0.01  # "+ 1.0" accuracy point of the spec


def settings(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(n_train=24, n_test=16, epochs=1, hidden=16, tnn_layers=1, seeds=(0,)),
        quick=dict(n_train=400, n_test=200, epochs=25, hidden=32, tnn_layers=2, seeds=(0,)),
        full=dict(
            n_train=1000, n_test=500, epochs=100, hidden=64, tnn_layers=4, seeds=(0, 1, 2, 3, 4)
        ),
    )


def _device(ctx: Context) -> str:
    """Where training and test accuracy run: the CPU at smoke and quick scale (the README's
    numbers are CPU numbers), ``ctx.device`` at full scale. Lift diagnostics and the timed
    forward passes stay on the CPU at every scale, so their times compare across scales."""
    return ctx.pick("cpu", "cpu", str(ctx.device))


def _accuracy(ctx: Context, model, graphs) -> float:
    """Test accuracy on :func:`_device`; the model is handed back on the CPU."""
    acc = accuracy(model, graphs, device=_device(ctx))
    model.cpu()
    return acc


def _node_accuracy(ctx: Context, model, graph, y, mask) -> float:
    """Node test accuracy on :func:`_device`; the model is handed back on the CPU."""
    acc = node_accuracy(model, graph, y, mask, device=_device(ctx))
    model.cpu()
    return acc


def _source_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _build(kind: str, domain: str, in_dim: int, s: dict):
    common = dict(in_dim=in_dim, hidden=s["hidden"], n_classes=2, tnn_layers=s["tnn_layers"])
    if kind == "gin":
        return GINNet(in_dim=in_dim, hidden=s["hidden"], n_classes=2)
    if kind == "learned":
        return DiffLift(domain, **common)
    if kind == "learned_gps":
        return DiffLift(domain, gnn="gps", **common)
    if kind == "sc_learned":  # the simplicial domain, reported beside L1's criterion
        return DiffLift("simplicial", **common)
    if kind == "sc_clique":
        return StaticLiftNet("clique", "simplicial", **common)
    return StaticLiftNet(kind, domain, **common)


def _trained(ctx: Context, kind: str, domain: str, train, seed: int, s: dict):
    """Train (or load from this run's cache) one system; returns (model, train CPU seconds)."""
    key = json.dumps(
        [kind, domain, seed, s, ctx.scale.value, _device(ctx), _source_hash()], sort_keys=True
    )
    tag = hashlib.sha256(key.encode()).hexdigest()[:12]
    path = Path(ctx.out_dir) / "cache" / f"{SLUG}-{kind}-{domain}-{ctx.scale.value}-{seed}-{tag}.pt"
    in_dim = train[0].features().shape[1]
    # one process trains a system, a claim beside it that needs the same one waits and loads it
    with build_lock(path):
        return _train_or_load(ctx, kind, domain, train, seed, s, path, in_dim)


def _train_or_load(ctx, kind, domain, train, seed, s, path, in_dim):
    torch.manual_seed(seed)
    model = _build(kind, domain, in_dim, s)
    if path.exists():
        blob = torch.load(path, weights_only=True)
        model.load_state_dict(blob["state"])
        return model.eval(), float(blob["train_cpu_s"]), blob["losses"]
    timing = {}

    def fit():
        timing["losses"] = train_graph_classifier(
            model, train, epochs=s["epochs"], seed=seed, device=_device(ctx)
        )

    t = ctx.timeit(fit, repeat=1, warmup=0, threads=1)
    model.cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {"state": model.state_dict(), "train_cpu_s": t.cpu_s, "losses": timing["losses"]}, tmp
    )
    tmp.replace(path)
    return model.eval(), t.cpu_s, timing["losses"]


def _has_pyg() -> bool:
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        return False
    return True


def _lift_summary(model, graphs) -> dict:
    """What a learned cell lifting keeps at evaluation: proposed and accepted k-NN edges, and
    candidate, accepted and planted-ring 2-cells."""
    cells = _per_graph_cells(model, graphs)
    pr = _precision_recall(cells, graphs)
    with torch.no_grad():
        lc = model.eval().lift(collate(graphs))
    return {
        **{k: float(v) for k, v in lc.stats.items()},
        "precision": pr["precision"],
        "recall": pr["recall"],
    }


def _cells_per_graph(model, graphs) -> float:
    with torch.no_grad():
        lc = model.eval().lift(collate(graphs))
    return len(lc.accepted_cells()) / len(graphs)


def _forward_cost(ctx: Context, models: dict, graphs) -> dict:
    batch = collate(graphs)
    out = {}
    for name, m in models.items():
        m.eval()

        def fwd(m=m):
            with torch.no_grad():
                m(batch)

        t = ctx.timeit(fwd, repeat=3, warmup=1, threads=1)
        cells = 0.0 if name in ("gin", "gps") else _cells_per_graph(m, graphs)
        t.count(graphs=len(graphs), cells_per_graph=cells)
        out[name] = {
            "forward_cpu_ms_per_graph": 1e3 * t.cpu_s / len(graphs),
            "cells_per_graph": cells,
            "timing": t.to_dict(),
        }
    return out


def _sweep_graphs(sizes) -> list[list]:
    """Ring-parity-like graphs of growing size: ``mult`` copies of a graph joined along a path
    (no new cycles between copies), 8 graphs per size."""
    sets = []
    for mult in sizes:
        big = []
        for g in make_ring_parity(8, seed=1000 + mult):
            n = g.n_nodes
            x = g.x.repeat(mult, 1)
            e = torch.cat(
                [g.edges + i * n for i in range(mult)]
                + [torch.tensor([[i * n, (i + 1) * n]]) for i in range(mult - 1)]
            )
            big.append(make_graph(x.numpy(), e.numpy(), g.y))
        sets.append(big)
    return sets


def _size_sweep(ctx: Context, model, graph_sets) -> dict:
    """Forward CPU time per graph of ``model`` on each set of :func:`_sweep_graphs`, with the
    load-free counts beside it (nodes and accepted 2-cells per graph), and the log-log slope
    of the time against the node count."""
    rows = []
    for big in graph_sets:
        batch = collate(big)

        def fwd(batch=batch):
            with torch.no_grad():
                model(batch)

        nodes = float(np.mean([g.n_nodes for g in big]))
        cells = _cells_per_graph(model, big)
        t = ctx.timeit(fwd, repeat=2, warmup=1, threads=1)
        t.count(graphs=len(big), nodes_per_graph=nodes, cells_per_graph=cells)
        rows.append(
            {
                "nodes_per_graph": nodes,
                "cells_per_graph": cells,
                "forward_cpu_ms_per_graph": 1e3 * t.cpu_s / len(big),
            }
        )
    xs = np.log([r["nodes_per_graph"] for r in rows])
    ys = np.log([max(r["forward_cpu_ms_per_graph"], 1e-9) for r in rows])
    slope = float(np.polyfit(xs, ys, 1)[0]) if len(rows) > 1 else float("nan")
    return {"rows": rows, "loglog_slope": slope}


@claim(
    paper=SLUG,
    name="learned-vs-static-cell",
    statement="With the same embedder and topological network, the learned (differentiable) "
    "lifting beats static liftings (cycles, cliques) and the GNN without a lifting",
    paper_value="CWN + cycle lifting -> CWN + dlift: NCI1 76.93 -> 79.81, MUTAG 66.67 -> 85.96, "
    "MOLHIV 70.15 -> 75.37 (Table 1); best lifting in > 90% of TNN/dataset pairs",
    criterion="ring parity (400 train / 200 test at quick, 1 seed; 5 seeds at full): "
    "acc(dlift) >= max(acc(cycle), acc(clique)) + 0.01 and acc(dlift) >= acc(GIN)",
    timeout_s={"smoke": 120, "quick": 400, "full": 14400},
    headline=("acc_difflift", "acc_best_static"),
)
def learned_vs_static_cell(ctx: Context) -> Result:
    s = settings(ctx)
    # beside the criterion, which reads only the first four systems (fixed before these were
    # built): the simplicial domain, static and learned, and ∂lift with the GPS embedder; the
    # GPS row is left out at quick scale (its training alone takes about 80 s of CPU time)
    gps = _has_pyg() and ctx.scale is not Scale.QUICK
    kinds = ("gin", "cycle", "clique", "learned", "sc_clique", "sc_learned")
    kinds += ("learned_gps",) if gps else ()
    accs = {k: [] for k in kinds}
    train_s = {k: [] for k in accs}
    models = {}
    with torch_threads(1):
        for i, seed in enumerate(s["seeds"]):
            train = make_ring_parity(s["n_train"], seed=ctx.seed + 10 * seed)
            test = make_ring_parity(s["n_test"], seed=ctx.seed + 10 * seed + 1)
            for j, kind in enumerate(accs):
                m, cpu, _ = _trained(ctx, kind, "cell", train, ctx.seed + seed, s)
                accs[kind].append(_accuracy(ctx, m, test))
                train_s[kind].append(cpu)
                models[kind] = m
                n_sys = len(kinds) * len(s["seeds"]) + 1
                ctx.report((i * len(kinds) + j + 1) / n_sys, f"{kind} seed {seed}")
        cost = _forward_cost(ctx, models, test[:64])
        sweep_sets = _sweep_graphs(ctx.pick(smoke=(1, 2), quick=(1, 2, 4), full=(1, 2, 4, 8)))
        sweep = _size_sweep(ctx, models["learned"], sweep_sets)
        # the same graphs through the static liftings, so the growth is compared in one run
        sweep_static = {k: _size_sweep(ctx, models[k], sweep_sets) for k in ("cycle", "clique")}
    mean = {k: float(np.mean(v)) for k, v in accs.items()}
    best_static = max(mean["cycle"], mean["clique"])
    metrics = {
        "acc_difflift": mean["learned"],
        "acc_best_static": best_static,
        "acc_cycle": mean["cycle"],
        "acc_clique": mean["clique"],
        "acc_gin": mean["gin"],
        "acc_per_seed": accs,
        "train_cpu_s": {k: float(np.mean(v)) for k, v in train_s.items()},
        "forward_cost": cost,
        "size_sweep": sweep,
        "size_sweep_static": sweep_static,
        "loglog_slope": {
            "learned": sweep["loglog_slope"],
            **{k: v["loglog_slope"] for k, v in sweep_static.items()},
        },
        "train_graph_passes": s["epochs"] * s["n_train"],  # load-free count beside train_cpu_s
        "n_seeds": len(s["seeds"]),
        "single_seed": len(s["seeds"]) == 1,
    }
    baseline = {"cycle": mean["cycle"], "clique": mean["clique"], "gin": mean["gin"]}
    # the simplicial domain beside the criterion (SCNLite on the clique complex's triangles)
    metrics["acc_simplicial_clique"] = mean["sc_clique"]
    metrics["acc_simplicial_difflift"] = mean["sc_learned"]
    with torch.no_grad():
        sc_lift = models["sc_learned"].eval().lift(collate(test)).stats
    metrics["simplicial_difflift_lift"] = {k: float(v) for k, v in sc_lift.items()}
    baseline["simplicial_clique"] = mean["sc_clique"]
    baseline["simplicial_difflift"] = mean["sc_learned"]
    if "learned_gps" in mean:  # beside the criterion: the paper's better embedder
        metrics["acc_difflift_gps"] = mean["learned_gps"]
        metrics["gps_minus_gin_embedder"] = mean["learned_gps"] - mean["learned"]
        metrics["difflift_gps_lift"] = _lift_summary(models["learned_gps"], test)
        metrics["difflift_gin_lift"] = _lift_summary(models["learned"], test)
        baseline["difflift_gps"] = mean["learned_gps"]
    else:
        metrics["acc_difflift_gps"] = None
        metrics["gps_note"] = (
            "the GPS row runs at full scale only (its training exceeds the quick budget)"
            if _has_pyg()
            else "torch-geometric is not installed; the GPS embedder needs it"
        )
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    names = [k for k in kinds if k in mean]
    colors = {
        "gin": "C7",
        "cycle": "C1",
        "clique": "C2",
        "learned": "C0",
        "sc_clique": "C8",
        "sc_learned": "C9",
        "learned_gps": "C4",
    }
    ax[0].bar(names, [mean[k] for k in names], color=[colors[k] for k in names])
    mark_threshold(ax[0], best_static + MARGIN, "best static + 0.01")
    ax[0].set(ylabel="test accuracy", ylim=(0.4, 1.0), title="ring parity (sc_: SCNLite)")
    ax[0].tick_params(axis="x", labelsize=7)
    ax[0].legend(fontsize=7)
    for k, sw in (("learned", sweep), *sweep_static.items()):
        r = sw["rows"]
        ax[1].loglog(
            [x["nodes_per_graph"] for x in r],
            [x["forward_cpu_ms_per_graph"] for x in r],
            "o-",
            color=colors[k],
            label=f"{k} (slope {sw['loglog_slope']:.2f})",
        )
    ax[1].set(xlabel="nodes per graph", ylabel="forward CPU ms / graph", title="forward time")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    plt.close(fig)
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={
            "dlift >= best static + 0.01": mean["learned"] >= best_static + MARGIN,
            "dlift >= GIN": mean["learned"] >= mean["gin"],
        },
    )
    return ctx.save_judged(fig, SLUG, "learned-vs-static-cell", result)


@claim(
    paper=SLUG,
    name="learned-vs-static-hypergraph",
    statement="In the hypergraph domain the learned lifting beats k-hop, k-NN and clique "
    "hyperedges with the same hypergraph network",
    paper_value="UniGCN2 + k-hop -> + dlift: MUTAG 61.40 -> 89.47, MOLHIV 50.72 -> 69.32 (Table 1)",
    criterion="clique vote, UniGCNLite: acc(dlift) >= max(acc(khop), acc(knn), acc(clique)) + 0.01, "
    "mean of 5 seeds (full scale; a plumbing run at smoke)",
    timeout_s={"smoke": 120, "quick": 60, "full": 14400},
    headline=("acc_difflift", "acc_best_static"),
)
def learned_vs_static_hypergraph(ctx: Context) -> Result:
    if ctx.scale is Scale.QUICK:
        return Result.skipped("a full-scale claim (five seeds of four systems)")
    s = settings(ctx)
    kinds = ("khop", "knn", "clique", "learned")
    accs = {k: [] for k in kinds}
    ks = []
    with torch_threads(1):
        for seed in s["seeds"]:
            train = make_clique_vote(s["n_train"], seed=ctx.seed + 10 * seed)
            test = make_clique_vote(s["n_test"], seed=ctx.seed + 10 * seed + 1)
            for kind in kinds:
                m, _, _ = _trained(ctx, kind, "hypergraph", train, ctx.seed + seed, s)
                accs[kind].append(_accuracy(ctx, m, test))
                if kind == "learned":
                    with torch.no_grad():
                        ks += m.lift(collate(test)).k.tolist()
    mean = {k: float(np.mean(v)) for k, v in accs.items()}
    best = max(mean[k] for k in kinds[:3])
    sizes = np.bincount(np.asarray(ks, dtype=int), minlength=11).tolist()
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    ax[0].bar(list(kinds), [mean[k] for k in kinds], color=["C1", "C2", "C3", "C0"])
    mark_threshold(ax[0], best + MARGIN, "best static + 0.01")
    ax[0].set(ylabel="test accuracy", ylim=(0.4, 1.0), title="clique vote, UniGCNLite")
    ax[0].legend(fontsize=7)
    ax[1].bar(range(len(sizes)), sizes)
    ax[1].set(xlabel="learned k_v", ylabel="nodes", title="planted cliques have 4-5 members")
    fig.tight_layout()
    plt.close(fig)
    result = Result.judge(
        metrics={
            "acc_difflift": mean["learned"],
            "acc_best_static": best,
            **{f"acc_{k}": mean[k] for k in kinds[:3]},
            "k_histogram": sizes,
            "acc_per_seed": accs,
        },
        baseline={k: mean[k] for k in kinds[:3]},
        required={"dlift >= best static + 0.01": mean["learned"] >= best + MARGIN},
    )
    return ctx.save_judged(fig, SLUG, "learned-vs-static-hypergraph", result)


def _precision_recall(cells_per_graph: list[list[list[int]]], graphs) -> dict:
    """Accepted cells that are planted rings (as node sets), and planted rings recovered."""
    planted = hits = total = 0
    found = 0
    for cells, g in zip(cells_per_graph, graphs):
        rings = {frozenset(r) for r in g.meta["rings"]}
        got = {frozenset(c) for c in cells}
        planted += len(rings)
        total += len(got)
        hits += len(got & rings)
        found += len(rings & got)
    return {
        "precision": hits / total if total else float("nan"),
        "recall": found / planted if planted else float("nan"),
        "cells": total,
        "planted": planted,
    }


def _per_graph_cells(model, graphs):
    out = []
    with torch.no_grad():
        for g in graphs:
            lc = model.eval().lift(collate([g]))
            out.append(lc.accepted_cells())
    return out


@claim(
    paper=SLUG,
    name="what-was-learned",
    statement="The learned lifting keeps the cells that matter: its accepted 2-cells are more "
    "often the planted rings than the cells of the static cycle lifting",
    paper_value="qualitative (learned liftings adapt the topology to the task)",
    criterion="ring parity test graphs: precision(dlift accepted 2-cells = planted rings) > "
    "precision(static cycle basis); dlift must accept at least one 2-cell; recall reported",
    timeout_s={"smoke": 120, "quick": 300, "full": 7200},
    headline=("precision_difflift", "precision_cycle"),
)
def what_was_learned(ctx: Context) -> Result:
    s = settings(ctx)
    seed = s["seeds"][0]
    with torch_threads(1):
        train = make_ring_parity(s["n_train"], seed=ctx.seed + 10 * seed)
        test = make_ring_parity(s["n_test"], seed=ctx.seed + 10 * seed + 1)
        learned, _, _ = _trained(ctx, "learned", "cell", train, ctx.seed + seed, s)
        static = _build("cycle", "cell", train[0].features().shape[1], s)
        ours = _precision_recall(_per_graph_cells(learned, test), test)
        base = _precision_recall(_per_graph_cells(static, test), test)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.bar(
        ["cycle basis", "dlift accepted"],
        [base["precision"], np.nan_to_num(ours["precision"])],
        color=["C1", "C0"],
        label="precision",
    )
    ax.plot([0, 1], [base["recall"], np.nan_to_num(ours["recall"])], "kx", label="recall")
    mark_threshold(ax, base["precision"], "static precision")
    ax.set(ylim=(0, 1), ylabel="fraction", title="2-cells that are planted rings")
    ax.legend(fontsize=7)
    plt.close(fig)
    accepted_any = ours["cells"] > 0
    result = Result.judge(
        metrics={
            "precision_difflift": ours["precision"],
            "recall_difflift": ours["recall"],
            "cells_difflift": ours["cells"],
            "precision_cycle": base["precision"],
            "recall_cycle": base["recall"],
            "cells_cycle": base["cells"],
            "planted_rings": base["planted"],
        },
        baseline={"precision_cycle": base["precision"], "recall_cycle": base["recall"]},
        required={
            "dlift accepts at least one 2-cell": accepted_any,
            "precision(dlift) > precision(cycle)": accepted_any
            and ours["precision"] > base["precision"],
        },
    )
    return ctx.save_judged(fig, SLUG, "what-was-learned", result)


# ------------------------------------------------------------------ node classification (L4)

NODE_SYSTEMS = ("gnn", "cycle", "clique", "learned")
# reported beside the criterion's systems, not part of it (the criterion was fixed without it)
NODE_EXTRA = ("dcm", "dgm")


def node_settings(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(n_nodes=60, epochs=3, hidden=16, tnn_layers=1, seeds=(0,)),
        quick=dict(n_nodes=300, epochs=100, hidden=32, tnn_layers=2, seeds=(0, 1, 2)),
        full=dict(n_nodes=1000, epochs=200, hidden=64, tnn_layers=4, seeds=(0, 1, 2, 3, 4)),
    )


def _node_model(kind: str, in_dim: int, n_classes: int, s: dict):
    common = dict(in_dim=in_dim, hidden=s["hidden"], n_classes=n_classes, task="node")
    if kind == "gnn":
        return GINNet(**common)
    if kind == "dcm":
        common.pop("task")
        return DCM(conv_layers=s["tnn_layers"], **common)
    if kind == "dgm":
        common.pop("task")
        return DGM(conv_layers=s["tnn_layers"], **common)
    if kind == "learned":
        return DiffLift("cell", tnn_layers=s["tnn_layers"], cell_candidates="triangles", **common)
    return StaticLiftNet(kind, "cell", tnn_layers=s["tnn_layers"], **common)


def _half_split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    train = np.zeros(n, dtype=bool)
    train[order[: n // 2]] = True
    return train, ~train


def _warm_up() -> None:
    """One untimed step of full-batch training, so that the first timed system does not pay
    torch's one-off start-up costs (first backward pass, first optimiser step)."""
    graph, y = karate_club()
    model = GINNet(graph.features().shape[1], hidden=4, n_classes=2, task="node")
    train_node_classifier(model, graph, y, np.ones(graph.n_nodes, dtype=bool), epochs=1)


def _fit_node_system(ctx, kind, graph, y, train, seed, s):
    torch.manual_seed(seed)
    model = _node_model(kind, graph.features().shape[1], int(y.max()) + 1, s)

    def fit():
        train_node_classifier(
            model, graph, y, train, epochs=s["epochs"], seed=seed, device=_device(ctx)
        )

    t = ctx.timeit(fit, repeat=1, warmup=0, threads=1)
    model.cpu()
    t.count(epochs=s["epochs"], nodes=graph.n_nodes)
    return model.eval(), t.cpu_s


def _lift_diagnostics(model, graph, y) -> dict:
    """Same-class fraction of the accepted new edges and of the accepted 2-cells."""
    with torch.no_grad():
        lc = model.eval().lift(collate([graph]))
    new = lc.edges[graph.n_edges :][lc.edge_w[graph.n_edges :].detach() > 0.5].numpy()
    cells = lc.accepted_cells()
    planted = {frozenset(c) for c in graph.meta["cells"]}
    return {
        "accepted_new_edges": int(len(new)),
        "new_edge_homophily": float(np.mean(y[new[:, 0]] == y[new[:, 1]])) if len(new) else None,
        "accepted_cells": len(cells),
        "candidate_cells": lc.n_cells,
        "cell_purity": float(np.mean([len(set(y[c])) == 1 for c in cells])) if cells else None,
        "planted_recall": len(planted & {frozenset(c) for c in cells}) / max(len(planted), 1),
    }


def _dcm_diagnostics(model, graph, y) -> dict:
    """Same-class fraction of DCM's inferred edges and accepted polygons."""
    with torch.no_grad():
        cx = model.eval().infer(collate([graph]))
    e = cx.edges.numpy()
    polys = cx.accepted_polygons()
    planted = {frozenset(c) for c in graph.meta["cells"]}
    return {
        "edges": int(len(e)),
        "edge_homophily": float(np.mean(y[e[:, 0]] == y[e[:, 1]])) if len(e) else None,
        "input_edges_kept": float(
            len({tuple(r) for r in e.tolist()} & {tuple(r) for r in graph.edges.tolist()})
            / max(graph.n_edges, 1)
        ),
        "candidate_polygons": len(cx.candidates),
        "accepted_polygons": len(polys),
        "polygon_purity": float(np.mean([len(set(y[c])) == 1 for c in polys])) if polys else None,
        "planted_recall": len(planted & {frozenset(c) for c in polys}) / max(len(planted), 1),
    }


def _dgm_diagnostics(model, graph, y) -> dict:
    """Same-class fraction of the neighbours DGM picks at evaluation, and its temperature."""
    with torch.no_grad():
        g = model.eval().infer(collate([graph]))
    e = g.edges.numpy()
    return {
        "edge_homophily": float(np.mean(y[e[:, 0]] == y[e[:, 1]])),
        "input_edges_kept": float(
            len(
                {tuple(sorted(r)) for r in e.tolist()}
                & {tuple(sorted(r)) for r in graph.edges.tolist()}
            )
            / max(graph.n_edges, 1)
        ),
        "temperature": g.temperature,
    }


@claim(
    paper=SLUG,
    name="node-classification-heterophily",
    statement="For node classification on a heterophilous graph, the learned lifting beats the "
    "static liftings with the same topological network, and the GNN without a lifting (DCM, the "
    "paper's node-level baseline, and DGM reported beside them)",
    paper_value="CWN + dlift 77.74 vs DCM 72.31 mean accuracy over Cora, Citeseer, Texas, "
    "Wisconsin; Texas 80.18 vs 56.76 (heterophilous graphs gain most)",
    criterion="planted-cell heterophilous graph (300 nodes, 3 classes, edge homophily about "
    "0.25, half the nodes labelled; 3 seeds at quick, 5 at full), mean test accuracy: "
    "acc(dlift) >= max(acc(cycle), acc(clique)) + 0.01 and acc(dlift) >= acc(GIN)",
    timeout_s={"smoke": 120, "quick": 300, "full": 7200},
    headline=("acc_difflift", "acc_best_static"),
)
def node_classification_heterophily(ctx: Context) -> Result:
    s = node_settings(ctx)
    systems = NODE_SYSTEMS + NODE_EXTRA
    accs = {k: [] for k in systems}
    train_s = {k: [] for k in systems}
    diag, dcm_diag, dgm_diag, homophily = [], [], [], []
    steps = (len(s["seeds"]) + 1) * len(systems)
    done = 0
    with torch_threads(1):
        _warm_up()
        for seed in s["seeds"]:
            graph, y = make_cell_heterophily(s["n_nodes"], 3, seed=ctx.seed + 100 + seed)
            e = graph.edges.numpy()
            homophily.append(float(np.mean(y[e[:, 0]] == y[e[:, 1]])))
            train, test = _half_split(graph.n_nodes, ctx.seed + seed)
            for kind in systems:
                model, cpu = _fit_node_system(ctx, kind, graph, y, train, ctx.seed + seed, s)
                accs[kind].append(_node_accuracy(ctx, model, graph, y, test))
                train_s[kind].append(cpu)
                if kind == "learned":
                    diag.append(_lift_diagnostics(model, graph, y))
                if kind == "dcm":
                    dcm_diag.append(_dcm_diagnostics(model, graph, y))
                if kind == "dgm":
                    dgm_diag.append(_dgm_diagnostics(model, graph, y))
                done += 1
                ctx.report(done / steps, f"{kind} seed {seed}")
            triangles = lift_static(collate([graph]), "clique").cells
            diag[-1]["clique_cell_purity"] = (
                float(np.mean([len(set(y[c])) == 1 for c in triangles])) if triangles else None
            )
        # sanity demo, reported and not judged: the karate club's two factions
        kgraph, ky = karate_club()
        ktrain, ktest = _half_split(kgraph.n_nodes, ctx.seed)
        karate = {}
        for kind in systems:
            model, _ = _fit_node_system(ctx, kind, kgraph, ky, ktrain, ctx.seed, s)
            karate[kind] = _node_accuracy(ctx, model, kgraph, ky, ktest)
            done += 1
            ctx.report(done / steps, f"karate {kind}")
    mean = {k: float(np.mean(v)) for k, v in accs.items()}
    std = {k: float(np.std(v)) for k, v in accs.items()}
    best_static = max(mean["cycle"], mean["clique"])

    def avg(key, rows=diag):
        vals = [d[key] for d in rows if d[key] is not None]
        return float(np.mean(vals)) if vals else None

    metrics = {
        "acc_difflift": mean["learned"],
        "acc_best_static": best_static,
        "acc_cycle": mean["cycle"],
        "acc_clique": mean["clique"],
        "acc_gin": mean["gnn"],
        "acc_dcm": mean["dcm"],
        "acc_dgm": mean["dgm"],
        "acc_std": std,
        "acc_per_seed": accs,
        "input_edge_homophily": float(np.mean(homophily)),
        "dlift_new_edge_homophily": avg("new_edge_homophily"),
        "dlift_accepted_new_edges": avg("accepted_new_edges"),
        "dlift_cell_purity": avg("cell_purity"),
        "clique_cell_purity": avg("clique_cell_purity"),
        "dlift_accepted_cells": avg("accepted_cells"),
        "dlift_planted_cell_recall": avg("planted_recall"),
        "dlift_lift_per_seed": diag,
        "dcm_edges": avg("edges", dcm_diag),
        "dcm_edge_homophily": avg("edge_homophily", dcm_diag),
        "dcm_accepted_polygons": avg("accepted_polygons", dcm_diag),
        "dcm_polygon_purity": avg("polygon_purity", dcm_diag),
        "dcm_per_seed": dcm_diag,
        "dgm_edge_homophily": avg("edge_homophily", dgm_diag),
        "dgm_per_seed": dgm_diag,
        "karate_acc": karate,
        "train_cpu_s": {k: float(np.mean(v)) for k, v in train_s.items()},
        "n_seeds": len(s["seeds"]),
    }
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    names = list(systems)
    ax[0].bar(
        names,
        [mean[k] for k in names],
        yerr=[std[k] for k in names],
        color=["C7", "C1", "C2", "C0", "C4", "C5"],
        capsize=3,
    )
    ax[0].plot(names, [karate[k] for k in names], "kx", label="karate (not judged)")
    mark_threshold(ax[0], best_static + MARGIN, "best static + 0.01")
    ax[0].set(ylabel="test accuracy", ylim=(0.0, 1.0), title="planted-cell heterophilous graph")
    ax[0].legend(fontsize=7)
    bars = {
        "input edges": metrics["input_edge_homophily"],
        "dlift new edges": metrics["dlift_new_edge_homophily"] or 0.0,
        "clique cells": metrics["clique_cell_purity"] or 0.0,
        "dlift cells": metrics["dlift_cell_purity"] or 0.0,
    }
    ax[1].bar(list(bars), list(bars.values()), color=["C7", "C0", "C2", "C0"])
    ax[1].set(ylim=(0, 1), ylabel="same-class fraction", title="what the lifting contains")
    ax[1].tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    plt.close(fig)
    result = Result.judge(
        metrics=metrics,
        baseline={
            "cycle": mean["cycle"],
            "clique": mean["clique"],
            "gin": mean["gnn"],
            "dcm": mean["dcm"],
            "dgm": mean["dgm"],
        },
        required={
            "dlift >= best static + 0.01": mean["learned"] >= best_static + MARGIN,
            "dlift >= GIN": mean["learned"] >= mean["gnn"],
        },
    )
    return ctx.save_judged(fig, SLUG, "node-classification-heterophily", result)
