"""``iclr26 quantize``: weight-only quantization of a causal LM (RTN, GPTQ, AWQ or stage-1
calibration of the QAT recipe) saved as packed integer codes."""

from __future__ import annotations

import argparse
import sys

METHODS = ("rtn", "gptq", "awq", "calibrate")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default="quick", help="tiny size (test, quick, full) or HF id/path"
    )
    parser.add_argument("--bits", type=int, default=2, help="2, 3, 4 or 8")
    parser.add_argument("--group", type=int, default=128, help="group size (input columns)")
    parser.add_argument("--method", default="calibrate", choices=METHODS)
    parser.add_argument("--n-calib", type=int, default=128, help="calibration windows")
    parser.add_argument("--seq-len", type=int, default=128, help="calibration window length")
    parser.add_argument("--ratio-reasoning", type=float, default=0.8)
    parser.add_argument("--out", required=True, help="folder for the packed checkpoint")


def run(args: argparse.Namespace) -> int:
    from iclr26.data import stdlib_corpus
    from iclr26.llm.qat_reasoning import (
        ReasoningQAT,
        arithmetic_problems,
        awq_quantize,
        gptq_quantize,
        rtn_quantize,
        save_quantized,
    )
    from iclr26.models.tinylm import load_causal_lm

    try:
        qat = ReasoningQAT(
            bits=args.bits,
            group_size=args.group,
            ratio_reasoning=args.ratio_reasoning,
            n_calib=args.n_calib,
            calib_seq_len=args.seq_len,
        )
    except (TypeError, ValueError) as exc:
        print(f"iclr26 quantize: error: {exc}", file=sys.stderr)
        return 2
    model, tok = load_causal_lm(args.model)
    reasoning = [p.text for p in arithmetic_problems(2000, (2, 3, 4, 5), seed=2000)]
    pretrain = stdlib_corpus("train")[:200]
    if args.method == "rtn":
        qmodel = rtn_quantize(model, args.bits, args.group)
    elif args.method == "gptq":
        calib = qat.calibration_set(tok, reasoning, pretrain)
        qmodel = gptq_quantize(model, calib.input_ids, args.bits, args.group)
    elif args.method == "awq":
        calib = qat.calibration_set(tok, reasoning, pretrain)
        qmodel = awq_quantize(model, calib.input_ids, args.bits, args.group)
    else:
        qmodel = qat.fit(model, tok, reasoning, pretrain)
    sizes = save_quantized(qmodel, args.out)
    tok.save_pretrained(args.out)
    print(
        f"wrote {args.out}: {sizes['total']} bytes ({args.method}, {args.bits} bit, g={args.group})"
    )
    return 0
