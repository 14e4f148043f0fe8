"""Builds ``report.md`` and a self-contained ``report.html`` from ``results.json``.

``results.json`` is the one record; both views are rendered from it with Jinja2 templates
(the HTML embeds every figure as base64, so the file can be sent on its own).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import jinja2

from iclr26 import catalog
from iclr26.runner import load_results


def format_numbers(values: Any, digits: int = 4) -> str:
    """A compact one-line rendering of a (possibly nested) dict of measured values."""
    if isinstance(values, dict):
        return ", ".join(f"{k}={format_numbers(v, digits)}" for k, v in values.items())
    if isinstance(values, float):
        return f"{values:.{digits}g}"
    if isinstance(values, list):
        if len(values) > 8:
            head = ", ".join(format_numbers(v, digits) for v in values[:8])
            return f"[{head}, … ({len(values)} values)]"
        return "[" + ", ".join(format_numbers(v, digits) for v in values) + "]"
    return str(values)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("iclr26", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        keep_trailing_newline=True,
        undefined=jinja2.ChainableUndefined,
    )
    env.filters["numbers"] = format_numbers
    env.filters["cell"] = _cell
    return env


def _counts_line(results: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    if not counts:
        return "No claim has been run yet."
    parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items())]
    return f"{len(results)} claims: " + ", ".join(parts) + "."


def _embed(out_dir: Path, figures: list[str]) -> list[str]:
    blobs = []
    for rel in figures:
        path = Path(rel) if Path(rel).is_absolute() else out_dir / rel
        if path.is_file():
            blobs.append(base64.b64encode(path.read_bytes()).decode("ascii"))
    return blobs


def build_report(out_dir: Path | str = "results") -> tuple[Path, Path]:
    """Render ``report.md`` and ``report.html`` in ``out_dir`` from its ``results.json``."""
    out_dir = Path(out_dir)
    if not (out_dir / "results.json").exists():
        raise FileNotFoundError(f"no results.json in {out_dir}; run `iclr26 reproduce` first")
    data = load_results(out_dir)
    results = data["results"]
    for r in results:
        r.setdefault("figures", [])
        r["embedded"] = _embed(out_dir, r["figures"])
    papers = []
    for paper in catalog.PAPERS:
        rows = [r for r in results if r["paper"] == paper.slug]
        if rows:
            papers.append({"slug": paper.slug, "title": paper.title, "results": rows})
    known = {p.slug for p in catalog.PAPERS}
    for slug in sorted({r["paper"] for r in results} - known):
        papers.append(
            {"slug": slug, "title": slug, "results": [r for r in results if r["paper"] == slug]}
        )
    context = {
        "run": data.get("run", {}),
        "results": results,
        "papers": papers,
        "counts_line": _counts_line(results),
    }
    env = _environment()
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    md_path.write_text(env.get_template("report.md.j2").render(**context), encoding="utf-8")
    html_path.write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    for r in results:
        r.pop("embedded", None)
    return md_path, html_path
