"""The claim contract: a paper's headline claim as an executable, judged experiment.

A claim check is a function decorated with :func:`claim`. It receives a :class:`Context`
(scale, seed, random generator, torch device, output folder, progress hook), runs the
paper's method and its baseline(s) on the same data and seeds, and returns a
:class:`Result` whose verdict is computed from the measured numbers by
:meth:`Result.judge` against the criterion declared in the decorator before running.

Example::

    @claim(paper="cda", name="fit-time-scaling",
           statement="CDA trains faster than LDA as the dimension grows",
           paper_value="O(NM) vs O(NM^2 + M^3)",
           criterion="slope of CDA fit time vs M <= 1.2 and LDA slope >= 1.5")
    def fit_time_scaling(ctx: Context) -> Result:
        ...
        return Result.judge(
            metrics={"cda_slope": s_cda}, baseline={"lda": {"slope": s_lda}},
            required={"CDA slope <= 1.2": s_cda <= 1.2, "LDA slope >= 1.5": s_lda >= 1.5},
        )
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np


class Scale(StrEnum):
    """How large a claim check runs: ``smoke`` (tests, seconds), ``quick`` (<= ~2 min on
    2 CPU cores, the default of ``reproduce``), ``full`` (closer to the paper)."""

    SMOKE = "smoke"
    QUICK = "quick"
    FULL = "full"

    @classmethod
    def parse(cls, value: str | Scale) -> Scale:
        if isinstance(value, Scale):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            valid = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown scale {value!r}; valid scales: {valid}") from None


class Verdict(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    SKIPPED = "skipped"
    ERROR = "error"


def title_figure(fig, title: str) -> None:
    """Give ``fig`` a suptitle unless it has one (or its only axes carries a title)."""
    if getattr(fig, "_suptitle", None) is not None and fig._suptitle.get_text():
        return
    axes = fig.get_axes()
    if len(axes) == 1 and axes[0].get_title():
        return
    fig.suptitle(title, fontsize=9)


def mark_threshold(ax, value: float, label: str, axis: str = "y", **line_kwargs):
    """A dashed line at a verdict's threshold ``value`` (horizontal for ``axis="y"``,
    vertical for ``"x"``), labelled ``label`` for the legend; returns the line."""
    value = float(value)
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    kwargs = {"color": "black", "linestyle": "--", "linewidth": 1.0, "alpha": 0.7}
    kwargs.update(line_kwargs)
    line = (ax.axhline if axis == "y" else ax.axvline)(value, label=label, **kwargs)
    return line


def slope_guide(ax, xs, ys, slope: float, label: str, **line_kwargs) -> None:
    """The bound of a log-log slope criterion on ``ax``: a dashed line of ``slope`` through the
    centroid of (log xs, log ys), where the least-squares fit that the criterion judges also
    passes, so the fitted line is steeper than the guide exactly when its slope is larger.
    Points with a non-finite or non-positive coordinate are left out; none left: no line."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    ok = np.isfinite(lx) & np.isfinite(ly)
    if not ok.any():
        return
    kwargs = {"color": "black", "linestyle": "--", "linewidth": 1.0, "alpha": 0.7}
    kwargs.update(line_kwargs)
    grid = np.linspace(lx[ok].min(), lx[ok].max(), 20)
    centre = ly[ok].mean() + slope * (grid - lx[ok].mean())
    ax.loglog(np.exp(grid), np.exp(centre), label=label, **kwargs)


