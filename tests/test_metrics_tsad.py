"""TSB-AD metrics: known special cases, invariants, bad input, and the reference cross-check."""

import numpy as np
import pytest

from iclr26.metrics.tsad import (
    anomaly_ranges,
    find_period,
    get_metrics,
    range_f1,
    range_precision_recall,
    soft_labels,
    vus,
)


def _labelled(n, spans):
    y = np.zeros(n, dtype=int)
    for a, b in spans:
        y[a:b] = 1
    return y


def test_anomaly_ranges_handles_edges():
    y = np.array([1, 1, 0, 0, 1, 0, 1])
    assert anomaly_ranges(y).tolist() == [[0, 1], [4, 4], [6, 6]]
    assert anomaly_ranges(np.zeros(5)).shape == (0, 2)


def test_soft_labels_ramp_values():
    y = _labelled(20, [(10, 12)])
    soft = soft_labels(y, 4)  # half-width 2, ramp sqrt(1 - d/4)
    assert soft[10:12].tolist() == [1.0, 1.0]
    assert soft[12] == pytest.approx(np.sqrt(0.75))
    assert soft[13] == pytest.approx(np.sqrt(0.5))
    assert soft[14] == 0.0
    assert soft[9] == pytest.approx(np.sqrt(0.75)) and soft[8] == pytest.approx(np.sqrt(0.5))
    assert np.array_equal(soft_labels(y, 0), y)


def test_perfect_score_has_vus_one_without_buffer():
    y = _labelled(300, [(50, 60), (200, 230)])
    out = vus(y.astype(float), y, sliding_window=0)
    assert out["VUS-PR"] == pytest.approx(1.0)
    assert out["VUS-ROC"] == pytest.approx(1.0)


def test_random_scores_give_vus_roc_near_half():
    rng = np.random.default_rng(0)
    vals = []
    for i in range(5):
        y = _labelled(4000, [(1000 + 300 * i, 1100 + 300 * i)])
        vals.append(vus(rng.random(4000), y, sliding_window=20)["VUS-ROC"])
    assert abs(np.mean(vals) - 0.5) < 0.06


def test_better_scores_rank_higher():
    rng = np.random.default_rng(1)
    y = _labelled(2000, [(500, 540), (1500, 1520)])
    noise = rng.normal(size=2000)
    weak = vus(noise + 0.5 * y, y, 50)["VUS-PR"]
    strong = vus(noise + 3.0 * y, y, 50)["VUS-PR"]
    assert strong > weak


def test_find_period_of_sine():
    t = np.arange(5000)
    assert abs(find_period(np.sin(2 * np.pi * t / 50)) - 50) <= 1
    assert abs(find_period(np.sin(2 * np.pi * t / 120)[:, None].repeat(3, 1)) - 120) <= 1
    # white noise has no clear period: any value, but an int inside TSB-AD's range
    p = find_period(np.random.default_rng(0).normal(size=3000))
    assert isinstance(p, int) and 6 <= p <= 303 or p == 125


def test_range_precision_recall_special_cases():
    y = _labelled(50, [(10, 20)])
    assert range_precision_recall(y, y) == (pytest.approx(1.0), pytest.approx(1.0))
    half = _labelled(50, [(10, 15)])
    precision, recall = range_precision_recall(half, y)
    assert precision == pytest.approx(1.0)
    assert recall == pytest.approx(0.2 + 0.8 * 5 / 10)
    assert range_precision_recall(np.zeros(50), y) == (0.0, pytest.approx(0.0))
    assert range_f1(y.astype(float), y) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "bad_scores, bad_labels, match",
    [
        (np.array([0.0, np.nan, 1.0, 2.0]), np.array([0, 1, 0, 0]), "NaN"),
        (np.zeros(4), np.array([0, 1, 0]), "same length"),
        (np.zeros(4), np.zeros(4), "at least one anomalous"),
        (np.zeros(4), np.array([0, 2, 0, 0]), "0/1"),
    ],
)
def test_bad_input_is_rejected(bad_scores, bad_labels, match):
    with pytest.raises(ValueError, match=match):
        get_metrics(bad_scores, bad_labels, sliding_window=5)


def _fixtures():
    rng = np.random.default_rng(42)
    cases = []
    for n, spans, window, tie in [
        (600, [(100, 130), (400, 402)], 25, False),
        (1000, [(0, 6), (500, 560), (990, 1000)], 40, False),
        (1200, [(600, 610), (618, 660), (1000, 1100)], 60, True),
        (500, [(250, 251)], 7, False),
    ]:
        y = _labelled(n, spans)
        s = rng.normal(size=n) + 1.5 * y * rng.random(n)
        if tie:
            s = np.round(s, 1)
        cases.append((s, y, window))
    return cases


def test_matches_tsb_ad_reference():
    ref = pytest.importorskip("TSB_AD.evaluation.basic_metrics")
    grader = ref.basic_metricor()
    for s, y, window in _fixtures():
        ours = get_metrics(s, y, sliding_window=window)
        *_, vus_roc, vus_pr = ref.generate_curve(y, s, window, "opt", 250)
        expected = {
            "VUS-PR": vus_pr,
            "VUS-ROC": vus_roc,
            "AUC-PR": grader.metric_PR(y, s),
            "AUC-ROC": grader.metric_ROC(y, s),
            "Standard-F1": grader.metric_PointF1(y, s),
            "R-based-F1": grader.metric_RF1(y, s),
        }
        for key, value in expected.items():
            assert abs(ours[key] - float(value)) < 1e-6, key


def test_find_period_matches_tsb_ad_reference():
    pytest.importorskip("statsmodels")
    ref = pytest.importorskip("TSB_AD.utils.slidingWindows")
    rng = np.random.default_rng(3)
    t = np.arange(3000)
    for x in (
        np.sin(2 * np.pi * t / 77) + 0.1 * rng.normal(size=3000),
        np.cumsum(rng.normal(size=3000)),
        np.sign(np.sin(2 * np.pi * t / 33)) + 0.2 * rng.normal(size=3000),
    ):
        assert find_period(x) == ref.find_length_rank(x, rank=1)
