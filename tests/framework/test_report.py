from html.parser import HTMLParser

import matplotlib.pyplot as plt

from iclr26.claims import Result, claim
from iclr26.report import build_report, format_numbers
from iclr26.runner import Task, run_tasks

PAPER = "_test_report"


@claim(paper=PAPER, name="with-figure", statement="draws", paper_value="0.9", criterion="a > b")
def with_figure(ctx):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = ctx.figure_path(PAPER, "with-figure")
    fig.savefig(path)
    plt.close(fig)
    return Result.judge(
        metrics={"a": 0.91234567},
        baseline={"b": {"a": 0.5}},
        required={"a > b": True},
        figures=[path],
    )


@claim(paper=PAPER, name="pipe|name", statement="s|t", paper_value="p|q", criterion="c")
def piped(ctx):
    return Result.judge(metrics={"a": 1}, baseline={"b": {"a": 0}}, required={"never": False})


class TableParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.images, self._row, self._in_table, self._cell = [], 0, None, False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "claims":
            self._in_table = True
        elif self._in_table and tag == "tr":
            self._row = []
        elif self._in_table and tag in ("td", "th"):
            self._cell = ""
        elif tag == "img" and attrs.get("src", "").startswith("data:image/png;base64,"):
            self.images += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "table":
            self._in_table = False


def test_report_html_table_and_embedded_figures(tmp_path):
    run_tasks(
        [Task(PAPER, "with-figure", "smoke", 0, 60), Task(PAPER, "pipe|name", "smoke", 0, 60)],
        scale="smoke",
        out_dir=tmp_path,
    )
    md, html = build_report(tmp_path)
    parser = TableParser()
    parser.feed(html.read_text())
    header, *rows = parser.rows
    assert header == ["paper", "claim", "ours", "baseline", "criterion", "scale", "verdict", "why"]
    by_statement = {r[1]: r for r in rows}
    assert len(rows) == 2
    with_figure, piped = by_statement["draws"], by_statement["s|t"]
    assert with_figure[6] == "reproduced" and piped[6] == "not reproduced"
    assert with_figure[2] == "a=0.9123"
    assert with_figure[3] == "b: a=0.5"
    assert with_figure[5] == "smoke (plumbing)"
    assert "failed: never" in piped[7]
    assert parser.images == 1
    page = html.read_text()
    assert "plumbing check, not a verdict" in page and "<details>" in page
    text = md.read_text()
    assert "figures/_test_report-with-figure-smoke.png" in text
    assert "| s\\|t |" in text  # table cells escape pipes
    assert "1 not reproduced, 1 reproduced" in text


def test_repeats_are_counted_and_disagreement_is_fragile(tmp_path):
    from iclr26.report import summary_rows

    def rec(seed, verdict):
        return {
            "paper": "cda",
            "claim": "c",
            "scale": "quick",
            "seed": seed,
            "verdict": verdict,
            "metrics": {"m": seed},
            "baseline": {"b": {"m": 0}},
            "statement": "s",
            "criterion": "c",
            "reason": verdict,
        }

    rows = summary_rows([rec(0, "reproduced"), rec(1, "reproduced"), rec(2, "not reproduced")])
    (row,) = rows
    assert row["fragile"] and row["repeats"] == 3
    assert row["counts"] == {"reproduced": 2, "not reproduced": 1}
    assert row["label"] == "fragile: 2× reproduced, 1× not reproduced"
    assert row["ours"] == "m=0"  # the numbers shown are the first seed's
    (steady,) = summary_rows([rec(0, "reproduced"), rec(1, "reproduced")])
    assert not steady["fragile"] and steady["label"] == "reproduced (2/2 seeds)"


def test_headline_metrics_are_the_declared_ones():
    from iclr26.report import headline

    record = {
        "headline": ["acc"],
        "metrics": {"loss": 0.3, "acc": 0.91, "curve": [1, 2]},
        "baseline": {"lda": {"acc": 0.8, "loss": 0.5}, "svc": {"acc": 0.85}},
    }
    assert headline(record) == ("acc=0.91", "lda: acc=0.8; svc: acc=0.85")
    assert headline({"metrics": {"x": 1, "y": 2, "z": 3}, "baseline": {}})[0] == "x=1, y=2"


def test_format_numbers():
    assert format_numbers({"a": 1.23456789, "b": {"c": 2}}) == "a=1.235, b=c=2"
    assert format_numbers(list(range(10))).endswith("(10 values)]")


