import json

import numpy as np
import pytest

from iclr26.claims import Context, Result, Scale, Verdict, claim, claims_for, get_claim


def test_judge_reproduced_when_all_required_hold():
    r = Result.judge(metrics={"a": 1.0}, required={"a > 0": True, "b": True})
    assert r.verdict is Verdict.REPRODUCED
    assert r.checks == {"a > 0": True, "b": True}


def test_judge_not_reproduced_names_the_failed_condition():
    r = Result.judge(metrics={"a": -1.0}, required={"a > 0": False, "b": True})
    assert r.verdict is Verdict.NOT_REPRODUCED
    assert "a > 0" in r.reason and "b" not in r.reason.replace("failed: ", "").split(";")[0][2:]


def test_judge_partial_is_inconclusive_only_when_all_partial_hold():
    r = Result.judge(metrics={}, required={"main": False}, partial={"weaker": True})
    assert r.verdict is Verdict.INCONCLUSIVE and r.reason.startswith("partial")
    r = Result.judge(metrics={}, required={"main": False}, partial={"weaker": False})
    assert r.verdict is Verdict.NOT_REPRODUCED


def test_judge_needs_a_condition():
    with pytest.raises(ValueError):
        Result.judge(metrics={}, required={})


def test_result_is_json_clean():
    r = Result.judge(
        metrics={"x": np.float32(0.5), "arr": np.arange(3), "bad": float("nan")},
        baseline={"b": {"n": np.int64(3)}},
        required={"ok": np.bool_(True)},
    )
    text = json.dumps(r.to_dict())
    back = json.loads(text)
    assert back["metrics"]["arr"] == [0, 1, 2] and back["metrics"]["bad"] == "nan"
    assert back["baseline"]["b"]["n"] == 3 and back["verdict"] == "reproduced"


def test_scale_parse_and_pick():
    assert Scale.parse("QUICK") is Scale.QUICK
    with pytest.raises(ValueError, match="valid scales"):
        Scale.parse("huge")
    ctx = Context(scale="smoke", seed=3)
    assert ctx.pick(1, 2, 3) == 1
    assert Context(scale="full").pick(1, 2) == 2
    assert Context(scale="full").pick(1, 2, 3) == 3
    assert ctx.rng.integers(1000) == np.random.default_rng(3).integers(1000)


def test_claim_run_records_error_with_traceback(tmp_path):
    @claim(paper="_test_paper", name="boom", statement="s", paper_value="p", criterion="c")
    def boom(ctx):
        raise RuntimeError("kaput")

    record = get_claim("_test_paper", "boom").run(Context(scale="smoke", out_dir=tmp_path))
    assert record["verdict"] == "error"
    assert "kaput" in record["reason"] and "RuntimeError" in record["traceback"]
    assert record["env"]["seed"] == 0 and "python" in record["env"]


def test_claim_must_return_result(tmp_path):
    @claim(paper="_test_paper", name="wrong", statement="s", paper_value="p", criterion="c")
    def wrong(ctx):
        return {"verdict": "reproduced"}

    record = get_claim("_test_paper", "wrong").run(Context(scale="smoke", out_dir=tmp_path))
    assert record["verdict"] == "error" and "not Result" in record["reason"]


def test_figures_are_stored_relative_to_out_dir(tmp_path):
    @claim(paper="_test_paper", name="fig", statement="s", paper_value="p", criterion="c")
    def fig(ctx):
        path = ctx.figure_path("_test_paper", "fig")
        path.write_bytes(b"png")
        return Result.judge(
            metrics={"v": 1}, baseline={"b": {"v": 0}}, required={"v": True}, figures=[path]
        )

    record = get_claim("_test_paper", "fig").run(Context(scale="smoke", out_dir=tmp_path))
    assert record["figures"] == ["figures/_test_paper-fig-smoke.png"]


def test_save_figure_writes_a_png_and_closes_the_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ctx = Context(scale="smoke", out_dir=tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = ctx.save_figure(fig, "_test_paper", "saved")
    assert path == ctx.figure_path("_test_paper", "saved")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)


def test_unimplemented_paper_has_no_claims():
    assert claims_for("obscuro") == [] or all(c.paper == "obscuro" for c in claims_for("obscuro"))
    with pytest.raises(KeyError, match="did you mean"):
        claims_for("cdaa")


def test_contract_problems_flags_missing_baseline_and_conditions():
    from iclr26.claims import contract_problems

    ok = {
        "verdict": "reproduced",
        "metrics": {"a": 1},
        "baseline": {"b": {"x": 2}},
        "checks": {"a > 0": True},
    }
    assert contract_problems(ok) == []
    assert "no baseline measured in the same run" in contract_problems({**ok, "baseline": {}})
    only_partial = {**ok, "checks": {"partial: weak": True}}
    assert "no required condition" in contract_problems(only_partial)
    assert contract_problems({"verdict": "skipped"}) == []


