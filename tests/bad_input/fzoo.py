"""Bad-input cases of the fzoo room (FZOO, MeZO and their helpers)."""

import torch
from torch import nn

from iclr26.optim.fzoo import (
    FZOO,
    MeZO,
    ModelClosure,
    ZerothOrderOptimizer,
    batched_losses,
    direction_vector,
    directions,
    flat_update_direction,
    make_closure,
    model_loss,
    zo_fit,
)

NAN, INF = float("nan"), float("inf")


def _model():
    torch.manual_seed(0)
    return nn.Linear(3, 2)


def _theta():
    return [nn.Parameter(torch.zeros(4))]


X, Y = torch.randn(5, 3), torch.randint(0, 2, (5,))
X_NAN = X.clone()
X_NAN[1, 1] = NAN
X_INF = X.clone()
X_INF[0, 2] = INF
CE = nn.functional.cross_entropy


def _batched(perturbations):
    model = _model()
    return batched_losses(model, list(model.parameters()), (X, Y), CE, perturbations)


CASES = [
    ("FZOO", "nan", lambda: FZOO(_theta(), weight_decay=NAN), ValueError, "weight_decay"),
    ("FZOO", "nan", lambda: FZOO(_theta(), lr=NAN), ValueError, "lr"),
    ("FZOO", "inf", lambda: FZOO(_theta(), eps=INF), ValueError, "eps"),
    ("FZOO", "range", lambda: FZOO(_theta(), weight_decay=-0.1), ValueError, "weight_decay"),
    ("FZOO", "range", lambda: FZOO(_theta(), n_perturb=1), ValueError, "n_perturb"),
    ("FZOO", "range", lambda: FZOO(_theta(), std_floor=NAN), ValueError, "std_floor"),
    ("FZOO", "other", lambda: FZOO(_theta(), perturbation="sphere"), ValueError, "perturbation"),
    ("FZOO", "empty", lambda: FZOO([]), ValueError, "param"),
    (
        "FZOO",
        "nan",
        lambda: FZOO([{"params": _theta()}, {"params": _theta(), "eps": NAN}]),
        ValueError,
        "eps of param group 1",
    ),
    ("FZOO", "type", lambda: FZOO(_theta()).step(None), ValueError, "closure"),
    ("FZOO", "shape", lambda: FZOO(_theta()).step(lambda: torch.ones(3)), ValueError, "scalar"),
    ("MeZO", "nan", lambda: MeZO(_theta(), weight_decay=NAN), ValueError, "weight_decay"),
    ("MeZO", "inf", lambda: MeZO(_theta(), lr=INF), ValueError, "lr"),
    ("MeZO", "range", lambda: MeZO(_theta(), eps=0.0), ValueError, "eps"),
    ("MeZO", "range", lambda: MeZO(_theta(), n_directions=0), ValueError, "n_directions"),
    ("MeZO", "type", lambda: MeZO(_theta()).step("loss"), TypeError, "closure"),
    (
        "ZerothOrderOptimizer",
        "nan",
        lambda: ZerothOrderOptimizer(
            _theta(), dict(lr=1e-3, eps=NAN, weight_decay=0.0), seed=0, exact_restore=False
        ),
        ValueError,
        "eps",
    ),
    (
        "ZerothOrderOptimizer",
        "range",
        lambda: ZerothOrderOptimizer(
            _theta(), dict(lr=1e-3, eps=1e-3, weight_decay=0.0), seed=-3, exact_restore=False
        ),
        ValueError,
        "seed",
    ),
    ("ModelClosure", "nan", lambda: ModelClosure(_model(), (X_NAN, Y), CE), ValueError, "inputs"),
    ("ModelClosure", "inf", lambda: ModelClosure(_model(), (X_INF, Y), CE), ValueError, "inputs"),
    (
        "ModelClosure",
        "empty",
        lambda: ModelClosure(_model(), (X[:0], Y[:0]), CE),
        ValueError,
        "inputs",
    ),
    ("ModelClosure", "type", lambda: ModelClosure("model", (X, Y), CE), TypeError, "model"),
    ("make_closure", "nan", lambda: make_closure(_model(), (X_NAN, Y), CE), ValueError, "inputs"),
    ("make_closure", "other", lambda: make_closure(_model(), (X, Y)), ValueError, "loss_fn"),
    ("make_closure", "empty", lambda: make_closure(_model(), {}), ValueError, "batch"),
    ("model_loss", "inf", lambda: model_loss(_model(), (X_INF, Y), CE), ValueError, "inputs"),
    ("model_loss", "type", lambda: model_loss(_model(), X, CE), TypeError, "batch"),
    (
        "batched_losses",
        "nan",
        lambda: _batched(torch.full((2, 8), NAN)),
        ValueError,
        "perturbations",
    ),
    ("batched_losses", "shape", lambda: _batched(torch.zeros(2, 7)), ValueError, "perturbations"),
    ("batched_losses", "shape", lambda: _batched(torch.zeros(8)), ValueError, "perturbations"),
    ("batched_losses", "empty", lambda: _batched(torch.zeros(0, 8)), ValueError, "perturbations"),
    (
        "batched_losses",
        "nan",
        lambda: batched_losses(_model(), list(_model().parameters()), (X_NAN, Y), CE, []),
        ValueError,
        "inputs",
    ),
    ("directions", "empty", lambda: directions([], 0, "rademacher"), ValueError, "params"),
    ("directions", "other", lambda: directions(_theta(), 0, "sobol"), ValueError, "kind"),
    ("directions", "nan", lambda: directions(_theta(), NAN, "gaussian"), TypeError, "seed"),
    (
        "direction_vector",
        "empty",
        lambda: direction_vector([], 0, "gaussian"),
        ValueError,
        "params",
    ),
    (
        "direction_vector",
        "dtype",
        lambda: direction_vector([torch.zeros(3, dtype=torch.long)], 0, "gaussian"),
        TypeError,
        "params",
    ),
    (
        "flat_update_direction",
        "type",
        lambda: flat_update_direction(MeZO(_theta())),
        TypeError,
        "opt",
    ),
    (
        "zo_fit",
        "range",
        lambda: zo_fit(_model(), [(X, Y)], FZOO(_model().parameters()), CE, max_forward_passes=0),
        ValueError,
        "max_forward_passes",
    ),
    (
        "zo_fit",
        "nan",
        lambda: zo_fit(_model(), [(X, Y)], FZOO(_model().parameters()), CE, eval_every_passes=NAN),
        TypeError,
        "eval_every_passes",
    ),
    (
        "zo_fit",
        "empty",
        lambda: zo_fit(_model(), [], FZOO(_model().parameters()), CE, max_forward_passes=5),
        ValueError,
        "dataloader",
    ),
    (
        "zo_fit",
        "type",
        lambda: zo_fit(_model(), [(X, Y)], torch.optim.SGD(_model().parameters(), lr=0.1), CE),
        TypeError,
        "opt",
    ),
]

EXEMPT: dict[str, str] = {}
