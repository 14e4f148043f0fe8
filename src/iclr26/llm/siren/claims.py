"""Claim checks of SIREN with the shared tiny Llama, on the synthetic ``topic_ratings`` data
(smoke and quick) and on MovieLens-100k at full scale (``ICLR26_SIREN_DATA=synthetic`` keeps
the synthetic data there).

C1: the interest sketch cuts prompt tokens against a raw-history prompt without losing
accuracy (three answer-only SFT models: recent only, sketch + recent, raw recent-30).
C2: hidden alignment brings answer-only decoding to CoT-level accuracy at a fraction of the
decode cost (cold start -> GRPO -> HA vs CE from the same init, with the KD, KD+CE and HA+CE
ablations reported beside; prompt and decode tokens per recommendation and batch-1 latency
through ``ctx.timeit``). C3: SIREN's answer-only model beats
biased matrix factorisation on the same test pairs. C4 (full scale; smoke runs its wiring): the
LoRA-target half of the paper's internalisation ablation, hidden alignment with LoRA on K/V
against Q/K/V, Q/V, all linear layers and the feed-forward layers. Trained stages are cached
on disk (quick and full scale) and shared between the checks."""

from __future__ import annotations

import copy
import functools
import os

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.claims import Context, Result, Scale, build_lock, claim
from iclr26.llm.siren.baselines import BiasedMF, UserMean, mae_rmse
from iclr26.llm.siren.data import movielens100k, topic_ratings
from iclr26.llm.siren.lm import (
    ao_digit_probs,
    cot_predict,
    encode_rows,
    forward_at_last,
    generate_cot,
    ratings_from_probs,
)
from iclr26.llm.siren.prompt import AO_SUFFIX, SketchPrompt, ao_answer, cot_target
from iclr26.llm.siren.sketch import InterestSketcher
from iclr26.llm.siren.stages import (
    GRPOStage,
    HiddenAlignment,
    alignment_loss,
    cold_start_sft,
    mean_sampled_reward,
)

SLUG = "siren"
MODEL_ENV = "ICLR26_SIREN_MODEL"  # full scale: a Hugging Face model id/path instead of "full"
DATA_ENV = "ICLR26_SIREN_DATA"  # full scale: "ml100k" (default, the paper's data) or "synthetic"
FORMATS = {
    "recent": SketchPrompt(10, with_sketch=False),
    "sketch": SketchPrompt(10),
    "raw30": SketchPrompt(raw_history=30),
}
# The internalisation ablations of the paper's comparison table, trained from the same stage-1
# model with the same steps and prompts as HA and CE, reported beside C2 (not gated); at smoke
# and full scale only (three more stage-2 trainings do not fit the quick budget).
ABLATIONS = ("kd", "kd+ce", "ha+ce")
# The LoRA-target half of that ablation (C4): hidden alignment with the same rank, steps and
# prompts, LoRA on these projections (Llama/Qwen module names). "kv" is the paper's choice and
# the HA model of C2 and C3; "all-linear" is every linear layer of the decoder blocks.
LORA_TARGET_SETS = {
    "kv": ("k_proj", "v_proj"),
    "qkv": ("q_proj", "k_proj", "v_proj"),
    "qv": ("q_proj", "v_proj"),
    "all-linear": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    "ffn": ("gate_proj", "up_proj", "down_proj"),
}
# stage-2 training prompts on which C4 measures the remaining alignment gap (1 - cos) per target
ALIGNMENT_PROBE = 64


