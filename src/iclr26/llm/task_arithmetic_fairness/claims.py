"""Claim checks of "On Fairness of Task Arithmetic": tuned task addition against FFT and LoRA
(C1), the λ frontier (C2), subgroup-dependent injection (C3), on ``identity_toxicity``, and the
bound diagnostic D1 (the paper's DPD bound along the λ sweep, with an empirical Lipschitz
constant; reported, not judged). Smoke and quick scale fine-tune a classifier on the tiny
stdlib LM; full scale fine-tunes the pretrained MiniLM encoder (the paper's DistilBERT
setting) with the released script's optimiser recipe."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from iclr26.claims import Context, Result, Scale, Verdict, claim, mark_threshold
from iclr26.llm.task_arithmetic_fairness.data import identity_toxicity
from iclr26.llm.task_arithmetic_fairness.editing import (
    evaluate,
    inject_subgroup,
    lambda_sweep,
    select_lambda,
)
from iclr26.llm.task_arithmetic_fairness.estimator import estimate_lipschitz
from iclr26.llm.task_arithmetic_fairness.fairness import (
    check_groups,
    fairness_bound,
    fairness_report,
)
from iclr26.llm.task_arithmetic_fairness.model import (
    encode,
    finetune_full,
    finetune_lora,
    lora_targets,
    predict_proba,
    sequence_classifier,
    subgroup_task_vectors,
)
from iclr26.llm.task_arithmetic_fairness.task_vector import merge

PAPER = "task_arithmetic_fairness"
# full scale: the base under θ₀, "minilm" (default, the pretrained encoder) or a tiny-LM size
BASE_ENV = "ICLR26_TAF_BASE"
# the released script's optimiser recipe for its BERT-family model (DistilBERT): AdamW, lr 1e-5,
# batch 16, 2 epochs, weight decay 0.01; full scale uses it for the MiniLM encoder
ENCODER_RECIPE = dict(epochs=2, lr=1e-5, batch_size=16, weight_decay=0.01)
# the tiny LM's recipe (the spec's): lr 3e-4, batch 32, no weight decay
TINY_RECIPE = dict(lr=3e-4, batch_size=32, weight_decay=0.0)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _base(ctx: Context, s: dict):
    """What θ₀ is built on, per scale: a 2-step cached mini LM (smoke), the cached ``test``
    size (quick), and at full the name in ``s["base"]``: ``"minilm"`` (the pretrained encoder,
    built by :func:`sequence_classifier`) or a tiny-LM size."""
    from iclr26.models.tinylm import load_causal_lm, pretrain_tiny_lm

    if ctx.scale is Scale.SMOKE:
        return pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)
    if ctx.scale is Scale.QUICK:
        return load_causal_lm("test")
    return s["base"] if s["base"] == "minilm" else load_causal_lm(s["base"])


def _settings(ctx: Context) -> dict:
    s = dict(
        n=ctx.pick(smoke=(240, 80, 120), quick=(1000, 300, 600), full=(6000, 1500, 3000)),
        epochs=ctx.pick(smoke=1, quick=2, full=3),
        seeds=ctx.pick(smoke=(0,), quick=(0,), full=(0, 1, 2)),
        grid=ctx.pick(
            smoke=(0.0, 0.5, 1.0),
            quick=tuple(round(0.1 * i, 1) for i in range(11)),
            full=tuple(round(0.1 * i, 1) for i in range(11)),
        ),
    )
    if ctx.scale is Scale.FULL:  # smoke and quick keep exactly the keys above
        s["base"] = os.environ.get(BASE_ENV, "minilm")
        s.update(ENCODER_RECIPE if s["base"] == "minilm" else TINY_RECIPE)
    return s


def _recipe(s: dict, seed: int, device: str) -> dict:
    """The optimiser settings of every fine-tune of one run (FFT, LoRA, subgroups alike)."""
    recipe = dict(
        epochs=s["epochs"],
        lr=s.get("lr", TINY_RECIPE["lr"]),
        batch_size=s.get("batch_size", TINY_RECIPE["batch_size"]),
        seed=seed,
    )
    recipe["weight_decay"] = s.get("weight_decay", TINY_RECIPE["weight_decay"])
    recipe["device"] = device
    return recipe


INJECT_LAMBDAS = (0.1, 0.3, 0.5)
# D1: the finite-difference step of one subgroup's coefficient around the balanced point (sum
# convention, so λ_g moves from 1/G to 1/G + δ), and the half-width of the score window around
# the 0.5 threshold in which the class-conditional score densities B0, B1 are estimated.
COEFF_STEP = 0.1
DENSITY_HALF_WIDTH = 0.05


def soft_dpd(scores, groups) -> float:
    """max_g E[s | g] − min_g E[s | g]: the demographic-parity gap of the scores themselves
    (the quantity a Lipschitz bound on the score controls directly)."""
    _, codes = check_groups(groups, len(scores))
    means = [float(np.mean(scores[codes == g])) for g in range(int(codes.max()) + 1)]
    return max(means) - min(means)


def score_density_bounds(scores, y, groups, half_width: float = DENSITY_HALF_WIDTH) -> dict:
    """B_c = max_g P(|s − 0.5| <= h | y = c, g) / 2h: a histogram estimate, per class c, of
    the largest group-conditional score density at the decision threshold."""
    _, codes = check_groups(groups, len(scores))
    near = np.abs(np.asarray(scores) - 0.5) <= half_width
    y = np.asarray(y)
    out = {}
    for c in (0, 1):
        dens = [
            near[(codes == g) & (y == c)].mean() / (2 * half_width)
            for g in range(int(codes.max()) + 1)
            if ((codes == g) & (y == c)).any()
        ]
        out[f"B{c}"] = float(max(dens)) if dens else 0.0
    return out


def group_sensitivity(sweep: list[dict], split: str = "test", key: str = "dpd_vs_rest") -> dict:
    """Each group's mean |Δ metric_g / Δλ| over consecutive grid points of a λ sweep (finite
    differences of the one-vs-rest gap ``key`` of that group)."""
    lams = np.array([r["lam"] for r in sweep], dtype=float)
    groups = list(sweep[0][split]["groups"])
    out = {}
    for g in groups:
        vals = np.array([r[split]["groups"][g][key] for r in sweep], dtype=float)
        out[g] = float(np.nanmean(np.abs(np.diff(vals) / np.diff(lams))))
    return out


def _bound_measurements(base, vectors: dict, sets: dict, grid, n_directions: int = 8) -> dict:
    """What D1 needs beyond the sweep: the balanced point θ̄ = θ₀ + (1/G) Σ τ_g evaluated,
    an empirical Lipschitz constant of the score in θ at λ = 0, 1/G and 1 (validation inputs;
    the largest is kept), the soft DPD along the grid, the score densities at the threshold
    and the DPD change when one subgroup's coefficient alone moves by ``COEFF_STEP``."""
    items = list(vectors.values())
    n = len(items)
    enc_val, y_val, g_val = sets["val"]
    balanced = merge(base, items, [1.0 / n] * n)
    lipschitz = {}
    for name, lam in (("0", 0.0), ("bar", 1.0 / n), ("1", 1.0)):
        model = balanced if name == "bar" else merge(base, items, [lam] * n)
        lipschitz[name] = estimate_lipschitz(model, vectors, enc_val, n_directions=n_directions)[
            "L"
        ]
    enc_test, _, g_test = sets["test"]
    soft = [
        soft_dpd(predict_proba(merge(base, items, [lam] * n), enc_test), g_test) for lam in grid
    ]
    bar = {k: evaluate(balanced, *v) for k, v in sets.items()}
    coeff = {}
    for k, g in enumerate(vectors):
        moved = merge(base, items, [1.0 / n + (COEFF_STEP if j == k else 0.0) for j in range(n)])
        rep = evaluate(moved, *sets["test"])
        coeff[g] = {
            "d_dpd": abs(rep["dpd"] - bar["test"]["dpd"]) / COEFF_STEP,
            "d_dpd_g": abs(
                rep["groups"][g]["dpd_vs_rest"] - bar["test"]["groups"][g]["dpd_vs_rest"]
            )
            / COEFF_STEP,
        }
    return {
        "lipschitz": lipschitz,
        "L": max(lipschitz.values()),
        "balanced": bar,
        "soft_dpd_bar": soft_dpd(predict_proba(balanced, enc_test), g_test),
        "soft_dpd_test": soft,
        "density": score_density_bounds(predict_proba(balanced, enc_val), y_val, g_val),
        "coeff_sensitivity": coeff,
    }


