"""PaAno: encoder, losses, memory bank, scoring, baselines, data, the detect command, claims."""

import argparse

import numpy as np
import pandas as pd
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.metrics.tsad import auc_roc
from iclr26.timeseries.paano import (
    CNNForecastAD,
    MatrixProfileAD,
    MemoryBank,
    PaAno,
    PatchEncoder,
    SubIForest,
    SubKNN,
    SubPCA,
    cli,
    kmeans_coreset,
    load_tsb_ad_csv,
    make_series,
    make_tsad_suite,
    matrix_profile,
    pretext_weight,
    triplet_loss,
)
from iclr26.timeseries.paano.memory import coreset_size
from iclr26.timeseries.paano.patches import (
    positive_indices,
    sliding_patches,
    spread_to_time_steps,
)


@pytest.fixture(autouse=True)
def _one_thread():
    """Small models run fastest on one thread, and the machine is shared."""
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(before)


TINY = {"patch_size": 16, "n_iters": 2, "batch_size": 16, "width_mult": 0.125}


def _sine(n=600, period=40, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.sin(2 * np.pi * t / period) + 0.05 * rng.normal(size=n)


# ------------------------------------------------------------------ encoder and losses
@pytest.mark.parametrize("channels", [1, 5])
def test_encoder_shapes(channels):
    enc = PatchEncoder(channels)
    h = enc(torch.randn(4, channels, 64))
    assert h.shape == (4, 64)
    z = enc.project(h)
    assert z.shape == (4, 256)
    assert torch.allclose(z.norm(dim=1), torch.ones(4), atol=1e-5)
    assert enc.pretext_logit(h, h).shape == (4,)
    with pytest.raises(ValueError, match="x must have shape"):
        enc(torch.randn(4, channels + 1, 64))


def test_encoder_parameter_count_matches_paper():
    enc = PatchEncoder(1)
    # conv weights 1*128*7 + 128*256*5 + 256*128*3 + 128*64*3, plus BatchNorm scale/shift
    expected = 896 + 163840 + 98304 + 24576 + 2 * (128 + 256 + 128 + 64)
    assert enc.encoder_parameters() == expected
    assert 0.25e6 <= expected <= 0.35e6
    total = sum(p.numel() for p in enc.parameters())
    assert 0.35e6 <= total <= 0.40e6  # with the projection and pretext heads


def test_revin_normalises_each_patch():
    enc = PatchEncoder(1, revin=True)
    x = torch.randn(3, 1, 32)
    shifted = 5.0 + 3.0 * x
    enc.eval()
    assert torch.allclose(enc(x), enc(shifted), atol=1e-4)


def test_positive_sampling_stays_in_range_and_never_zero():
    rng = np.random.default_rng(0)
    anchors = np.arange(100)
    for _ in range(20):
        pos = positive_indices(anchors, 100, 2, rng)
        delta = pos - anchors
        assert np.all(delta != 0)
        assert np.all(np.abs(delta) <= 2)
        assert np.all((pos >= 0) & (pos < 100))
    # every offset of an interior anchor is drawn
    many = positive_indices(np.full(4000, 50), 100, 2, rng) - 50
    assert set(np.unique(many)) == {-2, -1, 1, 2}


def test_triplet_loss_uses_farthest_negative_and_excludes_own_positive():
    # anchor 0's own positive is orthogonal (distance 1); the other positives at distance
    # 1 - cos: anchor 0 vs positive 1 at distance 2 (opposite) is the farthest negative
    za = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    zp = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    # anchor 0: d_pos = 1, negatives {d(za0, zp1) = 2} -> relu(1 - 2 + 0.5) = 0
    # anchor 1: d_pos = 1 - cos(za1, zp1) = 1, negatives {d(za1, zp0) = 0} -> 1 - 0 + 0.5
    loss = triplet_loss(za, zp, margin=0.5)
    assert loss.item() == pytest.approx((0.0 + 1.5) / 2)


def test_pretext_weight_schedule():
    assert pretext_weight(0, 200) == 1.0
    assert pretext_weight(10, 200) == pytest.approx(0.5)
    assert pretext_weight(20, 200) == 0.0
    assert pretext_weight(150, 200) == 0.0


# ------------------------------------------------------------------ memory and scoring
def test_coreset_members_are_training_embeddings():
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(700, 8)).astype(np.float32)
    idx = kmeans_coreset(emb, 0.1, min_size=0, random_state=0)
    assert len(idx) == coreset_size(700, 0.1, 0) == 70
    bank = MemoryBank(top_k=3).fit(emb, 0.1, 0)
    assert np.all(
        np.isin(
            bank.entries_.view([("", bank.entries_.dtype)] * 8), emb.view([("", emb.dtype)] * 8)
        )
    )
    # the official floor of 500 entries applies by default
    assert coreset_size(700, 0.1) == 500 and coreset_size(20000, 0.1) == 2000


