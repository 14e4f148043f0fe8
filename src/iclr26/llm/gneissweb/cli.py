"""``iclr26 curate INPUT_DIR OUTPUT_DIR``: the GneissWeb recipe over a folder of shards."""

from __future__ import annotations

import argparse
import sys

from iclr26.llm.gneissweb.pipeline import STEPS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input_dir", help="folder of .jsonl, .jsonl.gz or .parquet shards (any case)"
    )
    parser.add_argument("output_dir", help="folder for kept/, removed/, rejected/ and reports")
    parser.add_argument("--executor", default="local", choices=["local", "ray"])
    parser.add_argument(
        "--steps", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--text-column", default="text")
    parser.add_argument(
        "--length-threshold", type=int, default=50, help="dedup span length in tokens (default 50)"
    )
    parser.add_argument("--granularity", default="span", choices=["span", "line"])
    parser.add_argument(
        "--force",
        action="store_true",
        help="start over even if the output folder holds a finished run",
    )


def run(args: argparse.Namespace) -> int:
    from iclr26.llm.gneissweb.dedup import ShardedExactSubstringDedup
    from iclr26.llm.gneissweb.pipeline import GneissWebPipeline

    steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    bad = [s for s in steps if s not in STEPS]
    if bad or not steps:
        print(
            f"iclr26 curate: error: unknown steps {bad}; valid: {', '.join(STEPS)}", file=sys.stderr
        )
        return 2
    if args.workers < 1:
        print("iclr26 curate: error: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        annotators, ensemble = (), None
        if "annotate" in steps or "filter" in steps:
            from iclr26.llm.gneissweb.recipe import default_recipe

            recipe = default_recipe()
            annotators = recipe.annotators if "annotate" in steps else ()
            ensemble = recipe.ensemble if "filter" in steps else None
        dedup = None
        if "dedup" in steps:
            dedup = ShardedExactSubstringDedup(
                length_threshold=args.length_threshold, granularity=args.granularity
            )
        pipeline = GneissWebPipeline(
            dedup=dedup,
            annotators=annotators,
            filter=ensemble,
            text_column=args.text_column,
            steps=steps,
        )
        report = pipeline.run(
            args.input_dir,
            args.output_dir,
            backend=args.executor,
            num_workers=args.workers,
            force=args.force,
        )
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"iclr26 curate: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{report['shards_done']}/{report['shards_total']} shards · kept "
        f"{report['documents_out']} of {report['documents_in']} documents · "
        f"{report['rejected']} rejected · report in {args.output_dir}/report.md"
    )
    if report.get("skipped_files"):
        names = ", ".join(f["name"] for f in report["skipped_files"][:5])
        more = len(report["skipped_files"]) - 5
        print(
            f"{len(report['skipped_files'])} file(s) in the input folder were not read: {names}"
            + (f" and {more} more" if more > 0 else "")
            + " (see report.md)"
        )
    return 0
