"""Claim checks of FlexProtein on ProtoFold: C1 folding where homology fails (novel families),
C2 folding under heavy mutation, C3 structure-grounded sequence representations (linear probe of
a structure-derived label), C4 structure→sequence co-design of a masked loop segment. The four
claims share one experiment per (scale, seed): the joint model and the sequence-only and
structure-only baselines are trained with the same architecture, data and steps, and C1/C2 also
report the ``arch="egnn"`` ablation (the joint recipe with an EGNN structure module in place of
the DiT). Each trained model is a shared part and the evaluation a shared experiment, so claims
running side by side split the training and evaluate once."""

from __future__ import annotations

import numpy as np
import torch

from iclr26.claims import Context, Result, claim, shared_experiment, shared_parts
from iclr26.generative.flexprotein.baselines import HomologyBaseline, propensity_design
from iclr26.generative.flexprotein.data import LOOP, MASK, ProtoFold
from iclr26.generative.flexprotein.geometry import drmsd, kabsch_rmsd, radius_of_gyration
from iclr26.generative.flexprotein.model import FlexProteinModel, count_forward_flops
from iclr26.generative.flexprotein.pretrain import FlexProteinPretrainer

PAPER = "flexprotein"
_CACHE: dict = {}


def _setting(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(fam=6, members=8, length=24, novel=3, d=32, layers=1, dit=1, steps=12, batch=8, fold_steps=4),
        quick=dict(fam=30, members=20, length=48, novel=10, d=64, layers=2, dit=2, steps=160, batch=16, fold_steps=10),
        full=dict(fam=60, members=40, length=48, novel=10, d=128, layers=4, dit=2, steps=2000, batch=32, fold_steps=20),
    )  # fmt: skip


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _loop_region(ss: np.ndarray, frac: float, rng: np.random.Generator) -> np.ndarray:
    """A contiguous segment of ``frac`` of the length centred on a random loop residue."""
    b, n = ss.shape
    width = max(1, int(round(frac * n)))
    region = np.zeros((b, n), dtype=bool)
    for i in range(b):
        loops = np.flatnonzero(ss[i] == LOOP)
        c = int(rng.choice(loops)) if len(loops) else n // 2
        start = int(np.clip(c - width // 2, 0, n - width))
        region[i, start : start + width] = True
    return region


@torch.no_grad()
def _mlm_recover(model: FlexProteinModel, tokens: np.ndarray, region: np.ndarray) -> np.ndarray:
    """The sequence-only model's recovery: masked tokens, structure hidden as σ_max noise (as trained)."""
    t = torch.as_tensor(tokens, dtype=torch.long)
    r = torch.as_tensor(region)
    masked = torch.where(r, torch.full_like(t, MASK), t)
    sig = torch.full(t.shape, model.sigma_max)
    x = sig[..., None] * torch.randn(*t.shape, 3, generator=torch.Generator().manual_seed(0))
    _, logits, _ = model(masked, x, sig)
    return torch.where(r, logits.argmax(-1), t).numpy()


MODELS = {  # part name -> (trainer objective, model arch)
    "joint": ("joint", "dit"),
    "sequence": ("sequence", "dit"),
    "structure": ("structure", "dit"),
    "egnn": ("joint", "egnn"),
}
EGNN_BETTER = 0.9  # fixed before the first run: EGNN "better" if its dRMSD <= 0.9 x the DiT's


def _data(s: dict, seed: int) -> ProtoFold:
    return ProtoFold(
        s["fam"], s["length"], members=s["members"], rho=0.2, test_rhos=(0.1, 0.3, 0.6),
        test_per_family=2, n_novel=s["novel"], novel_members=4, seed=seed,
    )  # fmt: skip


def _new_model(s: dict, arch: str, seed: int) -> FlexProteinModel:
    return FlexProteinModel(d=s["d"], layers=s["layers"], dit_blocks=s["dit"], arch=arch, seed=seed)


def _train_part(ctx: Context, s: dict, data: ProtoFold, name: str):
    obj, arch = MODELS[name]

    def run() -> dict:
        ctx.report(0.05 + 0.18 * list(MODELS).index(name), f"pretraining ({name})")
        m = _new_model(s, arch, ctx.seed).to(ctx.device)
        tr = FlexProteinPretrainer(m, objective=obj, batch_size=s["batch"], seed=ctx.seed)
        tr.fit(data.train, steps=s["steps"])
        return {"state": {k: v.cpu() for k, v in m.state_dict().items()}, "history": tr.history}

    return run


def _experiment(ctx: Context) -> dict:
    key = (ctx.scale, ctx.seed, str(ctx.device))
    if key in _CACHE:
        return _CACHE[key]
    s = _setting(ctx)
    skey = dict(scale=ctx.scale, seed=ctx.seed, device=str(ctx.device), setting=s)
    data = _data(s, ctx.seed)
    parts = {name: _train_part(ctx, s, data, name) for name in MODELS}
    # training is split between the claims running side by side; then one of them evaluates
    done = shared_parts(PAPER, skey, parts, source=__file__, codec="torch")
    out = shared_experiment(
        PAPER, {**skey, "_stage": "eval"}, lambda: _evaluate(ctx, s, data, done), source=__file__,
        codec="json",
    )  # fmt: skip
    _CACHE[key] = out
    return out


def _evaluate(ctx: Context, s: dict, data: ProtoFold, done: dict) -> dict:
    models, histories = {}, {}
    for name, blob in done.items():
        m = _new_model(s, MODELS[name][1], ctx.seed)
        m.load_state_dict(blob["state"])
        models[name], histories[name] = m.eval(), blob["history"]
    hom = HomologyBaseline().fit(data.train)
    ctx.report(0.8, "evaluating")
    sets = {"novel": data.test_novel, **{f"rho={r}": v for r, v in data.test_in_family.items()}}
    fold = {}
    for name, ps in sets.items():
        row = {}
        for obj in ("joint", "structure", "egnn"):
            pred = models[obj].fold(ps.tokens, steps=s["fold_steps"], seed=ctx.seed)
            row[obj] = dict(
                drmsd=float(np.mean(drmsd(pred, ps.coords))),
                rmsd=float(np.mean(kabsch_rmsd(pred, ps.coords))),
            )
        pred = hom.predict_structure(ps.tokens)
        row["homology"] = dict(
            drmsd=float(np.mean(drmsd(pred, ps.coords))), rmsd=float(np.mean(kabsch_rmsd(pred, ps.coords))),
            template_identity=float(np.mean(hom.identity_)),
        )  # fmt: skip
        fold[name] = row
    timing = ctx.timeit(
        lambda: models["joint"].fold(data.test_novel.tokens[:4], steps=s["fold_steps"]), repeat=3
    )
    n_calls = 2 * s["fold_steps"] - 1
    timing.count(
        forward_passes=n_calls,
        flops_per_chain=n_calls * count_forward_flops(models["joint"], s["length"]),
    )
    # C3: radius-of-gyration terciles from the training set; probe on frozen sequence-only embeddings
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rg_tr = radius_of_gyration(data.train.coords)
    edges = np.quantile(rg_tr, [1 / 3, 2 / 3])
    held = [data.test_novel, data.test_in_family[0.6]]
    y_tr = np.digitize(rg_tr, edges)
    y_te = np.concatenate([np.digitize(radius_of_gyration(p.coords), edges) for p in held])
    tok_te = np.concatenate([p.tokens for p in held])
    probe = {}
    for obj, m in models.items():
        if obj == "egnn":
            continue
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        clf.fit(m.embed(data.train.tokens), y_tr)
        probe[obj] = float((clf.predict(m.embed(tok_te)) == y_te).mean())
    probe["majority"] = float(np.mean(y_te == np.bincount(y_tr).argmax()))
    # C4: co-design of a loop-centred 15 % segment on novel families
    ps = data.test_novel
    region = _loop_region(ps.ss, 0.15, np.random.default_rng(ctx.seed))
    design = {}
    tokens_j = models["joint"].design(
        ps.tokens, ps.coords, region, steps=s["fold_steps"], seed=ctx.seed
    )
    design["joint"] = float((tokens_j[region] == ps.tokens[region]).mean())
    design["sequence_only_mlm"] = float(
        (_mlm_recover(models["sequence"], ps.tokens, region)[region] == ps.tokens[region]).mean()
    )
    design["propensity"] = float((propensity_design(ps.ss)[region] == ps.tokens[region]).mean())
    ps_in = data.test_in_family[0.3]
    region_in = _loop_region(ps_in.ss, 0.15, np.random.default_rng(ctx.seed))
    tok_in = models["joint"].design(
        ps_in.tokens, ps_in.coords, region_in, steps=s["fold_steps"], seed=ctx.seed
    )
    design["joint_in_family_rho0.3"] = float((tok_in[region_in] == ps_in.tokens[region_in]).mean())
    design["propensity_in_family_rho0.3"] = float(
        (propensity_design(ps_in.ss)[region_in] == ps_in.tokens[region_in]).mean()
    )
    losses = {
        obj: {k: float(np.nanmean(v[-20:])) for k, v in h.items() if not np.all(np.isnan(v[-20:]))}
        for obj, h in histories.items()
    }
    out = dict(
        setting=s, fold=fold, probe=probe, design=design, losses=losses, timing=timing.to_dict(),
        novel_identity_max=data.novel_identity_max, params=models["joint"].n_parameters(),
        params_egnn=models["egnn"].n_parameters(),
    )  # fmt: skip
    return out


def _bar(ctx: Context, name: str, values: dict, ylabel: str, threshold=None):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(list(values), list(values.values()), color=["C0"] + ["C7"] * (len(values) - 1))
    if threshold is not None:
        ctx.mark_threshold(ax, threshold[0], threshold[1])
        ax.legend()
    ax.set_ylabel(ylabel)
    return fig


def _egnn(row: dict, e: dict) -> dict:
    """The ``arch="egnn"`` ablation beside the DiT in the same run (reported; not in the verdict)."""
    ratio = row["egnn"]["drmsd"] / row["joint"]["drmsd"]
    return dict(
        drmsd=row["egnn"]["drmsd"], rmsd=row["egnn"]["rmsd"], ratio_vs_dit=ratio,
        ratio_vs_homology=row["egnn"]["drmsd"] / row["homology"]["drmsd"],
        better_than_dit=bool(ratio <= EGNN_BETTER), params=e["params_egnn"],
    )  # fmt: skip


def _common(e: dict) -> dict:
    return dict(
        params=e["params"],
        train_steps=e["setting"]["steps"],
        final_losses=e["losses"],
        novel_identity_max=e["novel_identity_max"],
    )


@claim(
    paper=PAPER,
    name="C1-novel-families",
    statement="One MSA-free model folds chains from families with no homolog in training better "
    "than homology (template) transfer",
    paper_value="state of the art on folding and flexible interfaces without MSAs; largest gains "
    "in low-homology settings",
    criterion="mean dRMSD (pairs < 15 Å) of FlexProtein fold on the held-out novel families "
    "<= 0.7 x that of nearest-identity template transfer (B1), test chains < 40 % identity to training",
    headline=("drmsd_flexprotein", "ratio_vs_homology"),
)
def c1_novel_families(ctx: Context) -> Result:
    e = _experiment(ctx)
    row = e["fold"]["novel"]
    ratio = row["joint"]["drmsd"] / row["homology"]["drmsd"]
    fig = _bar(ctx, "C1-novel-families", {k: v["drmsd"] for k, v in row.items()}, "dRMSD (Å), novel families",
               (0.7 * row["homology"]["drmsd"], "0.7 x homology"))  # fmt: skip
    result = Result.judge(
        metrics=dict(
            drmsd_flexprotein=row["joint"]["drmsd"],
            rmsd_flexprotein=row["joint"]["rmsd"],
            ratio_vs_homology=ratio,
            egnn_ablation=_egnn(row, e),
            fold_time=e["timing"],
            **_common(e),
        ),  # fmt: skip
        baseline={
            "homology": row["homology"],
            "structure_only": row["structure"],
            "egnn_ablation": row["egnn"],
        },
        required={
            "dRMSD ratio FlexProtein / homology <= 0.7": ratio <= 0.7,
            "test split < 40 % identity": e["novel_identity_max"] < 0.4,
        },
    )
    return ctx.save_judged(fig, PAPER, "C1-novel-families", result)


@claim(
    paper=PAPER,
    name="C2-heavy-mutation",
    statement="The joint model stays accurate on heavily mutated members, where homology transfer degrades",
    paper_value="largest gains in mutation-rich settings (CDRs, nanobodies): e.g. +14.6 points "
    "DockQ success over IgGM on antigen–antibody",
    criterion="mean dRMSD of FlexProtein at rho = 0.6 <= 0.8 x homology transfer's (rho = 0.1 and 0.3 reported; B1 may win there)",
    headline=("drmsd_flexprotein_rho0.6", "ratio_vs_homology_rho0.6"),
)
def c2_heavy_mutation(ctx: Context) -> Result:
    e = _experiment(ctx)
    rows = {k: v for k, v in e["fold"].items() if k.startswith("rho=")}
    hi = rows["rho=0.6"]
    ratio = hi["joint"]["drmsd"] / hi["homology"]["drmsd"]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    rhos = [float(k[4:]) for k in rows]
    for m in ("joint", "homology", "structure", "egnn"):
        ax.plot(rhos, [rows[k][m]["drmsd"] for k in rows], "o-", label=m)
    ax.plot(0.6, 0.8 * hi["homology"]["drmsd"], "_", color="black", markersize=22, mew=1.6,
            label="joint at rho=0.6 <= 0.8 x homology")  # fmt: skip
    ax.set_xlabel("mutation rate rho")
    ax.set_ylabel("dRMSD (Å)")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "drmsd_flexprotein_rho0.6": hi["joint"]["drmsd"],
            "ratio_vs_homology_rho0.6": ratio,
            "by_rho": {k: v["joint"] for k, v in rows.items()},
            "egnn_ablation": {k: _egnn(v, e) for k, v in rows.items()},
            **_common(e),
        },  # fmt: skip
        baseline={
            "homology": {k: v["homology"] for k, v in rows.items()},
            "structure_only": {k: v["structure"] for k, v in rows.items()},
            "egnn_ablation": {k: v["egnn"] for k, v in rows.items()},
        },
        required={"dRMSD ratio at rho=0.6 <= 0.8": ratio <= 0.8},
    )
    return ctx.save_judged(fig, PAPER, "C2-heavy-mutation", result)


