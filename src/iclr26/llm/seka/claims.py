"""Claim checks of SEKA / AdaSEKA on the tiny LM fine-tuned for passage-conflict QA.

Setup (every claim): the tiny Llama fine-tuned on relevance + conflict QA (first passage wins),
projections built from 400 colour/birthplace triplets, evaluation on conflict prompts about
*codes* whose highlighted passage is not the first; dev prompts (separate seed) choose the gain,
the head filter and PASTA's heads. ES = share of prompts where the highlighted value is more
likely than the first passage's value (teacher forced).
"""

from __future__ import annotations

import functools
from contextlib import nullcontext

import numpy as np
import torch

from iclr26.claims import Context, Result, claim, timeit
from iclr26.llm.seka.adaptive import AdaSEKA
from iclr26.llm.seka.evaluation import (
    GAIN_GRID,
    MIN_DIFF_GRID,
    efficacy,
    select_gain,
    select_seka,
)
from iclr26.llm.seka.markers import encode_with_markers
from iclr26.llm.seka.pasta import PASTA, attention_implementation, select_pasta_heads
from iclr26.llm.seka.projections import (
    build_seka_projections,
    projection_report,
    random_projections,
)
from iclr26.llm.seka.sites import kv_geometry
from iclr26.llm.seka.steering import SEKA
from iclr26.llm.seka.tasks import conflict_prompts, passage_qa_model, projection_triplets

PAPER = "seka"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _sizes(scale: str) -> dict:
    if scale == "smoke":
        return dict(
            n_eval=6, n_dev=4, n_items=3, gains=(2.0,), min_diffs=(0.0,), pasta_k=2, seeds=1
        )
    if scale == "quick":
        return dict(
            n_eval=300,
            n_dev=60,
            n_items=200,
            gains=GAIN_GRID,
            min_diffs=MIN_DIFF_GRID,
            pasta_k=4,
            seeds=2,
        )
    return dict(
        n_eval=1000,
        n_dev=200,
        n_items=400,
        gains=GAIN_GRID,
        min_diffs=MIN_DIFF_GRID,
        pasta_k=4,
        seeds=2,
    )


@functools.lru_cache(maxsize=4)
def _model(scale: str, device: str):
    model, tok, base = passage_qa_model(scale)
    return model.to(device), tok, base


@functools.lru_cache(maxsize=8)
def _seed_setup(scale: str, seed: int, device: str) -> dict:
    """Projections, dev selections and PASTA heads for one generator seed (shared by C1, C3)."""
    size = _sizes(scale)
    model, tok, base = _model(scale, device)
    dev = conflict_prompts(size["n_dev"], seed=10_000 + seed)
    triplets = projection_triplets(size["n_items"], seed=30_000 + seed)
    # one run, timed where it is needed (threads left as the claim set them: the projections
    # must not depend on the timing); the count is the prompts encoded, three per triplet
    build = timeit(
        lambda: build_seka_projections(
            model, tok, triplets, layers="all", top_pct=0.9, min_diff=0.0, save_svd=True
        ),
        repeat=1,
        warmup=0,
        threads=None,
    ).count(triplets=len(triplets), prompts_encoded=3 * len(triplets))
    proj = build.value
    gain, delta, grid = select_seka(model, tok, proj, dev, size["gains"], size["min_diffs"])
    return dict(
        dev=dev,
        eval=conflict_prompts(size["n_eval"], seed=seed),
        para=conflict_prompts(size["n_eval"], seed=20_000 + seed, paraphrase=True),
        proj=proj.refilter(delta).without_negative(),
        gain=gain,
        min_diff=delta,
        dev_grid=grid,
        build_timing=build.to_dict(),
        base=base,
    )


