"""Claim checks of "On Fairness of Task Arithmetic": tuned task addition against FFT and LoRA
(C1), the λ frontier (C2) and subgroup-dependent injection (C3), on ``identity_toxicity``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from iclr26.claims import Context, Result, Verdict, claim, mark_threshold
from iclr26.llm.task_arithmetic_fairness.data import identity_toxicity
from iclr26.llm.task_arithmetic_fairness.editing import (
    evaluate,
    inject_subgroup,
    lambda_sweep,
    select_lambda,
)
from iclr26.llm.task_arithmetic_fairness.model import (
    encode,
    finetune_full,
    finetune_lora,
    sequence_classifier,
    subgroup_task_vectors,
)

PAPER = "task_arithmetic_fairness"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _base(ctx: Context):
    """The causal LM under θ₀ per scale: a 2-step cached mini model (smoke), the cached ``test``
    size (quick), the ``quick`` size (full)."""
    from iclr26.models.tinylm import load_causal_lm, pretrain_tiny_lm

    if ctx.scale.value == "smoke":
        return pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)
    return load_causal_lm(ctx.pick(smoke="test", quick="test", full="quick"))


def _settings(ctx: Context) -> dict:
    return dict(
        n=ctx.pick(smoke=(240, 80, 120), quick=(1000, 300, 600), full=(6000, 1500, 3000)),
        epochs=ctx.pick(smoke=1, quick=2, full=3),
        seeds=ctx.pick(smoke=(0,), quick=(0,), full=(0, 1, 2)),
        grid=ctx.pick(
            smoke=(0.0, 0.5, 1.0),
            quick=tuple(round(0.1 * i, 1) for i in range(11)),
            full=tuple(round(0.1 * i, 1) for i in range(11)),
        ),
    )


INJECT_LAMBDAS = (0.1, 0.3, 0.5)


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
        data = identity_toxicity(n_train, n_val, n_test, groups=4, seed=ctx.seed + seed)
        base, tok = sequence_classifier(_base(ctx), seed=ctx.seed + seed)
        enc = {name: encode(tok, getattr(data, name).text) for name in ("train", "val", "test")}
        train = dict(epochs=s["epochs"], lr=3e-4, batch_size=32, seed=ctx.seed + seed)
        train["device"] = ctx.device
        tr = data.train
        fft = finetune_full(base, enc["train"], tr.y, **train)
        ctx.report(0.2, "FFT done")
        lora = finetune_lora(base, enc["train"], tr.y, r=8, alpha=16, dropout=0.1, **train)
        ctx.report(0.35, "LoRA done")
        vectors = subgroup_task_vectors(base, enc["train"], tr.y, tr.group, **train)
        ctx.report(0.5, "subgroup vectors done")
        sets = {k: (enc[k], getattr(data, k).y, getattr(data, k).group) for k in ("val", "test")}
        sweep = lambda_sweep(base, vectors, sets, grid=s["grid"], convention="sum")
        ctx.report(0.8, "sweep done")
        inject = [
            {
                "group": g,
                "lam": lam,
                "test": evaluate(inject_subgroup(fft, vec, lam), *sets["test"]),
            }
            for g, vec in vectors.items()
            for lam in INJECT_LAMBDAS
        ]
        out = {
            "seed": ctx.seed + seed,
            "sweep": sweep,
            "inject": inject,
            "tau_norms": {g: vec.norm() for g, vec in vectors.items()},
            "fft": {k: evaluate(fft, *v) for k, v in sets.items()},
            "lora": {k: evaluate(lora, *v) for k, v in sets.items()},
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
        rows.append({"lam": lam, "ta": ta, "fft": ex["fft"]["test"], "lora": ex["lora"]["test"]})
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
        "seeds": list(s["seeds"]),
    }
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax, key in zip(axes, ("acc", "dpd", "eod")):
        vals = [metrics[f"{key}_{meth}"] for meth in ("ta", "fft", "lora")]
        ax.bar(["TA(λ*)", "FFT", "LoRA"], vals, color=["C2", "C0", "C1"])
        ax.set_title(key.upper() if key != "acc" else "accuracy")
    fig_path = ctx.save_figure(fig, PAPER, "tuned-ta-vs-fft-lora")
    return Result.judge(
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
        figures=[fig_path],
    )


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
        return Result(
            Verdict.INCONCLUSIVE,
            "the accuracy peak sits at the end of the grid: fewer than 3 points past it",
            metrics={"lambda_acc": lam_accs},
            baseline={"fft_test": _short(curves[0]["fft"]["test"])},
            checks={">= 3 grid points past the accuracy peak": False},
        )
    metrics = {
        "spearman_lambda_eod": float(np.mean(finite)),
        "spearman_per_seed": rhos,
        "acc_drop_at_plus_0p2": float(np.mean(drops)),
        "lambda_acc": lam_accs,
        "sweep_test": [{"lam": r["lam"], **_short(r["test"])} for r in curves[0]["sweep"]],
    }
    ex = curves[0]
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    lam = [r["lam"] for r in ex["sweep"]]
    for key, color in (("accuracy", "C0"), ("dpd", "C1"), ("eod", "C3")):
        ax.plot(lam, [r["test"][key] for r in ex["sweep"]], "o-", color=color, label=f"TA {key}")
        ax.axhline(ex["fft"]["test"][key], color=color, linestyle=":", alpha=0.8)
    ax.axvline(lam_accs[0], color="gray", linestyle="--", label="λ_acc")
    ax.set_xlabel("λ (sum convention)")
    ax.legend(fontsize=7)
    fig_path = ctx.save_figure(fig, PAPER, "lambda-frontier")
    return Result.judge(
        metrics=metrics,
        baseline={
            "fft_test": _short(ex["fft"]["test"]),
            "lora_test": _short(ex["lora"]["test"]),
        },
        required={
            "Spearman(λ, EOD) <= -0.5": metrics["spearman_lambda_eod"] <= -0.5,
            "acc(λ_acc+0.2) >= acc(λ_acc) - 0.05": metrics["acc_drop_at_plus_0p2"] <= 0.05,
        },
        figures=[fig_path],
    )


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
    mark_threshold(ax, -0.02, "help threshold")
    ax.set_xlabel("λ injected into FFT")
    ax.set_ylabel("Δ worst-group EOD vs FFT")
    ax.legend(fontsize=7)
    fig_path = ctx.save_figure(fig, PAPER, "subgroup-injection")
    return Result.judge(
        metrics=metrics,
        baseline={"fft_test": _short(fft)},
        required={
            "some g lowers worst-group EOD by >= 0.02 at FFT accuracy": bool(helps),
            "some g raises worst-group DPD or EOD by >= 0.01": harm >= 0.01,
        },
        figures=[fig_path],
    )
