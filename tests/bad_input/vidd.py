"""Bad-input cases for the VIDD room (read by tests/framework/test_bad_input.py)."""

import numpy as np

from iclr26.generative.vidd import (
    BestOfN,
    DDPOTrainer,
    MaskedDiffusionLM,
    MotifReward,
    RayRewardPool,
    RewardOracle,
    RWMLETrainer,
    StandardFTTrainer,
    VIDDTrainer,
    decode,
    encode,
    kmer_correlation,
    make_dna_dataset,
    normalise_rewards,
    pairwise_diversity,
    soft_value_weights,
)

NAN = float("nan")
M = MaskedDiffusionLM(4, 8, d=8, layers=1, heads=2, seed=0)
SEQS = np.zeros((4, 8), dtype=np.int64)


def count_a(seqs):
    return np.array([s.count("A") for s in seqs], dtype=float)


def _nan_reward(seqs):
    return np.full(len(seqs), np.nan)


def _short_reward(seqs):
    return np.ones(len(seqs) - 1)


CASES = [
    ("MaskedDiffusionLM", "range", lambda: MaskedDiffusionLM(vocab=1), ValueError, "vocab"),
    ("MaskedDiffusionLM", "range", lambda: MaskedDiffusionLM(d=30, heads=4), ValueError, "d"),
    ("MaskedDiffusionLM", "range", lambda: MaskedDiffusionLM(dropout=NAN), ValueError, "dropout"),
    (
        "MaskedDiffusionLM",
        "shape",
        lambda: M.fit(np.zeros((4, 5), int), steps=1),
        ValueError,
        "seqs",
    ),
    ("MaskedDiffusionLM", "range", lambda: M.fit(SEQS + 4, steps=1), ValueError, "seqs"),
    ("MaskedDiffusionLM", "dtype", lambda: M.fit(SEQS + 0.5, steps=1), TypeError, "seqs"),
    ("MaskedDiffusionLM", "empty", lambda: M.fit(SEQS[:0], steps=1), ValueError, "seqs"),
    ("MaskedDiffusionLM", "range", lambda: M.fit(SEQS, steps=0), ValueError, "steps"),
    ("MaskedDiffusionLM", "range", lambda: M.fit(SEQS, steps=1, lr=NAN), ValueError, "lr"),
    ("MaskedDiffusionLM", "range", lambda: M.sample(0), ValueError, "n"),
    ("MaskedDiffusionLM", "range", lambda: M.sample(2, steps=0), ValueError, "steps"),
    ("MaskedDiffusionLM", "nan", lambda: M.elbo(SEQS * NAN), ValueError, "x0"),
    (
        "MaskedDiffusionLM",
        "other",
        lambda: MaskedDiffusionLM.from_pretrained("/nonexistent.pt"),
        FileNotFoundError,
        "path",
    ),
    ("VIDDTrainer", "type", lambda: VIDDTrainer(object(), count_a), TypeError, "pretrained"),
    ("VIDDTrainer", "type", lambda: VIDDTrainer(M, "not callable"), TypeError, "reward_fn"),
    ("VIDDTrainer", "range", lambda: VIDDTrainer(M, count_a, alpha=0.0), ValueError, "alpha"),
    ("VIDDTrainer", "range", lambda: VIDDTrainer(M, count_a, alpha=NAN), ValueError, "alpha"),
    (
        "VIDDTrainer",
        "range",
        lambda: VIDDTrainer(M, count_a, rollin_student_prob=1.5),
        ValueError,
        "rollin_student_prob",
    ),
    (
        "VIDDTrainer",
        "range",
        lambda: VIDDTrainer(M, count_a, teacher_update_interval=0),
        ValueError,
        "teacher_update_interval",
    ),
    (
        "VIDDTrainer",
        "range",
        lambda: VIDDTrainer(M, count_a, reward_norm="zscore"),
        ValueError,
        "reward_norm",
    ),
    ("VIDDTrainer", "range", lambda: VIDDTrainer(M, count_a, lr=-1.0), ValueError, "lr"),
    (
        "VIDDTrainer",
        "range",
        lambda: VIDDTrainer(M, count_a, batch_size=1),
        ValueError,
        "batch_size",
    ),
    (
        "VIDDTrainer",
        "type",
        lambda: VIDDTrainer(M, count_a, use_value_xt=1),
        TypeError,
        "use_value_xt",
    ),
    ("VIDDTrainer", "range", lambda: VIDDTrainer(M, count_a).fit(), ValueError, "epochs or budget"),
    ("VIDDTrainer", "range", lambda: VIDDTrainer(M, count_a).fit(budget=0), ValueError, "budget"),
    (
        "VIDDTrainer",
        "nan",
        lambda: VIDDTrainer(M, _nan_reward, batch_size=2, steps=2).fit(epochs=1),
        ValueError,
        "reward_fn",
    ),
    (
        "VIDDTrainer",
        "shape",
        lambda: VIDDTrainer(M, _short_reward, batch_size=2, steps=2).fit(epochs=1),
        ValueError,
        "reward_fn",
    ),
    (
        "StandardFTTrainer",
        "type",
        lambda: StandardFTTrainer(M, count_a, rollin_student_prob=1.0),
        TypeError,
        "rollin_student_prob",
    ),
    (
        "StandardFTTrainer",
        "range",
        lambda: StandardFTTrainer(M, count_a, alpha=-1),
        ValueError,
        "alpha",
    ),
    ("DDPOTrainer", "range", lambda: DDPOTrainer(M, count_a, clip=0.0), ValueError, "clip"),
    (
        "DDPOTrainer",
        "range",
        lambda: DDPOTrainer(M, count_a, ppo_epochs=0),
        ValueError,
        "ppo_epochs",
    ),
    (
        "DDPOTrainer",
        "nan",
        lambda: DDPOTrainer(M, _nan_reward, batch_size=2, steps=2).fit(epochs=1),
        ValueError,
        "reward_fn",
    ),
    ("RWMLETrainer", "range", lambda: RWMLETrainer(M, count_a, steps=0), ValueError, "steps"),
    (
        "RWMLETrainer",
        "shape",
        lambda: RWMLETrainer(M, _short_reward, batch_size=2, steps=2).fit(epochs=1),
        ValueError,
        "reward_fn",
    ),
    ("BestOfN", "range", lambda: BestOfN(M, count_a, n=0), ValueError, "n"),
    ("BestOfN", "range", lambda: BestOfN(M, count_a).sample(0), ValueError, "num"),
    (
        "BestOfN",
        "nan",
        lambda: BestOfN(M, _nan_reward, n=2, steps=2).sample(2),
        ValueError,
        "reward_fn",
    ),
    ("RewardOracle", "type", lambda: RewardOracle(3), TypeError, "reward_fn"),
    ("RewardOracle", "nan", lambda: RewardOracle(_nan_reward)(SEQS), ValueError, "reward_fn"),
    ("RewardOracle", "shape", lambda: RewardOracle(_short_reward)(SEQS), ValueError, "reward_fn"),
    (
        "RewardOracle",
        "type",
        lambda: RewardOracle(lambda s: ["x"] * len(s))(SEQS),
        ValueError,
        "reward_fn",
    ),
    ("RayRewardPool", "type", lambda: RayRewardPool(None), TypeError, "reward_fn"),
    (
        "RayRewardPool",
        "range",
        lambda: RayRewardPool(count_a, num_actors=0),
        ValueError,
        "num_actors",
    ),
    ("MotifReward", "range", lambda: MotifReward(threshold=NAN), ValueError, "threshold"),
    ("MotifReward", "range", lambda: MotifReward(gap_low=5, gap_high=2), ValueError, "gap_high"),
    ("MotifReward", "other", lambda: MotifReward()(["ACGN" * 2]), ValueError, "seqs"),
    ("MotifReward", "shape", lambda: MotifReward()(np.zeros((2, 4), int)), ValueError, "seqs"),
    ("MotifReward", "range", lambda: MotifReward()(np.full((2, 8), 5)), ValueError, "seqs"),
    ("make_dna_dataset", "range", lambda: make_dna_dataset(0), ValueError, "n"),
    ("make_dna_dataset", "range", lambda: make_dna_dataset(10, gc=1.0), ValueError, "gc"),
    ("make_dna_dataset", "range", lambda: make_dna_dataset(10, length=3), ValueError, "length"),
    ("encode", "empty", lambda: encode([]), ValueError, "seqs"),
    ("encode", "other", lambda: encode(["ACGT", "ACG"]), ValueError, "seqs"),
    ("encode", "type", lambda: encode("ACGT"), TypeError, "seqs"),
    ("decode", "range", lambda: decode(np.full((2, 3), 4)), ValueError, "tokens"),
    ("decode", "dtype", lambda: decode(np.full((2, 3), 1.5)), TypeError, "tokens"),
    ("decode", "shape", lambda: decode(np.zeros(3, int)), ValueError, "tokens"),
    ("kmer_correlation", "nan", lambda: kmer_correlation(SEQS * NAN, SEQS), ValueError, "samples"),
    ("kmer_correlation", "range", lambda: kmer_correlation(SEQS, SEQS, k=20), ValueError, "k"),
    ("kmer_correlation", "empty", lambda: kmer_correlation(SEQS[:0], SEQS), ValueError, "samples"),
    ("pairwise_diversity", "shape", lambda: pairwise_diversity(SEQS[:1]), ValueError, "samples"),
    ("pairwise_diversity", "inf", lambda: pairwise_diversity(SEQS + np.inf), ValueError, "samples"),
    ("normalise_rewards", "nan", lambda: normalise_rewards([1.0, NAN]), ValueError, "values"),
    (
        "normalise_rewards",
        "range",
        lambda: normalise_rewards([1.0, 2.0], mode="max"),
        ValueError,
        "mode",
    ),
    ("normalise_rewards", "empty", lambda: normalise_rewards([]), ValueError, "values"),
    (
        "soft_value_weights",
        "range",
        lambda: soft_value_weights([1.0], alpha=0),
        ValueError,
        "alpha",
    ),
    ("soft_value_weights", "inf", lambda: soft_value_weights([np.inf], alpha=1), ValueError, "v_s"),
    (
        "soft_value_weights",
        "shape",
        lambda: soft_value_weights([1.0, 2.0], 1, v_t=[1.0]),
        ValueError,
        "v_t",
    ),
    (
        "soft_value_weights",
        "range",
        lambda: soft_value_weights([1.0], 1, clip_quantile=1.5),
        ValueError,
        "clip_quantile",
    ),
]

EXEMPT = {"ALPHABET": "a constant string, not a callable"}