def settings(ctx: Context) -> dict:
    return ctx.pick(
        smoke=dict(
            model="test", users=6, items=120, history=(8, 14), encoder="tfidf", sft=2,
            grpo=1, prompts=2, ha=2, ha_prompts=4, batch=2, max_new=8, test_n=6, latency_n=2, reward_n=2,
            seeds=(0,), ablations=ABLATIONS,
        ),
        quick=dict(
            model="quick", users=200, items=1000, history=(60, 300), encoder="minilm", sft=150,
            grpo=10, prompts=4, ha=100, ha_prompts=400, batch=4, max_new=40, test_n=100, latency_n=30,
            reward_n=8, seeds=(0,), ablations=(),
        ),
        full=dict(
            model=os.environ.get(MODEL_ENV, "full"), data=os.environ.get(DATA_ENV, "ml100k"),
            users=500, items=2500, history=(60, 300),
            encoder="minilm", sft=1000, grpo=300, prompts=8, ha=1000, ha_prompts=2000, batch=8, max_new=40,
            test_n=500,
            latency_n=100, reward_n=64, seeds=(0, 1, 2), ablations=ABLATIONS,
        ),
    )  # fmt: skip


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---------------------------------------------------------------- the shared pipeline
def _stage_path(ctx: Context, s: dict, seed: int, stage: str):
    """Where a trained stage is cached (``None`` at smoke scale: tests always train)."""
    if ctx.scale is Scale.SMOKE:
        return None
    from iclr26.models.tinylm.cache import cache_dir, stable_hash, version_tag

    # max_new at its default 40 stays out of the key, so keys made before it was a setting hold;
    # the ablation list only chooses which stages are evaluated (each has its own file), and the
    # retired flag it replaced ("kd", false at smoke and quick) keeps its place in the key so the
    # stages cached before the change still hold
    # (the same for the data at its default "synthetic", added after those keys were made)
    keyed = {
        k: v
        for k, v in s.items()
        if k != "ablations"
        and not (k == "max_new" and v == 40)
        and not (k == "data" and v == "synthetic")
    }
    keyed["kd"] = ctx.scale is Scale.FULL
    # v2: stage 0 computes its loss at the completion positions only and stage 2 runs right-
    # padded causal batches (the same losses; the trained weights differ at float level)
    key = stable_hash({"s": keyed, "seed": seed, "stage": stage, "v": 2, **version_tag()})
    folder = cache_dir() / "siren"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{stage}-{key}.pt"


def _cached_weights(path, model, build):
    """Load ``model``'s weights from ``path`` or build them (``build(model) -> model``). The
    build holds the entry's lock (``build_lock``): a second claim process asking for the same
    stage, e.g. C3 started beside C2, waits and loads it instead of training it again."""
    if path is None:
        return build(model).eval()
    if not path.exists():
        with build_lock(path):
            if not path.exists():
                model = build(model)
                tmp = path.with_suffix(".tmp")
                torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, tmp)
                tmp.replace(path)
                return model.eval()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.eval()


