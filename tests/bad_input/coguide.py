"""Bad-input cases for the CoGuide room (read by tests/framework/test_bad_input.py)."""

import functools

import numpy as np
import torch

from iclr26.generative.coguide import (
    CoGuide,
    CoGuideSampler,
    ContrastiveLikelihood,
    DDIMSampler,
    Encoder,
    FloorplanGenerator,
    FloorplanPrior,
    InpaintingSampler,
    PathPlanner,
    PlannerGuidedSampler,
    Trajectory,
    UNet,
    align_weight,
    contrastive_loss,
    cosine_alpha_bar,
    feasibility,
    free_space_scores,
    hard_negative,
    intersection_penalty,
    is_connected,
    rasterize,
    soft_value_iteration,
    soft_visitation,
    step_size_schedule,
    supcon_loss,
    trajectory_consistency,
    wall,
)

NAN, INF = float("nan"), float("inf")
S = 16


@functools.cache
def _data():
    X = FloorplanGenerator(S, min_room=3).sample(4, seed=0)
    planner = PathPlanner()
    Y = [[planner(x, coverage=0.2, seed=i)] for i, x in enumerate(X)]
    return X, Y


@functools.cache
def _prior():
    return FloorplanPrior(T=30, width=4).fit(_data()[0], steps=1, batch_size=2)


@functools.cache
def _lik():
    X, Y = _data()
    return ContrastiveLikelihood(dim=4, width=4).fit(X, Y, steps=1, batch_size=2)


def _x_with(value):
    x = _data()[0][0].copy()
    x[3, 3] = value
    return x


def _walk():
    return _data()[1][0][0]


OUTSIDE = Trajectory(np.array([[1, 1], [1, S]]), np.array([[1, 1], [1, S]]))
COST = torch.ones(1, 6, 6)
GOAL = torch.tensor([[2, 2]])

