"""Reading and writing shard files (JSONL and Parquet) without losing a document.

A shard is one input file. Every input line or row ends up in exactly one place: the kept
output, the removed output (with the annotations that removed it), or the rejected output
(malformed input, with the raw line and the problem). Problems are reported per document.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")  # matched without regard to case


def shard_format(path: str | Path) -> str | None:
    """``"jsonl"``, ``"jsonl.gz"`` or ``"parquet"`` by the file name (any case), else None."""
    name = Path(path).name.lower()
    if name.endswith(".jsonl.gz"):
        return "jsonl.gz"
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return None


@dataclass
class ShardRecords:
    """Documents read from one shard, and the lines that could not be read."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    bytes_in: int = 0


def list_shards(input_dir: str | Path) -> tuple[list[Path], list[dict[str, str]]]:
    """The shard files of a folder (``.jsonl``, ``.jsonl.gz``, ``.parquet``, any case), and
    every other entry of the folder with the reason it is not read (never skipped silently)."""
    root = Path(input_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"input folder {str(input_dir)!r} does not exist")
    shards, skipped = [], []
    for p in sorted(root.iterdir()):
        if p.is_dir():
            skipped.append({"name": p.name, "reason": "a folder (sub-folders are not read)"})
        elif shard_format(p) is None:
            skipped.append(
                {"name": p.name, "reason": "not a shard (.jsonl, .jsonl.gz or .parquet)"}
            )
        else:
            shards.append(p)
    if not shards:
        listed = ", ".join(s["name"] for s in skipped[:5]) or "none"
        raise ValueError(
            f"input folder {str(input_dir)!r} has no .jsonl, .jsonl.gz or .parquet shards "
            f"(other entries: {listed})"
        )
    return shards, skipped


def read_shard(path: Path, text_column: str = "text") -> ShardRecords:
    out = ShardRecords(bytes_in=path.stat().st_size)
    fmt = shard_format(path)
    if fmt is None:
        raise ValueError(f"path {path.name!r} is not a .jsonl, .jsonl.gz or .parquet shard")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        for i, row in enumerate(table.to_pylist()):
            _accept(out, row, text_column, f"row {i}", raw=None, source=path.name)
        return out
    opener = gzip.open if fmt == "jsonl.gz" else open
    with opener(path, "rb") as fh:
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
        lines = "".join(
            json.dumps(row, ensure_ascii=False, sort_keys=True, default=_json_default) + "\n"
            for row in rows
        ).encode("utf-8")
        with open(tmp, "wb") as raw:
            if fmt == "jsonl.gz":  # no name or time in the header: reruns are byte-identical
                with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh:
                    fh.write(lines)
            else:
                raw.write(lines)
    os.replace(tmp, path)
    return path.stat().st_size


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)
