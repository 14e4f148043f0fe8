"""The GneissWeb pipeline over a folder of shards, on a process pool or on Ray Data.

Both backends call the same :meth:`GneissWebPipeline.process_shard` once per shard (dedup is
per shard by design, and annotation and filtering are per document), so their outputs are
byte-identical. Each finished shard is recorded in ``manifest.json`` right after its files
are written (atomically), so an interrupted run loses nothing and a rerun skips finished
shards.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from iclr26 import validation as V
from iclr26.llm.gneissweb.dedup import ShardedExactSubstringDedup
from iclr26.llm.gneissweb.ensemble import EnsembleFilter
from iclr26.llm.gneissweb.shards import list_shards, read_shard, shard_format, write_rows
from iclr26.llm.gneissweb.tokenizer import check_texts

STEPS = ("dedup", "annotate", "filter")
MANIFEST = "manifest.json"


@dataclass
class GneissWebPipeline:
    dedup: ShardedExactSubstringDedup | None = None
    annotators: Sequence[Any] = ()
    filter: EnsembleFilter | None = None
    text_column: str = "text"
    steps: tuple[str, ...] = STEPS
    examples_per_reason: int = 3

    def __post_init__(self) -> None:
        if isinstance(self.steps, str):
            raise TypeError("steps must be a tuple of step names, not one string")
        if self.dedup is not None:
            V.check_module_attrs(self.dedup, "dedup", ("dedup_shard",))
        for i, annotator in enumerate(self.annotators):
            V.check_module_attrs(annotator, f"annotators[{i}]", ("annotate",))
        if self.filter is not None:
            V.check_module_attrs(self.filter, "filter", ("components",))
        if not isinstance(self.text_column, str) or not self.text_column:
            raise TypeError(f"text_column must be a column name, got {self.text_column!r}")
        self.examples_per_reason = V.check_int(
            self.examples_per_reason, "examples_per_reason", low=0
        )
        bad = [s for s in self.steps if s not in STEPS]
        if bad or not self.steps:
            raise ValueError(f"steps: unknown steps {bad}; valid: {', '.join(STEPS)}")
        self.steps = tuple(s for s in STEPS if s in self.steps)
        if "dedup" in self.steps and self.dedup is None:
            self.dedup = ShardedExactSubstringDedup()
        if "annotate" in self.steps and not self.annotators:
            raise ValueError("the annotate step needs annotators (see default_recipe())")
        if "filter" in self.steps and self.filter is None:
            raise ValueError("the filter step needs an EnsembleFilter")

    # ------------------------------------------------------------ in memory

    def annotate_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        texts = check_texts(texts)
        columns: dict[str, np.ndarray] = {}
        for annotator in self.annotators:
            columns.update(annotator.annotate(list(texts)))
        return columns

    def annotate(self, frame):
        """pandas in, pandas out: the frame with the recipe's annotation columns added."""
        V.check_module_attrs(frame, "frame", ("copy", "columns"))
        if self.text_column not in frame:
            raise KeyError(f"frame has no {self.text_column!r} column")
        out = frame.copy()
        for name, values in self.annotate_texts(list(frame[self.text_column])).items():
            out[name] = values
        return out

    def settings_fingerprint(self) -> str:
        """Changes when a setting that changes the output changes."""
        parts = [",".join(self.steps), self.text_column]
        if self.dedup is not None and "dedup" in self.steps:
            d = self.dedup
            parts.append(
                f"{d.length_threshold}/{d.frequency_threshold}/{d.retain_first_copy}/"
                f"{d.granularity}/{d.tokenizer.spec}"
            )
        parts += [type(a).__name__ + ":" + getattr(a, "column", "") for a in self.annotators]
        if self.filter is not None and "filter" in self.steps:
            parts.append(repr(self.filter))
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    # ------------------------------------------------------------ one shard

    def process_shard(self, path: str | Path, output_dir: str | Path) -> dict[str, Any]:
        """Read, dedup, annotate, filter and write one shard; returns its summary."""
        path, output_dir = Path(path), Path(output_dir)
        started = time.perf_counter()
        records = read_shard(path, self.text_column)
        rows = records.rows
        texts = [r[self.text_column] for r in rows]
        summary: dict[str, Any] = {
            "shard": path.name,
            "documents_in": len(rows) + len(records.rejected),
            "rejected": len(records.rejected),
            "problems": records.problems,
            "bytes_in": records.bytes_in,
            "chars_in": sum(len(t) for t in texts),
            "steps": {},
        }
        if "dedup" in self.steps:
            t0 = time.perf_counter()
            texts, report = self.dedup.dedup_shard(texts)
            for row, text, spans in zip(rows, texts, report.removed_spans):
                row["removed_chars"] = len(row[self.text_column]) - len(text)
                row["removed_spans"] = [list(s) for s in spans]
                row[self.text_column] = text
            summary["steps"]["dedup"] = {
                "documents": len(rows),
                "chars_in": report.chars_in,
                "chars_out": report.chars_in - report.chars_removed,
                "spans_removed": report.spans_removed,
                "seconds": time.perf_counter() - t0,
            }
        columns: dict[str, np.ndarray] = {}
        if "annotate" in self.steps:
            t0 = time.perf_counter()
            columns = self.annotate_texts(texts)
            for name, values in columns.items():
                for row, value in zip(rows, values):
                    row[name] = value.item() if isinstance(value, np.generic) else value
            summary["steps"]["annotate"] = {
                "documents": len(rows),
                "columns": sorted(columns),
                "seconds": time.perf_counter() - t0,
            }
        keep = np.ones(len(rows), dtype=bool)
        if "filter" in self.steps:
            t0 = time.perf_counter()
            if not columns:
                columns = (
                    {k: np.array([r.get(k) for r in rows], dtype=object) for k in rows[0]}
                    if rows
                    else {}
                )
            parts = self.filter.components(columns) if rows else {}
            keep = parts["KEEP"] if rows else keep
            reasons = {}
            removed_rows = []
            for i, row in enumerate(rows):
                if keep[i]:
                    continue
                why = []
                if not parts["FT"][i]:
                    why.append("quality classifiers (FT)")
                if not (parts["R"][i] or parts["ET"][i]):
                    why.append("readability and extreme tokenization (R, ET)")
                reason = " + ".join(why)
                row["gneissweb_drop_reason"] = reason
                entry = reasons.setdefault(reason, {"documents": 0, "examples": []})
                entry["documents"] += 1
                if len(entry["examples"]) < self.examples_per_reason:
                    entry["examples"].append(row[self.text_column][:200])
                removed_rows.append(row)
            summary["steps"]["filter"] = {
                "documents_in": len(rows),
                "documents_out": int(keep.sum()),
                "removed_by": reasons,
                "seconds": time.perf_counter() - t0,
            }
        kept_rows = [r for r, k in zip(rows, keep) if k]
        removed_rows = [r for r, k in zip(rows, keep) if not k]
        # every output keeps the input's file name and format: names are unique within the
        # input folder, so two shards never write to the same file (a.jsonl and a.parquet)
        fmt = shard_format(path)
        summary["bytes_out"] = write_rows(output_dir / "kept" / path.name, kept_rows, fmt)
        if removed_rows:
            write_rows(output_dir / "removed" / path.name, removed_rows, fmt)
        if records.rejected:
            write_rows(output_dir / "rejected" / path.name, records.rejected, fmt)
        summary["documents_out"] = len(kept_rows)
        summary["documents_removed"] = len(removed_rows)
        summary["chars_out"] = sum(len(r[self.text_column]) for r in kept_rows)
        summary["seconds"] = time.perf_counter() - started
        return summary

    # ------------------------------------------------------------ a folder

    def run(
        self,
        input_dir: str | Path,
        output_dir: str | Path,
        backend: str = "local",
        num_workers: int = 2,
        force: bool = False,
        on_shard: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Process every shard of ``input_dir`` into ``output_dir``; returns the run report."""
        V.check_choice(backend, "backend", ("local", "ray"))
        num_workers = V.check_int(num_workers, "num_workers", low=1)
        V.check_bool(force, "force")
        shards, skipped = list_shards(input_dir)
        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        manifest = self._load_manifest(output_dir, force)
        todo = [p for p in shards if p.name not in manifest["shards"]]

        def finished(summary: dict[str, Any]) -> None:
            manifest["shards"][summary["shard"]] = summary
            _write_json(output_dir / MANIFEST, manifest)
            if on_shard is not None:
                on_shard(summary)

        started = time.perf_counter()
        if todo:
            if backend == "local":
                self._run_local(todo, output_dir, num_workers, finished)
            else:
                self._run_ray(todo, output_dir, num_workers, finished)
        report = build_report(manifest, [p.name for p in shards])
        report["backend"] = backend
        report["seconds_this_run"] = time.perf_counter() - started
        report["skipped_finished_shards"] = len(shards) - len(todo)
        report["skipped_files"] = skipped
        _write_json(output_dir / "report.json", report)
        (output_dir / "report.md").write_text(report_markdown(report), encoding="utf-8")
        return report

    def _load_manifest(self, output_dir: Path, force: bool) -> dict[str, Any]:
        path = output_dir / MANIFEST
        fingerprint = self.settings_fingerprint()
        if path.is_file() and not force:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            if manifest.get("settings") != fingerprint:
                raise ValueError(
                    f"{output_dir} holds a run with other settings; use another folder or force"
                )
            return manifest
        return {"settings": fingerprint, "steps": list(self.steps), "shards": {}}

    def _run_local(self, todo, output_dir, num_workers, finished) -> None:
        from rich.progress import Progress

        with Progress(transient=True) as progress:
            bar = progress.add_task("shards", total=len(todo))
            if num_workers == 1 or len(todo) == 1:
                for path in todo:
                    finished(self.process_shard(path, output_dir))
                    progress.advance(bar)
                return
            import multiprocessing as mp

            ctx = mp.get_context("fork" if os.name == "posix" else "spawn")
            with ctx.Pool(min(num_workers, len(todo))) as pool:
                jobs = [(self, str(p), str(output_dir)) for p in todo]
                for summary in pool.imap_unordered(_process, jobs):
                    finished(summary)
                    progress.advance(bar)

    def _run_ray(self, todo, output_dir, num_workers, finished) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError("the ray backend needs Ray: pip install 'iclr26[ray]'") from exc
        from iclr26.ray_local import init_ray

        started_here = init_ray(num_workers)
        try:
            ctx = ray.data.DataContext.get_current()
            ctx.enable_progress_bars = False
            pipeline, out = self, str(output_dir)

            def process_row(row: dict[str, Any]) -> dict[str, Any]:
                return {"summary": json.dumps(pipeline.process_shard(row["path"], out))}

            dataset = ray.data.from_items(
                [{"path": str(p)} for p in todo], override_num_blocks=len(todo)
            )
            for row in dataset.map(process_row, num_cpus=1).iter_rows():
                finished(json.loads(row["summary"]))
        finally:
            if started_here:
                ray.shutdown()


def _process(job) -> dict[str, Any]:
    pipeline, path, output_dir = job
    return pipeline.process_shard(path, output_dir)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def build_report(manifest: dict[str, Any], shard_order: list[str]) -> dict[str, Any]:
    """Totals per step over the finished shards."""
    shards = [manifest["shards"][s] for s in shard_order if s in manifest["shards"]]
    total: dict[str, Any] = {
        "shards_done": len(shards),
        "shards_total": len(shard_order),
        "documents_in": sum(s["documents_in"] for s in shards),
        "documents_out": sum(s["documents_out"] for s in shards),
        "documents_removed": sum(s["documents_removed"] for s in shards),
        "rejected": sum(s["rejected"] for s in shards),
        "bytes_in": sum(s["bytes_in"] for s in shards),
        "bytes_out": sum(s["bytes_out"] for s in shards),
        "problems": [p for s in shards for p in s["problems"]],
        "steps": {},
    }
    for s in shards:
        for step, stats in s["steps"].items():
            agg = total["steps"].setdefault(step, {})
            for key, value in stats.items():
                if isinstance(value, (int, float)):
                    agg[key] = agg.get(key, 0) + value
                elif key == "removed_by":
                    reasons = agg.setdefault("removed_by", {})
                    for reason, entry in value.items():
                        r = reasons.setdefault(reason, {"documents": 0, "examples": []})
                        r["documents"] += entry["documents"]
                        r["examples"] = (r["examples"] + entry["examples"])[:3]
    return total


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Curation report",
        "",
        f"Shards: {report['shards_done']}/{report['shards_total']} · documents in "
        f"{report['documents_in']}, kept {report['documents_out']}, removed "
        f"{report['documents_removed']}, rejected (malformed) {report['rejected']} · bytes in "
        f"{report['bytes_in']}, out {report['bytes_out']}",
        "",
        "| step | documents | chars in | chars out | seconds |",
        "|---|---|---|---|---|",
    ]
    for step, stats in report["steps"].items():
        docs = stats.get("documents", stats.get("documents_in", ""))
        lines.append(
            f"| {step} | {docs} | {stats.get('chars_in', '')} | "
            f"{stats.get('chars_out', '')} | {stats.get('seconds', 0):.2f} |"
        )
    removed = report["steps"].get("filter", {}).get("removed_by", {})
    if removed:
        lines += ["", "## What the filter removed", ""]
        for reason, entry in removed.items():
            lines.append(f"- {reason}: {entry['documents']} documents")
            lines += [f"  - `{ex[:120]!r}`" for ex in entry["examples"]]
    if report.get("skipped_files"):
        lines += ["", "## Files in the input folder that were not read", ""]
        lines += [f"- `{f['name']}`: {f['reason']}" for f in report["skipped_files"]]
    if report["problems"]:
        lines += ["", "## Input problems", ""]
        lines += [f"- {p}" for p in report["problems"][:50]]
    return "\n".join(lines) + "\n"
