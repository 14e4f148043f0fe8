"""The two RL training systems on Ray, running the same GRPO step on the same worker code.

:class:`CentralizedPipeline` (veRL-like single controller): the driver decodes and preprocesses
the whole global batch, ``ray.put``s the materialised tensors and dispatches samples by equal
count (contiguous split); every worker processes whole sequences.

:class:`FlexRLPipeline`: the driver holds only :class:`~iclr26.rl.flexrl.data.MediaSample`
metadata and passes object references, never tensors (ShadowLoader: workers decode their own
samples, prefetching the next step's); the cost-aware hybrid plan (FlexUlysses) splits long
sequences over sequence-parallel groups and LPT-packs the rest. The same plan serves rollout
prefill, log-prob inference and training.

Both run on the local Ray by default (``ray.init`` when none is running, ``RAY_ADDRESS`` for a
cluster). A worker that dies mid-step makes the step fail with :class:`WorkerFailure` naming
the batch, or, with ``max_retries``, restarts every worker from the last step's checkpoint and
reruns the same batch: no batch is silently dropped."""

from __future__ import annotations

import abc
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.rl.flexrl.data import MediaSample, preprocess_sample
from iclr26.rl.flexrl.model import TinyVLM
from iclr26.rl.flexrl.parallel import SP_MODES
from iclr26.rl.flexrl.planner import (
    CostModel,
    Plan,
    flops_cost_model,
    plan_equal_count,
    plan_hybrid_shards,
)
from iclr26.rl.flexrl.worker import PipelineWorker, response_mask
from iclr26.rl.grpo import GRPOConfig, grpo_advantages

STAGES = ("load", "rollout", "infer", "update")


class WorkerFailure(RuntimeError):
    """A worker died during a step and the step could not be completed (retries spent)."""


class _Died(Exception):
    def __init__(self, worker: int, stage: str):
        super().__init__(f"worker {worker} died in {stage}")
        self.worker, self.stage = worker, stage


def ensure_ray(num_cpus: int | None = None) -> None:
    """Connect to Ray: ``RAY_ADDRESS`` when set, else a local Ray without the dashboard whose
    workers are not niced (see :mod:`iclr26.ray_local`)."""
    from iclr26.ray_local import init_ray

    V.check_int(num_cpus, "num_cpus", low=1, allow_none=True)
    init_ray(num_cpus)


def _nbytes(obj: Any) -> int:
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