BOOTSTRAP = 1000  # resamples of the test set behind each reported 95 % interval (the spec's)


def _bootstrap_intervals(base, vectors: dict, fft, lora, test_set, grid, seed: int) -> dict:
    """Bootstrap 95 % intervals (``BOOTSTRAP`` resamples of the test set) of accuracy, DPD and
    EOD for FFT, LoRA and the merged model at every λ of the grid (sum convention): the spread
    of one seed's test metrics, reported beside the point values, never judged."""
    enc, y, groups = test_set
    items = list(vectors.values())

    def interval(model) -> dict:
        pred = (predict_proba(model, enc) >= 0.5).astype(np.int64)
        return fairness_report(y, pred, groups, n_bootstrap=BOOTSTRAP, seed=seed)["ci95"]

    return {
        "fft": interval(fft),
        "lora": interval(lora),
        "sweep": {str(lam): interval(merge(base, items, [lam] * len(items))) for lam in grid},
    }


def _experiment(ctx: Context, seed: int) -> dict:
    """One seed: data, θ₀, FFT, LoRA (r=8), the 4 subgroup vectors, the λ sweep and the
    single-subgroup injections into FFT. The runner gives each claim its own process, so the
    measured tables (not the models) are kept in a JSON file under ``out_dir`` and the later
    claims of the same run read them instead of training again."""
    s = _settings(ctx)
    # keyed by the settings, the device and the room's source code, so a table is only reused
    # by a rerun of the same code (one-thread CPU training is deterministic)
    source = hashlib.sha256()
    for file in sorted(Path(__file__).parent.glob("*.py")):
        source.update(file.read_bytes())
    key = json.dumps([s, ctx.device, source.hexdigest()], sort_keys=True)
    tag = hashlib.sha256(key.encode()).hexdigest()[:12]
    path = Path(ctx.out_dir) / "cache" / f"{PAPER}-{ctx.scale.value}-{ctx.seed + seed}-{tag}.json"
    if path.exists():
        return json.loads(path.read_text())
    from iclr26.models.tinylm.train import torch_threads

    n_train, n_val, n_test = s["n"]
    with torch_threads(1):
        groups = s.get("groups", 4)
        data = identity_toxicity(n_train, n_val, n_test, groups=groups, seed=ctx.seed + seed)
        base, tok = sequence_classifier(_base(ctx, s), seed=ctx.seed + seed)
        enc = {name: encode(tok, getattr(data, name).text) for name in ("train", "val", "test")}
        train = _recipe(s, ctx.seed + seed, ctx.device)
        tr = data.train
        fft = finetune_full(base, enc["train"], tr.y, **train)
        ctx.report(0.2, "FFT done")
        lora = finetune_lora(base, enc["train"], tr.y, r=8, alpha=16, dropout=0.1, **train)
        ctx.report(0.35, "LoRA done")
        vectors = subgroup_task_vectors(base, enc["train"], tr.y, tr.group, **train)
        ctx.report(0.5, "subgroup vectors done")
        sets = {k: (enc[k], getattr(data, k).y, getattr(data, k).group) for k in ("val", "test")}
        sweep = lambda_sweep(base, vectors, sets, grid=s["grid"], convention="sum")
        ctx.report(0.7, "sweep done")
        bound = _bound_measurements(
            base, vectors, sets, s["grid"], n_directions=s.get("directions", 8)
        )
        ctx.report(0.8, "bound measurements done")
        inject = [
            {
                "group": g,
                "lam": lam,
                "test": evaluate(inject_subgroup(fft, vec, lam), *sets["test"]),
            }
            for g, vec in vectors.items()
            for lam in s.get("inject", INJECT_LAMBDAS)
        ]
        ci95 = _bootstrap_intervals(base, vectors, fft, lora, sets["test"], s["grid"], seed)
        targets, head = lora_targets(base)
        out = {
            "seed": ctx.seed + seed,
            "backbone": {
                "model_type": base.config.model_type,
                "parameters": int(sum(p.numel() for p in base.parameters())),
                "lora_targets": list(targets),
                "lora_head": list(head),
                "recipe": {k: v for k, v in train.items() if k != "device"},
            },
            "sweep": sweep,
            "inject": inject,
            "bound": bound,
            "tau_norms": {g: vec.norm() for g, vec in vectors.items()},
            "fft": {k: evaluate(fft, *v) for k, v in sets.items()},
            "lora": {k: evaluate(lora, *v) for k, v in sets.items()},
            "ci95": ci95,
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)
    return out


