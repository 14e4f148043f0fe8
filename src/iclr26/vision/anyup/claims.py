"""Claim checks of AnyUp: trained once on backbone A, it upsamples the features of unseen
backbones B and C better than bilinear (and about as well as an upsampler trained on B),
with features that average back to the input; and its feature-agnostic layer costs no more
than a feature-specific first layer."""

from __future__ import annotations

import numpy as np
import torch

from iclr26.claims import Context, Result, claim
from iclr26.data.vision import make_scenes, skimage_crops
from iclr26.models.vision import pretrained_tiny
from iclr26.vision.anyup.baselines import JointBilateralUpsampler, SpecificUpsampler, bilinear
from iclr26.vision.anyup.evaluation import feature_fidelity, probe_miou
from iclr26.vision.anyup.model import AnyUp
from iclr26.vision.anyup.training import as_feature_map, train_anyup

PAPER = "anyup"
SMALL = dict(qk_dim=32, num_heads=2, window_ratio=0.15, kernel_size_lfu=5, lfu_dim=32)
BACKBONES = {"A": "tinyvit_p8_ssl", "B": "tinycnn_s8_sup", "C": "randconv_s8"}
N_LABELS = 7  # make_scenes(n_classes=6): background + 6 shape classes
GAIN = 2.0  # mIoU points over bilinear, fixed by the spec
GAP = 2.0  # allowed mIoU gap to the upsampler trained on B
FIDELITY = 0.9


def _backbones(ctx: Context) -> dict[str, torch.nn.Module]:
    recipe = ctx.pick(smoke="test", quick="default")
    return {k: pretrained_tiny(name, recipe=recipe) for k, name in BACKBONES.items()}


def _training_images(n: int, seed: int, size: int = 128) -> np.ndarray:
    """Square images of twice the backbone input (128 px): scikit-image crops and synthetic
    scenes (a seed disjoint from the evaluation scenes)."""
    half = n // 2
    crops = skimage_crops(n - half, size=size, seed=seed)
    scenes = make_scenes(half, size=size, seed=10_000 + seed)[0]
    return np.concatenate([crops, scenes]).astype(np.float32)


def _features(extract, images: torch.Tensor, batch: int = 64) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([extract(images[i : i + batch]) for i in range(0, len(images), batch)])


