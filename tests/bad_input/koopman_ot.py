"""Bad-input cases for the koopman_ot room (read by tests/framework/test_bad_input.py)."""

import tempfile
from pathlib import Path

import numpy as np

from iclr26.timeseries.koopman_ot import (
    FeatureMap,
    KoopmanOTClassifier,
    SpectralMeasure,
    continuous_eigs,
    damped_oscillator,
    distance_matrix,
    estimate_operator,
    eta_heuristic,
    got_distance,
    grassmann_distance,
    hs_distance,
    load_uea,
    martin_distance,
    martin_distance_matrix,
    operator_norm_distance,
    oscillator_generator,
    pairwise_distances,
    plane_rotation,
    random_orthogonal,
    read_ts,
    sgot_barycenter,
    sgot_cost,
    sgot_distance,
    sot_distance,
    subspace_similarity,
    wasserstein,
)

NAN, INF = float("nan"), float("inf")


def _measure(dim=3, r=2, dt=0.1, seed=0, **kw):
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(dim, r)) + 1j * rng.normal(size=(dim, r))
    return SpectralMeasure(rng.normal(size=r) + 1j, R, np.linalg.pinv(R).conj().T, np.ones(r), dt)


_A, _B, _B4 = _measure(seed=1), _measure(seed=2), _measure(dim=4, seed=3)
_X = damped_oscillator([1.0], [0.1], dt=0.1, T=30, n_traj=2, random_state=0)
_XNAN = _X.copy()
_XNAN[0, 3, 1] = np.nan
_XINF = _X.copy()
_XINF[1, 0, 0] = np.inf
_Y = np.array(["a", "b"])


def _rbf_pair():
    a = estimate_operator(_X, 0.1, rank=2, kernel="rbf", n_landmarks=10)
    b = estimate_operator(_X[::-1] * 2.0, 0.1, rank=2, kernel="rbf", n_landmarks=10)
    return a, b


def _ts_file(body):
    path = Path(tempfile.mkdtemp()) / "bad.ts"
    path.write_text(body)
    return path


def _fitted():
    return KoopmanOTClassifier(rank=2).fit(_X, _Y)