def _short(rep: dict) -> dict:
    return {k: round(rep[k], 4) for k in ("accuracy", "dpd", "eod", "dpd_worst", "eod_worst")}


@claim(
    paper=PAPER,
    name="tuned-ta-vs-fft-lora",
    statement="Task addition of subgroup vectors at a validation-tuned λ keeps FFT-level "
    "accuracy while lowering DPD and EOD below FFT and EOD below LoRA",
    paper_value="for λ ≳ 0.3 accuracy comparable to FFT/LoRA while DPD and EOD fall, mostly "
    "below both baselines (Civil Comments, hate speech)",
    criterion="test metrics at λ* (fair_guarded on validation, seed mean): acc_TA >= acc_FFT - "
    "0.03 AND DPD_TA < DPD_FFT AND EOD_TA < EOD_FFT AND EOD_TA < EOD_LoRA",
    headline=("acc_ta", "acc_fft", "eod_ta", "eod_fft", "eod_lora"),
)
def tuned_ta_vs_fft_lora(ctx: Context) -> Result:
    s = _settings(ctx)
    rows = []
    for i, seed in enumerate(s["seeds"]):
        ex = _experiment(ctx, seed)
        lam = select_lambda(
            ex["sweep"], "fair_guarded", reference_accuracy=ex["fft"]["val"]["accuracy"]
        )
        ta = next(r for r in ex["sweep"] if r["lam"] == lam)["test"]
        ci = {"ta": ex["ci95"]["sweep"][str(lam)], "fft": ex["ci95"]["fft"]}
        ci["lora"] = ex["ci95"]["lora"]
        rows.append(
            {"lam": lam, "ta": ta, "fft": ex["fft"]["test"], "lora": ex["lora"]["test"], "ci": ci}
        )
        ctx.report((i + 1) / len(s["seeds"]), f"seed {seed}")

    def mean(method: str, key: str) -> float:
        return float(np.mean([r[method][key] for r in rows]))

    m = {f"{k}_{meth}": mean(meth, k) for meth in ("ta", "fft", "lora") for k in ("accuracy",)}
    metrics = {
        "acc_ta": m["accuracy_ta"],
        "acc_fft": m["accuracy_fft"],
        "acc_lora": m["accuracy_lora"],
        "dpd_ta": mean("ta", "dpd"),
        "dpd_fft": mean("fft", "dpd"),
        "dpd_lora": mean("lora", "dpd"),
        "eod_ta": mean("ta", "eod"),
        "eod_fft": mean("fft", "eod"),
        "eod_lora": mean("lora", "eod"),
        "lambda_star": [r["lam"] for r in rows],
        "label_dpd_test": float(np.mean([r["ta"]["label_dpd"] for r in rows])),
        "ta_per_seed": [_short(r["ta"]) for r in rows],
        # bootstrap 95 % intervals of each seed's test metrics (reported, not judged)
        "ci95_per_seed": [r["ci"] for r in rows],
        "seeds": list(s["seeds"]),
    }
    result = Result.judge(
        metrics=metrics,
        baseline={
            "fft": {k: metrics[f"{k}_fft"] for k in ("acc", "dpd", "eod")},
            "lora": {k: metrics[f"{k}_lora"] for k in ("acc", "dpd", "eod")},
        },
        required={
            "acc_TA >= acc_FFT - 0.03": metrics["acc_ta"] >= metrics["acc_fft"] - 0.03,
            "DPD_TA < DPD_FFT": metrics["dpd_ta"] < metrics["dpd_fft"],
            "EOD_TA < EOD_FFT": metrics["eod_ta"] < metrics["eod_fft"],
            "EOD_TA < EOD_LoRA": metrics["eod_ta"] < metrics["eod_lora"],
        },
    )
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(9.5, 3.4))
    marks = {
        "acc": (metrics["acc_fft"] - 0.03, "TA must reach FFT − 0.03"),
        "dpd": (metrics["dpd_fft"], "TA must stay below FFT"),
        "eod": (min(metrics["eod_fft"], metrics["eod_lora"]), "TA must stay below FFT and LoRA"),
    }
    for ax, key in zip(axes, ("acc", "dpd", "eod")):
        vals = [metrics[f"{key}_{meth}"] for meth in ("ta", "fft", "lora")]
        ax.bar(["TA(λ*)", "FFT", "LoRA"], vals, color=["C2", "C0", "C1"])
        ax.set_title(key.upper() if key != "acc" else "accuracy", fontsize=9)
        mark_threshold(ax, *marks[key])
        ax.legend(fontsize=6, loc="lower right")
    return ctx.save_judged(fig, PAPER, "tuned-ta-vs-fft-lora", result)


