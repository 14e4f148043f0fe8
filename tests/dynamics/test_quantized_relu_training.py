import numpy as np
import pytest

from iclr26.claims import run_claim
from iclr26.dynamics.quantized_relu_training import (
    QNNTInstance,
    QuantizedDomain,
    QuantizedReLUClassifier,
    layered,
    planted_instance,
    random_labels_instance,
    solve_brute_force,
    solve_cpsat,
    solve_signature_dp,
)
from iclr26.dynamics.quantized_relu_training.instance import pair_errors
from iclr26.dynamics.quantized_relu_training.solvers import _state_keys

SLUG = "quantized_relu_training"


@pytest.mark.parametrize(
    "d, values, relu",
    [
        (2, [0, 1], [0, 1]),
        (3, [-1, 0, 1], [0, 0, 1]),
        (4, [-1, 0, 1, 2], [0, 0, 1, 2]),
        (5, [-2, -1, 0, 1, 2], [0, 0, 0, 1, 2]),
    ],
)
def test_domain_tables(d, values, relu):
    dom = QuantizedDomain(d)
    assert dom.values.tolist() == values
    assert dom.relu(np.array(values)).tolist() == relu
    assert dom.relu(np.array([7, -7])).tolist() == [dom.hi, 0]


def test_bad_domain():
    with pytest.raises(ValueError):
        QuantizedDomain(1)
    with pytest.raises(TypeError):
        QuantizedDomain(2.5)


def _all_binary(alpha):
    return np.array(np.meshgrid(*[[0, 1]] * alpha, indexing="ij")).reshape(alpha, -1).T


def test_forward_or_and_threshold_with_subtracted_bias():
    X2 = _all_binary(2)
    arch = layered(2, [], 1)
    inst = QNNTInstance(arch, X2, np.zeros(4, dtype=int), d=2)
    w = {(("x", 0), ("y", 0)): 1, (("x", 1), ("y", 0)): 1}
    assert inst.predict(w, {("y", 0): 0})[:, 0].tolist() == [0, 1, 1, 1]  # OR
    assert inst.predict(w, {("y", 0): 1})[:, 0].tolist() == [0, 0, 0, 1]  # AND: bias subtracted
    X3 = _all_binary(3)
    arch3 = layered(3, [], 1)
    inst3 = QNNTInstance(arch3, X3, np.zeros(8, dtype=int), d=2)
    w3 = {(("x", i), ("y", 0)): 1 for i in range(3)}
    out = inst3.predict(w3, {("y", 0): 1})[:, 0]
    assert out.tolist() == (X3.sum(1) >= 2).astype(int).tolist()


def test_clip_output_reaches_negative_labels():
    arch = layered(1, [], 1)
    X = np.array([[-1], [0], [1]])
    inst = QNNTInstance(arch, X, -X, d=3, output_activation="clip")
    w = {(("x", 0), ("y", 0)): -1}
    assert inst.evaluate(w, {("y", 0): 0}) == 0
    relu_inst = QNNTInstance(arch, X, -X, d=3)
    assert relu_inst.evaluate(w, {("y", 0): 0}) == 1  # -1 unreachable through ReLU_d


def test_planted_zero_error_and_witness():
    inst = planted_instance(3, [2], 1, 40, d=2, seed=3)
    bf = solve_brute_force(inst)
    dp = solve_signature_dp(inst)
    assert bf.min_error == 0 and dp.min_error == 0
    assert inst.evaluate(dp.weights, dp.biases) == 0
    assert inst.evaluate(bf.weights, bf.biases) == 0


@pytest.mark.parametrize("seed", range(6))
def test_dp_equals_brute_force_random(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.choice([2, 3]))
    inst = random_labels_instance(2, [2], 2, 9, d=d, seed=seed)
    bf = solve_brute_force(inst)
    dp = solve_signature_dp(inst)
    dp_plain = solve_signature_dp(inst, canonicalize=False)
    assert bf.min_error == dp.min_error == dp_plain.min_error
    assert inst.evaluate(dp.weights, dp.biases) == dp.error


def test_histogram_error_equals_raw_error():
    inst = random_labels_instance(2, [2], 2, 50, d=3, seed=1)
    rng = np.random.default_rng(0)
    arch = inst.architecture
    for _ in range(5):
        w = {e: int(rng.integers(-1, 2)) for e in arch.edges}
        b = {v: int(rng.integers(-1, 2)) for v in arch.computed}
        data = inst.distinct()
        assert data.n == inst.n
        out = inst.predict(w, b, data.inputs).T[None]  # (1, omega, p)
        assert int(pair_errors(out, data)[0]) == inst.evaluate(w, b)


