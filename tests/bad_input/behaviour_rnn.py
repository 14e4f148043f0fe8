"""Bad-input cases of the behaviour RNN room (tiny trials; each call fails up front)."""

import numpy as np
import torch

from iclr26.neuro.behaviour_rnn import (
    BehaviourRNN,
    DiffusionSchedule,
    DiffusionTrainer,
    MomentMatchingTrainer,
    SwapSurrogate,
    TaskOptimalTrainer,
    Trials,
    VWMTask,
    check_angles,
    decoder_accuracy,
    effective_noise,
    energy_distance,
    evaluate_samples,
    forward_trajectory,
    item_subspace_angles,
    mixture_model_fit,
    mixture_responsibilities,
    multimodality_fraction,
    responses_to_angles,
    reverse_sample,
    time_embedding,
    von_mises_code,
    wrap_angle,
)

NAN, INF = float("nan"), float("inf")
TASK = VWMTask(epochs=(1, 1, 1, 1), T=4)
TR = TASK.make_trials(4, seed=0)
RNN = BehaviourRNN(n_units=4, input_size=TASK.input_size, T=4, hidden=4)
SUR = SwapSurrogate()
SCHED = DiffusionSchedule((0.01, 0.3), 4)
ANG = np.array([0.1, -0.2, 0.3, 1.0])
ANG_NAN = np.array([0.1, NAN, 0.3, 1.0])
OUTSIDE = np.array([0.1, 3.5, 0.3, 1.0])  # beyond pi
SAMPLES = np.ones((4, 3, 2))
SAMPLES_NAN = SAMPLES.copy()
SAMPLES_NAN[0, 0, 0] = NAN
Z = np.zeros((4, 2))
CUED = np.zeros(4, dtype=int)
IN = torch.zeros(4, 4, TASK.input_size)
STATES = np.random.default_rng(0).normal(size=(8, 3))
STATES_NAN = STATES.copy()
STATES_NAN[1, 1] = NAN
COL = np.linspace(-3, 3, 8)


def _eps(x, t):
    return x


