"""Bad-input cases of the absignsgd room (block sign descent, majority vote, baselines)."""

import numpy as np
import torch
from torch import nn

from iclr26.optim.absignsgd import (
    ABSignSGD,
    ABSignSGDMV,
    BlockAdam,
    BlockSchedule,
    SignSGD,
    depth_costs,
    find_blocks,
    majority_vote,
    memory_report,
    pack_signs,
    unpack_signs,
)

NAN, INF = float("nan"), float("inf")


class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList(nn.Linear(3, 3) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _params():
    return [nn.Parameter(torch.zeros(3))]


CASES = [
    # depth_bias = NaN made every clock NaN, so argmin trained block 0 forever
    ("ABSignSGD", "nan", lambda: ABSignSGD(_Stack(), depth_bias=NAN), ValueError, "depth_bias"),
    ("ABSignSGD", "range", lambda: ABSignSGD(_Stack(), depth_bias=-1.0), ValueError, "depth_bias"),
    ("ABSignSGD", "nan", lambda: ABSignSGD(_Stack(), lr=NAN), ValueError, "lr"),
    ("ABSignSGD", "inf", lambda: ABSignSGD(_Stack(), lr=INF), ValueError, "lr"),
    ("ABSignSGD", "nan", lambda: ABSignSGD(_Stack(), weight_decay=NAN), ValueError, "weight_decay"),
    ("ABSignSGD", "other", lambda: ABSignSGD(_Stack(), schedule="random"), ValueError, "schedule"),
    ("ABSignSGD", "empty", lambda: ABSignSGD(blocks=[]), ValueError, "blocks"),
    ("ABSignSGD", "type", lambda: ABSignSGD("model"), TypeError, "model"),
    (
        "ABSignSGD",
        "range",
        lambda: ABSignSGD(_Stack(), max_staleness=2),
        ValueError,
        "max_staleness",
    ),
    ("BlockAdam", "nan", lambda: BlockAdam(_Stack(), lr=NAN), ValueError, "lr"),
    ("BlockAdam", "range", lambda: BlockAdam(_Stack(), switch_every=0), ValueError, "switch_every"),
    ("BlockAdam", "range", lambda: BlockAdam(_Stack(), betas=(0.9, 1.5)), ValueError, "betas"),
    ("BlockAdam", "nan", lambda: BlockAdam(_Stack(), eps=NAN), ValueError, "eps"),
    ("SignSGD", "nan", lambda: SignSGD(_params(), lr=NAN), ValueError, "lr"),
    ("SignSGD", "range", lambda: SignSGD(_params(), weight_decay=-1.0), ValueError, "weight_decay"),
    ("SignSGD", "empty", lambda: SignSGD([]), ValueError, "param"),
    ("BlockSchedule", "nan", lambda: BlockSchedule(4, depth_bias=NAN), ValueError, "depth_bias"),
    ("BlockSchedule", "range", lambda: BlockSchedule(0), ValueError, "n_blocks"),
    ("BlockSchedule", "type", lambda: BlockSchedule(2.5), TypeError, "n_blocks"),
    ("BlockSchedule", "other", lambda: BlockSchedule(3, "zigzag"), ValueError, "schedule"),
    (
        "BlockSchedule",
        "range",
        lambda: BlockSchedule(3, lambda k, s: 7).next(),
        ValueError,
        "schedule returned block 7",
    ),
    ("depth_costs", "nan", lambda: depth_costs(4, NAN), ValueError, "depth_bias"),
    ("depth_costs", "range", lambda: depth_costs(0, 1.0), ValueError, "n_blocks"),
    ("find_blocks", "other", lambda: find_blocks(nn.Linear(2, 2)), ValueError, "transformer"),
    ("find_blocks", "type", lambda: find_blocks([1, 2]), TypeError, "model"),
    ("pack_signs", "nan", lambda: pack_signs(torch.tensor([1.0, NAN])), ValueError, "grad"),
    ("pack_signs", "empty", lambda: pack_signs(torch.zeros(0)), ValueError, "grad"),
    ("pack_signs", "type", lambda: pack_signs([1.0, -1.0]), TypeError, "grad"),
    (
        "unpack_signs",
        "shape",
        lambda: unpack_signs(np.zeros(1, dtype=np.uint8), 9),
        ValueError,
        "packed",
    ),
    (
        "unpack_signs",
        "range",
        lambda: unpack_signs(np.zeros(2, dtype=np.uint8), 0),
        ValueError,
        "n",
    ),
    (
        "unpack_signs",
        "dtype",
        lambda: unpack_signs(np.zeros(2, dtype=np.float64), 4),
        TypeError,
        "packed",
    ),
    ("majority_vote", "empty", lambda: majority_vote([], 4), ValueError, "packed"),
    (
        "majority_vote",
        "nan",
        lambda: majority_vote([np.zeros(1, dtype=np.uint8)], NAN),
        TypeError,
        "n",
    ),
    (
        "ABSignSGDMV",
        "range",
        lambda: ABSignSGDMV(_Stack, n_agents=0),
        ValueError,
        "n_agents",
    ),
    ("ABSignSGDMV", "nan", lambda: ABSignSGDMV(_Stack, lr=NAN), ValueError, "lr"),
    (
        "ABSignSGDMV",
        "nan",
        lambda: ABSignSGDMV(_Stack, depth_bias=NAN),
        ValueError,
        "depth_bias",
    ),
    ("ABSignSGDMV", "other", lambda: ABSignSGDMV(_Stack, backend="mpi"), ValueError, "backend"),
    ("ABSignSGDMV", "type", lambda: ABSignSGDMV(_Stack()), TypeError, "model_factory"),
    (
        "ABSignSGDMV",
        "shape",
        lambda: ABSignSGDMV(_Stack, n_agents=2, loss_fn=nn.functional.mse_loss).step(
            [(torch.zeros(2, 3), torch.zeros(2, 3))]
        ),
        ValueError,
        "agent_batches",
    ),
    ("memory_report", "type", lambda: memory_report(_Stack(), "adam"), TypeError, "optimizer"),
    (
        "memory_report",
        "type",
        lambda: memory_report("model", SignSGD(_params())),
        TypeError,
        "model",
    ),
]

EXEMPT: dict[str, str] = {}
