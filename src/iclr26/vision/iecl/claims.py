"""Claim checks of IE-CL: the small-batch gain over SimCLR (A), that the gain is a
small-batch phenomenon (B, full scale) and the plug-in gain on BYOL-lite (C, full scale)."""

from __future__ import annotations

import numpy as np
import torch

from iclr26.claims import Context, Result, Scale, claim
from iclr26.data.vision import make_shapes
from iclr26.metrics.vision import linear_probe
from iclr26.vision.iecl.extractor import make_framework, train_ssl

PAPER = "iecl"
LR = 1e-3
DELTA_H_MIN = 0.1  # nats: below this the transform is not generating entropy
GAIN_MIN = 1.0  # points of mean probe gain the gain claims need


def _data(seed: int, n_train: int, n_test: int, size: int = 32):
    xtr, ytr = make_shapes(n_train, 10, size, texture_bg=True, seed=1000 + seed)
    xte, yte = make_shapes(n_test, 10, size, texture_bg=True, seed=5000 + seed)
    return xtr, ytr, xte, yte


def _train_and_probe(
    method: str, data, steps: int, batch: int, seed: int, probe_n: int | None = None
):
    xtr, ytr, xte, yte = data
    torch.manual_seed(seed)
    model = make_framework(method, seed=seed)
    model.configure_optimizers(LR)
    history = train_ssl(model, xtr, steps, batch, seed=seed, log_every=max(1, steps // 40))
    ztr = model.encode(torch.from_numpy(xtr)).numpy()
    zte = model.encode(torch.from_numpy(xte)).numpy()
    acc = linear_probe(ztr, ytr, zte, yte, max_iter=2000)
    return model, acc, history


def _step_flops(model, x: torch.Tensor, total: int) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        model.training_step(x, total, total)
    return float(counter.get_total_flops())


def _raw_pixel_probe(data, n: int) -> float:
    xtr, ytr, xte, yte = data
    return linear_probe(
        xtr[:n].reshape(min(n, len(xtr)), -1), ytr[:n], xte.reshape(len(xte), -1), yte, max_iter=300
    )


def _curves_figure(ctx: Context, histories: dict[str, dict], name: str, result: Result,
                   acc: dict[str, list[float]]) -> Result:  # fmt: skip
    """Training curves, the ΔĤ threshold over the judged second half, and the per-seed probe
    accuracies with the gain threshold; titled with the verdict of ``result``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    for label, hist in histories.items():
        axes[0].plot(hist["step"], hist["loss"], label=label)
        if "iecl" in label:
            axes[1].plot(hist["step"], hist["delta_h"], label=label)
            axes[2].plot(hist["step"], hist["reg"], label=label)
    for ax, title in zip(axes, ("contrastive loss", "ΔĤ (nats)", "R (coding rate)")):
        ax.set_title(title)
        ax.set_xlabel("step")
    axes[0].legend(fontsize=7)
    steps = histories["iecl"]["step"]
    if len(steps):
        axes[1].axvspan(steps[len(steps) // 2], steps[-1], color="grey", alpha=0.15,
                        label="judged: mean over 2nd half")  # fmt: skip
    ctx.mark_threshold(axes[1], DELTA_H_MIN, f"mean >= {DELTA_H_MIN} nats")
    axes[1].legend(fontsize=7)
    seeds = np.arange(len(acc["iecl"]))
    axes[3].plot(seeds, acc["simclr"], "s", color="tab:gray", label="SimCLR")
    axes[3].plot(seeds, acc["iecl"], "o", color="tab:red", label="IE-CL")
    ctx.mark_threshold(axes[3], float(np.mean(acc["simclr"])) + GAIN_MIN,
                       f"IE-CL mean needs SimCLR mean + {GAIN_MIN}")  # fmt: skip
    axes[3].set(title="probe accuracy (each seed: IE-CL >= SimCLR)", xlabel="seed",
                ylabel="accuracy (points)", xticks=seeds)  # fmt: skip
    axes[3].title.set_fontsize(8)
    axes[3].legend(fontsize=7)
    return ctx.save_judged(fig, PAPER, name, result)


def _gain_verdict(gains: list[float], threshold: float = GAIN_MIN):
    mean_gain = float(np.mean(gains))
    required = {
        f"mean gain >= +{threshold} point": mean_gain >= threshold,
        "IE-CL >= base on every seed": all(g >= 0 for g in gains),
    }
    return mean_gain, required, {"mean gain > 0": mean_gain > 0}


@claim(
    paper=PAPER,
    name="small-batch-gain",
    statement="At a small batch (B = 32) IE-CL's two modules improve SimCLR's linear-probe accuracy",
    paper_value="consistent linear-evaluation gains over the base method on CIFAR-10/100, STL-10, ImageNet with small batches",
    criterion=(
        "textured 10-class shapes, TinyConvNet from scratch, B = 32, same steps/augmentations/"
        "optimizer; reproduced iff mean(IE-CL) - mean(SimCLR) >= +1.0 point, IE-CL >= SimCLR "
        f"on every seed and mean ΔĤ over the second half of training >= {DELTA_H_MIN} nats; "
        "not reproduced if the mean gain <= 0; inconclusive in between"
    ),
    timeout_s={"quick": 3600},
    exclusive=True,
)
def small_batch_gain(ctx: Context) -> Result:
    seeds = ctx.pick(smoke=[0], quick=[0, 1], full=[0, 1, 2, 3, 4])
    steps = ctx.pick(smoke=6, quick=300, full=5000)
    n_train, n_test = ctx.pick(smoke=(96, 64), quick=(6000, 2000), full=(6000, 2000))
    batch = ctx.pick(smoke=8, quick=32, full=32)
    acc = {"simclr": [], "iecl": []}
    delta_h_late, reg_late, histories = [], [], {}
    raw = None
    timing = {}
    for i, seed in enumerate(seeds):
        data = _data(seed, n_train, n_test)
        if raw is None:
            raw = _raw_pixel_probe(data, ctx.pick(smoke=96, quick=2000, full=2000))
        models = {}
        for method in ("simclr", "iecl"):
            ctx.report((2 * i + (method == "iecl")) / (2 * len(seeds)), f"seed {seed}: {method}")
            model, a, hist = _train_and_probe(method, data, steps, batch, seed)
            acc[method].append(100 * a)
            models[method] = model
            if i == 0:
                histories[method] = hist
            if method == "iecl":
                half = len(hist["delta_h"]) // 2
                delta_h_late.append(float(np.mean(hist["delta_h"][half:])))
                reg_late.append(float(np.mean(hist["reg"][half:])))
        if i == 0:  # one step of each, same batch, after training (threads pinned to 1)
            xb = torch.from_numpy(data[0][:batch])
            for method, model in models.items():
                flops = _step_flops(model, xb, steps)
                t = ctx.timeit(
                    lambda m=model, x=xb: m.training_step(x, steps, steps),
                    repeat=ctx.pick(smoke=1, quick=5),
                    warmup=ctx.pick(smoke=0, quick=1),
                    threads=1,
                )
                timing[method] = t.count(flops_per_step=flops, images_per_step=batch).to_dict()
    gains = [b - a for a, b in zip(acc["simclr"], acc["iecl"])]
    mean_gain, required, partial = _gain_verdict(gains)
    mean_dh = float(np.mean(delta_h_late))
    required[f"mean ΔĤ (2nd half) >= {DELTA_H_MIN} nats"] = mean_dh >= DELTA_H_MIN
    step_ratio = timing["iecl"]["cpu_s"] / timing["simclr"]["cpu_s"]
    flop_ratio = timing["iecl"]["count_flops_per_step"] / timing["simclr"]["count_flops_per_step"]
    note = ""
    if raw is not None and raw >= 0.6:
        note = f"raw-pixel probe reaches {raw:.2f}: the data may be too easy"
    if mean_dh < DELTA_H_MIN:
        note = (
            note + "; " if note else ""
        ) + "ΔĤ stays about 0: the transform is not generating entropy"
    result = Result.judge(
        metrics={
            "iecl_acc": acc["iecl"],
            "iecl_acc_mean": float(np.mean(acc["iecl"])),
            "gain_points": gains,
            "mean_gain_points": mean_gain,
            "delta_h_second_half": delta_h_late,
            "reg_second_half": reg_late,
            "delta_h_curve": histories["iecl"]["delta_h"],
            "reg_curve": histories["iecl"]["reg"],
            "raw_pixel_probe": raw,
            "step_time_ratio_iecl_over_simclr": step_ratio,
            "step_flop_ratio_iecl_over_simclr": flop_ratio,
            "iecl_step": timing["iecl"],
            "steps": steps,
            "batch": batch,
            "seeds": seeds,
        },
        baseline={
            "simclr": {
                "acc": acc["simclr"],
                "acc_mean": float(np.mean(acc["simclr"])),
                "step": timing["simclr"],
            }
        },
        required=required,
        partial=partial,
        note=note,
    )
    return _curves_figure(ctx, histories, "small-batch-gain", result, acc)


@claim(
    paper=PAPER,
    name="gain-shrinks-with-batch",
    statement="IE-CL's gain over SimCLR is a small-batch phenomenon: larger at B = 32 than at B = 256",
    paper_value="the gains are largest under small-batch settings (abstract)",
    criterion="full scale: gain(B = 32) > gain(B = 256), mean over seeds, same steps; skipped at quick scale (B = 256 costs 8x a B = 32 step)",
    timeout_s={"full": 36000},
)
def gain_shrinks_with_batch(ctx: Context) -> Result:
    if ctx.scale is Scale.QUICK:
        return Result.skipped(
            "full scale only: 4 runs at B = 256 do not fit the quick budget; run --scale full"
        )
    seeds = ctx.pick(smoke=[0], quick=[0], full=[0, 1, 2])
    steps = ctx.pick(smoke=4, quick=0, full=5000)
    batches = ctx.pick(smoke=(4, 16), quick=(32, 256), full=(32, 256))
    n_train, n_test = ctx.pick(smoke=(64, 48), quick=(6000, 2000), full=(6000, 2000))
    acc = {(m, b): [] for m in ("simclr", "iecl") for b in batches}
    for seed in seeds:
        data = _data(seed, n_train, n_test)
        for b in batches:
            for method in ("simclr", "iecl"):
                acc[(method, b)].append(100 * _train_and_probe(method, data, steps, b, seed)[1])
    small, large = batches
    gain = {b: float(np.mean(acc[("iecl", b)]) - np.mean(acc[("simclr", b)])) for b in batches}
    result = Result.judge(
        metrics={f"gain_B{b}": gain[b] for b in batches}
        | {f"iecl_acc_B{b}": acc[("iecl", b)] for b in batches},
        baseline={f"simclr_acc_B{b}": acc[("simclr", b)] for b in batches},
        required={f"gain at B = {small} > gain at B = {large}": gain[small] > gain[large]},
    )
    return _batch_figure(ctx, acc, gain, batches, result)


def _batch_figure(ctx: Context, acc: dict, gain: dict, batches, result: Result) -> Result:
    """Probe accuracy per batch size (bars: seed means, dots: seeds) and the gain per batch
    size with the bound the small-batch gain must exceed (the large-batch gain); titled with
    the verdict of ``result`` and attached to it."""
    import matplotlib.pyplot as plt

    small, large = batches
    fig, axes = plt.subplots(1, 2, figsize=(7.4, 3.3))
    x = np.arange(len(batches))
    for j, (method, label) in enumerate((("simclr", "SimCLR"), ("iecl", "IE-CL"))):
        means = [float(np.mean(acc[(method, b)])) for b in batches]
        axes[0].bar(x + (j - 0.5) * 0.38, means, 0.38, label=label,
                    color=("tab:gray", "tab:red")[j])  # fmt: skip
        for i, b in enumerate(batches):
            axes[0].scatter([i + (j - 0.5) * 0.38] * len(acc[(method, b)]), acc[(method, b)],
                            color="black", s=10, zorder=3)  # fmt: skip
    axes[0].set_xticks(x, [f"B = {b}" for b in batches])
    axes[0].set_ylabel("linear-probe accuracy (%)", fontsize=8)
    axes[0].legend(fontsize=7)
    axes[1].bar(x, [gain[b] for b in batches], 0.5, color=["tab:red", "tab:gray"])
    ctx.mark_threshold(axes[1], gain[large], f"gain(B = {small}) must exceed gain(B = {large})")
    axes[1].axhline(0.0, color="grey", linewidth=0.6)
    axes[1].set_xticks(x, [f"B = {b}" for b in batches])
    axes[1].set_ylabel("gain IE-CL - SimCLR (points, seed mean)", fontsize=8)
    axes[1].legend(fontsize=6)
    return ctx.save_judged(fig, PAPER, "gain-shrinks-with-batch", result)


def _seed_figure(ctx: Context, acc: dict[str, list[float]], labels: dict[str, str], name: str,
                 result: Result, threshold: float = GAIN_MIN) -> Result:  # fmt: skip
    """Per-seed probe accuracy of the base framework and of IE-CL on it, their means, and the
    bound on IE-CL's mean (base mean + ``threshold``); titled with the verdict of ``result``."""
    import matplotlib.pyplot as plt

    (base, base_label), (method, method_label) = labels.items()
    fig, ax = plt.subplots(figsize=(5.0, 3.3))
    seeds = np.arange(len(acc[method]))
    ax.plot(seeds, acc[base], "s", color="tab:gray", label=base_label)
    ax.plot(seeds, acc[method], "o", color="tab:red", label=method_label)
    ax.axhline(float(np.mean(acc[method])), color="tab:red", linewidth=1.0,
               label=f"{method_label} mean")  # fmt: skip
    ctx.mark_threshold(ax, float(np.mean(acc[base])) + threshold,
                       f"{method_label} mean needs {base_label} mean + {threshold}")  # fmt: skip
    ax.set(xlabel="seed", ylabel="accuracy (points)", xticks=seeds)
    ax.set_title(f"probe accuracy (each seed: {method_label} >= {base_label})", fontsize=8)
    ax.legend(fontsize=6)
    return ctx.save_judged(fig, PAPER, name, result)


@claim(
    paper=PAPER,
    name="plug-in-byol",
    statement="IE-CL's modules plug into another two-view framework (BYOL-lite) and improve it",
    paper_value="the modules integrate seamlessly into existing frameworks and improve them",
    criterion="full scale: mean(IE-CL on BYOL-lite) - mean(BYOL-lite) >= +1.0 point over 3 seeds and >= 0 on every seed (B = 32, same steps); skipped at quick scale",
    timeout_s={"full": 36000},
)
def plug_in_byol(ctx: Context) -> Result:
    if ctx.scale is Scale.QUICK:
        return Result.skipped(
            "full scale only: two more BYOL-lite runs per seed do not fit the quick budget; run --scale full"
        )
    seeds = ctx.pick(smoke=[0], quick=[0], full=[0, 1, 2])
    steps = ctx.pick(smoke=4, quick=0, full=5000)
    batch = ctx.pick(smoke=8, quick=32, full=32)
    n_train, n_test = ctx.pick(smoke=(64, 48), quick=(6000, 2000), full=(6000, 2000))
    acc = {"byol": [], "iecl_byol": []}
    for seed in seeds:
        data = _data(seed, n_train, n_test)
        for method in acc:
            acc[method].append(100 * _train_and_probe(method, data, steps, batch, seed)[1])
    gains = [b - a for a, b in zip(acc["byol"], acc["iecl_byol"])]
    mean_gain, required, partial = _gain_verdict(gains)
    result = Result.judge(
        metrics={
            "iecl_byol_acc": acc["iecl_byol"],
            "gain_points": gains,
            "mean_gain_points": mean_gain,
        },
        baseline={"byol_lite": {"acc": acc["byol"], "acc_mean": float(np.mean(acc["byol"]))}},
        required=required,
        partial=partial,
    )
    labels = {"byol": "BYOL-lite", "iecl_byol": "IE-CL on BYOL-lite"}
    return _seed_figure(ctx, acc, labels, "plug-in-byol", result)
