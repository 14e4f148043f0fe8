"""Write the record of one ``iclr26 reproduce`` run into every room README it covers.

    python scripts/room_runs.py results            # rewrite the rooms' run blocks
    python scripts/room_runs.py results --check    # exit 1 when a block differs from results/

Each room README gets (or has replaced) one block between ``<!-- quick-run -->`` and
``<!-- /quick-run -->`` at the end of its ``## Claims`` section: one row per claim with the verdict
(the counts over seeds where the claim was repeated, and *fragile* when they disagree), the
criterion's outcome as the claim check wrote it, the wall time and the machine load its timings
recorded. The block's first column is headed "claim (run)", so the root papers table, which reads
the tables headed "claim", does not count these rows twice.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from iclr26 import catalog  # noqa: E402
from iclr26.claims import claims_for  # noqa: E402
from iclr26.runner import load_results, verdict_summary  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from papers_table import claim_rows  # noqa: E402

START, END = "<!-- quick-run -->", "<!-- /quick-run -->"


def _loads(obj, out: list[float]) -> None:
    """Every ``load_before`` / ``load_after`` number anywhere inside a record."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("load_before", "load_after") and isinstance(v, (int, float)):
                out.append(float(v))
            else:
                _loads(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _loads(v, out)


def _numbers(record: dict, k: int = 3) -> str:
    """The record's headline metrics (or its first ``k`` scalar metrics when it names none)."""
    metrics = record.get("metrics") or {}
    names = [n for n in record.get("headline") or [] if n in metrics]
    if not names:
        names = [n for n, v in metrics.items() if isinstance(v, (int, float))][:k]
    out = []
    for n in names:
        v = metrics[n]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        out.append(f"{n} {v:.4g}")
    return "; ".join(out)


def table_rows(readme: Path) -> list[tuple[str, str]]:
    """(first cell, verdict) of each row of the README's hand-written claim tables."""
    return claim_rows(readme)


def _match(claim_name: str, rows: list[tuple[str, str]]) -> str | None:
    """The verdict of the table row that names ``claim_name`` (None when no row does)."""
    want = claim_name.lower()
    for first, verdict in rows:
        f = first.lower().replace(" ", "-")
        if f.startswith(want) or want.startswith(f.split(":")[0]):
            return verdict
    short = want.split("-")[0]
    hits = [v for f, v in rows if f.lower().split()[0].strip(":") == short]
    return hits[0] if len(hits) == 1 else None


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def block(slug: str, records: list[dict], run: dict, scale: str) -> str:
    summary = {r["claim"]: r for r in verdict_summary(records)}
    by_claim: dict[str, list[dict]] = {}
    for r in records:
        by_claim.setdefault(r["claim"], []).append(r)
    try:
        order = {c.name: i for i, c in enumerate(claims_for(slug))}
    except KeyError:  # not a catalogued paper: the records' own order
        order = {}
    by_claim = dict(sorted(by_claim.items(), key=lambda kv: (order.get(kv[0], 10**6), kv[0])))
    lines = [
        START,
        f"**Last recorded run** (`iclr26 reproduce`, {scale} scale, commit "
        f"`{run.get('git', '?')}`, {run.get('started', '?')[:10]}, {run.get('host_cpus', '?')} "
        f"cores, `--jobs {run.get('jobs', '?')}`; the timing claims are repeated over seeds "
        "with `--repeat`). Written from its `results.json` by `scripts/room_runs.py`; the table "
        "above explains each claim and its numbers.",
        "",
        "| claim (run) | verdict | seeds | wall s (longest seed) | load | numbers (seed "
        f"{min(int(r.get('seed', 0)) for r in records)}) | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, recs in by_claim.items():
        recs = sorted(recs, key=lambda r: int(r.get("seed", 0)))
        s = summary[name]
        if s["repeats"] > 1:
            counts = ", ".join(f"{n} {v}" for v, n in sorted(s["counts"].items()))
            verdict = f"**fragile**: {counts}" if s["fragile"] else f"{s['verdict']} ({counts})"
        else:
            verdict = s["verdict"]
        seeds = ", ".join(str(x) for x in s["seeds"])
        walls = [float(r["wall_s"]) for r in recs if isinstance(r.get("wall_s"), (int, float))]
        wall = f"{max(walls):.0f}" if walls else ""
        loads: list[float] = []
        _loads(recs, loads)
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else ""
        lines.append(
            f"| {name} | {verdict} | {seeds} | {wall} | {load} | {_cell(_numbers(recs[0]))} | "
            f"{_cell(recs[0].get('reason', ''))} |"
        )
    lines.append(END)
    return "\n".join(lines)


def place(text: str, new: str) -> str | None:
    """``text`` with its run block replaced by ``new`` (or ``new`` put at the end of the
    ``## Claims`` section); None when the README has no such section."""
    if START in text and END in text:
        pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
        return pattern.sub(lambda _m: new, text, count=1)
    m = re.search(r"^## Claims\s*$", text, flags=re.M)
    if m is None:
        return None
    nxt = re.search(r"^## ", text[m.end() :], flags=re.M)
    cut = m.end() + nxt.start() if nxt else len(text)
    head = text[:cut].rstrip("\n")
    tail = text[cut:]
    return head + "\n\n" + new + "\n\n" + tail if tail else head + "\n\n" + new + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a results folder of `iclr26 reproduce`")
    ap.add_argument("--check", action="store_true", help="report stale blocks, write nothing")
    ap.add_argument(
        "--compare",
        action="store_true",
        help="list the rooms whose claim-table verdicts differ from the run's, write nothing",
    )
    args = ap.parse_args(argv)
    data = load_results(args.results)
    run = data.get("run", {})
    stale, missing = [], []
    for paper in catalog.PAPERS:
        records = [r for r in data["results"] if r["paper"] == paper.slug]
        if not records:
            continue
        scale = records[0]["scale"]
        readme = ROOT / "src" / "iclr26" / paper.area / paper.slug / "README.md"
        if args.compare:
            rows = table_rows(readme)
            for r in verdict_summary(records):
                tv = _match(r["claim"], rows)
                if tv != r["verdict"] or r["fragile"]:
                    print(
                        f"{paper.slug}:{r['claim']}: table {tv} / run {r['verdict']} {r['counts']}"
                    )
            continue
        text = readme.read_text(encoding="utf-8")
        new = place(text, block(paper.slug, records, run, scale))
        if new is None:
            missing.append(paper.slug)
            continue
        if new != text:
            stale.append(paper.slug)
            if not args.check:
                readme.write_text(new, encoding="utf-8")
    if missing:
        print("no '## Claims' section:", ", ".join(missing))
    if args.check:
        if stale:
            print("stale run blocks:", ", ".join(stale))
            return 1
        return 0
    if not args.compare:
        print(f"wrote {len(stale)} room READMEs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
