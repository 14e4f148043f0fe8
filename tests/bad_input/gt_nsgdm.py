"""Bad-input cases of the gt_nsgdm room (algorithms, graphs, problems, backends)."""

import torch

from iclr26.optim.gt_nsgdm import (
    DSGD,
    GTDSGD,
    DNSGDm,
    DSGDClip,
    GTNSGDm,
    HeavyTailedNoise,
    HeterogeneousRegression,
    RayNetwork,
    SyntheticOracle,
    consensus_error,
    graphs,
    make_algorithm,
    run_local,
    theory_schedule,
)

NAN, INF = float("nan"), float("inf")


def _w_nan():
    w = graphs.ring(4).clone()
    w[0, 1] = NAN
    return w


ROW_ONLY = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
RING = graphs.ring(4)


def _problem():
    return HeterogeneousRegression(n=4, d=3, m=5)


def _oracle():
    return SyntheticOracle(_problem(), HeavyTailedNoise("none"))


X_NAN = torch.tensor([[0.0, NAN], [1.0, 2.0]], dtype=torch.float64)

CASES = [
    ("GTNSGDm", "nan", lambda: GTNSGDm(_w_nan()), ValueError, "W contains NaN"),
    ("GTNSGDm", "other", lambda: GTNSGDm(ROW_ONLY), ValueError, "W is not doubly stochastic"),
    ("GTNSGDm", "shape", lambda: GTNSGDm(torch.ones(2, 3) / 3), ValueError, "W must be square"),
    ("GTNSGDm", "empty", lambda: GTNSGDm(torch.zeros(0, 0)), ValueError, "W"),
    ("GTNSGDm", "nan", lambda: GTNSGDm(RING, lr=NAN), ValueError, "lr"),
    ("GTNSGDm", "range", lambda: GTNSGDm(RING, beta=1.0), ValueError, "beta"),
    ("GTNSGDm", "nan", lambda: GTNSGDm(RING, beta=NAN), ValueError, "beta"),
    (
        "GTNSGDm",
        "nan",
        lambda: GTNSGDm(RING, lr=torch.tensor([1e-2, NAN])),
        ValueError,
        "lr contains NaN",
    ),
    ("GTNSGDm", "other", lambda: GTNSGDm(RING, mixing="gossip"), ValueError, "mixing"),
    (
        "GTNSGDm",
        "shape",
        lambda: GTNSGDm(RING).init(torch.zeros(3, 2, dtype=torch.float64)),
        ValueError,
        "x0",
    ),
    (
        "GTNSGDm",
        "nan",
        lambda: GTNSGDm(RING).init(torch.full((2,), NAN, dtype=torch.float64)),
        ValueError,
        "x0",
    ),
    (
        "GTNSGDm",
        "shape",
        lambda: GTNSGDm(RING).step(GTNSGDm(RING).init(torch.zeros(2)), torch.zeros(4, 3)),
        ValueError,
        "grads",
    ),
    ("DSGD", "nan", lambda: DSGD(_w_nan(), lr=0.1), ValueError, "W contains NaN"),
    ("DSGD", "range", lambda: DSGD(RING, lr=0.0), ValueError, "lr"),
    ("DSGD", "inf", lambda: DSGD(RING, lr=INF), ValueError, "lr"),
    ("GTDSGD", "other", lambda: GTDSGD(ROW_ONLY, lr=0.1), ValueError, "doubly stochastic"),
    ("GTDSGD", "range", lambda: GTDSGD(RING, lr=-1.0), ValueError, "lr"),
    ("DNSGDm", "nan", lambda: DNSGDm(RING, beta=NAN), ValueError, "beta"),
    ("DNSGDm", "nan", lambda: DNSGDm(_w_nan()), ValueError, "W"),
    ("DSGDClip", "nan", lambda: DSGDClip(RING, tau=NAN), ValueError, "tau"),
    ("DSGDClip", "range", lambda: DSGDClip(RING, tau=0.0), ValueError, "tau"),
    ("DSGDClip", "other", lambda: DSGDClip(RING, mode="norm"), ValueError, "mode"),
    ("make_algorithm", "other", lambda: make_algorithm("adam", RING), ValueError, "name"),
    (
        "make_algorithm",
        "nan",
        lambda: make_algorithm("gt_nsgdm", _w_nan(), lr=0.1),
        ValueError,
        "W contains NaN",
    ),
    ("HeavyTailedNoise", "nan", lambda: HeavyTailedNoise(df=NAN), ValueError, "df"),
    ("HeavyTailedNoise", "range", lambda: HeavyTailedNoise(alpha=2.5), ValueError, "alpha"),
    ("HeavyTailedNoise", "inf", lambda: HeavyTailedNoise(scale=INF), ValueError, "scale"),
    ("HeavyTailedNoise", "other", lambda: HeavyTailedNoise("cauchy"), ValueError, "kind"),
    ("HeavyTailedNoise", "range", lambda: HeavyTailedNoise().draw(0, 0), ValueError, "d"),
    ("HeterogeneousRegression", "range", lambda: HeterogeneousRegression(n=0), ValueError, "n"),
    ("HeterogeneousRegression", "nan", lambda: HeterogeneousRegression(lam=NAN), ValueError, "lam"),
    (
        "HeterogeneousRegression",
        "range",
        lambda: HeterogeneousRegression(scales=(1.0, -1.0)),
        ValueError,
        "scales",
    ),
    (
        "HeterogeneousRegression",
        "nan",
        lambda: _problem().local_grads(torch.full((4, 3), NAN, dtype=torch.float64)),
        ValueError,
        "x",
    ),
    (
        "HeterogeneousRegression",
        "shape",
        lambda: _problem().full_grad(torch.zeros(5, dtype=torch.float64)),
        ValueError,
        "x",
    ),
    (
        "HeterogeneousRegression",
        "range",
        lambda: _problem().node_grad(7, torch.zeros(3, dtype=torch.float64)),
        ValueError,
        "i",
    ),
    (
        "SyntheticOracle",
        "type",
        lambda: SyntheticOracle("p", HeavyTailedNoise()),
        TypeError,
        "problem",
    ),
    (
        "SyntheticOracle",
        "inf",
        lambda: _oracle()(0, torch.tensor([INF, 0.0, 0.0], dtype=torch.float64), 0),
        ValueError,
        "x",
    ),
    (
        "SyntheticOracle",
        "shape",
        lambda: _oracle().all_nodes(torch.zeros(3, 3, dtype=torch.float64)),
        ValueError,
        "x",
    ),
    ("consensus_error", "nan", lambda: consensus_error(X_NAN), ValueError, "x"),
    ("consensus_error", "shape", lambda: consensus_error(torch.zeros(3)), ValueError, "x"),
    ("consensus_error", "empty", lambda: consensus_error(torch.zeros(0, 2)), ValueError, "x"),
    (
        "run_local",
        "range",
        lambda: run_local(GTNSGDm(RING), _oracle(), torch.zeros(3), steps=-1),
        ValueError,
        "steps",
    ),
    (
        "run_local",
        "nan",
        lambda: run_local(GTNSGDm(RING), _oracle(), torch.full((3,), NAN), steps=2),
        ValueError,
        "x0",
    ),
    (
        "run_local",
        "type",
        lambda: run_local(GTNSGDm(RING), object(), torch.zeros(3), steps=2),
        TypeError,
        "oracle",
    ),
    (
        "run_local",
        "inf",
        lambda: run_local(
            DSGD(RING, lr=1e3), _oracle(), torch.ones(3, dtype=torch.float64), steps=400
        ),
        ValueError,
        "oracle returned a non-finite gradient",
    ),
    (
        "RayNetwork",
        "nan",
        lambda: RayNetwork(GTNSGDm(RING), _oracle(), torch.full((3,), NAN)),
        ValueError,
        "x0",
    ),
    (
        "RayNetwork",
        "shape",
        lambda: RayNetwork(GTNSGDm(RING), [_oracle()] * 3, torch.zeros(3)),
        ValueError,
        "oracles",
    ),
    ("theory_schedule", "range", lambda: theory_schedule(0), ValueError, "T"),
    ("theory_schedule", "nan", lambda: theory_schedule(100, p=NAN), ValueError, "p"),
    ("theory_schedule", "range", lambda: theory_schedule(100, p=2.5), ValueError, "p"),
    ("theory_schedule", "range", lambda: theory_schedule(100, c_eta=-1.0), ValueError, "c_eta"),
]

EXEMPT = {
    "DecentralizedAlgorithm": "an abstract base class (cannot be instantiated); every concrete "
    "algorithm built on it is covered through its constructor, init and step",
}
