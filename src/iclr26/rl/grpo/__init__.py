"""Shared GRPO (group relative policy optimisation) for the LLM post-training rooms:
group-normalised advantages, the clipped surrogate with clip-higher and dual clip, the k3 KL to
a frozen reference, an entropy bonus, batched rollouts from any Hugging Face causal LM and a
framework-agnostic trainer with ``advantage_fn`` and ``batch_selector`` hooks."""

from .advantages import grpo_advantages, zero_advantage_fraction
from .losses import k3_kl, masked_mean, policy_loss, token_entropy
from .rollout import HFGenerator, Rollouts, left_pad, sample_rollouts, token_logprobs
from .trainer import GRPOConfig, GRPOTrainer, grpo_step, identity_selector, policy_update
from .trl_adapter import trl_trainer_with_selector

__all__ = [
    "GRPOConfig",
    "GRPOTrainer",
    "HFGenerator",
    "Rollouts",
    "grpo_advantages",
    "grpo_step",
    "identity_selector",
    "k3_kl",
    "left_pad",
    "masked_mean",
    "policy_loss",
    "policy_update",
    "sample_rollouts",
    "token_entropy",
    "token_logprobs",
    "trl_trainer_with_selector",
    "zero_advantage_fraction",
]
