"""Claim checks for prediction with expert advice under local DP (RW-FTPL, RW-AdaBatch, RW-Meta)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from iclr26.claims import Context, Result, claim  # noqa: E402
from iclr26.classic.ldp_experts.central import CentralDPHedge  # noqa: E402
from iclr26.classic.ldp_experts.ftpl import RWFTPL, RWAdaBatch  # noqa: E402
from iclr26.classic.ldp_experts.meta import RollingRidgeLearner, RWMeta  # noqa: E402
from iclr26.classic.ldp_experts.online import run_online  # noqa: E402
from iclr26.classic.ldp_experts.panel import (  # noqa: E402
    alternating_leader_gains,
    bernoulli_gains,
    make_hospital_panel,
)
from iclr26.classic.ldp_experts.privacy import LDPReportStream  # noqa: E402

SLUG = "ldp_experts"


def _cpu(ctx: Context, fn):
    """Run ``fn`` once through ``ctx.timeit`` (threads pinned to one, process CPU time);
    returns (its value, CPU seconds). Rounds played are reported beside these times."""
    timing = ctx.timeit(fn, repeat=1, warmup=0, threads=1)
    return timing.value, timing.cpu_s


STATES = {"NM-like": 12, "PA-like": 20, "CA-like": 40}


def _learners(seed: int) -> list:
    ridge = [RollingRidgeLearner(w, lam) for w in (4, 8, 16, 32) for lam in (0.1, 1.0, 10.0)]
    return ridge + [RWFTPL(random_state=seed)]


@claim(
    paper=SLUG,
    name="meta-vs-ftpl-and-central-dp",
    statement="RW-Meta earns 1.5-3x the cumulative gain of RW-FTPL and of a central-DP expert "
    "algorithm on weekly hospital data, close to the best learner, at the same privacy level",
    paper_value="NM mu=1: RW-Meta 36.87 vs CDP 22.83/13.41, best learner 40.69; "
    "1.5-3x the CDP baseline, ~90% of the best learner",
    criterion="at mu=1 RW-Meta gain >= 1.5 x max(RW-FTPL, best CDP) in >= 2 of 3 states and "
    "RW-Meta >= 0.8 x best learner in hindsight on average (partial: ratio >= 1.2 in >= 2 states)",
)
def meta_vs_baselines(ctx: Context) -> Result:
    seeds = ctx.pick(smoke=1, quick=10, full=10)
    states = ctx.pick(smoke={"NM-like": 12}, quick=STATES, full=STATES)
    mus = ctx.pick(smoke=(1.0,), quick=(1.0, 0.25), full=(1.0, 0.25))
    units = ctx.pick(smoke=("coordinate",), quick=("coordinate",), full=("coordinate", "vector"))
    table: dict[str, dict] = {}
    curves: dict[str, np.ndarray] = {}
    times = {"meta": 0.0, "ftpl": 0.0, "cdp": 0.0}
    rounds = 0
    total = len(states) * len(mus) * len(units) * seeds
    done = 0
    for unit in units:
        for state, n in states.items():
            for mu in mus:
                acc: dict[str, list] = {
                    k: []
                    for k in (
                        "meta",
                        "ftpl",
                        "cdp_min_noise",
                        "cdp_min_regret",
                        "best_learner",
                        "best_static",
                    )
                }
                for s in range(seeds):
                    seed = ctx.seed * 1000 + s
                    gains = make_hospital_panel(n, random_state=seed)
                    stream = LDPReportStream(gains, mu, unit, random_state=seed + 1)
                    meta, seconds = _cpu(
                        ctx,
                        lambda gains=gains, stream=stream, seed=seed: run_online(
                            RWMeta(_learners(seed), random_state=seed + 2), gains, stream=stream
                        ),
                    )
                    times["meta"] += seconds
                    ftpl, seconds = _cpu(
                        ctx,
                        lambda gains=gains, stream=stream, seed=seed, mu=mu, unit=unit: run_online(
                            RWFTPL(mu, unit, random_state=seed + 3), gains, stream=stream
                        ),
                    )
                    times["ftpl"] += seconds
                    cdp_n, seconds = _cpu(
                        ctx,
                        lambda gains=gains, seed=seed, mu=mu, unit=unit: run_online(
                            CentralDPHedge(mu, unit, "min-noise", random_state=seed + 4), gains
                        ),
                    )
                    times["cdp"] += seconds
                    cdp_r = run_online(
                        CentralDPHedge(mu, unit, "min-regret", random_state=seed + 4), gains
                    )
                    rounds += gains.shape[0]
                    acc["meta"].append(meta.cumulative_gain)
                    acc["ftpl"].append(ftpl.cumulative_gain)
                    acc["cdp_min_noise"].append(cdp_n.cumulative_gain)
                    acc["cdp_min_regret"].append(cdp_r.cumulative_gain)
                    acc["best_learner"].append(float(meta.learner_gains.max()))
                    acc["best_static"].append(meta.best_static_gain)
                    if s == 0 and mu == 1.0 and unit == "coordinate":
                        curves[state] = np.stack(
                            [
                                np.cumsum(meta.per_round_gain),
                                np.cumsum(ftpl.per_round_gain),
                                np.cumsum(cdp_n.per_round_gain),
                                np.cumsum(cdp_r.per_round_gain),
                            ]
                        )
                    done += 1
                    ctx.report(done / total, f"{state} mu={mu}")
                key = f"{unit}/{state}/mu={mu}"
                table[key] = {
                    k: {"mean": float(np.mean(v)), "std": float(np.std(v))} for k, v in acc.items()
                }
    ratios, learner_frac = {}, []
    for state in states:
        row = table[f"coordinate/{state}/mu=1.0"]
        rival = max(
            row["ftpl"]["mean"], row["cdp_min_noise"]["mean"], row["cdp_min_regret"]["mean"]
        )
        ratios[state] = row["meta"]["mean"] / rival
        learner_frac.append(row["meta"]["mean"] / row["best_learner"]["mean"])
    n_15 = sum(r >= 1.5 for r in ratios.values())
    n_12 = sum(r >= 1.2 for r in ratios.values())
    need = min(2, len(ratios))
    mean_frac = float(np.mean(learner_frac))

    fig, axes = plt.subplots(
        1, len(curves) + 1, figsize=(4.2 * (len(curves) + 1), 3.4), squeeze=False
    )
    for ax, (state, c) in zip(axes[0], curves.items()):
        for row, label in zip(c, ("RW-Meta", "RW-FTPL", "CDP min-noise", "CDP min-regret")):
            ax.plot(row, label=label)
        ax.set_title(f"{state} (n={states[state]}), mu=1")
        ax.set_xlabel("week")
        ax.set_ylabel("cumulative gain")
    axes[0][0].legend(fontsize=7)
    ax = axes[0][-1]
    ax.bar(list(ratios), list(ratios.values()), color="tab:blue")
    ctx.mark_threshold(ax, 1.5, f"1.5 (needed in >= {need} states)")
    ctx.mark_threshold(ax, 1.2, "1.2 (partial)", linestyle=":")
    ax.set(ylabel="RW-Meta gain / best rival's", title=f"mu=1; RW-Meta/best learner {mean_frac:.2f}"
           " (>= 0.8)")  # fmt: skip
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "meta_over_best_rival_mu1": ratios,
            "states_with_ratio_ge_1.5": n_15,
            "meta_over_best_learner_mu1_mean": mean_frac,
            "table": table,
            "seeds": seeds,
            "cpu_seconds": times,
            "rounds_per_method": rounds,
            "meta_learners": len(_learners(0)),
            "cpu_ratio_meta_over_ftpl": times["meta"] / max(times["ftpl"], 1e-9),
            "cpu_ratio_cdp_min_noise_over_ftpl": times["cdp"] / max(times["ftpl"], 1e-9),
        },
        baseline={
            m: {key: row[m]["mean"] for key, row in table.items()}
            for m in ("ftpl", "cdp_min_noise", "cdp_min_regret", "best_learner")
        },
        required={
            f"ratio >= 1.5 in >= {need} states": n_15 >= need,
            "RW-Meta >= 0.8 x best learner": mean_frac >= 0.8,
        },
        partial={f"ratio >= 1.2 in >= {need} states": n_12 >= need},
    )
    return ctx.save_judged(fig, SLUG, "meta-vs-ftpl-and-central-dp", result)


@claim(
    paper=SLUG,
    name="adabatch-amplification",
    statement="RW-AdaBatch keeps mu-GLDP, amplifies batched points to central mu/sqrt(B), more "
    "on easy data, at a regret factor of at most 1 + alpha/2",
    paper_value="regret <= (1 + alpha/2) x RW-FTPL bound; amplification larger on easy data",
    criterion="easy data: point-weighted median batch >= 8 (amplified mu <= 0.36); hard data: "
    "median batch smaller than easy; mean regret ratio AdaBatch/RW-FTPL <= 1 + alpha/2 + 0.1 on both",
)
def adabatch_amplification(ctx: Context) -> Result:
    n, mu, alpha = 10, 1.0, 0.5
    T = ctx.pick(smoke=2000, quick=20000, full=20000)
    seeds = ctx.pick(smoke=2, quick=20, full=50)
    settings = {"easy": [0.7] + [0.5] * (n - 1), "hard": [0.5] * n}
    out, sizes = {}, {}
    for i, (name, means) in enumerate(settings.items()):
        med, reg_a, reg_f, all_sizes, t_a, t_f = [], [], [], [], 0.0, 0.0
        n_batches = 0
        for s in range(seeds):
            seed = ctx.seed * 1000 + 10 * s
            gains = bernoulli_gains(n, T, means, random_state=seed)
            stream = LDPReportStream(gains, mu, "vector", random_state=seed + 1)
            algo = RWAdaBatch(alpha, mu, "vector", random_state=seed + 2)
            ra, seconds = _cpu(
                ctx,
                lambda algo=algo, gains=gains, stream=stream: run_online(
                    algo, gains, stream=stream
                ),
            )
            t_a += seconds
            rf, seconds = _cpu(
                ctx,
                lambda gains=gains, stream=stream, seed=seed: run_online(
                    RWFTPL(mu, "vector", random_state=seed + 2), gains, stream=stream
                ),
            )
            t_f += seconds
            n_batches += int(round(np.sum(1.0 / algo.batch_sizes_)))  # B rounds of 1/B each
            med.append(float(np.median(algo.batch_sizes_)))
            all_sizes.append(algo.batch_sizes_)
            reg_a.append(ra.static_regret)
            reg_f.append(rf.static_regret)
            ctx.report((i * seeds + s + 1) / (2 * seeds), name)
        median_b = float(np.median(np.concatenate(all_sizes)))
        sizes[name] = np.concatenate(all_sizes)
        out[name] = {
            "median_batch": median_b,
            "median_batch_per_seed_mean": float(np.mean(med)),
            "amplified_mu_at_median": mu / math.sqrt(median_b),
            "regret_adabatch_mean": float(np.mean(reg_a)),
            "regret_adabatch_std": float(np.std(reg_a)),
            "regret_ftpl_mean": float(np.mean(reg_f)),
            "regret_ftpl_std": float(np.std(reg_f)),
            "regret_ratio": float(np.mean(reg_a) / max(np.mean(reg_f), 1e-9)),
            "cpu_seconds_adabatch": t_a,
            "cpu_seconds_ftpl": t_f,
            "cpu_ratio_adabatch_over_ftpl": t_a / max(t_f, 1e-9),
            "rounds": seeds * T,
            "adabatch_batches": n_batches,
        }
    limit = 1 + alpha / 2 + 0.1
    fig, (ax, ax_ratio) = plt.subplots(
        1, 2, figsize=(8.5, 3.6), gridspec_kw={"width_ratios": [3, 1.3]}
    )
    bins = np.geomspace(1, max(2, max(s.max() for s in sizes.values())), 40)
    for name, arr in sizes.items():
        ax.hist(arr, bins=bins, alpha=0.6, label=f"{name} (median {np.median(arr):.0f})")
    ctx.mark_threshold(ax, 8, "easy median >= 8", axis="x")
    ax.set_xscale("log")
    ax.set_xlabel("batch size a report falls in (point-weighted)")
    ax.set_ylabel("reports")
    ax.set_title(f"RW-AdaBatch, n={n}, T={T}, mu={mu}, alpha={alpha}", fontsize=9)
    ax.legend(fontsize=7)
    ax_ratio.bar(list(out), [out[k]["regret_ratio"] for k in out], color="tab:gray")
    ctx.mark_threshold(ax_ratio, limit, f"1 + alpha/2 + 0.1 = {limit:.2f}")
    ax_ratio.set(ylabel="mean regret AdaBatch / RW-FTPL")
    ax_ratio.legend(fontsize=7)
    result = Result.judge(
        metrics={"adabatch": out, "T": T, "seeds": seeds},
        baseline={"rw_ftpl_regret": {k: v["regret_ftpl_mean"] for k, v in out.items()}},
        required={
            "easy median batch >= 8": out["easy"]["median_batch"] >= 8,
            "hard median batch < easy": out["hard"]["median_batch"] < out["easy"]["median_batch"],
            f"regret ratio <= {limit} (easy)": out["easy"]["regret_ratio"] <= limit,
            f"regret ratio <= {limit} (hard)": out["hard"]["regret_ratio"] <= limit,
        },
    )
    return ctx.save_judged(fig, SLUG, "adabatch-amplification", result)


@claim(
    paper=SLUG,
    name="regret-bounds",
    statement="RW-FTPL's regret is at most (eta + 2/eta) sqrt(2T log n); RW-Meta's regret "
    "against the best learner is within its Theorem-3 bound",
    paper_value="E[R_T] <= (eta + 2/eta) sqrt(2 T log n); RW-Meta O(sqrt(T n m log m)/mu)",
    criterion="mean empirical regret <= bound for RW-FTPL (100 seeds) and RW-Meta, on an "
    "alternating-leader adversary and on i.i.d. gains (means 0.25..0.75); and each bound can "
    "fail on that data: a player that learns nothing (uniformly random expert for RW-FTPL, "
    "uniformly random learner for RW-Meta) has a mean regret above it, measured on the same "
    "gains (partial: only the bounds hold, i.e. the check has no power there)",
)
def regret_bounds(ctx: Context) -> Result:
    n, mu = 10, 1.0
    T = ctx.pick(smoke=500, quick=5000, full=5000)
    seeds = ctx.pick(smoke=5, quick=100, full=100)
    meta_seeds = ctx.pick(smoke=1, quick=3, full=20)
    data = {
        "alternating": lambda s: alternating_leader_gains(
            n, T, block=max(T // 20, 1), random_state=s
        ),
        # means spread enough that a player who learns nothing exceeds the bound (power)
        "iid": lambda s: bernoulli_gains(n, T, np.linspace(0.25, 0.75, n), random_state=s),
    }
    out, checks, power, curves = {}, {}, {}, {}
    for name, make in data.items():
        ftpl_reg, meta_reg, meta_bounds, uniform_reg, uniform_learner_reg = [], [], [], [], []
        bound = None
        for s in range(seeds):
            seed = ctx.seed * 10000 + s
            gains = make(seed)
            stream = LDPReportStream(gains, mu, "vector", random_state=seed + 1)
            algo = RWFTPL(mu, "vector", random_state=seed + 2)
            res = run_online(algo, gains, stream=stream)
            ftpl_reg.append(res.static_regret)
            uniform_reg.append(float(gains.sum(axis=0).max() - gains.sum() / n))
            bound = algo.regret_bound(T, n)
            if s < meta_seeds:
                meta = RWMeta(_learners(seed), mu, "vector", random_state=seed + 3)
                rm = run_online(meta, gains, stream=stream)
                meta_reg.append(float(rm.learner_gains.max() - rm.cumulative_gain))
                uniform_learner_reg.append(float(rm.learner_gains.max() - rm.learner_gains.mean()))
                meta_bounds.append(meta.regret_bound(T))
                if s == 0:
                    curves[name] = (
                        np.cumsum(gains[np.arange(T), res.actions]),
                        np.cumsum(rm.per_round_gain),
                        gains.cumsum(0).max(1),
                    )
        out[name] = {
            "ftpl_regret_mean": float(np.mean(ftpl_reg)),
            "ftpl_regret_std": float(np.std(ftpl_reg)),
            "ftpl_bound": bound,
            "meta_regret_mean": float(np.mean(meta_reg)),
            "meta_regret_std": float(np.std(meta_reg)),
            "meta_bound_mean": float(np.mean(meta_bounds)),
            "uniform_regret_mean": float(np.mean(uniform_reg)),
            "uniform_learner_regret_mean": float(np.mean(uniform_learner_reg)),
        }
        checks[f"RW-FTPL regret <= bound ({name})"] = out[name]["ftpl_regret_mean"] <= bound
        checks[f"RW-Meta regret <= bound ({name})"] = (
            out[name]["meta_regret_mean"] <= out[name]["meta_bound_mean"]
        )
        power[f"uniform expert's regret > RW-FTPL bound ({name})"] = (
            out[name]["uniform_regret_mean"] > bound
        )
        power[f"uniform learner's regret > RW-Meta bound ({name})"] = (
            out[name]["uniform_learner_regret_mean"] > out[name]["meta_bound_mean"]
        )
        ctx.report(len(out) / len(data), name)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    names = list(out)
    x = np.arange(len(names))
    ax.bar(x - 0.2, [out[k]["ftpl_regret_mean"] for k in names], 0.4, label="RW-FTPL regret")
    ax.bar(
        x + 0.2,
        [out[k]["meta_regret_mean"] for k in names],
        0.4,
        label="RW-Meta regret (vs best learner)",
    )
    ax.scatter(
        x - 0.2, [out[k]["ftpl_bound"] for k in names], marker="_", s=800, c="k", label="bounds"
    )
    ax.scatter(x + 0.2, [out[k]["meta_bound_mean"] for k in names], marker="_", s=800, c="k")
    # the power check: a player that learns nothing must exceed the bound
    ax.scatter(x - 0.2, [out[k]["uniform_regret_mean"] for k in names], marker="x", c="tab:red",
               label="no-learning player (must exceed its bound)")  # fmt: skip
    ax.scatter(x + 0.2, [out[k]["uniform_learner_regret_mean"] for k in names], marker="x",
               c="tab:red")  # fmt: skip
    ax.set_xticks(x, names)
    ax.set_ylabel("regret")
    ax.set_title(f"n={n}, T={T}, mu={mu}, Delta=sqrt(n)")
    ax.legend(fontsize=7)
    result = Result.judge(
        metrics={"regret": out, "T": T, "seeds": seeds, "meta_seeds": meta_seeds},
        baseline={
            "bounds": {k: v["ftpl_bound"] for k, v in out.items()},
            "uniform_expert_regret": {k: v["uniform_regret_mean"] for k, v in out.items()},
            "uniform_learner_regret": {k: v["uniform_learner_regret_mean"] for k, v in out.items()},
        },
        required={**checks, **power},
        partial=checks,
    )
    return ctx.save_judged(fig, SLUG, "regret-bounds", result)
