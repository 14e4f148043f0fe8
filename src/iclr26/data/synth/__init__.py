"""Seeded generators of the synthetic text tasks that the tiny-LM rooms share, in one place so
that tests, claim checks and command-line tools build the same data:

- :mod:`~iclr26.data.synth.arithmetic`: modular-arithmetic chain-of-thought problems
  (``arithmetic_problems``, ``parse_answer``; QAT's reasoning domain);
- :mod:`~iclr26.data.synth.passages`: passage-conflict QA with relevance and conflict examples
  and held-out paraphrases (``training_examples``, ``conflict_prompts``; SEKA);
- :mod:`~iclr26.data.synth.toxicity`: identity-term toxicity comments with subgroup labels and
  a biased training split (``identity_toxicity``; task-arithmetic fairness);
- :mod:`~iclr26.data.synth.ratings`: topic-structured item ratings with long user histories,
  split leave-last-out (``topic_ratings``; SIREN).

The rooms re-export what they use, so ``iclr26.llm.seka.tasks.conflict_prompts`` and
``iclr26.data.synth.conflict_prompts`` are the same function.
"""

from iclr26.data.synth.arithmetic import ArithmeticProblem, arithmetic_problems, parse_answer
from iclr26.data.synth.passages import (
    ConflictPrompt,
    conflict_example,
    conflict_prompts,
    relevance_example,
    training_examples,
)
from iclr26.data.synth.ratings import RatingData, topic_ratings
from iclr26.data.synth.toxicity import IdentityToxicity, Split, identity_toxicity

__all__ = [
    "ArithmeticProblem",
    "ConflictPrompt",
    "IdentityToxicity",
    "RatingData",
    "Split",
    "arithmetic_problems",
    "conflict_example",
    "conflict_prompts",
    "identity_toxicity",
    "parse_answer",
    "relevance_example",
    "topic_ratings",
    "training_examples",
]
