"""Claim checks of QAT for ultra-low-bit reasoning LLMs, on the tiny Llama post-trained for
modular-arithmetic chain-of-thought (the teacher, ``tinylm-quick+arith-cot``).

C1: mixed-domain (80/20) stage-1 calibration beats single-domain calibration at 3 bits.
C2: at 2 bits, the full pipeline (calibration + reward rectification, C+R) is far above RTN and
GPTQ and above calibration + plain SFT (C+S); the packed checkpoint's bytes are measured beside.
AWQ runs beside RTN/GPTQ in C1 and C2 as a reported PTQ baseline that no criterion reads.
C3 (full scale): teacher reweighting vs the student's own (plain DFT) weights.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr26.claims import Context, Result, Scale, Verdict, claim
from iclr26.llm.qat_reasoning.awq import awq_quantize
from iclr26.llm.qat_reasoning.evaluate import EvalSuite, lm_scores
from iclr26.llm.qat_reasoning.export import (
    folder_bytes,
    load_quantized,
    save_quantized,
    storage_bits,
)
from iclr26.llm.qat_reasoning.gptq import gptq_quantize
from iclr26.llm.qat_reasoning.pipeline import ReasoningQAT
from iclr26.llm.qat_reasoning.quant import quant_layers, rtn_quantize
from iclr26.llm.qat_reasoning.tasks import MixedDomainCalibration, arithmetic_problems
from iclr26.llm.qat_reasoning.teacher import reasoning_teacher

PAPER = "qat_reasoning"
CALIB_SEED, SFT_SEED = 2000, 3000  # generator seeds: calibration and stage-2 problems


@dataclass
class Setting:
    """Sizes of one scale, fixed before running."""

    model: str
    teacher_steps: int
    n_problems: int  # evaluation problems per k
    n_windows: int  # stdlib test windows of 128 tokens
    n_calib: int
    calib_seq_len: int
    calib_epochs: int
    calib_batch: int
    ft_steps: int
    ft_batch: int
    seeds_c1: int
    seeds_c2: int
    group_size: int = 32
    n_texts: int = 2000  # reasoning texts for calibration and SFT pairs per seed
    teacher_examples: int = 8000
    max_new_tokens: int = 40


SETTINGS = {
    Scale.SMOKE: Setting(
        "smoke",
        4,
        4,
        2,
        8,
        32,
        1,
        4,
        2,
        4,
        1,
        1,
        n_texts=60,
        teacher_examples=60,
        max_new_tokens=6,
    ),
    Scale.QUICK: Setting("quick", 1500, 100, 16, 128, 128, 2, 16, 120, 16, 2, 1),
    Scale.FULL: Setting(
        "full",
        1500,
        200,
        64,
        512,
        128,
        2,
        4,
        300,
        16,
        3,
        2,
        group_size=64,
        n_texts=8000,
        teacher_examples=20000,
    ),
}
# the teacher's fine-tune: the spec's SFT at lr 2e-3 (the spec gives none) plus a KL anchor
# to the base model on the stdlib chunks (see the README's Deviations), chosen on the
# teacher's acceptance test only
TEACHER_LR, TEACHER_ANCHOR_WEIGHT = 2e-3, 5.0
CALIB_LR_QUANT, CALIB_LR_WEIGHT = 1e-3, 1e-4  # tiny model: fixed before running
FT_LR_WEIGHT, FT_LR_QUANT = 1e-4, 1e-4  # the spec's tiny stage-2 settings


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_SETUP: dict = {}


class StageClock:
    """Wall and CPU seconds (all threads of the process) and call counts per named stage of
    one claim, reported beside its numbers as ``stage_seconds`` (a breakdown of where the run
    spends its time, not a timing claim: measured once, under whatever load the machine has)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def __call__(self, name: str):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.process_time() - cpu
            self.calls[name] += 1

    def as_dict(self) -> dict:
        return {
            k: {"wall_s": round(self.wall[k], 2), "cpu_s": round(self.cpu[k], 2),
                "calls": self.calls[k]}
            for k in self.wall
        }  # fmt: skip