@claim(
    paper=PAPER,
    name="lambda-frontier",
    statement="Past the accuracy peak, raising λ lowers EOD without collapsing accuracy",
    paper_value="accuracy peaks near λ ≈ 0.2; for larger λ DPD and EOD fall steadily",
    criterion="mean over seeds of Spearman(λ, test EOD) over grid points λ >= λ_acc (argmax "
    "validation accuracy) <= -0.5 AND test acc(λ_acc + 0.2) >= test acc(λ_acc) - 0.05",
    headline=("spearman_lambda_eod", "acc_drop_at_plus_0p2"),
)
def lambda_frontier(ctx: Context) -> Result:
    s = _settings(ctx)
    rhos, drops, lam_accs, curves = [], [], [], []
    for seed in s["seeds"]:
        ex = _experiment(ctx, seed)
        sweep = ex["sweep"]
        lams = np.array([r["lam"] for r in sweep])
        lam_acc = select_lambda(sweep, "acc")
        tail = [r for r in sweep if r["lam"] >= lam_acc - 1e-9]
        if len(tail) >= 3:
            rho = spearmanr([r["lam"] for r in tail], [r["test"]["eod"] for r in tail])[0]
            rhos.append(float(rho) if np.isfinite(rho) else float("nan"))
        i_acc = int(np.argmin(np.abs(lams - lam_acc)))
        i_far = int(np.argmin(np.abs(lams - min(lam_acc + 0.2, lams.max()))))
        drops.append(sweep[i_acc]["test"]["accuracy"] - sweep[i_far]["test"]["accuracy"])
        lam_accs.append(lam_acc)
        curves.append(ex)
    finite = [r for r in rhos if np.isfinite(r)]
    if not finite:
        result = Result(
            Verdict.INCONCLUSIVE,
            "the accuracy peak sits at the end of the grid: fewer than 3 points past it",
            metrics={"lambda_acc": lam_accs},
            baseline={"fft_test": _short(curves[0]["fft"]["test"])},
            checks={">= 3 grid points past the accuracy peak": False},
        )
        ex = curves[0]
        fig, ax = _plt().subplots(figsize=(5.5, 3.5))
        lam = [r["lam"] for r in ex["sweep"]]
        for key, color in (("accuracy", "C0"), ("eod", "C3")):
            ax.plot(lam, [r["test"][key] for r in ex["sweep"]], "o-", color=color, label=key)
        ax.axvline(lam_accs[0], color="gray", linestyle="--", label="λ_acc: no 3 points past it")
        ax.set_xlabel("λ (sum convention)")
        ax.legend(fontsize=7)
        return ctx.save_judged(fig, PAPER, "lambda-frontier", result)
    metrics = {
        "spearman_lambda_eod": float(np.mean(finite)),
        "spearman_per_seed": rhos,
        "acc_drop_at_plus_0p2": float(np.mean(drops)),
        "lambda_acc": lam_accs,
        "sweep_test": [{"lam": r["lam"], **_short(r["test"])} for r in curves[0]["sweep"]],
    }
    ex = curves[0]
    result = Result.judge(
        metrics=metrics,
        baseline={
            "fft_test": _short(ex["fft"]["test"]),
            "lora_test": _short(ex["lora"]["test"]),
        },
        required={
            "Spearman(λ, EOD) <= -0.5": metrics["spearman_lambda_eod"] <= -0.5,
            "acc(λ_acc+0.2) >= acc(λ_acc) - 0.05": metrics["acc_drop_at_plus_0p2"] <= 0.05,
        },
    )
    plt = _plt()
    fig, (ax, ax_r) = plt.subplots(1, 2, figsize=(9, 3.5), gridspec_kw={"width_ratios": [3, 2]})
    lam = [r["lam"] for r in ex["sweep"]]
    for key, color in (("accuracy", "C0"), ("dpd", "C1"), ("eod", "C3")):
        ax.plot(lam, [r["test"][key] for r in ex["sweep"]], "o-", color=color, label=f"TA {key}")
        ax.axhline(ex["fft"]["test"][key], color=color, linestyle=":", alpha=0.8)
    ax.axvline(lam_accs[0], color="gray", linestyle="--", label="λ_acc (first seed)")
    i_acc = int(np.argmin(np.abs(np.asarray(lam) - lam_accs[0])))
    acc0 = ex["sweep"][i_acc]["test"]["accuracy"]
    ax.axhline(acc0 - 0.05, color="C0", linestyle="--", lw=1, label="acc(λ_acc) − 0.05")
    ax.set_xlabel("λ (sum convention); dotted: FFT")
    ax.legend(fontsize=6)
    ax_r.bar(range(len(rhos)), rhos, color="C3")
    ax_r.set_xticks(range(len(rhos)), [str(k + 1) for k in range(len(rhos))], fontsize=7)
    ax_r.set_xlabel("seeds with >= 3 grid points past λ_acc", fontsize=7)
    mark_threshold(ax_r, -0.5, "mean must be <= −0.5")
    ax_r.axhline(metrics["spearman_lambda_eod"], color="k", lw=1, label="mean")
    ax_r.set_ylabel("Spearman(λ, EOD) past λ_acc")
    ax_r.legend(fontsize=6)
    return ctx.save_judged(fig, PAPER, "lambda-frontier", result)


