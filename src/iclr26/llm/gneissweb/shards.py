"""Reading and writing shard files (JSONL and Parquet) without losing a document.

A shard is one input file. Every input line or row ends up in exactly one place: the kept
output, the removed output (with the annotations that removed it), or the rejected output
(malformed input, with the raw line and the problem). Problems are reported per document.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUFFIXES = (".jsonl", ".parquet")


@dataclass
class ShardRecords:
    """Documents read from one shard, and the lines that could not be read."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    bytes_in: int = 0


def list_shards(input_dir: str | Path) -> list[Path]:
    root = Path(input_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"input folder {input_dir!r} does not exist")
    shards = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    if not shards:
        raise ValueError(f"no .jsonl or .parquet shards in {input_dir!r}")
    return shards


def read_shard(path: Path, text_column: str = "text") -> ShardRecords:
    out = ShardRecords(bytes_in=path.stat().st_size)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        for i, row in enumerate(table.to_pylist()):
            _accept(out, row, text_column, f"row {i}", raw=None)
        return out
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            where = f"line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace")
                out.problems.append(f"{path.name} {where}: invalid UTF-8 bytes replaced")
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                out.rejected.append(
                    {
                        "source": path.name,
                        "where": where,
                        "problem": f"broken JSON ({exc.msg})",
                        "raw": line,
                    }
                )
                out.problems.append(f"{path.name} {where}: broken JSON ({exc.msg})")
                continue
            _accept(out, row, text_column, where, raw=line, source=path.name)
    return out


def _accept(
    out: ShardRecords, row: Any, text_column: str, where: str, raw: str | None, source: str = ""
) -> None:
    if not isinstance(row, dict):
        problem = "not a JSON object"
    elif text_column not in row:
        problem = f"missing the {text_column!r} field"
    elif not isinstance(row[text_column], str):
        problem = f"the {text_column!r} field is not a string"
    else:
        out.rows.append(row)
        return
    out.rejected.append(
        {
            "source": source,
            "where": where,
            "problem": problem,
            "raw": raw if raw is not None else json.dumps(row, default=str),
        }
    )
    out.problems.append(f"{source} {where}: {problem}")


def write_rows(path: Path, rows: list[dict[str, Any]], fmt: str) -> int:
    """Write rows atomically; returns the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), tmp)
    else:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True, default=_json_default))
                fh.write("\n")
    os.replace(tmp, path)
    return path.stat().st_size


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