class _RayPipeline(abc.ABC):
    """Shared driver logic; subclasses decide the plan and the data path."""

    centralized: bool = True

    def __init__(
        self,
        model_fn: Callable[[], TinyVLM] | None = None,
        n_workers: int = 2,
        grpo: GRPOConfig | None = None,
        max_new_tokens: int = 8,
        temperature: float = 1.0,
        seed: int = 0,
        max_retries: int = 0,
        threads_per_worker: int = 1,
    ):
        if model_fn is None:
            model_fn = TinyVLM
        if not callable(model_fn):
            raise TypeError(f"model_fn must be callable, got {type(model_fn).__name__}")
        self.model_fn = model_fn
        self.n_workers = V.check_int(n_workers, "n_workers", low=1)
        if grpo is None:
            grpo = GRPOConfig(group_size=4, lr=1e-3, entropy_coef=0.0)
        if not isinstance(grpo, GRPOConfig):
            raise TypeError(f"grpo must be a GRPOConfig, got {type(grpo).__name__}")
        if grpo.minibatches != 1:
            raise ValueError("grpo.minibatches must be 1 (one update per global batch)")
        self.grpo = grpo
        self.T = V.check_int(max_new_tokens, "max_new_tokens", low=1)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0)
        self.seed = V.check_int(seed, "seed", low=0)
        self.max_retries = V.check_int(max_retries, "max_retries", low=0)
        self.threads = V.check_int(threads_per_worker, "threads_per_worker", low=1)
        probe = model_fn()
        if not isinstance(probe, TinyVLM):
            raise TypeError(f"model_fn must return a TinyVLM, got {type(probe).__name__}")
        self.max_len = probe.max_len
        self.flop_model = flops_cost_model(probe)
        self.workers: list = []
        self._checkpoint = None
        self._faults: list[tuple[int, str, int]] = []
        self.retries = 0
        self.steps_done = 0
        self.last: dict = {}
        self.history: list[dict] = []

    # ------------------------------------------------------------------ workers
    def _start(self) -> None:
        import ray

        ensure_ray(num_cpus=max(2, self.n_workers))
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < self.n_workers:
            raise RuntimeError(
                f"n_workers={self.n_workers} needs {self.n_workers} Ray CPUs (one per worker "
                f"actor) but the cluster has {cpus:g}; start Ray with more num_cpus"
            )
        actor = ray.remote(num_cpus=1, max_restarts=0)(PipelineWorker)
        cfg = self.grpo
        self.workers = [
            actor.remote(
                r,
                self.n_workers,
                self.model_fn,
                cfg,
                self.seed,
                self.sp_mode,
                self.threads,
                self.T,
                self.temperature,
            )  # fmt: skip
            for r in range(self.n_workers)
        ]
        addr, port = ray.get(self.workers[0].address.remote())
        state = self._checkpoint
        ray.get([w.setup.remote(addr, port, state) for w in self.workers])
        for w, stage, step in self._faults:
            ray.get(self.workers[w].inject_fault.remote(stage, step))
        self._faults = []

    def start(self) -> None:
        """Start the worker actors now (otherwise the first step does)."""
        if not self.workers:
            self._start()

    def set_sp_mode(self, sp_mode: str) -> None:
        """Switch the sequence-parallel exchange (``"allgather"`` / ``"ulysses"``)."""
        import ray

        self.sp_mode = V.check_choice(sp_mode, "sp_mode", SP_MODES)
        if self.workers:
            ray.get([w.set_sp_mode.remote(self.sp_mode) for w in self.workers])

    def close(self) -> None:
        """Stop the worker actors (Ray itself keeps running)."""
        import ray

        for w in self.workers:
            try:
                ray.kill(w)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def inject_fault(self, worker: int, stage: str, step: int) -> None:
        """Make ``worker`` exit when ``stage`` of step ``step`` (0-based count of steps this
        pipeline ran) begins, once — for testing failure handling."""
        V.check_int(worker, "worker", low=0, high=self.n_workers - 1)
        V.check_choice(stage, "stage", STAGES)
        V.check_int(step, "step", low=0)
        self._faults.append((int(worker), stage, int(step)))
        if self.workers:
            import ray

            ray.get(self.workers[worker].inject_fault.remote(stage, int(step)))
            self._faults.pop()

    def _gather(self, refs: list, stage: str) -> list:
        import ray

        index = {r: i for i, r in enumerate(refs)}
        out: list = [None] * len(refs)
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                out[index[ready[0]]] = ray.get(ready[0])
            except ray.exceptions.RayActorError:
                raise _Died(index[ready[0]], stage) from None
            except ray.exceptions.RayTaskError:
                # when a worker dies inside a collective (the sequence-parallel all-reduce),
                # its peers' calls fail too, with a connection error that may arrive before
                # the death is reported: the death is the cause, so look for it first
                died = self._find_death(pending, index)
                if died is not None:
                    raise _Died(died, stage) from None
                raise
        return out

    @staticmethod
    def _find_death(pending: list, index: dict, timeout_s: float = 60.0) -> int | None:
        """The rank of the first worker among ``pending`` whose call ended in its death, or
        ``None`` when every call finished or failed otherwise within ``timeout_s``."""
        import ray

        for ref in pending:
            try:
                ray.get(ref, timeout=timeout_s)
            except ray.exceptions.RayActorError:
                return index[ref]
            except Exception:  # noqa: BLE001 - any other outcome is not a death
                continue
        return None

    # ------------------------------------------------------------------ planning
    def _validate_batch(self, batch) -> list[MediaSample]:
        if isinstance(batch, MediaSample) or not isinstance(batch, Sequence) or not batch:
            raise ValueError("batch must be a non-empty sequence of MediaSample")
        for i, s in enumerate(batch):
            if not isinstance(s, MediaSample):
                raise TypeError(f"batch[{i}] must be a MediaSample, got {type(s).__name__}")
            if s.est_tokens < 1:
                raise ValueError(f"batch[{i}] (sample {s.sample_id}) has no tokens")
            if s.est_tokens + self.T > self.max_len:
                raise ValueError(
                    f"batch[{i}] (sample {s.sample_id}) has {s.est_tokens} + {self.T} tokens, "
                    f"above the model's max_len {self.max_len}"
                )
        ids = [s.sample_id for s in batch]
        if len(set(ids)) != len(ids):
            raise ValueError("batch has repeated sample ids")
        return list(batch)

    @abc.abstractmethod
    def plan(self, batch: Sequence[MediaSample]) -> Plan:
        """How this pipeline places and shards ``batch`` over its workers."""

    # ------------------------------------------------------------------ one step
    def step(self, batch: Sequence[MediaSample], next_batch=None) -> dict:
        """One GRPO step on ``batch`` (retried from the last checkpoint if a worker dies and
        retries are left). Returns the step's timings, loads and diagnostics."""
        batch = self._validate_batch(batch)
        if next_batch is not None:
            next_batch = self._validate_batch(next_batch)
        attempt = 0
        while True:
            if not self.workers:
                self._start()
            try:
                stats = self._step(batch, next_batch)
                break
            except _Died as died:
                self.close()
                if attempt >= self.max_retries:
                    ids = [s.sample_id for s in batch]
                    raise WorkerFailure(
                        f"worker {died.worker} died during the {died.stage} stage of step "
                        f"{self.steps_done}; the batch of {len(ids)} samples (ids {ids[:8]}"
                        f"{' ...' if len(ids) > 8 else ''}) was not trained on and the "
                        f"policy is unchanged since step {self.steps_done - 1}; "
                        f"{self.max_retries} retries were allowed"
                    ) from None
                attempt += 1
                self.retries += 1
        stats["attempts"] = attempt + 1
        self.steps_done += 1
        self.history.append(stats)
        return stats

    @abc.abstractmethod
    def _load(self, step, plan, batch, next_batch) -> tuple[int, int]:
        """Move ``batch``'s media to the workers ``plan`` places it on; returns the data and
        control bytes sent."""

    def _step(self, batch: list[MediaSample], next_batch) -> dict:
        step, W, G = self.steps_done, self.n_workers, self.grpo.group_size
        t_start = time.perf_counter()
        plan = self.plan(batch)
        splits = {
            sid: (ranks, self._bounds(plan, sid, ranks)) for sid, ranks in plan.groups.items()
        }
        items = [[(batch[i].sample_id, s, e) for i, s, e in plan.assignments[w]] for w in range(W)]
        splits = {batch[i].sample_id: v for i, v in splits.items()}
        t0 = time.perf_counter()
        data_bytes, control_bytes = self._load(step, plan, batch, next_batch)
        t_load = time.perf_counter() - t0

        t0 = time.perf_counter()
        msgs = [(items[w], splits) for w in range(W)]
        control_bytes += sum(_nbytes(m) for m in msgs)
        roll = self._gather(
            [w.rollout.remote(step, items[r], splits, G) for r, w in enumerate(self.workers)],
            "rollout",
        )
        t_rollout = time.perf_counter() - t0
        responses: dict[int, np.ndarray] = {}
        for r in roll:
            responses.update(r["responses"])
        missing = [s.sample_id for s in batch if s.sample_id not in responses]
        if missing:
            raise RuntimeError(f"no rollout came back for samples {missing}")

        rewards = torch.tensor(
            [self.reward(responses[s.sample_id][g], s.answer) for s in batch for g in range(G)],
            dtype=torch.float32,
        )
        adv = grpo_advantages(rewards, G, self.grpo.adv_eps, self.grpo.normalize_std)
        advantages = {s.sample_id: adv[j * G : (j + 1) * G].numpy() for j, s in enumerate(batch)}
        global_tokens = int(
            sum(
                int(response_mask(torch.from_numpy(r.astype(np.int64))).sum())
                for r in responses.values()
            )  # fmt: skip
        )
        mine = [{sid for sid, _, _ in items[w]} for w in range(W)]
        resp_w = [{sid: responses[sid] for sid in mine[w]} for w in range(W)]
        adv_w = [{sid: advantages[sid] for sid in mine[w]} for w in range(W)]

        t0 = time.perf_counter()
        control_bytes += sum(_nbytes(r) for r in resp_w)
        inf = self._gather(
            [w.infer.remote(step, items[r], splits, resp_w[r]) for r, w in enumerate(self.workers)],
            "infer",
        )
        t_infer = time.perf_counter() - t0

        upd_stats = []
        t0 = time.perf_counter()
        for _ in range(self.grpo.ppo_epochs):
            control_bytes += sum(_nbytes(a) for a in adv_w)
            upd_stats = self._gather(
                [
                    w.update.remote(step, items[r], splits, resp_w[r], adv_w[r], global_tokens)
                    for r, w in enumerate(self.workers)
                ],  # fmt: skip
                "update",
            )
        t_update = time.perf_counter() - t0
        keep = [s.sample_id for s in next_batch] if next_batch is not None else []
        self._gather([w.finish_step.remote(keep) for w in self.workers], "update")
        if self.max_retries > 0:
            self._checkpoint = self.workers[0].state.remote()  # stays in the object store
        wall = time.perf_counter() - t_start
        self.last = {"responses": responses, "advantages": advantages, "plan": plan,
                     "global_tokens": global_tokens}  # fmt: skip

        busy = {
            "rollout": [r["busy"] for r in roll],
            "infer": [r["busy"] for r in inf],
            "update": [r["busy"] for r in upd_stats],
        }
        lengths = [s.est_tokens + self.T for s in batch]
        return {
            "step": step,
            "samples": len(batch),
            "wall_s": wall,
            "stage_s": {
                "load": t_load,
                "rollout": t_rollout,
                "infer": t_infer,
                "update": t_update,
            },  # fmt: skip
            "busy_s": busy,
            "busy_wall_s": {
                "rollout": [r["busy_wall"] for r in roll],
                "infer": [r["busy_wall"] for r in inf],
                "update": [r["busy_wall"] for r in upd_stats],
            },
            "data_wait_s": [r["wait"] for r in roll],
            "imbalance": {k: _ratio(v) for k, v in busy.items()},
            "predicted_imbalance": plan.predicted_imbalance,
            "n_split": len(plan.groups),
            "driver_data_bytes": data_bytes,
            "driver_control_bytes": control_bytes,
            "driver_bytes": data_bytes + control_bytes,
            "reward_mean": float(rewards.mean()),
            "pg_loss": float(sum(u["pg_loss"] for u in upd_stats)),
            "kl_ref": float(sum(u["kl_ref"] for u in upd_stats)),
            "grad_norm": float(upd_stats[0]["grad_norm"]),
            "response_tokens": global_tokens,
            "flops": float(G * sum(self.flop_model(L) for L in lengths)),
        }

    @staticmethod
    def _bounds(plan: Plan, i: int, ranks: tuple[int, ...]) -> list[int]:
        chunks = sorted((s, e) for r in ranks for (j, s, e) in plan.assignments[r] if j == i)
        return [chunks[0][0]] + [e for _, e in chunks]

    @staticmethod
    def reward(response: np.ndarray, answer: int) -> float:
        from iclr26.rl.flexrl.data import answer_reward

        return answer_reward(response.tolist(), answer)

    # ------------------------------------------------------------------ many steps
    def run(
        self,
        corpus: Sequence[MediaSample],
        n_steps: int,
        global_batch: int,
        warmup_steps: int = 0,
    ) -> dict:
        """``warmup_steps + n_steps`` GRPO steps over consecutive global batches of
        ``corpus`` (wrapping around); statistics over the ``n_steps`` measured steps."""
        corpus = self._validate_batch(corpus)
        n_steps = V.check_int(n_steps, "n_steps", low=1)
        global_batch = V.check_int(global_batch, "global_batch", low=1, high=len(corpus))
        warmup_steps = V.check_int(warmup_steps, "warmup_steps", low=0)
        total = warmup_steps + n_steps
        batches = [
            [corpus[(k * global_batch + j) % len(corpus)] for j in range(global_batch)]
            for k in range(total)
        ]
        self.start()  # worker start-up is not part of a step
        steps = []
        t0 = None
        for k in range(total):
            if k == warmup_steps:
                t0 = time.perf_counter()
            nxt = batches[k + 1] if k + 1 < total else None
            stats = self.step(batches[k], nxt)
            if k >= warmup_steps:
                steps.append(stats)
        wall = time.perf_counter() - t0
        return summarize(steps, wall)