def _setup(ctx: Context) -> dict:
    """Base model, teacher, tokenizer, streams and evaluation suite of one scale (built once
    per process)."""
    key = (ctx.scale, ctx.device)
    if key in _SETUP:
        return _SETUP[key]
    from iclr26.models.tinylm import token_stream

    cfg = SETTINGS[ctx.scale]
    clock = StageClock()
    base, tok, train, name, kw = _base(ctx.scale)
    test = token_stream(tok, "test", **kw)
    suite = EvalSuite.build(
        test, cfg.n_problems, cfg.n_windows, seq_len=128 if ctx.scale is not Scale.SMOKE else 32
    )
    ctx.report(0.02, "teacher fine-tune (cached after the first run)")
    with clock("teacher fine-tune or load"):
        teacher = _teacher(ctx.scale, base, tok, train, name).to(ctx.device)
    teacher.eval()
    with clock("evaluate"):
        base_lm = lm_scores(base.to(ctx.device), suite.windows)
        suite.max_new_tokens = cfg.max_new_tokens
        teacher_scores = _evaluate(suite, teacher, tok)
    suite.ppl_reference = teacher_scores["ppl"]
    accepted = teacher_scores["em_k3"] >= 0.8 and teacher_scores["ppl"] <= 1.15 * base_lm["ppl"]
    out = {
        "cfg": cfg,
        "tok": tok,
        "teacher": teacher,
        "train": train,
        "suite": suite,
        "teacher_scores": teacher_scores,
        "setup_clock": clock.as_dict(),
        "teacher_info": {
            "model": name,
            "em_k3": teacher_scores["em_k3"],
            "ppl": teacher_scores["ppl"],
            "base_ppl": base_lm["ppl"],
            "accepted": bool(accepted),
            "finetune_steps": cfg.teacher_steps,
            "finetune_lr": TEACHER_LR,
            "anchor_weight": TEACHER_ANCHOR_WEIGHT,
        },
    }
    _SETUP[key] = out
    return out


def _base(scale: Scale):
    """(base model on the CPU, tokenizer, stdlib train stream, model name, stream kwargs)."""
    from iclr26.models.tinylm import get_tokenizer, load_causal_lm, pretrain_tiny_lm, token_stream

    if scale is Scale.SMOKE:
        base, tok = pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)
        tok = get_tokenizer(max_files=40)
        kw = {"max_files": 40}
        name = "test-smoke"
    else:
        model = SETTINGS[scale].model
        name = os.environ.get("ICLR26_QAT_MODEL", model) if scale is Scale.FULL else "quick"
        base, tok = load_causal_lm(name)
        kw = {}
    train = token_stream(tok, "train", **kw)
    return base.cpu().eval(), tok, train, name, kw  # the fine-tune builds batches on the CPU


TEACHER_THREADS = 1


def _teacher(scale: Scale, base, tok, train, name: str):
    cfg = SETTINGS[scale]
    return reasoning_teacher(
        copy.deepcopy(base),
        tok,
        train,
        steps=cfg.teacher_steps,
        batch=32 if scale is not Scale.SMOKE else 4,
        n_examples=cfg.teacher_examples,
        lr=TEACHER_LR,
        anchor_weight=TEACHER_ANCHOR_WEIGHT,
        cache_name=f"tinylm-{name}+arith-cot".replace("/", "_"),
        # one torch thread whoever builds it (a claim at any --jobs, or the warm-up), so the
        # cached teacher does not depend on the runner's thread count
        threads=TEACHER_THREADS,
    )


