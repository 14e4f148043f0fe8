"""Claim checks for ILNN: hierarchical sequences vs a Euclidean CNN, GyroLBN vs LBN/GyroBN,
the digamma log-radius alignment of Lorentz concatenation, and the Lorentz ResNet-18 vs the
Euclidean ResNet-18 (CIFAR-10 at full scale, 8x8 digits at quick scale)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.metrics import matthews_corrcoef  # noqa: E402
from torch import nn  # noqa: E402

from iclr26.claims import Context, Result, claim, mark_threshold  # noqa: E402
from iclr26.data import load, train_test_indices  # noqa: E402

from . import ops  # noqa: E402
from .models import ILNNSeqCNN, LorentzResNet18, ResNet18, SeqCNN  # noqa: E402
from .tasks import load_cifar10, phylo_dna  # noqa: E402

SLUG = "ilnn"


def _data(ctx: Context):
    n_train, n_test, length = ctx.pick((128, 64, 32), (4000, 1000, 128), (20000, 5000, 128))
    x_tr, y_tr = phylo_dna(n_train, length=length, seed=ctx.seed)
    x_te, y_te = phylo_dna(n_test, length=length, seed=ctx.seed + 1000)
    return [torch.from_numpy(a) for a in (x_tr, y_tr, x_te, y_te)], length


def _train(model: nn.Module, data, epochs: int, seed: int, batch: int = 128, lr: float = 3e-3):
    """Adam on cross-entropy; returns the test MCC."""
    x_tr, y_tr, x_te, y_te = data
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x_tr), generator=gen)
        for i in range(0, len(x_tr), batch):
            idx = order[i : i + batch]
            if idx.numel() < 2:
                continue
            loss = nn.functional.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(x_te[i : i + 256]).argmax(-1) for i in range(0, len(x_te), 256)])
    return float(matthews_corrcoef(y_te.numpy(), pred.numpy()))


def _step_timing(ctx: Context, model: nn.Module, data, batch: int = 128):
    """One Adam training step on a fixed batch, timed by ``ctx.timeit`` (one thread, repeated,
    minimum of process CPU time and wall time)."""
    x_tr, y_tr = data[0][:batch], data[1][:batch]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()

    def step():
        loss = nn.functional.cross_entropy(model(x_tr), y_tr)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return ctx.timeit(step, repeat=ctx.pick(2, 20, 50), warmup=1, threads=1)


def _params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@claim(
    paper=SLUG,
    name="hierarchical-vs-euclidean",
    statement="The intrinsic Lorentz network classifies hierarchical (phylogenetic) sequences "
    "better than a matched Euclidean CNN",
    paper_value="TEB pseudogene MCC 70.26 vs 60.66 (Euclidean); GUE Covid 64.76 vs 36.71",
    criterion="mean test MCC(ILNN) >= mean MCC(Euclidean) + 0.01 and ILNN wins >= 2 of 3 seeds "
    "(parameter counts within 10%); partial if the mean is higher but margin or seed count fail",
    timeout_s={"quick": 900, "full": 6 * 3600},
)
def hierarchical_vs_euclidean(ctx: Context) -> Result:
    data, length = _data(ctx)
    epochs, seeds = ctx.pick((1, (0,)), (8, (0, 1, 2)), (40, (0, 1, 2)))
    ilnn_mcc, euc_mcc = [], []
    for k, seed in enumerate(seeds):
        torch.manual_seed(ctx.seed + seed)
        hyper = ILNNSeqCNN(channels=16, classes=8)
        torch.manual_seed(ctx.seed + seed)
        euclid = SeqCNN(channels=16, classes=8)
        ilnn_mcc.append(_train(hyper, data, epochs, ctx.seed + seed))
        euc_mcc.append(_train(euclid, data, epochs, ctx.seed + seed))
        ctx.report((k + 1) / len(seeds), f"seed {seed}: {ilnn_mcc[-1]:.3f} vs {euc_mcc[-1]:.3f}")
    params = {"ilnn": _params(hyper), "euclidean": _params(euclid)}
    matched = abs(params["ilnn"] - params["euclidean"]) <= 0.1 * params["euclidean"]
    margin = float(np.mean(ilnn_mcc) - np.mean(euc_mcc))
    wins = int(sum(a > b for a, b in zip(ilnn_mcc, euc_mcc)))
    need_wins = min(2, len(seeds))
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.bar(
        ["ILNN", "Euclidean CNN"],
        [np.mean(ilnn_mcc), np.mean(euc_mcc)],
        yerr=[np.std(ilnn_mcc), np.std(euc_mcc)],
        color=["tab:purple", "tab:gray"],
    )
    mark_threshold(ax, float(np.mean(euc_mcc)) + 0.01, "ILNN mean needs Euclidean + 0.01")
    ax.set(ylabel="test MCC", title=f"phylogenetic DNA, 8 clades, length {length}\nILNN wins "
           f"{wins}/{len(seeds)} seeds (>= {need_wins} needed)")  # fmt: skip
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "ilnn_mcc": ilnn_mcc,
            "ilnn_mcc_mean": float(np.mean(ilnn_mcc)),
            "ilnn_mcc_std": float(np.std(ilnn_mcc)),
            "margin": margin,
            "wins": wins,
            "params": params,
            "epochs": epochs,
            "length": length,
        },
        baseline={"euclidean_mcc": euc_mcc, "euclidean_mcc_mean": float(np.mean(euc_mcc))},
        required={
            "margin >= 0.01": margin >= 0.01,
            f"wins >= {need_wins}": wins >= need_wins,
            "params within 10%": matched,
        },
        partial={"mean MCC higher": margin > 0, "params within 10%": matched},
    )
    return ctx.save_judged(fig, SLUG, "hierarchical-vs-euclidean", result)


@claim(
    paper=SLUG,
    name="gyrolbn-vs-lbn-gyrobn",
    statement="GyroLBN is faster than GyroBN (closed-form centroid instead of iterative Fréchet "
    "mean) and at least as accurate as LBN and GyroBN",
    paper_value="GyroLBN beats LBN and GyroBN in accuracy while reducing training time",
    criterion="training-step CPU time(GyroLBN) < time(GyroBN, 3 Karcher iterations) (minimum "
    "over repeated steps on one thread, batch 128) and MCC(GyroLBN) >= max(MCC(LBN), "
    "MCC(GyroBN)) - 0.01 (same network and data)",
    timeout_s={"quick": 900, "full": 6 * 3600},
    exclusive=True,
)
def gyrolbn_vs_others(ctx: Context) -> Result:
    data, _ = _data(ctx)
    epochs, seeds = ctx.pick((1, (0,)), (5, (0, 1)), (40, (0, 1, 2)))
    norms = ("gyrolbn", "lbn", "gyrobn")
    mcc = {k: [] for k in norms}
    timing = {}
    for j, seed in enumerate(seeds):
        for k, norm in enumerate(norms):
            torch.manual_seed(ctx.seed + seed)
            model = ILNNSeqCNN(norm=norm)
            mcc[norm].append(_train(model, data, epochs, ctx.seed + seed))
            if j == 0:  # time a step of the first seed's trained network
                iters = model.norms[0].iters if norm == "gyrobn" else 0
                timing[norm] = _step_timing(ctx, model, data).count(
                    # passes over the batch to find each layer's mean: the closed-form
                    # centroid (GyroLBN, LBN) needs one, GyroBN a start and its Karcher steps
                    mean_passes_per_norm_layer=1 + iters,
                    norm_layers=len(model.norms),
                    batch=128,
                )
            ctx.report((j * len(norms) + k + 1) / (len(seeds) * len(norms)), f"{norm} {seed}")
    mean = {k: float(np.mean(v)) for k, v in mcc.items()}
    t = {k: timing[k].cpu_s for k in norms}
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    axes[0].bar(norms, [mean[k] for k in norms], yerr=[np.std(mcc[k]) for k in norms])
    axes[0].set(ylabel="test MCC")
    axes[1].bar(norms, [t[k] * 1e3 for k in norms])
    axes[1].set(ylabel="train step, CPU ms (min of repeats)")
    best_other = max(mean["lbn"], mean["gyrobn"])
    mark_threshold(axes[0], best_other - 0.01, "GyroLBN needs best other - 0.01")
    mark_threshold(axes[1], t["gyrobn"] * 1e3, "GyroLBN must be below GyroBN")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    result = Result.judge(
        metrics={
            "gyrolbn_mcc": mcc["gyrolbn"],
            "gyrolbn_mcc_mean": mean["gyrolbn"],
            "gyrolbn_step": timing["gyrolbn"].to_dict(),
            "speedup_gyrobn_over_gyrolbn": t["gyrobn"] / t["gyrolbn"],
            "epochs": epochs,
        },
        baseline={
            "lbn": {"mcc": mcc["lbn"], "mcc_mean": mean["lbn"], "step": timing["lbn"].to_dict()},
            "gyrobn": {
                "mcc": mcc["gyrobn"],
                "mcc_mean": mean["gyrobn"],
                "step": timing["gyrobn"].to_dict(),
            },
        },
        required={
            "time(GyroLBN) < time(GyroBN)": t["gyrolbn"] < t["gyrobn"],
            "MCC(GyroLBN) >= best other - 0.01": mean["gyrolbn"] >= best_other - 0.01,
        },
    )
    return ctx.save_judged(fig, SLUG, "gyrolbn-vs-lbn-gyrobn", result)


def _hidden_blocks(ctx: Context) -> dict[int, torch.Tensor]:
    """Spatial parts ``(B, L, C)`` of the hidden points that the second and third Lorentz
    convolutions of a briefly trained ``ILNNSeqCNN`` receive on held-out sequences."""
    data, _ = _data(ctx)
    epochs = ctx.pick(0, 2, 8)
    torch.manual_seed(ctx.seed)
    model = ILNNSeqCNN(channels=16, classes=8)
    if epochs:
        _train(model, data, epochs, ctx.seed)
    model.eval()
    captured = {}

    def keep(index):
        def hook(_module, inputs):
            captured[index] = inputs[0][..., 1:].detach().double()

        return hook

    handles = [model.convs[i].register_forward_pre_hook(keep(i)) for i in (1, 2)]
    with torch.no_grad():
        model(data[2][: ctx.pick(64, 1000, 5000)])
    for handle in handles:
        handle.remove()
    return captured


def _log_radius_gaps(blocks: torch.Tensor, windows: tuple[int, ...]) -> dict[int, dict]:
    """For spatial parts ``(B, L, n)``: the gap between the mean log-radius of one block and
    that of the concatenation of ``N`` consecutive blocks, with the digamma scale, with the
    norm-preserving scale ``1/sqrt(N)`` and unscaled."""
    n = blocks.shape[-1]
    radius = blocks.norm(dim=-1).clamp_min(1e-300)
    single = float(torch.log(radius).mean())
    rows = {}
    for count in windows:
        # |concat of N blocks| = sqrt(sum of the N squared radii): a moving window sum
        joined = radius.pow(2).unfold(1, count, 1).sum(-1).sqrt()
        plain = float(torch.log(joined).mean())
        digamma = plain + float(np.log(ops.log_radius_scale(n, count)))
        euclid = plain - 0.5 * float(np.log(count))
        rows[count] = {
            "gap_digamma": abs(digamma - single),
            "gap_sqrt_n": abs(euclid - single),
            "gap_unscaled": abs(plain - single),
            "half_log_n": 0.5 * float(np.log(count)),
        }
    return rows


@claim(
    paper=SLUG,
    name="digamma-log-radius",
    statement="The digamma scale of Lorentz patch concatenation keeps the expected log-radius "
    "of the joined point equal to that of one block, on the features a Lorentz network "
    "actually concatenates",
    paper_value="aligns the expected log-radius across feature blocks (digamma-based scale)",
    criterion="Monte-Carlo over the hidden points entering the 2nd and 3rd Lorentz "
    "convolutions of a briefly trained ILNNSeqCNN (16 channels, held-out phylogenetic "
    "sequences; not the Gaussian blocks the closed form assumes): |E log|y_s| - E log|x_s|| "
    "<= 0.05 for windows of N in {3, 5, 9} consecutive points with the digamma scale, while "
    "the unscaled concatenation drifts by >= 0.25 log N",
)
def digamma_log_radius(ctx: Context) -> Result:
    windows = (3, 5, 9)
    hidden = _hidden_blocks(ctx)
    per_layer = {f"conv{i + 1}_input": _log_radius_gaps(h, windows) for i, h in hidden.items()}
    # the closed form's own premise, for reference: isotropic Gaussian blocks of the same size
    gen = ctx.torch_generator()
    gaussian = torch.randn(ctx.pick(256, 4000, 20000), 9, 16, generator=gen, dtype=torch.float64)
    reference = _log_radius_gaps(gaussian, windows)
    worst = {
        key: max(rows[c][key] for rows in per_layer.values() for c in windows)
        for key in ("gap_digamma", "gap_sqrt_n")
    }
    drift_ok = all(
        rows[c]["gap_unscaled"] >= 0.5 * rows[c]["half_log_n"]
        for rows in per_layer.values()
        for c in windows
    )
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for (layer, rows), marker in zip(per_layer.items(), "os"):
        ax.plot(
            windows,
            [rows[c]["gap_unscaled"] for c in windows],
            marker + "-",
            color="gray",
            label=f"plain, {layer}",
        )
        ax.plot(
            windows,
            [rows[c]["gap_digamma"] for c in windows],
            marker + "-",
            color="tab:purple",
            label=f"digamma, {layer}",
        )
        ax.plot(
            windows,
            [rows[c]["gap_sqrt_n"] for c in windows],
            marker + ":",
            color="tab:green",
            label=f"1/sqrt(N), {layer}",
        )
    mark_threshold(ax, 0.05, "pass threshold (0.05)")
    ax.set(xlabel="blocks N", ylabel="|E log|y_s| - E log|x_s||", yscale="log")
    ax.legend(fontsize=6)

    def table(key):
        return {layer: {str(c): rows[c][key] for c in windows} for layer, rows in per_layer.items()}

    result = Result.judge(
        metrics={
            "digamma_gap": table("gap_digamma"),
            "worst_digamma_gap": worst["gap_digamma"],
            "gaussian_reference_digamma_gap": {
                str(c): reference[c]["gap_digamma"] for c in windows
            },
            "epochs_trained": ctx.pick(0, 2, 8),
        },
        baseline={
            "unscaled_gap": table("gap_unscaled"),
            "sqrt_n_scale_gap": table("gap_sqrt_n"),
            "worst_sqrt_n_gap": worst["gap_sqrt_n"],
        },
        required={
            "digamma gap <= 0.05 on hidden features": worst["gap_digamma"] <= 0.05,
            "unscaled drift >= 0.25 log N": drift_ok,
        },
    )
    return ctx.save_judged(fig, SLUG, "digamma-log-radius", result)


CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def _image_data(ctx: Context):
    """8x8 digits (smoke, quick; split 70/30 by the seed) or the user's CIFAR-10 (full)."""
    if ctx.pick(False, False, True):
        x_tr, y_tr, x_te, y_te = load_cifar10()
        mean = np.asarray(CIFAR_MEAN, dtype=np.float32)[:, None, None]
        std = np.asarray(CIFAR_STD, dtype=np.float32)[:, None, None]
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
        return x_tr, y_tr, x_te, y_te, "CIFAR-10"
    digits = load("digits")
    images = (digits.X.reshape(-1, 1, 8, 8) / 16.0).astype(np.float32)
    train, test = train_test_indices(len(digits.y), 0.3, seed=ctx.seed)
    n_train, n_test = ctx.pick((128, 64), (len(train), len(test)))
    train, test = train[:n_train], test[:n_test]
    labels = digits.y.astype(np.int64)
    return images[train], labels[train], images[test], labels[test], "digits 8x8"


