"""Learned transformer nonlinearities: spline GeLU/softmax replacements, two-stage search."""

from iclr26.nn.learned_nonlinearities.hf import load_patched_pretrained, patch_hf_activations
from iclr26.nn.learned_nonlinearities.procedure import (
    History,
    compatibility_matrix,
    discover_nonlinearities,
    steps_to_reach,
    train_with_frozen,
)
from iclr26.nn.learned_nonlinearities.spline import ATTENTION_KINDS, LinearSpline, Nonlinearities
from iclr26.nn.learned_nonlinearities.tasks import (
    AdditionTask,
    CopyTask,
    TextTask,
    masked_loss,
    prose_task,
    text_task,
)
from iclr26.nn.learned_nonlinearities.transformer import SplineTransformer

__all__ = [
    "ATTENTION_KINDS",
    "AdditionTask",
    "CopyTask",
    "History",
    "LinearSpline",
    "Nonlinearities",
    "SplineTransformer",
    "TextTask",
    "compatibility_matrix",
    "discover_nonlinearities",
    "load_patched_pretrained",
    "masked_loss",
    "patch_hf_activations",
    "prose_task",
    "text_task",
    "steps_to_reach",
    "train_with_frozen",
]