def warm_teacher(size: str = "quick", progress=None):
    """``iclr26 warmup qat-teacher``: build (or load) the claims' teacher of ``size`` (the
    scale ``smoke``/``quick``/``full``; ``test`` means smoke) into the cache, exactly as the
    claims do on a cold cache, so that their runs find it cached; returns its cache folder.
    Needs the base tiny LM of that scale, trained first when it is not cached.
    ``progress(done, total, note)`` hears the start and the end."""
    valid = ("test", "smoke", "quick", "full")
    if not isinstance(size, str) or size not in valid:
        raise ValueError(f"unknown size {size!r} for the QAT teacher; valid: {', '.join(valid)}")
    scale = Scale.parse("smoke" if size == "test" else size)
    if progress is not None:
        progress(0, 1, "teacher fine-tune or load")
    base, tok, train, name, _ = _base(scale)
    folder = _teacher(scale, base, tok, train, name).tinylm_cache_dir
    if progress is not None:
        progress(1, 1, "done")
    return folder


def _reasoning_texts(seed: int, n: int) -> list[str]:
    return [p.text for p in arithmetic_problems(n, (2, 3, 4, 5), CALIB_SEED + seed)]


def _sft_pairs(seed: int, n: int) -> list[tuple[str, str]]:
    return [(p.prompt, p.completion) for p in arithmetic_problems(n, (2, 3, 4, 5), SFT_SEED + seed)]


def _qat(cfg: Setting, bits: int, seed: int, ratio: float = 0.8, **kw) -> ReasoningQAT:
    return ReasoningQAT(
        bits=bits,
        group_size=cfg.group_size,
        ratio_reasoning=ratio,
        n_calib=cfg.n_calib,
        calib_seq_len=cfg.calib_seq_len,
        calib_epochs=cfg.calib_epochs,
        calib_batch=cfg.calib_batch,
        calib_lr_quant=CALIB_LR_QUANT,
        calib_lr_weight=CALIB_LR_WEIGHT,
        ft_steps=cfg.ft_steps,
        ft_batch=cfg.ft_batch,
        lr_weight=FT_LR_WEIGHT,
        lr_quant=FT_LR_QUANT,
        seed=seed,
        **kw,
    )


def _teacher_gate(result: Result, info: dict) -> Result:
    """A run whose teacher failed its acceptance test cannot speak for the paper."""
    if not info["accepted"] and result.verdict in (Verdict.REPRODUCED, Verdict.NOT_REPRODUCED):
        result.verdict = Verdict.INCONCLUSIVE
        result.reason = (
            f"teacher not accepted (EM k=3 {info['em_k3']:.2f} < 0.8 or ppl {info['ppl']:.2f} > "
            f"1.15 x base {info['base_ppl']:.2f}); measured: {result.reason}"
        )
    return result


def _evaluate(suite: EvalSuite, model, tok) -> dict:
    return suite.evaluate(model, tok)


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


# ------------------------------------------------------------------ C1


