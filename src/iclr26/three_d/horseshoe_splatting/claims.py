"""Claim checks of Horseshoe Splatting on a synthetic scene with exact ground truth (flat and
needle splats over a textured ground quad, sparse training arc, full-circle test views):
C1 fidelity vs deterministic 3DGS, C2 uncertainty quality vs Gaussian- and Laplace-prior VI,
C3 structured sparsity of the scales, C4 render-time overhead, C5 the contraction trend of the
scale posterior with the number of training views. HS, GP, LP and DET train in the same run on
the same data, init, seeds, steps and densification schedule.

Every claim runs in its own process under ``iclr26 reproduce``; a trained model is kept (state
dict and its test-view evaluation, under ``out_dir/cache``, keyed by the settings, the room's
source code and the parent process, i.e. one ``reproduce`` run) so that sibling claims of the same
run reuse it instead of training it again."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from iclr26.claims import Context, Result, claim
from iclr26.three_d.gs_raster import ssim

from .evaluate import ause, kde_nll, make_scene_data, spearman_uncertainty
from .model import HorseshoeSplatting

PAPER = "horseshoe_splatting"
MODELS = {"hs": "horseshoe", "gp": "gaussian", "lp": "laplace", "det": "none"}


def _setting(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(
            n_gt=10, size=16, n_train=3, n_test=2, steps=4, texels=4, mc_test=3,
            densify=dict(densify_from=2, densify_every=2, densify_until=4, grad_threshold=0.25),
            views=(2, 3, 4),
        ),
        quick=dict(
            n_gt=60, size=32, n_train=8, n_test=8, steps=150, texels=8, mc_test=10,
            densify=dict(densify_from=50, densify_every=50, densify_until=120, grad_threshold=0.25),
            views=(4, 8, 16),
        ),
        full=dict(
            n_gt=150, size=48, n_train=8, n_test=16, steps=1500, texels=16, mc_test=10,
            densify=dict(
                densify_from=300, densify_every=100, densify_until=1000, grad_threshold=0.25
            ),
            views=(4, 8, 16),
        ),
    )  # fmt: skip


def _device(ctx: Context) -> str:
    """CPU at smoke/quick scale; ``ctx.device`` (a GPU when present) at full scale."""
    return ctx.pick("cpu", "cpu", str(ctx.device))


def _sync(device: str):
    if device.startswith("cuda"):
        return torch.cuda.synchronize
    return None


@contextlib.contextmanager
def _one_thread():
    """Train and evaluate with one intra-op thread: these ops are small, and on a loaded machine
    a second thread mostly spins (measured here: 37x the CPU time of one thread at quick scale)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@functools.cache
def _source_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


@functools.cache
def _data(scale: str, seed: int, n_train: int) -> dict:
    s = _setting(Context(scale=scale, seed=seed))
    return make_scene_data(
        s["n_gt"],
        size=s["size"],
        n_train=n_train,
        n_test=s["n_test"],
        texels=s["texels"],
        seed=seed,
    )


def _sparsity(model: HorseshoeSplatting, data: dict) -> dict:
    rep = model.sparsity_report()
    thin = rep["thin_mask"].cpu()
    gt = data["scene"].means
    nearest = torch.cdist(model.means.detach().cpu(), gt).argmin(1)
    # a flagged splat is correct if its nearest GT splat is flat or needle
    gt_has_thin = data["thin"].any(1)[nearest]
    flagged = thin.any(1)
    precision = float(gt_has_thin[flagged].float().mean()) if bool(flagged.any()) else 0.0
    return {"share": rep["share"], "precision": precision, "flagged_splats": int(flagged.sum())}


