"""Bad input for the polca room: every public callable refuses it with a ValueError/TypeError
that names the argument (a non-unit basis and NaN checkpoints included)."""

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from iclr26.dynamics.polca import (
    AdditionTask,
    CheckpointRecorder,
    ExplicitSelfAttention,
    ParamSpace,
    TinyTransformer,
    addition_token_losses,
    breakthrough_time,
    build_hessian_basis,
    cluster_trajectories,
    directional_derivatives,
    filter_oscillatory,
    flat_after,
    hf_checkpoint_callback,
    hidden_clusters,
    lanczos_top,
    make_hvp,
    max_homogeneity,
    model_loss_fn,
    polca,
    projected_loss,
    run_addition_experiment,
    train_addition,
)

torch.manual_seed(0)
MODEL = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1)).double()
SPACE = ParamSpace(MODEL)
X = (torch.ones(3, 2, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
POINT = SPACE.current(MODEL)
NAN_POINT = POINT.clone()
NAN_POINT[0] = float("nan")
EYE = torch.eye(SPACE.dim, dtype=torch.float64)


def _loss(params, data):
    inputs, y = data
    return (functional_call(MODEL, params, (inputs,))[:, 0] - y) ** 2


CURVES = np.cumsum(-np.ones((6, 4)), axis=0)
CURVES_NAN = CURVES.copy()
CURVES_NAN[2, 1] = np.nan
GEN = torch.Generator().manual_seed(0)
TASK = AdditionTask(2)
RNG = np.random.default_rng(0)


def _matvec(v):
    return v


CASES = [
    (
        "polca",
        "other",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], 2 * EYE[:2]),
        ValueError,
        "basis",
    ),
    (
        "polca",
        "other",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], torch.ones(2, SPACE.dim) / SPACE.dim**0.5),
        ValueError,
        "basis",
    ),
    (
        "polca",
        "nan",
        lambda: polca(MODEL, _loss, X, [POINT, NAN_POINT], EYE[:2]),
        ValueError,
        r"checkpoints\[1\]",
    ),
    (
        "polca",
        "nan",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], EYE[:2] * float("nan")),
        ValueError,
        "basis",
    ),
    (
        "polca",
        "inf",
        lambda: polca(MODEL, _loss, X, [POINT, POINT * float("inf")], EYE[:2]),
        ValueError,
        "checkpoints",
    ),
    ("polca", "empty", lambda: polca(MODEL, _loss, X, [POINT], EYE[:2]), ValueError, "checkpoints"),
    (
        "polca",
        "shape",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], torch.eye(3)),
        ValueError,
        "basis",
    ),
    (
        "polca",
        "shape",
        lambda: polca(MODEL, _loss, X, [POINT, POINT[:3]], EYE[:2]),
        ValueError,
        "checkpoints",
    ),
    (
        "polca",
        "range",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], EYE[:2], "third"),
        ValueError,
        "second_order",
    ),
    (
        "polca",
        "range",
        lambda: polca(MODEL, _loss, X, [POINT, POINT], EYE[:2], chunk=0),
        ValueError,
        "chunk",
    ),
    (
        "polca",
        "type",
        lambda: polca(MODEL, "loss", X, [POINT, POINT], EYE[:2]),
        TypeError,
        "per_example_loss",
    ),
    (
        "build_hessian_basis",
        "nan",
        lambda: build_hessian_basis(MODEL, _loss, X, [NAN_POINT]),
        ValueError,
        "checkpoints",
    ),
    (
        "build_hessian_basis",
        "empty",
        lambda: build_hessian_basis(MODEL, _loss, X, []),
        ValueError,
        "checkpoints",
    ),
    (
        "build_hessian_basis",
        "shape",
        lambda: build_hessian_basis(MODEL, _loss, X, [POINT[:2]]),
        ValueError,
        "checkpoints",
    ),
    (
        "build_hessian_basis",
        "range",
        lambda: build_hessian_basis(MODEL, _loss, X, [POINT], k=0),
        ValueError,
        "k",
    ),
    (
        "build_hessian_basis",
        "range",
        lambda: build_hessian_basis(MODEL, _loss, X, [POINT], iters=0),
        ValueError,
        "iters",
    ),
    (
        "build_hessian_basis",
        "type",
        lambda: build_hessian_basis("model", _loss, X, [POINT]),
        TypeError,
        "model",
    ),
    ("make_hvp", "nan", lambda: make_hvp(MODEL, _loss, X, NAN_POINT, SPACE), ValueError, "point"),
    ("make_hvp", "shape", lambda: make_hvp(MODEL, _loss, X, POINT[:2], SPACE), ValueError, "point"),
    ("make_hvp", "type", lambda: make_hvp(MODEL, _loss, X, POINT, None), TypeError, "space"),
    ("lanczos_top", "range", lambda: lanczos_top(_matvec, 4, 0, 3, None, GEN), ValueError, "k"),
    ("lanczos_top", "range", lambda: lanczos_top(_matvec, 4, 5, 3, None, GEN), ValueError, "k"),
    ("lanczos_top", "range", lambda: lanczos_top(_matvec, 0, 1, 3, None, GEN), ValueError, "dim"),
    (
        "lanczos_top",
        "nan",
        lambda: lanczos_top(_matvec, 4, 1, 3, torch.full((1, 4), float("nan")), GEN),
        ValueError,
        "deflate",
    ),
    (
        "lanczos_top",
        "shape",
        lambda: lanczos_top(_matvec, 4, 1, 3, torch.ones(1, 3), GEN),
        ValueError,
        "deflate",
    ),
    ("lanczos_top", "type", lambda: lanczos_top(_matvec, 4, 1, 3, None, 0), TypeError, "generator"),
    ("lanczos_top", "type", lambda: lanczos_top("A", 4, 1, 3, None, GEN), TypeError, "matvec"),
    (
        "directional_derivatives",
        "nan",
        lambda: directional_derivatives(
            _loss, SPACE.unflatten(NAN_POINT), X, SPACE.unflatten(EYE[:2]), True
        ),
        ValueError,
        "params",
    ),
    (
        "directional_derivatives",
        "type",
        lambda: directional_derivatives(_loss, POINT, X, {}, True),
        TypeError,
        "params",
    ),
    (
        "directional_derivatives",
        "other",
        lambda: directional_derivatives(_loss, SPACE.unflatten(POINT), X, {}, True),
        ValueError,
        "tangents",
    ),
    (
        "directional_derivatives",
        "type",
        lambda: directional_derivatives(
            _loss, SPACE.unflatten(POINT), X, SPACE.unflatten(EYE[:2]), 1
        ),
        TypeError,
        "second",
    ),
    (
        "projected_loss",
        "nan",
        lambda: projected_loss(np.full((1, 2, 3), np.nan)),
        ValueError,
        "allocations",
    ),
    ("projected_loss", "shape", lambda: projected_loss(np.ones((2, 3))), ValueError, "allocations"),
    (
        "projected_loss",
        "empty",
        lambda: projected_loss(np.ones((0, 2, 3))),
        ValueError,
        "allocations",
    ),
    (
        "filter_oscillatory",
        "nan",
        lambda: filter_oscillatory(np.full((1, 2, 3), np.nan)),
        ValueError,
        "L",
    ),
    ("filter_oscillatory", "shape", lambda: filter_oscillatory(np.ones((2, 3))), ValueError, "L"),
    ("cluster_trajectories", "nan", lambda: cluster_trajectories(CURVES_NAN), ValueError, "curves"),
    (
        "cluster_trajectories",
        "inf",
        lambda: cluster_trajectories(CURVES * np.inf),
        ValueError,
        "curves",
    ),
    (
        "cluster_trajectories",
        "shape",
        lambda: cluster_trajectories(CURVES[0]),
        ValueError,
        "curves",
    ),
    (
        "cluster_trajectories",
        "empty",
        lambda: cluster_trajectories(np.ones((0, 4))),
        ValueError,
        "curves",
    ),
    (
        "cluster_trajectories",
        "range",
        lambda: cluster_trajectories(CURVES, min_cluster_size=1),
        ValueError,
        "min_cluster_size",
    ),
    (
        "cluster_trajectories",
        "range",
        lambda: cluster_trajectories(CURVES, min_cluster_size=float("nan")),
        ValueError,
        "min_cluster_size",
    ),
    (
        "cluster_trajectories",
        "range",
        lambda: cluster_trajectories(CURVES, min_cluster_size=2.5),
        TypeError,
        "min_cluster_size",
    ),
    (
        "cluster_trajectories",
        "range",
        lambda: cluster_trajectories(CURVES, normalize="l2"),
        ValueError,
        "normalize",
    ),
    (
        "cluster_trajectories",
        "range",
        lambda: cluster_trajectories(CURVES, min_samples=0),
        ValueError,
        "min_samples",
    ),
    ("breakthrough_time", "nan", lambda: breakthrough_time(CURVES_NAN, 1), ValueError, "curves"),
    ("breakthrough_time", "range", lambda: breakthrough_time(CURVES, 0), ValueError, "delta"),
    ("breakthrough_time", "range", lambda: breakthrough_time(CURVES, 3), ValueError, "delta"),
    (
        "breakthrough_time",
        "shape",
        lambda: breakthrough_time(np.ones((2, 2, 2)), 1),
        ValueError,
        "curves",
    ),
    (
        "flat_after",
        "nan",
        lambda: flat_after(np.array([1.0, np.nan, 0.5])),
        ValueError,
        "aggregate",
    ),
    ("flat_after", "empty", lambda: flat_after(np.array([])), ValueError, "aggregate"),
    ("flat_after", "range", lambda: flat_after(np.ones(4), fraction=1.5), ValueError, "fraction"),
    ("flat_after", "range", lambda: flat_after(np.ones(4), window=2), ValueError, "window"),
    (
        "hidden_clusters",
        "nan",
        lambda: hidden_clusters(CURVES_NAN, np.zeros(4, int), 2, 1),
        ValueError,
        "curves",
    ),
    (
        "hidden_clusters",
        "shape",
        lambda: hidden_clusters(CURVES, np.zeros(3, int), 2, 1),
        ValueError,
        "labels",
    ),
    (
        "hidden_clusters",
        "range",
        lambda: hidden_clusters(CURVES, np.zeros(4, int), 9, 1),
        ValueError,
        "tau",
    ),
    (
        "hidden_clusters",
        "dtype",
        lambda: hidden_clusters(CURVES, np.zeros(4), 2, 1),
        TypeError,
        "labels",
    ),
    (
        "max_homogeneity",
        "nan",
        lambda: max_homogeneity([np.zeros(3, int)], np.array([0, np.nan, 1]), np.ones(3, bool)),
        ValueError,
        "attribute",
    ),
    (
        "max_homogeneity",
        "shape",
        lambda: max_homogeneity([np.zeros(2, int)], np.ones(3), np.ones(3, bool)),
        ValueError,
        r"label_sets\[0\]",
    ),
    (
        "max_homogeneity",
        "range",
        lambda: max_homogeneity([np.zeros(3, int)], np.ones(3), np.ones(3, bool), 0),
        ValueError,
        "min_members",
    ),
    (
        "max_homogeneity",
        "type",
        lambda: max_homogeneity(np.zeros(3, int), np.ones(3), np.ones(3, bool)),
        TypeError,
        "label_sets",
    ),
    (
        "CheckpointRecorder",
        "range",
        lambda: CheckpointRecorder(MODEL, every=0),
        ValueError,
        "every",
    ),
    (
        "CheckpointRecorder",
        "nan",
        lambda: CheckpointRecorder(MODEL, every=float("nan")),
        TypeError,
        "every",
    ),
    ("CheckpointRecorder", "type", lambda: CheckpointRecorder("model"), TypeError, "model"),
    (
        "CheckpointRecorder",
        "range",
        lambda: CheckpointRecorder(MODEL).maybe_save(-1),
        ValueError,
        "step",
    ),
    ("ParamSpace", "type", lambda: ParamSpace([1, 2]), TypeError, "model"),
    ("ParamSpace", "empty", lambda: ParamSpace(nn.ReLU()), ValueError, "model"),
    ("ParamSpace", "shape", lambda: SPACE.unflatten(torch.ones(3)), ValueError, "vector"),
    (
        "hf_checkpoint_callback",
        "type",
        lambda: hf_checkpoint_callback(MODEL),
        TypeError,
        "recorder",
    ),
    ("model_loss_fn", "type", lambda: model_loss_fn("model", _loss), TypeError, "model"),
    ("model_loss_fn", "type", lambda: model_loss_fn(MODEL, None), TypeError, "token_loss"),
    ("ExplicitSelfAttention", "range", lambda: ExplicitSelfAttention(6, 4), ValueError, "d_model"),
    ("ExplicitSelfAttention", "range", lambda: ExplicitSelfAttention(4, 0), ValueError, "n_heads"),
    (
        "ExplicitSelfAttention",
        "shape",
        lambda: ExplicitSelfAttention(4, 2)(torch.ones(2, 4)),
        ValueError,
        "x",
    ),
    ("TinyTransformer", "range", lambda: TinyTransformer(0, 5), ValueError, "vocab"),
    ("TinyTransformer", "nan", lambda: TinyTransformer(12, float("nan")), TypeError, "max_len"),
    (
        "TinyTransformer",
        "range",
        lambda: TinyTransformer(12, 5, d_model=8)(torch.full((1, 3), 12)),
        ValueError,
        "tokens",
    ),
    (
        "TinyTransformer",
        "shape",
        lambda: TinyTransformer(12, 5, d_model=8)(torch.zeros(1, 7, dtype=torch.long)),
        ValueError,
        "tokens",
    ),
    (
        "TinyTransformer",
        "dtype",
        lambda: TinyTransformer(12, 5, d_model=8)(torch.zeros(1, 3)),
        TypeError,
        "tokens",
    ),
    ("AdditionTask", "range", lambda: AdditionTask(0), ValueError, "n_digits"),
    ("AdditionTask", "type", lambda: AdditionTask(2.5), TypeError, "n_digits"),
    (
        "AdditionTask",
        "nan",
        lambda: TASK.encode(np.array([1.0, np.nan]), np.array([1, 2])),
        ValueError,
        "a",
    ),
    (
        "AdditionTask",
        "range",
        lambda: TASK.encode(np.array([1, 100]), np.array([1, 2])),
        ValueError,
        "a",
    ),
    (
        "AdditionTask",
        "shape",
        lambda: TASK.carry_labels(np.array([1, 2]), np.array([1])),
        ValueError,
        "b",
    ),
    ("AdditionTask", "empty", lambda: TASK.sample(0, RNG), ValueError, "n"),
    ("AdditionTask", "type", lambda: TASK.sample(3, 0), TypeError, "rng"),
    (
        "addition_token_losses",
        "type",
        lambda: addition_token_losses(MODEL, "task"),
        TypeError,
        "task",
    ),
    (
        "addition_token_losses",
        "type",
        lambda: addition_token_losses(None, TASK),
        TypeError,
        "model",
    ),
    ("train_addition", "range", lambda: train_addition(10, 0, 1, 0), ValueError, "steps"),
    (
        "train_addition",
        "range",
        lambda: train_addition(10, 2, 1, 0, lr=float("nan")),
        ValueError,
        "lr",
    ),
    ("train_addition", "empty", lambda: train_addition(0, 2, 1, 0), ValueError, "n_train"),
    (
        "run_addition_experiment",
        "range",
        lambda: run_addition_experiment(n_analysis=0),
        ValueError,
        "n_analysis",
    ),
    (
        "run_addition_experiment",
        "range",
        lambda: run_addition_experiment(second_order="third"),
        ValueError,
        "second_order",
    ),
    (
        "run_addition_experiment",
        "range",
        lambda: run_addition_experiment(steps=4, every=5),
        ValueError,
        "steps",
    ),
    (
        "run_addition_experiment",
        "range",
        lambda: run_addition_experiment(lr=-1.0, steps=4, every=1),
        ValueError,
        "lr",
    ),
]

EXEMPT = {}