def _ratio(values: Sequence[float]) -> float:
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.max() / arr.mean()) if arr.mean() > 0 else 1.0


def summarize(steps: list[dict], wall_s: float) -> dict:
    """Mean per-step statistics of a run and its throughput."""
    n = sum(s["samples"] for s in steps)
    stage = {k: float(np.mean([s["stage_s"][k] for s in steps])) for k in STAGES}
    return {
        "steps": len(steps),
        "samples": n,
        "wall_s": wall_s,
        "samples_per_s": n / wall_s if wall_s > 0 else float("inf"),
        "stage_s": stage,
        "load_fraction": stage["load"] / max(float(np.mean([s["wall_s"] for s in steps])), 1e-12),
        "imbalance": {
            k: float(np.mean([s["imbalance"][k] for s in steps]))
            for k in ("rollout", "infer", "update")
        },  # fmt: skip
        "predicted_imbalance": float(np.mean([s["predicted_imbalance"] for s in steps])),
        "driver_bytes_per_step": float(np.mean([s["driver_bytes"] for s in steps])),
        "driver_data_bytes_per_step": float(np.mean([s["driver_data_bytes"] for s in steps])),
        "reward_mean": float(np.mean([s["reward_mean"] for s in steps])),
        "flops_per_step": float(np.mean([s["flops"] for s in steps])),
        "n_split_per_step": float(np.mean([s["n_split"] for s in steps])),
        "attempts": int(sum(s["attempts"] for s in steps)),
        "per_step": steps,
    }


