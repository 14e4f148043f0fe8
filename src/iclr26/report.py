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


def _area_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Per area, how many claims came out with each verdict (a claim with repeats counts once,
    by its majority verdict; fragile ones are counted apart)."""
    areas: dict[str, dict[str, int]] = {}
    for row in rows:
        paper = catalog.BY_SLUG.get(row["paper"])
        area = paper.area if paper else "other"
        counts = areas.setdefault(area, {})
        key = "fragile" if row["fragile"] else row["verdict"]
        counts[key] = counts.get(key, 0) + 1
    order = {a: i for i, a in enumerate(catalog.AREAS)}
    lines = []
    for area in sorted(areas, key=lambda a: order.get(a, 99)):
        counts = areas[area]
        lines.append(f"{area}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return lines


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool)) and not (
        isinstance(value, str) and len(value) > 24
    )


def _pick(values: dict[str, Any], names: list[str], n: int = 2) -> list[tuple[str, Any]]:
    chosen = [(k, values[k]) for k in names if k in values and _is_scalar(values[k])]
    if not chosen and not names:
        chosen = [(k, v) for k, v in values.items() if _is_scalar(v)][:n]
    return chosen


def headline(record: dict[str, Any]) -> tuple[str, str]:
    """The one or two headline numbers of ours and of the baseline(s), as short text.

    A claim names them with ``@claim(headline=(...))``; otherwise the first two scalar
    metrics are shown (and the first two scalars of each baseline)."""
    names = list(record.get("headline") or [])
    metrics = record.get("metrics") or {}
    ours = ", ".join(f"{k}={format_numbers(v)}" for k, v in _pick(metrics, names))
    parts = []
    for name, entry in (record.get("baseline") or {}).items():
        if isinstance(entry, dict):
            picked = _pick(entry, names) or _pick(entry, [])
            if picked:
                parts.append(f"{name}: " + ", ".join(f"{k}={format_numbers(v)}" for k, v in picked))
        elif _is_scalar(entry):
            parts.append(f"{name}={format_numbers(entry)}")
        if len(parts) == 2:
            break
    return ours or "-", "; ".join(parts) or "-"


def _short(text: str, limit: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _verdict_label(row: dict[str, Any]) -> str:
    counts = row["counts"]
    if row["repeats"] == 1:
        return row["verdict"]
    if not row["fragile"]:
        return f"{row['verdict']} ({row['repeats']}/{row['repeats']} seeds)"
    detail = ", ".join(f"{n}× {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"fragile: {detail}"


def _embed(out_dir: Path, figures: list[str]) -> list[str]:
    blobs = []
    for rel in figures:
        path = Path(rel) if Path(rel).is_absolute() else out_dir / rel
        if path.is_file():
            blobs.append(base64.b64encode(path.read_bytes()).decode("ascii"))
    return blobs


def summary_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary table: one row per (paper, claim, scale), repeats folded into counts."""
    from iclr26.runner import verdict_summary

    by_key = {}
    for r in results:
        key = (r["paper"], r["claim"], r["scale"])
        if key not in by_key or int(r.get("seed", 0)) < int(by_key[key].get("seed", 0)):
            by_key[key] = r
    rows = []
    for row in verdict_summary(results):
        first = by_key[(row["paper"], row["claim"], row["scale"])]
        paper = catalog.BY_SLUG.get(row["paper"])
        ours, base = headline(first)
        reasons = sorted(
            {
                r.get("reason", "")
                for r in results
                if (r["paper"], r["claim"], r["scale"])
                == (row["paper"], row["claim"], row["scale"])
            }
        )
        row.update(
            {
                "title": paper.title if paper else row["paper"],
                "paper_url": paper.url if paper else "",
                "code_url": paper.code_url if paper else "",
                "area": paper.area if paper else "other",
                "statement": first.get("statement", ""),
                "ours": ours,
                "base": base,
                "criterion_short": _short(first.get("criterion", "")),
                "reason_short": _short(
                    reasons[0]
                    if len(reasons) == 1
                    else (first.get("reason", "") + " (first seed)"),
                    140,
                ),
                "label": _verdict_label(row),
                "css": "fragile" if row["fragile"] else row["verdict"].replace(" ", "-"),
                "plumbing": row["scale"] == "smoke",
            }
        )
        rows.append(row)
    return rows


def build_report(out_dir: Path | str = "results") -> tuple[Path, Path]:
    """Render ``report.md`` and ``report.html`` in ``out_dir`` from its ``results.json``."""
    out_dir = Path(out_dir)
    if not (out_dir / "results.json").exists():
        raise FileNotFoundError(f"no results.json in {out_dir}; run `iclr26 reproduce` first")
    data = load_results(out_dir)
    results = data["results"]
    for r in results:
        r.setdefault("figures", [])
        r.setdefault("seed", 0)
        r["embedded"] = _embed(out_dir, r["figures"])
    rows = summary_rows(results)
    papers = []
    for paper in catalog.PAPERS:
        recs = [r for r in results if r["paper"] == paper.slug]
        if recs:
            papers.append(
                {
                    "slug": paper.slug,
                    "title": paper.title,
                    "url": paper.url,
                    "code_url": paper.code_url,
                    "results": recs,
                }
            )
    known = {p.slug for p in catalog.PAPERS}
    for slug in sorted({r["paper"] for r in results} - known):
        papers.append(
            {
                "slug": slug,
                "title": slug,
                "url": "",
                "code_url": "",
                "results": [r for r in results if r["paper"] == slug],
            }
        )
    scales = sorted({r["scale"] for r in results})
    context = {
        "run": data.get("run", {}),
        "results": results,
        "rows": rows,
        "papers": papers,
        "counts_line": _counts_line(results),
        "area_lines": _area_lines(rows),
        "n_fragile": sum(r["fragile"] for r in rows),
        "plumbing": scales == ["smoke"] or "smoke" in scales,
        "scales": scales,
    }
    env = _environment()
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    md_path.write_text(env.get_template("report.md.j2").render(**context), encoding="utf-8")
    html_path.write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    for r in results:
        r.pop("embedded", None)
    return md_path, html_path
