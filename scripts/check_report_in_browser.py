"""Open a built ``report.html`` in headless Chromium, save a screenshot and check that the
browser's rendered DOM holds the summary table with one row per claim and the figures.

    python scripts/check_report_in_browser.py results/ [--screenshot report.png]

Exit code 0 when the table is there, 1 when it is not, 2 when no Chromium is installed
(`apt-get install chromium-headless-shell` on Debian).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

BROWSERS = ("chromium-headless-shell", "chrome-headless-shell", "chromium", "google-chrome")


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    lib = Path("/usr/lib/chromium/chrome-headless-shell")
    return str(lib) if lib.exists() else None


class _Table(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.images = 0
        self._in = False
        self._row: list[str] | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "claims":
            self._in = True
        elif self._in and tag == "tr":
            self._row = []
        elif self._in and tag in ("td", "th"):
            self._cell = ""
        elif tag == "img" and (attrs.get("src") or "").startswith("data:image/png"):
            self.images += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join(self._cell.split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "table":
            self._in = False


def rendered_table(html: Path, browser: str, screenshot: Path | None) -> _Table:
    url = html.resolve().as_uri()
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run(
        [*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    if screenshot is not None:
        subprocess.run(
            [*base, f"--screenshot={screenshot.resolve()}", "--window-size=1500,1200", url],
            capture_output=True,
            timeout=120,
            check=True,
        )
    parser = _Table()
    parser.feed(dom)
    return parser


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="folder with results.json and report.html")
    ap.add_argument("--screenshot", type=Path, default=None)
    args = ap.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print("no headless Chromium found", file=sys.stderr)
        return 2
    data = json.loads((args.results / "results.json").read_text(encoding="utf-8"))
    keys = {(r["paper"], r["claim"], r["scale"]) for r in data["results"]}
    table = rendered_table(args.results / "report.html", browser, args.screenshot)
    header, *rows = table.rows or [[]]
    n_figures = sum(len(r.get("figures", [])) for r in data["results"])
    ok = (
        header[:2] == ["paper", "claim"]
        and "verdict" in header
        and len(rows) == len(keys)
        and table.images >= min(n_figures, 1)
    )
    print(
        f"rendered table: {len(rows)} rows for {len(keys)} claims, {table.images} figures; "
        f"{'ok' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