@claim(
    paper=PAPER,
    name="C3-structure-grounded-embeddings",
    statement="Joint sequence–structure pretraining gives sequence representations that carry "
    "structure (function tasks from sequence alone)",
    paper_value="state of the art on function/affinity tasks among 12 tasks",
    criterion="linear-probe accuracy (radius-of-gyration tercile, LogisticRegression on frozen "
    "sequence-only embeddings; held out: novel families + rho = 0.6 members) of FlexProtein >= "
    "sequence-only MLM model (B2) + 3 points",
    headline=("probe_flexprotein", "gain_over_sequence_only"),
)
def c3_embeddings(ctx: Context) -> Result:
    e = _experiment(ctx)
    p = e["probe"]
    gain = p["joint"] - p["sequence"]
    fig = _bar(
        ctx,
        "C3-structure-grounded-embeddings",
        p,
        "probe accuracy",
        (p["sequence"] + 0.03, "B2 + 3 points"),
    )
    result = Result.judge(
        metrics=dict(probe_flexprotein=p["joint"], gain_over_sequence_only=gain, **_common(e)),
        baseline={
            "sequence_only": {"probe": p["sequence"]},
            "structure_only": {"probe": p["structure"]},
            "majority": {"probe": p["majority"]},
        },
        required={"probe(FlexProtein) >= probe(B2) + 0.03": gain >= 0.03},
    )
    return ctx.save_judged(fig, PAPER, "C3-structure-grounded-embeddings", result)


