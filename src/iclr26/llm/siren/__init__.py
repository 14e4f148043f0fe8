"""SIREN: token-efficient long-term interest sketching and internalised reasoning for LLM-based
rating prediction (ICLR 2026).

The catalogue is clustered once into named topics; a user's long history becomes a short
liked/disliked topic sketch placed before the N most recent interactions and the candidate.
The LLM learns to reason by GRPO on a rule reward, then the reasoning is internalised: LoRA on
the key/value projections aligns the answer-only hidden states at ``<answer>`` with those the
chain-of-thought model reaches after writing its rationale, so inference is one forward pass.
"""

from iclr26.llm.siren.baselines import BiasedMF, UserMean, mae_rmse
from iclr26.llm.siren.data import RatingData, movielens100k, topic_ratings
from iclr26.llm.siren.lm import (
    answer_positions,
    ao_digit_probs,
    cot_answer_rows,
    cot_predict,
    generate_cot,
    ratings_from_probs,
)
from iclr26.llm.siren.prompt import (
    SketchPrompt,
    ao_answer,
    cot_rationale,
    cot_target,
    parse_rating,
    predicted_rating,
    siren_reward,
)
from iclr26.llm.siren.recommender import SIRENRecommender
from iclr26.llm.siren.sketch import InterestSketcher, embed_descriptions
from iclr26.llm.siren.stages import (
    GRPOStage,
    HiddenAlignment,
    alignment_loss,
    cold_start_sft,
    mean_sampled_reward,
)

__all__ = [
    "BiasedMF",
    "GRPOStage",
    "HiddenAlignment",
    "InterestSketcher",
    "RatingData",
    "SIRENRecommender",
    "SketchPrompt",
    "UserMean",
    "alignment_loss",
    "answer_positions",
    "ao_answer",
    "ao_digit_probs",
    "cold_start_sft",
    "cot_answer_rows",
    "cot_predict",
    "cot_rationale",
    "cot_target",
    "embed_descriptions",
    "generate_cot",
    "mae_rmse",
    "mean_sampled_reward",
    "movielens100k",
    "parse_rating",
    "predicted_rating",
    "ratings_from_probs",
    "siren_reward",
    "topic_ratings",
]