class Pipeline:
    """Data, sketcher, prompts and the trained stages of one (scale, seed), built lazily."""

    def __init__(self, ctx: Context, seed: int):
        from iclr26.models.tinylm import load_causal_lm

        self.ctx, self.seed, self.s = ctx, seed, settings(ctx)
        s = self.s
        source = V.check_choice(s.get("data", "synthetic"), DATA_ENV, ("synthetic", "ml100k"))
        if source == "ml100k":  # every user; the seed varies training and sampling only
            self.data = movielens100k()
        else:
            self.data = topic_ratings(seed, s["users"], s["items"], history=s["history"])
        d = self.data
        self.sketcher = InterestSketcher(20, 4.0, encoder=s["encoder"], seed=seed).fit(
            np.arange(d.n_items), d.item_text, embeddings=self._item_embeddings()
        )
        self.base, self.tok = load_causal_lm(s["model"])
        self.base = self.base.to(ctx.device).eval()
        self.train = d.targets["train"]
        self.test = d.targets["test"][: s["test_n"]]
        self.prompts = {
            split: {
                name: [
                    fmt(d.history_before(u, p), i, d.item_text, self.sketcher)
                    for u, i, _, p in rows
                ]
                for name, fmt in FORMATS.items()
            }
            for split, rows in (("train", self.train), ("test", self.test))
        }
        self.cot_targets = [
            cot_target(d.history_before(u, p), i, r, self.sketcher) for u, i, r, p in self.train
        ]
        n_stage2 = min(s["ha_prompts"], len(self.train))
        pick = np.random.default_rng(seed + 1).choice(len(self.train), n_stage2, replace=False)
        self.stage2 = np.sort(pick)  # the training prompts of stage 2 (HA, CE, KD alike)
        self._models: dict[str, torch.nn.Module] = {}
        self.info: dict[str, float] = {}

    def _item_embeddings(self) -> np.ndarray | None:
        """The catalogue's MiniLM embeddings, cached on disk beside the stages (keyed by the
        descriptions), so each claim process does not encode the catalogue again; ``None``
        (the sketcher embeds) at smoke scale and for TF-IDF."""
        if self.ctx.scale is Scale.SMOKE or self.s["encoder"] != "minilm":
            return None
        from iclr26.models.tinylm.cache import cache_dir, stable_hash

        texts = list(self.data.item_text)
        key = stable_hash({"texts": texts, "encoder": "all-MiniLM-L6-v2", "v": 2})
        path = cache_dir() / "siren" / f"item-embeddings-{key}.npy"
        if not path.exists():
            with build_lock(path):  # C1 and C2 start together: one of them encodes
                if not path.exists():
                    from iclr26.llm.siren.sketch import embed_descriptions

                    emb = embed_descriptions(texts, "minilm")
                    tmp = path.with_suffix(".tmp.npy")
                    np.save(tmp, emb)
                    tmp.replace(path)
                    return emb
        return np.load(path)

    def prompt_tokens(self, name: str, split: str = "test") -> float:
        return float(
            np.mean(
                [
                    len(self.tok.encode(p, add_special_tokens=False))
                    for p in self.prompts[split][name]
                ]
            )
        )

    def full_history_tokens(self) -> float:
        """Tokens of the prompt that lists the whole history before each test target (the
        full-history baseline; counted, not run: it exceeds the tiny model's context)."""
        d, out = self.data, []
        for u, i, _, p in self.test:
            fmt = SketchPrompt(raw_history=max(1, int(p)))
            out.append(
                len(
                    self.tok.encode(
                        fmt(d.history_before(u, p), i, d.item_text), add_special_tokens=False
                    )
                )
            )
        return float(np.mean(out))

    def _sft(self, name: str, completions: list[str]):
        s = self.s
        return cold_start_sft(
            copy.deepcopy(self.base), self.tok, self.prompts["train"][name.split(":")[0]],
            completions, s["sft"], 2e-3, s["batch"], self.seed,
            cache_name=None
            if self.ctx.scale is Scale.SMOKE
            else f"siren-{name.replace(':', '-')}-{s['model']}-v2",
        )  # fmt: skip

    def ao_model(self, name: str):
        """Answer-only SFT on gold ratings with prompt format ``name`` (claim C1)."""
        key = f"ao-{name}"
        if key not in self._models:
            gold = [ao_answer(int(r)) for r in self.train[:, 2]]
            self._models[key] = self._sft(f"{name}:ao", gold)
        return self._models[key]

    def cot_model(self):
        """Stage 0 (cold-start SFT on rule rationales) then stage 1 (GRPO)."""
        if "cot" not in self._models:
            s = self.s
            sft = self._models["cot-sft"] = self._sft("sketch:cot", self.cot_targets)
            prompts = self.prompts["train"]["sketch"]
            gold = self.train[:, 2]
            stage = GRPOStage(
                s["grpo"],
                prompts_per_step=s["prompts"],
                max_new_tokens=s["max_new"],
                seed=self.seed,
            )

            def build(model):
                stage.run(model, self.tok, prompts, gold)
                return model

            model = _cached_weights(
                _stage_path(self.ctx, s, self.seed, "grpo"), copy.deepcopy(sft), build
            )
            self._models["cot"] = model
        return self._models["cot"]

    def grpo_rewards(self) -> dict[str, float]:
        """Mean sampled reward of the stage-0 and stage-1 models on a fixed probe of training
        prompts (the sanity check that GRPO raised the reward; only C2 reports it)."""
        if "reward_after_grpo" not in self.info:
            s, after = self.s, self.cot_model()
            prompts, gold = self.prompts["train"]["sketch"], self.train[:, 2]
            probe = np.random.default_rng(self.seed).choice(
                len(prompts), s["reward_n"], replace=False
            )
            probe_p, probe_r = [prompts[i] for i in probe], gold[probe]
            for key, model in (("before", self._models["cot-sft"]), ("after", after)):
                self.info[f"reward_{key}_grpo"] = mean_sampled_reward(
                    model, self.tok, probe_p, probe_r, max_new_tokens=s["max_new"], seed=self.seed
                )
        return dict(self.info)

    def stage2_prompts(self) -> list[str]:
        return [self.prompts["train"]["sketch"][i] for i in self.stage2]

    def teacher_targets(self):
        if "targets" not in self.__dict__:
            hidden_alignment = HiddenAlignment(max_new_tokens=self.s["max_new"], seed=self.seed)
            self.targets = hidden_alignment.teacher_targets(
                self.cot_model(), self.tok, self.stage2_prompts()
            )
        return self.targets

    def internalised(self, objective: str, targets: str = "kv"):
        """Stage 2 from the stage-1 model with ``objective`` (``ha``, ``ce``, ``kd``...) and
        LoRA on the projections ``LORA_TARGET_SETS[targets]`` (K/V, the paper's choice, by
        default; its models keep the cache names they had before the target sets existed)."""
        key = f"int-{objective}" if targets == "kv" else f"int-{objective}-{targets}"
        if key not in self._models:
            s, teacher = self.s, self.cot_model()
            stage = HiddenAlignment(
                objective,
                target_modules=LORA_TARGET_SETS[targets],
                steps=s["ha"],
                batch_size=s["batch"],
                seed=self.seed,
            )

            def build(model):
                targets = None if objective == "ce" else self.teacher_targets()
                student = stage.fit(
                    teacher, self.tok, self.stage2_prompts(), self.train[self.stage2, 2], targets
                )
                return student.merge_and_unload()

            path = _stage_path(self.ctx, s, self.seed, key)
            self._models[key] = _cached_weights(path, copy.deepcopy(teacher), build)
        return self._models[key]

    @torch.no_grad()
    def alignment_gap(self, model, n: int = ALIGNMENT_PROBE, batch_size: int = 16) -> float:
        """The alignment loss (1/L) Σ_l (1 − cos) between ``model``'s answer-only states at
        ``<answer>`` and the teacher's CoT states, on the first ``n`` stage-2 prompts: what is
        left of the gap stage 2 minimises (0 = the CoT states are reached exactly)."""
        targets = self.teacher_targets()
        prompts = self.stage2_prompts()[:n]
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        model.eval()
        gaps = []
        for start in range(0, len(prompts), batch_size):
            rows = encode_rows(self.tok, prompts[start : start + batch_size], AO_SUFFIX)
            _, states = forward_at_last(model, rows, pad, hidden=True)
            teacher = targets["hidden"][start : start + len(rows)].to(states.device)
            gaps.append(float(alignment_loss(states, teacher)) * len(rows))
        return float(np.sum(gaps) / len(prompts))

    def ao_eval(self, model, name: str = "sketch") -> dict[str, float]:
        probs = ao_digit_probs(model, self.tok, self.prompts["test"][name])
        gold = self.test[:, 2].astype(float)
        pred = ratings_from_probs(probs)
        mae, rmse = mae_rmse(gold, pred)
        mae_ev, rmse_ev = mae_rmse(gold, ratings_from_probs(probs, expected=True))
        share = np.bincount(pred.astype(int) - 1, minlength=5) / len(pred)
        entropy = float(-(share[share > 0] * np.log(share[share > 0])).sum())
        return {"mae": mae, "rmse": rmse, "mae_expected": mae_ev, "rmse_expected": rmse_ev,
                "pred_entropy": entropy}  # fmt: skip


