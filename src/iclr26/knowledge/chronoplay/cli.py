"""``iclr26 chronoplay build``: build and maintain a dual-dynamic benchmark on the toy world and
write one leaderboard-style JSONL per phase, the final corpus and a summary."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="chronoplay_command", metavar="ACTION", required=True)
    p = sub.add_parser("build", help="synthesise and maintain a benchmark, one slice per phase")
    p.add_argument("--world", default="toy", choices=["toy"], help="the simulated game")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--months", type=float, default=18)
    p.add_argument("--entities", type=int, default=300)
    p.add_argument("--patches", type=int, default=6)
    p.add_argument("--shifts", type=int, default=3)
    p.add_argument("--size", type=int, default=300, help="benchmark size N")
    p.add_argument("--window-days", type=float, default=60.0)
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="λ_JSD (default: calibrated on no-drift streams)",
    )
    p.add_argument(
        "--mode", default="dual", choices=["dual", "knowledge", "interest", "static", "rebuild"]
    )


def run(args: argparse.Namespace) -> int:
    from iclr26.knowledge.chronoplay import (
        PERSONAS,
        DualDynamicUpdater,
        SynthesisPipeline,
        ToyGameWorld,
        calibrate_threshold,
        stale_rate,
        topic_misalignment,
    )

    try:
        world = ToyGameWorld(
            seed=args.seed,
            months=args.months,
            n_entities=args.entities,
            n_patches=args.patches,
            n_shifts=args.shifts,
        )
        stream = world.community_questions()
        lam = args.threshold
        if lam is None:
            no_drift = [world.community_questions(drift=False, stream_seed=s) for s in range(3)]
            lam = calibrate_threshold(no_drift, window_days=args.window_days)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        pipe = SynthesisPipeline("bm25", ner=world.ner).mine(stream, PERSONAS)
        upd = DualDynamicUpdater(
            pipe,
            jsd_threshold=lam,
            window_days=args.window_days,
            size=args.size,
            mode=args.mode,
            seed=args.seed,
            store=out / "synthesized.jsonl",
        )
        slices = upd.run(world.authority_snippets(), world.announcements(), stream)
    except (ValueError, TypeError) as exc:
        print(f"iclr26 chronoplay build: error: {exc}", file=sys.stderr)
        return 2
    phases = []
    for sl in slices:
        sl.to_jsonl(out / f"phase_{sl.phase}.jsonl")
        phases.append(
            {
                "phase": sl.phase,
                "start": sl.start,
                "end": sl.end,
                "origins": sl.origin_counts(),
                "synthesized": sl.synthesized,
                "stale_rate": stale_rate(sl, world),
                "topic_jsd": topic_misalignment(sl),
            }
        )
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for s in slices[-1].corpus:
            fh.write(json.dumps(s.to_dict()) + "\n")
    summary = {
        "threshold": lam,
        "synthesized": upd.synthesized,
        "replayed": upd.replayed,
        "shortfall": upd.shortfall,
        "pipeline": dict(pipe.stats),
        "phases": phases,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps({k: summary[k] for k in ("threshold", "synthesized", "shortfall")}))
    return 0
