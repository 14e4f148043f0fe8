"""The two-stage training curriculum (§4.2, §5.1).

Stage 1 trains on the short, simple domains (icons, chemistry) until a preliminary
convergence; stage 2 trains on every domain and task, long illustrations and animations
included, with the stage-1 domains re-sampled so that they no longer dominate.
:class:`CurriculumSchedule` is a sampler over ``(domain, task)`` datasets that yields the
examples of each stage in order (a ``torch.utils.data.IterableDataset``); :func:`run_curriculum`
fine-tunes a causal LM stage by stage with each stage's learning rate (the paper: AdamW,
2e-4 in stage 1, 1e-4 in stage 2).

Re-sampling (``resample="match_proportions"``): in a stage after the first, a domain already
seen in an earlier stage is drawn with a weight capped at the mean size of the domains new to
that stage; new domains keep their natural size. An explicit ``mix`` (domain -> weight) sets
the proportions directly; ``resample="none"`` draws by dataset size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

RESAMPLE = ("match_proportions", "none")


@dataclass(frozen=True)
class Stage:
    """One curriculum stage: its domains, tasks, steps, learning rate and optional mix."""

    domains: tuple[str, ...]
    tasks: tuple[str, ...]
    steps: int
    lr: float
    mix: tuple[tuple[str, float], ...] | None = None


def _stage(spec: Mapping, i: int, known: set[tuple[str, str]]) -> Stage:
    if not isinstance(spec, Mapping):
        raise TypeError(f"stages[{i}] must be a dict, got {type(spec).__name__}")
    domains = tuple(spec.get("domains") or ())
    tasks = tuple(spec.get("tasks") or ())
    if not domains or not tasks:
        raise ValueError(f"stages[{i}] needs non-empty 'domains' and 'tasks'")
    steps = V.check_int(spec.get("steps"), f"stages[{i}].steps", low=1)
    lr = V.check_scalar(spec.get("lr"), f"stages[{i}].lr", low=0.0, low_open=True)
    if not any((d, t) in known for d in domains for t in tasks):
        raise ValueError(f"stages[{i}] has no dataset among its domains x tasks")
    for d in domains:
        if not any((d, t) in known for t in tasks):
            raise ValueError(f"stages[{i}].domains holds {d!r}, which has no dataset")
    mix = spec.get("mix")
    if mix is not None:
        if not isinstance(mix, Mapping) or set(mix) != set(domains):
            raise ValueError(f"stages[{i}].mix must give a weight to each of its domains")
        weights = {d: V.check_scalar(w, f"stages[{i}].mix[{d!r}]", low=0.0) for d, w in mix.items()}
        if sum(weights.values()) <= 0:
            raise ValueError(f"stages[{i}].mix must have a positive weight")
        mix = tuple((d, weights[d]) for d in domains)
    return Stage(domains, tasks, steps, lr, mix)


class CurriculumSchedule(torch.utils.data.IterableDataset):
    """A staged sampler over ``datasets`` (``{(domain, task): [(prompt, completion), ...]}``).

    ``stages`` is a list of dicts with ``domains``, ``tasks``, ``steps``, ``lr`` and optional
    ``mix``; iterating yields ``steps * batch`` examples per stage, in stage order, as dicts
    ``{"stage", "domain", "task", "prompt", "completion"}``. Within a domain a task is drawn in
    proportion to its dataset size. The draws are fixed by ``seed``."""

    def __init__(
        self,
        datasets: Mapping[tuple[str, str], list],
        stages: list[Mapping],
        resample: str = "match_proportions",
        batch: int = 8,
        seed: int = 0,
    ):
        super().__init__()
        if not isinstance(datasets, Mapping) or not datasets:
            raise ValueError("datasets must be a non-empty dict {(domain, task): examples}")
        for key, rows in datasets.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise ValueError(f"datasets keys must be (domain, task) pairs, got {key!r}")
            if not isinstance(rows, list | tuple) or not rows:
                raise ValueError(f"datasets[{key!r}] must be a non-empty list of examples")
        if not isinstance(stages, list | tuple) or not stages:
            raise ValueError("stages must be a non-empty list of stage dicts")
        self.datasets = {k: list(v) for k, v in datasets.items()}
        self.resample = V.check_choice(resample, "resample", RESAMPLE)
        self.batch = V.check_int(batch, "batch", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        self.stages = [_stage(s, i, set(self.datasets)) for i, s in enumerate(stages)]

    def _size(self, domain: str, tasks: tuple[str, ...]) -> int:
        return sum(len(self.datasets.get((domain, t), ())) for t in tasks)

    def domain_weights(self, index: int) -> dict[str, float]:
        """The probability of each domain in stage ``index``."""
        index = V.check_int(index, "index", low=0, high=len(self.stages) - 1)
        stage = self.stages[index]
        if stage.mix is not None:
            raw = dict(stage.mix)
        else:
            raw = {d: float(self._size(d, stage.tasks)) for d in stage.domains}
            if self.resample == "match_proportions" and index > 0:
                seen = {d for s in self.stages[:index] for d in s.domains}
                fresh = [raw[d] for d in stage.domains if d not in seen]
                if fresh:
                    cap = float(np.mean(fresh))
                    raw = {d: (min(w, cap) if d in seen else w) for d, w in raw.items()}
        total = sum(raw.values())
        return {d: w / total for d, w in raw.items()}

    def stage_examples(self, index: int) -> list[dict]:
        """The ``steps * batch`` examples of stage ``index`` (deterministic)."""
        weights = self.domain_weights(index)
        stage = self.stages[index]
        rng = np.random.default_rng([self.seed, index])
        domains = list(weights)
        picks = rng.choice(len(domains), size=stage.steps * self.batch, p=list(weights.values()))
        out = []
        for k in picks:
            domain = domains[int(k)]
            tasks = [t for t in stage.tasks if (domain, t) in self.datasets]
            sizes = np.array([len(self.datasets[(domain, t)]) for t in tasks], dtype=float)
            task = tasks[int(rng.choice(len(tasks), p=sizes / sizes.sum()))]
            rows = self.datasets[(domain, task)]
            prompt, completion = rows[int(rng.integers(len(rows)))]
            out.append(
                {"stage": index, "domain": domain, "task": task, "prompt": prompt,
                 "completion": completion}
            )  # fmt: skip
        return out

    def __iter__(self):
        for i in range(len(self.stages)):
            yield from self.stage_examples(i)

    def __len__(self) -> int:
        return sum(s.steps for s in self.stages) * self.batch


def run_curriculum(model, tokenizer, schedule: CurriculumSchedule, max_len: int | None = None,
                   threads: int | None = None):  # fmt: skip
    """Fine-tune ``model`` stage by stage on ``schedule`` with the shared ``finetune_lm``
    (loss on the completion only, each stage with its own learning rate and cosine schedule).
    Returns ``(model, losses)`` with one loss curve per stage."""
    from iclr26.models.tinylm import finetune_lm

    if not isinstance(schedule, CurriculumSchedule):
        raise TypeError(f"schedule must be a CurriculumSchedule, got {type(schedule).__name__}")
    V.check_module_attrs(tokenizer, "tokenizer", ("encode", "eos_token_id"))
    losses = []
    for i, stage in enumerate(schedule.stages):
        rows = [(e["prompt"], e["completion"]) for e in schedule.stage_examples(i)]
        model = finetune_lm(
            model, tokenizer, rows, steps=stage.steps, lr=stage.lr, batch=schedule.batch,
            seed=schedule.seed + i, max_len=max_len, threads=threads,
        )  # fmt: skip
        losses.append(list(model.tinylm_meta["losses"]))
    return model, losses