class CentralizedPipeline(_RayPipeline):
    """The veRL-like baseline (see the module docstring).

    ``shard_threshold=None`` (default) dispatches by equal count. A number keeps the
    centralized loading but plans with FlexUlysses' hybrid sharding (the "FlexUlysses only"
    ablation; ``sp_mode`` then picks the exchange)."""

    centralized = True

    def __init__(
        self,
        model_fn: Callable[[], TinyVLM] | None = None,
        n_workers: int = 2,
        grpo: GRPOConfig | None = None,
        shard_threshold: float | None = None,
        sp_mode: str = "allgather",
        **kwargs,
    ):
        self.shard_threshold = V.check_scalar(
            shard_threshold,
            "shard_threshold",
            low=0.0,
            low_open=True,
            allow_inf=True,
            allow_none=True,
        )
        self.sp_mode = V.check_choice(sp_mode, "sp_mode", SP_MODES)
        super().__init__(model_fn, n_workers, grpo, **kwargs)

    def plan(self, batch: Sequence[MediaSample]) -> Plan:
        lengths = [s.est_tokens + self.T for s in self._validate_batch(batch)]
        if self.shard_threshold is None:
            return plan_equal_count(lengths, self.n_workers, self.flop_model)
        return plan_hybrid_shards(
            lengths, self.n_workers, self.flop_model, self.shard_threshold, min_chunk=self.T + 1
        )

    def _load(self, step, plan, batch, next_batch) -> tuple[int, int]:
        import ray

        data_bytes, control = 0, 0
        refs_w, put = [], {}
        for w in range(self.n_workers):
            refs = []
            for i in sorted({i for i, _, _ in plan.assignments[w]}):
                if i not in put:  # the controller does all decode work, once per sample
                    decoded = preprocess_sample(batch[i])
                    data_bytes += decoded.nbytes
                    put[i] = ray.put(decoded)
                refs.append(put[i])
            refs_w.append(refs)
            control += _nbytes([r.hex() for r in refs])
        self._gather(
            [wk.load_tensors.remote(step, refs_w[r]) for r, wk in enumerate(self.workers)], "load"
        )
        return data_bytes, control