@functools.lru_cache(maxsize=8)
def _pasta_setup(scale: str, seed: int, device: str) -> dict:
    """PASTA's heads for one generator seed, profiled on the same dev prompts."""
    model, tok, _ = _model(scale, device)
    dev = _seed_setup(scale, seed, device)["dev"]
    search = timeit(
        lambda: select_pasta_heads(
            model, tok, lambda p: efficacy(model, tok, dev, p), k=_sizes(scale)["pasta_k"],
            alpha=0.01,
        ),
        repeat=1,
        warmup=0,
        threads=None,
    )  # fmt: skip
    heads, table = search.value
    n_heads = int(np.isfinite(table).sum())
    search.count(heads_scored=n_heads, dev_prompts=len(dev), prompt_scorings=n_heads * len(dev))
    return dict(heads=heads, table=table, search_timing=search.to_dict())


def _seeds(ctx: Context) -> list[int]:
    return [ctx.seed + i for i in range(_sizes(ctx.scale.value)["seeds"])]


# ------------------------------------------------------------------ C1


@claim(
    paper=PAPER,
    name="steering-efficacy",
    statement="Highlighting with SEKA makes the model follow the highlighted passage far more "
    "often than no steering, and at least as often as PASTA",
    paper_value="CounterFact ES (Qwen3-4B): original 45.00, PASTA 97.16, SEKA 99.02",
    criterion="mean over 2 seeds: ES(SEKA) - ES(original) >= 0.25 AND ES(SEKA) >= ES(PASTA) "
    "- 0.02 (PS gates reported, not required)",
    timeout_s={"quick": 600},
    headline=("es_seka", "es_pasta"),
)
def steering_efficacy(ctx: Context) -> Result:
    model, tok, base = _model(ctx.scale.value, ctx.device)
    rows = []
    for i, seed in enumerate(_seeds(ctx)):
        s = _seed_setup(ctx.scale.value, seed, ctx.device)
        ps = _pasta_setup(ctx.scale.value, seed, ctx.device)
        seka = SEKA(model, tok, s["proj"], gain_pos=s["gain"], gain_neg=0.0)
        pasta = PASTA(model, tok, ps["heads"], alpha=0.01)
        row = {
            "seed": seed,
            "gain_pos": s["gain"],
            "min_diff": s["min_diff"],
            "pasta_heads": ps["heads"],
        }
        for split in ("eval", "para"):
            key = "es" if split == "eval" else "ps"
            row[f"{key}_original"] = efficacy(model, tok, s[split], None)
            row[f"{key}_seka"] = efficacy(model, tok, s[split], seka)
            row[f"{key}_pasta"] = efficacy(model, tok, s[split], pasta)
        row["heads_steered"] = int(s["proj"].applied_mask.sum())
        # one timed run each (reported, not judged), CPU and wall seconds with their counts
        row["projection_build"], row["pasta_search"] = s["build_timing"], ps["search_timing"]
        row["build_cpu_s"] = s["build_timing"]["cpu_s"]
        row["pasta_search_cpu_s"] = ps["search_timing"]["cpu_s"]
        rows.append(row)
        ctx.report((i + 1) / len(_seeds(ctx)), f"seed {seed}")
    mean = {
        k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k.startswith(("es_", "ps_"))
    }
    gates = {}
    for key in ("es", "ps"):
        gates[f"{key}_gain_over_original"] = mean[f"{key}_seka"] - mean[f"{key}_original"]
        gates[f"{key}_margin_over_pasta"] = mean[f"{key}_seka"] - mean[f"{key}_pasta"]
    relation = (
        "beats"
        if gates["es_margin_over_pasta"] > 0.02
        else ("matches" if gates["es_margin_over_pasta"] >= -0.02 else "trails")
    )
    result = Result.judge(
        metrics={
            **mean,
            **gates,
            "seka_vs_pasta": relation,
            "per_seed": rows,
            "ps_gates_hold": bool(
                gates["ps_gain_over_original"] >= 0.25 and gates["ps_margin_over_pasta"] >= -0.02
            ),
            "base_model": base,
            "n_eval": len(_seed_setup(ctx.scale.value, ctx.seed, ctx.device)["eval"]),
        },
        baseline={
            "original": {"es": mean["es_original"], "ps": mean["ps_original"]},
            "pasta": {"es": mean["es_pasta"], "ps": mean["ps_pasta"]},
        },
        required={
            "ES(SEKA) - ES(original) >= 0.25": gates["es_gain_over_original"] >= 0.25,
            "ES(SEKA) >= ES(PASTA) - 0.02": gates["es_margin_over_pasta"] >= -0.02,
        },
    )
    return _bars(
        ctx,
        "steering-efficacy",
        {
            "original": [mean["es_original"], mean["ps_original"]],
            "PASTA": [mean["es_pasta"], mean["ps_pasta"]],
            "SEKA": [mean["es_seka"], mean["ps_seka"]],
        },
        ("ES", "PS"),
        "share of prompts following the highlighted passage",
        result,
        [
            (0, mean["es_original"] + 0.25, "SEKA ES >= original + 0.25"),
            (0, mean["es_pasta"] - 0.02, "SEKA ES >= PASTA - 0.02"),
        ],
        note="judged on ES; PS (paraphrased prompts) reported, not judged",
    )


