"""NRGPT: an energy-based GPT whose forward pass explores (or descends) a per-token energy."""

from iclr26.nn.nrgpt import listops
from iclr26.nn.nrgpt.data import CharCorpus, char_corpus
from iclr26.nn.nrgpt.energy import (
    attention_energy,
    attention_energy_grad,
    ff1_energy,
    ff1_energy_grad,
    ff2w_energy,
    ff2w_energy_grad,
)
from iclr26.nn.nrgpt.model import GPT, NRGPT, GPTRecParallel, NRGPTConfig, n_params
from iclr26.nn.nrgpt.training import listops_accuracy, train_listops, train_lm

__all__ = [
    "GPT",
    "NRGPT",
    "CharCorpus",
    "GPTRecParallel",
    "NRGPTConfig",
    "attention_energy",
    "attention_energy_grad",
    "char_corpus",
    "ff1_energy",
    "ff1_energy_grad",
    "ff2w_energy",
    "ff2w_energy_grad",
    "listops",
    "listops_accuracy",
    "n_params",
    "train_listops",
    "train_lm",
]
