"""Claim checks: faster learning of addition, a small gain on English prose, the compatibility
matrix of algorithmic tasks, and transfer of an English-learned spline to Python code."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from iclr26.claims import Context, Result, claim, mark_threshold  # noqa: E402
from iclr26.nn.learned_nonlinearities.procedure import (  # noqa: E402
    compatibility_matrix,
    discover_nonlinearities,
    steps_to_reach,
    train_with_frozen,
)
from iclr26.nn.learned_nonlinearities.spline import Nonlinearities  # noqa: E402
from iclr26.nn.learned_nonlinearities.tasks import (  # noqa: E402
    AdditionTask,
    CopyTask,
    prose_task,
    text_task,
)
from iclr26.nn.learned_nonlinearities.transformer import SplineTransformer  # noqa: E402

SLUG = "learned_nonlinearities"


def _factory(vocab: int, context: int, width: int):
    return lambda nl: SplineTransformer(vocab, width, 4, 2, 4, context, nonlinearities=nl)


def _plot_splines(ax, theta: Nonlinearities) -> None:
    grid = torch.linspace(-6, 6, 400)
    with torch.no_grad():
        ax.plot(grid, torch.nn.functional.gelu(grid), "k:", label="GeLU")
        if theta.mlp is not None:
            ax.plot(grid, theta.mlp[0](grid), label="learned MLP spline")
        if theta.attn is not None:
            ax.plot(grid, theta.attn[0](grid), label=f"learned {theta.attention} spline")
    ax.set(xlabel="input", title="learned nonlinearities")
    ax.legend(fontsize=7)


def _learned_vs_baseline(make, theta, task, seeds, steps, batch, base_seed):
    """Stage II with the learned functions frozen and with GeLU/softmax, on the same seeds:
    final metric and training throughput of each, per seed."""
    acc = {"learned": [], "baseline": []}
    tps = {"learned": [], "baseline": []}
    for s in seeds:
        for name, th in (("learned", theta), ("baseline", None)):
            _, hist = train_with_frozen(
                make,
                th,
                task,
                steps=steps,
                batch=batch,
                seed=1000 * base_seed + s,
                eval_every=steps,
            )
            acc[name].append(hist.metric[-1])
            tps[name].append(hist.tokens_per_s)
    return acc, tps


@claim(
    paper=SLUG,
    name="addition-speed",
    statement="Learned spline nonlinearities (MLP and attention) make a transformer learn "
    "3-digit addition faster and more stably than GeLU + softmax",
    paper_value="algorithmic tasks: 2-3x faster convergence, better stability across seeds",
    criterion="stage I M=4 (kernel_feature attention + MLP spline, layer-shared) then stage II "
    "from scratch, seeds {0,1,2}: median steps to 90% exact match (cap if never) baseline / "
    "learned >= 1.5 AND seed std of final accuracy (learned) <= baseline + 2 pp; partial if the "
    "ratio is in [1.1, 1.5)",
)
def addition_speed(ctx: Context) -> Result:
    task = AdditionTask(
        n_digits=3,
        n_train=ctx.pick(smoke=400, quick=20_000),
        n_test=ctx.pick(smoke=100, quick=500, full=2000),
        seed=ctx.seed,
    )
    width = ctx.pick(smoke=16, quick=64)
    stage1 = ctx.pick(smoke=2, quick=60, full=600)
    stage2 = ctx.pick(smoke=4, quick=300, full=1500)
    batch = ctx.pick(smoke=16, quick=64, full=128)
    every = ctx.pick(smoke=2, quick=50, full=50)
    seeds = (0, 1, 2) if ctx.scale.value != "smoke" else (0,)
    make = _factory(task.vocab_size, task.context, width)
    ctx.report(0.05, "stage I")
    theta = Nonlinearities(mlp=True, attention="kernel_feature")
    theta, _ = discover_nonlinearities(
        make, theta, task, n_models=4, steps=stage1, batch=batch, seed=ctx.seed
    )
    runs = {"learned": [], "baseline": []}
    for i, s in enumerate(seeds):
        ctx.report(0.2 + 0.8 * i / len(seeds), f"stage II seed {s}")
        for name, th in (("learned", theta), ("baseline", None)):
            _, hist = train_with_frozen(
                make,
                th,
                task,
                steps=stage2,
                batch=batch,
                seed=1000 * ctx.seed + s,
                eval_every=every,
            )
            runs[name].append(hist)
    summary = {}
    for name, hists in runs.items():
        reach = [steps_to_reach(h, 0.9, stage2) for h in hists]
        final = [h.metric[-1] for h in hists]
        summary[name] = {
            "steps_to_90": reach,
            "median_steps_to_90": float(np.median(reach)),
            "final_acc_mean": float(np.mean(final)),
            "final_acc_std": float(np.std(final)),
            "tokens_per_s": float(np.mean([h.tokens_per_s for h in hists])),
        }
    ours, base = summary["learned"], summary["baseline"]
    ratio = base["median_steps_to_90"] / ours["median_steps_to_90"]
    stable = 100 * ours["final_acc_std"] <= 100 * base["final_acc_std"] + 2.0

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.3))
    for name, colour in (("learned", "C0"), ("baseline", "C1")):
        for h in runs[name]:
            axes[0].plot(
                h.steps,
                h.metric,
                color=colour,
                alpha=0.7,
                label=name if h is runs[name][0] else None,
            )
    mark_threshold(axes[0], 0.9, "accuracy to reach (0.9)")
    axes[0].set(xlabel="stage II step", ylabel="exact-match accuracy", title="3-digit addition")
    axes[0].legend()
    _plot_splines(axes[1], theta)
    result = Result.judge(
        metrics={
            "learned": ours,
            "speedup_ratio": ratio,
            "throughput_ratio_learned_over_baseline": ours["tokens_per_s"] / base["tokens_per_s"],
            "stage1_steps": stage1,
            "stage2_steps": stage2,
            "seeds": list(seeds),
        },
        baseline={"gelu_softmax": base},
        required={
            "median steps ratio >= 1.5": ratio >= 1.5,
            "final-accuracy std (learned) <= baseline + 2 pp": stable,
        },
        partial={"ratio in [1.1, 1.5)": 1.1 <= ratio < 1.5},
    )
    return ctx.save_judged(fig, SLUG, "addition-speed", result)


@claim(
    paper=SLUG,
    name="prose-gain",
    statement="A learned MLP spline gives a small but consistent gain on real English text",
    paper_value="TinyStories token accuracy 64.4% vs 63.7% (GeLU); FineWeb val loss 3.68 vs 3.72",
    criterion="stdlib prose, character level (train = D_wts, val = D_arch, test): stage I M=4 "
    "(MLP spline only), stage II seeds {0,1,2}: mean test token accuracy (learned) >= baseline + "
    "0.2 pp AND learned wins >= 2 of 3 seeds",
)
def prose_gain(ctx: Context) -> Result:
    context = ctx.pick(smoke=16, quick=64, full=128)
    task = prose_task(context=context, n_eval_windows=ctx.pick(smoke=8, quick=128, full=512))
    width = ctx.pick(smoke=16, quick=64)
    stage1 = ctx.pick(smoke=2, quick=40, full=600)
    stage2 = ctx.pick(smoke=3, quick=180, full=1500)
    batch = ctx.pick(smoke=4, quick=16, full=32)
    seeds = (0, 1, 2) if ctx.scale.value != "smoke" else (0,)
    make = _factory(task.vocab_size, context, width)
    theta = Nonlinearities(mlp=True, attention="softmax")
    theta, _ = discover_nonlinearities(
        make, theta, task, n_models=4, steps=stage1, batch=batch, seed=ctx.seed
    )
    acc, tps = _learned_vs_baseline(make, theta, task, seeds, stage2, batch, ctx.seed)
    gain_pp = 100 * (np.mean(acc["learned"]) - np.mean(acc["baseline"]))
    wins = int(sum(a > b for a, b in zip(acc["learned"], acc["baseline"])))
    need_wins = 2 if len(seeds) >= 3 else len(seeds)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.3))
    pos = np.arange(len(seeds))
    axes[0].bar(pos - 0.2, 100 * np.array(acc["learned"]), 0.4, label="learned MLP spline")
    axes[0].bar(pos + 0.2, 100 * np.array(acc["baseline"]), 0.4, label="GeLU")
    axes[0].set_xticks(pos, [f"seed {s}" for s in seeds])
    axes[0].set(ylabel="test next-char accuracy (%)")
    # judged on the means: learned mean >= GeLU mean + 0.2 pp, and wins in >= need_wins seeds
    mark_threshold(axes[0], 100 * float(np.mean(acc["baseline"])) + 0.2,
                   f"learned mean needs GeLU mean + 0.2 pp (wins {wins}/{len(seeds)}, "
                   f">= {need_wins})")  # fmt: skip
    axes[0].legend(fontsize=7)
    _plot_splines(axes[1], theta)
    result = Result.judge(
        metrics={
            "learned_acc": acc["learned"],
            "gain_pp": gain_pp,
            "wins": wins,
            "throughput_ratio_learned_over_baseline": float(
                np.mean(tps["learned"]) / np.mean(tps["baseline"])
            ),
            "stage1_steps": stage1,
            "stage2_steps": stage2,
        },
        baseline={"gelu_acc": acc["baseline"]},
        required={
            "gain >= 0.2 pp": gain_pp >= 0.2,
            f"wins >= {need_wins} seeds": wins >= need_wins,
        },
    )
    return ctx.save_judged(fig, SLUG, "prose-gain", result)


def _curve_mean(history) -> float:
    """Learning-speed score: the test metric averaged over all evaluations of a run."""
    return float(np.mean(history.metric))


@claim(
    paper=SLUG,
    name="compatibility-matrix",
    statement="Nonlinearities learned on an algorithmic task are task-specific: they help the task "
    "they were learned on more than another algorithmic task",
    paper_value="algorithmic tasks give strongly diagonal compatibility matrices",
    criterion="tasks ADD (3-digit) and COPY (6 symbols): stage I M=4 per task (kernel_feature "
    "attention + MLP spline), stage II for every (theta task, training task) pair and the GeLU + "
    "softmax baseline, same seeds; entry = mean over the run's evaluations of the answer-token "
    "test accuracy, learned minus baseline (pp, seed mean); reproduced if in each row the "
    "diagonal entry exceeds the off-diagonal entry by >= 2 pp; partial if one row does",
)
def compatibility(ctx: Context) -> Result:
    n_train = ctx.pick(smoke=400, quick=20_000)
    n_test = ctx.pick(smoke=100, quick=500, full=2000)
    tasks = {
        "add": AdditionTask(3, n_train, n_test, seed=ctx.seed, metric="token"),
        "copy": CopyTask(6, 10, n_train, n_test, seed=ctx.seed, metric="token"),
    }
    width = ctx.pick(smoke=16, quick=64)
    stage1 = ctx.pick(smoke=2, quick=40, full=600)
    stage2 = ctx.pick(smoke=4, quick=80, full=1500)
    batch = ctx.pick(smoke=16, quick=64, full=128)
    seeds = ctx.pick(smoke=(0,), quick=(0, 1), full=(0, 1, 2))
    vocab = max(t.vocab_size for t in tasks.values())
    context = max(t.context for t in tasks.values())

    def make_for(_task):
        return _factory(vocab, context, width)

    thetas = {}
    for i, (name, task) in enumerate(tasks.items()):
        ctx.report(0.05 + 0.3 * i / len(tasks), f"stage I on {name}")
        theta = Nonlinearities(mlp=True, attention="kernel_feature")
        thetas[name], _ = discover_nonlinearities(
            make_for(task), theta, task, n_models=4, steps=stage1, batch=batch, seed=ctx.seed
        )
    ctx.report(0.35, "stage II")
    matrix = compatibility_matrix(
        thetas,
        tasks,
        make_for,
        steps=stage2,
        batch=batch,
        seeds=tuple(1000 * ctx.seed + s for s in seeds),
        metric=_curve_mean,
        eval_every=max(stage2 // 8, 1),
    )
    names = list(tasks)
    margins = {
        row: 100 * (matrix[row][row] - max(matrix[row][c] for c in names if c != row))
        for row in names
    }
    table = np.array([[100 * matrix[r][c] for c in names] for r in names])

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    im = axes[0].imshow(table, cmap="RdBu", vmin=-abs(table).max(), vmax=abs(table).max())
    for (r, c), v in np.ndenumerate(table):
        axes[0].text(c, r, f"{v:+.1f}", ha="center", va="center")
    axes[0].set_xticks(range(len(names)), names)
    axes[0].set_yticks(range(len(names)), names)
    axes[0].set(xlabel="trained on (stage II)", ylabel="splines learned on (stage I)")
    axes[0].set_title(
        "diagonal - best off-diagonal (needs >= 2 pp): "
        + ", ".join(f"{r} {m:+.1f}" for r, m in margins.items()),
        fontsize=7,
    )
    fig.colorbar(im, ax=axes[0], label="gain vs baseline (pp)")
    grid = torch.linspace(-6, 6, 400)
    with torch.no_grad():
        axes[1].plot(grid, torch.nn.functional.gelu(grid), "k:", label="GeLU")
        for name, theta in thetas.items():
            axes[1].plot(grid, theta.mlp[0](grid), label=f"MLP spline ({name})")
    axes[1].set(xlabel="input", title="learned MLP nonlinearities")
    axes[1].legend(fontsize=7)
    result = Result.judge(
        metrics={
            "matrix_pp": {r: {c: 100 * matrix[r][c] for c in names} for r in names},
            "diagonal_margin_pp": margins,
            "stage1_steps": stage1,
            "stage2_steps": stage2,
            "seeds": list(seeds),
        },
        baseline={"reference": "GeLU + softmax trained on the same task, same seeds"},
        required={
            f"row {r}: diagonal >= off-diagonal + 2 pp": m >= 2.0 for r, m in margins.items()
        },
        partial={"at least one row diagonal": any(m >= 2.0 for m in margins.values())},
    )
    return ctx.save_judged(fig, SLUG, "compatibility-matrix", result)


@claim(
    paper=SLUG,
    name="prose-to-code-transfer",
    statement="A nonlinearity learned on English prose transfers to Python code without harm",
    paper_value="English and code designs transfer across datasets and domains (compatibility "
    "matrix entries English->code >= 0)",
    criterion="stage I M=4 (MLP spline only) on stdlib prose; frozen, stage II on stdlib Python "
    "code (character level) vs GeLU, seeds {0,1,2}: mean test next-char accuracy on code "
    "(learned) - baseline >= 0 pp",
)
def prose_to_code(ctx: Context) -> Result:
    context = ctx.pick(smoke=16, quick=64, full=128)
    windows = ctx.pick(smoke=8, quick=128, full=512)
    prose = prose_task(context=context, n_eval_windows=windows)
    code = text_task("code", context, windows, max_files=ctx.pick(smoke=5, quick=60, full=None))
    width = ctx.pick(smoke=16, quick=64)
    stage1 = ctx.pick(smoke=2, quick=40, full=600)
    stage2 = ctx.pick(smoke=3, quick=120, full=1500)
    batch = ctx.pick(smoke=4, quick=16, full=32)
    seeds = ctx.pick(smoke=(0,), quick=(0, 1, 2))
    make = _factory(prose.vocab_size, context, width)
    theta = Nonlinearities(mlp=True, attention="softmax")
    theta, _ = discover_nonlinearities(
        make, theta, prose, n_models=4, steps=stage1, batch=batch, seed=ctx.seed
    )
    acc, tps = _learned_vs_baseline(make, theta, code, seeds, stage2, batch, ctx.seed)
    gain_pp = 100 * (np.mean(acc["learned"]) - np.mean(acc["baseline"]))
    wins = int(sum(a > b for a, b in zip(acc["learned"], acc["baseline"])))

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.3))
    pos = np.arange(len(seeds))
    axes[0].bar(pos - 0.2, 100 * np.array(acc["learned"]), 0.4, label="prose-learned spline")
    axes[0].bar(pos + 0.2, 100 * np.array(acc["baseline"]), 0.4, label="GeLU")
    axes[0].set_xticks(pos, [f"seed {s}" for s in seeds])
    axes[0].set(ylabel="code test next-char accuracy (%)", title="English -> Python code")
    mark_threshold(axes[0], 100 * float(np.mean(acc["baseline"])),
                   "prose-learned mean needs >= GeLU mean")  # fmt: skip
    axes[0].legend(fontsize=7)
    _plot_splines(axes[1], theta)
    result = Result.judge(
        metrics={
            "learned_acc": acc["learned"],
            "gain_pp": gain_pp,
            "wins": wins,
            "throughput_ratio_learned_over_baseline": float(
                np.mean(tps["learned"]) / np.mean(tps["baseline"])
            ),
            "stage1_steps": stage1,
            "stage2_steps": stage2,
        },
        baseline={"gelu_acc": acc["baseline"]},
        required={"transfer gain >= 0 pp": gain_pp >= 0.0},
    )
    return ctx.save_judged(fig, SLUG, "prose-to-code-transfer", result)
