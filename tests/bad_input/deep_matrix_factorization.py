"""Bad input for the deep_matrix_factorization room: every public callable refuses it with a
ValueError/TypeError that names the argument (a divergent step size included)."""

import numpy as np

from iclr26.dynamics.deep_matrix_factorization import (
    DeepMatrixFactorization,
    coupling_index,
    coupling_matrix,
    effective_rank,
    factor_shapes,
    gradient_descent,
    initialize,
    integrate_ode,
    loss_and_gradients,
    nuclear_over_frobenius,
    observation_blocks,
    plasticity_experiment,
    product,
    relative_error,
    singular_value_ratio,
)

M = np.diag([1.0, 0.8, 0.6])
MASK = np.eye(3, dtype=bool)
M_NAN = M.copy()
M_NAN[0, 0] = np.nan
M_INF = M.copy()
M_INF[1, 1] = np.inf
M_NAN_OFF = M.copy()
M_NAN_OFF[0, 1] = np.nan
F2 = [np.eye(3) * 0.1, np.eye(3) * 0.1]
F2_NAN = [np.eye(3) * np.nan, np.eye(3)]
F2_INF = [np.eye(3), np.full((3, 3), np.inf)]
F2_BAD = [np.eye(3), np.ones((3, 2))]
BATCH = [F[None] for F in F2]
RNG = np.random.default_rng(0)
MORE = MASK | np.eye(3, k=1, dtype=bool)


def _fit(**kw):
    return DeepMatrixFactorization(max_steps=50, **kw)


