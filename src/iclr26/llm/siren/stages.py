"""SIREN's training stages on a causal LM.

Stage 0 (``cold_start_sft``, this package's addition): SFT on rule-written rationales, so a
tiny model learns the output format. Stage 1 (``GRPOStage``): explicit reasoning by GRPO with
the rule reward ``siren_reward`` through the shared trainer (group-normalised advantages,
PPO-clip, k3 KL to the stage-0 model). Stage 2 (``HiddenAlignment``): internalisation. LoRA on
the key/value projections of a copy of the stage-1 model is trained so that its decoder-layer
states at ``<answer>`` in answer-only mode match, in cosine, the frozen stage-1 model's states
at ``<answer>`` after it wrote its rationale:
``L_align = (1/L) sum_l (1 - cos(sg[h^l_CoT(q)], h^l_AO(q)))`` (the paper's Theorem 1 says a
low-rank change of W_K and W_V suffices to first order). ``objective`` also gives the paper's
ablations: ``ce`` (answer-only SFT), ``kd`` (KL to the teacher's CoT-mode digit distribution),
``kd+ce`` and ``ha+ce``.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Sequence

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.siren.lm import (
    _check_prompts,
    _last_logits_only,
    _prompt_pass_last_logits,
    cot_answer_states,
    digit_token_ids,
    encode_rows,
    forward_at_last,
    supervised_positions_loss,
)
from iclr26.llm.siren.prompt import AO_SUFFIX, siren_reward
from iclr26.rl.grpo import GRPOConfig, GRPOTrainer, HFGenerator

OBJECTIVES = ("ha", "ce", "kd", "kd+ce", "ha+ce")


def cold_start_sft(
    model,
    tok,
    prompts: Sequence[str],
    completions: Sequence[str],
    steps: int = 150,
    lr: float = 2e-3,
    batch_size: int = 8,
    seed: int = 0,
    cache_name: str | None = None,
):
    """Stage 0: completion-only SFT on ``(prompt, completion)`` pairs with the shared
    ``finetune_lm`` (cached under ``cache_name`` when given). Returns the model (eval mode).
    The loss is the shared loop's, computed under ``lm.supervised_positions_loss`` (the
    vocabulary projection only at the completion positions, where the loss is)."""
    from iclr26.models.tinylm import finetune_lm

    prompts = _check_prompts(prompts)
    if isinstance(completions, str) or len(completions) != len(prompts):
        raise ValueError(f"completions must have one string per prompt ({len(prompts)})")
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    V.check_int(seed, "seed", low=0)
    pairs = [(p, str(c)) for p, c in zip(prompts, completions, strict=True)]
    with supervised_positions_loss(model):
        return finetune_lm(
            model, tok, pairs, steps=steps, lr=lr, batch=batch_size, seed=seed,
            cache_name=cache_name, threads=None,
        )  # fmt: skip


class _ResponseLogits(torch.nn.Module):
    """A policy for the shared GRPO trainer whose teacher-forced passes project onto the
    vocabulary only the last ``tail[0]`` positions of the rollout batch (the last prompt
    position and the response: all that the trainer's ``token_logprobs`` reads, as
    ``logits[:, prompt_len - 1 : -1]``); the other positions of the returned ``[N, W, V]``
    logits are NaN, so a reader of them would fail loudly. ``tail`` is a one-element list set
    from each rollout batch (``None``: every position). Parameters, train/eval mode and
    gradients are the wrapped model's."""

    def __init__(self, model: torch.nn.Module, tail: list):
        super().__init__()
        self.model = model
        self.tail = tail

    def forward(self, input_ids, attention_mask=None, position_ids=None, **kwargs):
        k = self.tail[0]
        width = input_ids.shape[1]
        if kwargs or k is None or not 0 < k < width or not _last_logits_only(self.model):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                **kwargs,
            )  # fmt: skip
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            logits_to_keep=int(k),
        )
        tail = out.logits
        unread = tail.new_full((tail.shape[0], width - k, tail.shape[2]), float("nan"))
        return types.SimpleNamespace(logits=torch.cat([unread, tail], 1))