@dataclass
class Context:
    """What a claim check gets from the runner."""

    scale: Scale = Scale.QUICK
    seed: int = 0
    out_dir: Path = field(default_factory=lambda: Path("results"))
    device: str = "cpu"
    progress: Callable[[float, str], None] | None = None

    def __post_init__(self) -> None:
        self.scale = Scale.parse(self.scale)
        self.out_dir = Path(self.out_dir)
        self.rng = np.random.default_rng(self.seed)

    def pick(self, smoke: Any, quick: Any, full: Any | None = None) -> Any:
        """The value for the current scale (``full`` falls back to ``quick`` when omitted)."""
        if self.scale is Scale.SMOKE:
            return smoke
        if self.scale is Scale.QUICK or full is None:
            return quick
        return full

    @property
    def figures_dir(self) -> Path:
        path = self.out_dir / "figures"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def figure_path(self, paper: str, name: str) -> Path:
        """Where a claim saves a figure (named with its scale, and its seed when not 0, so that
        runs never overwrite each other's); the Result stores the path relative to ``out_dir``."""
        seed = f"-seed{self.seed}" if self.seed else ""
        return self.figures_dir / f"{paper}-{name}-{self.scale.value}{seed}.png"

    def save_figure(self, fig, paper: str, name: str, dpi: int = 110) -> Path:
        """Title, lay out, save and close a matplotlib figure at ``figure_path``; returns the
        path. A figure without a title of its own gets ``"<paper> · <name> (<scale>)"``."""
        import matplotlib.pyplot as plt

        path = self.figure_path(paper, name)
        title_figure(fig, f"{paper} · {name} ({self.scale.value} scale)")
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        return path

    def save_judged(self, fig, paper: str, name: str, result: Result, dpi: int = 110) -> Result:
        """Title ``fig`` with the claim and ``result``'s verdict (kept above a single axes'
        own title), save it with :meth:`save_figure` and append its path to
        ``result.figures``; returns ``result``."""
        title = f"{paper} · {name}\nverdict: {result.verdict.value} ({self.scale.value} scale)"
        axes = fig.get_axes()
        if len(axes) == 1 and axes[0].get_title():  # title_figure would keep only that title
            axes[0].set_title(f"{title}\n{axes[0].get_title()}", fontsize=9)
        title_figure(fig, title)
        result.figures.append(str(self.save_figure(fig, paper, name, dpi=dpi)))
        return result

    @staticmethod
    def mark_threshold(ax, value: float, label: str, axis: str = "y", **line_kwargs):
        """Draw the threshold a verdict uses on ``ax`` (a dashed line at ``value`` across the
        ``axis``, labelled in the legend) so the figure shows where "reproduced" begins."""
        return mark_threshold(ax, value, label, axis=axis, **line_kwargs)

    def report(self, fraction: float, message: str = "") -> None:
        """Tell the runner how far the check has come (0..1)."""
        if self.progress is not None:
            self.progress(min(max(float(fraction), 0.0), 1.0), message)

    def timeit(self, fn: Callable[[], Any], **kwargs: Any) -> Timing:
        """:func:`timeit` (threads pinned, repeated, minimum CPU and wall time, load recorded);
        at smoke scale it takes one warm-up and two runs unless told otherwise."""
        if self.scale is Scale.SMOKE:
            kwargs.setdefault("repeat", 2)
            kwargs.setdefault("warmup", min(int(kwargs.get("warmup", 1)), 1))
        return timeit(fn, **kwargs)

    def timeit_interleaved(
        self, fns: Mapping[str, Callable[[], Any]], **kwargs: Any
    ) -> dict[str, Timing]:
        """:func:`timeit_interleaved` (the functions timed in rotating rounds, so that their
        ratio is taken over the same load); at smoke scale two rounds and one warm-up unless
        told otherwise."""
        if self.scale is Scale.SMOKE:
            kwargs.setdefault("repeat", 2)
            kwargs.setdefault("warmup", min(int(kwargs.get("warmup", 1)), 1))
        return timeit_interleaved(fns, **kwargs)

    def torch_generator(self, offset: int = 0):
        import torch

        return torch.Generator(device="cpu").manual_seed(self.seed + offset)


# ---------------------------------------------------------------- shared experiments