def _evaluate(model: HorseshoeSplatting, data: dict) -> dict:
    psnr, ssims, rho, au, nll, nll_kde = [], [], [], [], [], []
    pixel_var = float(torch.nn.functional.softplus(model.pixel_rho.detach()) ** 2)
    for cam, img in zip(data["test_cams"], data["test_images"]):
        mean, std, renders = (
            t.cpu() for t in model.predict(cam, return_std=True, return_samples=True)
        )
        # the official code's kernel-density NLL of the M renders (reported, not judged)
        nll_kde.append(kde_nll(renders, img))
        psnr.append(float(-10 * torch.log10(((mean - img) ** 2).mean())))
        # SSIM of the predictive mean (3DGS form; reported beside PSNR, judged nowhere)
        ssims.append(float(ssim(mean, img)))
        # Gaussian predictive NLL per pixel and channel: the M-render spread plus the learned
        # pixel noise (the code's kernel-density NLL is not used)
        var = std[..., None] ** 2 + pixel_var
        nll.append(float((0.5 * torch.log(2 * np.pi * var) + 0.5 * (img - mean) ** 2 / var).mean()))
        err = (mean - img).abs().mean(-1).numpy()
        rho.append(spearman_uncertainty(err, std.numpy()))
        au.append(ause(err, std.numpy()))
    post_std = model.posterior_std().cpu()
    return {
        "psnr": float(np.mean(psnr)),
        "ssim": float(np.mean(ssims)),
        "spearman": float(np.mean(rho)),
        "ause": float(np.mean(au)),
        "nll": float(np.mean(nll)),
        "nll_kde": float(np.mean(nll_kde)),
        "final_loss": model.history[-1],
        "splats": int(model.means.shape[0]),
        "densify_log": model.densify_log,
        "median_posterior_std": float(post_std.median()),
        "median_sigma": float(model.sigma.detach().median()),
        "ig_nan_resets": model.ig_nan_resets,  # NaN entries of the IG factors reset in fit
        "sparsity": _sparsity(model, data),
    }


def _build(prior: str, n: int, s: dict, seed: int) -> HorseshoeSplatting:
    return HorseshoeSplatting(torch.zeros(n, 3), prior=prior, mc_test=s["mc_test"], seed=seed)


@functools.cache
def _trained(scale: str, seed: int, device: str, key: str, n_train: int, out_dir: str):
    """Train one model (``key`` in MODELS) on ``n_train`` views, or load it from the cache a
    sibling claim of the same run wrote; returns (model, evaluation on the test views)."""
    ctx = Context(scale=scale, seed=seed)
    s = _setting(ctx)
    data = _data(scale, seed, n_train)
    payload = [key, n_train, scale, seed, s, _source_hash(), os.getppid()]
    tag = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]
    path = Path(out_dir) / "cache" / f"{PAPER}-{key}-{n_train}v-{scale}-{seed}-{tag}.pt"
    if scale != "smoke" and path.is_file() and time.time() - path.stat().st_mtime < 3600:
        blob = torch.load(path, weights_only=False)
        model = _build(MODELS[key], blob["splats"], s, seed)
        model.load_state_dict(blob["state"])
        model.history = blob["history"]
        model.densify_log = blob["eval"]["densify_log"]
        return model.to(device), blob["eval"]
    torch.manual_seed(seed)
    model = HorseshoeSplatting(
        data["init_means"], prior=MODELS[key], mc_test=s["mc_test"], seed=seed
    ).to(device)
    with _one_thread():
        model.fit(data["train_images"], data["train_cams"], steps=s["steps"], **s["densify"])
        result = _evaluate(model, data)
    if scale != "smoke":
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save(
            {
                "state": model.state_dict(),
                "splats": result["splats"],
                "history": model.history,
                "eval": result,
            },
            tmp,
        )
        tmp.replace(path)
    return model, result