CASES = [
    # estimation
    ("estimate_operator", "nan", lambda: estimate_operator(_XNAN, 0.1, rank=2), ValueError, "traj"),
    ("estimate_operator", "inf", lambda: estimate_operator(_XINF, 0.1, rank=2), ValueError, "traj"),
    ("estimate_operator", "empty", lambda: estimate_operator([], 0.1), ValueError, "trajectories"),
    (
        "estimate_operator",
        "shape",
        lambda: estimate_operator(np.zeros((2, 2, 2, 2)), 0.1),
        ValueError,
        "trajectories must be",
    ),
    (
        "estimate_operator",
        "shape",
        lambda: estimate_operator([_X[0], _X[1][:, :1]], 0.1, rank=1),
        ValueError,
        r"trajectories\[1\]",
    ),
    ("estimate_operator", "range", lambda: estimate_operator(_X, NAN), ValueError, "dt"),
    ("estimate_operator", "range", lambda: estimate_operator(_X, 0.1, rank=0), ValueError, "rank"),
    ("estimate_operator", "range", lambda: estimate_operator(_X, 0.1, rank=9), ValueError, "rank"),
    ("estimate_operator", "range", lambda: estimate_operator(_X, 0.1, reg=-1), ValueError, "reg"),
    (
        "estimate_operator",
        "range",
        lambda: estimate_operator(_X, 0.1, kernel="x"),
        ValueError,
        "ker",
    ),
    ("estimate_operator", "type", lambda: estimate_operator(_X, 0.1, rank=1.5), TypeError, "rank"),
    ("FeatureMap", "range", lambda: FeatureMap("poly"), ValueError, "kernel"),
    ("FeatureMap", "range", lambda: FeatureMap("rbf", n_landmarks=0), ValueError, "n_landmarks"),
    ("FeatureMap", "range", lambda: FeatureMap("rbf", length_scale=NAN), ValueError, "length_sc"),
    ("FeatureMap", "nan", lambda: FeatureMap("rbf").fit(_XNAN[0]), ValueError, "pooled"),
    ("FeatureMap", "shape", lambda: FeatureMap().fit(np.ones(4)), ValueError, "pooled"),
    (
        "FeatureMap",
        "shape",
        lambda: FeatureMap().fit(_X[0]).transform(np.ones((3, 5))),
        ValueError,
        "X must have shape",
    ),
    ("FeatureMap", "other", lambda: FeatureMap().transform(_X[0]), ValueError, "not fitted"),
    (
        "SpectralMeasure",
        "nan",
        lambda: SpectralMeasure([NAN], [[1]], [[1]], [1], 0.1),
        ValueError,
        "lam",
    ),
    (
        "SpectralMeasure",
        "inf",
        lambda: SpectralMeasure([1], [[INF]], [[1]], [1], 0.1),
        ValueError,
        "R",
    ),
    (
        "SpectralMeasure",
        "empty",
        lambda: SpectralMeasure([], [[]], [[]], [], 0.1),
        ValueError,
        "lam",
    ),
    (
        "SpectralMeasure",
        "shape",
        lambda: SpectralMeasure([1, 2], np.ones((3, 2)), np.ones((3, 1)), [1, 1], 0.1),
        ValueError,
        "R and L must",
    ),
    (
        "SpectralMeasure",
        "range",
        lambda: SpectralMeasure([1], [[1]], [[1]], [-1], 0.1),
        ValueError,
        "weights",
    ),
    (
        "SpectralMeasure",
        "range",
        lambda: SpectralMeasure([1], [[1]], [[1]], [1], 0.0),
        ValueError,
        "dt",
    ),
    ("continuous_eigs", "range", lambda: continuous_eigs([0.5], dt=0.0), ValueError, "dt"),
    ("continuous_eigs", "nan", lambda: continuous_eigs([NAN], dt=0.1), ValueError, "mu"),
    ("continuous_eigs", "empty", lambda: continuous_eigs([], dt=0.1), ValueError, "mu is empty"),
    (
        "continuous_eigs",
        "range",
        lambda: continuous_eigs([0.5], 0.1, floor=NAN),
        ValueError,
        "floor",
    ),
    # distances
    ("sgot_distance", "range", lambda: sgot_distance(_A, _B, eta=1.5), ValueError, "eta"),
    ("sgot_distance", "nan", lambda: sgot_distance(_A, _B, eta=NAN), ValueError, "eta"),
    ("sgot_distance", "range", lambda: sgot_distance(_A, _B, p=0.5), ValueError, "p must"),
    ("sgot_distance", "type", lambda: sgot_distance(np.zeros(3), _B), TypeError, "A must be"),
    ("sgot_distance", "shape", lambda: sgot_distance(_A, _B4), ValueError, "different dimension"),
    ("sgot_distance", "range", lambda: sgot_distance(_A, _B, backend="x"), ValueError, "backend"),
    ("sgot_distance", "other", lambda: sgot_distance(*_rbf_pair()), ValueError, "feature spaces"),
    ("sgot_cost", "range", lambda: sgot_cost(_A, _B, eta=-0.1), ValueError, "eta"),
    ("sgot_cost", "range", lambda: sgot_cost(_A, _B, 0.5, grassmann="x"), ValueError, "grassmann"),
    (
        "sgot_cost",
        "nan",
        lambda: sgot_cost(_A, _B, 0.5, eigen_scaling=(NAN, 1)),
        ValueError,
        "eigen",
    ),
    ("sot_distance", "type", lambda: sot_distance(_A, None), TypeError, "B must be"),
    ("sot_distance", "range", lambda: sot_distance(_A, _B, p=NAN), ValueError, "p must"),
    ("got_distance", "shape", lambda: got_distance(_A, _B4), ValueError, "different dimension"),
    ("got_distance", "range", lambda: got_distance(_A, _B, grassmann="x"), ValueError, "grassmann"),
    ("hs_distance", "shape", lambda: hs_distance(_A, _B4), ValueError, "different dimension"),
    ("hs_distance", "type", lambda: hs_distance(_A, "B"), TypeError, "B must be"),
    ("operator_norm_distance", "shape", lambda: operator_norm_distance(_A, _B4), ValueError, "dim"),
    (
        "operator_norm_distance",
        "other",
        lambda: operator_norm_distance(*_rbf_pair()),
        ValueError,
        "fea",
    ),
    ("martin_distance", "range", lambda: martin_distance(_A, _B, horizon=0), ValueError, "horizon"),
    ("martin_distance", "type", lambda: martin_distance(_A, _B, horizon=2.5), TypeError, "horizon"),
    ("martin_distance", "shape", lambda: martin_distance(_A, _B4, horizon=5), ValueError, "dimen"),
    (
        "martin_distance_matrix",
        "empty",
        lambda: martin_distance_matrix([], [_A]),
        ValueError,
        "meas",
    ),
    (
        "martin_distance_matrix",
        "shape",
        lambda: martin_distance_matrix([_A], [_B4], horizon=5),
        ValueError,
        "different dimension",
    ),
    ("subspace_similarity", "shape", lambda: subspace_similarity(_A, _B4), ValueError, "dimension"),
    ("subspace_similarity", "type", lambda: subspace_similarity(1, _B), TypeError, "A must be"),
    (
        "grassmann_distance",
        "range",
        lambda: grassmann_distance(np.array([1.5])),
        ValueError,
        "delta",
    ),
    ("grassmann_distance", "nan", lambda: grassmann_distance(np.array([NAN])), ValueError, "delta"),
    (
        "grassmann_distance",
        "range",
        lambda: grassmann_distance([0.5], "x"),
        ValueError,
        "grassmann",
    ),
    (
        "wasserstein",
        "nan",
        lambda: wasserstein(np.full((2, 2), NAN), [0.5, 0.5], [0.5, 0.5]),
        ValueError,
        "cost",
    ),
    (
        "wasserstein",
        "shape",
        lambda: wasserstein(np.ones((2, 2)), [1.0], [0.5, 0.5]),
        ValueError,
        "a must",
    ),
    (
        "wasserstein",
        "range",
        lambda: wasserstein(np.ones((2, 2)), [0.5, 0.5], [0.5, 0.5], p=0),
        ValueError,
        "p must",
    ),
    (
        "wasserstein",
        "other",
        lambda: wasserstein(np.ones((2, 2)), [1, 1], [0.5, 0.5]),
        ValueError,
        "a and b",
    ),
    (
        "wasserstein",
        "empty",
        lambda: wasserstein(np.ones((0, 2)), [], [0.5, 0.5]),
        ValueError,
        "cost",
    ),
    (
        "distance_matrix",
        "range",
        lambda: distance_matrix([_A], [_B], metric="x"),
        ValueError,
        "metric",
    ),
    ("distance_matrix", "empty", lambda: distance_matrix([], [_B]), ValueError, "measures_a"),
    ("distance_matrix", "range", lambda: distance_matrix([_A], [_B], eta=2.0), ValueError, "eta"),
    ("distance_matrix", "shape", lambda: distance_matrix([_A], [_B4]), ValueError, "dimension"),
    ("distance_matrix", "type", lambda: distance_matrix([_A], [3]), TypeError, r"measures_b\[0\]"),
    (
        "pairwise_distances",
        "range",
        lambda: pairwise_distances([_A, _B], metric="x"),
        ValueError,
        "metric",
    ),
    ("pairwise_distances", "empty", lambda: pairwise_distances([]), ValueError, "measures_a"),
    ("pairwise_distances", "type", lambda: pairwise_distances(_A), TypeError, "measures_a"),
    ("eta_heuristic", "range", lambda: eta_heuristic(0.0), ValueError, "dt"),
    ("eta_heuristic", "nan", lambda: eta_heuristic(NAN), ValueError, "dt"),
    ("eta_heuristic", "inf", lambda: eta_heuristic(INF), ValueError, "dt"),
    # barycentre
    ("sgot_barycenter", "empty", lambda: sgot_barycenter([]), ValueError, "measures is empty"),
    ("sgot_barycenter", "type", lambda: sgot_barycenter([_A, 3]), TypeError, r"measures\[1\]"),
    ("sgot_barycenter", "nan", lambda: sgot_barycenter([_A, _B], [NAN, 1]), ValueError, "weights"),
    ("sgot_barycenter", "shape", lambda: sgot_barycenter([_A, _B], [1.0]), ValueError, "weights"),
    ("sgot_barycenter", "range", lambda: sgot_barycenter([_A, _B], eta=2), ValueError, "eta"),
    ("sgot_barycenter", "range", lambda: sgot_barycenter([_A, _B], n_iter=0), ValueError, "n_iter"),
    ("sgot_barycenter", "range", lambda: sgot_barycenter([_A, _B], init=5), ValueError, "init"),
    ("sgot_barycenter", "shape", lambda: sgot_barycenter([_A, _B4]), ValueError, "dimension"),
    ("sgot_barycenter", "other", lambda: sgot_barycenter([_A, _measure(dt=0.2)]), ValueError, "dt"),
    # classifier
    (
        "KoopmanOTClassifier",
        "nan",
        lambda: KoopmanOTClassifier().fit(_XNAN, _Y),
        ValueError,
        r"X\[0\] contains NaN",
    ),
    (
        "KoopmanOTClassifier",
        "inf",
        lambda: KoopmanOTClassifier().fit(_XINF, _Y),
        ValueError,
        r"X\[1\] contains inf",
    ),
    (
        "KoopmanOTClassifier",
        "empty",
        lambda: KoopmanOTClassifier().fit([], []),
        ValueError,
        "X is empty",
    ),
    (
        "KoopmanOTClassifier",
        "shape",
        lambda: KoopmanOTClassifier().fit(_X, ["a"]),
        ValueError,
        "y must",
    ),
    (
        "KoopmanOTClassifier",
        "range",
        lambda: KoopmanOTClassifier(k=0).fit(_X, _Y),
        ValueError,
        "k must",
    ),
    (
        "KoopmanOTClassifier",
        "range",
        lambda: KoopmanOTClassifier(eta=NAN).fit(_X, _Y),
        ValueError,
        "eta",
    ),
    (
        "KoopmanOTClassifier",
        "range",
        lambda: KoopmanOTClassifier(dt=-1).fit(_X, _Y),
        ValueError,
        "dt",
    ),
    (
        "KoopmanOTClassifier",
        "range",
        lambda: KoopmanOTClassifier(metric="x").fit(_X, _Y),
        ValueError,
        "metric",
    ),
    (
        "KoopmanOTClassifier",
        "range",
        lambda: KoopmanOTClassifier(eta="loo", eta_grid=(0.1, 2.0)).fit(_X, _Y),
        ValueError,
        "eta_grid",
    ),
    ("KoopmanOTClassifier", "nan", lambda: _fitted().predict(_XNAN), ValueError, r"X\[0\]"),
    (
        "KoopmanOTClassifier",
        "shape",
        lambda: _fitted().predict(_X[:, :, :1]),
        ValueError,
        "channels",
    ),
    # data
    ("damped_oscillator", "nan", lambda: damped_oscillator([NAN], [0.1]), ValueError, "freqs"),
    (
        "damped_oscillator",
        "shape",
        lambda: damped_oscillator([1, 2], [0.1]),
        ValueError,
        "freqs and",
    ),
    ("damped_oscillator", "range", lambda: damped_oscillator([1], [0.1], dt=0), ValueError, "dt"),
    (
        "damped_oscillator",
        "range",
        lambda: damped_oscillator([1], [0.1], T=1),
        ValueError,
        "T must",
    ),
    (
        "damped_oscillator",
        "range",
        lambda: damped_oscillator([1], [0.1], noise=-1),
        ValueError,
        "noise",
    ),
    (
        "damped_oscillator",
        "shape",
        lambda: damped_oscillator([1], [0.1], mixing=np.eye(3)),
        ValueError,
        "mixing",
    ),
    (
        "damped_oscillator",
        "nan",
        lambda: damped_oscillator([1], [0.1], mixing=np.full((2, 2), NAN)),
        ValueError,
        "mixing",
    ),
    (
        "oscillator_generator",
        "inf",
        lambda: oscillator_generator([INF], [0.1]),
        ValueError,
        "freqs",
    ),
    ("oscillator_generator", "empty", lambda: oscillator_generator([], []), ValueError, "freqs"),
    ("plane_rotation", "range", lambda: plane_rotation(3, 0.1, axes=(0, 0)), ValueError, "axes"),
    ("plane_rotation", "range", lambda: plane_rotation(3, 0.1, axes=(0, 5)), ValueError, "axes"),
    ("plane_rotation", "nan", lambda: plane_rotation(3, NAN), ValueError, "angle"),
    ("random_orthogonal", "range", lambda: random_orthogonal(0), ValueError, "dim"),
    ("random_orthogonal", "type", lambda: random_orthogonal(2.5), TypeError, "dim"),
    ("read_ts", "other", lambda: read_ts("no-such-file.ts"), FileNotFoundError, "path"),
    ("read_ts", "dtype", lambda: read_ts(_ts_file("@data\n1,x,3:a\n")), ValueError, "line 2"),
    ("read_ts", "empty", lambda: read_ts(_ts_file("@problemName x\n")), ValueError, "@data"),
    ("load_uea", "range", lambda: load_uea("BasicMotions", "valid"), ValueError, "split"),
    ("load_uea", "range", lambda: load_uea("../etc", "train"), ValueError, "name"),
]

EXEMPT: dict[str, str] = {}