def cache_root() -> Path:
    """The package's on-disk cache: ``$ICLR26_CACHE`` (an empty value counts as unset), default
    ``~/.cache/iclr26``; created on first use."""
    import os

    root = Path(os.environ.get("ICLR26_CACHE") or Path.home() / ".cache" / "iclr26")
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def build_lock(entry: Path) -> Iterator[None]:
    """Hold the exclusive lock of one cache entry (the file ``<entry>.lock`` beside it) while
    it is checked and, if missing, built. A second process asking for the same entry, e.g. two
    claims of one room run at once, waits here without computing and then finds the entry
    built, instead of training the same model again and racing on the same temporary folder.
    The lock is advisory (``fcntl.flock``) and released when its holder exits or dies; where
    ``fcntl`` is missing (Windows) it does nothing."""
    entry = Path(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(entry.with_name(entry.name + ".lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def source_digest(source: str | Path) -> str:
    """A sha256 of the ``.py`` files of a room (``source`` is the room's folder or any file in
    it), so that a result cached by other code is never reused."""
    import hashlib

    folder = Path(source)
    if not folder.is_dir():
        folder = folder.parent
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


_CODECS = ("torch", "json")


class _SharedFile:
    """One cached value on disk, its lock file beside it, and how to read and write it."""

    def __init__(self, paper: str, key: Mapping[str, Any], source: str | Path, codec: str,
                 weights_only: bool) -> None:  # fmt: skip
        import hashlib
        import json

        import torch

        if not isinstance(paper, str) or not paper or "/" in paper:
            raise ValueError(f"paper must be a non-empty slug without '/', got {paper!r}")
        if not isinstance(key, Mapping):
            raise TypeError(f"key must be a mapping, got {type(key).__name__}")
        if codec not in _CODECS:
            raise ValueError(f"codec must be one of {_CODECS}, got {codec!r}")
        payload = dict(
            key=dict(key), torch=torch.__version__, numpy=np.__version__, src=source_digest(source)
        )
        text = json.dumps(payload, sort_keys=True, default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        folder = cache_root() / paper
        folder.mkdir(parents=True, exist_ok=True)
        self.paper, self.codec, self.weights_only = paper, codec, weights_only
        self.path = folder / f"experiment-{digest}.{'json' if codec == 'json' else 'pt'}"
        self.handle = None

    def lock(self, blocking: bool = True) -> bool:
        """Take the file lock; ``blocking=False`` returns False at once if another process
        holds it. Without POSIX locks every process just goes ahead."""
        self.handle = open(self.path.with_suffix(".lock"), "a")  # noqa: SIM115
        try:
            import fcntl
        except ImportError:
            return True
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            self.handle.close()
            self.handle = None
            return False
        return True

    def unlock(self) -> None:
        if self.handle is not None:
            self.handle.close()  # closing the descriptor releases its flock
            self.handle = None

    def get(self, compute: Callable[[], Any]) -> Any:
        """The stored value, or ``compute()`` stored (call with the lock held)."""
        import json
        import os
        import warnings

        import torch

        if self.path.exists():
            try:
                if self.codec == "json":
                    return json.loads(self.path.read_text())
                return torch.load(self.path, weights_only=self.weights_only)
            except Exception as exc:  # a file of another format or a damaged disk
                warnings.warn(
                    f"cached experiment {self.path.name} of {self.paper} could not be read "
                    f"({type(exc).__name__}: {exc}); computing it again",
                    RuntimeWarning,
                    stacklevel=3,
                )
        value = compute()
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        if self.codec == "json":
            text = json.dumps(value)
            tmp.write_text(text)
            value = json.loads(text)
        else:
            torch.save(value, tmp)
        tmp.replace(self.path)
        return value


def shared_experiment(
    paper: str,
    key: Mapping[str, Any],
    compute: Callable[[], Any],
    *,
    source: str | Path,
    codec: str = "torch",
    weights_only: bool = True,
) -> Any:
    """The one experiment that several claims of a room read, computed once per run.

    The runner gives each claim its own process, so an in-process cache alone would make every
    claim redo the experiment. Here the first process to get the file lock runs ``compute()``
    and stores its value under ``cache_root()/<paper>/experiment-<hash>``; processes started
    beside it wait on the lock and then load that file. The hash covers ``key`` (the scale,
    seed, setting and device the caller passes), the torch and numpy versions and the room's
    source text (:func:`source_digest` of ``source``).

    ``codec="json"`` stores a JSON value, and returns the JSON round trip also from the process
    that computed it, so a claim sees the same value whether it computed or loaded it (tuples
    become lists, keys strings). ``codec="torch"`` stores with :func:`torch.save`; pass
    ``weights_only=False`` to load objects beyond tensors and plain containers (only files this
    function wrote are ever read). A cache file that cannot be read is reported with a warning
    naming it, and recomputed.
    """
    if not callable(compute):
        raise TypeError("compute must be callable")
    file = _SharedFile(paper, key, source, codec, weights_only)
    file.lock()
    try:
        return file.get(compute)
    finally:
        file.unlock()


def shared_parts(
    paper: str,
    key: Mapping[str, Any],
    parts: Mapping[str, Callable[[], Any]],
    *,
    source: str | Path,
    codec: str = "json",
    weights_only: bool = True,
) -> dict[str, Any]:
    """Like :func:`shared_experiment` for an experiment made of independent parts (the methods
    of a comparison), each stored in its own file, so that claims running side by side split
    the work: a process first computes every part that no other process is computing, skipping
    those whose lock is taken, then waits for the skipped ones and loads them. Each part must
    not depend on the order in which parts run (seed it from ``key``, never from a global
    random state). Returns ``{name: value}`` in the order of ``parts``."""
    if not isinstance(parts, Mapping) or not parts:
        raise ValueError("parts must be a non-empty mapping of name -> callable")
    for name, fn in parts.items():
        if not isinstance(name, str) or not callable(fn):
            raise TypeError(f"part {name!r} must map a string to a callable")
    out: dict[str, Any] = {}
    skipped = []
    for name, fn in parts.items():
        file = _SharedFile(paper, {**dict(key), "_part": name}, source, codec, weights_only)
        if file.lock(blocking=False):
            try:
                out[name] = file.get(fn)
            finally:
                file.unlock()
        else:
            skipped.append((name, fn, file))
    for name, fn, file in skipped:
        file.lock()
        try:
            out[name] = file.get(fn)
        finally:
            file.unlock()
    return {name: out[name] for name in parts}


# ---------------------------------------------------------------- timing


def machine_load() -> dict[str, float | None]:
    """The 1-minute load average and the CPUs, recorded beside every timing."""
    import os

    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):
        load1 = None
    return {"load1": load1, "host_cpus": os.cpu_count()}


@dataclass
class Timing:
    """What :func:`timeit` measured: per-call minimum and median of process CPU time and of
    wall time over ``repeat`` runs, the threads used and the machine load before and after.

    The minimum is the figure least disturbed by other processes (CPU time is the time this
    process itself ran; wall time also counts waiting for a core). ``counts`` holds any
    load-free numbers (FLOPs, passes, bytes) that the caller attaches with :meth:`count`."""

    cpu_s: float
    wall_s: float
    cpu_median_s: float
    wall_median_s: float
    repeat: int
    number: int
    threads: int
    load_before: float | None
    load_after: float | None
    cpu_runs: list[float] = field(default_factory=list)
    wall_runs: list[float] = field(default_factory=list)
    counts: dict[str, float] = field(default_factory=dict)
    value: Any = None

    def count(self, **counts: float) -> Timing:
        self.counts.update(counts)
        return self

    def to_dict(self) -> dict[str, Any]:
        out = {
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "cpu_median_s": self.cpu_median_s,
            "wall_median_s": self.wall_median_s,
            "repeat": self.repeat,
            "number": self.number,
            "threads": self.threads,
            "load_before": self.load_before,
            "load_after": self.load_after,
        }
        out.update({f"count_{k}": v for k, v in self.counts.items()})
        return out


def _check_timing_args(repeat, number, warmup, threads) -> None:
    for arg, val, low in (("repeat", repeat, 1), ("number", number, 1), ("warmup", warmup, 0)):
        if isinstance(val, bool) or not isinstance(val, int) or val < low:
            raise ValueError(f"{arg} must be an integer >= {low}, got {val!r}")
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise ValueError(f"threads must be a positive integer or None, got {threads!r}")


def _timing(
    cpu_runs: list[float],
    wall_runs: list[float],
    number: int,
    threads: int,
    load_before,
    load_after,
    value,
) -> Timing:
    return Timing(
        cpu_s=min(cpu_runs),
        wall_s=min(wall_runs),
        cpu_median_s=float(np.median(cpu_runs)),
        wall_median_s=float(np.median(wall_runs)),
        repeat=len(cpu_runs),
        number=number,
        threads=threads,
        load_before=load_before,
        load_after=load_after,
        cpu_runs=cpu_runs,
        wall_runs=wall_runs,
        value=value,
    )


def timeit(
    fn: Callable[[], Any],
    *,
    repeat: int = 5,
    number: int = 1,
    warmup: int = 1,
    threads: int | None = 1,
    setup: Callable[[], Any] | None = None,
    sync: Callable[[], Any] | None = None,
    max_total_s: float | None = None,
) -> Timing:
    """Time ``fn()`` with threads pinned: ``warmup`` untimed calls, then ``repeat`` runs of
    ``number`` calls each; per-call minimum and median of process CPU time and wall time.

    ``threads`` pins torch's and the BLAS/OpenMP pools for the duration (``None`` leaves them
    as they are). ``setup`` runs untimed before each run (fresh state); ``sync`` runs inside
    the timed region after the calls (e.g. ``torch.cuda.synchronize``). ``max_total_s`` stops
    repeating once that much wall time is spent (at least one run is always taken).
    The return value of the last call is kept in ``Timing.value``."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _check_timing_args(repeat, number, warmup, threads)
    if max_total_s is not None and not (max_total_s > 0):
        raise ValueError(f"max_total_s must be > 0, got {max_total_s!r}")

    with _pinned_threads(threads) as used:
        load_before = machine_load()["load1"]
        value = None
        for _ in range(warmup):
            if setup is not None:
                setup()
            value = fn()
        cpu_runs: list[float] = []
        wall_runs: list[float] = []
        spent = 0.0
        for _ in range(repeat):
            if setup is not None:
                setup()
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(number):
                value = fn()
            if sync is not None:
                sync()
            c1, w1 = time.process_time(), time.perf_counter()
            cpu_runs.append((c1 - c0) / number)
            wall_runs.append((w1 - w0) / number)
            spent += w1 - w0
            if max_total_s is not None and spent >= max_total_s:
                break
        load_after = machine_load()["load1"]
    return _timing(cpu_runs, wall_runs, number, used, load_before, load_after, value)


def timeit_interleaved(
    fns: Mapping[str, Callable[[], Any]],
    *,
    repeat: int = 5,
    number: int = 1,
    warmup: int = 1,
    threads: int | None = 1,
    setup: Callable[[], Any] | None = None,
    sync: Callable[[], Any] | None = None,
) -> dict[str, Timing]:
    """Time several functions against each other, as :func:`timeit` does each one, but in
    ``repeat`` interleaved rounds: every round times each function once (``number`` calls),
    and the order within a round rotates (round ``r`` starts at function ``r mod k``).

    A ratio of two functions' times is then taken over the same stretches of machine load,
    and no function is always the first (cold caches, allocator growth) or the last to run;
    timing each function's repeats back to back instead lets a change of load between two
    blocks of repeats decide the ratio. Returns one :class:`Timing` per name, in the order
    given; every one carries the machine load before and after the whole measurement."""
    if not isinstance(fns, Mapping) or not fns:
        raise ValueError("fns must be a non-empty mapping of names to callables")
    for name, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"fns[{name!r}] must be callable, got {type(fn).__name__}")
    _check_timing_args(repeat, number, warmup, threads)
    names = list(fns)
    cpu_runs: dict[str, list[float]] = {n: [] for n in names}
    wall_runs: dict[str, list[float]] = {n: [] for n in names}
    values: dict[str, Any] = dict.fromkeys(names)
    with _pinned_threads(threads) as used:
        load_before = machine_load()["load1"]
        for _ in range(warmup):
            for name in names:
                if setup is not None:
                    setup()
                values[name] = fns[name]()
        for r in range(repeat):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                if setup is not None:
                    setup()
                c0, w0 = time.process_time(), time.perf_counter()
                for _ in range(number):
                    values[name] = fns[name]()
                if sync is not None:
                    sync()
                c1, w1 = time.process_time(), time.perf_counter()
                cpu_runs[name].append((c1 - c0) / number)
                wall_runs[name].append((w1 - w0) / number)
        load_after = machine_load()["load1"]
    return {
        name: _timing(
            cpu_runs[name], wall_runs[name], number, used, load_before, load_after, values[name]
        )
        for name in names
    }


class _pinned_threads:
    """Context manager: torch and BLAS/OpenMP pools at ``n`` threads, restored on exit."""

    def __init__(self, n: int | None):
        self.n = n
        self._torch_before: int | None = None
        self._limits = None

    def __enter__(self) -> int:
        try:
            import torch
        except ImportError:  # pragma: no cover
            torch = None
        if self.n is None:
            return torch.get_num_threads() if torch is not None else 1
        if torch is not None:
            self._torch_before = torch.get_num_threads()
            torch.set_num_threads(self.n)
        try:
            from threadpoolctl import threadpool_limits

            self._limits = threadpool_limits(self.n)
        except ImportError:  # pragma: no cover
            self._limits = None
        return self.n

    def __exit__(self, *exc: Any) -> None:
        if self._limits is not None:
            self._limits.restore_original_limits()
        if self._torch_before is not None:
            import torch

            torch.set_num_threads(self._torch_before)


def _clean(value: Any) -> Any:
    """Make measured values JSON-friendly (numpy scalars, arrays, non-finite floats)."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass
class Result:
    """What a claim check measured and the verdict computed from it."""

    verdict: Verdict
    reason: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)

    @classmethod
    def judge(
        cls,
        *,
        metrics: Mapping[str, Any],
        required: Mapping[str, bool],
        baseline: Mapping[str, Any] | None = None,
        partial: Mapping[str, bool] | None = None,
        figures: list[str | Path] | None = None,
        note: str = "",
    ) -> Result:
        """Compute the verdict from named boolean conditions on measured numbers.

        ``reproduced`` when every ``required`` condition holds; otherwise ``inconclusive``
        (reason "partial: ...") when a ``partial`` criterion is declared and all its
        conditions hold; otherwise ``not reproduced``. The reason names what failed.
        """
        if not required:
            raise ValueError("a claim needs at least one required condition")
        required = {str(k): bool(v) for k, v in required.items()}
        partial_checks = {str(k): bool(v) for k, v in (partial or {}).items()}
        failed = [k for k, ok in required.items() if not ok]
        if not failed:
            verdict, reason = Verdict.REPRODUCED, "all conditions hold"
        elif partial_checks and all(partial_checks.values()):
            verdict = Verdict.INCONCLUSIVE
            reason = "partial: " + "; ".join(partial_checks) + " | failed: " + "; ".join(failed)
        else:
            verdict, reason = Verdict.NOT_REPRODUCED, "failed: " + "; ".join(failed)
        if note:
            reason = f"{reason} ({note})"
        checks = dict(required)
        checks.update({f"partial: {k}": v for k, v in partial_checks.items()})
        return cls(
            verdict=verdict,
            reason=reason,
            metrics=_clean(dict(metrics)),
            baseline=_clean(dict(baseline or {})),
            checks=checks,
            figures=[str(f) for f in (figures or [])],
        )

    @classmethod
    def inconclusive(cls, reason: str, metrics: Mapping[str, Any] | None = None, **kw) -> Result:
        return cls(Verdict.INCONCLUSIVE, reason, metrics=_clean(dict(metrics or {})), **kw)

    @classmethod
    def skipped(cls, reason: str) -> Result:
        return cls(Verdict.SKIPPED, reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "metrics": _clean(self.metrics),
            "baseline": _clean(self.baseline),
            "checks": dict(self.checks),
            "figures": list(self.figures),
        }


@dataclass(frozen=True)
class Claim:
    """A registered claim check and what it declares about itself."""

    paper: str
    name: str
    statement: str
    paper_value: str
    criterion: str
    func: Callable[[Context], Result]
    cpus: int = 1
    gpus: float = 0
    needs_gpu: bool = False
    timeout_s: Mapping[str, float] = field(default_factory=dict)
    exclusive: bool = False  # it times code: nothing else runs beside it
    headline: tuple[str, ...] = ()  # the metric names the report's summary shows

    @property
    def key(self) -> str:
        return f"{self.paper}:{self.name}"

    def time_limit(self, scale: Scale | str) -> float:
        scale = Scale.parse(scale)
        default = {Scale.SMOKE: 120.0, Scale.QUICK: 600.0, Scale.FULL: 7200.0}[scale]
        return float(self.timeout_s.get(scale.value, default))

    def run(self, ctx: Context) -> dict[str, Any]:
        """Run the check in this process and return the record that results.json stores."""
        import traceback

        started = time.perf_counter()
        record: dict[str, Any] = {
            "paper": self.paper,
            "claim": self.name,
            "scale": ctx.scale.value,
            "seed": ctx.seed,
            "statement": self.statement,
            "paper_value": self.paper_value,
            "criterion": self.criterion,
            "headline": list(self.headline),
        }
        try:
            if self.needs_gpu and not _gpu_available():
                result = Result.skipped("needs a CUDA GPU; none is available")
            else:
                result = self.func(ctx)
            if not isinstance(result, Result):
                raise TypeError(f"claim {self.key} returned {type(result).__name__}, not Result")
            record.update(result.to_dict())
            record["traceback"] = None
        except Exception as exc:  # a crashing claim is recorded, never fatal to the run
            record.update(Result(Verdict.ERROR, f"{type(exc).__name__}: {exc}").to_dict())
            record["traceback"] = traceback.format_exc()
        record["figures"] = [_relative_figure(f, ctx.out_dir) for f in record.get("figures", [])]
        record["wall_s"] = round(time.perf_counter() - started, 3)
        record["env"] = environment(ctx)
        return record


def contract_problems(record: Mapping[str, Any]) -> list[str]:
    """What a judged claim record lacks under the claim contract: a verdict of reproduced, not
    reproduced or inconclusive must carry measured metrics, a non-empty baseline measured in the
    same run, and at least one required condition. (Skipped and error records are exempt.)"""
    verdict = record.get("verdict")
    if verdict not in (Verdict.REPRODUCED, Verdict.NOT_REPRODUCED, Verdict.INCONCLUSIVE):
        return []
    problems = []
    if not record.get("metrics"):
        problems.append("no measured metrics")
    if not record.get("baseline"):
        problems.append("no baseline measured in the same run")
    required = [k for k in record.get("checks", {}) if not str(k).startswith("partial: ")]
    if not required:
        problems.append("no required condition")
    return problems


def _relative_figure(path: str, out_dir: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(out_dir).resolve()))
    except ValueError:
        return str(path)


def _gpu_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def default_device() -> str:
    """The torch device the runner hands to claims as ``ctx.device``: ``$ICLR26_DEVICE`` when
    set (``cpu``, ``cuda``, ``cuda:N`` or ``mps``; ``auto`` or empty means unset), else ``cuda``
    where torch sees a GPU, else ``cpu``. Rooms run smoke and quick scale on the CPU (their
    README numbers) and ``--scale full`` on this device. A requested device that is not
    present is an error naming ``ICLR26_DEVICE``, never a silent fall back to the CPU."""
    import os

    return resolve_device(os.environ.get("ICLR26_DEVICE") or "auto", name="ICLR26_DEVICE")


def resolve_device(spec: str, name: str = "device") -> str:
    """``spec`` (auto, cpu, cuda, cuda:N or mps, any case) as a device string torch accepts;
    ValueError naming ``name`` when it is malformed or the device is not present."""
    import re

    wanted = str(spec).strip().lower()
    if wanted == "auto":
        return "cuda" if _gpu_available() else "cpu"
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", wanted):
        raise ValueError(f"{name} must be auto, cpu, cuda, cuda:N or mps, got {spec!r}")
    if wanted.startswith("cuda"):
        import torch

        index = int(wanted.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise ValueError(f"{name}={spec!r}, but torch sees no such CUDA device")
    if wanted == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise ValueError(f"{name}={spec!r}, but torch sees no MPS device")
    return wanted


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``), or
    ``None`` where neither says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def environment(ctx: Context | None = None) -> dict[str, Any]:
    """Versions, threads and CPU a result was measured with. The CPU model and the kernel set
    torch dispatches to (``torch.backends.cpu.get_cpu_capability()``: e.g. AVX2 or AVX-512)
    are recorded because trained numbers can differ between them at the same seed."""
    import os

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "host_cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
    }
    try:
        import torch

        env["torch"] = torch.__version__
        env["threads"] = torch.get_num_threads()
        try:
            env["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        except AttributeError:  # pragma: no cover - older torch
            env["cpu_capability"] = None
    except ImportError:
        pass
    if ctx is not None:
        env["seed"] = ctx.seed
        env["device"] = ctx.device
    return env


_REGISTRY: dict[str, dict[str, Claim]] = {}


def claim(
    *,
    paper: str,
    name: str,
    statement: str,
    paper_value: str,
    criterion: str,
    cpus: int = 1,
    gpus: float = 0,
    needs_gpu: bool = False,
    timeout_s: Mapping[str, float] | None = None,
    exclusive: bool = False,
    headline: tuple[str, ...] | list[str] = (),
) -> Callable[[Callable[[Context], Result]], Callable[[Context], Result]]:
    """Register a claim check for ``paper`` (its catalogue slug) under ``name``.

    ``headline`` names the one or two metrics (keys of the result's ``metrics``, and of each
    baseline's entry where it has them) that the report's summary table shows."""

    def register(func: Callable[[Context], Result]) -> Callable[[Context], Result]:
        entry = Claim(
            paper=paper,
            name=name,
            statement=statement,
            paper_value=paper_value,
            criterion=criterion,
            func=func,
            cpus=cpus,
            gpus=gpus,
            needs_gpu=needs_gpu,
            timeout_s=dict(timeout_s or {}),
            exclusive=exclusive,
            headline=tuple(headline),
        )
        _REGISTRY.setdefault(paper, {})[name] = entry
        func.claim = entry  # type: ignore[attr-defined]
        return func

    return register


def claims_for(slug: str) -> list[Claim]:
    """The claim checks of one paper, importing its room's ``claims`` module."""
    import importlib

    from iclr26 import catalog

    if slug not in catalog.BY_SLUG and slug in _REGISTRY:
        return list(_REGISTRY[slug].values())  # claims a user registered for their own work
    paper = catalog.get(slug)
    if not paper.implemented:
        return []
    importlib.import_module(paper.claims_module)
    return list(_REGISTRY.get(slug, {}).values())


def get_claim(slug: str, name: str) -> Claim:
    for entry in claims_for(slug):
        if entry.name == name:
            return entry
    raise KeyError(f"paper {slug!r} has no claim {name!r}")


def run_claim(
    slug: str,
    name: str,
    scale: Scale | str = Scale.SMOKE,
    seed: int = 0,
    out_dir: Path | str = "results",
    device: str | None = None,
) -> dict[str, Any]:
    """Run one claim in this process (used by tests and by the runner's workers); ``device``
    defaults to :func:`default_device`."""
    ctx = Context(
        scale=Scale.parse(scale),
        seed=seed,
        out_dir=Path(out_dir),
        device=device or default_device(),
    )
    return get_claim(slug, name).run(ctx)