def test_memory_score_is_mean_knn_distance():
    bank = MemoryBank(top_k=2).fit(np.array([[0.0], [1.0], [3.0]]), ratio=1.0)
    assert bank.score(np.array([[0.0]]))[0] == pytest.approx(0.5)


def test_sliding_patches_layout():
    x = np.arange(20, dtype=float).reshape(10, 2)
    p = sliding_patches(x, 4)
    assert p.shape == (7, 2, 4)
    assert p[3, 1].tolist() == x[3:7, 1].tolist()
    with pytest.raises(ValueError, match="shorter than the patch"):
        sliding_patches(x, 11)


def test_spread_to_time_steps_averages_covering_patches():
    scores = spread_to_time_steps(np.array([1.0, 2.0, 3.0]), patch_size=2)
    assert scores.tolist() == [1.0, 1.5, 2.5, 3.0]


def test_spike_changes_exactly_the_covering_patches():
    x = _sine(400)
    det = PaAno(**TINY).fit(x[:200])
    base = det.patch_scores(x)
    spiked = x.copy()
    spiked[300] += 5.0
    changed = np.flatnonzero(~np.isclose(det.patch_scores(spiked), base))
    w = TINY["patch_size"]
    assert changed.tolist() == list(range(300 - w + 1, 301))
    scores = det.decision_function(spiked)
    assert scores.shape == (400,) and np.all(np.isfinite(scores))
    assert det.decision_scores_.shape == (200,)


def test_fit_is_deterministic_given_random_state():
    x = _sine(300)
    a = PaAno(**TINY, random_state=3).fit(x).decision_function(x)
    b = PaAno(**TINY, random_state=3).fit(x).decision_function(x)
    assert np.allclose(a, b)


def test_tiny_end_to_end_level_shift_detected():
    x = _sine(1200, period=50, seed=1)
    y = np.zeros(1200, dtype=int)
    x[900:960] += 1.5
    y[900:960] = 1
    det = PaAno(patch_size=32, n_iters=20, batch_size=32, width_mult=0.25).fit(x[:500])
    assert auc_roc(det.decision_function(x), y) > 0.9
    assert det.predict(x).shape == (1200,)
    assert det.predict(x, threshold=np.inf).sum() == 0


def test_multivariate_and_pandas_input():
    x = np.stack([_sine(300), _sine(300, 30, 1), _sine(300, 60, 2)], axis=1)
    det = PaAno(**TINY).fit(pd.DataFrame(x[:150]))
    assert det.decision_function(pd.DataFrame(x)).shape == (300,)
    with pytest.raises(ValueError, match="channels"):
        det.decision_function(x[:, :2])


@pytest.mark.parametrize(
    "train, error, match",
    [
        (np.r_[_sine(100), np.nan], ValueError, "NaN"),
        (_sine(10), ValueError, "too short"),
        (np.ones(200), ValueError, "constant"),
        (np.zeros((10, 2, 2)), ValueError, "dimension"),
        (np.array(["a", "b"]), TypeError, "numeric"),
    ],
)
def test_bad_input_is_rejected(train, error, match):
    with pytest.raises(error, match=match):
        PaAno(**TINY).fit(train)


def test_not_fitted_and_short_series():
    with pytest.raises(RuntimeError, match="not fitted"):
        PaAno().decision_function(_sine(100))
    det = PaAno(**TINY).fit(_sine(100))
    with pytest.raises(ValueError, match="too short"):
        det.decision_function(_sine(8))
    # a constant series to score is valid and gets finite scores
    assert np.all(np.isfinite(det.decision_function(np.zeros(100))))


# ------------------------------------------------------------------ baselines
def test_matrix_profile_matches_brute_force():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=120))
    m = 10
    sub = np.lib.stride_tricks.sliding_window_view(x, m)
    z = (sub - sub.mean(1, keepdims=True)) / sub.std(1, keepdims=True)
    d = np.sqrt(((z[:, None, :] - z[None, :, :]) ** 2).sum(-1))
    excl = int(np.ceil(m / 4))
    i = np.arange(len(sub))
    d[np.abs(i[:, None] - i[None, :]) <= excl] = np.inf
    assert np.allclose(matrix_profile(x, m, block=7), d.min(1))


