import json
import os
import time

import pytest

from iclr26.claims import Result, claim
from iclr26.runner import Task, load_results, run_tasks

PAPER = "_test_runner"


@claim(paper=PAPER, name="ok", statement="passes", paper_value="-", criterion="x == 1")
def ok(ctx):
    ctx.report(0.5, "half")
    return Result.judge(metrics={"x": 1}, baseline={"b": {"x": 0}}, required={"x == 1": True})


@claim(paper=PAPER, name="fails", statement="fails", paper_value="-", criterion="x == 2")
def fails(ctx):
    return Result.judge(metrics={"x": 1}, baseline={"b": {"x": 0}}, required={"x == 2": False})


@claim(paper=PAPER, name="raises", statement="raises", paper_value="-", criterion="-")
def raises(ctx):
    raise ValueError("broken claim")


@claim(paper=PAPER, name="dies", statement="kills its process", paper_value="-", criterion="-")
def dies(ctx):
    os._exit(3)


@claim(paper=PAPER, name="hangs", statement="never ends", paper_value="-", criterion="-")
def hangs(ctx):
    time.sleep(60)
    return Result.judge(metrics={"x": 0}, baseline={"b": {"x": 0}}, required={"never": True})


@claim(paper=PAPER, name="spins", statement="computes forever", paper_value="-", criterion="-")
def spins(ctx):
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass
    return Result.judge(metrics={"x": 0}, baseline={"b": {"x": 0}}, required={"never": True})


def task(name, limit=30.0):
    return Task(PAPER, name, "smoke", 0, limit)


def test_every_failure_mode_is_recorded_and_the_run_goes_on(tmp_path):
    events = []
    summary = run_tasks(
        [task("raises"), task("dies"), task("hangs", limit=2.0), task("ok"), task("fails")],
        scale="smoke",
        jobs=2,
        out_dir=tmp_path,
        on_event=lambda kind, t, frac, msg: events.append((kind, t.claim, msg)),
    )
    verdicts = {r["claim"]: r for r in summary.ran}
    assert verdicts["ok"]["verdict"] == "reproduced"
    assert verdicts["fails"]["verdict"] == "not reproduced"
    assert verdicts["raises"]["verdict"] == "error"
    assert "broken claim" in verdicts["raises"]["traceback"]
    assert verdicts["dies"]["verdict"] == "error" and "exit code 3" in verdicts["dies"]["reason"]
    assert verdicts["hangs"]["verdict"] == "error" and "time limit" in verdicts["hangs"]["reason"]
    assert ("progress", "ok", "half") in events
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["results"]) == 5 and data["run"]["scale"] == "smoke"


def test_rerun_skips_finished_claims_unless_forced_and_retries_errors(tmp_path):
    run_tasks([task("ok"), task("raises")], scale="smoke", out_dir=tmp_path)
    again = run_tasks([task("ok"), task("raises")], scale="smoke", out_dir=tmp_path)
    assert [t.claim for t in again.skipped_existing] == ["ok"]
    assert [r["claim"] for r in again.ran] == ["raises"]
    forced = run_tasks([task("ok")], scale="smoke", out_dir=tmp_path, force=True)
    assert [r["claim"] for r in forced.ran] == ["ok"]
    assert len(load_results(tmp_path)["results"]) == 2


def test_interrupted_run_keeps_finished_claims(tmp_path):
    def interrupt_after_first(kind, t, frac, msg):
        if kind == "done":
            raise KeyboardInterrupt

    summary = run_tasks(
        [task("ok"), task("fails"), task("hangs", limit=30)],
        scale="smoke",
        out_dir=tmp_path,
        on_event=interrupt_after_first,
    )
    assert summary.interrupted
    data = load_results(tmp_path)
    assert [r["claim"] for r in data["results"]] == ["ok"]
    assert data["run"]["interrupted"] is True
    rerun = run_tasks([task("ok"), task("fails")], scale="smoke", out_dir=tmp_path)
    assert [r["claim"] for r in rerun.ran] == ["fails"]


def test_bad_runner_arguments(tmp_path):
    with pytest.raises(ValueError, match="executor"):
        run_tasks([], executor="slurm", out_dir=tmp_path)
    with pytest.raises(ValueError, match="jobs"):
        run_tasks([], jobs=0, out_dir=tmp_path)


def test_results_file_that_is_not_ours_is_refused(tmp_path):
    (tmp_path / "results.json").write_text('{"something": 1}')
    with pytest.raises(ValueError, match="not a results file"):
        load_results(tmp_path)


def _interval_claim(ctx, label):
    start = time.time()
    time.sleep(0.6)
    (ctx.out_dir / f"interval-{label}.json").write_text(json.dumps([start, time.time()]))
    return Result.judge(metrics={"ran": 1}, baseline={"b": {"ran": 0}}, required={"ran": True})


@claim(paper=PAPER, name="short-a", statement="-", paper_value="-", criterion="-")
def short_a(ctx):
    return _interval_claim(ctx, "a")


@claim(paper=PAPER, name="short-b", statement="-", paper_value="-", criterion="-")
def short_b(ctx):
    return _interval_claim(ctx, "b")


@claim(paper=PAPER, name="wide", statement="-", paper_value="-", criterion="-", cpus=2)
def wide(ctx):
    return _interval_claim(ctx, "wide")