class GRPOStage:
    """Stage 1: GRPO on the rule reward with the shared :class:`~iclr26.rl.grpo.GRPOTrainer`.

    Per step ``prompts_per_step`` prompts, ``group_size`` samples each at ``temperature``, at
    most ``max_new_tokens`` new tokens; symmetric clip ``clip_eps``, KL coefficient ``kl_coef``
    to the model as it was when :meth:`run` started (the stage-0 model), no entropy bonus."""

    def __init__(
        self,
        steps: int = 20,
        group_size: int = 4,
        prompts_per_step: int = 8,
        max_new_tokens: int = 40,
        temperature: float = 1.0,
        clip_eps: float = 0.2,
        kl_coef: float = 0.02,
        lr: float = 1e-4,
        seed: int = 0,
    ):
        self.steps = V.check_int(steps, "steps", low=1)
        self.group_size = V.check_int(group_size, "group_size", low=2)
        self.prompts_per_step = V.check_int(prompts_per_step, "prompts_per_step", low=1)
        self.max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        self.clip_eps = V.check_scalar(clip_eps, "clip_eps", low=0.0, high=1.0, high_open=True)
        self.kl_coef = V.check_scalar(kl_coef, "kl_coef", low=0.0)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.seed = V.check_int(seed, "seed", low=0)
        self.history: list[dict[str, float]] = []

    def config(self) -> GRPOConfig:
        return GRPOConfig(
            group_size=self.group_size,
            lr=self.lr,
            clip_low=self.clip_eps,
            clip_high=self.clip_eps,
            dual_clip=None,
            kl_coef=self.kl_coef,
            entropy_coef=0.0,
            seed=self.seed,
        )

    def run(self, model, tok, prompts: Sequence[str], ratings) -> torch.nn.Module:
        """Train ``model`` in place on prompts drawn in a seeded order; ``self.history`` holds
        each update's diagnostics (``reward_mean`` among them)."""
        prompts = _check_prompts(prompts)
        gold = V.check_array(ratings, "ratings", ndim=1, n_rows=len(prompts), low=1, high=5)
        # the sampler's prompt pass projects only its last position onto the vocabulary (as
        # ``generate`` does)
        gen = HFGenerator(
            _prompt_pass_last_logits(model), tok, self.max_new_tokens, self.temperature, top_p=1.0
        )

        # the trainer's log-probability passes (policy, frozen stage-0 reference) project only
        # the response positions (and the last prompt one) onto the vocabulary
        tail: list = [None]
        policy = _ResponseLogits(model, tail)
        reference = _ResponseLogits(copy.deepcopy(model), tail)

        def generate(batch, n, generator=None):
            gen.generator = generator
            ro = gen(batch, n)
            tail[0] = ro.input_ids.shape[1] - ro.prompt_len + 1
            return ro

        def reward(_prompts, completions, rating):
            return siren_reward(completions, rating)

        trainer = GRPOTrainer(policy, reward, generate, self.config(), ref_policy=reference)
        rng = np.random.default_rng(self.seed)
        for _ in range(self.steps):
            pick = rng.choice(
                len(prompts), size=min(self.prompts_per_step, len(prompts)), replace=False
            )
            self.history.append(
                trainer.step([prompts[i] for i in pick], rating=[float(gold[i]) for i in pick])
            )
        model.eval()
        return model


def mean_sampled_reward(
    model, tok, prompts, ratings, n: int = 4, max_new_tokens: int = 40, seed: int = 0
) -> float:
    """Mean ``siren_reward`` of ``n`` samples (temperature 1) per prompt: the quantity GRPO
    raises, measured on a fixed prompt set before and after the stage."""
    prompts = _check_prompts(prompts)
    gold = V.check_array(ratings, "ratings", ndim=1, n_rows=len(prompts), low=1, high=5)
    gen = HFGenerator(_prompt_pass_last_logits(model), tok, max_new_tokens, 1.0, top_p=1.0)
    gen.generator = torch.Generator().manual_seed(int(seed))
    ro = gen(prompts, int(n))
    return float(np.mean(siren_reward(ro.completions, np.repeat(gold, int(n)))))


def alignment_loss(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor) -> torch.Tensor:
    """``mean_batch (1/L) sum_l (1 - cos(sg[h_teacher^l], h_student^l))`` over ``[B, L, d]``."""
    V.check_tensor(student_hidden, "student_hidden", ndim=3, floating=True)
    V.check_tensor(
        teacher_hidden, "teacher_hidden", shape=tuple(student_hidden.shape), floating=True
    )
    cos = torch.nn.functional.cosine_similarity(student_hidden, teacher_hidden.detach(), dim=-1)
    return (1.0 - cos).mean()


