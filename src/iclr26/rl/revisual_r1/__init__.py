"""ReVisual-R1: a text-only cold start, then multimodal RL with GRPO whose batches are
re-sampled by Prioritized Advantage Distillation (PAD) against gradient stagnation, then a
text-only RL stage; here on a tiny multimodal Llama over handwritten-digit arithmetic."""

from .pad import PADSelector, efficient_length_reward, pad_select, sequence_scores
from .policy import CharVocab, MLLMGenerator, TinyMLLM, sft, stack_images
from .rewards import RELEASE_WEIGHTS, CompositeReward, accuracy_reward, parse_answer
from .staged import BUDGETS, STAGES, StageBudget, StagedTrainer, StageLog, evaluate, rl_config
from .tasks import ArithmeticReasoningTasks, Problem

__all__ = [
    "BUDGETS",
    "RELEASE_WEIGHTS",
    "STAGES",
    "ArithmeticReasoningTasks",
    "CharVocab",
    "CompositeReward",
    "MLLMGenerator",
    "PADSelector",
    "Problem",
    "StageBudget",
    "StageLog",
    "StagedTrainer",
    "TinyMLLM",
    "accuracy_reward",
    "efficient_length_reward",
    "evaluate",
    "pad_select",
    "parse_answer",
    "rl_config",
    "sequence_scores",
    "sft",
    "stack_images",
]
