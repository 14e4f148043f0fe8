"""Fine-tuning a causal LM for text-to-SVG and scoring its greedy output with SArena metrics.

The paper fine-tunes InternVL3-8B with LLaMA-Factory; here the same recipe runs on any Hugging
Face causal LM (the shared tiny Llama by default): the three tokenisation conditions of
Table 7 (``raw``: the base tokenizer; ``random``: SVG tokens with random rows, "Model T";
``subword_mean``: SVG tokens with Eq. 1 rows, "Model T+E"), supervised fine-tuning with the
loss on the SVG only (the shared ``finetune_lm``), batched greedy decoding and SArena metrics.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.internsvg.metrics import sarena_metrics
from iclr26.llm.internsvg.tokens import add_svg_tokens

CONDITIONS = ("raw", "random", "subword_mean")


def prepare_model(model, tokenizer, condition: str, seed: int = 0):
    """A copy of ``model`` with its tokenizer for one Table 7 condition (``raw`` returns the
    base tokenizer unchanged)."""
    V.check_choice(condition, "condition", CONDITIONS)
    model = copy.deepcopy(model)
    if condition == "raw":
        return model, tokenizer
    return add_svg_tokens(tokenizer, model, init=condition, seed=seed)


def generate_completions(
    model, tokenizer, prompts: Sequence[str], max_new_tokens: int, batch: int = 16
) -> tuple[list[str], list[int], list[bool]]:
    """Greedy completions of ``prompts`` (left-padded batches, KV cache): ``(texts,
    n_new_tokens, finished)`` where ``finished`` says whether ``<eos>`` came before the token
    limit (an unfinished SVG is usually truncated and fails to render)."""
    if isinstance(prompts, str) or not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
    batch = V.check_int(batch, "batch", low=1)
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    device = next(model.parameters()).device
    texts, lengths, finished = [], [], []
    model.eval()
    for start in range(0, len(prompts), batch):
        rows = [
            tokenizer.encode(p, add_special_tokens=False) for p in prompts[start : start + batch]
        ]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r) :] = torch.tensor(r)
            mask[i, width - len(r) :] = 1
        with torch.no_grad():
            out = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=eos,
                pad_token_id=pad,
            )
        for row in out[:, width:].tolist():
            done = eos in row
            row = row[: row.index(eos)] if done else row
            texts.append(tokenizer.decode(row, skip_special_tokens=True))
            lengths.append(len(row))
            finished.append(done)
    return texts, lengths, finished


def evaluate_text_to_svg(
    model, tokenizer, prompts: Sequence[str], refs: Sequence[str], max_new_tokens: int,
    batch: int = 16, size: int = 128,
) -> dict:  # fmt: skip
    """Greedy text-to-SVG on ``prompts`` scored against the reference SVGs ``refs``: SArena
    SR / PSNR / SSIM / MSE plus the mean output tokens and the share of truncated outputs."""
    V.check_same_length(prompts=prompts, refs=refs)
    texts, lengths, finished = generate_completions(
        model, tokenizer, prompts, max_new_tokens, batch
    )
    scores = sarena_metrics("text_to_svg", [t.strip() for t in texts], list(refs), size=size)
    scores["mean_output_tokens"] = float(np.mean(lengths))
    scores["truncated_rate"] = float(1.0 - np.mean(finished))
    scores["samples"] = texts[:2]
    return scores


def mcq_predict(model, tokenizer, prompts: Sequence[str], letters: str = "ABCD") -> list[str]:
    """The option letter with the highest teacher-forced log-probability of `` <letter>`` after
    each prompt (SArena understanding, scored from the SVG code only)."""
    from iclr26.models.tinylm import continuation_logprob

    if isinstance(prompts, str) or not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    if not isinstance(letters, str) or len(set(letters)) < 2:
        raise ValueError("letters must be a string of at least two distinct option letters")
    device = next(model.parameters()).device
    options = [tokenizer.encode(" " + c, add_special_tokens=False) for c in letters]
    out = []
    for prompt in prompts:
        ids = torch.tensor(tokenizer.encode(prompt, add_special_tokens=False), device=device)
        scores = [continuation_logprob(model, ids, torch.tensor(o, device=device)) for o in options]
        out.append(letters[int(np.argmax(scores))])
    return out