def test_timeit_pins_threads_and_reports_minimum(monkeypatch):
    import torch

    from iclr26.claims import timeit

    before = torch.get_num_threads()
    seen = []
    timing = timeit(
        lambda: seen.append(torch.get_num_threads()) or 7, repeat=3, warmup=1, threads=1
    )
    assert seen == [1, 1, 1, 1] and torch.get_num_threads() == before
    assert timing.repeat == 3 and timing.value == 7
    assert timing.cpu_s == min(timing.cpu_runs) and timing.wall_s == min(timing.wall_runs)
    assert timing.cpu_s <= timing.cpu_median_s
    d = timing.count(flops=10).to_dict()
    assert d["count_flops"] == 10 and "load_before" in d


def test_timeit_rejects_bad_arguments():
    import pytest

    from iclr26.claims import timeit

    for kwargs in ({"repeat": 0}, {"number": 1.5}, {"threads": 0}, {"max_total_s": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            timeit(lambda: None, **kwargs)
    with pytest.raises(TypeError, match="fn"):
        timeit(None)


def test_timeit_interleaved_rotates_the_order_and_reports_per_function_minima():
    from iclr26.claims import timeit_interleaved

    calls = []
    fns = {k: (lambda k=k: calls.append(k) or k) for k in "abc"}
    out = timeit_interleaved(fns, repeat=3, warmup=1, threads=1)
    assert "".join(calls) == "abc" + "abc" + "bca" + "cab"
    assert list(out) == ["a", "b", "c"]
    for k, t in out.items():
        assert t.value == k and t.repeat == 3 and len(t.cpu_runs) == 3
        assert t.cpu_s == min(t.cpu_runs) and t.wall_s == min(t.wall_runs)


def test_timeit_interleaved_ratio_survives_a_load_change_that_back_to_back_timing_does_not(
    monkeypatch,
):
    """A fake clock: function "slow" costs 2 units, "fast" 1, and everything costs 3x as much
    once the machine gets busy (after the first half of the timed calls). Back-to-back
    repeats put all of "slow"'s runs before the change and all of "fast"'s after it, so
    their ratio comes out 2/3; interleaved rounds see both under each load and the ratio of
    minima is the true 2."""
    import iclr26.claims as C

    clock = {"t": 0.0, "calls": 0}
    busy_after = {"n": 0}

    def tick(cost):
        def run():
            clock["calls"] += 1
            clock["t"] += cost * (3.0 if clock["calls"] > busy_after["n"] else 1.0)

        return run

    monkeypatch.setattr(C.time, "process_time", lambda: clock["t"])
    monkeypatch.setattr(C.time, "perf_counter", lambda: clock["t"])
    fns = {"slow": tick(2.0), "fast": tick(1.0)}
    busy_after["n"] = 1 + 4 + 1  # the warm-up and the repeats of "slow" run before the change
    back = {k: C.timeit(f, repeat=4, warmup=1, threads=None) for k, f in fns.items()}
    assert back["slow"].cpu_s / back["fast"].cpu_s == 2.0 / 3.0
    clock.update(t=0.0, calls=0)
    busy_after["n"] = 2 + 4  # the warm-up round and half of the 8 timed calls
    inter = C.timeit_interleaved(fns, repeat=4, warmup=1, threads=None)
    assert inter["slow"].cpu_s / inter["fast"].cpu_s == 2.0
    assert inter["slow"].cpu_median_s / inter["fast"].cpu_median_s == 2.0


def test_timeit_interleaved_rejects_bad_arguments():
    import pytest

    from iclr26.claims import timeit_interleaved

    with pytest.raises(ValueError, match="fns"):
        timeit_interleaved({})
    with pytest.raises(TypeError, match="fns\\['x'\\]"):
        timeit_interleaved({"x": 3})
    for kwargs in ({"repeat": 0}, {"number": 1.5}, {"warmup": -1}, {"threads": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            timeit_interleaved({"x": lambda: None}, **kwargs)


def test_figures_get_a_title_and_a_threshold_mark(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr26.claims import Context, Scale, mark_threshold, title_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    line = mark_threshold(ax, 0.5, "threshold 0.5")
    assert line.get_label() == "threshold 0.5" and list(line.get_ydata()) == [0.5, 0.5]
    title_figure(fig, "paper · claim (quick scale)")
    assert fig._suptitle.get_text() == "paper · claim (quick scale)"
    fig2, ax2 = plt.subplots()
    ax2.set_title("own title")
    title_figure(fig2, "not used")
    assert fig2._suptitle is None
    plt.close(fig2)
    ctx = Context(scale=Scale.SMOKE, out_dir=tmp_path)
    path = ctx.save_figure(fig, "paper", "claim")
    assert path.name == "paper-claim-smoke.png" and path.is_file()
    with pytest.raises(ValueError, match="axis"):
        mark_threshold(ax, 1.0, "x", axis="z")


def test_save_judged_titles_with_the_verdict_and_attaches_the_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ctx = Context(scale="smoke", out_dir=tmp_path)
    result = Result.judge(metrics={"a": 1.0}, required={"a > 0": True}, baseline={"b": 0.0})
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("own title")
    titles = []
    real_save = fig.savefig
    fig.savefig = lambda *a, **k: (titles.append(ax.get_title()), real_save(*a, **k))
    out = ctx.save_judged(fig, "_test_paper", "judged", result)
    assert out is result and len(result.figures) == 1
    assert result.figures[0] == str(ctx.figure_path("_test_paper", "judged"))
    assert titles and "verdict: reproduced (smoke scale)" in titles[0]
    assert titles[0].endswith("own title") and "_test_paper · judged" in titles[0]
    assert not plt.fignum_exists(fig.number)


def test_slope_guide_passes_through_the_log_centroid_with_the_given_slope():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr26.claims import slope_guide

    fig, ax = plt.subplots()
    xs, ys = [1.0, 10.0, 100.0, 0.0], [2.0, 20.0, 200.0, 5.0]  # x = 0 is left out
    slope_guide(ax, xs, ys, 2.0, "bound")
    (line,) = ax.get_lines()
    gx, gy = np.log(line.get_xdata()), np.log(line.get_ydata())
    assert np.allclose(np.diff(gy) / np.diff(gx), 2.0)
    cx, cy = np.log([1.0, 10.0, 100.0]).mean(), np.log([2.0, 20.0, 200.0]).mean()
    assert np.isclose(np.interp(cx, gx, gy), cy) and line.get_label() == "bound"
    slope_guide(ax, [0.0], [1.0], 1.0, "none")  # nothing finite: no line
    assert len(ax.get_lines()) == 1
    plt.close(fig)


def test_shared_experiment_computes_once_and_keys_on_source(tmp_path, monkeypatch):
    from iclr26.claims import shared_experiment

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    room = tmp_path / "room"
    room.mkdir()
    (room / "claims.py").write_text("A = 1\n")
    calls = []

    def compute():
        calls.append(1)
        return {"value": (1, 2), "n": len(calls)}

    first = shared_experiment("demo", {"scale": "quick"}, compute, source=room, codec="json")
    again = shared_experiment("demo", {"scale": "quick"}, compute, source=room, codec="json")
    assert len(calls) == 1
    assert first == again == {"value": [1, 2], "n": 1}  # the JSON round trip both times
    shared_experiment("demo", {"scale": "full"}, compute, source=room, codec="json")
    assert len(calls) == 2  # another key
    (room / "claims.py").write_text("A = 2\n")
    shared_experiment("demo", {"scale": "quick"}, compute, source=room / "claims.py", codec="json")
    assert len(calls) == 3  # changed code is never served a stale result


def test_shared_experiment_torch_codec_and_damaged_file(tmp_path, monkeypatch):
    import torch

    from iclr26.claims import shared_experiment

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    room = tmp_path / "room"
    room.mkdir()
    (room / "x.py").write_text("")
    value = shared_experiment("demo", {}, lambda: {"w": torch.arange(3.0)}, source=room)
    assert torch.equal(value["w"], torch.arange(3.0))
    (stored,) = (tmp_path / "demo").glob("experiment-*.pt")
    stored.write_bytes(b"not a torch file")
    with pytest.warns(RuntimeWarning, match="could not be read"):
        value = shared_experiment("demo", {}, lambda: {"w": torch.ones(2)}, source=room)
    assert torch.equal(value["w"], torch.ones(2))
    with pytest.raises(ValueError, match="codec"):
        shared_experiment("demo", {}, dict, source=room, codec="pickle")
    with pytest.raises(ValueError, match="paper"):
        shared_experiment("", {}, dict, source=room)
    with pytest.raises(TypeError, match="key"):
        shared_experiment("demo", [1], dict, source=room)


def test_shared_experiment_runs_once_across_concurrent_processes(tmp_path):
    import os
    import subprocess
    import sys

    room = tmp_path / "room"
    room.mkdir()
    (room / "claims.py").write_text("")
    log = tmp_path / "computed.log"
    script = (
        "import sys, time\n"
        "from iclr26.claims import shared_experiment\n"
        "def compute():\n"
        f"    open({str(log)!r}, 'a').write('x')\n"
        "    time.sleep(1.0)\n"
        "    return {'ok': 1}\n"
        f"print(shared_experiment('demo', {{'k': 1}}, compute, source={str(room)!r}, "
        "codec='json'))\n"
    )
    env = dict(os.environ, ICLR26_CACHE=str(tmp_path / "cache"))
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs == ["{'ok': 1}"] * 3
    assert log.read_text() == "x"  # one process computed, two waited and loaded


def test_shared_parts_skips_a_part_another_process_is_computing(tmp_path, monkeypatch):
    import threading
    import time

    from iclr26.claims import _SharedFile, shared_parts

    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path / "cache"))
    room = tmp_path / "room"
    room.mkdir()
    (room / "claims.py").write_text("")
    computed = []
    parts = {
        "a": lambda: computed.append("a") or "a-here",
        "b": lambda: computed.append("b") or "b-here",
    }
    other = _SharedFile("demo", {"k": 1, "_part": "a"}, room, "json", True)
    assert other.lock()  # "another process" is computing part a
    box = {}
    worker = threading.Thread(
        target=lambda: box.update(shared_parts("demo", {"k": 1}, parts, source=room))
    )
    worker.start()
    deadline = time.time() + 30
    while computed != ["b"] and time.time() < deadline:
        time.sleep(0.01)
    assert computed == ["b"]  # b first: a's lock was taken
    assert worker.is_alive()  # and now it waits for a
    other.get(lambda: "a-elsewhere")
    other.unlock()
    worker.join(30)
    assert box == {"a": "a-elsewhere", "b": "b-here"}  # a loaded, not recomputed
    assert computed == ["b"]
    with pytest.raises(ValueError, match="parts"):
        shared_parts("demo", {}, {}, source=room)
    with pytest.raises(TypeError, match="part"):
        shared_parts("demo", {}, {"a": 1}, source=room)


def test_default_device_reads_iclr26_device_and_never_falls_back(monkeypatch, tmp_path):
    import torch

    from iclr26.claims import default_device, run_claim

    monkeypatch.delenv("ICLR26_DEVICE", raising=False)
    assert default_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv("ICLR26_DEVICE", "CPU")
    assert default_device() == "cpu"
    monkeypatch.setenv("ICLR26_DEVICE", "gpu")
    with pytest.raises(ValueError, match="ICLR26_DEVICE must be"):
        default_device()
    if not torch.cuda.is_available():
        monkeypatch.setenv("ICLR26_DEVICE", "cuda:0")
        with pytest.raises(ValueError, match="no such CUDA device"):
            default_device()
    seen = {}

    @claim(paper="_test_paper", name="sees-device", statement="s", paper_value="v", criterion="c")
    def sees_device(ctx):
        seen["device"] = ctx.device
        return Result.skipped("plumbing only")

    monkeypatch.setenv("ICLR26_DEVICE", "cpu")
    run_claim("_test_paper", "sees-device", "smoke", out_dir=tmp_path)
    assert seen["device"] == "cpu"


@pytest.mark.parametrize("locked", [True, False])
def test_build_lock_lets_one_of_several_processes_build_a_cache_entry(tmp_path, locked):
    import os
    import subprocess
    import sys

    entry, log = tmp_path / "model", tmp_path / "built.log"
    script = (
        "import contextlib, time\n"
        "from iclr26.claims import build_lock\n"
        f"entry = __import__('pathlib').Path({str(entry)!r})\n"
        f"lock = build_lock(entry) if {locked} else contextlib.nullcontext()\n"
        "with lock:\n"
        "    if not entry.exists():\n"
        f"        open({str(log)!r}, 'a').write('x')\n"
        "        time.sleep(1.0)\n"
        "        entry.mkdir(exist_ok=True)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ)) for _ in range(2)
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert entry.is_dir()
    # with the lock one process builds and the other finds the entry; without it both see it
    # missing and build (the case the lock exists for)
    assert log.read_text() == ("x" if locked else "xx")


def test_the_environment_records_the_cpu_and_the_kernel_set_torch_uses():
    import torch

    from iclr26.claims import Scale, cpu_model, environment
    from iclr26.runner import run_info

    env = environment()
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["cpu_model"] == cpu_model()
    assert cpu_model() is None or (isinstance(cpu_model(), str) and cpu_model())
    assert run_info(Scale.SMOKE, "local", 1)["cpu_model"] == cpu_model()