@functools.lru_cache(maxsize=4)
def _pipeline(scale: str, seed: int, device: str) -> Pipeline:
    return Pipeline(Context(scale=scale, seed=seed, device=device), seed)


def pipeline(ctx: Context, seed: int) -> Pipeline:
    """The shared pipeline of ``(scale, seed, device)``, built once per process."""
    return _pipeline(ctx.scale.value, int(seed), str(ctx.device))


def _claim_threads(ctx: Context):
    """One intra-op thread on the CPU: the tiny model's matrices are too small for a second
    thread to pay, and on a shared machine its spinning only burns CPU time (the timed calls are
    pinned to one thread by ``ctx.timeit`` in any case); a GPU run keeps the default."""
    from iclr26.models.tinylm.train import torch_threads

    return torch_threads(1 if str(ctx.device) == "cpu" else None)


# ---------------------------------------------------------------- C1
@claim(
    paper=SLUG,
    name="C1-sketch-saves-tokens",
    statement="The interest sketch plus 10 recent items needs far fewer prompt tokens than a "
    "raw-history prompt, without losing rating accuracy",
    paper_value="48.7% fewer input tokens than raw-history prompting; Books AO MAE 0.3536 "
    "(+sketch) vs 0.3535 (+more history), RMSE 0.7114 vs 0.7153",
    criterion="mean prompt tokens (sketch + recent-10) <= 0.65 x (raw recent-30) and "
    "MAE(sketch) <= MAE(raw-30) + 0.01 and RMSE(sketch) <= RMSE(raw-30) + 0.01 "
    "(answer-only SFT models, same steps and data order)",
    timeout_s={"smoke": 120, "quick": 3600, "full": 7200},
    headline=("tokens_ratio_sketch_over_raw30", "mae_sketch"),
)
def c1_sketch_saves_tokens(ctx: Context) -> Result:
    with _claim_threads(ctx):
        return _c1_sketch_saves_tokens(ctx)


