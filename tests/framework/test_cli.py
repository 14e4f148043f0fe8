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
    assert code == 2 and "no .jsonl or .parquet shards" in err
