"""Player-interest drift (§3.3): the topic-weighted Jensen-Shannon divergence between the
current window's topic distribution P_c and the segment's reference P_r, and the detector that
partitions a community stream into phases.

Our reading of the weighting (the paper weights the JSD terms per topic; App. A.2 gives
γ = 1.5, λ_JSD = 0.001): with M = (P_c + P_r)/2 and w_θ = M(θ)^γ / Σ_θ' M(θ')^γ,

    wJSD = Σ_θ w_θ · ½ [P_c(θ) log(P_c(θ)/M(θ)) + P_r(θ) log(P_r(θ)/M(θ))]

(natural log). With γ = 0 the weights are uniform over the topics with M > 0, so wJSD is the
plain JSD divided by that number of topics. ``jsd`` is the unweighted divergence (bounded by
log 2; equal to ``scipy.spatial.distance.jensenshannon(p, q) ** 2``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.records import CommunityQuestion
from iclr26.knowledge.chronoplay.taxonomy import TOPIC_INDEX, TOPICS


def _pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    p = V.check_array(p, "p", ndim=1, low=0.0, dtype=np.float64)
    q = V.check_array(q, "q", ndim=1, low=0.0, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}")
    for name, v in (("p", p), ("q", q)):
        if v.sum() <= 0:
            raise ValueError(f"{name} must have a positive total (a distribution or counts)")
    return p / p.sum(), q / q.sum()


def _terms(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = 0.5 * (p + q)
    with np.errstate(divide="ignore", invalid="ignore"):
        tp = np.where(p > 0, p * np.log(p / m), 0.0)
        tq = np.where(q > 0, q * np.log(q / m), 0.0)
    return 0.5 * (tp + tq), m


def jsd(p, q) -> float:
    """Unweighted Jensen-Shannon divergence (nats) of two distributions (counts are
    normalised)."""
    p, q = _pair(p, q)
    return float(_terms(p, q)[0].sum())


def weighted_jsd(p, q, gamma: float = 1.5) -> float:
    """The topic-weighted JSD of the module docstring (counts are normalised)."""
    p, q = _pair(p, q)
    gamma = V.check_scalar(gamma, "gamma", low=0.0)
    terms, m = _terms(p, q)
    w = np.where(m > 0, np.power(m, gamma, where=m > 0, out=np.zeros_like(m)), 0.0)
    if gamma == 0:
        w = (m > 0).astype(np.float64)
    return float((w / w.sum() * terms).sum())


@dataclass
class PhasePartition:
    """What the detector found: boundaries (days), and the statistic at every check."""

    boundaries: list[float]
    check_days: np.ndarray
    statistic: np.ndarray
    threshold: float
    start: float
    end: float
    fired: list[float] = field(default_factory=list)

    @property
    def n_phases(self) -> int:
        return len(self.boundaries) + 1

    def phases(self) -> list[tuple[float, float]]:
        edges = [self.start, *self.boundaries, self.end]
        return list(zip(edges[:-1], edges[1:]))


def _stream_arrays(stream: Sequence[CommunityQuestion]) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(stream, str):
        raise TypeError("community_stream must be a list of CommunityQuestion, got a string")
    stream = list(stream)
    if not stream:
        raise ValueError("community_stream is empty")
    days, topics = [], []
    for i, q in enumerate(stream):
        if not isinstance(q, CommunityQuestion):
            raise TypeError(f"community_stream[{i}] must be a CommunityQuestion")
        if q.topic is None:
            raise ValueError(f"community_stream[{i}] has no topic label (classify it first)")
        topics.append(TOPIC_INDEX[q.topic])
        days.append(q.timestamp)
    days = V.check_array(days, "community_stream timestamps", ndim=1, dtype=np.float64)
    order = np.argsort(days, kind="stable")
    return days[order], np.asarray(topics)[order]


class TopicCounter:
    """Topic counts of any time interval of a stream in O(log n) (cumulative counts)."""

    def __init__(self, stream: Sequence[CommunityQuestion]):
        self.days, topics = _stream_arrays(stream)
        onehot = np.zeros((len(topics) + 1, len(TOPICS)))
        onehot[np.arange(1, len(topics) + 1), topics] = 1.0
        self.cum = np.cumsum(onehot, axis=0)

    def counts(self, lo: float, hi: float) -> np.ndarray:
        """Counts over ``lo < day <= hi`` (``lo`` inclusive when it is the stream start)."""
        a = int(np.searchsorted(self.days, lo, side="left"))
        b = int(np.searchsorted(self.days, hi, side="right"))
        return self.cum[b] - self.cum[a]

    def mix(self, lo: float, hi: float) -> np.ndarray:
        c = self.counts(lo, hi)
        return c / c.sum() if c.sum() > 0 else c


def partition_phases(
    community_stream: Sequence[CommunityQuestion],
    *,
    window_days: float = 60.0,
    threshold: float = 0.001,
    gamma: float = 1.5,
    step_days: float = 7.0,
    start: float | None = None,
    end: float | None = None,
    weighted: bool = True,
) -> PhasePartition:
    """Run the drift detector over the stream: every ``step_days`` from ``start + window``,
    compare P_c over [max(p_τ, c_τ − W), c_τ] with P_r over [p_τ, c_τ]; a statistic above
    ``threshold`` starts a new phase at c_τ (p_τ ← c_τ). ``weighted=False`` uses the
    unweighted JSD. ``threshold=inf`` only records the statistic (calibration)."""
    counter = (
        community_stream
        if isinstance(community_stream, TopicCounter)
        else TopicCounter(community_stream)
    )
    window_days = V.check_scalar(window_days, "window_days", low=0.0, low_open=True)
    threshold = V.check_scalar(threshold, "threshold", low=0.0, allow_inf=True)
    gamma = V.check_scalar(gamma, "gamma", low=0.0)
    step_days = V.check_scalar(step_days, "step_days", low=0.0, low_open=True)
    weighted = V.check_bool(weighted, "weighted")
    start = float(counter.days[0]) if start is None else V.check_scalar(start, "start")
    end = float(counter.days[-1]) if end is None else V.check_scalar(end, "end")
    if end <= start:
        raise ValueError(f"end must be > start, got start={start}, end={end}")
    checks = np.arange(start + window_days, end + 1e-9, step_days)
    stats = np.zeros(len(checks))
    seg_start = start
    boundaries: list[float] = []
    for i, c in enumerate(checks):
        cur = counter.counts(max(seg_start, c - window_days), c)
        ref = counter.counts(seg_start, c)
        if cur.sum() == 0 or ref.sum() == 0:
            continue
        stats[i] = weighted_jsd(cur, ref, gamma) if weighted else jsd(cur, ref)
        if stats[i] > threshold:
            boundaries.append(float(c))
            seg_start = float(c)
    return PhasePartition(boundaries, checks, stats, threshold, start, end, list(boundaries))


def calibrate_threshold(
    no_drift_streams: Sequence[Sequence[CommunityQuestion]],
    *,
    quantile: float = 0.99,
    **detector_kw,
) -> float:
    """λ_JSD as the ``quantile`` of the detector statistic over streams without drift."""
    quantile = V.check_probability(quantile, "quantile")
    if isinstance(no_drift_streams, str):
        raise TypeError("no_drift_streams must be a list of streams")
    no_drift_streams = list(no_drift_streams)
    if not no_drift_streams:
        raise ValueError("no_drift_streams is empty")
    detector_kw["threshold"] = float("inf")
    values = np.concatenate(
        [partition_phases(s, **detector_kw).statistic for s in no_drift_streams]
    )
    if values.size == 0:
        raise ValueError(
            "no_drift_streams are shorter than window_days: the detector made no check to "
            "calibrate on"
        )
    return float(np.quantile(values, quantile))


def match_change_points(
    detected: Sequence[float], planted: Sequence[float], tolerance: float
) -> dict[str, float]:
    """Greedy one-to-one matching of detected boundaries to planted change points within
    ``tolerance`` days: recall, number of false boundaries, mean absolute delay."""
    tolerance = V.check_scalar(tolerance, "tolerance", low=0.0)
    free = list(detected)
    delays = []
    for p in planted:
        near = [d for d in free if abs(d - p) <= tolerance]
        if near:
            best = min(near, key=lambda d: abs(d - p))
            free.remove(best)
            delays.append(best - p)
    return {
        "recall": len(delays) / len(planted) if len(planted) else 1.0,
        "false_boundaries": float(len(free)),
        "mean_abs_delay_days": float(np.mean(np.abs(delays))) if delays else float("nan"),
    }
