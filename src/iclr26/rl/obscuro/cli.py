"""``iclr26 play``: one Fog-of-War chess game between two agents, PGN to stdout or a file."""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    from iclr26.rl.obscuro.agents import AGENTS

    names = sorted(AGENTS)
    parser.add_argument("--white", default="obscuro", choices=names, help="white's agent")
    parser.add_argument("--black", default="random", choices=names, help="black's agent")
    parser.add_argument(
        "--time", type=float, default=0.05, help="seconds per move for the searching agents"
    )
    parser.add_argument("--max-plies", type=int, default=60, help="ply cap (adjudicated)")
    parser.add_argument("--fen", default=None, help="start position (default: the initial one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pgn", default=None, help="write the PGN here (default: stdout)")


def _agent(name: str, time_per_move: float, seed: int):
    from iclr26.rl.obscuro.agents import AGENTS

    params = inspect.signature(AGENTS[name]).parameters
    kwargs = {"seed": seed}
    if "time_per_move" in params:
        kwargs["time_per_move"] = time_per_move
    return (name, kwargs)


def run(args: argparse.Namespace) -> int:
    from iclr26.rl.obscuro import play_game

    if not args.time > 0:
        print(f"iclr26 play: --time must be positive, got {args.time}", file=sys.stderr)
        return 2
    if args.max_plies < 1:
        print(f"iclr26 play: --max-plies must be at least 1, got {args.max_plies}", file=sys.stderr)
        return 2
    if args.pgn and not Path(args.pgn).resolve().parent.is_dir():
        print(f"iclr26 play: folder of --pgn does not exist: {args.pgn}", file=sys.stderr)
        return 2
    try:
        record = play_game(
            _agent(args.white, args.time, args.seed),
            _agent(args.black, args.time, args.seed + 1),
            max_plies=args.max_plies,
            fen=args.fen,
        )
    except ValueError as exc:
        print(f"iclr26 play: {exc}", file=sys.stderr)
        return 2
    if args.pgn:
        Path(args.pgn).write_text(record.pgn + "\n", encoding="utf-8")
    else:
        print(record.pgn)
    print(
        f"{record.white} vs {record.black}: {record.result} ({record.termination}, "
        f"{record.plies} plies, {record.wall_s:.1f} s)",
        file=sys.stderr,
    )
    return 0