@claim(
    paper=PAPER,
    name="subgroup-injection",
    statement="Adding one subgroup's task vector to FFT helps fairness for some subgroups and "
    "hurts it for others",
    paper_value="adding the Men or Asian vector improves the fairness-accuracy frontier; the "
    "Native American vector keeps accuracy but worsens DPD/EOD",
    criterion="over g and λ in {0.1, 0.3, 0.5} (test, first seed): some (g, λ) lowers "
    "worst-group EOD by >= 0.02 with |acc - acc_FFT| <= 0.03, AND some (g, λ) raises "
    "worst-group DPD or EOD by >= 0.01",
    headline=("best_eod_gain", "worst_harm"),
)
def subgroup_injection(ctx: Context) -> Result:
    s = _settings(ctx)
    ex = _experiment(ctx, s["seeds"][0])
    fft = ex["fft"]["test"]
    rows = [
        {
            "group": r["group"],
            "lam": r["lam"],
            "d_acc": r["test"]["accuracy"] - fft["accuracy"],
            "d_eod_worst": r["test"]["eod_worst"] - fft["eod_worst"],
            "d_dpd_worst": r["test"]["dpd_worst"] - fft["dpd_worst"],
        }
        for r in ex["inject"]
    ]
    helps = [r for r in rows if r["d_eod_worst"] <= -0.02 and abs(r["d_acc"]) <= 0.03]
    harm = max(max(r["d_eod_worst"], r["d_dpd_worst"]) for r in rows)
    gain = (
        -min(r["d_eod_worst"] for r in rows if abs(r["d_acc"]) <= 0.03)
        if any(abs(r["d_acc"]) <= 0.03 for r in rows)
        else float("nan")
    )
    metrics = {
        "best_eod_gain": gain,
        "worst_harm": float(harm),
        "n_helpful": len(helps),
        "rows": rows,
    }
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for g in ex["tau_norms"]:
        sub = [r for r in rows if r["group"] == g]
        ax.plot([r["lam"] for r in sub], [r["d_eod_worst"] for r in sub], "o-", label=g)
    mark_threshold(ax, -0.02, "help: <= −0.02 (at |Δacc| <= 0.03)")
    ax.axhline(0.01, color="C3", linestyle="--", lw=1, label="harm: >= +0.01 (EOD or DPD)")
    ax.set_xlabel("λ injected into FFT")
    ax.set_ylabel("Δ worst-group EOD vs FFT")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics=metrics,
        baseline={"fft_test": _short(fft)},
        required={
            "some g lowers worst-group EOD by >= 0.02 at FFT accuracy": bool(helps),
            "some g raises worst-group DPD or EOD by >= 0.01": harm >= 0.01,
        },
    )
    return ctx.save_judged(fig, PAPER, "subgroup-injection", result)


