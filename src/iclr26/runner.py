"""Runs claim checks in worker processes or as Ray tasks, and keeps ``results.json`` current.

Every claim runs in its own worker with a time limit: a claim that crashes, hangs or kills
its process is recorded as ``error`` (with the traceback or the reason) and the run goes on.
With the local executor the limit counts the CPU time of the worker and its children (at most
``limit`` seconds per thread it was given), so a busy machine does not turn a slow claim into an
error; a wall-clock backstop of ``WALL_BACKSTOP`` times the limit stops a claim that hangs
without computing. Ray tasks are limited by wall time from submission.
Each record is written to ``results.json`` as soon as its claim finishes, so an interrupted
run keeps what it finished; a rerun skips claims that already have a record for the same
scale and seed (``force=True`` runs them again; records whose verdict is ``error`` are always
retried).
"""

from __future__ import annotations

import base64
import importlib.metadata
import json
import math
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iclr26 import catalog
from iclr26.claims import (
    Claim,
    Context,
    Result,
    Scale,
    Verdict,
    claims_for,
    cpu_model,
    default_device,
    get_claim,
)

RESULTS_NAME = "results.json"


@dataclass(frozen=True)
class Task:
    paper: str
    claim: str
    scale: str
    seed: int
    time_limit: float
    cpus: int = 1
    gpus: float = 0
    module: str | None = None  # imported by the worker before the claim is looked up
    exclusive: bool = False  # a timing claim: runs with no other claim beside it

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.paper, self.claim, self.scale, self.seed)


# ---------------------------------------------------------------- results.json


def record_key(record: dict[str, Any]) -> tuple[str, str, str, int]:
    return (record["paper"], record["claim"], record["scale"], int(record.get("seed", 0)))


def load_results(out_dir: Path | str) -> dict[str, Any]:
    """The results file of ``out_dir`` (an empty one when it does not exist yet)."""
    path = Path(out_dir) / RESULTS_NAME
    if not path.exists():
        return {"run": {}, "results": []}
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "it may be truncated — rerun `iclr26 reproduce` into a fresh folder"
        ) from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"{path} is not a results file (no 'results' list)")
    required = ("paper", "claim", "scale", "verdict")
    for i, record in enumerate(data["results"]):
        lacking = [k for k in required if not isinstance(record, dict) or k not in record]
        if lacking:
            raise ValueError(
                f"{path}: result {i} is incomplete (no {', '.join(lacking)}); "
                "rerun `iclr26 reproduce` to rebuild it"
            )
    return data


def write_results(out_dir: Path | str, data: dict[str, Any]) -> Path:
    """Write atomically, so that an interruption never leaves a half-written file."""
    path = Path(out_dir) / RESULTS_NAME
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def merge_record(data: dict[str, Any], record: dict[str, Any]) -> None:
    key = record_key(record)
    results = [r for r in data["results"] if record_key(r) != key]
    results.append(record)
    order = {p.slug: i for i, p in enumerate(catalog.PAPERS)}
    results.sort(key=lambda r: (order.get(r["paper"], 10**6), r["paper"], r["claim"]))
    data["results"] = results


_WAIT_POLICY: str | None = None  # the policy the OpenMP runtime was loaded with, when known


def prefer_passive_wait() -> None:
    """Make idle OpenMP threads sleep instead of spin, for every claim this process runs.

    With the default (spinning) policy a worker beside other CPU load burns its time slices
    waiting at barriers: a 2-thread matmul loop next to two busy processes on two cores ran
    5x slower in wall time and tripled its process CPU time, which is what the timing helper
    reports. The OpenMP runtime reads ``OMP_WAIT_POLICY`` once, when torch loads it, and forked
    workers inherit it, so this must run before the first torch import (``iclr26 reproduce``
    and :func:`plan` call it first). A policy the user set is kept."""
    global _WAIT_POLICY
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        _WAIT_POLICY = os.environ["OMP_WAIT_POLICY"]


def _wait_policy_in_effect() -> str:
    if _WAIT_POLICY is not None:
        return _WAIT_POLICY
    return (os.environ.get("OMP_WAIT_POLICY") or "runtime default") + " (torch was loaded first)"


