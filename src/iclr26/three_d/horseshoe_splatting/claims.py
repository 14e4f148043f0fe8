"""Claim checks of Horseshoe Splatting on a synthetic scene with exact ground truth (flat and
needle splats over a textured ground quad, sparse training arc, full-circle test views):
C1 fidelity vs deterministic 3DGS, C2 uncertainty quality vs a Gaussian-prior VI, C3 structured
sparsity of the scales, C4 render-time overhead. HS, GP and DET train in the same process on
the same data, init, seeds and steps."""

from __future__ import annotations

import functools

import numpy as np
import torch

from iclr26.claims import Context, Result, claim

from .evaluate import ause, make_scene_data, spearman_uncertainty
from .model import HorseshoeSplatting

PAPER = "horseshoe_splatting"
MODELS = {"hs": "horseshoe", "gp": "gaussian", "det": "none"}


def _setting(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(n_gt=10, size=16, n_train=3, n_test=2, steps=4, texels=4, mc_test=3),
        quick=dict(n_gt=60, size=32, n_train=6, n_test=8, steps=120, texels=8, mc_test=10),
        full=dict(n_gt=150, size=48, n_train=8, n_test=16, steps=1500, texels=16, mc_test=10),
    )


def _device(ctx: Context) -> str:
    """CPU at smoke/quick scale; ``ctx.device`` (a GPU when present) at full scale."""
    return ctx.pick("cpu", "cpu", str(ctx.device))


def _sync(device: str):
    if device.startswith("cuda"):
        return torch.cuda.synchronize
    return None


@functools.cache
def _run(scale: str, seed: int, device: str = "cpu", which: tuple = ("hs", "gp", "det")) -> dict:
    """Train the models in ``which`` (HS, GP, DET) once per (scale, seed) and evaluate them on the
    test views (each claim runs in its own process, so each trains only what it compares)."""
    ctx = Context(scale=scale, seed=seed)
    s = _setting(ctx)
    torch.manual_seed(seed)
    data = make_scene_data(
        s["n_gt"],
        size=s["size"],
        n_train=s["n_train"],
        n_test=s["n_test"],
        texels=s["texels"],
        seed=seed,
    )
    out = {"data": data, "models": {}, "eval": {}}
    for key in which:
        prior = MODELS[key]
        model = HorseshoeSplatting(data["init_means"], prior=prior, mc_test=s["mc_test"], seed=seed)
        model = model.to(device)
        model.fit(data["train_images"], data["train_cams"], steps=s["steps"])
        psnr, rho, au = [], [], []
        for cam, img in zip(data["test_cams"], data["test_images"]):
            mean, std = (t.cpu() for t in model.predict(cam, return_std=True))
            psnr.append(float(-10 * torch.log10(((mean - img) ** 2).mean())))
            err = (mean - img).abs().mean(-1).numpy()
            rho.append(spearman_uncertainty(err, std.numpy()))
            au.append(ause(err, std.numpy()))
        out["models"][key] = model
        out["eval"][key] = {
            "psnr": float(np.mean(psnr)),
            "spearman": float(np.mean(rho)),
            "ause": float(np.mean(au)),
            "final_loss": model.history[-1],
            "steps": s["steps"],
        }
    return out


def _sparsity(model: HorseshoeSplatting, data: dict) -> dict:
    rep = model.sparsity_report()
    thin = rep["thin_mask"].cpu()
    gt = data["scene"].means
    nearest = torch.cdist(model.means.detach().cpu(), gt).argmin(1)
    gt_has_thin = data["thin"].any(1)[
        nearest
    ]  # a flagged component is correct if its GT splat is flat/needle
    flagged = thin.any(1)
    precision = float(gt_has_thin[flagged].float().mean()) if bool(flagged.any()) else 0.0
    return {"share": rep["share"], "precision": precision, "flagged_splats": int(flagged.sum())}