def _rho(x, y) -> float:
    rho = spearmanr(x, y)[0] if len(x) >= 3 else float("nan")
    return float(rho) if np.isfinite(rho) else float("nan")


@claim(
    paper=PAPER,
    name="bound-diagnostic",
    statement="Diagnostic D1 (reported, not judged): the paper's bound DPD(θ(λ)) <= U(λ) = "
    "2L Σ_g |λ_g − 1| ‖τ_g‖ along the λ sweep with an empirical L, and whether groups with "
    "larger task vectors react more to λ",
    paper_value="DPD <= 2L Σ_g |λ_g − 1| ‖τ_g‖ and EOD <= EOD(θ̄) + 4 √((B0+B1) U); groups with "
    "large task-vector norms react most to λ",
    criterion="none (diagnostic; the bound assumes DPD(θ̄) = 0, which need not hold): reported "
    "are U(λ) against test DPD on the grid (λ_g = G·λ), the share of grid points where "
    "DPD <= U and DPD <= DPD(θ̄) + U, and Spearman(‖τ_g‖, mean |ΔDPD_g/Δλ|) over groups",
    headline=("lipschitz_L", "share_dpd_below_U", "spearman_norm_sensitivity"),
)
def bound_diagnostic(ctx: Context) -> Result:
    s = _settings(ctx)
    per_seed = []
    for seed in s["seeds"]:
        ex = _experiment(ctx, seed)
        b, sweep = ex["bound"], ex["sweep"]
        groups = list(ex["tau_norms"])
        norms = np.array([ex["tau_norms"][g] for g in groups])
        G = len(groups)
        bar = b["balanced"]["test"]
        rows = []
        for r, soft in zip(sweep, b["soft_dpd_test"]):
            bound = fairness_bound(
                [G * r["lam"]] * G,
                norms,
                L=b["L"],
                B0=b["density"]["B0"],
                B1=b["density"]["B1"],
                eod_bar=bar["eod"],
            )
            rows.append(
                {
                    "lam": r["lam"],
                    "U": bound["U"],
                    "dpd": r["test"]["dpd"],
                    "soft_dpd": soft,
                    "eod": r["test"]["eod"],
                    "eod_bound": bound["eod_bound"],
                }
            )
        sens = group_sensitivity(sweep)
        coeff = b["coeff_sensitivity"]

        def share(ok) -> float:
            return float(np.mean([bool(v) for v in ok]))

        per_seed.append(
            {
                "seed": ex["seed"],
                "L": b["L"],
                "lipschitz_at": b["lipschitz"],
                "rows": rows,
                "tau_norms": dict(zip(groups, norms.tolist())),
                "sensitivity_dpd_g_per_lambda": sens,
                "sensitivity_dpd_per_coeff": {g: coeff[g]["d_dpd"] for g in groups},
                "spearman_norm_sensitivity": _rho(norms, [sens[g] for g in groups]),
                "spearman_norm_coeff_sensitivity": _rho(norms, [coeff[g]["d_dpd"] for g in groups]),
                "share_dpd_below_U": share(x["dpd"] <= x["U"] for x in rows),
                "share_dpd_below_dpd_bar_plus_U": share(
                    x["dpd"] <= bar["dpd"] + x["U"] for x in rows
                ),
                "share_soft_dpd_below_soft_bar_plus_U": share(
                    x["soft_dpd"] <= b["soft_dpd_bar"] + x["U"] for x in rows
                ),
                "share_eod_below_bound": share(x["eod"] <= x["eod_bound"] for x in rows),
                "spearman_U_dpd": _rho([x["U"] for x in rows], [x["dpd"] for x in rows]),
                "dpd_bar": bar["dpd"],
                "eod_bar": bar["eod"],
                "soft_dpd_bar": b["soft_dpd_bar"],
                "density": b["density"],
                "fft_test": _short(ex["fft"]["test"]),
            }
        )

    def mean(key: str) -> float:
        vals = [p[key] for p in per_seed if np.isfinite(p[key])]
        return float(np.mean(vals)) if vals else float("nan")

    keys = (
        "L",
        "share_dpd_below_U",
        "share_dpd_below_dpd_bar_plus_U",
        "share_soft_dpd_below_soft_bar_plus_U",
        "share_eod_below_bound",
        "spearman_norm_sensitivity",
        "spearman_norm_coeff_sensitivity",
        "spearman_U_dpd",
        "dpd_bar",
        "eod_bar",
    )
    metrics = {("lipschitz_L" if k == "L" else k): mean(k) for k in keys}
    metrics["per_seed"] = per_seed
    first = per_seed[0]
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    lam = [x["lam"] for x in first["rows"]]
    axes[0].plot(lam, [x["U"] for x in first["rows"]], "o-", color="C3", label="U(λ)")
    axes[0].plot(lam, [x["dpd"] for x in first["rows"]], "o-", color="C0", label="test DPD")
    axes[0].plot(lam, [x["soft_dpd"] for x in first["rows"]], "s--", color="C2", label="soft DPD")
    axes[0].axvline(1.0 / len(first["tau_norms"]), color="gray", linestyle=":", label="θ̄")
    axes[0].set_yscale("symlog", linthresh=0.01)
    axes[0].set_xlabel("λ (sum convention)")
    axes[0].legend(fontsize=7)
    g_names = list(first["tau_norms"])
    axes[1].scatter(
        [first["tau_norms"][g] for g in g_names],
        [first["sensitivity_dpd_g_per_lambda"][g] for g in g_names],
    )
    for g in g_names:
        axes[1].annotate(
            g, (first["tau_norms"][g], first["sensitivity_dpd_g_per_lambda"][g]), fontsize=7
        )
    axes[1].set_xlabel("‖τ_g‖")
    axes[1].set_ylabel("mean |ΔDPD_g / Δλ|")
    note = (
        f"diagnostic, not judged: DPD <= U at {metrics['share_dpd_below_U']:.0%} of grid points "
        f"(L = {metrics['lipschitz_L']:.3g}, DPD(θ̄) = {metrics['dpd_bar']:.3f}), "
        f"Spearman(‖τ_g‖, sensitivity) = {metrics['spearman_norm_sensitivity']:.2f}"
    )
    result = Result.inconclusive(
        note,
        metrics,
        baseline={
            "fft_test": first["fft_test"],
            "balanced_point": {"dpd": first["dpd_bar"], "eod": first["eod_bar"]},
        },
        checks={
            "reported: DPD <= U(λ) at every grid point": metrics["share_dpd_below_U"] == 1.0,
            "reported: Spearman(‖τ_g‖, |ΔDPD_g/Δλ|) > 0": bool(
                metrics["spearman_norm_sensitivity"] > 0
            ),
        },
    )
    axes[0].set_title("diagnostic: no threshold (reported, not judged)", fontsize=8)
    return ctx.save_judged(fig, PAPER, "bound-diagnostic", result)