def _augment(images: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random 4-pixel-padded crop and horizontal flip, one draw per image (CIFAR protocol)."""
    batch, _, height, width = images.shape
    padded = nn.functional.pad(images, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (batch,), generator=gen)
    dx = torch.randint(0, 9, (batch,), generator=gen)
    rows = (dy[:, None] + torch.arange(height)[None, :]).to(images.device)
    cols = (dx[:, None] + torch.arange(width)[None, :]).to(images.device)
    index = torch.arange(batch, device=images.device)[:, None, None, None]
    channel = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    out = padded[index, channel, rows[:, None, :, None], cols[:, None, None, :]]
    flip = (torch.rand(batch, generator=gen) < 0.5).to(images.device)
    return torch.where(flip[:, None, None, None], out.flip(-1), out)


def _train_images(model: nn.Module, data, protocol: dict, seed: int, device: str) -> float:
    """Train on images with the protocol shared by both networks; returns test accuracy."""
    x_tr, y_tr, x_te, y_te = data
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model.to(device).train()
    epochs, batch = protocol["epochs"], protocol["batch"]
    if protocol["optimizer"] == "sgd":
        opt = torch.optim.SGD(
            model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4
        )
        milestones = [round(epochs * f) for f in (0.3, 0.6, 0.8)]
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones, gamma=0.2)
    else:
        opt, sched = torch.optim.Adam(model.parameters(), lr=3e-3), None
    for _ in range(epochs):
        order = torch.randperm(len(x_tr), generator=gen)
        for i in range(0, len(x_tr), batch):
            idx = order[i : i + batch]
            if idx.numel() < 2:
                continue
            images = x_tr[idx].to(device)
            if protocol["augment"]:
                images = _augment(images, gen)
            loss = nn.functional.cross_entropy(model(images), y_tr[idx].to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if sched is not None:
            sched.step()
    model.eval()
    with torch.no_grad():
        pred = torch.cat(
            [model(x_te[i : i + 500].to(device)).argmax(-1).cpu() for i in range(0, len(x_te), 500)]
        )
    return float((pred == y_te).float().mean())


@claim(
    paper=SLUG,
    name="resnet18-vs-euclidean",
    statement="A ResNet-18 built from ILNN layers (Lorentz convolutions, GyroLBN, Lorentz ReLU, "
    "gyro residuals, centroid pooling, PLFC head) is at least as accurate as the Euclidean "
    "ResNet-18",
    paper_value="CIFAR-10 95.36 vs 95.14 (Euclidean ResNet-18); CIFAR-100 78.41 vs 77.72",
    criterion="mean test accuracy(LorentzResNet18) >= mean accuracy(Euclidean ResNet-18), same "
    "data, seeds, optimiser and schedule; CIFAR-10 at full scale (width 64, 200 epochs, SGD 0.1 "
    "with steps at 30/60/80%, crop+flip), 8x8 digits at smoke/quick (width 8, Adam, 2 seeds)",
    timeout_s={"quick": 900, "full": 72 * 3600},
)
def resnet18_vs_euclidean(ctx: Context) -> Result:
    try:
        x_tr, y_tr, x_te, y_te, dataset = _image_data(ctx)
    except FileNotFoundError as err:
        return Result.skipped(f"full scale trains on CIFAR-10, which is not available: {err}")
    full = dataset == "CIFAR-10"
    device = "cuda" if full and torch.cuda.is_available() else "cpu"
    width = ctx.pick(4, 8, 64)
    seeds = ctx.pick((0,), (0, 1), (0,))
    protocol = ctx.pick(
        {"epochs": 1, "batch": 64, "optimizer": "adam", "augment": False},
        {"epochs": 8, "batch": 64, "optimizer": "adam", "augment": False},
        {"epochs": 200, "batch": 128, "optimizer": "sgd", "augment": True},
    )
    data = [torch.from_numpy(a) for a in (x_tr, y_tr, x_te, y_te)]
    channels, classes = x_tr.shape[1], 10
    acc = {"ilnn": [], "euclidean": []}
    for k, seed in enumerate(seeds):
        for name, build in (("ilnn", LorentzResNet18), ("euclidean", ResNet18)):
            torch.manual_seed(ctx.seed + seed)
            model = build(num_classes=classes, width=width, in_channels=channels)
            acc[name].append(_train_images(model, data, protocol, ctx.seed + seed, device))
        ctx.report(
            (k + 1) / len(seeds),
            f"seed {seed}: {acc['ilnn'][-1]:.3f} vs {acc['euclidean'][-1]:.3f}",
        )
    mean = {k: float(np.mean(v)) for k, v in acc.items()}
    params = {
        "ilnn": _params(LorentzResNet18(classes, width, channels)),
        "euclidean": _params(ResNet18(classes, width, channels)),
    }
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.bar(
        ["Lorentz ResNet-18", "ResNet-18"],
        [mean["ilnn"], mean["euclidean"]],
        yerr=[np.std(acc["ilnn"]), np.std(acc["euclidean"])],
        color=["tab:purple", "tab:gray"],
    )
    mark_threshold(ax, mean["euclidean"], "Lorentz needs >= Euclidean")
    ax.set(ylabel="test accuracy", title=f"{dataset}, width {width}", ylim=(0, 1))
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "ilnn_acc": acc["ilnn"],
            "ilnn_acc_mean": mean["ilnn"],
            "margin": mean["ilnn"] - mean["euclidean"],
            "dataset": dataset,
            "width": width,
            "epochs": protocol["epochs"],
            "params": params,
            "device": device,
        },
        baseline={"euclidean_acc": acc["euclidean"], "euclidean_acc_mean": mean["euclidean"]},
        required={"accuracy(ILNN) >= accuracy(Euclidean)": mean["ilnn"] >= mean["euclidean"]},
    )
    return ctx.save_judged(fig, SLUG, "resnet18-vs-euclidean", result)