def _c1_sketch_saves_tokens(ctx: Context) -> Result:
    pipe = pipeline(ctx, ctx.seed)
    ev, tokens = {}, {}
    for k, name in enumerate(FORMATS):
        ctx.report(k / 3, f"answer-only SFT ({name})")
        ev[name] = pipe.ao_eval(pipe.ao_model(name), name)
        tokens[name] = pipe.prompt_tokens(name)
    full_hist = pipe.full_history_tokens()
    ratio = tokens["sketch"] / tokens["raw30"]
    metrics = {
        "prompt_tokens_sketch": tokens["sketch"],
        "tokens_ratio_sketch_over_raw30": ratio,
        "tokens_reduction_vs_raw30": 1 - ratio,
        "tokens_reduction_vs_full_history": 1 - tokens["sketch"] / full_hist,
        "mae_sketch": ev["sketch"]["mae"],
        "rmse_sketch": ev["sketch"]["rmse"],
        "mae_sketch_minus_recent": ev["sketch"]["mae"] - ev["recent"]["mae"],
        **{f"sketch_{k}": v for k, v in ev["sketch"].items()},
        "test_pairs": len(pipe.test),
    }
    baseline = {
        "raw30": {"prompt_tokens": tokens["raw30"], **ev["raw30"]},
        "recent_only": {"prompt_tokens": tokens["recent"], **ev["recent"]},
        "full_history": {"prompt_tokens": full_hist, "note": "counted only; exceeds the context"},
    }
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={
            "sketch prompt <= 0.65 x raw-30 tokens": ratio <= 0.65,
            "MAE(sketch) <= MAE(raw30) + 0.01": ev["sketch"]["mae"] <= ev["raw30"]["mae"] + 0.01,
            "RMSE(sketch) <= RMSE(raw30) + 0.01": ev["sketch"]["rmse"]
            <= ev["raw30"]["rmse"] + 0.01,
        },
    )
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    names = list(FORMATS)
    axes[0].bar(names, [tokens[n] for n in names], color="tab:blue")
    ctx.mark_threshold(axes[0], 0.65 * tokens["raw30"], "sketch needs <= 0.65 x raw30")
    axes[0].set_ylabel("mean prompt tokens")
    for ax, key, color in ((axes[1], "mae", "tab:orange"), (axes[2], "rmse", "tab:green")):
        ax.bar(names, [ev[n][key] for n in names], color=color)
        ctx.mark_threshold(
            ax, ev["raw30"][key] + 0.01, f"sketch needs <= raw30 {key.upper()} + 0.01"
        )
        ax.set_ylabel(f"test {key.upper()} (answer-only)")
    for ax in axes:
        ax.legend(fontsize=7)
    return ctx.save_judged(fig, SLUG, "C1-sketch-saves-tokens", result)


# ---------------------------------------------------------------- C2
def _slug(objective: str) -> str:
    return objective.replace("+", "_")


def _latency(ctx: Context, fns_per_prompt, prompts) -> dict[str, tuple[float, float]]:
    """Median batch-1 wall and CPU seconds over ``prompts`` of each of ``fns_per_prompt``
    (name -> function of one prompt): each prompt is one ``ctx.timeit_interleaved`` round of
    every function (the first function goes first on even prompts, last on odd ones), so
    that the functions are timed over the same stretches of machine load."""
    for fn in fns_per_prompt.values():
        fn(prompts[0])  # warm-up
    runs = {name: [] for name in fns_per_prompt}
    for i, p in enumerate(prompts):
        names = list(fns_per_prompt)[:: 1 if i % 2 == 0 else -1]
        timings = ctx.timeit_interleaved(
            {name: (lambda f=fns_per_prompt[name], p=p: f(p)) for name in names},
            repeat=1,
            warmup=0,
        )
        for name, t in timings.items():
            runs[name].append((t.wall_s, t.cpu_s))
    return {
        name: (float(np.median([w for w, _ in r])), float(np.median([c for _, c in r])))
        for name, r in runs.items()
    }


@claim(
    paper=SLUG,
    name="C2-internalised-reasoning",
    statement="Hidden alignment lets the model answer directly (one decoded token) with "
    "CoT-level accuracy at a fraction of the decode cost",
    paper_value="SIREN-AO MAE 0.3503 vs GRPO-CoT 0.3521 (Books); CE 0.3521; 1 vs 238 generated "
    "tokens, 0.013 s vs 2.22 s per sample (>100x)",
    criterion="MAE(AO-HA) <= MAE(CoT) + 0.03 and MAE(AO-HA) <= MAE(AO-CE) + 0.01 and CoT "
    "decodes >= 10 tokens per sample vs 1 and median batch-1 latency CoT/AO >= 5",
    timeout_s={"smoke": 180, "quick": 3600, "full": 14400},
    headline=("mae_ao_ha", "latency_ratio_cot_over_ao"),
)
def c2_internalised_reasoning(ctx: Context) -> Result:
    with _claim_threads(ctx):
        return _c2_internalised_reasoning(ctx)