def test_report_renders_in_a_headless_browser(tmp_path):
    import importlib.util
    from pathlib import Path

    import pytest

    script = Path(__file__).resolve().parents[2] / "scripts" / "check_report_in_browser.py"
    spec = importlib.util.spec_from_file_location("check_report_in_browser", script)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    if check.find_browser() is None:
        pytest.skip("no headless Chromium installed (apt-get install chromium-headless-shell)")
    run_tasks(
        [Task(PAPER, "with-figure", "smoke", 0, 60), Task(PAPER, "pipe|name", "smoke", 0, 60)],
        scale="smoke",
        out_dir=tmp_path,
    )
    build_report(tmp_path)
    shot = tmp_path / "report.png"
    assert check.main([str(tmp_path), "--screenshot", str(shot)]) == 0
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_timing_table_compares_verdicts_of_timing_claims(tmp_path):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "timing_table.py"
    spec = importlib.util.spec_from_file_location("timing_table", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    timing = {"cpu_s": 1.0, "wall_s": 1.0, "load_before": 0.4, "load_after": 2.6}

    def rec(claim, verdict, metrics):
        return dict(paper="demo", claim=claim, scale="quick", seed=0, verdict=verdict,
                    metrics=metrics, baseline={})  # fmt: skip

    for name, verdicts in (("idle", ("reproduced", "reproduced")),
                           ("loaded", ("not reproduced", "inconclusive"))):  # fmt: skip
        folder = tmp_path / name
        folder.mkdir()
        records = [rec("timed", verdicts[0], {"t": {"nested": [timing]}}),
                   rec("untimed", verdicts[1], {"acc": 0.9})]  # fmt: skip
        (folder / "results.json").write_text(json.dumps({"run": {}, "results": records}))
    text, n, same = mod.table(mod._load(tmp_path / "idle"), mod._load(tmp_path / "loaded"))
    assert (n, same) == (1, 0)  # the untimed claim is not a timing claim
    assert "| demo:timed | quick | 0 | reproduced | 0.4–2.6 | not reproduced |" in text
    assert "untimed" not in text and "0 of 1 timing claims kept their verdict." in text
    assert mod.main([str(tmp_path / "idle"), str(tmp_path / "loaded")]) == 1


def _room_runs():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "room_runs.py"
    spec = importlib.util.spec_from_file_location("room_runs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_room_runs_block_counts_seeds_and_marks_fragile(tmp_path):
    mod = _room_runs()

    def rec(claim, seed, verdict, **extra):
        return dict(paper="demo", claim=claim, scale="quick", seed=seed, verdict=verdict,
                    reason="failed: a | b" if verdict != "reproduced" else "all conditions hold",
                    headline=["acc"], metrics={"acc": 0.5 + seed, "other": 3.0},
                    wall_s=10.0 + seed, **extra)  # fmt: skip

    timing = {"t": {"load_before": 0.5, "load_after": 2.25}}
    records = [rec("timed", 0, "reproduced", baseline=timing),
               rec("timed", 1, "not reproduced"), rec("timed", 2, "reproduced"),
               rec("plain", 0, "inconclusive")]  # fmt: skip
    text = mod.block("demo", records, {"git": "abc1234", "jobs": 2, "host_cpus": 2,
                                       "started": "2026-01-02T03:04:05"}, "quick")  # fmt: skip
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "**fragile**: 1 not reproduced, 2 reproduced" in rows["timed"]
    assert "| 0, 1, 2 | 12 | 0.5-2.2 | acc 0.5 |" in rows["timed"]  # the longest seed's wall
    assert "| inconclusive | 0 | 10 |  | acc 0.5 | failed: a \\| b |" in rows["plain"]
    assert "commit `abc1234`, 2026-01-02" in text


def test_room_runs_places_block_once_and_papers_table_ignores_it():
    mod = _room_runs()
    readme = ("# demo\n\n## Claims\n\n| claim | says | verdict |\n|---|---|---|\n"
              "| c1: setting | x | reproduced |\n\nprose\n\n## Deviations\n\n- none\n")  # fmt: skip
    new = "<!-- quick-run -->\n| claim (run) | verdict |\n|---|---|\n| c1 | not reproduced |\n<!-- /quick-run -->"
    once = mod.place(readme, new)
    assert once.index("prose") < once.index("<!-- quick-run -->") < once.index("## Deviations")
    assert mod.place(once, new) == once  # replaced in place, not added again
    again = mod.place(once, new.replace("not reproduced", "reproduced"))
    assert again.count("<!-- quick-run -->") == 1 and "| c1 | reproduced |" in again
    assert mod.place("# no claims here\n", new) is None


def test_room_runs_matches_table_rows_by_claim_name(tmp_path):
    mod = _room_runs()
    readme = tmp_path / "README.md"
    readme.write_text(
        "## Claims\n\n| claim | says | verdict |\n|---|---|---|\n"
        "| fit-time-scaling: one thread | x | reproduced (fragile) |\n"
        "| C2 internalised reasoning | y | **not reproduced** |\n\n"
        "| claim (run) | verdict |\n|---|---|\n| fit-time-scaling | inconclusive |\n"
    )
    rows = mod.table_rows(readme)
    assert rows == [("fit-time-scaling: one thread", "reproduced"),
                    ("C2 internalised reasoning", "not reproduced")]  # fmt: skip
    assert mod._match("fit-time-scaling", rows) == "reproduced"
    assert mod._match("C2-internalised-reasoning", rows) == "not reproduced"
    assert mod._match("unknown-claim", rows) is None
