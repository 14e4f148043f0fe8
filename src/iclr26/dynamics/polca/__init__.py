"""POLCA: per-example loss changes allocated to a low-rank Hessian basis of the training
subspace, clustered to reveal skills and hidden breakthroughs."""

from .allocation import directional_derivatives, polca, projected_loss
from .analysis import (
    breakthrough_time,
    cluster_trajectories,
    filter_oscillatory,
    flat_after,
    hidden_clusters,
    max_homogeneity,
)
from .basis import build_hessian_basis, lanczos_top, make_hvp, model_loss_fn
from .checkpoints import CheckpointRecorder, ParamSpace, hf_checkpoint_callback
from .experiment import addition_token_losses, run_addition_experiment, train_addition
from .model import ExplicitSelfAttention, TinyTransformer
from .task import AdditionTask

__all__ = [
    "AdditionTask",
    "CheckpointRecorder",
    "ExplicitSelfAttention",
    "ParamSpace",
    "TinyTransformer",
    "addition_token_losses",
    "breakthrough_time",
    "build_hessian_basis",
    "cluster_trajectories",
    "directional_derivatives",
    "filter_oscillatory",
    "flat_after",
    "hf_checkpoint_callback",
    "hidden_clusters",
    "lanczos_top",
    "make_hvp",
    "max_homogeneity",
    "model_loss_fn",
    "polca",
    "projected_loss",
    "run_addition_experiment",
    "train_addition",
]