CASES = [
    # task and behaviour data
    ("Trials", "range", lambda: Trials(Z, Z + 4.0, CUED, IN), ValueError, "report"),
    ("Trials", "range", lambda: Trials(Z - np.pi, Z, CUED, IN), ValueError, "probe"),
    ("Trials", "shape", lambda: Trials(Z, np.zeros((5, 2)), CUED, IN), ValueError, "report has 5"),
    ("Trials", "nan", lambda: Trials(Z * NAN, Z, CUED, IN), ValueError, "probe"),
    ("Trials", "range", lambda: Trials(Z, Z, CUED + 2, IN), ValueError, "cued"),
    ("Trials", "shape", lambda: Trials(Z, Z, CUED, IN[:3]), ValueError, "inputs"),
    ("VWMTask", "range", lambda: VWMTask(n_items=0), ValueError, "n_items"),
    ("VWMTask", "range", lambda: VWMTask(kappa=NAN), ValueError, "kappa"),
    ("VWMTask", "shape", lambda: VWMTask(epochs=(1, 2)), ValueError, "epochs"),
    ("VWMTask", "other", lambda: VWMTask(input_mode="sum"), ValueError, "input_mode"),
    ("VWMTask", "range", lambda: TASK.make_trials(0), ValueError, "n"),
    ("VWMTask", "range", lambda: TASK.trials_from(Z, Z + 4.0, CUED), ValueError, "report"),
    ("VWMTask", "shape", lambda: TASK.trials_from(Z, Z, CUED[:3]), ValueError, "cued has 3"),
    ("check_angles", "range", lambda: check_angles(OUTSIDE, "a"), ValueError, "a must hold"),
    ("check_angles", "nan", lambda: check_angles(ANG_NAN, "a"), ValueError, "a contains NaN"),
    ("check_angles", "empty", lambda: check_angles(np.array([]), "a"), ValueError, "a is empty"),
    ("wrap_angle", "nan", lambda: wrap_angle(ANG_NAN), ValueError, "angle contains NaN"),
    ("wrap_angle", "inf", lambda: wrap_angle(torch.tensor([INF])), ValueError, "angle contains"),
    ("von_mises_code", "range", lambda: von_mises_code(OUTSIDE), ValueError, "angles"),
    ("von_mises_code", "range", lambda: von_mises_code(ANG, n_tuning=0), ValueError, "n_tuning"),
    ("von_mises_code", "range", lambda: von_mises_code(ANG, kappa=-1), ValueError, "kappa"),
    # surrogate
    ("SwapSurrogate", "range", lambda: SwapSurrogate(p_correct=1.5), ValueError, "p_correct"),
    ("SwapSurrogate", "range", lambda: SwapSurrogate(radius=NAN), ValueError, "radius"),
    ("SwapSurrogate", "other", lambda: SwapSurrogate(mode="bns"), ValueError, "mode"),
    ("SwapSurrogate", "type", lambda: SUR.sample(Z, 3), TypeError, "trials"),
    ("SwapSurrogate", "range", lambda: SUR.sample(TR, 0), ValueError, "n_samples"),
    (
        "SwapSurrogate",
        "range",
        lambda: SwapSurrogate.fit_nonparametric(TR, OUTSIDE),
        ValueError,
        "responses must hold angles",
    ),
    (
        "SwapSurrogate",
        "shape",
        lambda: SwapSurrogate.fit_nonparametric(TR, ANG[:3]),
        ValueError,
        "responses has 3",
    ),
    (
        "SwapSurrogate",
        "nan",
        lambda: SwapSurrogate.fit_nonparametric(TR, ANG_NAN),
        ValueError,
        "responses contains NaN",
    ),
    ("responses_to_angles", "nan", lambda: responses_to_angles(SAMPLES_NAN), ValueError, "resp"),
    ("responses_to_angles", "range", lambda: responses_to_angles(OUTSIDE), ValueError, "resp"),
    # diffusion algebra
    ("DiffusionSchedule", "range", lambda: DiffusionSchedule((0.0, 0.3)), ValueError, "beta"),
    ("DiffusionSchedule", "range", lambda: DiffusionSchedule((0.1, NAN)), ValueError, "beta"),
    ("DiffusionSchedule", "range", lambda: DiffusionSchedule(T=0), ValueError, "T"),
    ("DiffusionSchedule", "type", lambda: DiffusionSchedule(0.1), TypeError, "beta"),
    (
        "forward_trajectory",
        "nan",
        lambda: forward_trajectory(torch.tensor([[NAN, 0.0]]), SCHED),
        ValueError,
        "x0 contains NaN",
    ),
    (
        "forward_trajectory",
        "dtype",
        lambda: forward_trajectory(torch.ones(2, 2, dtype=torch.long), SCHED),
        TypeError,
        "x0",
    ),
    (
        "effective_noise",
        "shape",
        lambda: effective_noise(torch.ones(3, 5, 2), torch.ones(3, 2), SCHED),
        ValueError,
        "x_t must have shape",
    ),
    (
        "effective_noise",
        "inf",
        lambda: effective_noise(torch.full((3, 4, 2), INF), torch.ones(3, 2), SCHED),
        ValueError,
        "x_t contains inf",
    ),
    (
        "reverse_sample",
        "type",
        lambda: reverse_sample(3, torch.ones(2, 2), SCHED),
        TypeError,
        "eps",
    ),
    (
        "reverse_sample",
        "nan",
        lambda: reverse_sample(_eps, torch.tensor([[NAN]]), SCHED),
        ValueError,
        "x_T contains NaN",
    ),
    ("time_embedding", "range", lambda: time_embedding(0, 4), ValueError, "T"),
    ("time_embedding", "range", lambda: time_embedding(4, 1), ValueError, "dim"),
    # network
    ("BehaviourRNN", "range", lambda: BehaviourRNN(n_units=1), ValueError, "n_units"),
    ("BehaviourRNN", "range", lambda: BehaviourRNN(alpha=NAN), ValueError, "alpha"),
    ("BehaviourRNN", "range", lambda: BehaviourRNN(alpha=1.5), ValueError, "alpha"),
    ("BehaviourRNN", "other", lambda: BehaviourRNN(response="ode"), ValueError, "response"),
    ("BehaviourRNN", "range", lambda: BehaviourRNN(beta=(0.1, 1.0)), ValueError, "beta"),
    ("BehaviourRNN", "type", lambda: RNN.sample(IN, 2), TypeError, "trials"),
    ("BehaviourRNN", "nan", lambda: RNN(IN * NAN), ValueError, "inputs contains NaN"),
    ("BehaviourRNN", "shape", lambda: RNN(IN[..., :3]), ValueError, "inputs must have"),
    ("BehaviourRNN", "range", lambda: RNN.sample(TR, 0), ValueError, "n_samples"),
    # trainers
    ("DiffusionTrainer", "type", lambda: DiffusionTrainer(RNN, TASK, None), TypeError, "surrogate"),
    (
        "DiffusionTrainer",
        "range",
        lambda: DiffusionTrainer(RNN, TASK, SUR, lr=0.0),
        ValueError,
        "lr",
    ),
    (
        "DiffusionTrainer",
        "range",
        lambda: DiffusionTrainer(RNN, TASK, SUR, samples_per_trial=0),
        ValueError,
        "samples_per_trial",
    ),
    ("DiffusionTrainer", "type", lambda: DiffusionTrainer(TASK, TASK, SUR), TypeError, "rnn"),
    (
        "DiffusionTrainer",
        "shape",
        lambda: DiffusionTrainer(BehaviourRNN(n_units=4, input_size=3, T=4), TASK, SUR),
        ValueError,
        "rnn: input_size",
    ),
    (
        "MomentMatchingTrainer",
        "range",
        lambda: MomentMatchingTrainer(RNN, TASK, SUR, samples_per_trial=1),
        ValueError,
        "samples_per_trial",
    ),
    (
        "MomentMatchingTrainer",
        "range",
        lambda: MomentMatchingTrainer(RNN, TASK, SUR, prep_l2=NAN),
        ValueError,
        "prep_l2",
    ),
    (
        "TaskOptimalTrainer",
        "range",
        lambda: TaskOptimalTrainer(RNN, TASK, radius=-1.0),
        ValueError,
        "radius",
    ),
    (
        "TaskOptimalTrainer",
        "range",
        lambda: TaskOptimalTrainer(RNN, TASK).fit(0),
        ValueError,
        "n_iters",
    ),
    # analyses
    ("mixture_model_fit", "nan", lambda: mixture_model_fit(ANG_NAN, TR), ValueError, "responses"),
    ("mixture_model_fit", "range", lambda: mixture_model_fit(OUTSIDE, TR), ValueError, "resp"),
    (
        "mixture_model_fit",
        "shape",
        lambda: mixture_model_fit(ANG[:3], TR),
        ValueError,
        "responses has 3",
    ),
    ("mixture_model_fit", "type", lambda: mixture_model_fit(ANG, Z), TypeError, "trials"),
    (
        "mixture_model_fit",
        "range",
        lambda: mixture_model_fit(ANG, TR, min_separation=NAN),
        ValueError,
        "min_separation",
    ),
    (
        "mixture_responsibilities",
        "range",
        lambda: mixture_responsibilities(OUTSIDE, TR),
        ValueError,
        "responses",
    ),
    (
        "mixture_responsibilities",
        "shape",
        lambda: mixture_responsibilities(ANG[:2], TR),
        ValueError,
        "responses has 2",
    ),
    ("energy_distance", "nan", lambda: energy_distance(SAMPLES_NAN, SAMPLES), ValueError, "x"),
    (
        "energy_distance",
        "empty",
        lambda: energy_distance(np.ones((0, 2)), np.ones((3, 2))),
        ValueError,
        "x",
    ),
    (
        "energy_distance",
        "shape",
        lambda: energy_distance(SAMPLES, SAMPLES[:2]),
        ValueError,
        "x and y",
    ),
    (
        "energy_distance",
        "shape",
        lambda: energy_distance(np.ones(3), np.ones(3)),
        ValueError,
        "x must",
    ),
    (
        "multimodality_fraction",
        "nan",
        lambda: multimodality_fraction(SAMPLES_NAN, TR),
        ValueError,
        "samples",
    ),
    (
        "multimodality_fraction",
        "shape",
        lambda: multimodality_fraction(np.ones((4, 3, 3)), TR),
        ValueError,
        "samples",
    ),
    (
        "multimodality_fraction",
        "range",
        lambda: multimodality_fraction(SAMPLES, TR, radius=0.0),
        ValueError,
        "radius",
    ),
    (
        "evaluate_samples",
        "nan",
        lambda: evaluate_samples(SAMPLES_NAN, TR, SUR),
        ValueError,
        "samples",
    ),
    (
        "evaluate_samples",
        "shape",
        lambda: evaluate_samples(SAMPLES[0], TR, SUR),
        ValueError,
        "samples",
    ),
    (
        "evaluate_samples",
        "shape",
        lambda: evaluate_samples(SAMPLES[:3], TR, SUR),
        ValueError,
        "samples has 3",
    ),
    ("evaluate_samples", "type", lambda: evaluate_samples(SAMPLES, TR, None), TypeError, "surr"),
    (
        "item_subspace_angles",
        "nan",
        lambda: item_subspace_angles(STATES_NAN, COL, COL),
        ValueError,
        "states",
    ),
    (
        "item_subspace_angles",
        "shape",
        lambda: item_subspace_angles(STATES, COL[:5], COL),
        ValueError,
        "colours_a",
    ),
    (
        "item_subspace_angles",
        "range",
        lambda: item_subspace_angles(STATES, COL + 4, COL),
        ValueError,
        "colours_a",
    ),
    (
        "decoder_accuracy",
        "nan",
        lambda: decoder_accuracy(STATES_NAN, np.arange(8) % 2),
        ValueError,
        "states",
    ),
    (
        "decoder_accuracy",
        "shape",
        lambda: decoder_accuracy(STATES, np.arange(7) % 2),
        ValueError,
        "labels",
    ),
    (
        "decoder_accuracy",
        "other",
        lambda: decoder_accuracy(STATES, np.zeros(8)),
        ValueError,
        "labels",
    ),
]

EXEMPT: dict[str, str] = {}