def _run(ctx: Context, which: tuple, n_train: int | None = None) -> dict:
    """The models in ``which`` (HS, GP, LP, DET), trained once per run, with their evaluation."""
    s = _setting(ctx)
    n_train = s["n_train"] if n_train is None else n_train
    out = {"data": _data(ctx.scale.value, ctx.seed, n_train), "models": {}, "eval": {}}
    for key in which:
        model, ev = _trained(
            ctx.scale.value, ctx.seed, _device(ctx), key, n_train, str(ctx.out_dir)
        )
        out["models"][key], out["eval"][key] = model, {**ev, "steps": s["steps"]}
    return out


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax, values: dict, ylabel: str, colors=None) -> None:
    """One bar per model (``{label: value}``), the value printed above it."""
    labels = list(values)
    heights = [float(values[k]) for k in labels]
    bars = ax.bar(labels, heights, color=colors or [f"C{i}" for i in range(len(labels))])
    ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.margins(y=0.3)  # room above the bars for the labels and the legend
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=8)


def _uncertainty_panels(run: dict) -> list:
    """Mean, |error| and predicted std of HS, GP and LP on the last test view (the images the
    uncertainty figure shows; rendered once, after the metrics were computed)."""
    data = run["data"]
    cam, img = data["test_cams"][-1], data["test_images"][-1]
    rows = []
    for key in ("hs", "gp", "lp"):
        with _one_thread():
            mean, std = (t.cpu() for t in run["models"][key].predict(cam, return_std=True))
        rows.append(
            [
                (mean.clamp(0, 1).numpy(), f"{key.upper()} mean"),
                ((mean - img).abs().mean(-1).numpy(), "|error|"),
                (std.numpy(), "predicted std"),
            ]
        )
    return rows


_C = (
    "same synthetic scene, init, seed, steps and 3DGS densification schedule for HS (horseshoe "
    "VI), GP (Gaussian-prior VI), LP (Laplace-prior VI) and DET (3DGS); "
)


@claim(
    paper=PAPER,
    name="fidelity-matches-3dgs",
    statement="Horseshoe Splatting keeps the rendering fidelity of deterministic 3DGS",
    paper_value="LF PSNR 30.05 vs ablation priors 30.01-30.04; SOTA-level fidelity (Table 2, 3)",
    criterion=_C + "mean test PSNR of the HS predictive mean >= DET PSNR - 0.5 dB",
    headline=("psnr_hs", "psnr"),
)
def fidelity(ctx: Context) -> Result:
    r = _run(ctx, ("hs", "det"))["eval"]
    result = Result.judge(
        metrics={
            "psnr_hs": r["hs"]["psnr"],
            "psnr_gap_db": r["hs"]["psnr"] - r["det"]["psnr"],
            "ssim_hs": r["hs"]["ssim"],
            "hs": r["hs"],
        },
        baseline={"det": r["det"]},
        required={"PSNR(HS) >= PSNR(DET) - 0.5 dB": r["hs"]["psnr"] >= r["det"]["psnr"] - 0.5},
    )
    fig, ax = _plt().subplots(figsize=(4.2, 3.2))
    _bars(ax, {"HS": r["hs"]["psnr"], "DET (3DGS)": r["det"]["psnr"]}, "mean test PSNR (dB)")
    ctx.mark_threshold(ax, r["det"]["psnr"] - 0.5, "HS must reach PSNR(DET) - 0.5 dB")
    ax.set_ylim(min(r["hs"]["psnr"], r["det"]["psnr"]) - 3, None)
    ax.legend(fontsize=7, loc="lower right")
    return ctx.save_judged(fig, PAPER, "fidelity-matches-3dgs", result)


