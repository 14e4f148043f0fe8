"""The four scores of the tiny setting ("six tasks" analogue): reasoning exact match at k = 3
and k = 4 (greedy decoding with the KV cache, the digit inside ``<answer>``), and the
pre-training domain's perplexity score ``ppl_reference / ppl`` and next-token accuracy on
held-out stdlib code. Their mean is the average score."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.llm.qat_reasoning.calibrate import model_device
from iclr26.llm.qat_reasoning.quant import QuantLinear
from iclr26.llm.qat_reasoning.tasks import ArithmeticProblem, arithmetic_problems, parse_answer
from iclr26.models import hf_compat


def frozen_for_eval(model: nn.Module) -> nn.Module:
    """The model as it is evaluated: without QuantLinear modules it is ``model`` itself;
    otherwise a copy in which every QuantLinear without an explicit input scale is an
    ``nn.Linear`` holding its dequantized weight. The copy computes exactly the same outputs
    (the QuantLinear forward multiplies by that same weight) without re-running the quantizer
    at every forward pass of greedy decoding; ``model`` is not changed."""
    names = [
        n for n, m in model.named_modules() if isinstance(m, QuantLinear) and m.input_scale is None
    ]
    if not names:
        return model
    frozen = copy.deepcopy(model)
    for name in names:
        q = frozen.get_submodule(name)
        w = q.weight
        lin = nn.Linear(
            q.in_features, q.out_features, bias=q.bias is not None, device=w.device, dtype=w.dtype
        )
        with torch.no_grad():
            lin.weight.copy_(q.dequantized_weight().to(w.dtype))
            if q.bias is not None:
                lin.bias.copy_(q.bias)
        parent, _, attr = name.rpartition(".")
        setattr(frozen.get_submodule(parent) if parent else frozen, attr, lin)
    return frozen.eval()


@torch.inference_mode()
def greedy_decode(model: nn.Module, ids: torch.Tensor, max_new_tokens: int, eos_token_id=None):
    """Greedy decoding with the KV cache for a batch of equal-length prompts, on the model's
    device; returns only the new tokens ``(batch, <= max_new_tokens)``."""
    device = model_device(model)
    step = ids.to(device)
    cache = hf_compat.empty_cache(getattr(model, "config", None))
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=device)
    new = []
    for _ in range(max_new_tokens):
        logits, cache = hf_compat.forward_with_cache(model, step, cache)
        nxt = logits[:, -1].argmax(-1)
        if eos_token_id is not None:
            nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
            done |= nxt == eos_token_id
        new.append(nxt)
        step = nxt[:, None]
        if eos_token_id is not None and bool(done.all()):
            break
    return torch.stack(new, 1).cpu() if new else ids.new_zeros((ids.shape[0], 0))


def reasoning_exact_match(
    model: nn.Module,
    tokenizer,
    problems: Sequence[ArithmeticProblem],
    max_new_tokens: int = 40,
    batch_size: int = 256,
) -> float:
    """Share of ``problems`` whose greedy answer digit is right; malformed answers are wrong.
    Prompts are batched by token length, so no padding enters the model."""
    if not problems:
        raise ValueError("problems is empty")
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
    by_len: dict[int, list[tuple[int, list[int]]]] = {}
    for i, p in enumerate(problems):
        ids = tokenizer.encode(p.prompt, add_special_tokens=False)
        by_len.setdefault(len(ids), []).append((i, ids))
    correct = 0
    model = frozen_for_eval(model)
    was_training = model.training
    model.eval()
    try:
        for group in by_len.values():
            for start in range(0, len(group), batch_size):
                chunk = group[start : start + batch_size]
                ids = torch.tensor([c[1] for c in chunk])
                new = greedy_decode(model, ids, max_new_tokens, tokenizer.eos_token_id)
                for (i, _), row in zip(chunk, new.tolist()):
                    text = tokenizer.decode(row, skip_special_tokens=False)
                    correct += parse_answer(text) == problems[i].answer
    finally:
        model.train(was_training)
    return correct / len(problems)


@torch.inference_mode()
def lm_scores(model: nn.Module, windows: torch.Tensor, batch_size: int = 16) -> dict[str, float]:
    """Perplexity and next-token top-1 accuracy over non-overlapping token ``windows``
    ``(n, seq_len)`` (one pass for both)."""
    V.check_tensor(windows, "windows", ndim=2, integer=True, low=0)
    device = model_device(model)
    nll, hits, count = 0.0, 0, 0
    was_training = model.training
    model.eval()
    try:
        for batch in torch.split(windows, batch_size):
            x = batch.to(device)
            logits = hf_compat.causal_lm_logits(model, x)[:, :-1].float()
            target = x[:, 1:]
            logp = torch.log_softmax(logits, -1).gather(-1, target[..., None]).squeeze(-1)
            nll -= float(logp.sum())
            hits += int((logits.argmax(-1) == target).sum())
            count += target.numel()
    finally:
        model.train(was_training)
    return {"ppl": math.exp(nll / count), "next_token_acc": hits / count}


@dataclass
class EvalSuite:
    """Fixed evaluation sets: ``n_problems`` problems at each k in ``ks`` (their own generator
    seed, never used for training or calibration) and ``n_windows`` stdlib test windows."""

    problems: dict[int, list[ArithmeticProblem]]
    windows: torch.Tensor
    ppl_reference: float | None = None
    max_new_tokens: int = 40

    @classmethod
    def build(
        cls,
        test_stream: np.ndarray,
        n_problems: int = 200,
        n_windows: int = 32,
        seq_len: int = 128,
        ks: Sequence[int] = (3, 4),
        seed: int = 9000,
    ) -> EvalSuite:
        n_problems = V.check_int(n_problems, "n_problems", low=1)
        n_windows = V.check_int(n_windows, "n_windows", low=1)
        seq_len = V.check_int(seq_len, "seq_len", low=2)
        stream = V.check_array(np.asarray(test_stream), "test_stream", ndim=1, dtype=None)
        if len(stream) < n_windows * seq_len:
            raise ValueError(f"test_stream holds {len(stream)} tokens, fewer than needed")
        problems = {int(k): arithmetic_problems(n_problems, int(k), seed + int(k)) for k in ks}
        windows = torch.from_numpy(
            stream[: n_windows * seq_len].astype(np.int64).reshape(n_windows, seq_len)
        )
        return cls(problems, windows)

    def evaluate(
        self, model: nn.Module, tokenizer, max_new_tokens: int | None = None
    ) -> dict[str, float]:
        """EM per k, ppl, ppl score (``ppl_reference / ppl``; without a reference the model
        is its own, score 1), next-token accuracy and the average of the normalised scores."""
        max_new_tokens = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        model = frozen_for_eval(model)
        out = {
            f"em_k{k}": reasoning_exact_match(model, tokenizer, probs, max_new_tokens)
            for k, probs in self.problems.items()
        }
        lm = lm_scores(model, self.windows)
        ref = self.ppl_reference if self.ppl_reference is not None else lm["ppl"]
        out.update(lm)
        out["ppl_score"] = ref / lm["ppl"]
        out["em_mean"] = float(np.mean([out[f"em_k{k}"] for k in self.problems]))
        parts = [out[f"em_k{k}"] for k in self.problems] + [out["ppl_score"], lm["next_token_acc"]]
        out["average"] = float(np.mean(parts))
        return out