def _uncertainty_figure(ctx: Context, run: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = run["data"]
    cam, img = data["test_cams"][-1], data["test_images"][-1]
    fig, axes = plt.subplots(2, 3, figsize=(7.5, 5))
    for row, key in enumerate(("hs", "gp")):
        mean, std = (t.cpu() for t in run["models"][key].predict(cam, return_std=True))
        panels = [
            (mean.clamp(0, 1).numpy(), f"{key.upper()} mean"),
            ((mean - img).abs().mean(-1).numpy(), "|error|"),
            (std.numpy(), "predicted std"),
        ]
        for ax, (pic, title) in zip(axes[row], panels):
            ax.imshow(pic)
            ax.set_title(title, fontsize=9)
            ax.axis("off")
    path = ctx.save_figure(fig, PAPER, "useful-uncertainty")
    plt.close(fig)
    return path


_C = "same synthetic scene, init, seed and steps for HS (horseshoe VI), GP (Gaussian-prior VI) and DET (3DGS); "


@claim(
    paper=PAPER,
    name="fidelity-matches-3dgs",
    statement="Horseshoe Splatting keeps the rendering fidelity of deterministic 3DGS",
    paper_value="LF PSNR 30.05 vs ablation priors 30.01-30.04; SOTA-level fidelity (Table 2, 3)",
    criterion=_C + "mean test PSNR of the HS predictive mean >= DET PSNR - 0.5 dB",
)
def fidelity(ctx: Context) -> Result:
    r = _run(ctx.scale.value, ctx.seed, _device(ctx), ("hs", "det"))["eval"]
    return Result.judge(
        metrics={
            "psnr_hs": r["hs"]["psnr"],
            "psnr_gap_db": r["hs"]["psnr"] - r["det"]["psnr"],
            "hs": r["hs"],
        },
        baseline={"det": r["det"]},
        required={"PSNR(HS) >= PSNR(DET) - 0.5 dB": r["hs"]["psnr"] >= r["det"]["psnr"] - 0.5},
    )


@claim(
    paper=PAPER,
    name="useful-uncertainty",
    statement="The horseshoe posterior gives per-pixel uncertainty that tracks the error, "
    "better calibrated than a Gaussian prior",
    paper_value="LF AUSE 0.25 (horseshoe) vs 0.38 (Gaussian prior), Table 3",
    criterion=_C + "per-pixel Spearman rho(std, |err|) of HS >= 0.3 and AUSE(HS) < AUSE(GP) "
    "(AUSE on |error|, per image, normalised by the random ranking)",
)
def uncertainty(ctx: Context) -> Result:
    run = _run(ctx.scale.value, ctx.seed, _device(ctx), ("hs", "gp"))
    r = run["eval"]
    fig_path = _uncertainty_figure(ctx, run)
    return Result.judge(
        figures=[fig_path],
        metrics={"spearman_hs": r["hs"]["spearman"], "ause_hs": r["hs"]["ause"]},
        baseline={"gp": {"spearman": r["gp"]["spearman"], "ause": r["gp"]["ause"]}},
        required={
            "rho(HS) >= 0.3": r["hs"]["spearman"] >= 0.3,
            "AUSE(HS) < AUSE(GP)": r["hs"]["ause"] < r["gp"]["ause"],
        },
    )


@claim(
    paper=PAPER,
    name="structured-sparsity",
    statement="The horseshoe prior shrinks noise-dominated scale directions (structured sparsity)",
    paper_value="64.62% of scale components below eps with the horseshoe, far above Laplace/"
    "Gaussian priors (Table 7)",
    criterion=_C + "share of posterior-mean scale components < 0.1 x median scale: "
    "share(HS) >= share(GP) + 0.10 and precision(HS) >= 0.6 w.r.t. GT flat/needle splats "
    "(nearest GT mean)",
)
def sparsity(ctx: Context) -> Result:
    run = _run(ctx.scale.value, ctx.seed, _device(ctx), ("hs", "gp"))
    hs = _sparsity(run["models"]["hs"], run["data"])
    gp = _sparsity(run["models"]["gp"], run["data"])
    return Result.judge(
        metrics={"share_hs": hs["share"], "precision_hs": hs["precision"], "hs": hs},
        baseline={"gp": gp},
        required={
            "share(HS) >= share(GP) + 0.10": hs["share"] >= gp["share"] + 0.10,
            "precision(HS) >= 0.6": hs["precision"] >= 0.6,
        },
    )


@claim(
    paper=PAPER,
    name="render-overhead",
    statement="Horseshoe Splatting renders at almost the cost of deterministic 3DGS",
    paper_value="33 FPS on LF torch; 0.03 s per uncertainty view (Table 9)",
    criterion=_C + "CPU time of the HS posterior-median render (s = beta) <= 1.2 x the DET render "
    "time (timeit, one thread, min over repeats); M-sample uncertainty render time and "
    "pixel-Gaussian pair counts reported beside",
)
def render_overhead(ctx: Context) -> Result:
    run = _run(ctx.scale.value, ctx.seed, _device(ctx), ("hs", "det"))
    hs, det = run["models"]["hs"], run["models"]["det"]
    cam = run["data"]["test_cams"][0]
    rep = ctx.pick(3, 7, 10)
    sync = _sync(_device(ctx))
    t_hs = ctx.timeit(lambda: hs.render_point(cam), repeat=rep, threads=1, sync=sync)
    t_det = ctx.timeit(lambda: det.render_point(cam), repeat=rep, threads=1, sync=sync)
    t_unc = ctx.timeit(
        lambda: hs.predict(cam, return_std=True), repeat=max(1, rep // 3), threads=1, sync=sync
    )
    t_hs.count(gaussians=len(hs.means), pixel_pairs=hs.render_point(cam).stats["pixel_pairs"])
    t_det.count(gaussians=len(det.means), pixel_pairs=det.render_point(cam).stats["pixel_pairs"])
    t_unc.count(renders=hs.mc_test)
    ratio = t_hs.cpu_s / max(t_det.cpu_s, 1e-12)
    return Result.judge(
        metrics={
            "ratio_hs_over_det": ratio,
            "hs_point_render": t_hs.to_dict(),
            "hs_uncertainty_render": t_unc.to_dict(),
        },
        baseline={"det_render": t_det.to_dict()},
        required={"time(HS posterior-median render) <= 1.2 x time(DET render)": ratio <= 1.2},
    )
