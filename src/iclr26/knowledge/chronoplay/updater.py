"""The dual-dynamic updater (§3.3; per-topic inheritance rule of the official release).

Knowledge evolution, on announcement A_new: σ_update = E(A_new), D_stale = {d : σ(d) ∩ σ_update
≠ ∅}; K_{t+1} = K_t ∪ A_new (old snippets stay). Interest drift: the detector
(``partition_phases``) splits the community timeline into phases. As in the release, each
phase's slice is built at the phase end from the corpus at that time, and a new phase applies
both dynamics at once: the candidates are the previous tuples with no entity overlap with the
phase's announcements; per topic they are sampled down to n_θ = ⌊N · P(θ)⌋ (remainder to the
largest topic), or all inherited and the deficit synthesised. Every tuple records its origin
(launch, inherited, knowledge- or interest-driven); at a phase start the kept ones become
"inherited". :meth:`DualDynamicUpdater.knowledge_update` is the single-announcement step.

``mode`` selects the maintained benchmark: ``"dual"`` (ChronoPlay), ``"knowledge"`` (entity
refresh, launch topic mix kept), ``"interest"`` (re-sampled at each phase, never refreshed),
``"static"`` (built for the first phase, never updated) and ``"rebuild"`` (everything
regenerated at each phase end)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.knowledge.chronoplay.drift import PhasePartition, TopicCounter, partition_phases
from iclr26.knowledge.chronoplay.records import (
    BenchmarkSlice,
    CommunityQuestion,
    QAStore,
    QATuple,
    Snippet,
    check_topic,
)
from iclr26.knowledge.chronoplay.synthesis import SynthesisError, SynthesisPipeline
from iclr26.knowledge.chronoplay.taxonomy import TOPICS

MODES = ("dual", "knowledge", "interest", "static", "rebuild")
TARGETS = ("phase", "window")


def target_counts(mix, size: int) -> dict[str, int]:
    """n_θ = ⌊N · P(θ)⌋ with the rounding remainder given to the largest topic (release)."""
    mix = V.check_array(mix, "mix", ndim=1, shape=(len(TOPICS),), low=0.0, dtype=np.float64)
    if mix.sum() <= 0:
        raise ValueError("mix must have a positive total")
    size = V.check_int(size, "size", low=1)
    p = mix / mix.sum()
    counts = np.floor(size * p).astype(int)
    counts[int(np.argmax(p))] += size - counts.sum()
    return {t: int(c) for t, c in zip(TOPICS, counts) if c > 0}


def inherit_by_topic(
    candidates: Sequence[QATuple], targets: dict[str, int], rng: np.random.Generator
) -> tuple[list[QATuple], dict[str, int]]:
    """The release's inheritance rule: per topic, sample ``targets[θ]`` candidates when there
    are enough, else keep all of them; returns (inherited, deficit per topic)."""
    if not isinstance(targets, dict):
        raise TypeError(f"targets must be a dict topic -> count, got {type(targets).__name__}")
    targets = {
        check_topic(t, "targets"): V.check_int(n, f"targets[{t!r}]", low=0)
        for t, n in targets.items()
    }
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    candidates = list(candidates)
    for i, d in enumerate(candidates):
        if not isinstance(d, QATuple):
            raise TypeError(f"candidates[{i}] must be a QATuple, got {type(d).__name__}")
    by_topic: dict[str, list[QATuple]] = {}
    for d in candidates:
        by_topic.setdefault(d.topic, []).append(d)
    kept, deficit = [], {}
    for topic, n in targets.items():
        avail = by_topic.get(topic, [])
        if len(avail) >= n:
            pick = rng.choice(len(avail), size=n, replace=False) if n else []
            kept += [avail[int(i)] for i in sorted(pick)]
        else:
            kept += avail
            deficit[topic] = n - len(avail)
    return kept, deficit


class DualDynamicUpdater:
    """Maintain a benchmark of ``size`` tuples over a game's timeline (see module docstring).

    ``gamma``, ``jsd_threshold`` (λ_JSD), ``window_days`` (W) and ``step_days`` configure the
    drift detector; ``target="phase"`` re-samples to each phase's community topic mix (the
    release builds each segment from that segment's distribution), ``"window"`` to P_c at the
    detection time (online). ``store``: a path for the append-only JSONL of synthesised tuples
    (a rerun with the same seed resumes from it)."""

    def __init__(
        self,
        pipeline: SynthesisPipeline,
        *,
        gamma: float = 1.5,
        jsd_threshold: float = 0.001,
        window_days: float = 60.0,
        step_days: float = 7.0,
        size: int = 300,
        mode: str = "dual",
        target: str = "phase",
        seed: int = 0,
        store: str | os.PathLike | None = None,
    ):
        if not isinstance(pipeline, SynthesisPipeline):
            V.check_module_attrs(pipeline, "pipeline", ["synthesize", "ner"])
        self.pipeline = pipeline
        self.gamma = V.check_scalar(gamma, "gamma", low=0.0)
        self.jsd_threshold = V.check_scalar(jsd_threshold, "jsd_threshold", low=0.0)
        self.window_days = V.check_scalar(window_days, "window_days", low=0.0, low_open=True)
        self.step_days = V.check_scalar(step_days, "step_days", low=0.0, low_open=True)
        self.size = V.check_int(size, "size", low=1)
        self.mode = V.check_choice(mode, "mode", MODES)
        self.target = V.check_choice(target, "target", TARGETS)
        self.seed = V.check_int(seed, "seed", low=0)
        self.store = QAStore(store) if store is not None else None
        self.partition: PhasePartition | None = None
        self._request, self.synthesized, self.shortfall, self.replayed = 0, 0, 0, 0

    # ------------------------------------------------------------------ synthesis book-keeping
    def _synth(self, topic: str, corpus: list[Snippet], origin: str) -> QATuple | None:
        request = self._request
        self._request += 1
        if self.store is not None:
            hit = self.store.get(request)
            if hit is not None:
                self.replayed += 1
                self.synthesized += 1
                return hit.with_origin(origin)
        try:
            qa = self.pipeline.synthesize(
                topic, corpus, rng=np.random.default_rng([self.seed, request])
            )
        except SynthesisError:
            self.shortfall += 1
            return None
        qa = qa.with_origin(origin)
        self.synthesized += 1
        if self.store is not None:
            self.store.append(request, qa)
        return qa

    def _fill(self, counts: dict[str, int], corpus, origin: str) -> list[QATuple]:
        out = []
        for topic, n in counts.items():
            for _ in range(n):
                qa = self._synth(topic, corpus, origin)
                if qa is not None:
                    out.append(qa)
        return out

    # ------------------------------------------------------------------ one update step
    def knowledge_update(
        self, tuples: Sequence[QATuple], corpus: Sequence[Snippet], announcement: Sequence[Snippet]
    ) -> tuple[list[QATuple], list[Snippet]]:
        """§3.3 for one announcement: σ_update = E(A_new); the tuples whose σ meets it are
        replaced (in place, same topics) by tuples synthesised from K ∪ A_new; the others are
        kept as they are. Returns (D_{t+1}, K_{t+1})."""
        announcement = _check_snippets(announcement, "announcement")
        corpus = _check_snippets(corpus, "corpus") + announcement
        sigma = self._entities(announcement)
        out = []
        for d in tuples:
            if not isinstance(d, QATuple):
                raise TypeError(f"tuples must hold QATuple, got {type(d).__name__}")
            if d.entities & sigma:
                fresh = self._synth(d.topic, corpus, "knowledge")
                if fresh is not None:
                    out.append(fresh)
            else:
                out.append(d)
        return out, corpus

    def _entities(self, snippets: Sequence[Snippet]) -> set[str]:
        sigma: set[str] = set()
        for s in snippets:
            sigma |= set(self.pipeline.ner(s.content))
        return sigma

    def _resample(self, tuples, targets, sigma, rng, corpus, filter_entities: bool):
        """The release's per-topic inheritance; the deficit is labelled knowledge-driven up to
        the number of tuples dropped for entity overlap, interest-driven beyond that."""
        prev = {}
        for d in tuples:
            prev[d.topic] = prev.get(d.topic, 0) + 1
        candidates = [d for d in tuples if not (filter_entities and d.entities & sigma)]
        kept, deficit = inherit_by_topic(candidates, targets, rng)
        new = []
        for topic, gap in deficit.items():
            interest = min(gap, max(0, targets[topic] - prev.get(topic, 0)))
            new += self._fill({topic: interest}, corpus, "interest")
            new += self._fill({topic: gap - interest}, corpus, "knowledge")
        return kept + new

    # ------------------------------------------------------------------ the run
    def run(
        self,
        authority_snippets: Sequence[Snippet],
        announcements: Sequence[tuple[float, Sequence[Snippet]]],
        community_questions: Sequence[CommunityQuestion],
        *,
        start: float | None = None,
        end: float | None = None,
        partition: PhasePartition | None = None,
    ) -> list[BenchmarkSlice]:
        """One :class:`BenchmarkSlice` per phase, built at the phase end from K at that time:
        phase 0 is synthesised from scratch; each later phase applies the phase's
        announcements and the new topic mix as ``mode`` says."""
        corpus = _check_snippets(authority_snippets, "authority_snippets")
        events = []
        for i, item in enumerate(announcements):
            if not (isinstance(item, tuple | list) and len(item) == 2):
                raise TypeError(f"announcements[{i}] must be a (day, snippets) pair")
            day = V.check_scalar(item[0], f"announcements[{i}] day")
            events.append((day, _check_snippets(item[1], f"announcements[{i}] snippets")))
        events.sort(key=lambda e: e[0])
        counter = TopicCounter(community_questions)
        start = float(counter.days[0]) if start is None else V.check_scalar(start, "start")
        end = float(counter.days[-1]) if end is None else V.check_scalar(end, "end")
        if not self.pipeline.templates and hasattr(self.pipeline, "mine"):
            self.pipeline.mine(community_questions)
        if partition is None:
            partition = partition_phases(
                counter,
                window_days=self.window_days,
                threshold=self.jsd_threshold,
                gamma=self.gamma,
                step_days=self.step_days,
                start=start,
                end=end,
            )
        elif not isinstance(partition, PhasePartition):
            raise TypeError(f"partition must be a PhasePartition, got {type(partition).__name__}")
        self.partition = partition
        phases = partition.phases()
        rng = np.random.default_rng([self.seed, 7])
        self._request, self.synthesized, self.shortfall, self.replayed = 0, 0, 0, 0

        def mix_for(k: int) -> np.ndarray:
            lo, hi = phases[k]
            if self.target == "window":
                lo, hi = (lo, lo + self.window_days) if k == 0 else (lo - self.window_days, lo)
            m = counter.mix(lo, hi)
            return m if m.sum() > 0 else counter.mix(start, end)

        corpus += [s for day, snips in events if day < phases[0][0] for s in snips]
        launch_targets = target_counts(mix_for(0), self.size)
        tuples: list[QATuple] = []
        slices = []
        for k, (lo, hi) in enumerate(phases):
            last = k == len(phases) - 1
            new_snips = [
                s
                for day, snips in events
                if lo <= day and (day < hi or (last and day <= hi))
                for s in snips
            ]
            corpus = corpus + new_snips
            made_before = self.synthesized
            if k == 0:
                tuples = self._fill(launch_targets, corpus, "launch")
            else:
                tuples = [d.with_origin("inherited") for d in tuples]
                sigma = self._entities(new_snips)
                if self.mode == "dual":
                    targets = target_counts(mix_for(k), self.size)
                    tuples = self._resample(tuples, targets, sigma, rng, corpus, True)
                elif self.mode == "knowledge":
                    tuples = self._resample(tuples, launch_targets, sigma, rng, corpus, True)
                elif self.mode == "interest":
                    targets = target_counts(mix_for(k), self.size)
                    tuples = self._resample(tuples, targets, sigma, rng, corpus, False)
                elif self.mode == "rebuild":
                    tuples = self._fill(target_counts(mix_for(k), self.size), corpus, "rebuild")
            slices.append(
                BenchmarkSlice(
                    k,
                    lo,
                    hi,
                    list(corpus),
                    list(tuples),
                    counter.mix(lo, hi),
                    self.synthesized - made_before,
                )
            )
        return slices


def _check_snippets(snippets, name: str) -> list[Snippet]:
    if isinstance(snippets, str | bytes) or snippets is None:
        raise TypeError(f"{name} must be a list of Snippet")
    snippets = list(snippets)
    if not snippets:
        raise ValueError(f"{name} is empty")
    for i, s in enumerate(snippets):
        if not isinstance(s, Snippet):
            raise TypeError(f"{name}[{i}] must be a Snippet, got {type(s).__name__}")
    return snippets
