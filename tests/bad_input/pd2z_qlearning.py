"""Bad-input cases for iclr26.rl.pd2z_qlearning (read by tests/framework/test_bad_input.py)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from iclr26.rl.pd2z_qlearning import (
    AsynchronousQLearning,
    SynchronousQLearning,
    TabularMDP,
    asymptotic_covariance,
    confidence_intervals,
    constant_schedule,
    coverage,
    draw_weights,
    greedy_ties,
    ld2z_schedule,
    make_schedule,
    make_torch_scheduler,
    mdp_from_gymnasium,
    noise_variance,
    pd2z_factors,
    pd2z_schedule,
    poly_schedule,
    random_mdp,
    run_q_learning,
    schedule_lambda,
    value_iteration,
)

NAN, INF = float("nan"), float("inf")


def mdp_arrays(**override):
    arrays = {
        "prob": np.full((2, 2, 2), 0.5),
        "next_state": np.array([[[0, 1], [1, 1]], [[0, 0], [1, 0]]]),
        "reward": np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 0.2], [1.0, 0.0]]]),
        "terminal": np.zeros((2, 2, 2), dtype=bool),
        "gamma": 0.9,
    }
    arrays.update(override)
    return arrays


@functools.cache
def mdp() -> TabularMDP:
    return TabularMDP(**mdp_arrays())


def optimizer():
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)


Q_NAN = np.array([[NAN, 0.0], [0.0, 0.0]])
TAIL = np.zeros((2, 2, 2))  # [R, S, A]

CASES = [
    # MDPs
    (
        "TabularMDP",
        "nan",
        lambda: TabularMDP(**mdp_arrays(reward=np.full((2, 2, 2), NAN))),
        ValueError,
        "reward",
    ),
    (
        "TabularMDP",
        "inf",
        lambda: TabularMDP(**mdp_arrays(reward=np.full((2, 2, 2), INF))),
        ValueError,
        "reward",
    ),
    (
        "TabularMDP",
        "nan",
        lambda: TabularMDP(**mdp_arrays(prob=np.full((2, 2, 2), NAN))),
        ValueError,
        "prob",
    ),
    (
        "TabularMDP",
        "empty",
        lambda: TabularMDP(**mdp_arrays(prob=np.zeros((0, 2, 2)))),
        ValueError,
        "prob",
    ),
    (
        "TabularMDP",
        "shape",
        lambda: TabularMDP(**mdp_arrays(reward=np.zeros((2, 2)))),
        ValueError,
        "reward",
    ),
    ("TabularMDP", "range", lambda: TabularMDP(**mdp_arrays(gamma=1.0)), ValueError, "gamma"),
    ("TabularMDP", "nan", lambda: TabularMDP(**mdp_arrays(gamma=NAN)), ValueError, "gamma"),
    (
        "TabularMDP",
        "dtype",
        lambda: TabularMDP(**mdp_arrays(next_state=np.full((2, 2, 2), 0.5))),
        TypeError,
        "next_state",
    ),
    (
        "TabularMDP",
        "range",
        lambda: TabularMDP(**mdp_arrays(initial=np.array([0.7, 0.7]))),
        ValueError,
        "initial",
    ),
    ("TabularMDP", "nan", lambda: mdp().bellman(Q_NAN), ValueError, "q"),
    ("value_iteration", "type", lambda: value_iteration(np.zeros((2, 2))), TypeError, "mdp"),
    ("value_iteration", "nan", lambda: value_iteration(mdp(), tol=NAN), ValueError, "tol"),
    (
        "value_iteration",
        "range",
        lambda: value_iteration(mdp(), max_iter=0),
        ValueError,
        "max_iter",
    ),
    ("noise_variance", "nan", lambda: noise_variance(mdp(), Q_NAN), ValueError, "q_star"),
    (
        "noise_variance",
        "shape",
        lambda: noise_variance(mdp(), np.zeros((3, 2))),
        ValueError,
        "q_star",
    ),
    (
        "asymptotic_covariance",
        "inf",
        lambda: asymptotic_covariance(mdp(), np.array([[INF, 0], [0, 0]])),
        ValueError,
        "q_star",
    ),
    (
        "asymptotic_covariance",
        "shape",
        lambda: asymptotic_covariance(mdp(), np.zeros(4)),
        ValueError,
        "q_star",
    ),
    ("greedy_ties", "nan", lambda: greedy_ties(Q_NAN), ValueError, "q_star"),
    ("greedy_ties", "empty", lambda: greedy_ties(np.zeros((0, 2))), ValueError, "q_star"),
    ("greedy_ties", "range", lambda: greedy_ties(np.zeros((2, 2)), atol=-1.0), ValueError, "atol"),
    ("random_mdp", "range", lambda: random_mdp(0, 2), ValueError, "n_states"),
    ("random_mdp", "type", lambda: random_mdp(3, 2.5), TypeError, "n_actions"),
    ("random_mdp", "range", lambda: random_mdp(3, 2, branching=4), ValueError, "branching"),
    ("random_mdp", "nan", lambda: random_mdp(3, 2, gamma=NAN), ValueError, "gamma"),
    (
        "mdp_from_gymnasium",
        "range",
        lambda: mdp_from_gymnasium("FrozenLake-v1", gamma=1.5),
        ValueError,
        "gamma",
    ),
    ("mdp_from_gymnasium", "type", lambda: mdp_from_gymnasium(3), TypeError, "env_id"),
    # schedules
    ("pd2z_schedule", "nan", lambda: pd2z_schedule(NAN, 10, 1.0), ValueError, "eta"),
    ("pd2z_schedule", "range", lambda: pd2z_schedule(0.5, 10, 0.0), ValueError, "nu"),
    ("pd2z_schedule", "inf", lambda: pd2z_schedule(INF, 10, 1.0), ValueError, "eta"),
    ("pd2z_factors", "range", lambda: pd2z_factors(0, 1.0), ValueError, "n"),
    ("pd2z_factors", "nan", lambda: pd2z_factors(10, NAN), ValueError, "nu"),
    ("ld2z_schedule", "range", lambda: ld2z_schedule(-0.1, 10), ValueError, "eta"),
    ("ld2z_schedule", "type", lambda: ld2z_schedule(0.5, 10.5), TypeError, "n"),
    ("constant_schedule", "nan", lambda: constant_schedule(NAN, 5), ValueError, "eta"),
    ("poly_schedule", "range", lambda: poly_schedule(0.5, 10, alpha=1.5), ValueError, "alpha"),
    ("poly_schedule", "nan", lambda: poly_schedule(0.5, 10, alpha=NAN), ValueError, "alpha"),
    ("make_schedule", "other", lambda: make_schedule("cosine", 0.5, 10), ValueError, "kind"),
    ("make_schedule", "range", lambda: make_schedule("pd2z", 0.5, 10, nu=-1), ValueError, "nu"),
    ("schedule_lambda", "range", lambda: schedule_lambda("pd2z", 0), ValueError, "n_steps"),
    ("schedule_lambda", "nan", lambda: schedule_lambda("pd2z", 10, nu=NAN), ValueError, "nu"),
    (
        "make_torch_scheduler",
        "type",
        lambda: make_torch_scheduler(object(), "pd2z", 10),
        TypeError,
        "optimizer",
    ),
    (
        "make_torch_scheduler",
        "range",
        lambda: make_torch_scheduler(optimizer(), "ld2z", -3),
        ValueError,
        "n_steps",
    ),
    # Q-learning
    (
        "run_q_learning",
        "nan",
        lambda: run_q_learning(mdp(), np.ones(3), q_init=NAN),
        ValueError,
        "q_init",
    ),
    (
        "run_q_learning",
        "nan",
        lambda: run_q_learning(mdp(), np.ones(3), q_init=Q_NAN),
        ValueError,
        "q_init",
    ),
    (
        "run_q_learning",
        "shape",
        lambda: run_q_learning(mdp(), np.ones(3), q_init=np.zeros(3)),
        ValueError,
        "q_init",
    ),
    (
        "run_q_learning",
        "nan",
        lambda: run_q_learning(mdp(), np.array([0.5, NAN])),
        ValueError,
        "step_sizes",
    ),
    (
        "run_q_learning",
        "range",
        lambda: run_q_learning(mdp(), np.array([0.5, -0.1])),
        ValueError,
        "step_sizes",
    ),
    (
        "run_q_learning",
        "empty",
        lambda: run_q_learning(mdp(), np.ones(0)),
        ValueError,
        "step_sizes",
    ),
    (
        "run_q_learning",
        "shape",
        lambda: run_q_learning(mdp(), np.ones((2, 2, 2))),
        ValueError,
        "step_sizes",
    ),
    (
        "run_q_learning",
        "range",
        lambda: run_q_learning(mdp(), np.ones(3), tail_frac=0.0),
        ValueError,
        "tail_frac",
    ),
    (
        "run_q_learning",
        "nan",
        lambda: run_q_learning(mdp(), np.ones(3), tail_frac=NAN),
        ValueError,
        "tail_frac",
    ),
    (
        "run_q_learning",
        "range",
        lambda: run_q_learning(mdp(), np.ones(3), n_replications=0),
        ValueError,
        "n_replications",
    ),
    (
        "run_q_learning",
        "shape",
        lambda: run_q_learning(mdp(), np.ones((3, 2)), bootstrap_mask=np.ones(3, bool)),
        ValueError,
        "bootstrap_mask",
    ),
    (
        "run_q_learning",
        "range",
        lambda: run_q_learning(mdp(), np.ones(3), sampling="asynchronous", behaviour_epsilon=2.0),
        ValueError,
        "behaviour_epsilon",
    ),
    (
        "run_q_learning",
        "other",
        lambda: run_q_learning(mdp(), np.ones(3), sampling="online"),
        ValueError,
        "sampling",
    ),
    (
        "run_q_learning",
        "nan",
        lambda: run_q_learning(mdp(), np.ones(3), q_star=Q_NAN),
        ValueError,
        "q_star",
    ),
    (
        "run_q_learning",
        "range",
        lambda: run_q_learning(mdp(), np.ones(3), n_batches=9),
        ValueError,
        "n_batches",
    ),
    (
        "run_q_learning",
        "dtype",
        lambda: run_q_learning(mdp(), np.ones(3), dtype=np.int32),
        TypeError,
        "dtype",
    ),
    (
        "draw_weights",
        "other",
        lambda: draw_weights(np.random.default_rng(0), "normal", 3),
        ValueError,
        "kind",
    ),
    ("draw_weights", "type", lambda: draw_weights(0, "exp", 3), TypeError, "rng"),
    (
        "SynchronousQLearning",
        "nan",
        lambda: SynchronousQLearning(q_init=NAN).fit(mdp()),
        ValueError,
        "q_init",
    ),
    (
        "SynchronousQLearning",
        "inf",
        lambda: SynchronousQLearning(q_init=-INF).fit(mdp()),
        ValueError,
        "q_init",
    ),
    (
        "SynchronousQLearning",
        "nan",
        lambda: SynchronousQLearning(eta=NAN).fit(mdp()),
        ValueError,
        "eta",
    ),
    (
        "SynchronousQLearning",
        "range",
        lambda: SynchronousQLearning(nu=0.0).fit(mdp()),
        ValueError,
        "nu",
    ),
    (
        "SynchronousQLearning",
        "range",
        lambda: SynchronousQLearning(n_steps=0).fit(mdp()),
        ValueError,
        "n_steps",
    ),
    (
        "SynchronousQLearning",
        "range",
        lambda: SynchronousQLearning(n_steps=5, tail_frac=1.5).fit(mdp()),
        ValueError,
        "tail_frac",
    ),
    (
        "SynchronousQLearning",
        "range",
        lambda: SynchronousQLearning(n_steps=5, n_bootstrap=-1).fit(mdp()),
        ValueError,
        "n_bootstrap",
    ),
    (
        "SynchronousQLearning",
        "other",
        lambda: SynchronousQLearning(schedule="cosine").fit(mdp()),
        ValueError,
        "schedule",
    ),
    (
        "SynchronousQLearning",
        "type",
        lambda: SynchronousQLearning().fit(np.zeros((4, 2))),
        TypeError,
        "mdp",
    ),
    (
        "SynchronousQLearning",
        "nan",
        lambda: SynchronousQLearning(n_steps=5).fit(mdp(), q_star=Q_NAN),
        ValueError,
        "q_star",
    ),
    (
        "SynchronousQLearning",
        "range",
        lambda: (
            SynchronousQLearning(n_steps=5, n_bootstrap=3)
            .fit(mdp())
            .confidence_intervals(level=1.0)
        ),
        ValueError,
        "level",
    ),
    (
        "AsynchronousQLearning",
        "range",
        lambda: AsynchronousQLearning(n_steps=5, behaviour_epsilon=-0.5).fit(mdp()),
        ValueError,
        "behaviour_epsilon",
    ),
    (
        "AsynchronousQLearning",
        "nan",
        lambda: AsynchronousQLearning(n_steps=5, q_init=NAN).fit(mdp()),
        ValueError,
        "q_init",
    ),
    # inference
    (
        "confidence_intervals",
        "nan",
        lambda: confidence_intervals(
            np.full((2, 2, 2), NAN), bootstrap_tails=np.zeros((2, 3, 2, 2))
        ),
        ValueError,
        "q_tail",
    ),
    (
        "confidence_intervals",
        "shape",
        lambda: confidence_intervals(TAIL, bootstrap_tails=np.zeros((2, 3, 2, 5))),
        ValueError,
        "bootstrap_tails",
    ),
    (
        "confidence_intervals",
        "nan",
        lambda: confidence_intervals(TAIL, level=NAN, bootstrap_tails=np.zeros((2, 3, 2, 2))),
        ValueError,
        "level",
    ),
    (
        "confidence_intervals",
        "empty",
        lambda: confidence_intervals(np.zeros((0, 2, 2)), method="naive_iid"),
        ValueError,
        "q_tail",
    ),
    (
        "confidence_intervals",
        "other",
        lambda: confidence_intervals(TAIL, method="jackknife"),
        ValueError,
        "method",
    ),
    (
        "confidence_intervals",
        "inf",
        lambda: confidence_intervals(
            TAIL, method="batch_means", batch_means=np.full((3, 2, 2, 2), INF)
        ),
        ValueError,
        "batch_means",
    ),
    (
        "confidence_intervals",
        "range",
        lambda: confidence_intervals(
            TAIL, method="naive_iid", tail_sq_mean=np.zeros((2, 2, 2)), tail_length=1
        ),
        ValueError,
        "tail_length",
    ),
    ("coverage", "nan", lambda: coverage(TAIL, TAIL, Q_NAN), ValueError, "truth"),
    (
        "coverage",
        "shape",
        lambda: coverage(TAIL, np.zeros((2, 2, 3)), np.zeros((2, 2))),
        ValueError,
        "hi",
    ),
    (
        "coverage",
        "nan",
        lambda: coverage(np.full((2, 2, 2), NAN), TAIL, np.zeros((2, 2))),
        ValueError,
        "lo",
    ),
    (
        "coverage",
        "other",
        lambda: coverage(TAIL, TAIL, np.zeros((2, 2)), mask=np.zeros((2, 2), bool)),
        ValueError,
        "mask",
    ),
]

EXEMPT = {
    "QLearningTrace": "a record dataclass that run_q_learning returns; it takes no user data",
}