class FlexRLPipeline(_RayPipeline):
    """FlexRL: ShadowLoader + FlexUlysses hybrid sharding (see the module docstring).

    ``shard_threshold`` = theta of the planner; ``prefetch`` overlaps the next step's decode
    with this step's compute; ``sp_mode`` = ``"allgather"`` or ``"ulysses"``; ``cost`` = the
    planner's :class:`CostModel` (default: the model's FLOP count; see
    :func:`~iclr26.rl.flexrl.planner.profile_cost_model` for a timed one); ``memory_limit`` =
    the most tokens of one sequence a worker may hold (longer ones are always split)."""

    centralized = False

    def __init__(
        self,
        model_fn: Callable[[], TinyVLM] | None = None,
        n_workers: int = 2,
        grpo: GRPOConfig | None = None,
        shard_threshold: float = 0.5,
        prefetch: bool = True,
        sp_mode: str = "allgather",
        cost: CostModel | None = None,
        memory_limit: int | None = None,
        **kwargs,
    ):
        self.shard_threshold = V.check_scalar(
            shard_threshold, "shard_threshold", low=0.0, low_open=True, allow_inf=True
        )
        self.prefetch = V.check_bool(prefetch, "prefetch")
        self.sp_mode = V.check_choice(sp_mode, "sp_mode", SP_MODES)
        self.memory_limit = V.check_int(memory_limit, "memory_limit", low=1, allow_none=True)
        if cost is not None and not isinstance(cost, CostModel):
            raise TypeError(f"cost must be a CostModel or None, got {type(cost).__name__}")
        super().__init__(model_fn, n_workers, grpo, **kwargs)
        self.cost = cost or self.flop_model

    def plan(self, batch: Sequence[MediaSample]) -> Plan:
        lengths = [s.est_tokens + self.T for s in self._validate_batch(batch)]
        return plan_hybrid_shards(
            lengths,
            self.n_workers,
            self.cost,
            self.shard_threshold,
            min_chunk=self.T + 1,
            memory_limit=self.memory_limit,
        )

    def _load(self, step, plan, batch, next_batch) -> tuple[int, int]:
        control = 0
        nxt_plan = self.plan(next_batch) if (self.prefetch and next_batch is not None) else None
        refs = []
        for w, worker in enumerate(self.workers):
            mine = sorted({i for i, _, _ in plan.assignments[w]})
            metas = [batch[i] for i in mine]
            if nxt_plan is not None:
                metas += [next_batch[i] for i in sorted({i for i, _, _ in nxt_plan.assignments[w]})]
            control += _nbytes(metas)
            refs.append(worker.load_metadata.remote(step, metas))
        self._pending_load = refs  # not awaited: decode runs on the workers
        return 0, control
