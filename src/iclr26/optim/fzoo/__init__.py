"""FZOO (fast zeroth-order optimizer) with the MeZO baseline, both driven by a loss closure."""

from iclr26.optim.fzoo.batched import ModelClosure, batched_losses, make_closure, model_loss
from iclr26.optim.fzoo.optimizers import FZOO, MeZO, ZerothOrderOptimizer, flat_update_direction
from iclr26.optim.fzoo.perturb import direction_vector, directions
from iclr26.optim.fzoo.training import zo_fit

__all__ = [
    "FZOO",
    "MeZO",
    "ModelClosure",
    "ZerothOrderOptimizer",
    "batched_losses",
    "direction_vector",
    "directions",
    "flat_update_direction",
    "make_closure",
    "model_loss",
    "zo_fit",
]