def _c2_internalised_reasoning(ctx: Context) -> Result:
    pipe, s = pipeline(ctx, ctx.seed), settings(ctx)
    ctx.report(0.0, "cold start + GRPO")
    teacher = pipe.cot_model()
    prompts = pipe.prompts["test"]["sketch"]
    gold = pipe.test[:, 2].astype(float)
    cot_pred, cot_tokens, cot_formed = cot_predict(teacher, pipe.tok, prompts, s["max_new"])
    cot_mae, cot_rmse = mae_rmse(gold, cot_pred)
    ctx.report(0.4, "hidden alignment and CE from the stage-1 model")
    ha = pipe.ao_eval(pipe.internalised("ha"))
    ce = pipe.ao_eval(pipe.internalised("ce"))
    ablations = {obj: pipe.ao_eval(pipe.internalised(obj)) for obj in s["ablations"]}
    rewards = pipe.grpo_rewards()
    ctx.report(0.8, "batch-1 latency")
    lat_prompts = prompts[: s["latency_n"]]
    ao_model = pipe.internalised("ha")
    latency = _latency(
        ctx,
        {
            "ao": lambda p: ao_digit_probs(ao_model, pipe.tok, [p]),
            "cot": lambda p: generate_cot(teacher, pipe.tok, [p], s["max_new"]),
        },
        lat_prompts,
    )
    (ao_wall, ao_cpu), (cot_wall, cot_cpu) = latency["ao"], latency["cot"]
    prompt_tokens = pipe.prompt_tokens("sketch")
    suffix = len(pipe.tok.encode(AO_SUFFIX, add_special_tokens=False))
    metrics = {
        "mae_ao_ha": ha["mae"],
        "rmse_ao_ha": ha["rmse"],
        **{f"ao_ha_{k}": v for k, v in ha.items()},
        "decode_tokens_ao": 1.0,
        "prompt_tokens_ao": prompt_tokens + suffix,
        "latency_ao_s": ao_wall,
        "latency_ao_cpu_s": ao_cpu,
        "latency_ratio_cot_over_ao": cot_wall / ao_wall,
        "decode_tokens_ratio_cot_over_ao": cot_tokens,
        "reward_before_grpo": rewards["reward_before_grpo"],
        "reward_after_grpo": rewards["reward_after_grpo"],
        "mae_ao_ce": ce["mae"],
        **{f"mae_ao_{_slug(obj)}": ev["mae"] for obj, ev in ablations.items()},
        "forward_passes_ao": 1.0,
        "forward_passes_cot": cot_tokens,
        "test_pairs": len(prompts),
        "latency_samples": len(lat_prompts),
    }
    baseline = {
        "cot": {"mae": cot_mae, "rmse": cot_rmse, "decode_tokens": cot_tokens,
                "prompt_tokens": prompt_tokens, "well_formed": cot_formed,
                "latency_s": cot_wall, "latency_cpu_s": cot_cpu},
        "ao_ce": ce,
        "full_history_prompt": {"prompt_tokens": pipe.full_history_tokens()},
        **{f"ao_{_slug(obj)}": ev for obj, ev in ablations.items()},
    }  # fmt: skip
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={
            "MAE(AO-HA) <= MAE(CoT) + 0.03": ha["mae"] <= cot_mae + 0.03,
            "MAE(AO-HA) <= MAE(AO-CE) + 0.01": ha["mae"] <= ce["mae"] + 0.01,
            "CoT decodes >= 10 tokens vs AO 1": cot_tokens >= 10,
            "latency CoT/AO >= 5": cot_wall / ao_wall >= 5,
        },
    )
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), gridspec_kw={"width_ratios": [3, 1.3, 1.3]})
    variants = {"CoT": cot_mae, "HA": ha["mae"], "CE": ce["mae"]}
    variants.update({obj.upper(): ev["mae"] for obj, ev in ablations.items()})
    axes[0].bar(list(variants), list(variants.values()), color="tab:green")
    axes[0].tick_params(axis="x", labelsize=7)
    ctx.mark_threshold(axes[0], cot_mae + 0.03, "HA needs <= CoT MAE + 0.03")
    ctx.mark_threshold(axes[0], ce["mae"] + 0.01, "HA needs <= CE MAE + 0.01", color="tab:red",
                       linestyle=":")  # fmt: skip
    axes[0].set_ylabel("test MAE")
    axes[1].bar(["CoT", "AO"], [cot_tokens, 1.0], color="tab:blue")
    ctx.mark_threshold(axes[1], 10, "CoT needs >= 10")
    axes[1].set_ylabel("decoded tokens per sample")
    axes[2].bar(["CoT", "AO"], [cot_wall * 1e3, ao_wall * 1e3], color="tab:purple")
    ctx.mark_threshold(axes[2], 5 * ao_wall * 1e3, "CoT needs >= 5 x AO")
    axes[2].set_ylabel("median batch-1 latency (ms)")
    for ax in axes:
        ax.legend(fontsize=7)
    return ctx.save_judged(fig, SLUG, "C2-internalised-reasoning", result)