def run_info(scale: Scale, executor: str, jobs: int) -> dict[str, Any]:
    import numpy as np

    info: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "scale": scale.value,
        "executor": executor,
        "jobs": jobs,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "host_cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
    }
    try:
        info["torch"] = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    info["threads"] = max(1, (os.cpu_count() or 1) // max(1, jobs))
    info["omp_wait_policy"] = _wait_policy_in_effect()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        if commit.returncode == 0:
            info["git"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


# ---------------------------------------------------------------- planning


def split_claim_selectors(names: Iterable[str]) -> tuple[list[str], dict[str, set[str]]]:
    """Split ``SLUG:CLAIM`` selectors from paper and area names: returns the names to select
    papers by (each selector's slug once) and ``{slug: {claim, ...}}``. A slug named on its own
    as well keeps all its claims. Raises ValueError naming an unknown paper or claim."""
    plain: list[str] = []
    only: dict[str, set[str]] = {}
    whole = {n for n in names if ":" not in n}
    for name in names:
        if ":" not in name:
            plain.append(name)
            continue
        slug, _, claim_name = name.partition(":")
        if slug not in catalog.BY_SLUG:
            raise ValueError(f"unknown paper {slug!r} in {name!r}")
        known = [c.name for c in claims_for(slug)]
        if claim_name not in known:
            raise ValueError(
                f"unknown claim {claim_name!r} of {slug}; its claims: {', '.join(known) or 'none'}"
            )
        if slug not in whole:
            only.setdefault(slug, set()).add(claim_name)
        if slug not in plain:
            plain.append(slug)
    return plain, only


def plan(
    names: Iterable[str],
    scale: Scale | str,
    seed: int = 0,
    timeout_s: float | None = None,
    repeat: int = 1,
) -> tuple[list[Task], list[catalog.Paper]]:
    """The tasks for the named papers/areas, and the selected papers that have no room yet.

    ``repeat`` > 1 plans each claim with the seeds ``seed, seed + 1, …, seed + repeat - 1``;
    the report then counts how often each verdict came out and marks a claim *fragile* when
    its repeats disagree."""
    prefer_passive_wait()
    scale = Scale.parse(scale)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an integer >= 1, got {repeat!r}")
    if timeout_s is not None and not (float(timeout_s) > 0):
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    tasks: list[Task] = []
    missing: list[catalog.Paper] = []
    names, only = split_claim_selectors(names)
    for paper in catalog.select(names):
        if not paper.implemented:
            missing.append(paper)
            continue
        for entry in claims_for(paper.slug):
            if paper.slug in only and entry.name not in only[paper.slug]:
                continue
            limit = float(timeout_s) if timeout_s else entry.time_limit(scale)
            for k in range(repeat):
                tasks.append(
                    Task(
                        entry.paper,
                        entry.name,
                        scale.value,
                        seed + k,
                        limit,
                        entry.cpus,
                        entry.gpus,
                        module=paper.claims_module,
                        exclusive=entry.exclusive,
                    )
                )
    return tasks, missing


class ScaleMismatch(ValueError):
    """A run at one scale into a folder that holds results of another."""


def stored_scales(data: dict[str, Any]) -> set[str]:
    return {str(r.get("scale")) for r in data.get("results", [])}


def check_scale(out_dir: Path | str, scale: Scale | str) -> None:
    """Refuse to mix scales in one results folder: each scale gets its own folder."""
    scale = Scale.parse(scale)
    other = sorted(stored_scales(load_results(out_dir)) - {scale.value})
    if other:
        raise ScaleMismatch(
            f"{out_dir} holds {', '.join(other)}-scale results; write {scale.value}-scale "
            f"results to a folder of their own (e.g. --out {Path(out_dir) / scale.value})"
        )


def verdict_summary(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (paper, claim, scale) over its repeats: the verdict counts, the majority
    verdict and whether the repeats disagree (``fragile``)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["paper"], r["claim"], r["scale"]), []).append(r)
    rows = []
    for (paper, name, scale), recs in groups.items():
        counts: dict[str, int] = {}
        for r in recs:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        majority = max(counts.items(), key=lambda kv: (kv[1], kv[0] == "reproduced"))[0]
        rows.append(
            {
                "paper": paper,
                "claim": name,
                "scale": scale,
                "repeats": len(recs),
                "seeds": sorted(int(r.get("seed", 0)) for r in recs),
                "counts": counts,
                "verdict": majority,
                "fragile": len(counts) > 1,
            }
        )
    return rows


WALL_BACKSTOP = 4.0  # x the time limit, in wall seconds: a worker that waits without computing
LIMIT_CHECK_S = 1.0  # seconds between two reads of the workers' CPU time by the parent


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` and its live and reaped children; None when
    the process is gone or cannot be read (then only the wall-clock limits apply)."""
    try:
        import psutil

        proc = psutil.Process(pid)
        times = proc.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in proc.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                pass
        return float(total)
    except Exception:
        return None


def _over_limit(task: Task, wall: float, cpu: float | None, threads: int) -> str | None:
    """Why a running worker must stop, or None: its CPU time passed ``time_limit`` per thread,
    or its wall time passed the backstop (or the limit itself where CPU time is unknown)."""
    limit = task.time_limit
    if cpu is None:
        return f"exceeded the time limit of {limit:g} s" if wall > limit else None
    if cpu > limit * threads:
        return (
            f"exceeded the time limit of {limit:g} s: {cpu:.0f} s of CPU time on {threads} "
            f"thread(s) in {wall:.0f} s of wall time"
        )
    if wall > limit * WALL_BACKSTOP:
        return (
            f"exceeded the time limit of {limit:g} s: {wall:.0f} s of wall time "
            f"({WALL_BACKSTOP:g}x the limit) with only {cpu:.0f} s of CPU time"
        )
    return None


def _error_record(task: Task, entry: Claim | None, reason: str, tb: str | None, wall: float):
    record = {
        "paper": task.paper,
        "claim": task.claim,
        "scale": task.scale,
        "seed": task.seed,
        "statement": entry.statement if entry else "",
        "paper_value": entry.paper_value if entry else "",
        "criterion": entry.criterion if entry else "",
    }
    record.update(Result(Verdict.ERROR, reason).to_dict())
    record["traceback"] = tb
    record["wall_s"] = round(wall, 3)
    return record


# ---------------------------------------------------------------- worker side


def _limit_threads(n_threads: int) -> None:
    """Size the worker's thread pools (the wait policy only matters to a spawned worker,
    which loads torch itself; a forked one has the parent's, see ``prefer_passive_wait``)."""
    os.environ.setdefault("OMP_NUM_THREADS", str(n_threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n_threads)
    except ImportError:
        pass
    try:
        import torch

        torch.set_num_threads(n_threads)
    except ImportError:
        pass


def execute(task: Task, out_dir: str, n_threads: int, progress=None) -> dict[str, Any]:
    """Run one task in this process: import its room, run the claim, return the record."""
    import matplotlib

    matplotlib.use("Agg")
    _limit_threads(n_threads)
    if task.module:
        import importlib

        importlib.import_module(task.module)
    entry = get_claim(task.paper, task.claim)
    ctx = Context(
        scale=task.scale,
        seed=task.seed,
        out_dir=Path(out_dir),
        progress=progress,
        device=default_device(),
    )
    return entry.run(ctx)


def _worker_main(task: Task, out_dir: str, n_threads: int, channel) -> None:
    def progress(fraction: float, message: str) -> None:
        channel.put(("progress", task.key, fraction, message))

    try:
        record = execute(task, out_dir, n_threads, progress)
    except BaseException as exc:  # import errors of the room itself
        record = _error_record(
            task, None, f"{type(exc).__name__}: {exc}", traceback.format_exc(), 0.0
        )
    channel.put(("done", task.key, record))
    _shutdown_ray()


def _shutdown_ray() -> None:
    """Stop a Ray the claim started: a forked worker ends without running Ray's exit hook,
    which would leave the local Ray's agent processes running after the claim."""
    if "ray" not in sys.modules:
        return
    try:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    except Exception as exc:  # the record is already sent; say why the cleanup failed
        print(f"warning: could not shut Ray down after the claim: {exc}", file=sys.stderr)


def _ray_execute(task: Task, out_dir: str, n_threads: int) -> dict[str, Any]:
    """The Ray task body: the record plus the bytes of its figures (the node may be remote)."""
    record = execute(task, out_dir, n_threads)
    blobs = {}
    for rel in record.get("figures", []):
        path = Path(out_dir) / rel
        if path.is_file():
            blobs[rel] = base64.b64encode(path.read_bytes()).decode("ascii")
    record["_figure_blobs"] = blobs
    return record


# ---------------------------------------------------------------- executors


@dataclass
class RunSummary:
    out_dir: Path
    ran: list[dict[str, Any]] = field(default_factory=list)
    skipped_existing: list[Task] = field(default_factory=list)
    missing: list[catalog.Paper] = field(default_factory=list)
    interrupted: bool = False

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.ran:
            out[r["verdict"]] = out.get(r["verdict"], 0) + 1
        return out


ProgressHook = Callable[[str, Task, float, str], None]


def _mp_context():
    # fork keeps worker start-up cheap on Linux; elsewhere spawn is the only safe choice.
    if sys.platform.startswith("linux"):
        return mp.get_context("fork")
    return mp.get_context("spawn")


def _slots(task: Task, jobs: int) -> int:
    if task.exclusive:
        return max(1, jobs)
    return max(1, min(int(task.cpus), jobs))


def _run_local(
    tasks: list[Task],
    out_dir: Path,
    jobs: int,
    on_event: ProgressHook,
    on_record: Callable[[dict[str, Any]], None],
) -> None:
    ctx = mp.get_context(_mp_context().get_start_method())
    channel = ctx.Queue()
    # A claim that declares ``cpus=k`` takes min(k, jobs) of the ``jobs`` slots, and an
    # ``exclusive`` (timing) claim takes them all, so timings do not share the cores with another
    # claim. Those claims go first (stable order otherwise), so none waits behind 1-CPU claims.
    pending = sorted(tasks, key=lambda t: -_slots(t, jobs))
    running: dict[tuple, tuple[Task, Any, float]] = {}
    n_threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    # Reading a worker's CPU time walks every process of the machine (psutil's children), a
    # few ms of the parent's CPU each time: the limits, which are minutes, are checked once a
    # second, not at every 0.2-s wake-up, so the parent takes little CPU from the claims.
    last_check = -math.inf
    try:
        while pending or running:
            while (
                pending
                and sum(_slots(r[0], jobs) for r in running.values()) + _slots(pending[0], jobs)
                <= jobs
            ):
                task = pending.pop(0)
                threads = max(n_threads, task.cpus)
                proc = ctx.Process(
                    target=_worker_main, args=(task, str(out_dir), threads, channel), daemon=False
                )
                proc.start()
                running[task.key] = (task, proc, time.monotonic(), threads)
                on_event("start", task, 0.0, "")
            try:
                message = channel.get(timeout=0.2)
            except queue_mod.Empty:
                message = None
            if message is not None:
                kind, key = message[0], message[1]
                if kind == "progress" and key in running:
                    on_event("progress", running[key][0], message[2], message[3])
                elif kind == "done" and key in running:
                    task, proc, _, _ = running.pop(key)
                    proc.join(timeout=10)
                    on_record(message[2])
                    on_event("done", task, 1.0, message[2]["verdict"])
            now = time.monotonic()
            check = now - last_check >= LIMIT_CHECK_S
            if check:
                last_check = now
            for key, (task, proc, started, threads) in list(running.items()):
                why = (
                    _over_limit(task, now - started, _cpu_seconds(proc.pid), threads)
                    if check
                    else None
                )
                if why is not None:
                    proc.kill()
                    proc.join(timeout=5)
                    running.pop(key)
                    record = _error_record(task, _safe_claim(task), why, None, now - started)
                    on_record(record)
                    on_event("done", task, 1.0, record["verdict"])
                elif not proc.is_alive() and proc.exitcode not in (0, None):
                    # Died without reporting: a segfault, os._exit, the out-of-memory killer.
                    running.pop(key)
                    record = _error_record(
                        task,
                        _safe_claim(task),
                        f"worker process died with exit code {proc.exitcode}",
                        None,
                        now - started,
                    )
                    on_record(record)
                    on_event("done", task, 1.0, record["verdict"])
    finally:
        for _, proc, _, _ in running.values():
            proc.kill()
            proc.join(timeout=5)


def _safe_claim(task: Task) -> Claim | None:
    try:
        return get_claim(task.paper, task.claim)
    except Exception:
        return None


def _run_ray(
    tasks: list[Task],
    out_dir: Path,
    jobs: int,
    on_event: ProgressHook,
    on_record: Callable[[dict[str, Any]], None],
) -> None:
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("the ray executor needs Ray: pip install 'iclr26[ray]'") from exc

    from iclr26.ray_local import init_ray

    started_here = init_ray(max(jobs, 1))
    remote = ray.remote(_ray_execute)
    refs: dict[Any, tuple[Task, float]] = {}
    try:
        for task in tasks:
            # An exclusive claim asks Ray for every CPU of a local run so that it runs alone.
            cpus = (
                max(task.cpus, jobs)
                if task.exclusive and not os.environ.get("RAY_ADDRESS")
                else task.cpus
            )
            ref = remote.options(num_cpus=cpus, num_gpus=task.gpus, max_retries=0).remote(
                task, str(out_dir), task.cpus
            )
            refs[ref] = (task, time.monotonic())
            on_event("start", task, 0.0, "")
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
            for ref in done:
                task, started = refs.pop(ref)
                try:
                    record = ray.get(ref)
                    for rel, blob in record.pop("_figure_blobs", {}).items():
                        path = out_dir / rel
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(base64.b64decode(blob))
                except Exception as exc:
                    record = _error_record(
                        task,
                        _safe_claim(task),
                        f"{type(exc).__name__}: {exc}",
                        traceback.format_exc(),
                        time.monotonic() - started,
                    )
                on_record(record)
                on_event("done", task, 1.0, record["verdict"])
            now = time.monotonic()
            for ref, (task, started) in list(refs.items()):
                # The clock starts at submission; a queued task counts its wait too.
                if now - started > task.time_limit:
                    ray.cancel(ref, force=True)
                    refs.pop(ref)
                    record = _error_record(
                        task,
                        _safe_claim(task),
                        f"exceeded the time limit of {task.time_limit:g} s",
                        None,
                        now - started,
                    )
                    on_record(record)
                    on_event("done", task, 1.0, record["verdict"])
    finally:
        for ref in refs:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


def reproduce(
    names: Iterable[str] = (),
    *,
    scale: Scale | str = Scale.QUICK,
    jobs: int = 1,
    executor: str = "local",
    out_dir: Path | str = "results",
    force: bool = False,
    seed: int = 0,
    timeout_s: float | None = None,
    repeat: int = 1,
    on_event: ProgressHook | None = None,
) -> RunSummary:
    """Run the claim checks of the named papers or areas (all when empty), each ``repeat``
    times with consecutive seeds."""
    scale = Scale.parse(scale)
    tasks, missing = plan(names, scale, seed, timeout_s, repeat)
    summary = run_tasks(
        tasks,
        scale=scale,
        jobs=jobs,
        executor=executor,
        out_dir=out_dir,
        force=force,
        on_event=on_event,
    )
    summary.missing = missing
    return summary


def run_tasks(
    tasks: list[Task],
    *,
    scale: Scale | str = Scale.QUICK,
    jobs: int = 1,
    executor: str = "local",
    out_dir: Path | str = "results",
    force: bool = False,
    on_event: ProgressHook | None = None,
) -> RunSummary:
    """Run planned tasks, merging each record into ``out_dir/results.json`` as it finishes."""
    scale = Scale.parse(scale)
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor {executor!r}; valid: local, ray")
    if jobs < 1:
        raise ValueError("jobs must be >= 1")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(out_dir, os.W_OK):
        raise PermissionError(f"output folder {out_dir} is not writable")
    check_scale(out_dir, scale)
    data = load_results(out_dir)
    done_keys = {record_key(r) for r in data["results"] if r.get("verdict") != "error"}
    summary = RunSummary(out_dir=out_dir)
    if not force:
        summary.skipped_existing = [t for t in tasks if t.key in done_keys]
        tasks = [t for t in tasks if t.key not in done_keys]
    data["run"] = run_info(scale, executor, jobs)
    write_results(out_dir, data)

    def on_record(record: dict[str, Any]) -> None:
        summary.ran.append(record)
        merge_record(data, record)
        write_results(out_dir, data)

    hook = on_event or (lambda *args: None)
    try:
        if executor == "local":
            _run_local(tasks, out_dir, jobs, hook, on_record)
        else:
            _run_ray(tasks, out_dir, jobs, hook, on_record)
    except KeyboardInterrupt:
        summary.interrupted = True
    data["run"]["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    data["run"]["interrupted"] = summary.interrupted
    write_results(out_dir, data)
    return summary