@claim(
    paper=PAPER,
    name="mixed-domain-calibration",
    statement="At 3 bits, block-wise calibration on a mixed 80 % reasoning / 20 % pre-training "
    "set beats calibration on pre-training text only and is not worse than reasoning only",
    paper_value="mixed 80/20 calibration beats single-domain calibration by up to 2.74 % on "
    "average over six tasks (3-bit); reasoning share lifts math/code, common sense stays flat",
    criterion="average of (EM k=3, EM k=4, ppl score, next-token acc), mean over seeds: "
    "avg(0.8) > avg(0.0) AND avg(0.8) >= avg(1.0) - 0.005; teacher must pass its acceptance test",
    headline=("avg_mixed", "avg_pretrain_only"),
    timeout_s={"smoke": 600, "quick": 1200, "full": 14400},
)
def mixed_domain_calibration(ctx: Context) -> Result:
    s = _setup(ctx)
    cfg, tok, teacher, suite = s["cfg"], s["tok"], s["teacher"], s["suite"]
    clock = StageClock()
    ratios = (0.0, 0.8, 1.0)
    runs = {r: [] for r in ratios}
    reports = {r: [] for r in ratios}
    total = cfg.seeds_c1 * len(ratios)
    for i in range(cfg.seeds_c1):
        seed = ctx.seed + i
        reasoning = _reasoning_texts(seed, cfg.n_texts)
        for j, ratio in enumerate(ratios):
            ctx.report(0.1 + 0.8 * (i * len(ratios) + j) / total, f"3-bit calibration r={ratio}")
            qat = _qat(cfg, 3, seed, ratio)
            with clock("stage 1 (calibration)"):
                model_q = qat.quantize(teacher)
                rep = qat.calibrate(model_q, teacher, tok, reasoning, s["train"])
            with clock("evaluate"):
                runs[ratio].append(_evaluate(suite, model_q, tok))
            reports[ratio].append(rep.mse_final[-1])
    with clock("RTN"):
        rtn_model = rtn_quantize(teacher, 3, cfg.group_size)
    with clock("evaluate"):
        rtn = _evaluate(suite, rtn_model, tok)
    # AWQ beside RTN (reported, read by no criterion), on the 80/20 set of the first seed
    awq_calib = _qat(cfg, 3, ctx.seed, 0.8).calibration_set(
        tok, _reasoning_texts(ctx.seed, cfg.n_texts), s["train"]
    )
    with clock("AWQ"):
        awq_model = awq_quantize(teacher, awq_calib.input_ids, 3, cfg.group_size)
    with clock("evaluate"):
        awq = _evaluate(suite, awq_model, tok)
    keys = ("em_k3", "em_k4", "ppl_score", "next_token_acc", "average")
    summary = {f"{k}_r{r}": _mean(runs[r], k) for r in ratios for k in keys}
    avg = {r: _mean(runs[r], "average") for r in ratios}
    em = {r: _mean(runs[r], "em_mean") for r in ratios}
    ppl_score = {r: _mean(runs[r], "ppl_score") for r in ratios}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4))
    names = ["EM k=3", "EM k=4", "ppl score", "next-token acc", "average"]
    width = 0.16
    for n, r in enumerate(ratios):
        vals = [_mean(runs[r], k) for k in keys]
        ax.bar(np.arange(len(keys)) + (n - 1) * width, vals, width, label=f"reasoning share {r}")
    ax.bar(np.arange(len(keys)) + 2 * width, [rtn[k] for k in keys], width, label="RTN (no calib)")
    ax.bar(np.arange(len(keys)) + 3 * width, [awq[k] for k in keys], width, label="AWQ (PTQ)")
    # the "average" bar of share 0.8 must clear this line: > avg(0.0) and >= avg(1.0) - 0.005
    i_avg = len(keys) - 1
    ax.hlines(max(avg[0.0], avg[1.0] - 0.005), i_avg - 1.5 * width, i_avg + 3.5 * width,
              colors="black", linestyles="--", label="share 0.8 needs > 0.0 and >= 1.0 - 0.005")  # fmt: skip
    ax.set_xticks(np.arange(len(keys)), names)
    ax.set_title("3-bit, stage-1 calibration by domain mix")
    ax.legend(fontsize=8)
    result = Result.judge(
        metrics={
            "avg_mixed": avg[0.8],
            "avg_pretrain_only": avg[0.0],
            "avg_reasoning_only": avg[1.0],
            "gain_over_best_single": avg[0.8] - max(avg[0.0], avg[1.0]),
            "em_by_ratio": {str(r): em[r] for r in ratios},
            "ppl_score_by_ratio": {str(r): ppl_score[r] for r in ratios},
            "pattern_pretrain_only_loses_most_em": em[0.0] <= min(em[0.8], em[1.0]),
            "pattern_reasoning_only_loses_most_ppl": ppl_score[1.0]
            <= min(ppl_score[0.0], ppl_score[0.8]),
            "final_block_mse_by_ratio": {str(r): float(np.mean(reports[r])) for r in ratios},
            "seeds": cfg.seeds_c1,
            "n_calib": cfg.n_calib,
            "calib_seq_len": cfg.calib_seq_len,
            **summary,
            "teacher": s["teacher_info"],
            "stage_seconds": {"setup": s["setup_clock"], "claim": clock.as_dict()},
        },
        baseline={
            "pretrain_only": {k: _mean(runs[0.0], k) for k in keys},
            "reasoning_only": {k: _mean(runs[1.0], k) for k in keys},
            "rtn_3bit": {k: rtn[k] for k in keys},
            "awq_3bit": {k: awq[k] for k in keys},
            "teacher_fp": {k: s["teacher_scores"][k] for k in keys},
        },
        required={
            "avg(0.8) > avg(0.0)": avg[0.8] > avg[0.0],
            "avg(0.8) >= avg(1.0) - 0.005": avg[0.8] >= avg[1.0] - 0.005,
        },
    )
    result = _teacher_gate(result, s["teacher_info"])
    return ctx.save_judged(fig, PAPER, "mixed-domain-calibration", result)