class HiddenAlignment:
    """Stage 2: LoRA (peft) on ``target_modules`` of a copy of the frozen stage-1 teacher,
    trained by ``objective`` (``"ha"`` = hidden alignment; see the module docstring) with AdamW
    for ``steps`` minibatches of ``batch_size``. :meth:`teacher_targets` records the teacher's
    greedy CoT, its layer states and digit distribution at ``<answer>`` once (cache them)."""

    def __init__(
        self,
        objective: str = "ha",
        rank: int = 8,
        alpha: float = 16.0,
        target_modules: Sequence[str] = ("k_proj", "v_proj"),
        lr: float = 5e-4,
        steps: int = 150,
        batch_size: int = 8,
        max_new_tokens: int = 40,
        seed: int = 0,
    ):
        self.objective = V.check_choice(objective, "objective", OBJECTIVES)
        self.rank = V.check_int(rank, "rank", low=1)
        self.alpha = V.check_scalar(alpha, "alpha", low=0.0, low_open=True)
        if isinstance(target_modules, str) or not target_modules:
            raise ValueError("target_modules must be a non-empty sequence of module names")
        self.target_modules = tuple(str(m) for m in target_modules)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.steps = V.check_int(steps, "steps", low=1)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        self.losses: list[float] = []

    @torch.no_grad()
    def teacher_targets(self, teacher, tok, prompts: Sequence[str], batch_size: int = 16) -> dict:
        """``{"hidden": [n, L, d], "probs": [n, 5], "cot_tokens": [n]}`` of the teacher at the
        ``<answer>`` token of ``x_CoT`` (prompt + its own greedy rationale + ``<answer>``)."""
        prompts = _check_prompts(prompts)
        teacher.eval()
        gen, hidden, logits = cot_answer_states(
            teacher, tok, prompts, self.max_new_tokens, batch_size
        )
        return {
            "hidden": hidden,
            "probs": torch.softmax(logits[:, digit_token_ids(tok)], -1),
            "cot_tokens": torch.tensor([len(g) for g in gen], dtype=torch.float32),
        }

    def student(self, teacher):
        """A copy of ``teacher`` with fresh LoRA adapters; only they are trainable."""
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            r=self.rank,
            lora_alpha=self.alpha,
            target_modules=list(self.target_modules),
            lora_dropout=0.0,
            bias="none",
        )
        torch.manual_seed(self.seed)
        return get_peft_model(copy.deepcopy(teacher), config)

    def loss(self, student, tok, prompts, ratings, targets, index) -> torch.Tensor:
        """The objective on the rows ``index`` of ``prompts`` (AO inputs)."""
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        rows = encode_rows(tok, [prompts[i] for i in index], AO_SUFFIX)
        need_hidden = "ha" in self.objective
        logits, states = forward_at_last(student, rows, pad, hidden=need_hidden)
        digit_logp = torch.log_softmax(logits[:, digit_token_ids(tok)], -1)
        total = logits.new_zeros(())
        if need_hidden:
            total = total + alignment_loss(states, targets["hidden"][index].to(states.device))
        if "kd" in self.objective:
            p_t = targets["probs"][index].to(logits.device)
            total = total + (p_t * (torch.log(p_t.clamp_min(1e-12)) - digit_logp)).sum(-1).mean()
        if "ce" in self.objective:
            gold = torch.as_tensor(
                np.asarray(ratings)[index] - 1, dtype=torch.long, device=logits.device
            )
            answer_ids = torch.as_tensor(digit_token_ids(tok), device=logits.device)[gold]
            total = total + torch.nn.functional.cross_entropy(logits, answer_ids)
        return total

    def fit(self, teacher, tok, prompts: Sequence[str], ratings=None, targets: dict | None = None):
        """Train the LoRA student; returns it (a peft model in eval mode)."""
        prompts = _check_prompts(prompts)
        if "ce" in self.objective:
            if ratings is None:
                raise ValueError(f"ratings are required for objective {self.objective!r}")
            ratings = V.check_array(ratings, "ratings", ndim=1, n_rows=len(prompts), low=1, high=5)
            ratings = ratings.astype(np.int64)
        if targets is None and self.objective != "ce":
            targets = self.teacher_targets(teacher, tok, prompts)
        if targets is not None:
            for key in ("hidden", "probs"):
                if key not in targets or len(targets[key]) != len(prompts):
                    raise ValueError(f"targets[{key!r}] must have one row per prompt")
                V.check_tensor(targets[key], f"targets[{key!r}]", floating=True)
        student = self.student(teacher)
        params = [p for p in student.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=0.0)
        rng = np.random.default_rng(self.seed)
        student.train()
        for _ in range(self.steps):
            index = rng.choice(len(prompts), size=min(self.batch_size, len(prompts)), replace=False)
            loss = self.loss(student, tok, prompts, ratings, targets, index)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            self.losses.append(float(loss.detach()))
        student.eval()
        return student