@claim(
    paper=PAPER,
    name="useful-uncertainty",
    statement="The horseshoe posterior gives per-pixel uncertainty that tracks the error, "
    "better calibrated than Gaussian and Laplace priors",
    paper_value="LF AUSE 0.25 (horseshoe) vs 0.38 (Gaussian prior) and 0.37 (Laplace prior), "
    "Table 3",
    criterion=_C + "per-pixel Spearman rho(std, |err|) of HS >= 0.3 and AUSE(HS) < AUSE(GP) and "
    "AUSE(HS) < AUSE(LP) (AUSE on |error|, per image, normalised by the random ranking); "
    "Gaussian predictive NLL reported beside",
    headline=("ause_hs", "ause"),
)
def uncertainty(ctx: Context) -> Result:
    run = _run(ctx, ("hs", "gp", "lp"))
    r = run["eval"]
    panels = _uncertainty_panels(run)
    result = Result.judge(
        metrics={
            "spearman_hs": r["hs"]["spearman"],
            "ause_hs": r["hs"]["ause"],
            "nll_hs": r["hs"]["nll"],
            "nll_kde_hs": r["hs"]["nll_kde"],
            "psnr_hs": r["hs"]["psnr"],
            "ssim_hs": r["hs"]["ssim"],
            "ig_nan_resets_hs": r["hs"]["ig_nan_resets"],
        },
        baseline={
            k: {m: r[k][m] for m in ("spearman", "ause", "nll", "nll_kde", "psnr", "ssim")}
            for k in ("gp", "lp")
        },
        required={
            "rho(HS) >= 0.3": r["hs"]["spearman"] >= 0.3,
            "AUSE(HS) < AUSE(GP)": r["hs"]["ause"] < r["gp"]["ause"],
            "AUSE(HS) < AUSE(LP)": r["hs"]["ause"] < r["lp"]["ause"],
        },
    )
    fig = _plt().figure(figsize=(7.5, 9.6))
    grid = fig.add_gridspec(4, 6)
    for row, images in enumerate(panels):
        for col, (pic, title) in enumerate(images):
            ax = fig.add_subplot(grid[row, 2 * col : 2 * col + 2])
            ax.imshow(pic)
            ax.set_title(title, fontsize=8)
            ax.axis("off")
    models = {k.upper(): r[k] for k in ("hs", "gp", "lp")}
    ax_rho = fig.add_subplot(grid[3, :3])
    _bars(ax_rho, {k: v["spearman"] for k, v in models.items()}, "Spearman rho(std, |error|)")
    ctx.mark_threshold(ax_rho, 0.3, "HS must reach 0.3")
    ax_rho.legend(fontsize=7, loc="lower right")
    ax_ause = fig.add_subplot(grid[3, 3:])
    _bars(ax_ause, {k: v["ause"] for k, v in models.items()}, "AUSE (lower is better)")
    ctx.mark_threshold(
        ax_ause, min(r["gp"]["ause"], r["lp"]["ause"]), "HS must lie below min(GP, LP)"
    )
    ax_ause.legend(fontsize=7, loc="lower right")
    return ctx.save_judged(fig, PAPER, "useful-uncertainty", result)


@claim(
    paper=PAPER,
    name="structured-sparsity",
    statement="The horseshoe prior shrinks noise-dominated scale directions (structured sparsity)",
    paper_value="64.62% of scale components below eps with the horseshoe, far above Laplace/"
    "Gaussian priors (Table 7)",
    criterion=_C + "share of posterior-mean scale components < 0.1 x median scale: "
    "share(HS) >= max(share(GP), share(LP)) + 0.10 and precision(HS) >= 0.6 w.r.t. GT "
    "flat/needle splats (nearest GT mean)",
    headline=("share_hs", "share"),
)
def sparsity(ctx: Context) -> Result:
    run = _run(ctx, ("hs", "gp", "lp"))
    r = run["eval"]
    hs, gp, lp = (r[k]["sparsity"] for k in ("hs", "gp", "lp"))
    best_base = max(gp["share"], lp["share"])
    result = Result.judge(
        metrics={"share_hs": hs["share"], "precision_hs": hs["precision"], "hs": hs},
        baseline={"gp": gp, "lp": lp},
        required={
            "share(HS) >= max(share(GP), share(LP)) + 0.10": hs["share"] >= best_base + 0.10,
            "precision(HS) >= 0.6": hs["precision"] >= 0.6,
        },
    )
    fig, (ax_hist, ax_share, ax_prec) = _plt().subplots(
        1, 3, figsize=(9.6, 3.2), gridspec_kw=dict(width_ratios=(1.6, 1, 0.7))
    )
    for i, key in enumerate(("hs", "gp", "lp")):
        # the posterior-mean scales that the share counts, relative to their median
        scales = torch.exp(run["models"][key].beta.detach().cpu()).flatten()
        rel = torch.log10(scales / scales.median()).numpy()
        ax_hist.hist(rel, bins=30, histtype="step", color=f"C{i}", label=key.upper())
    ctx.mark_threshold(ax_hist, np.log10(0.1), "counted below 0.1 x median", axis="x")
    ax_hist.set_xlabel("log10(scale / median scale)", fontsize=8)
    ax_hist.set_ylabel("scale components", fontsize=8)
    ax_hist.legend(fontsize=7)
    _bars(
        ax_share, {"HS": hs["share"], "GP": gp["share"], "LP": lp["share"]}, "share < 0.1 x median"
    )
    ctx.mark_threshold(ax_share, best_base + 0.10, "HS must reach max(GP, LP) + 0.10")
    ax_share.set_ylim(0, max(1.0, hs["share"]) * 1.05)
    ax_share.legend(fontsize=7)
    _bars(ax_prec, {"HS": hs["precision"]}, "precision of flagged splats")
    ctx.mark_threshold(ax_prec, 0.6, "HS must reach 0.6")
    ax_prec.set_ylim(0, 1.05)
    ax_prec.legend(fontsize=7)
    return ctx.save_judged(fig, PAPER, "structured-sparsity", result)


