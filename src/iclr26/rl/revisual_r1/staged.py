"""Staged Reinforcement Optimization (ReVisual-R1 section 3): a cold start by supervised
fine-tuning, multimodal RL with GRPO (+PAD), then text-only RL, on the tiny multimodal policy.

Stages (run in the order given):

- ``base``: stands in for the pretrained MLLM — SFT on scan -> digit captions and on problems
  answered directly (no reasoning trace), text and image;
- ``text_cold_start``: SFT on text-only chain-of-thought traces (the paper's cold start);
- ``mm_cold_start``: SFT on multimodal chain-of-thought traces (an ablation arm);
- ``mrl``: GRPO on image problems, PAD as the batch selector when ``use_pad``;
- ``trl``: GRPO on text problems.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.rl.grpo import GRPOConfig, GRPOTrainer
from iclr26.rl.revisual_r1.pad import PADSelector
from iclr26.rl.revisual_r1.policy import MLLMGenerator, TinyMLLM, sft
from iclr26.rl.revisual_r1.rewards import CompositeReward, accuracy_reward
from iclr26.rl.revisual_r1.tasks import MODALITIES, SPLITS, ArithmeticReasoningTasks

STAGES = ("base", "text_cold_start", "mm_cold_start", "mrl", "trl")


@dataclass
class StageBudget:
    """Sizes of each stage: SFT steps and batch, RL updates and prompts per update."""

    base_steps: int = 300
    cold_start_steps: int = 300
    sft_batch: int = 32
    sft_lr: float = 3e-3
    rl_updates: int = 40
    rl_prompts: int = 16
    max_new_tokens: int = 28

    def __post_init__(self) -> None:
        for name in ("base_steps", "cold_start_steps", "sft_batch", "rl_updates", "rl_prompts"):
            V.check_int(getattr(self, name), name, low=1)
        V.check_scalar(self.sft_lr, "sft_lr", low=0.0, low_open=True)
        V.check_int(self.max_new_tokens, "max_new_tokens", low=4)


BUDGETS = {
    "smoke": StageBudget(base_steps=30, cold_start_steps=30, rl_updates=2, rl_prompts=4),
    "quick": StageBudget(),
    "full": StageBudget(base_steps=1500, cold_start_steps=1500, rl_updates=300, rl_prompts=32),
}


def rl_config(**overrides) -> GRPOConfig:
    """The GRPO settings of the small analogue: the release's clip ranges, dual clip, KL and
    entropy schedule, G = 8, with a learning rate for a 0.1 M-parameter policy (1e-6 is for 7B)."""
    base = dict(group_size=8, lr=1e-3, kl_coef=1e-2, entropy_coef=0.0)
    base.update(overrides)
    return GRPOConfig(**base)


@dataclass
class StageLog:
    stage: str
    losses: list[float] = field(default_factory=list)
    rl: list[dict[str, float]] = field(default_factory=list)
    pad: list[dict[str, float]] = field(default_factory=list)


class StagedTrainer:
    """Run the staged recipe on a policy over :class:`ArithmeticReasoningTasks`.

    ``use_pad`` puts :class:`PADSelector` (``pad`` settings) behind the multimodal RL stage
    (and the text RL stage); ``length_budget`` adds the efficient-length reward. ``rl`` holds
    GRPO overrides. Every RL stage trains on ``rl_prompts`` fresh problems per update."""

    def __init__(
        self,
        policy: TinyMLLM | None = None,
        tasks: ArithmeticReasoningTasks | None = None,
        stages: Sequence[str] = ("base", "text_cold_start", "mrl", "trl"),
        use_pad: bool = True,
        pad: dict | None = None,
        length_budget: float | None = None,
        rl: dict | None = None,
        seed: int = 0,
    ):
        self.policy = policy if policy is not None else TinyMLLM(seed=seed)
        if not isinstance(self.policy, TinyMLLM):
            raise TypeError(f"policy must be a TinyMLLM, got {type(self.policy).__name__}")
        self.tasks = tasks if tasks is not None else ArithmeticReasoningTasks(seed=seed)
        if not isinstance(self.tasks, ArithmeticReasoningTasks):
            raise TypeError("tasks must be an ArithmeticReasoningTasks")
        if isinstance(stages, str) or len(stages) == 0:
            raise ValueError("stages must be a non-empty list of stage names")
        self.stages = [V.check_choice(s, "stages", STAGES) for s in stages]
        self.use_pad = V.check_bool(use_pad, "use_pad")
        self.pad_kwargs = dict(pad or {})
        PADSelector(**self.pad_kwargs)  # validates the settings now
        self.reward = CompositeReward(
            weights={"accuracy": 1.0, "length": 0.05} if length_budget else {"accuracy": 1.0},
            length_budget=length_budget,
        )
        self.rl_overrides = dict(rl or {})
        self.seed = V.check_int(seed, "seed", low=0)
        rl_config(**self.rl_overrides)  # validates
        self.rng = np.random.default_rng(seed)
        self.logs: list[StageLog] = []

    # ------------------------------------------------------------------ stages
    def _sft_stage(self, name: str, budget: StageBudget) -> StageLog:
        n = budget.sft_batch * 8
        t = self.tasks
        if name == "base":
            examples = [(p, p.direct_answer) for p in t.captions(n, rng=self.rng)]
            for modality in MODALITIES:
                examples += [
                    (p, p.direct_answer) for p in t.sample(n, modality=modality, rng=self.rng)
                ]
            steps = budget.base_steps
        else:
            modality = "text" if name == "text_cold_start" else "image"
            examples = [
                (p, p.chain_of_thought) for p in t.sample(2 * n, modality=modality, rng=self.rng)
            ]
            steps = budget.cold_start_steps
        losses = sft(
            self.policy,
            examples,
            steps,
            budget.sft_lr,
            budget.sft_batch,
            seed=int(self.rng.integers(2**31)),
        )
        return StageLog(name, losses=losses)

    def make_rl_trainer(
        self, budget: StageBudget, use_pad: bool | None = None, seed: int | None = None
    ) -> GRPOTrainer:
        """A GRPO trainer on the current policy (PAD as selector when ``use_pad``)."""
        use_pad = self.use_pad if use_pad is None else use_pad
        selector = PADSelector(**self.pad_kwargs) if use_pad else None
        cfg = rl_config(**self.rl_overrides)
        if seed is not None:
            cfg = replace(cfg, seed=seed)
        gen = MLLMGenerator(self.policy, max_new_tokens=budget.max_new_tokens)
        return GRPOTrainer(self.policy, self.reward, gen, cfg, batch_selector=selector)

    def rl_stage(
        self, name: str, budget: StageBudget, trainer: GRPOTrainer | None = None, callback=None
    ) -> StageLog:
        modality = "image" if name == "mrl" else "text"
        trainer = trainer or self.make_rl_trainer(budget, seed=int(self.rng.integers(2**31)))
        log = StageLog(name)
        for update in range(budget.rl_updates):
            problems = self.tasks.sample(budget.rl_prompts, modality=modality, rng=self.rng)
            log.rl.append(trainer.step(problems))
            if trainer.batch_selector is not None and hasattr(trainer.batch_selector, "log"):
                log.pad.append(trainer.batch_selector.log[-1])
            if callback is not None:
                callback(update, trainer)
        self.policy.eval()
        return log

    def run(self, budget: str | StageBudget = "quick") -> list[StageLog]:
        """Run every stage in order; returns (and keeps) one log per stage."""
        if isinstance(budget, str):
            budget = BUDGETS[V.check_choice(budget, "budget", tuple(BUDGETS))]
        if not isinstance(budget, StageBudget):
            raise TypeError("budget must be a StageBudget or one of " + ", ".join(BUDGETS))
        for name in self.stages:
            if name in ("mrl", "trl"):
                log = self.rl_stage(name, budget)
            else:
                log = self._sft_stage(name, budget)
            self.logs.append(log)
        return self.logs

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(
        self,
        split: str = "test",
        modality: str = "image",
        n: int = 500,
        seed: int = 12345,
        max_new_tokens: int = 28,
    ) -> float:
        """Greedy-decoding accuracy on ``n`` fixed problems of ``split``/``modality``."""
        return evaluate(self.policy, self.tasks, split, modality, n, seed, max_new_tokens)


@torch.no_grad()
def evaluate(
    policy: TinyMLLM,
    tasks: ArithmeticReasoningTasks,
    split: str = "test",
    modality: str = "image",
    n: int = 500,
    seed: int = 12345,
    max_new_tokens: int = 28,
    batch: int = 250,
) -> float:
    """Greedy accuracy of ``policy`` on ``n`` problems drawn with ``seed`` (same set per seed)."""
    if not isinstance(policy, TinyMLLM):
        raise TypeError(f"policy must be a TinyMLLM, got {type(policy).__name__}")
    V.check_choice(split, "split", SPLITS)
    V.check_choice(modality, "modality", MODALITIES)
    n = V.check_int(n, "n", low=1)
    problems = tasks.sample(n, split=split, modality=modality, rng=np.random.default_rng(seed))
    gen = MLLMGenerator(policy, max_new_tokens=max_new_tokens)
    hits = 0.0
    for i in range(0, n, batch):
        chunk = problems[i : i + batch]
        out = gen(chunk, 1, greedy=True)
        hits += float(accuracy_reward(chunk, out.completions).sum())
    return hits / n