# ------------------------------------------------------------------ C2


def _c2_runs(ctx: Context, s: dict, seed: int, clock: StageClock) -> dict:
    cfg, tok, teacher, suite = s["cfg"], s["tok"], s["teacher"], s["suite"]
    reasoning, sft = _reasoning_texts(seed, cfg.n_texts), _sft_pairs(seed, cfg.n_texts)
    out, models = {}, {}
    calib = MixedDomainCalibration(
        reasoning, s["train"], 0.8, cfg.n_calib, cfg.calib_seq_len, tokenizer=tok, seed=seed
    )
    with clock("RTN"):
        rtn = rtn_quantize(teacher, 2, cfg.group_size)
    with clock("GPTQ"):
        gptq = gptq_quantize(teacher, calib.input_ids, 2, cfg.group_size)
    with clock("AWQ"):  # reported beside, not gated
        awq = awq_quantize(teacher, calib.input_ids, 2, cfg.group_size)
    with clock("evaluate"):
        out["RTN"] = _evaluate(suite, rtn, tok)
        out["GPTQ"] = _evaluate(suite, gptq, tok)
        out["AWQ"] = _evaluate(suite, awq, tok)
    ctx.report(0.3, "2-bit stage 1")
    qat_r = _qat(cfg, 2, seed, loss="R")
    with clock("stage 1 (calibration)"):
        calibrated = qat_r.quantize(teacher)
        qat_r.calibrate(calibrated, teacher, tok, reasoning, s["train"])
    with clock("evaluate"):
        out["C"] = _evaluate(suite, calibrated, tok)
    for name, loss, stage1 in (("C+S", "S", True), ("C+R", "R", True), ("R", "R", False)):
        ctx.report(0.5, f"2-bit stage 2 {name}")
        qat = _qat(cfg, 2, seed, loss=loss)
        with clock(f"stage 2 {name}"):
            model_q = copy.deepcopy(calibrated) if stage1 else qat.quantize(teacher)
            qat.finetune(model_q, teacher, sft, tok)
        with clock("evaluate"):
            out[name] = _evaluate(suite, model_q, tok)
        models[name] = model_q
    return {"scores": out, "models": models}


def _disk_bytes(teacher, model_q, windows) -> dict:
    """The packed 2-bit checkpoint vs the fp32 ``save_pretrained`` one, and the reload's
    fidelity, measured in this run."""
    with tempfile.TemporaryDirectory() as folder:
        fp_dir, q_dir = Path(folder) / "fp32", Path(folder) / "packed"
        teacher.save_pretrained(fp_dir, safe_serialization=True)
        save_quantized(model_q, q_dir)
        fp_bytes, q_bytes = folder_bytes(fp_dir), folder_bytes(q_dir)
        reloaded = load_quantized(q_dir, copy.deepcopy(teacher).cpu()).to(
            next(model_q.parameters()).device
        )
        x = windows[:2].to(next(model_q.parameters()).device)
        with torch.no_grad():
            diff = (reloaded(input_ids=x).logits - model_q(input_ids=x).logits).abs().max()
        same_codes = all(
            torch.equal(a.codes(), b.codes())
            for a, b in zip(quant_layers(model_q).values(), quant_layers(reloaded).values())
        )
    linear_params = storage_bits(model_q)["weights"]
    return {
        "fp32_checkpoint_bytes": fp_bytes,
        "packed_checkpoint_bytes": q_bytes,
        "checkpoint_ratio_fp32_over_packed": fp_bytes / q_bytes,
        "decoder_linear_fp32_bytes": 4 * linear_params,
        "decoder_linear_packed_bytes": storage_bits(model_q)["bits_per_weight"] * linear_params / 8,
        "bits_per_linear_weight": storage_bits(model_q)["bits_per_weight"],
        "reload_same_codes": same_codes,
        "reload_max_logit_diff": float(diff),
    }