@claim(
    paper=PAPER,
    name="render-overhead",
    statement="Horseshoe Splatting renders at almost the cost of deterministic 3DGS",
    paper_value="33 FPS on LF torch; 0.03 s per uncertainty view (Table 9)",
    criterion=_C + "CPU time of the HS posterior-median render (s = beta) <= 1.2 x the DET render "
    "time (timeit_interleaved, one thread, min over interleaved rounds of 10 renders, the first "
    "test view); "
    "M-sample uncertainty render time, splat and pixel-Gaussian pair counts reported beside",
    headline=("ratio_hs_over_det",),
    exclusive=True,
)
def render_overhead(ctx: Context) -> Result:
    run = _run(ctx, ("hs", "det"))
    hs, det = run["models"]["hs"], run["models"]["det"]
    cam = run["data"]["test_cams"][0]
    rounds, number = ctx.pick(2, 12, 16), ctx.pick(1, 10, 10)
    sync = _sync(_device(ctx))
    # interleaved rounds (the order rotates), so a change of machine load during the
    # measurement hits both renders alike; each timed run is `number` renders, so that a run
    # lasts tens of milliseconds rather than one render's few (single millisecond-long renders
    # moved the ratio between 1.01 and 1.27 in three idle runs of the same models); the minimum
    # CPU time per render over the rounds is kept
    best = ctx.timeit_interleaved(
        {"hs": lambda: hs.render_point(cam), "det": lambda: det.render_point(cam)},
        repeat=rounds,
        number=number,
        threads=1,
        sync=sync,
    )
    t_hs, t_det = best["hs"], best["det"]
    for t in (t_hs, t_det):
        t.count(rounds=rounds, renders_per_run=number)
    t_unc = ctx.timeit(
        lambda: hs.predict(cam, return_std=True), repeat=ctx.pick(1, 2, 3), threads=1, sync=sync
    )
    t_hs.count(gaussians=len(hs.means), pixel_pairs=hs.render_point(cam).stats["pixel_pairs"])
    t_det.count(gaussians=len(det.means), pixel_pairs=det.render_point(cam).stats["pixel_pairs"])
    t_unc.count(renders=hs.mc_test, gaussians=len(hs.means))
    ratio = t_hs.cpu_s / max(t_det.cpu_s, 1e-12)
    pairs_ratio = t_hs.counts["pixel_pairs"] / max(t_det.counts["pixel_pairs"], 1)
    result = Result.judge(
        metrics={
            "ratio_hs_over_det": ratio,
            "pixel_pairs_ratio_hs_over_det": pairs_ratio,
            "hs_point_render": t_hs.to_dict(),
            "hs_uncertainty_render": t_unc.to_dict(),
        },
        baseline={"det_render": t_det.to_dict()},
        required={"time(HS posterior-median render) <= 1.2 x time(DET render)": ratio <= 1.2},
    )
    fig, (ax_t, ax_n) = _plt().subplots(1, 2, figsize=(7.6, 3.2))
    _bars(
        ax_t,
        {
            "HS median": 1e3 * t_hs.cpu_s,
            "DET": 1e3 * t_det.cpu_s,
            f"HS M={hs.mc_test}": 1e3 * t_unc.cpu_s,
        },
        "CPU ms per render (min, 1 thread)",
        colors=["C0", "C1", "0.6"],
    )
    ctx.mark_threshold(ax_t, 1.2 * 1e3 * t_det.cpu_s, "HS median must stay <= 1.2 x DET")
    ax_t.set_title("grey: uncertainty view, reported only", fontsize=8)
    ax_t.legend(fontsize=7, loc="upper left")
    _bars(
        ax_n,
        {"HS median": t_hs.counts["pixel_pairs"], "DET": t_det.counts["pixel_pairs"]},
        "pixel-Gaussian pairs (load-free)",
    )
    ax_n.set_title("work per render (reported, not judged)", fontsize=8)
    return ctx.save_judged(fig, PAPER, "render-overhead", result)


