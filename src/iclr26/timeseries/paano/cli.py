"""``iclr26 detect FILE.csv``: score a practitioner's own series with PaAno or a baseline.

The CSV holds one numeric column per channel, one row per time step; a blank line or an empty
cell (a missing value) is an error naming its line numbers, never skipped. A column named ``label``/``is_anomaly`` (any
case) is taken as ground truth (then the TSB-AD metrics are printed) and a column named
``timestamp``/``time``/``date`` is ignored. The detector is fitted on the first
``--train-len`` steps (default: the TSB-AD file name's ``_tr_N_`` if present, else
``--train-frac`` of the series), which should be free of anomalies, and scores every step.
Writes the scores (and 0/1 flags) to ``--out`` and a PNG of series, scores and flagged ranges.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

LABEL_COLUMNS = ("label", "is_anomaly", "anomaly")
TIME_COLUMNS = ("timestamp", "time", "date", "datetime")
CONFIGS = ("paper", "quick")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``detect`` arguments to ``parser``."""
    from iclr26.timeseries.paano.benchmark import DETECTORS

    parser.add_argument("file", help="CSV file: one numeric column per channel")
    parser.add_argument(
        "--detector", default="paano", choices=sorted(DETECTORS), help="default: paano"
    )
    parser.add_argument("--out", default=None, help="write per-step scores to this CSV")
    parser.add_argument(
        "--plot",
        default=None,
        help="PNG of series, scores and flagged ranges "
        "(default: next to --out, with a .png suffix)",
    )
    parser.add_argument(
        "--train-len", type=int, default=None, help="anomaly-free training prefix length"
    )
    parser.add_argument(
        "--train-frac",
        type=float,
        default=0.3,
        help="training prefix as a fraction when --train-len is not given",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="flag scores above this (default: the detector's threshold_)",
    )
    parser.add_argument(
        "--config",
        choices=CONFIGS,
        default="quick",
        help="PaAno configuration: 'quick' (half width, 40 steps; default) or 'paper' "
        "(the official run scripts; minutes on a CPU)",
    )
    parser.add_argument("--device", default="cpu", help="torch device for PaAno (cpu, cuda)")
    parser.add_argument("--seed", type=int, default=0)


def _fail(message: str) -> int:
    print(f"iclr26 detect: error: {message}", file=sys.stderr)
    return 2


def _read(path: Path):
    from iclr26.timeseries.paano.data import read_series_csv

    frame = read_series_csv(path)
    lower = {str(c).lower(): c for c in frame.columns}
    label_col = next((lower[c] for c in LABEL_COLUMNS if c in lower), None)
    labels = None
    if label_col is not None:
        labels = frame[label_col].to_numpy()
        frame = frame.drop(columns=[label_col])
    drop = [lower[c] for c in TIME_COLUMNS if c in lower]
    frame = frame.drop(columns=drop)
    if len(frame.columns) and all(_is_number(c) for c in frame.columns):
        raise ValueError(
            "the first line looks like data, not a header: add a header row with one name per "
            "column (e.g. 'value'), so that the first time step is not lost"
        )
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    non_numeric = [
        c for c in frame.columns if not is_numeric_dtype(frame[c]) or is_bool_dtype(frame[c])
    ]
    if non_numeric:
        col = non_numeric[0]
        example = next((v for v in frame[col] if not _is_number(v)), frame[col].iloc[0])
        raise ValueError(
            f"column {str(col)!r} holds text (e.g. {str(example)!r}), not numbers; detect reads "
            f"numeric channel columns only (a column named {'/'.join(TIME_COLUMNS)} is "
            f"ignored, one named {'/'.join(LABEL_COLUMNS)} is taken as labels)"
        )
    if frame.shape[1] == 0:
        raise ValueError("no numeric channel column")
    return frame.to_numpy(dtype=float), labels, [str(c) for c in frame.columns]


def _is_number(value) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _check_output(option: str, value: str | None) -> str | None:
    """An output path whose folder exists and is writable, checked before any work."""
    if value is None:
        return None
    import os

    folder = Path(value).resolve().parent
    if not folder.is_dir():
        return f"{option} {value}: folder {folder.name or folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"{option} {value}: folder {folder.name or folder} is not writable"
    return None


