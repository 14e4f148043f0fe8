"""Labelled series for anomaly detection: a TSB-AD-style synthetic suite, the UCR series that
``aeon`` ships, and a loader for TSB-AD CSV files on disk.

Synthetic families (all seeded): ``sine`` (2-3 sines, periods 40-200, + noise), ``ecg``
(Gaussian-bump heartbeat template with +-5% beat-length jitter), ``machine`` (square or
sawtooth cycles), ``walk`` (random-walk level + seasonality) and ``multivariate`` (5 channels
mixing 2 shared latent oscillations). Anomalies are injected only after the anomaly-free
training prefix: 1-4 per series, 5-150 steps each, at most 5% of the series, of the types
spike, level shift, amplitude change, frequency change (local time warp), noise burst, flat
line (stuck sensor), pattern swap (a cycle replaced by another waveform) and, for the
multivariate family, correlation break (one channel decouples).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iclr26 import validation as V

UNIVARIATE_FAMILIES = ("sine", "ecg", "machine", "walk")
FAMILIES = (*UNIVARIATE_FAMILIES, "multivariate")
ANOMALY_TYPES = (
    "spike",
    "level_shift",
    "amplitude",
    "frequency",
    "noise_burst",
    "flat",
    "pattern_swap",
)
MULTIVARIATE_TYPES = (*ANOMALY_TYPES, "correlation_break")


@dataclass
class LabelledSeries:
    """One labelled series: ``values`` (T, C), ``labels`` (T,) 0/1, and the anomaly-free
    training prefix ``values[:train_len]``."""

    name: str
    values: np.ndarray
    labels: np.ndarray
    train_len: int
    family: str = ""
    anomaly_types: list[str] = field(default_factory=list)
    intervals: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        values = V.check_array(self.values, "values", ndim=(1, 2), dtype=np.float64)
        self.values = values[:, None] if values.ndim == 1 else values
        n = self.values.shape[0]
        labels = V.check_array(self.labels, "labels", ndim=1, n_rows=n)
        if not np.all(np.isin(labels, (0, 1))):
            raise ValueError("labels must be 0/1 per time step")
        self.labels = labels.astype(int)
        self.train_len = V.check_int(self.train_len, "train_len", low=1, high=n)

    @property
    def train(self) -> np.ndarray:
        return self.values[: self.train_len]

    @property
    def n_channels(self) -> int:
        return self.values.shape[1]


# ---------------------------------------------------------------- synthetic signals
def _square(phase):
    return np.where((phase % 1.0) < 0.5, 1.0, -1.0)


def _sawtooth(phase):
    return 2.0 * (phase % 1.0) - 1.0


def _ecg_beat(phase):
    """A heartbeat template on one cycle [0, 1): P wave, QRS complex, T wave."""
    p = phase % 1.0
    bumps = (
        (0.2, 0.025, 0.15),
        (0.38, 0.008, -0.15),
        (0.4, 0.01, 1.0),
        (0.42, 0.008, -0.25),
        (0.65, 0.04, 0.3),
    )
    return sum(a * np.exp(-0.5 * ((p - c) / s) ** 2) for c, s, a in bumps)


def _warp_time(length: int, warps: list[tuple[int, int, float]]) -> np.ndarray:
    """Warped time tau(t): speed 1, except ``factor`` inside each warp interval."""
    speed = np.ones(length)
    for a, b, factor in warps:
        speed[a:b] = factor
    return np.concatenate([[0.0], np.cumsum(speed)[:-1]])


def _family_signal(family: str, tau: np.ndarray, t: np.ndarray, rng, params: dict) -> np.ndarray:
    if family == "sine":
        return sum(a * np.sin(2 * np.pi * tau / p + ph) for a, p, ph in params["components"])
    if family == "ecg":
        return _ecg_beat(params["beat_phase"](tau))
    if family == "machine":
        shape = _square if params["shape"] == "square" else _sawtooth
        return shape(tau / params["period"])
    if family == "walk":
        return params["level"] + 0.8 * np.sin(2 * np.pi * tau / params["period"])
    raise ValueError(f"unknown family {family!r}")


def _family_params(family: str, length: int, rng) -> dict:
    if family == "sine":
        k = int(rng.integers(2, 4))
        periods = rng.uniform(40, 200, size=k)
        amps = rng.uniform(0.4, 1.0, size=k)
        return {
            "components": list(zip(amps, periods, rng.uniform(0, 2 * np.pi, size=k))),
            "period": float(periods[np.argmax(amps)]),
        }
    if family == "ecg":
        period = rng.uniform(60, 120)
        n_beats = int(length / period) + 40
        lengths = period * (1 + rng.uniform(-0.05, 0.05, size=n_beats))
        starts = np.concatenate([[0.0], np.cumsum(lengths)])

        def beat_phase(tau):
            idx = np.clip(np.searchsorted(starts, tau, side="right") - 1, 0, n_beats - 1)
            return (tau - starts[idx]) / lengths[idx]

        return {"beat_phase": beat_phase, "period": period}
    if family == "machine":
        return {
            "shape": "square" if rng.random() < 0.5 else "sawtooth",
            "period": rng.uniform(40, 160),
        }
    if family == "walk":
        steps = rng.normal(0, 0.03, size=length)
        return {"level": np.cumsum(steps), "period": rng.uniform(50, 150)}
    raise ValueError(f"unknown family {family!r}")


def _place_intervals(rng, length: int, train_len: int, n: int, max_total: int):
    """Non-overlapping [a, b) intervals of 5-150 steps after the training prefix."""
    intervals: list[tuple[int, int]] = []
    budget = max_total
    for _ in range(n):
        for _attempt in range(50):
            size = int(rng.integers(5, min(150, max(6, budget)) + 1))
            if size > budget:
                break
            a = int(rng.integers(train_len + 20, length - size - 5))
            b = a + size
            if all(b + 20 <= c or a >= d + 20 for c, d in intervals):
                intervals.append((a, b))
                budget -= size
                break
    return sorted(intervals)


def _inject(
    x: np.ndarray, kind: str, a: int, b: int, rng, scale: float, period: float, channel: int = 0
) -> None:
    """Apply one anomaly of type ``kind`` on [a, b) of channel ``channel`` (in place)."""
    seg = x[a:b, channel]
    if kind == "spike":
        pos = a + rng.choice(b - a, size=min(2, b - a), replace=False)
        x[pos, channel] += rng.choice([-1, 1], size=len(pos)) * rng.uniform(4, 7) * scale
    elif kind == "level_shift":
        x[a:b, channel] += rng.choice([-1, 1]) * rng.uniform(1.5, 3.0) * scale
    elif kind == "amplitude":
        factor = rng.choice([rng.uniform(0.2, 0.4), rng.uniform(2.0, 3.0)])
        x[a:b, channel] = seg.mean() + (seg - seg.mean()) * factor
    elif kind == "noise_burst":
        x[a:b, channel] += rng.normal(0, rng.uniform(0.6, 1.0) * scale, size=b - a)
    elif kind == "flat":
        x[a:b, channel] = seg[0]
    elif kind == "pattern_swap":
        phase = np.arange(b - a) / max(period, 2.0)
        other = _sawtooth(phase) if rng.random() < 0.5 else np.sin(2 * np.pi * phase) ** 3
        x[a:b, channel] = seg.mean() + other * 1.4 * scale
    elif kind == "correlation_break":
        phase = np.arange(b - a) / rng.uniform(20, 60)
        x[a:b, channel] = seg.mean() + np.sin(2 * np.pi * phase + rng.uniform(0, 6)) * 1.2 * scale
    else:
        raise ValueError(f"unknown anomaly type {kind!r}")


def make_series(
    family: str,
    length: int = 4000,
    train_frac: float = 0.3,
    seed: int = 0,
    anomaly_types: tuple[str, ...] | None = None,
    name: str = "",
) -> LabelledSeries:
    """One synthetic labelled series of ``family`` (see module docstring)."""
    V.check_choice(family, "family", FAMILIES)
    length = V.check_int(length, "length", low=500)
    train_frac = V.check_scalar(train_frac, "train_frac", low=0.1, high=0.8)
    seed = V.check_int(seed, "seed", low=0)
    if anomaly_types is not None:
        pool = MULTIVARIATE_TYPES if family == "multivariate" else ANOMALY_TYPES
        if len(anomaly_types) == 0:
            raise ValueError("anomaly_types must name at least one type (or be None)")
        for kind in anomaly_types:
            V.check_choice(kind, "anomaly_types", pool)
    rng = np.random.default_rng(seed)
    train_len = int(round(train_frac * length))
    pool = MULTIVARIATE_TYPES if family == "multivariate" else ANOMALY_TYPES
    n_anom = int(rng.integers(1, 5))
    intervals = _place_intervals(rng, length, train_len, n_anom, int(0.05 * length))
    if anomaly_types is None:
        kinds = [str(k) for k in rng.choice(pool, size=len(intervals))]
    else:
        kinds = [anomaly_types[i % len(anomaly_types)] for i in range(len(intervals))]
    t = np.arange(length, dtype=float)
    warps = [
        (a, b, float(rng.choice([rng.uniform(0.4, 0.6), rng.uniform(1.8, 2.5)])))
        for (a, b), k in zip(intervals, kinds)
        if k == "frequency"
    ]
    tau = _warp_time(length, warps)

    if family == "multivariate":
        periods = rng.uniform(50, 200, size=2)
        latent = np.stack(
            [np.sin(2 * np.pi * tau / periods[0]), _sawtooth(tau / periods[1] + rng.random())],
            axis=1,
        )
        mixing = rng.normal(0, 1, size=(2, 5))
        clean = latent @ mixing
        clean /= clean.std(axis=0, keepdims=True)
        period = float(periods.min())
    else:
        params = _family_params(family, length, rng)
        clean = _family_signal(family, tau, t, rng, params)[:, None]
        clean = (clean - clean.mean()) / clean.std()
        period = float(params["period"])
    x = clean + rng.normal(0, rng.uniform(0.05, 0.15), size=clean.shape)
    labels = np.zeros(length, dtype=int)
    for (a, b), kind in zip(intervals, kinds):
        labels[a:b] = 1
        if kind == "frequency":
            continue  # already applied through the warped time
        channels = (
            [0]
            if family != "multivariate"
            else list(rng.choice(5, size=int(rng.integers(1, 3)), replace=False))
        )
        for c in channels:
            _inject(x, kind, a, b, rng, float(np.std(clean[:train_len, c])), period, int(c))
    return LabelledSeries(
        name or f"{family}-{seed}",
        x,
        labels,
        train_len,
        family,
        kinds,
        [(int(a), int(b)) for a, b in intervals],
    )


def make_tsad_suite(
    n_series: int = 16,
    length: int = 4000,
    train_frac: float = 0.3,
    seed: int = 0,
    families: tuple[str, ...] = UNIVARIATE_FAMILIES,
) -> list[LabelledSeries]:
    """``n_series`` synthetic series cycling through ``families``; anomaly types cycle through
    the family's list so that every type appears across a suite."""
    n_series = V.check_int(n_series, "n_series", low=1)
    if isinstance(families, str) or len(families) == 0:
        raise ValueError("families must be a non-empty sequence of family names")
    for fam in families:
        V.check_choice(fam, "families", FAMILIES)
    suite = []
    for i in range(n_series):
        family = families[i % len(families)]
        pool = MULTIVARIATE_TYPES if family == "multivariate" else ANOMALY_TYPES
        rotated = tuple(pool[(i + j) % len(pool)] for j in range(len(pool)))
        suite.append(
            make_series(
                family, length, train_frac, seed * 1000 + i, rotated, name=f"{family}-{seed}-{i}"
            )
        )
    return suite


