"""VIDD: value-guided iterative distillation for reward-guided fine-tuning of (masked
discrete) diffusion models, with the baselines best-of-N, DDPO, RW-MLE and standard
fine-tuning, DDPP-LB (``DDPPTrainer`` with its ``LogPartitionNet``), a synthetic regulatory-DNA
task and reward-query counting."""

from iclr26.generative.vidd.diffusion import MaskedDiffusionLM
from iclr26.generative.vidd.dna import (
    ALPHABET,
    MotifReward,
    RayRewardPool,
    RewardOracle,
    decode,
    encode,
    kmer_correlation,
    make_dna_dataset,
    pairwise_diversity,
)
from iclr26.generative.vidd.trainers import (
    BestOfN,
    DDPOTrainer,
    DDPPTrainer,
    LogPartitionNet,
    RWMLETrainer,
    StandardFTTrainer,
    VIDDTrainer,
    normalise_rewards,
    soft_value_weights,
)

__all__ = [
    "ALPHABET",
    "BestOfN",
    "DDPOTrainer",
    "DDPPTrainer",
    "LogPartitionNet",
    "MaskedDiffusionLM",
    "MotifReward",
    "RWMLETrainer",
    "RayRewardPool",
    "RewardOracle",
    "StandardFTTrainer",
    "VIDDTrainer",
    "decode",
    "encode",
    "kmer_correlation",
    "make_dna_dataset",
    "normalise_rewards",
    "pairwise_diversity",
    "soft_value_weights",
]
