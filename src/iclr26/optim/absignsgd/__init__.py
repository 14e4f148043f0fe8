"""ABSignSGD: arbitrary-order block sign descent, its majority-vote variant and baselines."""

from iclr26.optim.absignsgd.blocks import find_blocks
from iclr26.optim.absignsgd.majority import ABSignSGDMV, majority_vote, pack_signs, unpack_signs
from iclr26.optim.absignsgd.optimizers import ABSignSGD, BlockAdam, SignSGD, memory_report
from iclr26.optim.absignsgd.schedules import BlockSchedule, depth_costs

__all__ = [
    "ABSignSGD",
    "ABSignSGDMV",
    "BlockAdam",
    "BlockSchedule",
    "SignSGD",
    "depth_costs",
    "find_blocks",
    "majority_vote",
    "memory_report",
    "pack_signs",
    "unpack_signs",
]