def test_state_keys_invariant_to_swapping_interchangeable_neurons():
    rng = np.random.default_rng(0)
    states = rng.integers(0, 2, size=(5, 3, 6)).astype(np.int8)
    swapped = states[:, [1, 0, 2]]
    assert np.array_equal(_state_keys(states, [[0, 1]]), _state_keys(swapped, [[0, 1]]))
    assert not np.array_equal(_state_keys(states, []), _state_keys(swapped, []))


def test_decision_version_respects_ell():
    base = random_labels_instance(2, [2], 1, 30, d=2, seed=5)
    opt = solve_signature_dp(base).min_error
    assert opt > 0
    arch, X, Y = base.architecture, base.X, base.Y
    below = solve_signature_dp(QNNTInstance(arch, X, Y, 2, ell=opt - 1))
    assert below.status == "infeasible" and below.feasible is False
    at = solve_signature_dp(QNNTInstance(arch, X, Y, 2, ell=opt))
    assert at.feasible and at.min_error == opt
    bf_below = solve_brute_force(QNNTInstance(arch, X, Y, 2, ell=opt - 1))
    assert bf_below.feasible is False


def test_cpsat_agrees_with_brute_force():
    pytest.importorskip("ortools")
    for seed in range(10):
        inst = random_labels_instance(1 + seed % 2, [2], 1, 8, d=2 + seed % 2, seed=seed)
        cp = solve_cpsat(inst)
        assert cp.min_error == solve_brute_force(inst).min_error
        assert inst.evaluate(cp.weights, cp.biases) == cp.error


def test_bad_input_errors():
    arch = layered(2, [1], 1)
    X = np.array([[0, 1], [1, 1]])
    with pytest.raises(ValueError, match="X must hold integers in Z_2"):
        QNNTInstance(arch, np.array([[0, 2], [1, 1]]), np.array([0, 1]), d=2)
    with pytest.raises(ValueError, match="shape"):
        QNNTInstance(arch, X[:, :1], np.array([0, 1]), d=2)
    with pytest.raises(ValueError, match="empty"):
        QNNTInstance(arch, np.zeros((0, 2), int), np.zeros((0, 1), int), d=2)
    inst = QNNTInstance(arch, X, np.array([0, 1]), d=2)
    w = {e: 1 for e in arch.edges}
    b = {v: 0 for v in arch.computed}
    w[arch.edges[0]] = 3
    with pytest.raises(ValueError, match="Z_2"):
        inst.evaluate(w, b)
    with pytest.raises(ValueError, match="weights lack"):
        inst.evaluate({}, b)
    with pytest.raises(ValueError):
        layered(0, [1], 1)
    with pytest.raises(TypeError):
        solve_signature_dp("not an instance")


def test_classifier_learns_threshold_function():
    X = _all_binary(3)
    y = np.where(X.sum(1) >= 2, "yes", "no")
    clf = QuantizedReLUClassifier(widths=[1], d=2).fit(X, y)
    assert clf.training_errors_ == 0
    assert (clf.predict(X) == y).all()
    with pytest.raises(ValueError):
        QuantizedReLUClassifier(solver="magic").fit(X, y)


@pytest.mark.parametrize("name", ["exactness", "linear-in-n", "alpha-in-exponent", "depth-linear"])
def test_claims_smoke(name, tmp_path):
    record = run_claim(SLUG, name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"]


@pytest.mark.parametrize("alpha, widths", [(5, [3, 3]), (6, [2, 2]), (4, [4, 4])])
def test_state_limit_is_checked_inside_the_expansion(alpha, widths):
    """A 20,000-state limit stops the DP within a small bounded overshoot (one chunk's output:
    at most max(n_comb, limit // 16) candidates), not after a whole neuron is expanded."""
    inst = random_labels_instance(alpha, widths, 1, 2000, d=2, seed=0)
    limit = 20_000
    res = solve_signature_dp(inst, max_states=limit)
    assert res.status == "state_limit"
    n_comb = 2 ** (max(alpha, *widths) + 1)
    assert res.stats["peak_states"] <= limit + max(n_comb, limit // 16)
    assert res.stats["max_states"] <= limit + max(n_comb, limit // 16)


def test_time_limit_is_checked_inside_the_expansion():
    inst = random_labels_instance(5, [3, 3], 1, 2000, d=2, seed=0)
    res = solve_signature_dp(inst, time_limit=1e-3, max_states=10**9)
    assert res.status == "time_limit"
    assert res.stats["seconds"] < 0.5


def test_dp_work_counts_do_not_depend_on_n():
    small = solve_signature_dp(planted_instance(3, [2, 2], 1, 1_000, noise=0.1, seed=0))
    large = solve_signature_dp(planted_instance(3, [2, 2], 1, 50_000, noise=0.1, seed=0))
    assert small.stats["distinct_inputs"] == large.stats["distinct_inputs"] == 8
    assert small.stats["states"] == large.stats["states"]
    assert small.stats["signature_values"] == large.stats["signature_values"] > 0
