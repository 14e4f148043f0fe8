"""Rewrite the root README's table of papers from the catalogue and each room README's claim
table (the verdict column), between the ``<!-- papers-table -->`` markers.

    python scripts/papers_table.py          # rewrite README.md
    python scripts/papers_table.py --check  # exit 1 when README.md is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from iclr26 import catalog  # noqa: E402

VERDICTS = ("reproduced", "inconclusive", "not reproduced", "skipped", "error")


def claim_rows(readme: Path) -> list[tuple[str, str]]:
    """(first cell, verdict) of each row of the room README's claim tables (the verdict is the
    last column), in order."""
    if not readme.is_file():
        return []
    text = readme.read_text(encoding="utf-8")
    section = re.split(r"^## Claims\s*$", text, flags=re.M)
    if len(section) < 2:
        return []
    body = re.split(r"^## ", section[1], flags=re.M)[0]
    out = []
    in_claims = (
        False  # inside a table whose header starts with "claim" (not, e.g., a table of runs)
    )
    for line in body.splitlines():
        if not line.strip().startswith("|"):
            in_claims = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "claim":
            in_claims = True
            continue
        if not in_claims or len(cells) < 2 or set(cells[0]) <= {"-", ":"}:
            continue
        last = cells[-1].lower().lstrip("*_ ")
        for v in ("not reproduced", "reproduced", "inconclusive", "skipped", "error"):
            if last.startswith(v):
                out.append((cells[0].strip("*` "), v))
                break
    return out


def room_verdicts(readme: Path) -> list[str]:
    """The verdict of each row of the room README's claim table (its last column)."""
    return [verdict for _first, verdict in claim_rows(readme)]


def table() -> str:
    rows, totals, n_impl = [], dict.fromkeys(VERDICTS, 0), 0
    for paper in sorted(catalog.PAPERS, key=lambda p: (p.area, p.slug)):
        readme = ROOT / "src" / "iclr26" / paper.area / paper.slug / "README.md"
        if paper.implemented:
            n_impl += 1
            verdicts = room_verdicts(readme)
            counts = {v: verdicts.count(v) for v in VERDICTS if verdicts.count(v)}
            for v, n in counts.items():
                totals[v] += n
            cell = ", ".join(f"{n} {v}" for v, n in counts.items()) or "-"
            link = f"[`{paper.slug}`](src/iclr26/{paper.area}/{paper.slug}/README.md)"
            rows.append(f"| {link} — {paper.title} | {paper.area} | implemented | {cell} |")
        else:
            rows.append(
                f"| `{paper.slug}` — {paper.title} | {paper.area} | not implemented yet | - |"
            )
    head = (
        f"{n_impl} of the {len(catalog.PAPERS)} papers are implemented. Verdicts are those "
        "measured at quick scale on 2 CPU cores\nand recorded in each room's README (rerun "
        "`iclr26 reproduce SLUG` to refresh them); over all\nrooms: "
        f"{totals['reproduced']} claims reproduced, {totals['inconclusive']} inconclusive (a "
        "weaker, partial criterion holds), "
        f"{totals['not reproduced']} not\nreproduced at this scale. Most of the misses come "
        "from quick-scale budgets far below the papers'\n(few steps, small models, synthetic "
        "data); each room's README gives its explanation.\n`iclr26 list` shows the live status "
        "and the verdicts of your own last run.\n\n"
        "| paper | area | status | claims at quick scale (from the room's README) |\n"
        "|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = re.sub(
        r"(<!-- papers-table -->\n).*?(\n<!-- /papers-table -->)",
        lambda m: m.group(1) + table() + m.group(2),
        text,
        flags=re.S,
    )
    if args.check:
        return 0 if new == text else 1
    readme.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