# ---------------------------------------------------------------- real series
def load_ucr_internal_bleeding() -> LabelledSeries:
    """UCR Anomaly Archive series 135 (InternalBleeding16), shipped inside ``aeon``: 7,501
    points of heart-rate signal, anomaly-free first 1,200 points, one labelled anomaly."""
    try:
        from aeon.datasets import load_kdd_tsad_135
    except ImportError as exc:  # aeon is the optional [ts] extra
        raise ImportError("the UCR series needs aeon (pip install aeon)") from exc
    x, y = load_kdd_tsad_135(split="test")
    x_train, _ = load_kdd_tsad_135(split="train")
    values = np.asarray(x, dtype=float).reshape(len(x), -1)
    return LabelledSeries(
        "UCR-135-InternalBleeding16",
        values,
        np.asarray(y, dtype=int),
        int(len(x_train)),
        "ucr",
        ["ucr"],
        _intervals(y),
    )


def _intervals(labels) -> list[tuple[int, int]]:
    y = np.asarray(labels).astype(int)
    edges = np.diff(np.concatenate([[0], y, [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


_TSB_NAME = re.compile(r"_tr_(\d+)_1st_(\d+)")


def load_tsb_ad_csv(path: str | Path) -> LabelledSeries:
    """One TSB-AD benchmark file: numeric channel columns and a ``Label`` column; the
    anomaly-free training length is read from the name ``..._tr_TRAINLEN_1st_FIRSTANOM.csv``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r}: no such file")
    match = _TSB_NAME.search(path.name)
    if match is None:
        raise ValueError(
            f"{path.name}: not a TSB-AD file name (expected ..._tr_TRAINLEN_1st_FIRSTANOM.csv)"
        )
    frame = read_series_csv(path)
    label_col = next((c for c in frame.columns if str(c).lower() == "label"), None)
    if label_col is None:
        raise ValueError(f"{path.name}: no 'Label' column")
    labels = frame[label_col].to_numpy()
    values = frame.drop(columns=[label_col]).select_dtypes("number").to_numpy(dtype=float)
    if values.shape[1] == 0:
        raise ValueError(f"{path.name}: no numeric channel columns")
    train_len = int(match.group(1))
    if not 0 < train_len < len(frame):
        raise ValueError(f"{path.name}: training length {train_len} outside the series")
    parts = path.stem.split("_")
    family = parts[1] if len(parts) > 1 else ""
    return LabelledSeries(
        path.stem, values, labels.astype(int), train_len, family, [family], _intervals(labels)
    )


def read_series_csv(path: str | Path):
    """A CSV file as a pandas frame, one row per data line, refusing missing values.

    pandas skips blank lines by default, which in a one-column file silently drops a missing
    value and shifts every later time step; here blank lines are kept as rows, and any row
    with a blank line or an empty cell is an error that names the file's line numbers
    (blank lines at the very end of the file are not data and are ignored)."""
    import pandas as pd

    frame = pd.read_csv(path, skip_blank_lines=False)
    empty = frame.isna().all(axis=1).to_numpy()
    trailing = len(empty) - (np.flatnonzero(~empty)[-1] + 1 if (~empty).any() else 0)
    if trailing:
        frame = frame.iloc[: len(frame) - trailing]
    missing = np.flatnonzero(frame.isna().any(axis=1).to_numpy())
    if missing.size:
        lines = missing + 2  # line 1 is the header
        shown = ", ".join(str(int(n)) for n in lines[:10]) + (" ..." if len(lines) > 10 else "")
        raise ValueError(
            f"{Path(path).name}: missing values (blank lines or empty cells) at {len(lines)} "
            f"line(s): {shown}; fill or remove them explicitly, so that no time step shifts"
        )
    return frame


def load_tsb_ad_dir(directory: str | Path) -> list[LabelledSeries]:
    """Every TSB-AD CSV file of a directory, sorted by name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"directory {str(directory)!r} is not a directory")
    files = sorted(p for p in directory.glob("*.csv") if _TSB_NAME.search(p.name))
    if not files:
        raise ValueError(f"no TSB-AD CSV files (..._tr_N_1st_M.csv) in {directory}")
    return [load_tsb_ad_csv(p) for p in files]
