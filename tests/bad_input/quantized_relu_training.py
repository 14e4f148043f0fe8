"""Bad input for the quantized_relu_training room: every public callable refuses it with a
ValueError/TypeError that names the argument."""

import networkx as nx
import numpy as np

from iclr26.dynamics.quantized_relu_training import (
    Architecture,
    QNNTInstance,
    QuantizedDomain,
    QuantizedReLUClassifier,
    deduplicate,
    layered,
    planted_instance,
    random_labels_instance,
    random_network,
    solve_brute_force,
    solve_cpsat,
    solve_signature_dp,
)

ARCH = layered(2, [1], 1)
X = np.array([[0, 1], [1, 1], [0, 0]])
Y = np.array([0, 1, 0])
X_NAN = np.array([[0.0, np.nan], [1.0, 1.0], [0.0, 0.0]])
X_INF = np.array([[0.0, np.inf], [1.0, 1.0], [0.0, 0.0]])
DOM = QuantizedDomain(2)


def _inst():
    return QNNTInstance(ARCH, X, Y, d=2)


def _cyclic():
    g = nx.DiGraph([(0, 1), (1, 2), (2, 1)])
    return Architecture(g)


CASES = [
    ("Architecture", "type", lambda: Architecture("a graph"), TypeError, "graph"),
    ("Architecture", "empty", lambda: Architecture(nx.DiGraph()), ValueError, "graph"),
    ("Architecture", "other", _cyclic, ValueError, "graph"),
    ("QNNTInstance", "nan", lambda: QNNTInstance(ARCH, X_NAN, Y), ValueError, "X"),
    ("QNNTInstance", "inf", lambda: QNNTInstance(ARCH, X_INF, Y), ValueError, "X"),
    (
        "QNNTInstance",
        "empty",
        lambda: QNNTInstance(ARCH, np.zeros((0, 2), int), np.zeros(0, int)),
        ValueError,
        "X",
    ),
    ("QNNTInstance", "shape", lambda: QNNTInstance(ARCH, X[:, :1], Y), ValueError, "X"),
    ("QNNTInstance", "shape", lambda: QNNTInstance(ARCH, X, Y[:2]), ValueError, "Y"),
    ("QNNTInstance", "nan", lambda: QNNTInstance(ARCH, X, [0.0, np.nan, 1.0]), ValueError, "Y"),
    ("QNNTInstance", "range", lambda: QNNTInstance(ARCH, X + 1, Y), ValueError, "X"),
    ("QNNTInstance", "range", lambda: QNNTInstance(ARCH, X, Y, ell=-1), ValueError, "ell"),
    ("QNNTInstance", "range", lambda: QNNTInstance(ARCH, X, Y, ell=1.5), TypeError, "ell"),
    ("QNNTInstance", "range", lambda: QNNTInstance(ARCH, X, Y, d=1), ValueError, "d"),
    (
        "QNNTInstance",
        "range",
        lambda: QNNTInstance(ARCH, X, Y, output_activation="tanh"),
        ValueError,
        "output_activation",
    ),
    ("QNNTInstance", "type", lambda: QNNTInstance("arch", X, Y), TypeError, "architecture"),
    (
        "QNNTInstance",
        "range",
        lambda: _inst().evaluate({e: 3 for e in ARCH.edges}, {v: 0 for v in ARCH.computed}),
        ValueError,
        "weights",
    ),
    (
        "QNNTInstance",
        "nan",
        lambda: _inst().predict(
            {e: 1 for e in ARCH.edges}, {v: float("nan") for v in ARCH.computed}
        ),
        ValueError,
        "biases",
    ),
    (
        "QNNTInstance",
        "nan",
        lambda: _inst().predict({e: 1 for e in ARCH.edges}, {v: 0 for v in ARCH.computed}, X_NAN),
        ValueError,
        "X",
    ),
    ("QuantizedDomain", "range", lambda: QuantizedDomain(1), ValueError, "d"),
    ("QuantizedDomain", "nan", lambda: QuantizedDomain(float("nan")), TypeError, "d"),
    ("QuantizedDomain", "type", lambda: QuantizedDomain(2.5), TypeError, "d"),
    (
        "QuantizedReLUClassifier",
        "nan",
        lambda: QuantizedReLUClassifier().fit(X_NAN, Y),
        ValueError,
        "X",
    ),
    (
        "QuantizedReLUClassifier",
        "inf",
        lambda: QuantizedReLUClassifier().fit(X_INF, Y),
        ValueError,
        "X",
    ),
    (
        "QuantizedReLUClassifier",
        "empty",
        lambda: QuantizedReLUClassifier().fit(np.zeros((0, 2)), np.zeros(0)),
        ValueError,
        "X",
    ),
    (
        "QuantizedReLUClassifier",
        "shape",
        lambda: QuantizedReLUClassifier().fit(X, Y[:2]),
        ValueError,
        "y",
    ),
    (
        "QuantizedReLUClassifier",
        "nan",
        lambda: QuantizedReLUClassifier().fit(X, [0.0, np.nan, 1.0]),
        ValueError,
        "y",
    ),
    (
        "QuantizedReLUClassifier",
        "range",
        lambda: QuantizedReLUClassifier().fit(X + 2, Y),
        ValueError,
        "X",
    ),
    (
        "QuantizedReLUClassifier",
        "range",
        lambda: QuantizedReLUClassifier(d=0).fit(X, Y),
        ValueError,
        "d",
    ),
    (
        "QuantizedReLUClassifier",
        "range",
        lambda: QuantizedReLUClassifier(widths=[0]).fit(X, Y),
        ValueError,
        "widths",
    ),
    (
        "QuantizedReLUClassifier",
        "range",
        lambda: QuantizedReLUClassifier(solver="magic").fit(X, Y),
        ValueError,
        "solver",
    ),
    (
        "QuantizedReLUClassifier",
        "shape",
        lambda: QuantizedReLUClassifier().fit(X, Y).predict(X[:, :1]),
        ValueError,
        "X",
    ),
    ("deduplicate", "nan", lambda: deduplicate(X_NAN, Y[:, None], DOM), ValueError, "X"),
    ("deduplicate", "shape", lambda: deduplicate(X, Y[:2, None], DOM), ValueError, "Y"),
    (
        "deduplicate",
        "empty",
        lambda: deduplicate(np.zeros((0, 2)), np.zeros((0, 1)), DOM),
        ValueError,
        "X",
    ),
    ("deduplicate", "type", lambda: deduplicate(X, Y[:, None], 2), TypeError, "domain"),
    ("layered", "range", lambda: layered(0, [1], 1), ValueError, "alpha"),
    ("layered", "range", lambda: layered(2, [1], 0), ValueError, "omega"),
    ("layered", "range", lambda: layered(2, [2, -1], 1), ValueError, r"widths\[1\]"),
    ("layered", "nan", lambda: layered(2, [float("nan")], 1), TypeError, r"widths\[0\]"),
    ("layered", "type", lambda: layered(2, 3, 1), TypeError, "widths"),
    (
        "planted_instance",
        "range",
        lambda: planted_instance(2, [1], 1, 10, noise=1.5),
        ValueError,
        "noise",
    ),
    (
        "planted_instance",
        "nan",
        lambda: planted_instance(2, [1], 1, 10, noise=float("nan")),
        ValueError,
        "noise",
    ),
    ("planted_instance", "empty", lambda: planted_instance(2, [1], 1, 0), ValueError, "n"),
    ("planted_instance", "range", lambda: planted_instance(2, [1], 1, 10, d=1), ValueError, "d"),
    (
        "random_labels_instance",
        "empty",
        lambda: random_labels_instance(2, [1], 1, 0),
        ValueError,
        "n",
    ),
    (
        "random_labels_instance",
        "range",
        lambda: random_labels_instance(0, [1], 1, 5),
        ValueError,
        "alpha",
    ),
    (
        "random_labels_instance",
        "range",
        lambda: random_labels_instance(2, [1], 1, 5, output_activation="sigmoid"),
        ValueError,
        "output_activation",
    ),
    (
        "random_network",
        "type",
        lambda: random_network("arch", 2, np.random.default_rng(0)),
        TypeError,
        "arch",
    ),
    ("random_network", "type", lambda: random_network(ARCH, 2, 0), TypeError, "rng"),
    (
        "random_network",
        "range",
        lambda: random_network(ARCH, 1, np.random.default_rng(0)),
        ValueError,
        "d",
    ),
    ("solve_brute_force", "type", lambda: solve_brute_force("inst"), TypeError, "inst"),
    (
        "solve_brute_force",
        "nan",
        lambda: solve_brute_force(_inst(), time_limit=float("nan")),
        ValueError,
        "time_limit",
    ),
    (
        "solve_brute_force",
        "range",
        lambda: solve_brute_force(_inst(), time_limit=-1),
        ValueError,
        "time_limit",
    ),
    (
        "solve_brute_force",
        "range",
        lambda: solve_brute_force(_inst(), max_assignments=2),
        ValueError,
        "max_assignments",
    ),
    (
        "solve_brute_force",
        "range",
        lambda: solve_brute_force(_inst(), chunk_elements=0),
        ValueError,
        "chunk_elements",
    ),
    ("solve_signature_dp", "type", lambda: solve_signature_dp(None), TypeError, "inst"),
    (
        "solve_signature_dp",
        "range",
        lambda: solve_signature_dp(_inst(), max_states=0),
        ValueError,
        "max_states",
    ),
    (
        "solve_signature_dp",
        "nan",
        lambda: solve_signature_dp(_inst(), time_limit=float("nan")),
        ValueError,
        "time_limit",
    ),
    (
        "solve_signature_dp",
        "inf",
        lambda: solve_signature_dp(_inst(), time_limit=float("inf")),
        ValueError,
        "time_limit",
    ),
    (
        "solve_signature_dp",
        "type",
        lambda: solve_signature_dp(_inst(), canonicalize="yes"),
        TypeError,
        "canonicalize",
    ),
    ("solve_cpsat", "type", lambda: solve_cpsat([1, 2]), TypeError, "inst"),
    ("solve_cpsat", "range", lambda: solve_cpsat(_inst(), workers=0), ValueError, "workers"),
    (
        "solve_cpsat",
        "nan",
        lambda: solve_cpsat(_inst(), time_limit=float("nan")),
        ValueError,
        "time_limit",
    ),
]

EXEMPT = {
    "DistinctData": "a record of deduplicated data built by deduplicate(), which validates it",
    "SolverResult": "a record type returned by the solvers; it takes no user data",
}