# ---------------------------------------------------------------- C3
@claim(
    paper=SLUG,
    name="C3-beats-matrix-factorisation",
    statement="SIREN's answer-only model predicts ratings more accurately than a biased matrix "
    "factorisation trained on the same histories",
    paper_value="MAE 0.3510 vs MF (Books), 0.7603 vs 0.7995 best other (Movies); RMSE 0.6887 "
    "vs 0.7259 (MF)",
    criterion="MAE(SIREN-AO) < MAE(BiasedMF) on the same test pairs, mean over the scale's seeds",
    timeout_s={"smoke": 180, "quick": 3600, "full": 14400},
    headline=("mae_siren", "mae_biased_mf"),
)
def c3_beats_matrix_factorisation(ctx: Context) -> Result:
    with _claim_threads(ctx):
        return _c3_beats_matrix_factorisation(ctx)


def _c3_beats_matrix_factorisation(ctx: Context) -> Result:
    s = settings(ctx)
    per_seed = []
    for k, seed in enumerate(s["seeds"]):
        ctx.report(k / len(s["seeds"]), f"seed {seed}")
        pipe = pipeline(ctx, ctx.seed + seed)
        gold = pipe.test[:, 2].astype(float)
        pairs = pipe.test[:, :2]
        X, y = pipe.data.interactions_before("test")
        mf = BiasedMF(random_state=seed).fit(X, y)
        um = UserMean().fit(X, y)
        siren = pipe.ao_eval(pipe.internalised("ha"))
        mf_mae, mf_rmse = mae_rmse(gold, np.clip(mf.predict(pairs), 1, 5))
        um_mae, um_rmse = mae_rmse(gold, um.predict(pairs))
        per_seed.append((siren["mae"], siren["rmse"], mf_mae, mf_rmse, um_mae, um_rmse))
    arr = np.asarray(per_seed)
    mean = arr.mean(0)
    metrics = {
        "mae_siren": mean[0],
        "rmse_siren": mean[1],
        "mae_biased_mf": mean[2],
        "mae_gap_mf_minus_siren": mean[2] - mean[0],
        "seeds": len(per_seed),
        "mae_siren_per_seed": arr[:, 0].tolist(),
        "mae_mf_per_seed": arr[:, 2].tolist(),
    }
    baseline = {
        "biased_mf": {"mae": mean[2], "rmse": mean[3]},
        "user_mean": {"mae": mean[4], "rmse": mean[5]},
    }
    result = Result.judge(
        metrics=metrics,
        baseline=baseline,
        required={"MAE(SIREN-AO) < MAE(BiasedMF)": mean[0] < mean[2]},
    )
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(["SIREN-AO", "BiasedMF", "UserMean"], [mean[0], mean[2], mean[4]], color="tab:red")
    ctx.mark_threshold(ax, mean[2], "SIREN-AO needs < BiasedMF MAE")
    ax.set_ylabel(f"test MAE (mean over {len(per_seed)} seed(s))")
    ax.legend(fontsize=7)
    return ctx.save_judged(fig, SLUG, "C3-beats-matrix-factorisation", result)


# ---------------------------------------------------------------- C4
def lora_parameters(model: torch.nn.Module, target_modules, rank: int) -> int:
    """Trainable LoRA parameters of rank ``rank`` on the linear layers of ``model`` whose last
    name part is in ``target_modules``: r · (in + out) per adapted layer (a load-free count)."""
    return int(
        sum(
            rank * (module.in_features + module.out_features)
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and name.rsplit(".", 1)[-1] in target_modules
        )
    )


def _target_slug(name: str) -> str:
    return name.replace("-", "_")


@claim(
    paper=SLUG,
    name="C4-lora-target-ablation",
    statement="Hidden alignment internalises best with LoRA on the key/value projections: at "
    "equal rank, steps and prompts, LoRA on K/V reaches an answer-only MAE no worse than LoRA "
    "on Q/K/V, Q/V, all linear layers or the feed-forward layers",
    paper_value="KV is the best LoRA target of the internalisation ablation (KV > all-linear, "
    "QKV, QV, FFN); Theorem 1: a low-rank change of W_K and W_V suffices to first order",
    criterion="MAE(HA-KV) <= MAE(HA-t) + 0.01 for every t in {QKV, QV, all-linear, FFN} "
    "(answer-only, same test pairs, mean over the scale's seeds); inconclusive when every "
    "variant of every seed predicts one constant rating (prediction entropy 0), since MAE "
    "cannot rank the targets then. Full scale; skipped at quick (smoke runs it in the tests)",
    timeout_s={"smoke": 180, "quick": 60, "full": 28800},
    headline=("mae_ha_kv", "mae_best_other_target", "alignment_gap_kv"),
)
def c4_lora_target_ablation(ctx: Context) -> Result:
    if ctx.scale is Scale.QUICK:
        return Result.skipped(
            "a full-scale claim: four more stage-2 trainings exceed the quick budget "
            "(run with --scale full; the tests run it at smoke scale)"
        )
    with _claim_threads(ctx):
        return _c4_lora_target_ablation(ctx)


