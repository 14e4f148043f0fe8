"""Bad-input cases of the decision-tree active-learning room (tiny pools)."""

import numpy as np

from iclr26.classic.dt_active_learning import (
    AdditiveDisagreementLearner,
    EnumeratedClass,
    GridTreeClass,
    LabelOracle,
    MultiplicativeActiveLearner,
    PassiveERM,
    StumpActiveLearner,
    StumpClass,
    UncertaintySamplingTree,
    ball_disagreement,
    disagreement_coefficient,
    line_pool_class,
    make_grid_task,
    make_stump_task,
    optimal_error,
    random_grid_tree,
)

NAN, INF = float("nan"), float("inf")
X_STUMP, Y_STUMP, _ = make_stump_task(16, random_state=0)
X_NAN = X_STUMP.astype(float)
X_NAN[3, 0] = NAN
STUMPS = StumpClass(16)
GRID = GridTreeClass(4)
X_GRID, Y_GRID, H_GRID = make_grid_task(w=4, random_state=0)


def _oracle():
    return LabelOracle(Y_STUMP)


def _nan_oracle(idx):
    return np.full(len(idx), NAN)


CASES = [
    ("StumpClass", "range", lambda: StumpClass(1), ValueError, "n"),
    ("StumpClass", "type", lambda: StumpClass(4.5), TypeError, "n"),
    ("GridTreeClass", "range", lambda: GridTreeClass(1), ValueError, "w"),
    (
        "GridTreeClass",
        "shape",
        lambda: GridTreeClass(4, weights=np.ones((3, 3))),
        ValueError,
        "weights",
    ),
    (
        "GridTreeClass",
        "nan",
        lambda: GridTreeClass(2, weights=np.array([[1, NAN], [1, 1]])),
        ValueError,
        "weights",
    ),
    (
        "GridTreeClass",
        "range",
        lambda: GridTreeClass(2, weights=-np.ones((2, 2))),
        ValueError,
        "weights",
    ),
    ("GridTreeClass", "other", lambda: GridTreeClass(4, dim=3), ValueError, "dim"),
    (
        "EnumeratedClass",
        "empty",
        lambda: EnumeratedClass(np.empty((0, 4))),
        ValueError,
        "predictions",
    ),
    (
        "EnumeratedClass",
        "other",
        lambda: EnumeratedClass(np.full((2, 3), 2)),
        ValueError,
        "predictions",
    ),
    (
        "EnumeratedClass",
        "shape",
        lambda: EnumeratedClass(np.zeros((2, 3)), weights=np.ones(4)),
        ValueError,
        "weights",
    ),
    ("EnumeratedClass", "range", lambda: EnumeratedClass.grid_trees(1), ValueError, "w"),
    ("LabelOracle", "nan", lambda: LabelOracle(np.array([0.0, NAN])), ValueError, "labels"),
    ("LabelOracle", "empty", lambda: LabelOracle([]), ValueError, "labels"),
    ("LabelOracle", "other", lambda: LabelOracle([0, 2]), ValueError, "labels"),
    ("LabelOracle", "range", lambda: _oracle()([16]), ValueError, "idx"),
    ("LabelOracle", "dtype", lambda: _oracle()([1.5]), TypeError, "idx"),
    (
        "MultiplicativeActiveLearner",
        "range",
        lambda: MultiplicativeActiveLearner(STUMPS, epsilon=NAN),
        ValueError,
        "epsilon",
    ),
    (
        "MultiplicativeActiveLearner",
        "range",
        lambda: MultiplicativeActiveLearner(STUMPS, delta=1.0),
        ValueError,
        "delta",
    ),
    (
        "MultiplicativeActiveLearner",
        "range",
        lambda: MultiplicativeActiveLearner(STUMPS, c0=INF),
        ValueError,
        "c0",
    ),
    (
        "MultiplicativeActiveLearner",
        "range",
        lambda: MultiplicativeActiveLearner(STUMPS, theta=-1.0),
        ValueError,
        "theta",
    ),
    (
        "MultiplicativeActiveLearner",
        "range",
        lambda: MultiplicativeActiveLearner(STUMPS, constants="x"),
        ValueError,
        "constants",
    ),
    (
        "MultiplicativeActiveLearner",
        "type",
        lambda: MultiplicativeActiveLearner("stumps"),
        TypeError,
        "hypotheses",
    ),
    (
        "MultiplicativeActiveLearner",
        "nan",
        lambda: MultiplicativeActiveLearner(STUMPS).fit(X_NAN, _oracle()),
        ValueError,
        "X",
    ),
    (
        "MultiplicativeActiveLearner",
        "shape",
        lambda: MultiplicativeActiveLearner(STUMPS).fit(X_GRID, _oracle()),
        ValueError,
        "X",
    ),
    (
        "MultiplicativeActiveLearner",
        "type",
        lambda: MultiplicativeActiveLearner(STUMPS).fit(X_STUMP, Y_STUMP),
        TypeError,
        "oracle",
    ),
    (
        "MultiplicativeActiveLearner",
        "nan",
        lambda: MultiplicativeActiveLearner(STUMPS).fit(X_STUMP, _nan_oracle),
        ValueError,
        "oracle",
    ),
    ("StumpActiveLearner", "range", lambda: StumpActiveLearner(1), ValueError, "n"),
    (
        "StumpActiveLearner",
        "range",
        lambda: StumpActiveLearner(16, epsilon=0.0),
        ValueError,
        "epsilon",
    ),
    (
        "StumpActiveLearner",
        "empty",
        lambda: StumpActiveLearner(16).fit(np.empty((0, 1)), _oracle()),
        ValueError,
        "X",
    ),
    (
        "StumpActiveLearner",
        "shape",
        lambda: StumpActiveLearner(16, random_state=0).fit(X_STUMP, _oracle()).predict(X_GRID),
        ValueError,
        "X",
    ),
    (
        "AdditiveDisagreementLearner",
        "range",
        lambda: AdditiveDisagreementLearner(STUMPS, epsilon_add=NAN),
        ValueError,
        "epsilon_add",
    ),
    (
        "AdditiveDisagreementLearner",
        "range",
        lambda: AdditiveDisagreementLearner(STUMPS, epsilon_add=1.0),
        ValueError,
        "epsilon_add",
    ),
    (
        "AdditiveDisagreementLearner",
        "inf",
        lambda: AdditiveDisagreementLearner(STUMPS).fit(np.full((16, 1), INF), _oracle()),
        ValueError,
        "X",
    ),
    ("PassiveERM", "range", lambda: PassiveERM(STUMPS, 0), ValueError, "n_labels"),
    ("PassiveERM", "type", lambda: PassiveERM(STUMPS, 2.5), TypeError, "n_labels"),
    (
        "PassiveERM",
        "range",
        lambda: PassiveERM(STUMPS, 17).fit(X_STUMP, _oracle()),
        ValueError,
        "n_labels",
    ),
    (
        "UncertaintySamplingTree",
        "range",
        lambda: UncertaintySamplingTree(budget=0),
        ValueError,
        "budget",
    ),
    (
        "UncertaintySamplingTree",
        "type",
        lambda: UncertaintySamplingTree(depth=1.5),
        TypeError,
        "depth",
    ),
    (
        "UncertaintySamplingTree",
        "nan",
        lambda: UncertaintySamplingTree().fit(X_NAN, _oracle()),
        ValueError,
        "X",
    ),
    (
        "UncertaintySamplingTree",
        "empty",
        lambda: UncertaintySamplingTree().fit(np.empty((0, 2)), _oracle()),
        ValueError,
        "X",
    ),
    ("ball_disagreement", "range", lambda: ball_disagreement(GRID, H_GRID, NAN), ValueError, "r"),
    (
        "ball_disagreement",
        "range",
        lambda: ball_disagreement(GRID, (0, 9, 0, 0), 0.1),
        ValueError,
        "h_star",
    ),
    ("ball_disagreement", "type", lambda: ball_disagreement("grid", H_GRID, 0.1), TypeError, "cls"),
    (
        "disagreement_coefficient",
        "range",
        lambda: disagreement_coefficient(STUMPS, (0, 3), radii=[0.0, 0.5]),
        ValueError,
        "radii",
    ),
    (
        "disagreement_coefficient",
        "nan",
        lambda: disagreement_coefficient(STUMPS, (0, 3), radii=[NAN]),
        ValueError,
        "radii",
    ),
    (
        "disagreement_coefficient",
        "empty",
        lambda: disagreement_coefficient(STUMPS, (0, 3), radii=[]),
        ValueError,
        "radii",
    ),
    (
        "disagreement_coefficient",
        "dtype",
        lambda: disagreement_coefficient(STUMPS, (0.5, 3)),
        TypeError,
        "h_star",
    ),
    ("line_pool_class", "range", lambda: line_pool_class(1), ValueError, "n"),
    ("make_grid_task", "range", lambda: make_grid_task(w=4, n_flips=17), ValueError, "n_flips"),
    ("make_grid_task", "range", lambda: make_grid_task(w=1), ValueError, "w"),
    ("make_grid_task", "other", lambda: make_grid_task(dim=3), ValueError, "dim"),
    ("make_stump_task", "range", lambda: make_stump_task(16, noise=NAN), ValueError, "noise"),
    ("make_stump_task", "range", lambda: make_stump_task(16, noise=0.5), ValueError, "noise"),
    ("make_stump_task", "range", lambda: make_stump_task(16, n_flips=-1), ValueError, "n_flips"),
    ("make_stump_task", "type", lambda: make_stump_task(16.5), TypeError, "n"),
    ("optimal_error", "shape", lambda: optimal_error(GRID, np.zeros(5)), ValueError, "labels"),
    ("optimal_error", "nan", lambda: optimal_error(STUMPS, np.full(16, NAN)), ValueError, "labels"),
    ("optimal_error", "other", lambda: optimal_error(STUMPS, np.full(16, 3)), ValueError, "labels"),
    (
        "random_grid_tree",
        "range",
        lambda: random_grid_tree(1, np.random.default_rng(0)),
        ValueError,
        "w",
    ),
    ("random_grid_tree", "type", lambda: random_grid_tree(4, 0), TypeError, "rng"),
]

EXEMPT = {}
