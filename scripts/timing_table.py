"""Do timing claims keep their verdicts when the machine is busy? Compare two result folders.

Run the same claims twice, once on an idle machine and once beside a CPU load, then compare::

    iclr26 reproduce cda:fit-time-scaling absignsgd --scale quick --out results-idle
    # start N busy processes (e.g. `for i in 1 2; do yes > /dev/null & done`), then
    iclr26 reproduce cda:fit-time-scaling absignsgd --scale quick --out results-loaded
    python scripts/timing_table.py results-idle results-loaded > timing-table.md

A claim counts as a timing claim when it is declared ``exclusive`` (it times code) or when its
metrics or baseline hold a timing record of :func:`iclr26.claims.timeit`. The table lists, per
timing claim present in both folders, both verdicts, the machine load its timings recorded, and
whether the verdict held (and notes a claim whose timing records are identical in both runs:
its times were read from a shared cache, not measured twice); the last line counts them. Exit status 1 when a verdict changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _timings(value: Any) -> list[dict]:
    """Every timing record (a dict from ``Timing.to_dict``) nested in ``value``."""
    found = []
    if isinstance(value, dict):
        if "cpu_s" in value and "load_before" in value:
            found.append(value)
        for v in value.values():
            found.extend(_timings(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_timings(v))
    return found


def _load(folder: Path) -> dict[tuple, dict]:
    path = folder / "results.json"
    if not path.is_file():
        raise SystemExit(f"no results.json in {folder}")
    records = json.loads(path.read_text())["results"]
    return {(r["paper"], r["claim"], r.get("scale"), r.get("seed", 0)): r for r in records}


def _exclusive() -> set[tuple[str, str]]:
    try:
        from iclr26 import catalog
        from iclr26.claims import claims_for
    except ImportError:  # the package is not importable: rely on the timing records alone
        return set()
    out = set()
    for paper in catalog.PAPERS:
        if paper.implemented:
            out |= {(c.paper, c.name) for c in claims_for(paper.slug) if c.exclusive}
    return out


def _load_range(record: dict) -> str:
    loads = [
        t[k] for t in _timings([record["metrics"], record["baseline"]])
        for k in ("load_before", "load_after") if t.get(k) is not None
    ]  # fmt: skip
    return f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"


def table(idle: dict[tuple, dict], loaded: dict[tuple, dict]) -> tuple[str, int, int]:
    exclusive = _exclusive()
    rows, n, same = [], 0, 0
    for key in sorted(idle.keys() & loaded.keys()):
        a, b = idle[key], loaded[key]
        timed = (key[0], key[1]) in exclusive or _timings([a["metrics"], a["baseline"]])
        if not timed:
            continue
        n += 1
        held = a["verdict"] == b["verdict"]
        same += held
        ta, tb = (_timings([r["metrics"], r["baseline"]]) for r in (a, b))
        # identical timing records in both runs: the times came from a shared cache, not re-timed
        note = "times read from the cache" if ta and ta == tb else ""
        rows.append(
            f"| {key[0]}:{key[1]} | {key[2]} | {key[3]} | {a['verdict']} | {_load_range(a)} "
            f"| {b['verdict']} | {_load_range(b)} | {'yes' if held else '**no**'} | {note} |"
        )
    head = (
        "| claim | scale | seed | verdict, idle | load, idle | verdict, loaded | load, loaded "
        "| same | note |\n|---|---|---|---|---|---|---|---|---|"
    )
    text = "\n".join([head, *rows, "", f"{same} of {n} timing claims kept their verdict."])
    return text, n, same


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("idle", type=Path, help="result folder of the idle run")
    p.add_argument("loaded", type=Path, help="result folder of the run beside a CPU load")
    args = p.parse_args(argv)
    text, n, same = table(_load(args.idle), _load(args.loaded))
    print(text)
    return 0 if same == n else 1


if __name__ == "__main__":
    sys.exit(main())