def _contraction_figure(views, hs_std, gp_std):
    fig, ax = _plt().subplots(figsize=(4.8, 3.4))
    ax.plot(views, hs_std, "o-", label="HS (horseshoe)")
    ax.plot(views, gp_std, "s--", label="GP (Gaussian prior, reported)")
    # the criterion has no single threshold: each HS point must fall below the one before it
    ax.hlines(
        hs_std[:-1], views[:-1], views[1:], colors="black", linestyles="dashed", linewidth=1.0,
        alpha=0.7, label="HS must fall below its previous value",
    )  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(views), [str(v) for v in views])
    ax.set_xlabel("training views")
    ax.set_ylabel("median posterior std of log-scale")
    ax.legend(fontsize=7)
    return fig


@claim(
    paper=PAPER,
    name="contraction-trend",
    statement="The scale posterior contracts as more pixels are observed (Theorem 1)",
    paper_value="posterior contraction rate eps^2 ~ (sigma^2 / P) k log(3eN/k) / kappa_min^2 "
    "(Theorem 1)",
    criterion="HS trained on 4, 8 and 16 views of the same 150 degree arc (same scene, init, "
    "seed, steps and densification; one view per step): the median over scale components of "
    "the posterior std of the log-scale (std of 64 ancestral draws, as rendered by predict) "
    "decreases strictly from 4 to 8 to 16 views; the GP trend is reported beside",
    headline=("hs_median_std",),
)
def contraction(ctx: Context) -> Result:
    views = _setting(ctx)["views"]
    hs_std, gp_std, detail = [], [], {}
    for v in views:
        r = _run(ctx, ("hs", "gp"), n_train=v)["eval"]
        hs_std.append(r["hs"]["median_posterior_std"])
        gp_std.append(r["gp"]["median_posterior_std"])
        detail[f"{v}_views"] = {
            k: {
                m: r[k][m]
                for m in ("median_posterior_std", "median_sigma", "psnr", "ssim", "splats")
            }
            for k in ("hs", "gp")
        }
    decreasing = all(b < a for a, b in zip(hs_std, hs_std[1:]))
    result = Result.judge(
        metrics={"views": list(views), "hs_median_std": hs_std, "detail": detail},
        baseline={"gp_median_std": gp_std},
        required={"median posterior std of HS decreases strictly with the views": decreasing},
    )
    fig = _contraction_figure(views, hs_std, gp_std)
    return ctx.save_judged(fig, PAPER, "contraction-trend", result)