@claim(
    paper=PAPER,
    name="C4-codesign-recovery",
    statement="Structure informs sequence: a masked loop segment co-designed with its coordinates "
    "from noise recovers more residues than structure-blind propensity design",
    paper_value="antibody H3-AAR 0.414 vs IgGM 0.360; nanobody 0.218 vs 0.183",
    criterion="amino-acid recovery on a loop-centred segment (15 % of length) of novel-family "
    "chains, co-designed from noise, >= propensity-only design (B3, true SS) + 5 points; B2 MLM-only recovery reported",
    headline=("aar_flexprotein", "gain_over_propensity"),
)
def c4_codesign(ctx: Context) -> Result:
    e = _experiment(ctx)
    d = e["design"]
    gain = d["joint"] - d["propensity"]
    fig = _bar(ctx, "C4-codesign-recovery", {k: v for k, v in d.items() if "in_family" not in k}, "AAR on segment",
               (d["propensity"] + 0.05, "B3 + 5 points"))  # fmt: skip
    result = Result.judge(
        metrics=dict(
            aar_flexprotein=d["joint"],
            gain_over_propensity=gain,
            in_family=dict(
                joint=d["joint_in_family_rho0.3"], propensity=d["propensity_in_family_rho0.3"]
            ),
            **_common(e),
        ),
        baseline={
            "propensity": {"aar": d["propensity"]},
            "sequence_only_mlm": {"aar": d["sequence_only_mlm"]},
        },
        required={"AAR(FlexProtein) >= AAR(B3) + 0.05": gain >= 0.05},
    )
    return ctx.save_judged(fig, PAPER, "C4-codesign-recovery", result)
