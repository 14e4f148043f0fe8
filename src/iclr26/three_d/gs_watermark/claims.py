"""Claim checks of CompMarkGS on a textured three-plane scene: C1 bit accuracy after HAC-like
anchor-feature quantization against the no-QDL ablation (bit accuracy vs the compression step
reported in the same run), C3 rendering quality against the unwatermarked anchor model."""

from __future__ import annotations

import copy
import functools

import numpy as np

from iclr26.claims import Context, Result, claim

from .anchor import AnchorGS
from .losses import psnr
from .scene import textured_scene
from .watermark import CompMarkGS, HACLikeCompressor, message_bits, pretrain_decoder

PAPER = "gs_watermark"
STEPS = (0.1, 0.2, 0.4)


def _setting(scale: str) -> dict:
    return dict(
        smoke=dict(
            views=4, size=16, tex=8, voxel=0.3, gs_steps=3, dec_steps=3, wm_steps=3, bits=8, seeds=1
        ),
        quick=dict(
            views=8,
            size=32,
            tex=24,
            voxel=0.2,
            gs_steps=120,
            dec_steps=200,
            wm_steps=100,
            bits=16,
            seeds=1,
        ),
        full=dict(
            views=16,
            size=64,
            tex=48,
            voxel=0.1,
            gs_steps=1500,
            dec_steps=2000,
            wm_steps=1500,
            bits=32,
            seeds=3,
        ),
    )[scale]


@functools.lru_cache(maxsize=2)
def _experiment(scale: str, seed: int) -> dict:
    s = _setting(scale)
    rows = []
    dec = pretrain_decoder(s["bits"], steps=s["dec_steps"], seed=seed)
    for k in range(s["seeds"]):
        views, cams, pts = textured_scene(s["views"], s["size"], tex_res=s["tex"], seed=seed + k)
        n_train = 3 * s["views"] // 4
        tr_v, tr_c, te_v, te_c = views[:n_train], cams[:n_train], views[n_train:], cams[n_train:]
        b0 = AnchorGS.fit(tr_v, tr_c, pts, steps=s["gs_steps"], voxel=s["voxel"], seed=seed + k)
        msg = message_bits(s["bits"], seed=seed + k)
        row = dict(
            b0_psnr=float(
                np.mean([psnr(b0.render(c).detach(), v) for c, v in zip(te_c, te_v, strict=True)])
            )
        )
        for name, qdl in (("full", (0.2, "learned")), ("no_qdl", None)):
            wm = CompMarkGS(copy.deepcopy(b0), dec, msg, qdl=qdl).fit(
                tr_v, tr_c, steps=s["wm_steps"], seed=seed + k
            )
            row[f"{name}_acc"] = {"0": wm.bit_accuracy(te_c)}
            for d in STEPS:
                row[f"{name}_acc"][str(d)] = wm.bit_accuracy(te_c, HACLikeCompressor(d))
            row[f"{name}_psnr"] = float(
                np.mean([psnr(wm.render(c), v) for c, v in zip(te_c, te_v, strict=True)])
            )
            row[f"{name}_rate_bits_0.4"] = HACLikeCompressor(0.4).rate_bits(
                wm.watermarked_features().detach()
            )
        rows.append(row)
    return dict(rows=rows, setting=s)


def _mean(rows, key, sub=None):
    return float(np.mean([r[key][sub] if sub else r[key] for r in rows]))


@claim(
    paper=PAPER,
    name="survives-compression",
    statement="Bits embedded in anchor features through the QDL survive quantization of the features",
    paper_value="HAC + CompMarkGS 95.95 % before / 95.92 % after; without QDL 90.75 % after",
    criterion="bit accuracy on test views after anchor-feature quantization with step 0.4: "
    "CompMarkGS >= 0.85 AND >= no-QDL ablation + 0.05",
    headline=("bit_acc_after_0.4", "bit_acc_before"),
)
def survives_compression(ctx: Context) -> Result:
    exp = _experiment(ctx.scale.value, ctx.seed)
    rows = exp["rows"]
    full = {d: _mean(rows, "full_acc", d) for d in ("0", *map(str, STEPS))}
    abl = {d: _mean(rows, "no_qdl_acc", d) for d in ("0", *map(str, STEPS))}
    metrics = {
        "bit_acc_before": full["0"],
        "bit_acc_after_0.4": full["0.4"],
        "bit_acc_vs_step": full,
        "feature_rate_bits_0.4": _mean(rows, "full_rate_bits_0.4"),
        "bits": exp["setting"]["bits"],
    }
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    xs = [0.0, *STEPS]
    ax.plot(xs, [full[str(d) if d else "0"] for d in xs], "o-", label="CompMarkGS (QDL)")
    ax.plot(xs, [abl[str(d) if d else "0"] for d in xs], "s--", label="no QDL")
    ax.axhline(0.85, color="grey", lw=0.8)
    ax.set_xlabel("feature quantization step (0 = uncompressed)")
    ax.set_ylabel("bit accuracy (test views)")
    ax.legend()
    figure = str(ctx.save_figure(fig, PAPER, "bit-acc-vs-step"))
    baseline = {
        "no_qdl": {
            "bit_acc_before": abl["0"],
            "bit_acc_after_0.4": abl["0.4"],
            "bit_acc_vs_step": abl,
        }
    }
    return Result.judge(
        metrics=metrics,
        baseline=baseline,
        figures=[figure],
        required={
            "acc after step 0.4 >= 0.85": full["0.4"] >= 0.85,
            "acc >= no-QDL + 0.05": full["0.4"] >= abl["0.4"] + 0.05,
        },
    )


@claim(
    paper=PAPER,
    name="quality-preserved",
    statement="Watermarking keeps rendering quality close to the unwatermarked anchor model",
    paper_value="HAC + CompMarkGS PSNR 27.68 dB, about 0.1-0.2 dB below plain HAC",
    criterion="mean test PSNR of CompMarkGS >= unwatermarked AnchorGS - 1.5 dB",
    headline=("psnr", "psnr_drop_db"),
)
def quality_preserved(ctx: Context) -> Result:
    rows = _experiment(ctx.scale.value, ctx.seed)["rows"]
    p, b0 = _mean(rows, "full_psnr"), _mean(rows, "b0_psnr")
    return Result.judge(
        metrics={"psnr": p, "psnr_drop_db": b0 - p},
        baseline={
            "anchorgs_unwatermarked": {"psnr": b0},
            "no_qdl": {"psnr": _mean(rows, "no_qdl_psnr")},
        },
        required={"PSNR >= B0 - 1.5 dB": p >= b0 - 1.5},
    )