def _figure(ctx: Context, table: dict[str, dict[str, float]], name: str, result: Result,
            fidelity: dict[str, float]) -> Result:  # fmt: skip
    """Probe mIoU per backbone and method, with AnyUp_A's thresholds (bilinear + GAIN on B and
    C, AnyUp_B - GAP on B) over its bars; titled with the verdict of ``result``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    methods = sorted({m for row in table.values() for m in row})
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        xs = [j + i * width for j, k in enumerate(table) if m in table[k]]
        ys = [table[k][m] for k in table if m in table[k]]
        ax.bar(xs, ys, width, label=m)
    i = methods.index("anyup_A")
    for j, k in enumerate(table):
        x0, x1 = j + i * width - width / 2, j + i * width + width / 2
        if k in ("B", "C"):
            ax.hlines(table[k]["bilinear"] + GAIN, x0, x1, colors="black", linestyles="--",
                      linewidth=1.4, label=f"AnyUp_A needs bilinear + {GAIN}" if k == "B" else None)  # fmt: skip
        if k == "B" and "anyup_B" in table[k]:
            ax.hlines(table[k]["anyup_B"] - GAP, x0, x1, colors="tab:red", linestyles=":",
                      linewidth=1.6, label=f"AnyUp_A needs AnyUp_B - {GAP}")  # fmt: skip
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(table))])
    ax.set_xticklabels([f"backbone {k}" for k in table])
    ax.set_ylabel("probe mIoU (%)")
    ax.set_title(
        "fidelity cos(AreaDown(F), P): "
        + ", ".join(f"{k} {v:.3f}" for k, v in fidelity.items())
        + f" (each >= {FIDELITY})",
        fontsize=8,
    )
    ax.legend(fontsize=7, ncol=2)
    return ctx.save_judged(fig, PAPER, name, result)


@claim(
    paper=PAPER,
    name="unseen-backbones",
    statement=(
        "Trained once on backbone A, AnyUp upsamples the features of unseen backbones B and C "
        "better than bilinear, close to an upsampler trained on B, and preserves the features"
    ),
    paper_value=(
        "state-of-the-art dense probing; generalises to unseen encoders without retraining, "
        "close to encoder-specific training (Tables 1-3, 5)"
    ),
    criterion=(
        "1x1-conv linear probe mIoU on 64-px synthetic scenes (7 labels) from 8x8 features "
        "upsampled to 64x64; reproduced iff on B and C both mIoU(AnyUp_A) >= mIoU(bilinear) "
        f"+ {GAIN} points, on B mIoU(AnyUp_A) >= mIoU(AnyUp_B) - {GAP} points, and "
        f"cos(AreaDown(F), P) >= {FIDELITY} on A, B and C; not reproduced if the bilinear "
        "gain fails on both B and C; inconclusive otherwise. JBU and SpecificUpsampler_B are "
        "reported, not gating"
    ),
    cpus=2,
    timeout_s={"quick": 1800},
    headline=("gain_over_bilinear_B", "gain_over_bilinear_C"),
)
def unseen_backbones(ctx: Context) -> Result:
    steps = ctx.pick(smoke=3, quick=60, full=5000)
    batch = ctx.pick(smoke=2, quick=4, full=8)
    n_pool = ctx.pick(smoke=4, quick=256, full=2000)
    pool_size = ctx.pick(smoke=64, quick=128, full=128)  # smoke: 32-px crops, 4x4 targets
    n_train, n_test = ctx.pick(smoke=(8, 4), quick=(120, 60), full=(400, 200))
    epochs = ctx.pick(smoke=1, quick=50, full=50)
    device = ctx.device if ctx.scale.value == "full" else "cpu"
    backbones = _backbones(ctx)
    extract = {k: as_feature_map(m.to(device)) for k, m in backbones.items()}
    pool = _training_images(n_pool, ctx.seed, pool_size)
    ctx.report(0.02, "training AnyUp on A")
    anyup_a = train_anyup({"A": backbones["A"]}, pool, steps, batch, seed=ctx.seed,
                          device=device, **SMALL)  # fmt: skip
    ctx.report(0.25, "training AnyUp on B")
    anyup_b = train_anyup({"B": backbones["B"]}, pool, steps, batch, seed=ctx.seed,
                          device=device, **SMALL)  # fmt: skip
    ctx.report(0.45, "training SpecificUpsampler on B")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ctx.seed)
        spec_model = SpecificUpsampler(backbones["B"].embed_dim, **SMALL)
    specific_b = train_anyup({"B": backbones["B"]}, pool, steps, batch, model=spec_model,
                             seed=ctx.seed, device=device)  # fmt: skip

    images, masks, _ = make_scenes(n_train + n_test, size=64, n_classes=6, seed=500 + ctx.seed)
    x = torch.from_numpy(images).to(device)
    xtr, xte, ytr, yte = x[:n_train], x[n_train:], masks[:n_train], masks[n_train:]
    jbu = JointBilateralUpsampler()
    miou, acc, fidelity, preserved = {}, {}, {}, {}
    for i, key in enumerate(("A", "B", "C")):
        ctx.report(0.6 + 0.13 * i, f"probes on backbone {key}")
        ftr, fte = _features(extract[key], xtr), _features(extract[key], xte)
        methods = {"bilinear": bilinear, "jbu": jbu, "anyup_A": anyup_a.upsample}
        if key == "B":
            methods.update(anyup_B=anyup_b.upsample, specific_B=specific_b.upsample)
        miou[key], acc[key] = {}, {}
        probes = {}
        for name, up in methods.items():
            out = probe_miou(up, xtr, ftr, ytr, xte, fte, yte, N_LABELS, epochs=epochs,
                             seed=ctx.seed)  # fmt: skip
            miou[key][name] = 100 * out["miou"]
            acc[key][name] = 100 * out["pixel_acc"]
            probes[name] = out["probe"]
        # semantic preservation (labelled cross-use): the bilinear probe on AnyUp_A's features
        cross = probe_miou(anyup_a.upsample, xtr, ftr, ytr, xte, fte, yte, N_LABELS,
                           probe=probes["bilinear"])  # fmt: skip
        preserved[key] = {"miou": 100 * cross["miou"], "pixel_acc": 100 * cross["pixel_acc"]}
        fidelity[key] = feature_fidelity(anyup_a.upsample, xte, fte)
    gain = {k: miou[k]["anyup_A"] - miou[k]["bilinear"] for k in miou}
    gap_b = miou["B"]["anyup_A"] - miou["B"]["anyup_B"]
    required = {
        f"B: AnyUp_A >= bilinear + {GAIN}": gain["B"] >= GAIN,
        f"C: AnyUp_A >= bilinear + {GAIN}": gain["C"] >= GAIN,
        f"B: AnyUp_A >= AnyUp_B - {GAP}": gap_b >= -GAP,
    }
    for k in ("A", "B", "C"):
        required[f"{k}: fidelity >= {FIDELITY}"] = fidelity[k] >= FIDELITY
    partial = {f"AnyUp_A >= bilinear + {GAIN} on B or on C": gain["B"] >= GAIN or gain["C"] >= GAIN}
    hist = {"anyup_A": anyup_a.history_, "anyup_B": anyup_b.history_,
            "specific_B": specific_b.history_}  # fmt: skip
    result = Result.judge(
        metrics={
            "miou": miou,
            "pixel_acc": acc,
            "gain_over_bilinear_A": gain["A"],
            "gain_over_bilinear_B": gain["B"],
            "gain_over_bilinear_C": gain["C"],
            "gap_to_anyup_B": gap_b,
            "gain_over_jbu_A": miou["A"]["anyup_A"] - miou["A"]["jbu"],
            "fidelity_anyup_A": fidelity,
            "semantic_preservation_bilinear_probe_on_anyup_A": preserved,
            "train_loss_first_last": {
                k: [float(np.mean(h["total"][:10])), float(np.mean(h["total"][-10:]))]
                for k, h in hist.items()
            },
            "steps": steps,
            "batch": batch,
            "n_train": n_train,
            "n_test": n_test,
        },
        baseline={
            "bilinear": {k: miou[k]["bilinear"] for k in miou},
            "jbu": {k: miou[k]["jbu"] for k in miou},
            "anyup_B": miou["B"]["anyup_B"],
            "specific_B": miou["B"]["specific_B"],
        },
        required=required,
        partial=partial,
    )
    return _figure(ctx, miou, "unseen-backbones", result, fidelity)


def _forward_flops(fn) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


@claim(
    paper=PAPER,
    name="agnostic-layer-cost",
    statement=(
        "The feature-agnostic layer makes AnyUp no more expensive than the same upsampler "
        "with a feature-specific first layer"
    ),
    paper_value="AnyUp is efficient (windowed attention; inference cost comparable to JAFAR)",
    criterion=(
        "64-channel 8x8 features to 64x64, batch 8, one thread: FLOP ratio AnyUp / "
        "SpecificUpsampler (same config) <= 1.25 and CPU-time ratio <= 1.5; bilinear and JBU "
        "times reported beside"
    ),
    exclusive=True,
    headline=("cpu_ratio_anyup_over_specific", "flop_ratio_anyup_over_specific"),
)
def agnostic_layer_cost(ctx: Context) -> Result:
    cfg = ctx.pick(smoke=dict(SMALL, qk_dim=16, lfu_dim=16), quick=SMALL, full=SMALL)
    repeat = ctx.pick(smoke=2, quick=5, full=10)
    gen = ctx.torch_generator()
    image = torch.rand(8, 3, 64, 64, generator=gen)
    feats = torch.randn(8, 64, 8, 8, generator=gen)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ctx.seed)
        anyup = AnyUp(**cfg).eval()
        specific = SpecificUpsampler(64, **cfg).eval()
    jbu = JointBilateralUpsampler()
    calls = {
        "anyup": lambda: anyup.upsample(image, feats),
        "specific": lambda: specific.upsample(image, feats),
        "bilinear": lambda: bilinear(image, feats),
        "jbu": lambda: jbu(image, feats),
    }
    timing = {}
    for name, fn in calls.items():
        flops = _forward_flops(fn)
        t = ctx.timeit(fn, repeat=repeat, threads=1)
        timing[name] = t.count(flops=flops, images=8).to_dict()
    cpu = {k: v["cpu_s"] / 8 for k, v in timing.items()}
    flop_ratio = timing["anyup"]["count_flops"] / timing["specific"]["count_flops"]
    cpu_ratio = cpu["anyup"] / cpu["specific"]
    result = Result.judge(
        metrics={
            "cpu_s_per_image": cpu,
            "cpu_ratio_anyup_over_specific": cpu_ratio,
            "flop_ratio_anyup_over_specific": flop_ratio,
            "cpu_ratio_anyup_over_bilinear": cpu["anyup"] / max(cpu["bilinear"], 1e-9),
            "anyup": timing["anyup"],
        },
        baseline={k: timing[k] for k in ("specific", "bilinear", "jbu")},
        required={
            "FLOP ratio AnyUp / specific <= 1.25": flop_ratio <= 1.25,
            "CPU-time ratio AnyUp / specific <= 1.5": cpu_ratio <= 1.5,
        },
    )
    mflops = {k: v["count_flops"] / 8 / 1e6 for k, v in timing.items()}
    panels = [
        ("forward MFLOPs per image (counted)", mflops, 1.25 * mflops["specific"],
         "AnyUp needs <= 1.25 x specific"),
        ("CPU ms per image (one thread, min)", {k: 1e3 * v for k, v in cpu.items()},
         1.5e3 * cpu["specific"], "AnyUp needs <= 1.5 x specific"),
    ]  # fmt: skip
    return _cost_figure(ctx, "agnostic-layer-cost", result, panels, method="anyup")


def _cost_figure(ctx: Context, name: str, result: Result, panels: list, method: str) -> Result:
    """One bar panel per judged cost, ``panels`` holding ``(ylabel, {name: value}, bound,
    label)``: the method (red) beside its baselines with the criterion's bound drawn as a
    threshold; titled with the verdict of ``result`` and attached to it."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.3))
    for ax, (ylabel, values, bound, label) in zip(np.atleast_1d(axes), panels):
        names = list(values)
        colors = ["tab:red" if n == method else "tab:blue" for n in names]
        ax.bar(range(len(names)), [values[n] for n in names], color=colors)
        ctx.mark_threshold(ax, bound, label)
        ax.set_ylim(0, 1.25 * max(max(values.values()), bound))
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.legend(fontsize=6)
    return ctx.save_judged(fig, PAPER, name, result)