def _c4_lora_target_ablation(ctx: Context) -> Result:
    s = settings(ctx)
    others = [t for t in LORA_TARGET_SETS if t != "kv"]
    per_seed = []
    for k, seed in enumerate(s["seeds"]):
        pipe = pipeline(ctx, ctx.seed + seed)
        rank = HiddenAlignment().rank
        row = {}
        for j, name in enumerate(LORA_TARGET_SETS):
            ctx.report((k + j / len(LORA_TARGET_SETS)) / len(s["seeds"]), f"HA, LoRA on {name}")
            model = pipe.internalised("ha", name)
            row[name] = {
                **pipe.ao_eval(model),
                "alignment_gap": pipe.alignment_gap(model),
                "lora_parameters": lora_parameters(pipe.cot_model(), LORA_TARGET_SETS[name], rank),
            }
        per_seed.append(row)

    def mean(name: str, key: str) -> float:
        return float(np.mean([row[name][key] for row in per_seed]))

    mae = {t: mean(t, "mae") for t in LORA_TARGET_SETS}
    best_other = min(others, key=lambda t: mae[t])
    metrics = {
        "mae_ha_kv": mae["kv"],
        "rmse_ha_kv": mean("kv", "rmse"),
        "mae_expected_ha_kv": mean("kv", "mae_expected"),
        "alignment_gap_kv": mean("kv", "alignment_gap"),
        "lora_parameters_kv": per_seed[0]["kv"]["lora_parameters"],
        "mae_best_other_target": mae[best_other],
        "best_other_target": best_other,
        "mae_margin_best_other_minus_kv": mae[best_other] - mae["kv"],
        "pred_entropy_max": max(  # 0.0, not the -0.0 of an empty entropy sum
            0.0, float(max(row[t]["pred_entropy"] for row in per_seed for t in LORA_TARGET_SETS))
        ),
        "seeds": len(per_seed),
        "test_pairs": len(pipeline(ctx, ctx.seed + s["seeds"][0]).test),
        "alignment_probe_prompts": min(
            ALIGNMENT_PROBE, len(pipeline(ctx, ctx.seed + s["seeds"][0]).stage2)
        ),
        "per_seed": per_seed,
    }
    baseline = {
        f"ha_{_target_slug(t)}": {
            "targets": list(LORA_TARGET_SETS[t]),
            "mae": mae[t],
            "rmse": mean(t, "rmse"),
            "mae_expected": mean(t, "mae_expected"),
            "alignment_gap": mean(t, "alignment_gap"),
            "pred_entropy": mean(t, "pred_entropy"),
            "lora_parameters": per_seed[0][t]["lora_parameters"],
        }
        for t in others
    }
    required = {
        f"MAE(HA-KV) <= MAE(HA-{t.upper()}) + 0.01": mae["kv"] <= mae[t] + 0.01 for t in others
    }
    if metrics["pred_entropy_max"] == 0.0:
        result = Result.inconclusive(
            "every LoRA-target variant predicts one constant rating (prediction entropy 0): "
            "MAE cannot rank the targets at this scale",
            metrics,
            baseline=baseline,
            checks=required,
        )
    else:
        result = Result.judge(metrics=metrics, baseline=baseline, required=required)
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    names = list(LORA_TARGET_SETS)
    colors = ["tab:green" if t == "kv" else "tab:gray" for t in names]
    labels = [t.upper() if t != "all-linear" else "all-lin." for t in names]
    axes[0].bar(labels, [mae[t] for t in names], color=colors)
    ctx.mark_threshold(axes[0], mae[best_other] + 0.01, "KV needs <= best other MAE + 0.01")
    axes[0].set_ylabel("test MAE (answer-only, HA)")
    axes[1].bar(labels, [mean(t, "alignment_gap") for t in names], color=colors)
    axes[1].set_ylabel("alignment gap 1 - cos (reported)")
    axes[2].bar(labels, [per_seed[0][t]["lora_parameters"] for t in names], color=colors)
    axes[2].set_ylabel("trainable LoRA parameters")
    for ax in axes:
        ax.tick_params(axis="x", labelsize=7)
    axes[0].legend(fontsize=7)
    return ctx.save_judged(fig, SLUG, "C4-lora-target-ablation", result)