@pytest.mark.parametrize(
    "det",
    [SubIForest(n_estimators=20), MatrixProfileAD(), SubPCA(), SubKNN(), CNNForecastAD(n_epochs=1)],
)
def test_baselines_share_the_interface(det):
    x = _sine(500)
    x2 = x.copy()
    x2[400:420] += 3.0
    det.fit(x[:250])
    scores = det.decision_function(x2)
    assert scores.shape == (500,) and np.all(np.isfinite(scores))
    assert scores[400:420].mean() > np.median(scores)
    with pytest.raises(ValueError, match="NaN"):
        det.decision_function(np.r_[x[:-1], np.nan])


# ------------------------------------------------------------------ data
def test_suite_labels_after_training_prefix():
    suite = make_tsad_suite(5, 1500, seed=0) + make_tsad_suite(
        2, 1500, seed=0, families=("multivariate",)
    )
    for s in suite:
        assert s.labels[: s.train_len].sum() == 0
        assert 0 < s.labels.mean() <= 0.05
        assert len(s.anomaly_types) == len(s.intervals) >= 1
        assert np.all(np.isfinite(s.values))
    assert suite[-1].n_channels == 5


def test_ucr_series_from_aeon():
    pytest.importorskip("aeon")
    from iclr26.timeseries.paano import load_ucr_internal_bleeding

    s = load_ucr_internal_bleeding()
    assert s.values.shape == (7501, 1) and s.train_len == 1200
    assert s.labels[: s.train_len].sum() == 0 and s.labels.sum() > 0


def test_tsb_ad_csv_loader(tmp_path):
    x = make_series("sine", 600, seed=2)
    frame = pd.DataFrame({"Data": x.values[:, 0], "Label": x.labels})
    path = tmp_path / f"001_Synthetic_id_1_Sensor_tr_{x.train_len}_1st_900.csv"
    frame.to_csv(path, index=False)
    s = load_tsb_ad_csv(path)
    assert s.train_len == x.train_len and s.family == "Synthetic"
    assert np.allclose(s.values[:, 0], x.values[:, 0]) and s.labels.tolist() == x.labels.tolist()
    bad = tmp_path / "series.csv"
    frame.to_csv(bad, index=False)
    with pytest.raises(ValueError, match="TSB-AD file name"):
        load_tsb_ad_csv(bad)


# ------------------------------------------------------------------ detect command
def _detect(argv):
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    return cli.run(parser.parse_args(argv))


def test_detect_command_writes_scores_and_plot(tmp_path, capsys):
    x = make_series("machine", 800, seed=1)
    path = tmp_path / "my_series.csv"
    pd.DataFrame(
        {"timestamp": np.arange(800), "value": x.values[:, 0], "is_anomaly": x.labels}
    ).to_csv(path, index=False)
    out = tmp_path / "scores.csv"
    code = _detect(
        [str(path), "--detector", "pca", "--out", str(out), "--train-len", str(x.train_len)]
    )
    assert code == 0
    scores = pd.read_csv(out)
    assert len(scores) == 800 and {"score", "flagged"} <= set(scores.columns)
    assert (tmp_path / "scores.png").stat().st_size > 0
    assert "VUS-PR" in capsys.readouterr().out