def _train_len(args, path: Path, n: int) -> int:
    if args.train_len is not None:
        value = args.train_len
    else:
        match = re.search(r"_tr_(\d+)_", path.name)
        if match:
            value = int(match.group(1))
        else:
            if not 0 < args.train_frac < 1:
                raise ValueError(f"--train-frac must be in (0, 1), got {args.train_frac}")
            value = int(round(args.train_frac * n))
    if not 0 < value < n:
        raise ValueError(f"training length {value} must be between 1 and {n - 1}")
    return value


def _flagged_ranges(flags: np.ndarray) -> list[tuple[int, int]]:
    edges = np.diff(np.concatenate([[0], flags.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def _plot(path: Path, values, scores, flags, threshold, train_len, labels, title) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.arange(len(scores))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 5), sharex=True)
    ax1.plot(t, values, lw=0.6)
    ax1.axvspan(0, train_len, color="0.9", label="training prefix")
    for a, b in _flagged_ranges(flags):
        ax1.axvspan(a, b + 1, color="C3", alpha=0.3)
        ax2.axvspan(a, b + 1, color="C3", alpha=0.3)
    if labels is not None:
        for a, b in _flagged_ranges(np.asarray(labels) == 1):
            ax1.axvspan(a, b + 1, ymax=0.06, color="k")
    ax1.set_title(title)
    ax2.plot(t, scores, lw=0.7, color="C1")
    ax2.axhline(threshold, color="C3", ls="--", lw=0.8)
    ax2.set_ylabel("anomaly score")
    ax2.set_xlabel("time step (red: flagged; black bars: labels)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    """Run ``detect``; returns the exit code (2 on bad input, with a one-line message)."""
    from iclr26.timeseries.paano.benchmark import PAPER_CONFIG, QUICK_CONFIG, make_detector

    path = Path(args.file)
    if not path.is_file():
        return _fail(f"{path}: no such file")
    plot_path = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    for option, value in (("--out", args.out), ("--plot", plot_path)):
        problem = _check_output(option, value)
        if problem:
            return _fail(problem)
    try:
        values, labels, columns = _read(path)
        if not np.all(np.isfinite(values)):
            raise ValueError("the series has missing or infinite values; impute them first")
        train_len = _train_len(args, path, len(values))
        cfg = PAPER_CONFIG if args.config == "paper" else QUICK_CONFIG
        if args.detector == "paano":  # the encoder's training logs every 10 % of its steps
            import logging

            logging.basicConfig(level=logging.WARNING, format="%(message)s")
            logging.getLogger("iclr26.timeseries.paano").setLevel(logging.INFO)
        paano_cfg = {**cfg, "device": args.device}
        det = make_detector(args.detector, args.seed, paano_cfg)
        det.fit(values[:train_len])
        scores = det.decision_function(values)
    except (ValueError, TypeError) as exc:
        message = str(exc) if str(exc).startswith(path.name) else f"{path.name}: {exc}"
        return _fail(message.replace("\n", " "))
    except Exception as exc:  # parse errors of the CSV and the like
        return _fail(f"{path.name}: {type(exc).__name__}: {exc}".replace("\n", " "))
    threshold = det.threshold_ if args.threshold is None else float(args.threshold)
    flags = (scores > threshold).astype(int)
    ranges = _flagged_ranges(flags)
    print(
        f"{path.name}: {len(values)} steps, {values.shape[1]} channel(s), "
        f"detector {args.detector}, trained on the first {train_len} steps"
    )
    print(f"threshold {threshold:.4g}: {int(flags.sum())} steps flagged in {len(ranges)} ranges")
    for a, b in ranges[:20]:
        print(f"  [{a}, {b}]  max score {scores[a : b + 1].max():.4g}")
    if len(ranges) > 20:
        print(f"  ... {len(ranges) - 20} more")
    if labels is not None:
        from iclr26.metrics.tsad import find_period, get_metrics

        try:
            metrics = get_metrics(scores, labels, sliding_window=find_period(values))
            print("  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        except ValueError as exc:
            print(f"labels present but not scorable: {exc}")
    if args.out:
        import pandas as pd

        out = Path(args.out)
        pd.DataFrame({"score": scores, "flagged": flags}).to_csv(out, index_label="step")
        print(f"scores written to {out}")
    if plot_path:
        _plot(
            Path(plot_path),
            values,
            scores,
            flags,
            threshold,
            train_len,
            labels,
            f"{path.name} - {args.detector} ({', '.join(columns[:4])})",
        )
        print(f"plot written to {plot_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="iclr26 detect", description=__doc__.splitlines()[0])
    configure(parser)
    return run(parser.parse_args(argv))
