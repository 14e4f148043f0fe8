"""``iclr26 compress cap --model quick|<hf id or path> --ratio 0.5 --calib 128 --out DIR``:
compress a causal LM with CAP and save it (reload with ``load_compressed(DIR)``)."""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("method", choices=["cap"], help="compression method (cap)")
    parser.add_argument(
        "--model", default="quick", help="tiny size (test, quick, full) or a Hugging Face id/path"
    )
    parser.add_argument(
        "--ratio", type=float, default=0.5, help="fraction of target parameters removed"
    )
    parser.add_argument(
        "--calib", type=int, default=128, help="calibration sequences from the stdlib train split"
    )
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument(
        "--iterations", type=int, default=3, help="allocator passes over the calibration set"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="folder for the compressed model")


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from iclr26.llm.lrs_compression.compressor import CAPCompressor
    from iclr26.llm.lrs_compression.serialization import save_compressed
    from iclr26.llm.lrs_compression.targets import count_parameters
    from iclr26.models.tinylm import load_causal_lm

    try:
        model, tok = load_causal_lm(args.model)
        cap = CAPCompressor(ratio=args.ratio, iterations=args.iterations, seed=args.seed)
        from iclr26.data import stdlib_corpus

        ids: list[int] = []
        need = args.calib * args.seq_len * 4
        for text in stdlib_corpus("train"):
            ids.extend(tok.encode(text, add_special_tokens=False))
            if len(ids) >= need:
                break
        if len(ids) <= args.seq_len:
            raise ValueError("--calib: the corpus is too short for one calibration sequence")
        rng = np.random.default_rng(args.seed)
        starts = rng.integers(0, len(ids) - args.seq_len, size=args.calib)
        stream = np.asarray(ids, dtype=np.int64)
        calib = torch.from_numpy(np.stack([stream[s : s + args.seq_len] for s in starts]))
        dense = count_parameters(model)
        compressed = cap.compress(
            calib,
            model=model,
            progress=lambda f, m: print(f"\r{f:5.0%} {m:60s}", end="", file=sys.stderr),
        )
        print(file=sys.stderr)
        save_compressed(compressed, args.out)
        tok.save_pretrained(args.out)
        print(
            json.dumps(
                {"dense": dense, "compressed": count_parameters(compressed), "out": args.out}
            )
        )
    except (ValueError, TypeError) as exc:
        print(f"iclr26 compress: error: {exc}", file=sys.stderr)
        return 2
    return 0
