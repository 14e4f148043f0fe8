import json

import pytest

from iclr26 import catalog, cli

needs_cda = pytest.mark.skipif(
    not catalog.get("cda").implemented, reason="the cda room is not installed"
)


def run(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_unknown_slug_is_one_line_with_close_matches(capsys):
    code, out, err = run(capsys, "reproduce", "cdaa")
    assert code == 2
    assert err.count("\n") == 1 and "did you mean cda" in err and "Traceback" not in err


def test_bad_scale_names_valid_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "--scale", "huge"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "smoke" in err and "quick" in err


def test_unwritable_output_folder(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run(capsys, "reproduce", "cda", "--out", str(blocker / "sub"))
    assert code == 2 and "not writable" in err and err.count("\n") == 1


def test_show_unknown_and_report_without_results(capsys, tmp_path):
    code, _, err = run(capsys, "show", "poly_atention")
    assert code == 2 and "poly_attention" in err
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 2 and "no results.json" in err


def test_list_shows_every_paper_and_status(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert "obscuro" in out and "of 57 papers implemented" in out


@needs_cda
def test_show_lists_claims_of_an_implemented_paper(capsys):
    code, out, _ = run(capsys, "show", "cda")
    assert code == 0 and "Centroid" in out


@needs_cda
def test_reproduce_end_to_end_on_one_paper(capsys, tmp_path):
    code, out, err = run(capsys, "reproduce", "cda", "--scale", "smoke", "--out", str(tmp_path))
    assert code == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["results"] and {r["paper"] for r in data["results"]} == {"cda"}
    assert all(r["verdict"] != "error" for r in data["results"])
    assert (tmp_path / "report.html").exists() and (tmp_path / "report.md").exists()
    code, out, err = run(capsys, "reproduce", "cda", "--scale", "smoke", "--out", str(tmp_path))
    assert code == 0 and "already had results" in out


def test_room_commands_are_wired_into_the_cli(capsys, tmp_path):
    code, _, err = run(capsys, "detect", str(tmp_path / "missing.csv"))
    assert code == 2 and err.count("\n") == 1
    (tmp_path / "in").mkdir()
    code, _, err = run(
        capsys, "curate", str(tmp_path / "in"), str(tmp_path / "out"), "--steps", "dedup"
    )
    assert code == 2 and "has no .jsonl, .jsonl.gz or .parquet shards" in err


def test_version_and_python_dash_m(capsys):
    import subprocess
    import sys

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    from iclr26 import __version__

    assert capsys.readouterr().out.strip() == f"iclr26 {__version__}"
    proc = subprocess.run(
        [sys.executable, "-m", "iclr26", "list", "--json", "--area", "optim"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert rows and {r["area"] for r in rows} == {"optim"}
    assert {"slug", "paper", "code", "implemented", "last_verdicts"} <= set(rows[0])


def test_list_does_not_import_the_rooms():
    import subprocess
    import sys

    code = (
        "import sys; from iclr26 import cli; cli.main(['list', '--json']); "
        "rooms = [m for m in sys.modules if m.count('.') >= 2 and m.split('.')[1] in "
        "('classic','optim','nn','rl','llm','dynamics','timeseries','neuro','vision',"
        "'knowledge','generative','three_d')]; "
        "assert not rooms, rooms; assert 'torch' not in sys.modules"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@needs_cda
def test_show_json_and_cite(capsys):
    code, out, _ = run(capsys, "show", "cda", "--json")
    data = json.loads(out)
    assert code == 0 and data["claims"] and data["paper"].startswith("https://")
    assert all(a["summary"] != "dict() -> new empty dictionary" for a in data["api"])
    assert all("``" not in a["summary"] and ":func:" not in a["summary"] for a in data["api"])
    code, out, _ = run(capsys, "show", "cda", "--cite")
    assert code == 0 and out.startswith("@inproceedings{cda2026,") and "year      = {2026}" in out
    code, out, _ = run(capsys, "show", "cda")
    assert ".txt" not in out  # no internal seed-file names


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["reproduce", "cda", "--timeout", "0"], "--timeout must be a positive"),
        (["reproduce", "cda", "--timeout", "-3"], "--timeout must be a positive"),
        (["reproduce", "cda", "--repeat", "0"], "--repeat must be at least 1"),
        (["reproduce", "cda", "--device", "gpu"], "--device must be auto, cpu, cuda"),
        (["reproduce", "cda:no-such-claim"], "unknown claim 'no-such-claim' of cda; its claims:"),
        (["reproduce", "cdaa:fit-time-scaling"], "did you mean cda"),
        (["warmup", "lm", "--size", "enormous"], "unknown tiny LM size"),
    ],
)
def test_one_line_errors(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_reproduce_of_a_paper_not_implemented_yet_is_one_line(capsys, monkeypatch):
    from iclr26 import catalog

    todo = [p.slug for p in catalog.PAPERS if not p.implemented]
    if not todo:  # every room is installed: an installation without the cda room
        real = catalog.Paper.implemented
        monkeypatch.setattr(
            catalog.Paper, "implemented", property(lambda p: p.slug != "cda" and real.fget(p))
        )
        todo = ["cda"]
    code, _, err = run(capsys, "reproduce", todo[0])
    assert code == 2 and f"not implemented yet: {todo[0]}" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_report_on_truncated_or_incomplete_results(capsys, tmp_path):
    (tmp_path / "results.json").write_text('{"run": {}, "results": [{"paper": "cda", ')
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 2 and "not valid JSON" in err and err.count("\n") == 1
    (tmp_path / "results.json").write_text('{"run": {}, "results": [{"paper": "cda"}]}')
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 2 and "incomplete" in err and err.count("\n") == 1


def test_scales_never_mix_in_one_folder(capsys, tmp_path):
    record = {"paper": "cda", "claim": "x", "scale": "smoke", "seed": 0, "verdict": "reproduced"}
    (tmp_path / "results.json").write_text(json.dumps({"run": {}, "results": [record]}))
    code, _, err = run(capsys, "reproduce", "cda", "--scale", "quick", "--out", str(tmp_path))
    assert code == 2 and "holds smoke-scale results" in err and err.count("\n") == 1


@needs_cda
def test_repeat_plans_one_task_per_seed():
    from iclr26.runner import plan

    once, _ = plan(["cda"], "smoke", seed=5)
    thrice, _ = plan(["cda"], "smoke", seed=5, repeat=3)
    assert len(thrice) == 3 * len(once)
    assert sorted({t.seed for t in thrice}) == [5, 6, 7]
    with pytest.raises(ValueError, match="repeat"):
        plan(["cda"], "smoke", repeat=0)


def test_warmup_vision_is_wired_to_the_stack(capsys, tmp_path, monkeypatch):
    import iclr26.models.vision as vision

    calls = []

    def fake_warmup(progress=None, recipe="default"):
        calls.append(recipe)
        progress("tinyvit_p8_ssl", 0, 1)
        progress("done", 1, 1)
        return {"tinyvit_p8_ssl": tmp_path / "a.pt"}

    monkeypatch.setattr(vision, "warmup", fake_warmup)
    code, out, _ = run(capsys, "warmup", "vision", "--size", "test")
    assert code == 0 and calls == ["test"] and "vision: cached at" in out
    code, _, err = run(capsys, "warmup", "vision", "--size", "huge")
    assert code == 2 and "unknown size" in err and err.count("\n") == 1


def test_warmup_qat_teacher_is_wired_to_the_room(capsys, tmp_path, monkeypatch):
    import iclr26.llm.qat_reasoning.claims as qat

    calls = []

    def fake_warm(size="quick", progress=None):
        if size not in ("test", "smoke", "quick", "full"):
            raise ValueError(f"unknown size {size!r}")
        calls.append(size)
        progress(1, 1, "done")
        return tmp_path / "teacher"

    monkeypatch.setattr(qat, "warm_teacher", fake_warm)
    code, out, _ = run(capsys, "warmup", "qat-teacher")
    assert code == 0 and calls == ["quick"] and "qat-teacher: cached at" in out
    code, _, err = run(capsys, "warmup", "qat-teacher", "--size", "huge")
    assert code == 2 and "unknown size" in err


@needs_cda
def test_slug_colon_claim_selects_single_claims(capsys, tmp_path):
    from iclr26.runner import plan

    tasks, _ = plan(["cda:fit-time-scaling"], "smoke")
    assert [(t.paper, t.claim) for t in tasks] == [("cda", "fit-time-scaling")]
    tasks, _ = plan(["cda:fit-time-scaling", "cda"], "smoke")  # the whole paper wins
    assert len(tasks) == 3
    tasks, _ = plan(["cda:fit-time-scaling", "cda:accuracy-ranks"], "smoke")
    assert sorted(t.claim for t in tasks) == ["accuracy-ranks", "fit-time-scaling"]
    code, out, err = run(
        capsys, "reproduce", "cda:accuracy-ranks", "--scale", "smoke", "--out", str(tmp_path)
    )
    assert code == 0, err
    data = json.loads((tmp_path / "results.json").read_text())
    assert [(r["paper"], r["claim"]) for r in data["results"]] == [("cda", "accuracy-ranks")]