@claim(
    paper=PAPER,
    name="two-bit-pipeline-vs-ptq",
    statement="At 2 bits, calibration + reward-rectification fine-tuning (C+R) keeps the "
    "reasoning ability that PTQ (RTN, GPTQ) destroys, and beats calibration + plain SFT (C+S) "
    "at the same stage-2 budget",
    paper_value="W2 Qwen3-8B: ours 55.1 avg vs GPTQ 4.6 / AWQ 4.0; ablation (2-bit Qwen3-1.7B) "
    "MATH-500 C+R 38.1 vs C+S 22.7 vs R 1.6 vs S 1.4",
    criterion="mean EM over k=3,4 (mean over seeds): EM(C+R) >= max(EM(RTN), EM(GPTQ)) + 0.20 "
    "AND EM(C+R) >= EM(C+S) + 0.02; teacher must pass its acceptance test",
    headline=("em_c_r", "em_c_s"),
    timeout_s={"smoke": 600, "quick": 1200, "full": 14400},
)
def two_bit_pipeline_vs_ptq(ctx: Context) -> Result:
    s = _setup(ctx)
    cfg = s["cfg"]
    per_seed = []
    last_models = {}
    clock = StageClock()
    for i in range(cfg.seeds_c2):
        run = _c2_runs(ctx, s, ctx.seed + i, clock)
        per_seed.append(run["scores"])
        last_models = run["models"]
    methods = ("RTN", "GPTQ", "AWQ", "C", "C+S", "C+R", "R")
    em = {m: float(np.mean([r[m]["em_mean"] for r in per_seed])) for m in methods}
    avg = {m: float(np.mean([r[m]["average"] for r in per_seed])) for m in methods}
    ctx.report(0.9, "packed export")
    with clock("packed export and reload"):
        disk = _disk_bytes(s["teacher"], last_models["C+R"], s["suite"].windows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(
        list(methods) + ["FP teacher"], [em[m] for m in methods] + [s["teacher_scores"]["em_mean"]]
    )
    ctx.mark_threshold(ax, max(em["RTN"], em["GPTQ"]) + 0.20, "C+R >= max(RTN, GPTQ) + 0.20")
    ctx.mark_threshold(ax, em["C+S"] + 0.02, "C+R >= C+S + 0.02", color="tab:red", linestyle=":")
    ax.legend(fontsize=8)
    ax.set_ylabel("mean EM (k=3, 4)")
    ax.set_title("2-bit: PTQ vs QAT variants")
    result = Result.judge(
        metrics={
            "em_c_r": em["C+R"],
            "em_c_s": em["C+S"],
            "em_c_only": em["C"],
            "em_r_only": em["R"],
            "average_c_r": avg["C+R"],
            "em_c_r_per_seed": [r["C+R"]["em_mean"] for r in per_seed],
            "em_c_s_per_seed": [r["C+S"]["em_mean"] for r in per_seed],
            "seeds": cfg.seeds_c2,
            "stage2_steps": cfg.ft_steps,
            "stage2_batch": cfg.ft_batch,
            **disk,
            "teacher": s["teacher_info"],
            "stage_seconds": {"setup": s["setup_clock"], "claim": clock.as_dict()},
        },
        baseline={
            "rtn_2bit": {"em": em["RTN"], "average": avg["RTN"]},
            "gptq_2bit": {"em": em["GPTQ"], "average": avg["GPTQ"]},
            "awq_2bit": {"em": em["AWQ"], "average": avg["AWQ"]},
            "calibration_plus_sft": {"em": em["C+S"], "average": avg["C+S"]},
            "teacher_fp": {
                "em": s["teacher_scores"]["em_mean"],
                "average": s["teacher_scores"]["average"],
            },
        },
        required={
            "EM(C+R) >= max(RTN, GPTQ) + 0.20": em["C+R"] >= max(em["RTN"], em["GPTQ"]) + 0.20,
            "EM(C+R) >= EM(C+S) + 0.02": em["C+R"] >= em["C+S"] + 0.02,
        },
    )
    result = _teacher_gate(result, s["teacher_info"])
    return ctx.save_judged(fig, PAPER, "two-bit-pipeline-vs-ptq", result)


# ------------------------------------------------------------------ C3


@claim(
    paper=PAPER,
    name="teacher-vs-self-reweighting",
    statement="Weighting the CE by the full-precision teacher's label probability is at least "
    "as good as the quantized student's own (plain DFT) weighting at 2 bits",
    paper_value="argued (the quantized student's probabilities are unreliable), not reported "
    "as a number",
    criterion="mean EM over k=3,4: EM(C+R, teacher weights) >= EM(C+R, student weights); "
    "full scale only (skipped at quick for the 3-minute budget)",
    headline=("em_teacher_weights", "em_self_weights"),
    timeout_s={"smoke": 600, "full": 14400},
)
def teacher_vs_self_reweighting(ctx: Context) -> Result:
    if ctx.scale is Scale.QUICK:
        return Result.skipped("full-scale claim (the quick budget holds C1 and C2 only)")
    s = _setup(ctx)
    cfg, tok, teacher, suite = s["cfg"], s["tok"], s["teacher"], s["suite"]
    scores = {"teacher": [], "student": []}
    for i in range(cfg.seeds_c2):
        seed = ctx.seed + i
        base_qat = _qat(cfg, 2, seed)
        calibrated = base_qat.quantize(teacher)
        base_qat.calibrate(
            calibrated, teacher, tok, _reasoning_texts(seed, cfg.n_texts), s["train"]
        )
        for source in scores:
            qat = _qat(cfg, 2, seed, weight_source=source)
            model_q = copy.deepcopy(calibrated)
            qat.finetune(model_q, teacher, _sft_pairs(seed, cfg.n_texts), tok)
            scores[source].append(_evaluate(suite, model_q, tok)["em_mean"])
    em_t, em_s = float(np.mean(scores["teacher"])), float(np.mean(scores["student"]))
    result = Result.judge(
        metrics={"em_teacher_weights": em_t, "em_self_weights": em_s, "teacher": s["teacher_info"]},
        baseline={"self_weights_dft": {"em": em_s, "per_seed": scores["student"]}},
        required={"EM(teacher weights) >= EM(self weights)": em_t >= em_s},
    )
    result = _teacher_gate(result, s["teacher_info"])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    labels = ["C+R, teacher w.", "C+R, own w. (DFT)", "FP teacher"]
    ax.bar(labels, [em_t, em_s, s["teacher_scores"]["em_mean"]], color=["C3", "C0", "C7"])
    for i, source in enumerate(scores):  # the seeds behind each mean
        ax.scatter(np.full(len(scores[source]), i), scores[source], s=12, c="k", zorder=3)
    ctx.mark_threshold(ax, em_s, "teacher weights need >= own weights")
    ax.set_ylabel("mean EM (k=3, 4)")
    ax.set_title("2-bit stage 2: where the CE weights come from")
    ax.tick_params(axis="x", labelsize=8)
    ax.legend(fontsize=8)
    return ctx.save_judged(fig, PAPER, "teacher-vs-self-reweighting", result)