CASES = [
    ("DeepMatrixFactorization", "nan", lambda: _fit().fit(M_NAN, MASK), ValueError, "M"),
    ("DeepMatrixFactorization", "inf", lambda: _fit().fit(M_INF, MASK), ValueError, "M"),
    (
        "DeepMatrixFactorization",
        "empty",
        lambda: _fit().fit(np.zeros((0, 3)), np.zeros((0, 3), bool)),
        ValueError,
        "M",
    ),
    (
        "DeepMatrixFactorization",
        "empty",
        lambda: _fit().fit(M, np.zeros((3, 3), bool)),
        ValueError,
        "mask",
    ),
    (
        "DeepMatrixFactorization",
        "shape",
        lambda: _fit().fit(M, np.eye(2, dtype=bool)),
        ValueError,
        "mask",
    ),
    ("DeepMatrixFactorization", "shape", lambda: _fit().fit(M[0], MASK[0]), ValueError, "M"),
    (
        "DeepMatrixFactorization",
        "dtype",
        lambda: _fit().fit(M, np.full((3, 3), 0.5)),
        ValueError,
        "mask",
    ),
    ("DeepMatrixFactorization", "range", lambda: _fit(depth=1).fit(M, MASK), ValueError, "depth"),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(lr=float("nan")).fit(M, MASK),
        ValueError,
        "lr",
    ),
    ("DeepMatrixFactorization", "range", lambda: _fit(lr=-0.1).fit(M, MASK), ValueError, "lr"),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: DeepMatrixFactorization(depth=3, init_scale=0.5, lr=50.0, max_steps=2000).fit(
            M, MASK
        ),
        ValueError,
        "lr",
    ),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(init_scale=float("inf")).fit(M, MASK),
        ValueError,
        "init_scale",
    ),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(tol=float("nan")).fit(M, MASK),
        ValueError,
        "tol",
    ),
    ("DeepMatrixFactorization", "range", lambda: _fit(width=0).fit(M, MASK), ValueError, "width"),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(init="nope").fit(M, MASK),
        ValueError,
        "init",
    ),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(solver="euler").fit(M, MASK),
        ValueError,
        "solver",
    ),
    (
        "DeepMatrixFactorization",
        "range",
        lambda: _fit(max_steps=2.5).fit(M, MASK),
        TypeError,
        "max_steps",
    ),
    (
        "DeepMatrixFactorization",
        "nan",
        lambda: _fit(depth=2).fit(M, MASK, initial_factors=F2_NAN),
        ValueError,
        "initial_factors",
    ),
    (
        "DeepMatrixFactorization",
        "nan",
        lambda: _fit().fit(M, MASK).score(M_NAN_OFF, ~MASK),
        ValueError,
        "M",
    ),
    ("coupling_index", "nan", lambda: coupling_index(F2_NAN, MASK), ValueError, "factors"),
    ("coupling_index", "inf", lambda: coupling_index(F2_INF, MASK), ValueError, "factors"),
    ("coupling_index", "empty", lambda: coupling_index([], MASK), ValueError, "factors"),
    ("coupling_index", "shape", lambda: coupling_index(F2_BAD, MASK), ValueError, "factors"),
    (
        "coupling_index",
        "shape",
        lambda: coupling_index(F2, np.eye(2, dtype=bool)),
        ValueError,
        "mask",
    ),
    (
        "coupling_index",
        "empty",
        lambda: coupling_index(F2, np.zeros((3, 3), bool)),
        ValueError,
        "mask",
    ),
    (
        "coupling_index",
        "type",
        lambda: coupling_index(F2, MASK, between_blocks="yes"),
        TypeError,
        "between_blocks",
    ),
    ("coupling_matrix", "nan", lambda: coupling_matrix(F2_NAN, MASK), ValueError, "factors"),
    ("coupling_matrix", "shape", lambda: coupling_matrix([np.eye(3)], MASK), ValueError, "factors"),
    ("coupling_matrix", "type", lambda: coupling_matrix(np.eye(3), MASK), TypeError, "factors"),
    (
        "observation_blocks",
        "empty",
        lambda: observation_blocks(np.zeros((3, 3), bool)),
        ValueError,
        "mask",
    ),
    (
        "observation_blocks",
        "shape",
        lambda: observation_blocks(np.ones(3, bool)),
        ValueError,
        "mask",
    ),
    (
        "observation_blocks",
        "nan",
        lambda: observation_blocks(np.full((2, 2), np.nan)),
        ValueError,
        "mask",
    ),
    ("effective_rank", "nan", lambda: effective_rank(M_NAN), ValueError, "W"),
    ("effective_rank", "inf", lambda: effective_rank(M_INF), ValueError, "W"),
    ("effective_rank", "empty", lambda: effective_rank(np.zeros((0, 3))), ValueError, "W"),
    ("effective_rank", "shape", lambda: effective_rank(np.ones(3)), ValueError, "W"),
    ("nuclear_over_frobenius", "nan", lambda: nuclear_over_frobenius(M_NAN), ValueError, "W"),
    (
        "nuclear_over_frobenius",
        "shape",
        lambda: nuclear_over_frobenius(np.ones(3)),
        ValueError,
        "W",
    ),
    ("singular_value_ratio", "nan", lambda: singular_value_ratio(M_NAN), ValueError, "W"),
    (
        "singular_value_ratio",
        "shape",
        lambda: singular_value_ratio(np.ones((3, 1))),
        ValueError,
        "W",
    ),
    (
        "singular_value_ratio",
        "range",
        lambda: singular_value_ratio(M, floor=float("nan")),
        ValueError,
        "floor",
    ),
    ("relative_error", "nan", lambda: relative_error(M_NAN, M, ~MASK), ValueError, "W"),
    ("relative_error", "inf", lambda: relative_error(M, M_INF, ~MASK), ValueError, "M"),
    ("relative_error", "shape", lambda: relative_error(M, M[:2], ~MASK), ValueError, "M"),
    (
        "relative_error",
        "empty",
        lambda: relative_error(M, M, np.zeros((3, 3), bool)),
        ValueError,
        "test_mask",
    ),
    ("factor_shapes", "range", lambda: factor_shapes(3, 3, 0, 3), ValueError, "depth"),
    ("factor_shapes", "range", lambda: factor_shapes(0, 3, 2, 3), ValueError, "n"),
    ("factor_shapes", "nan", lambda: factor_shapes(3, 3, 2, float("nan")), TypeError, "width"),
    (
        "initialize",
        "range",
        lambda: initialize(factor_shapes(3, 3, 2, 3), "gaussian", -1.0, RNG),
        ValueError,
        "scale",
    ),
    (
        "initialize",
        "nan",
        lambda: initialize(factor_shapes(3, 3, 2, 3), "gaussian", float("nan"), RNG),
        ValueError,
        "scale",
    ),
    (
        "initialize",
        "range",
        lambda: initialize(factor_shapes(3, 3, 2, 3), "uniform", 1.0, RNG),
        ValueError,
        "init",
    ),
    ("initialize", "empty", lambda: initialize([], "gaussian", 1.0, RNG), TypeError, "shapes"),
    (
        "initialize",
        "shape",
        lambda: initialize([(3, 0)], "gaussian", 1.0, RNG),
        ValueError,
        r"shapes\[0\]",
    ),
    (
        "initialize",
        "type",
        lambda: initialize(factor_shapes(3, 3, 2, 3), "gaussian", 1.0, 0),
        TypeError,
        "rng",
    ),
    ("product", "nan", lambda: product(F2_NAN), ValueError, "factors"),
    ("product", "shape", lambda: product(F2_BAD), ValueError, "factors"),
    ("product", "empty", lambda: product([]), ValueError, "factors"),
    ("loss_and_gradients", "nan", lambda: loss_and_gradients(F2, M_NAN, MASK), ValueError, "M"),
    (
        "loss_and_gradients",
        "inf",
        lambda: loss_and_gradients(F2_INF, M, MASK),
        ValueError,
        "factors",
    ),
    (
        "loss_and_gradients",
        "shape",
        lambda: loss_and_gradients(F2, M[:2], MASK[:2]),
        ValueError,
        "M",
    ),
    ("gradient_descent", "nan", lambda: gradient_descent(BATCH, M_NAN, MASK), ValueError, "M"),
    ("gradient_descent", "shape", lambda: gradient_descent(F2, M, MASK), ValueError, "factors"),
    (
        "gradient_descent",
        "range",
        lambda: gradient_descent(BATCH, M, MASK, lr=0.0),
        ValueError,
        "lr",
    ),
    (
        "gradient_descent",
        "range",
        lambda: gradient_descent(BATCH, M, MASK, lr=float("nan")),
        ValueError,
        "lr",
    ),
    (
        "gradient_descent",
        "range",
        lambda: gradient_descent(BATCH, M, MASK, max_steps=-1),
        ValueError,
        "max_steps",
    ),
    (
        "gradient_descent",
        "range",
        lambda: gradient_descent(BATCH, M, MASK, tol=float("nan")),
        ValueError,
        "tol",
    ),
    (
        "gradient_descent",
        "empty",
        lambda: gradient_descent(BATCH, M, np.zeros((3, 3), bool)),
        ValueError,
        "mask",
    ),
    ("integrate_ode", "nan", lambda: integrate_ode(F2_NAN, M, MASK), ValueError, "factors"),
    ("integrate_ode", "shape", lambda: integrate_ode(BATCH, M, MASK), ValueError, "factors"),
    (
        "integrate_ode",
        "range",
        lambda: integrate_ode(F2, M, MASK, t_max=float("inf")),
        ValueError,
        "t_max",
    ),
    ("integrate_ode", "range", lambda: integrate_ode(F2, M, MASK, rtol=0.0), ValueError, "rtol"),
    (
        "integrate_ode",
        "range",
        lambda: integrate_ode(F2, M, MASK, method="euler"),
        ValueError,
        "method",
    ),
    (
        "plasticity_experiment",
        "nan",
        lambda: plasticity_experiment(2, M_NAN, MASK, MORE),
        ValueError,
        "M",
    ),
    (
        "plasticity_experiment",
        "empty",
        lambda: plasticity_experiment(2, M, MASK, MORE, seeds=[]),
        ValueError,
        "seeds",
    ),
    (
        "plasticity_experiment",
        "range",
        lambda: plasticity_experiment(1, M, MASK, MORE),
        ValueError,
        "depth",
    ),
    (
        "plasticity_experiment",
        "range",
        lambda: plasticity_experiment(2, M, MASK, MORE, lr=50.0, init_scale=0.5, max_steps=2000),
        ValueError,
        "lr",
    ),
    (
        "plasticity_experiment",
        "range",
        lambda: plasticity_experiment(2, M, MASK, MORE, init_scale=float("nan")),
        ValueError,
        "init_scale",
    ),
    (
        "plasticity_experiment",
        "shape",
        lambda: plasticity_experiment(2, M, MASK[:2], MORE),
        ValueError,
        "mask_phase1",
    ),
    (
        "plasticity_experiment",
        "other",
        lambda: plasticity_experiment(2, M, MORE, MASK),
        ValueError,
        "mask_phase2",
    ),
]

EXEMPT = {}
