"""The online protocol: privatise a gain sequence, run an algorithm on the reports, score it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iclr26.classic.ldp_experts.central import CentralDPHedge
from iclr26.classic.ldp_experts.privacy import LDPReportStream, check_gains


@dataclass
class OnlineResult:
    """Outcome of one run: actions, per-round and cumulative gain, static regret."""

    actions: np.ndarray
    per_round_gain: np.ndarray
    cumulative_gain: float
    best_static_gain: float
    static_regret: float
    mu: float
    eta: float | None = None
    per_round_mu: np.ndarray | None = None
    learner_picks: np.ndarray | None = None
    learner_gains: np.ndarray | None = field(default=None)


def run_online(
    algo, gains, stream: LDPReportStream | None = None, random_state=None
) -> OnlineResult:
    """Run ``algo`` on ``gains`` (a (T, n) array in [0, 1]).

    Local algorithms receive only the privatised reports of ``stream`` (built from the
    algorithm's ``mu`` and ``sensitivity`` with seed ``random_state`` when not given; pass one
    stream to several algorithms for common random numbers). :class:`CentralDPHedge` is a
    trusted curator and sees the raw gains.
    """
    g = check_gains(gains)
    T, n = g.shape
    best_static = float(g.sum(axis=0).max())
    if isinstance(algo, CentralDPHedge):
        per_round = algo.play_central(g)
        total = float(per_round.sum())
        return OnlineResult(
            np.full(T, -1), per_round, total, best_static, best_static - total, algo.mu
        )
    if getattr(algo, "trust", None) != "local" or not callable(getattr(algo, "play", None)):
        raise TypeError(f"{type(algo).__name__} is not an online expert algorithm")
    if stream is None:
        if algo.mu is None or algo.sensitivity is None:
            raise ValueError("the algorithm needs mu and sensitivity, or pass a report stream")
        stream = LDPReportStream(g, algo.mu, algo.sensitivity, random_state)
    else:
        if not isinstance(stream, LDPReportStream):
            raise TypeError(f"stream must be an LDPReportStream, got {type(stream).__name__}")
        if stream.shape != g.shape:
            raise ValueError(
                f"stream has shape {stream.shape}, which does not match the gains' {g.shape}"
            )
        if algo.mu is not None and (algo.mu != stream.mu or algo.sensitivity != stream.sensitivity):
            raise ValueError("the algorithm's privacy parameters differ from the stream's")
        if algo.mu is None:
            algo.mu, algo.sensitivity = stream.mu, stream.sensitivity
    actions = np.asarray(algo.play(stream.noisy), dtype=int)
    per_round = g[np.arange(T), actions]
    total = float(per_round.sum())
    result = OnlineResult(
        actions, per_round, total, best_static, best_static - total, stream.mu, eta=stream.eta
    )
    if hasattr(algo, "batch_sizes_"):
        result.per_round_mu = stream.mu / np.sqrt(algo.batch_sizes_)
    if hasattr(algo, "learner_picks_"):
        result.learner_picks = algo.learner_picks_
        result.learner_gains = np.einsum("tmn,tn->m", algo.learner_actions_, g)
    return result