def test_a_claim_declaring_two_cpus_runs_alone_and_first(tmp_path):
    tasks = [task("short-a"), Task(PAPER, "wide", "smoke", 0, 30.0, cpus=2), task("short-b")]
    summary = run_tasks(tasks, scale="smoke", jobs=2, out_dir=tmp_path)
    assert {r["claim"]: r["verdict"] for r in summary.ran} == dict.fromkeys(
        ("short-a", "short-b", "wide"), "reproduced"
    )
    spans = {
        k: json.loads((tmp_path / f"interval-{k}.json").read_text()) for k in "a b wide".split()
    }
    assert spans["wide"][1] <= min(spans["a"][0], spans["b"][0])
    # the two 1-CPU claims still share the two slots
    assert spans["a"][0] < spans["b"][1] and spans["b"][0] < spans["a"][1]


@claim(paper=PAPER, name="timed", statement="-", paper_value="-", criterion="-", exclusive=True)
def timed(ctx):
    return _interval_claim(ctx, "timed")


def test_exclusive_claim_takes_every_slot_while_cpus_takes_only_its_own(tmp_path):
    from iclr26.claims import get_claim

    assert get_claim(PAPER, "timed").exclusive and not get_claim(PAPER, "wide").exclusive
    tasks = [
        task("short-a"),
        Task(PAPER, "wide", "smoke", 0, 30.0, cpus=2),
        Task(PAPER, "timed", "smoke", 0, 30.0, exclusive=True),
    ]
    summary = run_tasks(tasks, scale="smoke", jobs=3, out_dir=tmp_path)
    assert all(r["verdict"] == "reproduced" for r in summary.ran) and len(summary.ran) == 3
    spans = {
        k: json.loads((tmp_path / f"interval-{k}.json").read_text()) for k in "a wide timed".split()
    }
    assert spans["timed"][1] <= min(spans["a"][0], spans["wide"][0])
    # with 3 slots, the 2-CPU claim and a 1-CPU claim run side by side
    assert spans["a"][0] < spans["wide"][1] and spans["wide"][0] < spans["a"][1]


def test_time_limit_counts_cpu_time_with_a_wall_backstop():
    import os

    from iclr26.runner import WALL_BACKSTOP, _cpu_seconds, _over_limit

    t = task("ok", limit=10.0)
    assert (
        _over_limit(t, wall=35.0, cpu=9.0, threads=1) is None
    )  # slow only because the machine is busy
    why = _over_limit(t, wall=12.0, cpu=10.5, threads=1)
    assert "10.5" not in why and "CPU time on 1 thread(s)" in why and "time limit of 10 s" in why
    assert _over_limit(t, wall=12.0, cpu=15.0, threads=2) is None  # two threads: 20 s of CPU
    why = _over_limit(t, wall=10.0 * WALL_BACKSTOP + 1, cpu=0.5, threads=1)
    assert "wall time" in why and "only 0 s of CPU time" in why  # waits without computing
    assert _over_limit(t, wall=11.0, cpu=None, threads=1) is not None  # CPU unknown: wall limit
    assert _over_limit(t, wall=9.0, cpu=None, threads=1) is None
    assert _cpu_seconds(os.getpid()) > 0
    assert _cpu_seconds(2**22 + 12345) is None  # no such process


def test_a_computing_claim_is_stopped_by_its_cpu_time_and_a_waiting_one_by_the_backstop(tmp_path):
    summary = run_tasks(
        [task("spins", limit=3.0), task("hangs", limit=1.0)], scale="smoke", jobs=2,
        out_dir=tmp_path,
    )  # fmt: skip
    reasons = {r["claim"]: r["reason"] for r in summary.ran}
    assert "CPU time on" in reasons["spins"], reasons
    assert "wall time" in reasons["hangs"] and "x the limit" in reasons["hangs"], reasons


def _fresh_python(code: str, **env_overrides) -> str:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update(env_overrides)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_planning_sets_the_passive_wait_policy_before_torch_loads_and_keeps_the_users():
    # A worker beside other load spins at OpenMP barriers unless the policy is passive; the
    # runtime reads it once, at load, so it must be set before the first torch import.
    code = (
        "import os, sys\n"
        "from iclr26.runner import plan, run_info\n"
        "assert 'torch' not in sys.modules\n"
        "plan(['flexrl'], 'smoke')\n"
        "assert 'torch' in sys.modules  # the claims module loaded it, after the policy\n"
        "print(os.environ['OMP_WAIT_POLICY'], run_info(plan.__globals__['Scale'].parse('smoke'),"
        " 'local', 1)['omp_wait_policy'])\n"
    )
    assert _fresh_python(code) == "PASSIVE PASSIVE"
    assert _fresh_python(code, OMP_WAIT_POLICY="ACTIVE") == "ACTIVE ACTIVE"
    # torch loaded first: the run says the policy is not known to be in effect
    late = (
        "import torch\n"
        "from iclr26.runner import plan, run_info, Scale\n"
        "plan(['flexrl'], 'smoke')\n"
        "print(run_info(Scale.parse('smoke'), 'local', 1)['omp_wait_policy'])\n"
    )
    assert _fresh_python(late) == "runtime default (torch was loaded first)"