def _bars(ctx: Context, name: str, groups: dict, labels, ylabel: str, result: Result,
          thresholds=(), note: str = "") -> Result:  # fmt: skip
    """Grouped bars titled with the verdict of ``result``; ``thresholds`` are the criterion's
    lines ``(label index, value, text)``, drawn across that label's group; ``note`` (the x
    label) names a condition that is not a line on these bars."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    width = 0.8 / len(groups)
    for i, (method, vals) in enumerate(groups.items()):
        ax.bar(np.arange(len(labels)) + i * width, vals, width, label=method)
    for k, (index, value, text) in enumerate(thresholds):
        ax.hlines(
            value,
            index - width / 2,
            index + 0.8 - width / 2,
            colors="black",
            linestyles=("--", ":", "-.")[k % 3],
            linewidth=1.4,
            label=text,
        )
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels)
    ax.set_ylabel(ylabel)
    if note:
        ax.set_xlabel(note, fontsize=8)
    ax.legend(fontsize=7)
    return ctx.save_judged(fig, PAPER, name, result)


# ------------------------------------------------------------------ C2


def _long_batch(tok, batch: int, length: int, seed: int):
    """``batch`` prompts of exactly ``length`` tokens of passages, four of them highlighted."""
    rng = np.random.default_rng(seed)
    from iclr26.llm.seka.tasks import TEMPLATES, _entities, values

    texts = []
    stmt = TEMPLATES["code"][0][0]
    for _ in range(batch):
        n = max(8, length // 6)
        names = _entities(n, rng)
        vals = values("code", min(n, 100), rng) * (n // 100 + 1)
        marked = set(rng.choice(np.arange(n // 4, n // 2), size=min(4, n // 4), replace=False))
        pieces = []
        for j, (e, v) in enumerate(zip(names, vals)):
            piece = f"P{j + 1}: {stmt.format(e=e, v=v)}"
            pieces.append(f"**{piece}**" if j in marked else piece)
        texts.append(" ".join(pieces))
    enc = encode_with_markers(tok, texts)
    if enc.input_ids.shape[1] < length:
        raise ValueError("could not build prompts that long")
    # every row is longer than `length`; keep the first `length` tokens of each (left padding
    # means the rows start at different columns, so cut row by row)
    ids = torch.zeros(batch, length, dtype=torch.long)
    mask = torch.zeros(batch, length, dtype=torch.bool)
    for r in range(batch):
        start = int((enc.attention_mask[r] == 0).sum())
        ids[r] = enc.input_ids[r, start : start + length]
        mask[r] = enc.steer_mask[r, start : start + length]
    return ids, mask


@claim(
    paper=PAPER,
    name="overhead-and-fused-attention",
    statement="SEKA adds less latency than PASTA and works with fused (SDPA) attention because "
    "the edit happens on the keys, outside the attention kernel",
    paper_value="per-sample overhead (B=10, GPU): SEKA +0.03 s / +0.03 GB, PASTA +1.03 s / "
    "+23.12 GB, AdaSEKA +0.27 s",
    criterion="prefill, batch 8, prompts of 1024 tokens (the model's maximum if lower), median "
    "CPU time of 7 interleaved rounds: overhead(SEKA, sdpa) < overhead(PASTA, eager) AND "
    "overhead(SEKA) <= 0.15 x t(original, sdpa) AND max |logit(SEKA, sdpa) - logit(SEKA, eager)| < 1e-4",
    timeout_s={"quick": 600},
    exclusive=True,
    headline=("prefill_ratio_seka_over_original", "prefill_ratio_pasta_over_original"),
)
def overhead_and_fused_attention(ctx: Context) -> Result:
    model, tok, base = _model(ctx.scale.value, ctx.device)
    s = _seed_setup(ctx.scale.value, ctx.seed, ctx.device)
    g = kv_geometry(model)
    max_len = int(model.config.max_position_embeddings)
    length = ctx.pick(64, min(1024, max_len), min(1024, max_len))
    batch = ctx.pick(2, 8, 8)
    repeat = ctx.pick(2, 7, 7)
    ids, mask = _long_batch(tok, batch, length, ctx.seed)
    ids = ids.to(ctx.device)
    seka = SEKA(model, tok, s["proj"], gain_pos=s["gain"], gain_neg=0.0)
    pasta = PASTA(
        model, tok, _pasta_setup(ctx.scale.value, ctx.seed, ctx.device)["heads"], alpha=0.01
    )
    sync = torch.cuda.synchronize if str(ctx.device).startswith("cuda") else None

    def forward(method):
        def run():
            with torch.no_grad(), attention_implementation(model, "sdpa"):
                with nullcontext() if method is None else method.highlight(ids, mask):
                    return model(input_ids=ids, use_cache=False).logits[:, -1].float().sum()

        return run

    # the three prefills in interleaved rounds, so that a change of machine load between
    # blocks of repeats cannot decide the overhead
    times = ctx.timeit_interleaved(
        {"original": forward(None), "seka": forward(seka), "pasta": forward(pasta)},
        repeat=repeat,
        warmup=1,
        threads=1,
        sync=sync,
    )
    ctx.report(0.6, "prefill")
    with torch.no_grad():
        with attention_implementation(model, "sdpa"), seka.highlight(ids, mask):
            sdpa_logits = model(input_ids=ids, use_cache=False).logits.float()
        with attention_implementation(model, "eager"), seka.highlight(ids, mask):
            eager_logits = model(input_ids=ids, use_cache=False).logits.float()
        plain = model(input_ids=ids, use_cache=False).logits.float()
    parity = float((sdpa_logits - eager_logits).abs().max())
    steer_effect = float((sdpa_logits - plain).abs().max())

    # a short generation: 8 prompts of a quarter of the length, 16 new tokens, greedy
    gen_len = ctx.pick(32, length // 4, length // 4)
    gen_ids, gen_mask = _long_batch(tok, batch, gen_len, ctx.seed + 1)
    gen_ids = gen_ids.to(ctx.device)
    new_tokens = ctx.pick(4, 16, 16)

    def generate(method):
        def run():
            with torch.no_grad(), attention_implementation(model, "sdpa"):
                with nullcontext() if method is None else method.highlight(gen_ids, gen_mask):
                    return model.generate(
                        input_ids=gen_ids,
                        attention_mask=torch.ones_like(gen_ids),
                        max_new_tokens=new_tokens,
                        min_new_tokens=new_tokens,
                        do_sample=False,
                        pad_token_id=tok.pad_token_id,
                    )

        return run

    gen = ctx.timeit_interleaved(
        {"original": generate(None), "seka": generate(seka), "pasta": generate(pasta)},
        repeat=ctx.pick(2, 3, 5),
        warmup=1,
        threads=1,
        sync=sync,
    )
    ctx.report(0.9, "generation")

    n_high = int(mask.sum())
    flops_forward = 2 * sum(p.numel() for p in model.parameters()) * batch * length
    times["original"].count(forward_passes=1, flops=flops_forward)
    times["seka"].count(
        forward_passes=1,
        flops=flops_forward + seka.extra_flops(n_high),
        edited_keys=n_high * len(seka.steered_layers),
        hooked_modules=len(seka.steered_layers) + 1,
    )
    times["pasta"].count(
        forward_passes=1,
        flops=flops_forward,
        attention_matrix_bytes=pasta.attention_bytes(batch, length),
    )
    t = {k: v.cpu_median_s for k, v in times.items()}
    over_seka, over_pasta = t["seka"] - t["original"], t["pasta"] - t["original"]
    tg = {k: v.cpu_median_s for k, v in gen.items()}
    metrics = {
        "prompt_tokens": length,
        "batch": batch,
        "highlighted_tokens": n_high,
        "t_original_s": t["original"],
        "t_seka_s": t["seka"],
        "t_pasta_s": t["pasta"],
        "overhead_seka_s": over_seka,
        "overhead_pasta_s": over_pasta,
        "prefill_ratio_seka_over_original": t["seka"] / t["original"],
        "prefill_ratio_pasta_over_original": t["pasta"] / t["original"],
        "prefill_ratio_seka_over_pasta": t["seka"] / t["pasta"],
        "generate_ratio_seka_over_original": tg["seka"] / tg["original"],
        "generate_ratio_pasta_over_original": tg["pasta"] / tg["original"],
        "generate_ratio_seka_over_pasta": tg["seka"] / tg["pasta"],
        "seka_extra_flops": seka.extra_flops(n_high),
        "seka_extra_flops_fraction": seka.extra_flops(n_high) / flops_forward,
        "pasta_attention_matrix_bytes": pasta.attention_bytes(batch, length),
        "seka_extra_state_bytes": int(sum(m.numel() * 4 for _, m in seka._edits.values())),
        "max_abs_logit_sdpa_vs_eager": parity,
        "max_abs_logit_change_by_steering": steer_effect,
        "timing_seka": times["seka"].to_dict(),
        "timing_pasta": times["pasta"].to_dict(),
        "generate_seka": gen["seka"].to_dict(),
        "generate_pasta": gen["pasta"].to_dict(),
        "generate_new_tokens": new_tokens,
        "generate_prompt_tokens": gen_len,
        "kv_heads": g.n_kv_heads,
        "base_model": base,
    }
    if sync is not None:
        metrics["device"] = str(ctx.device)
    result = Result.judge(
        metrics=metrics,
        baseline={
            "original": times["original"].to_dict(),
            "pasta": times["pasta"].to_dict(),
            "original_generate": gen["original"].to_dict(),
        },
        required={
            "overhead(SEKA) < overhead(PASTA)": over_seka < over_pasta,
            "overhead(SEKA) <= 0.15 x t(original)": over_seka <= 0.15 * t["original"],
            "max |logit sdpa - eager| < 1e-4 under SEKA": parity < 1e-4,
        },
    )
    return _bars(
        ctx,
        "overhead-and-fused-attention",
        {
            "original": [t["original"], tg["original"]],
            "SEKA": [t["seka"], tg["seka"]],
            "PASTA": [t["pasta"], tg["pasta"]],
        },
        ("prefill", "generate"),
        "median CPU seconds",
        result,
        # the judged prefill: SEKA's bar below both (overhead = time - original's time)
        [
            (0, 1.15 * t["original"], "SEKA prefill <= 1.15 x original"),
            (0, t["pasta"], "SEKA prefill < PASTA's"),
        ],
        note=f"judged on prefill; also required: max |logit sdpa - eager| = {parity:.1e} < 1e-4; "
        "generation reported",
    )


# ------------------------------------------------------------------ C3


@claim(
    paper=PAPER,
    name="ablation-subspace-and-filter",
    statement="Both the learned relevance subspace and the head filter matter: random "
    "projections steer worse, and without filtering worse still",
    paper_value="ES (Qwen3-4B): learned + filter 99.02, random + filter 94.96, random, no filter "
    "86.12",
    criterion="mean over 2 seeds: ES(SEKA) > ES(random + filter) + 0.02 AND ES(random + "
    "filter) >= ES(random, no filter)",
    timeout_s={"quick": 600},
    headline=("es_seka", "es_random_filter"),
)
def ablation_subspace_and_filter(ctx: Context) -> Result:
    model, tok, base = _model(ctx.scale.value, ctx.device)
    rows = []
    for seed in _seeds(ctx):
        s = _seed_setup(ctx.scale.value, seed, ctx.device)
        learned = s["proj"]
        rand = random_projections(learned, seed=seed)
        variants = {
            "seka": learned,
            "no_filter": learned.refilter(float("-inf")),
            "random_filter": rand,
            "random_no_filter": rand.refilter(float("-inf")),
        }
        row = {
            "seed": seed,
            "gain_pos": s["gain"],
            "min_diff": s["min_diff"],
            "heads_steered": int(learned.applied_mask.sum()),
            "heads_total": int(learned.applied_mask.numel()),
        }
        for name, proj in variants.items():
            row[f"es_{name}"] = efficacy(
                model, tok, s["eval"], SEKA(model, tok, proj, s["gain"], 0.0)
            )
        row["es_original"] = efficacy(model, tok, s["eval"], None)
        rows.append(row)
    mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0] if k.startswith("es_")}
    result = Result.judge(
        metrics={
            **mean,
            "per_seed": rows,
            "base_model": base,
            "projection": projection_report(
                _seed_setup(ctx.scale.value, ctx.seed, ctx.device)["proj"]
            ),
        },
        baseline={
            "random_filter": {"es": mean["es_random_filter"]},
            "random_no_filter": {"es": mean["es_random_no_filter"]},
            "original": {"es": mean["es_original"]},
        },
        required={
            "ES(SEKA) > ES(random+filter) + 0.02": mean["es_seka"]
            > mean["es_random_filter"] + 0.02,
            "ES(random+filter) >= ES(random, no filter)": mean["es_random_filter"]
            >= mean["es_random_no_filter"],
        },
    )
    return _bars(
        ctx,
        "ablation-subspace-and-filter",
        {k[3:]: [v] for k, v in mean.items()},
        ("ES",),
        "efficacy score",
        result,
        [
            (0, mean["es_random_filter"] + 0.02, "SEKA > random+filter + 0.02"),
            (0, mean["es_random_no_filter"], "random+filter >= random, no filter"),
        ],
    )


# ------------------------------------------------------------------ C4


def _mixed(n: int, seed: int):
    half = n // 2
    quarter = (n - half) // 2
    return (
        conflict_prompts(half, seed, ("code",))
        + conflict_prompts(quarter, seed + 1, ("colour",))
        + conflict_prompts(n - half - quarter, seed + 2, ("birthplace",))
    )


@claim(
    paper=PAPER,
    name="adaseka-routing",
    statement="AdaSEKA, routing between expert subspaces by the prompt's query, steers at least "
    "as well as the average single expert on a mixed set",
    paper_value="AdaSEKA ES 98.90 vs SEKA 99.02; BiasBios 91.86 vs 91.02 (Qwen3-4B)",
    criterion="ES(AdaSEKA) >= mean of ES(SEKA, colour expert) and ES(SEKA, birthplace expert), "
    "each at its gain chosen on dev, on a set half codes (a third attribute), a quarter "
    "colours, a quarter birthplaces",
    timeout_s={"quick": 600},
    headline=("es_adaseka", "es_single_mean"),
)
def adaseka_routing(ctx: Context) -> Result:
    model, tok, base = _model(ctx.scale.value, ctx.device)
    size = _sizes(ctx.scale.value)
    dev = _mixed(size["n_dev"], 40_000 + ctx.seed)
    evaluation = _mixed(size["n_eval"], 50_000 + ctx.seed)
    experts, singles, chosen = {}, {}, {}
    for attribute in ("colour", "birthplace"):
        trip = projection_triplets(size["n_items"], seed=60_000 + ctx.seed, attributes=(attribute,))
        proj = build_seka_projections(model, tok, trip, layers="all", min_diff=0.0, save_svd=True)
        gain, delta, _ = select_seka(model, tok, proj, dev, size["gains"], size["min_diffs"])
        experts[attribute] = proj.refilter(delta).without_negative()
        chosen[attribute] = {"gain_pos": gain, "min_diff": delta}
        singles[attribute] = efficacy(
            model, tok, evaluation, SEKA(model, tok, experts[attribute], gain, 0.0)
        )
    ada_gain, ada_dev = select_gain(
        lambda g: AdaSEKA(model, tok, experts, gain=g, top_k=3), model, tok, dev, size["gains"]
    )
    ada = AdaSEKA(model, tok, experts, gain=ada_gain, top_k=3)
    es_ada = efficacy(model, tok, evaluation, ada)
    es_orig = efficacy(model, tok, evaluation, None)
    by_type = {}
    for attribute in ("code", "colour", "birthplace"):
        items = [p for p in evaluation if p.attribute == attribute]
        enc = encode_with_markers(tok, [p.marked for p in items])
        q = ada.last_token_queries(enc.input_ids.to(ctx.device), enc.attention_mask.to(ctx.device))
        w = ada.weights_for(q).mean(dim=(2, 3)).mean(0)  # (M,)
        by_type[attribute] = {name: float(w[m]) for m, name in enumerate(ada.names)}
        by_type[attribute]["es_adaseka"] = efficacy(model, tok, items, ada)
    single_mean = float(np.mean(list(singles.values())))
    plt = _plt()
    fig, (ax, ax_es) = plt.subplots(1, 2, figsize=(9, 3.4), gridspec_kw={"width_ratios": [3, 2]})
    kinds = list(by_type)
    for m, name in enumerate(ada.names):
        ax.bar(
            np.arange(len(kinds)) + 0.4 * m,
            [by_type[k][name] for k in kinds],
            0.4,
            label=f"weight of {name} expert",
        )
    ax.set_xticks(np.arange(len(kinds)) + 0.2, kinds)
    ax.set_ylabel("mean routing weight")
    ax.legend(fontsize=8)
    es_bars = {"AdaSEKA": es_ada, **{f"SEKA {k}": v for k, v in singles.items()}}
    ax_es.bar(list(es_bars), list(es_bars.values()), color=["C2"] + ["C7"] * len(singles))
    ctx.mark_threshold(ax_es, single_mean, "mean single-expert ES (AdaSEKA >=)")
    ax_es.set_ylabel("efficacy score")
    ax_es.tick_params(axis="x", labelsize=7, rotation=15)
    ax_es.legend(fontsize=7)
    result = Result.judge(
        metrics={
            "es_adaseka": es_ada,
            "es_single_mean": single_mean,
            "adaseka_gain": ada_gain,
            "adaseka_dev_es": ada_dev,
            "routing_by_type": by_type,
            "experts": chosen,
            "base_model": base,
            "n_eval": len(evaluation),
        },
        baseline={f"seka_{k}": {"es": v, **chosen[k]} for k, v in singles.items()}
        | {"original": {"es": es_orig}},
        required={"ES(AdaSEKA) >= mean single-expert ES": es_ada >= single_mean},
    )
    return ctx.save_judged(fig, PAPER, "adaseka-routing", result)