def test_detect_command_reads_tsb_ad_training_length(tmp_path, capsys):
    x = make_series("sine", 700, seed=4)
    path = tmp_path / f"002_Demo_id_2_Sensor_tr_{x.train_len}_1st_{x.intervals[0][0]}.csv"
    pd.DataFrame({"Data": x.values[:, 0], "Label": x.labels}).to_csv(path, index=False)
    assert _detect([str(path), "--detector", "knn", "--plot", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert f"trained on the first {x.train_len} steps" in out
    assert (tmp_path / "p.png").exists()


def test_detect_command_bad_input(tmp_path, capsys):
    assert _detect([str(tmp_path / "missing.csv")]) == 2
    path = tmp_path / "nan.csv"
    pd.DataFrame({"value": [1.0, np.nan, 2.0] * 50}).to_csv(path, index=False)
    assert _detect([str(path), "--detector", "pca"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("iclr26 detect: error:") for line in err)


def test_detect_command_refuses_blank_lines_naming_them(tmp_path, capsys):
    # a blank line in a one-column CSV is a missing value; skipping it would shift every
    # later time step by one
    values = [f"{v:.4f}" for v in _sine(300)]
    values[9] = ""
    values[120] = ""
    path = tmp_path / "gaps.csv"
    path.write_text("value\n" + "\n".join(values) + "\n\n")
    assert _detect([str(path), "--detector", "pca"]) == 2
    err = capsys.readouterr().err
    assert "missing values" in err and "11, 122" in err  # header is line 1
    # a trailing blank line is not data
    path.write_text("value\n" + "\n".join(f"{v:.4f}" for v in _sine(300)) + "\n\n")
    assert _detect([str(path), "--detector", "pca", "--out", str(tmp_path / "s.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "s.csv")) == 300


def test_tsb_ad_loader_refuses_blank_lines(tmp_path):
    path = tmp_path / "001_Demo_id_1_Sensor_tr_100_1st_150.csv"
    rows = [f"{v:.3f},0" for v in _sine(300)]
    rows[40] = ""
    path.write_text("Data,Label\n" + "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match="missing values .* 42"):
        load_tsb_ad_csv(path)


def _clean_series(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.sin(2 * np.pi * t / 50) + 0.3 * np.sin(2 * np.pi * t / 13) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("contamination", [0.01, 0.05])
def test_flagged_fraction_on_clean_data_follows_contamination(contamination):
    # the threshold comes from training patches scored against bank entries that do not
    # overlap them; scored against a bank that holds them it would flag most new steps
    x = _clean_series()
    det = PaAno(
        patch_size=32, n_iters=3, batch_size=32, width_mult=0.25, contamination=contamination
    ).fit(x[:1200])
    flagged = det.predict(x[1200:]).mean()
    assert flagged <= 2 * contamination
    in_sample = det.memory_.score(det.train_embeddings_)
    biased = np.percentile(spread_to_time_steps(in_sample, 32), 100 * (1 - contamination))
    assert (det.decision_function(x[1200:]) > biased).mean() > 5 * contamination
    assert det.threshold_ > biased
    knn = SubKNN(contamination=contamination).fit(x[:1200])
    assert knn.predict(x[1200:]).mean() <= 2 * contamination


def test_held_out_score_leaves_out_overlapping_entries():
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(40, 3)).astype(np.float32)
    bank = MemoryBank(top_k=2).fit(emb, ratio=1.0, min_size=0)
    held = bank.held_out_score(emb, exclusion=5)
    for i in (0, 17, 39):
        far = [j for j in range(40) if abs(j - i) >= 5]
        d = np.sort(np.linalg.norm(emb[far] - emb[i], axis=1))[:2]
        assert held[i] == pytest.approx(d.mean(), rel=1e-5)
    assert np.all(held > bank.score(emb))


# ------------------------------------------------------------------ claims at smoke scale


def _assert_figures_open(record, out_dir):
    """Every claim saves at least one figure, and each one is a PNG that opens."""
    from PIL import Image

    assert record["figures"], f"{record['claim']} saved no figure"
    for name in record["figures"]:
        with Image.open(out_dir / name) as image:
            assert image.format == "PNG" and min(image.size) > 0


@pytest.mark.parametrize(
    "name", ["beats-baselines", "lightweight", "loss-ablation", "memory-compression"]
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("paano", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    _assert_figures_open(record, tmp_path)
    timing = record["metrics"]["claim_timing"]  # the claim's CPU time, from the timing helper
    assert record["metrics"]["claim_cpu_s"] == timing["cpu_s"] > 0
    assert any(k.startswith("count_") and v > 0 for k, v in timing.items())


def test_evaluate_times_fit_and_scoring_with_counts():
    from iclr26.timeseries.paano import SubPCA, evaluate, make_series

    series = make_series("sine", length=600, train_frac=0.4, seed=0)
    out = evaluate(SubPCA(), series)
    assert out["fit_cpu_s"] >= 0 and out["score_s"] >= 0 and 0 <= out["VUS-PR"] <= 1
    assert out["count_train_points"] == len(series.train)
    assert out["count_scored_points"] == len(series.values)


def test_detect_checks_output_folders_before_work_and_names_text_columns(tmp_path, capsys):
    from iclr26 import cli

    series = tmp_path / "s.csv"
    series.write_text("value\n" + "\n".join(str(np.sin(i / 5)) for i in range(300)) + "\n")
    code = cli.main(["detect", str(series), "--out", str(tmp_path / "missing" / "out.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "--out" in err and "does not exist" in err and err.count("\n") == 1
    code = cli.main(["detect", str(series), "--plot", str(tmp_path / "nowhere" / "p.png")])
    err = capsys.readouterr().err
    assert code == 2 and "--plot" in err and err.count("\n") == 1
    text = tmp_path / "t.csv"
    text.write_text("value,comment\n1.0,ok\n2.0,fine\n3.0,good\n")
    code = cli.main(["detect", str(text)])
    err = capsys.readouterr().err
    assert code == 2 and "column 'comment' holds text" in err and err.count("\n") == 1
    headless = tmp_path / "h.csv"
    headless.write_text("\n".join(str(float(i)) for i in range(50)) + "\n")
    code = cli.main(["detect", str(headless)])
    err = capsys.readouterr().err
    assert code == 2 and "looks like data, not a header" in err and err.count("\n") == 1
