"""Behaviour-matching RNNs for cognitive errors: a rate RNN whose response-epoch dynamics are
the reverse process of a denoising diffusion model, trained on surrogate swap-model behaviour
of a delayed-recall working-memory task so that its noisy dynamics sample the whole response
distribution (swap errors included); moment-matching and task-optimal RNNs as baselines; the
mixture-model, distance, subspace and decoder analyses."""

from .analysis import (
    decoder_accuracy,
    energy_distance,
    item_subspace_angles,
    mixture_model_fit,
    mixture_responsibilities,
    multimodality_fraction,
)
from .diffusion import DiffusionSchedule, effective_noise, forward_trajectory, reverse_sample
from .network import BehaviourRNN, time_embedding
from .surrogate import SwapSurrogate, responses_to_angles
from .task import Trials, VWMTask, check_angles, von_mises_code, wrap_angle
from .training import DiffusionTrainer, MomentMatchingTrainer, TaskOptimalTrainer, evaluate_samples

__all__ = [
    "BehaviourRNN",
    "DiffusionSchedule",
    "DiffusionTrainer",
    "MomentMatchingTrainer",
    "SwapSurrogate",
    "TaskOptimalTrainer",
    "Trials",
    "VWMTask",
    "check_angles",
    "decoder_accuracy",
    "effective_noise",
    "energy_distance",
    "evaluate_samples",
    "forward_trajectory",
    "item_subspace_angles",
    "mixture_model_fit",
    "mixture_responsibilities",
    "multimodality_fraction",
    "responses_to_angles",
    "reverse_sample",
    "time_embedding",
    "von_mises_code",
    "wrap_angle",
]
