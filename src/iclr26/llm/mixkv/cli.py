"""``iclr26 kvcache eval``: continuation NLL of stdlib test windows with the prompt cache
compressed by each method at each budget, against the full cache, on a tiny LM or any Hugging
Face causal LM."""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kvcache_command", metavar="ACTION", required=True)
    p = sub.add_parser("eval", help="NLL gap to the full cache per method and budget")
    p.add_argument("--model", default="quick", help="tiny LM size (test|quick|full) or HF id/path")
    p.add_argument(
        "--methods",
        default="snapkv,snapkv+mixkv,adakv,adakv+mixkv",
        help="comma-separated: snapkv, adakv, pyramidkv, snapkv+mixkv, adakv+mixkv, "
        "pyramidkv+mixkv, random, streaming",
    )
    p.add_argument("--budgets", default="32,64", help="kept tokens per KV head, window included")
    p.add_argument("--window", type=int, default=16)
    p.add_argument("--windows", type=int, default=64, help="number of stdlib test windows")
    p.add_argument("--prompt-tokens", type=int, default=448)
    p.add_argument("--continuation-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _ints(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers, got {text!r}") from None
    if not values:
        raise ValueError(f"{name} is empty")
    return values


def run(args: argparse.Namespace) -> int:
    from iclr26.claims import Context
    from iclr26.llm.mixkv.claims import _model_and_windows
    from iclr26.llm.mixkv.evaluate import continuation_nll
    from iclr26.llm.mixkv.integration import METHODS, make_policy
    from iclr26.llm.mixkv.policies import FullKV

    try:
        budgets = _ints(args.budgets, "--budgets")
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in METHODS or m in ("full", "mixkv")]
        if bad or not methods:
            raise ValueError(
                f"--methods: unknown {bad or methods}; valid: {', '.join(METHODS[1:])}"
            )
        policies = {"full": FullKV()}
        for b in budgets:
            for m in methods:
                policies[f"{m}@{b}"] = make_policy(m, b, args.window, seed=args.seed)
    except ValueError as exc:
        print(f"iclr26 kvcache: error: {exc}", file=sys.stderr)
        return 2
    ctx = Context(scale="quick", seed=args.seed, device=args.device)
    setting = dict(
        model=args.model,
        n=args.windows,
        prompt=args.prompt_tokens,
        cont=args.continuation_tokens,
    )
    model, _, prompt, cont = _model_and_windows(ctx, setting)
    nll = continuation_nll(model, prompt, cont, policies)
    full = nll["full"]
    rows = {k: float((v - full).mean()) for k, v in nll.items() if k != "full"}
    if args.json:
        print(json.dumps({"full_nll": float(full.mean()), "gap": rows}, indent=1))
        return 0
    print(f"full cache NLL {float(full.mean()):.4f} nats/token ({args.windows} windows)")
    print(f"{'method@budget':<22} NLL gap to full")
    for k, v in rows.items():
        print(f"{k:<22} {v:+.5f}")
    return 0
