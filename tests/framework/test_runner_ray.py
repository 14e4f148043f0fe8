import sys
import textwrap
import time

import pytest

from iclr26.runner import Task, load_results, run_tasks

ray = pytest.importorskip("ray")

CLAIMS = """
from iclr26.claims import Result, claim

@claim(paper="_ray_paper", name="sum", statement="adds", paper_value="3", criterion="1+2 == 3")
def add(ctx):
    path = ctx.figure_path("_ray_paper", "sum")
    path.write_bytes(b"not really a png")
    return Result.judge(metrics={"sum": 1 + 2}, baseline={"b": {"sum": 0}},
                        required={"1+2 == 3": 1 + 2 == 3}, figures=[path])

@claim(paper="_ray_paper", name="broken", statement="raises", paper_value="-", criterion="-")
def broken(ctx):
    raise RuntimeError("fails on the cluster too")
"""


def test_ray_executor_runs_claims_as_tasks(tmp_path):
    (tmp_path / "user_claims_for_ray.py").write_text(textwrap.dedent(CLAIMS))
    sys.path.insert(0, str(tmp_path))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(tmp_path)}},
    )
    try:
        tasks = [
            Task("_ray_paper", name, "smoke", 0, 600, module="user_claims_for_ray")
            for name in ("sum", "broken")
        ]
        summary = run_tasks(tasks, scale="smoke", executor="ray", out_dir=tmp_path / "out")
    finally:
        ray.shutdown()
        sys.path.remove(str(tmp_path))
    verdicts = {r["claim"]: r for r in summary.ran}
    assert verdicts["sum"]["verdict"] == "reproduced", verdicts["sum"]["reason"]
    assert verdicts["broken"]["verdict"] == "error"
    assert "fails on the cluster too" in verdicts["broken"]["reason"]
    # Figures made on the (possibly remote) node are written back next to results.json.
    assert (
        tmp_path / "out" / "figures" / "_ray_paper-sum-smoke.png"
    ).read_bytes() == b"not really a png"
    assert len(load_results(tmp_path / "out")["results"]) == 2


def test_a_local_ray_started_by_the_package_does_not_nice_its_workers(monkeypatch):
    # Ray's default worker niceness (15) starves its workers beside any other CPU load.
    from iclr26.ray_local import NICENESS_ENV, init_ray

    monkeypatch.delenv(NICENESS_ENV, raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    try:
        assert init_ray(1) is True
        assert init_ray(1) is False  # already running: left as it is
        import os

        @ray.remote
        def niceness():
            return os.nice(0)

        assert ray.get(niceness.remote()) == os.nice(0)
    finally:
        ray.shutdown()


def test_init_ray_keeps_the_users_niceness_and_joins_a_cluster(monkeypatch):
    import iclr26.ray_local as R

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setenv(R.NICENESS_ENV, "7")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert R.init_ray(3)
    assert calls[-1] == dict(num_cpus=3, include_dashboard=False, log_to_driver=False)
    assert R.os.environ[R.NICENESS_ENV] == "7"
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    assert R.init_ray(3)
    assert calls[-1] == dict(address="ray://head:10001", log_to_driver=False)


RAY_CLAIM = """
from iclr26.claims import Result, claim

@claim(paper="_ray_leak", name="starts-ray", statement="-", paper_value="-", criterion="-")
def starts_ray(ctx):
    import time

    import psutil
    import ray
    from iclr26.ray_local import init_ray
    init_ray(1)
    ray.get(ray.remote(lambda: 1).remote())
    time.sleep(1.0)  # the agents start beside the raylet
    pids = [p.pid for p in psutil.Process().children(recursive=True)]
    return Result.judge(metrics={"ray_pids": pids}, baseline={"b": {}},
                        required={"ray is up": ray.is_initialized() and len(pids) >= 2})
"""


def test_a_claim_that_starts_ray_leaves_no_ray_process_behind(tmp_path):
    # A forked worker exits without Ray's exit hook; the runner shuts Ray down for it.
    import subprocess

    import psutil

    (tmp_path / "user_claims_ray_leak.py").write_text(textwrap.dedent(RAY_CLAIM))
    # a fresh parent, as under `iclr26 reproduce`: forking a process that has used Ray before
    # (as this test process may have) can hang the child
    code = (
        "from iclr26.runner import Task, run_tasks\n"
        "task = Task('_ray_leak', 'starts-ray', 'smoke', 0, 60, module='user_claims_ray_leak')\n"
        f"run_tasks([task], scale='smoke', out_dir={str(tmp_path / 'out')!r})\n"
    )
    env = dict(__import__("os").environ, PYTHONPATH=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], env=env, timeout=300, check=True)
    (record,) = load_results(tmp_path / "out")["results"]
    assert record["verdict"] == "reproduced", record["reason"]

    def alive():
        out = []
        for pid in record["metrics"]["ray_pids"]:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.NoSuchProcess:
                pass
        return out

    deadline = time.monotonic() + 30
    while alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert alive() == []