CASES = [
    ("FloorplanGenerator", "range", lambda: FloorplanGenerator(4), ValueError, "size"),
    (
        "FloorplanGenerator",
        "range",
        lambda: FloorplanGenerator(16, min_room=9),
        ValueError,
        "min_room",
    ),
    (
        "FloorplanGenerator",
        "range",
        lambda: FloorplanGenerator(16, 3, l_shape=NAN),
        ValueError,
        "l_shape",
    ),
    ("FloorplanGenerator", "range", lambda: FloorplanGenerator(16, 3).sample(0), ValueError, "n"),
    ("PathPlanner", "range", lambda: PathPlanner(connectivity=6), ValueError, "connectivity"),
    ("PathPlanner", "range", lambda: PathPlanner(tie_break="last"), ValueError, "tie_break"),
    ("PathPlanner", "nan", lambda: PathPlanner()(_x_with(NAN)), ValueError, "x"),
    ("PathPlanner", "shape", lambda: PathPlanner()(np.ones((16, 12))), ValueError, "x"),
    (
        "PathPlanner",
        "range",
        lambda: PathPlanner()(_data()[0][0], coverage=0.0),
        ValueError,
        "coverage",
    ),
    (
        "PathPlanner",
        "range",
        lambda: PathPlanner()(_data()[0][0], jitter=-1.0),
        ValueError,
        "jitter",
    ),
    ("PathPlanner", "other", lambda: PathPlanner()(np.ones((16, 16))), ValueError, "x"),
    (
        "PathPlanner",
        "range",
        lambda: PathPlanner().route(_data()[0][0], [[1, 1], [1, 99]]),
        ValueError,
        "waypoints",
    ),
    ("rasterize", "other", lambda: rasterize(OUTSIDE, S), ValueError, "y has 1"),
    ("rasterize", "shape", lambda: rasterize(np.zeros((3, 3)), S), ValueError, "y"),
    ("rasterize", "nan", lambda: rasterize(np.array([[NAN, 1.0]]), S), ValueError, "y"),
    ("rasterize", "empty", lambda: rasterize(np.zeros((0, 2)), S), ValueError, "y"),
    ("wall", "nan", lambda: wall(np.array([NAN])), ValueError, "x"),
    ("is_connected", "inf", lambda: is_connected(_x_with(INF)), ValueError, "x"),
    (
        "intersection_penalty",
        "nan",
        lambda: intersection_penalty(_x_with(NAN), np.zeros((S, S))),
        ValueError,
        "x",
    ),
    (
        "intersection_penalty",
        "shape",
        lambda: intersection_penalty(_data()[0][0], np.zeros((8, 8))),
        ValueError,
        "y_mask",
    ),
    (
        "free_space_scores",
        "shape",
        lambda: free_space_scores(np.ones((S, S)), np.ones((8, 8))),
        ValueError,
        "x_hat",
    ),
    (
        "free_space_scores",
        "nan",
        lambda: free_space_scores(_x_with(NAN), np.ones((S, S))),
        ValueError,
        "x_hat",
    ),
    (
        "trajectory_consistency",
        "type",
        lambda: trajectory_consistency(np.ones((S, S)), [[1, 1]]),
        TypeError,
        "y",
    ),
    (
        "trajectory_consistency",
        "other",
        lambda: trajectory_consistency(np.ones((S, S)), OUTSIDE),
        ValueError,
        "waypoints",
    ),
    ("feasibility", "other", lambda: feasibility(np.ones((S, S)), OUTSIDE), ValueError, "y has 1"),
    ("feasibility", "inf", lambda: feasibility(_x_with(INF), _walk()), ValueError, "x_hat"),
    (
        "supcon_loss",
        "nan",
        lambda: supcon_loss(torch.tensor([[NAN, 1.0]]), torch.tensor([[True, False]])),
        ValueError,
        "scores",
    ),
    (
        "supcon_loss",
        "shape",
        lambda: supcon_loss(torch.zeros(2, 3), torch.ones(2, 2, dtype=torch.bool)),
        ValueError,
        "positives",
    ),
    (
        "supcon_loss",
        "other",
        lambda: supcon_loss(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.bool)),
        ValueError,
        "positives",
    ),
    (
        "contrastive_loss",
        "shape",
        lambda: contrastive_loss(torch.eye(3), torch.eye(4), torch.arange(4), 0.1, 0.5, 0.0),
        ValueError,
        "g_y",
    ),
    (
        "contrastive_loss",
        "range",
        lambda: contrastive_loss(torch.eye(3), torch.eye(3), torch.arange(3), 0.0, 0.5, 0.0),
        ValueError,
        "tau",
    ),
    (
        "contrastive_loss",
        "range",
        lambda: contrastive_loss(
            torch.eye(3), torch.eye(3), torch.tensor([0, 1, 5]), 0.1, 0.5, 0.0
        ),
        ValueError,
        "owner",
    ),
    (
        "contrastive_loss",
        "nan",
        lambda: contrastive_loss(
            torch.full((3, 3), NAN), torch.eye(3), torch.arange(3), 0.1, 0.5, 0.0
        ),
        ValueError,
        "f_x",
    ),
    ("align_weight", "range", lambda: align_weight(1.5, 0.25, 0.5, 1.0), ValueError, "progress"),
    ("align_weight", "range", lambda: align_weight(0.3, 0.5, 0.25, 1.0), ValueError, "full"),
    (
        "hard_negative",
        "type",
        lambda: hard_negative(_data()[0][0], np.zeros((3, 2)), np.random.default_rng(0)),
        TypeError,
        "y",
    ),
    (
        "hard_negative",
        "nan",
        lambda: hard_negative(_x_with(NAN), _walk(), np.random.default_rng(0)),
        ValueError,
        "x",
    ),
    ("Encoder", "range", lambda: Encoder(dim=1), ValueError, "dim"),
    ("Encoder", "range", lambda: Encoder(width=NAN), TypeError, "width"),
    ("UNet", "range", lambda: UNet(in_ch=0), ValueError, "in_ch"),
    ("UNet", "range", lambda: UNet(width=2), ValueError, "width"),
    ("cosine_alpha_bar", "range", lambda: cosine_alpha_bar(0), ValueError, "T"),
    ("cosine_alpha_bar", "range", lambda: cosine_alpha_bar(10, s=NAN), ValueError, "s"),
    ("FloorplanPrior", "range", lambda: FloorplanPrior(T=1), ValueError, "T"),
    ("FloorplanPrior", "range", lambda: FloorplanPrior(cond="walls"), ValueError, "cond"),
    (
        "FloorplanPrior",
        "range",
        lambda: FloorplanPrior(T=30, width=4).fit(_data()[0], steps=1, seed=-1),
        ValueError,
        "seed",
    ),
    (
        "FloorplanPrior",
        "nan",
        lambda: FloorplanPrior(T=5, width=4).fit(_x_with(NAN)[None]),
        ValueError,
        "X",
    ),
    (
        "FloorplanPrior",
        "shape",
        lambda: FloorplanPrior(T=5, width=4).fit(np.ones((2, 10, 10))),
        ValueError,
        "X",
    ),
    (
        "FloorplanPrior",
        "range",
        lambda: FloorplanPrior(T=5, width=4).fit(2 * np.ones((2, 8, 8))),
        ValueError,
        "X",
    ),
    (
        "FloorplanPrior",
        "other",
        lambda: FloorplanPrior(T=5, width=4, cond="trajectory").fit(np.ones((2, 8, 8))),
        ValueError,
        "Y_masks",
    ),
    (
        "FloorplanPrior",
        "range",
        lambda: FloorplanPrior(T=5, width=4).fit(np.ones((2, 8, 8)), lr=0.0),
        ValueError,
        "lr",
    ),
    ("ContrastiveLikelihood", "range", lambda: ContrastiveLikelihood(tau=0.0), ValueError, "tau"),
    ("ContrastiveLikelihood", "range", lambda: ContrastiveLikelihood(lam=1.5), ValueError, "lam"),
    (
        "ContrastiveLikelihood",
        "type",
        lambda: ContrastiveLikelihood(dim=4, width=4).fit(*_data(), steps=1, seed=0.5),
        TypeError,
        "seed",
    ),
    (
        "ContrastiveLikelihood",
        "range",
        lambda: ContrastiveLikelihood(align_start=0.6, align_full=0.5),
        ValueError,
        "align_full",
    ),
    (
        "ContrastiveLikelihood",
        "type",
        lambda: ContrastiveLikelihood(hard_negatives=1),
        TypeError,
        "hard_negatives",
    ),
    (
        "ContrastiveLikelihood",
        "nan",
        lambda: ContrastiveLikelihood(dim=4, width=4).fit(_x_with(NAN)[None], [[_walk()]]),
        ValueError,
        "X",
    ),
    (
        "ContrastiveLikelihood",
        "shape",
        lambda: ContrastiveLikelihood(dim=4, width=4).fit(_data()[0], _data()[1][:2]),
        ValueError,
        "X has 4",
    ),
    (
        "ContrastiveLikelihood",
        "empty",
        lambda: ContrastiveLikelihood(dim=4, width=4).fit(_data()[0][:1], [[]]),
        ValueError,
        "Y",
    ),
    (
        "ContrastiveLikelihood",
        "other",
        lambda: ContrastiveLikelihood(dim=4, width=4).fit(_data()[0][:1], [[OUTSIDE]]),
        ValueError,
        "y has 1",
    ),
    (
        "ContrastiveLikelihood",
        "shape",
        lambda: _lik().score(_data()[0], np.zeros((4, 8, 8))),
        ValueError,
        "y_masks",
    ),
    ("step_size_schedule", "range", lambda: step_size_schedule(0), ValueError, "steps"),
    ("step_size_schedule", "nan", lambda: step_size_schedule(10, eta0=NAN), ValueError, "eta0"),
    (
        "step_size_schedule",
        "range",
        lambda: step_size_schedule(10, start=0.8, end=0.5),
        ValueError,
        "end",
    ),
    (
        "soft_value_iteration",
        "range",
        lambda: soft_value_iteration(COST, GOAL, temperature=0.0),
        ValueError,
        "temperature",
    ),
    (
        "soft_value_iteration",
        "nan",
        lambda: soft_value_iteration(torch.full((1, 6, 6), NAN), GOAL),
        ValueError,
        "cost",
    ),
    (
        "soft_value_iteration",
        "range",
        lambda: soft_value_iteration(COST, torch.tensor([[2, 9]])),
        ValueError,
        "goals",
    ),
    (
        "soft_visitation",
        "shape",
        lambda: soft_visitation(COST, torch.tensor([1, 1]), GOAL),
        ValueError,
        "starts",
    ),
    (
        "soft_visitation",
        "range",
        lambda: soft_visitation(COST, GOAL, GOAL, iters=0),
        ValueError,
        "iters",
    ),
    ("DDIMSampler", "type", lambda: DDIMSampler("prior"), TypeError, "prior"),
    (
        "DDIMSampler",
        "other",
        lambda: DDIMSampler(FloorplanPrior(T=5, width=4)),
        ValueError,
        "prior",
    ),
    ("DDIMSampler", "range", lambda: DDIMSampler(_prior(), steps=0), ValueError, "steps"),
    (
        "DDIMSampler",
        "other",
        lambda: DDIMSampler(_prior(), steps=2).sample(OUTSIDE),
        ValueError,
        "y has 1",
    ),
    ("DDIMSampler", "empty", lambda: DDIMSampler(_prior(), steps=2).sample([]), ValueError, "ys"),
    (
        "DDIMSampler",
        "range",
        lambda: DDIMSampler(_prior(), steps=2).sample(_walk(), n=0),
        ValueError,
        "n",
    ),
    ("DDIMSampler", "other", lambda: DDIMSampler(_prior(), steps=2, cfg=1.0), ValueError, "cfg"),
    ("CoGuideSampler", "type", lambda: CoGuideSampler(_prior(), "lik"), TypeError, "likelihood"),
    (
        "CoGuideSampler",
        "range",
        lambda: CoGuideSampler(_prior(), _lik(), scale=-1.0),
        ValueError,
        "scale",
    ),
    (
        "CoGuideSampler",
        "range",
        lambda: CoGuideSampler(_prior(), _lik(), optimizer="sgd"),
        ValueError,
        "optimizer",
    ),
    (
        "CoGuideSampler",
        "nan",
        lambda: CoGuideSampler(_prior(), _lik(), lambda_int=NAN),
        ValueError,
        "lambda_int",
    ),
    (
        "CoGuideSampler",
        "range",
        lambda: CoGuideSampler(_prior(), _lik(), betas=(0.9, 1.0)),
        ValueError,
        "betas",
    ),
    (
        "CoGuideSampler",
        "other",
        lambda: CoGuideSampler(_prior(), _lik(), steps=2).sample(OUTSIDE),
        ValueError,
        "y has 1",
    ),
    (
        "PlannerGuidedSampler",
        "range",
        lambda: PlannerGuidedSampler(_prior(), temperature=0.0),
        ValueError,
        "temperature",
    ),
    (
        "PlannerGuidedSampler",
        "range",
        lambda: PlannerGuidedSampler(_prior(), wall_cost=-1.0),
        ValueError,
        "wall_cost",
    ),
    (
        "PlannerGuidedSampler",
        "type",
        lambda: PlannerGuidedSampler(_prior(), steps=2).sample([_walk(), "walk"]),
        TypeError,
        "ys",
    ),
    (
        "InpaintingSampler",
        "range",
        lambda: InpaintingSampler(_prior(), steps=99),
        ValueError,
        "steps",
    ),
    (
        "InpaintingSampler",
        "other",
        lambda: InpaintingSampler(_prior(), steps=2).sample(OUTSIDE),
        ValueError,
        "y has 1",
    ),
    ("CoGuide", "nan", lambda: CoGuide().fit(_x_with(NAN)[None], [[_walk()]]), ValueError, "X"),
    ("CoGuide", "range", lambda: CoGuide(prior_steps=0).fit(*_data()), ValueError, "prior_steps"),
    ("CoGuide", "other", lambda: CoGuide().predict([_walk()]), ValueError, "CoGuide"),
]

EXEMPT = {
    "Trajectory": "a record dataclass returned by PathPlanner; its cells are validated by "
    "every function that reads them (rasterize refuses cells outside the plan)",
}
