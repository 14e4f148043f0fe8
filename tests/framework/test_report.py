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


@claim(paper=PAPER, name="pipe|name", statement="s", paper_value="p|q", criterion="c")
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
    assert header == [
        "paper",
        "claim",
        "paper's value",
        "ours",
        "baseline's",
        "criterion",
        "verdict",
        "time (s)",
    ]
    by_claim = {r[1]: r for r in rows}
    assert by_claim["with-figure"][6] == "reproduced"
    assert by_claim["with-figure"][3] == "a=0.9123"
    assert by_claim["with-figure"][4] == "b=a=0.5"
    assert by_claim["pipe|name"][6] == "not reproduced"
    assert parser.images == 1
    text = md.read_text()
    assert "figures/_test_report-with-figure.png" in text
    assert "pipe\\|name" in text  # table cells escape pipes
    assert "1 not reproduced, 1 reproduced" in text


def test_format_numbers():
    assert format_numbers({"a": 1.23456789, "b": {"c": 2}}) == "a=1.235, b=c=2"
    assert format_numbers(list(range(10))).endswith("(10 values)]")
