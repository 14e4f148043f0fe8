"""Causal-LM plumbing for SIREN on any Hugging Face model: left-padded batches whose last
column is the ``<answer>`` token, answer-only scoring over the five digit tokens (one forward
pass), chain-of-thought decoding, and the decoder-layer hidden states at ``<answer>``."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Sequence

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.siren.prompt import ANSWER, AO_SUFFIX, END_THINK, RATINGS, predicted_rating
from iclr26.rl.grpo import left_pad, sample_rollouts
from iclr26.rl.grpo.rollout import position_ids_from_mask


def single_token_id(tok, text: str) -> int:
    """The id of ``text``, which must encode to exactly one token (``<answer>``, digits)."""
    ids = tok.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"tokenizer must encode {text!r} as one token, got {len(ids)}")
    return int(ids[0])


def digit_token_ids(tok) -> list[int]:
    """Token ids of the ratings ``1..5``."""
    return [single_token_id(tok, str(r)) for r in RATINGS]


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _check_prompts(prompts) -> list[str]:
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty sequence of strings")
    for k, p in enumerate(prompts):
        if not isinstance(p, str):
            raise TypeError(f"prompts[{k}] must be a string, got {type(p).__name__}")
    return list(prompts)


def encode_rows(tok, prompts: Sequence[str], suffix: str = "") -> list[list[int]]:
    """Token ids of ``prompt + suffix`` (the suffix encoded on its own, so special tags are
    never merged with prompt text)."""
    tail = tok.encode(suffix, add_special_tokens=False) if suffix else []
    return [tok.encode(p, add_special_tokens=False) + tail for p in prompts]


def answer_positions(input_ids: torch.Tensor, answer_id: int) -> torch.Tensor:
    """Index of the last ``<answer>`` token in each row (``-1`` where there is none)."""
    V.check_tensor(input_ids, "input_ids", ndim=2, integer=True)
    hit = input_ids == int(answer_id)
    idx = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
    return torch.where(hit, idx, torch.full_like(idx, -1)).max(1).values


def _last_logits_only(model) -> dict:
    """``logits_to_keep=1`` where the model's forward takes it (Hugging Face causal LMs since
    transformers 4.45; under peft, the wrapped model's): only the last column's logits are
    needed, and the vocabulary projection of every other position is most of the pass."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        params = inspect.signature(inner.forward).parameters
    except (TypeError, ValueError):
        return {}
    return {"logits_to_keep": 1} if "logits_to_keep" in params else {}


def _prompt_pass_last_logits(model):
    """``model`` for decoding with ``logits_to_keep=1`` on every call where its forward takes
    it: the prompt pass then projects only its last position onto the vocabulary, as
    ``generate`` does, and the one-token decode steps are unchanged. The returned callable's
    signature is the model's own, so the KV-cache keyword is still found."""
    extra = _last_logits_only(model)
    if not extra:
        return model

    class LastLogitsOnly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

    wrapper = LastLogitsOnly()
    wrapper.forward = functools.wraps(model.forward)(lambda *a, **kw: model(*a, **kw, **extra))
    return wrapper


def _keeps_positions(model) -> bool:
    """Whether ``model``'s forward takes ``logits_to_keep`` as per-row positions (a 2-D
    tensor: transformers 5), so the vocabulary projection can be limited to chosen tokens."""
    if not _last_logits_only(model):
        return False
    try:
        from transformers.modeling_utils import slice_logits_to_keep
    except ImportError:
        return False
    probe = torch.zeros((1, 2, 1))
    try:
        kept = slice_logits_to_keep(probe, torch.tensor([[True, False]]))
    except (TypeError, IndexError, RuntimeError):
        return False
    return tuple(kept.shape) == (1, 1)


def forward_at_last(model, rows: Sequence[Sequence[int]], pad_id: int, hidden: bool = False):
    """One forward pass over ``rows``; returns the logits at each row's last token ``[B, V]``
    and, with ``hidden``, the decoder-layer outputs there ``[B, L, d]`` (hidden states 1..L).
    Differentiable.

    Rows of unequal length are padded on the right and run without a padding mask: under
    causal attention a real token never attends to the padding after it, so its states are
    those of the row alone (positions from 0, as in a left-padded batch with its mask), and
    the attention kernel takes its causal path; the vocabulary projection is computed at each
    row's last token only. Rows of one length, and models that cannot keep per-row positions,
    run as a left-padded batch with its mask."""
    dev = _device(model)
    if len({len(r) for r in rows}) > 1 and _keeps_positions(model):
        lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
        ids = torch.full((len(rows), int(lengths.max())), int(pad_id), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        last = (lengths - 1).to(dev)
        out = model(
            input_ids=ids.to(dev),
            output_hidden_states=hidden,
            use_cache=False,
            logits_to_keep=last[:, None],
        )
        logits = out.logits[:, -1].float()
        if not hidden:
            return logits, None
        index = torch.arange(len(rows), device=dev)
        return logits, torch.stack([h[index, last] for h in out.hidden_states[1:]], 1)
    ids, attn = left_pad(rows, pad_id)
    ids, attn = ids.to(dev), attn.to(dev)
    out = model(
        input_ids=ids,
        attention_mask=attn,
        position_ids=position_ids_from_mask(attn),
        output_hidden_states=hidden,
        **_last_logits_only(model),
    )
    logits = out.logits[:, -1].float()
    if not hidden:
        return logits, None
    states = torch.stack([h[:, -1] for h in out.hidden_states[1:]], 1)
    return logits, states


def _right_padded(mask: torch.Tensor | None) -> bool:
    """Whether an attention mask is ``1..1 0..0`` in every row (or absent)."""
    if mask is None:
        return True
    mask = mask.bool()
    return bool(mask[:, 0].all()) and bool((mask[:, 1:] <= mask[:, :-1]).all())


@contextlib.contextmanager
def supervised_positions_loss(model):
    """While active, ``model(input_ids=, attention_mask=, labels=)`` on a right-padded batch
    returns the causal-LM loss of the model's own forward (the mean cross-entropy over the
    positions whose next-token label is not -100) for less work: the vocabulary projection
    and its softmax only at those positions instead of at every prompt position, and causal
    attention without the padding mask (a real token never attends to the padding after it).
    ``logits`` then holds the supervised positions' logits only. Any other call, and a model
    that cannot keep per-row positions, runs the model's own forward."""
    if not _keeps_positions(model):
        yield model
        return
    from transformers.modeling_outputs import CausalLMOutputWithPast

    own = model.forward

    def forward(input_ids=None, attention_mask=None, labels=None, **kwargs):
        if labels is None or input_ids is None or kwargs or not _right_padded(attention_mask):
            return own(input_ids=input_ids, attention_mask=attention_mask, labels=labels, **kwargs)
        target = labels[:, 1:]
        keep = torch.zeros_like(labels, dtype=torch.bool)
        keep[:, :-1] = target != -100
        logits = own(input_ids=input_ids, use_cache=False, logits_to_keep=keep).logits.float()
        loss = torch.nn.functional.cross_entropy(logits, target[keep[:, :-1]])
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    model.forward = forward
    try:
        yield model
    finally:
        del model.forward


@torch.no_grad()
def ao_digit_probs(model, tok, prompts: Sequence[str], batch_size: int = 16) -> np.ndarray:
    """Answer-only scoring: one forward pass on ``prompt + <think></think><answer>`` and the
    softmax over the five digit logits; returns ``(n, 5)`` probabilities of ratings 1..5."""
    prompts = _check_prompts(prompts)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    digits = digit_token_ids(tok)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rows = encode_rows(tok, prompts, AO_SUFFIX)
    was = model.training
    model.eval()
    out = []
    for s in range(0, len(rows), batch_size):
        logits, _ = forward_at_last(model, rows[s : s + batch_size], pad)
        out.append(torch.softmax(logits[:, digits], -1).cpu().numpy())
    model.train(was)
    return np.concatenate(out).astype(np.float64)


def ratings_from_probs(probs: np.ndarray, expected: bool = False) -> np.ndarray:
    """Argmax rating (1..5) of digit probabilities, or the expected rating."""
    probs = V.check_array(probs, "probs", ndim=2, shape=(None, len(RATINGS)), low=0.0)
    if expected:
        return probs @ np.asarray(RATINGS, dtype=float) / probs.sum(1)
    return np.asarray(RATINGS)[probs.argmax(1)].astype(float)


@torch.no_grad()
def generate_cot(
    model, tok, prompts: Sequence[str], max_new_tokens: int = 40, batch_size: int = 16
) -> tuple[list[str], list[list[int]]]:
    """Greedy chain-of-thought completions (``<think> .. </think><answer>d</answer>``): the
    decoded texts and the generated token ids (up to and including ``<eos>``)."""
    prompts = _check_prompts(prompts)
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rows = encode_rows(tok, prompts)
    decoder = _prompt_pass_last_logits(model)
    texts, ids = [], []
    for s in range(0, len(rows), batch_size):
        ro = sample_rollouts(
            decoder, rows[s : s + batch_size], 1, max_new_tokens, tok.eos_token_id, pad, greedy=True
        )
        resp = ro.input_ids[:, ro.prompt_len :]
        for r in range(len(resp)):
            gen = resp[r][ro.response_mask[r].bool()].tolist()
            ids.append(gen)
            texts.append(tok.decode([t for t in gen if t != tok.eos_token_id]))
    return texts, ids


def cot_predict(model, tok, prompts: Sequence[str], max_new_tokens: int = 40, batch_size: int = 16):
    """``(ratings, mean generated tokens, well-formed share)`` of CoT decoding."""
    from iclr26.llm.siren.prompt import parse_rating

    texts, ids = generate_cot(model, tok, prompts, max_new_tokens, batch_size)
    ratings = np.asarray([predicted_rating(t) for t in texts], dtype=float)
    formed = float(np.mean([parse_rating(t)[1] for t in texts]))
    return ratings, float(np.mean([len(g) for g in ids])), formed


def cot_answer_rows(tok, prompts: Sequence[str], generated: Sequence[Sequence[int]]):
    """``x_CoT`` = prompt + the generated rationale up to ``</think>`` + ``<answer>`` (token
    ids; ``</think>`` is appended when the model never closed its rationale)."""
    prompts = _check_prompts(prompts)
    if isinstance(generated, str) or len(generated) != len(prompts):
        raise ValueError(f"generated must hold one token-id list per prompt ({len(prompts)})")
    for k, gen in enumerate(generated):
        V.check_array(gen, f"generated[{k}]", ndim=1, dtype=np.int64, low=0)
    end_think = single_token_id(tok, END_THINK)
    answer = single_token_id(tok, ANSWER)
    rows = []
    for p, gen in zip(encode_rows(tok, prompts), generated, strict=True):
        gen = list(gen)
        cut = gen.index(end_think) + 1 if end_think in gen else None
        body = gen[:cut] if cut else [t for t in gen if t != tok.eos_token_id] + [end_think]
        rows.append(p + body + [answer])
    return rows


def _recording_decoder(model):
    """``model`` for ``sample_rollouts`` (the prompt pass projects only its last position onto
    the vocabulary, as in :func:`_prompt_pass_last_logits`) that also records, at every call,
    the decoder-layer outputs ``[B, L, d]`` and the logits ``[B, V]`` of the last column:
    ``calls[0]`` is the prompt pass, ``calls[k]`` (k >= 1) the step that reads the k-th
    generated token, i.e. its states."""
    extra, calls = _last_logits_only(model), []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

    def forward(*args, **kwargs):
        out = model(*args, **kwargs, **extra, output_hidden_states=True)
        states = torch.stack([h[:, -1] for h in out.hidden_states[1:]], 1)
        calls.append((states, out.logits[:, -1].float()))
        return out

    wrapper = Recorder()
    wrapper.forward = functools.wraps(model.forward)(forward)
    return wrapper, calls


@torch.no_grad()
def cot_answer_states(
    model, tok, prompts: Sequence[str], max_new_tokens: int = 40, batch_size: int = 16
) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    """The CoT side of hidden alignment: each prompt's greedy rationale (the generated ids, as
    :func:`generate_cot` returns them) and, at the ``<answer>`` token of ``x_CoT`` = prompt +
    rationale up to ``</think>`` + ``<answer>`` (:func:`cot_answer_rows`), the decoder-layer
    outputs ``[n, L, d]`` and the logits ``[n, V]``. Where the model itself wrote ``<answer>``
    right after ``</think>``, ``x_CoT`` is its own decoded prefix, so these are the states its
    decoding step computed at that token (with the KV cache, no second pass over the
    prompt); the other rows (rationale never closed, or not followed by ``<answer>``) get one
    forward pass over their ``x_CoT``."""
    prompts = _check_prompts(prompts)
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    end_think, answer = single_token_id(tok, END_THINK), single_token_id(tok, ANSWER)
    rows = encode_rows(tok, prompts)
    generated, states, logits, again = [], [None] * len(rows), [None] * len(rows), []
    for s in range(0, len(rows), batch_size):
        decoder, calls = _recording_decoder(model)
        ro = sample_rollouts(
            decoder, rows[s : s + batch_size], 1, max_new_tokens, tok.eos_token_id, pad, greedy=True
        )
        resp = ro.input_ids[:, ro.prompt_len :]
        for r in range(len(resp)):
            gen = resp[r][ro.response_mask[r].bool()].tolist()
            generated.append(gen)
            cut = gen.index(end_think) + 1 if end_think in gen else None
            if cut is not None and cut < len(gen) and gen[cut] == answer and cut + 1 < len(calls):
                states[s + r], logits[s + r] = calls[cut + 1][0][r], calls[cut + 1][1][r]
            else:
                again.append(s + r)
    if again:
        x_cot = cot_answer_rows(tok, [prompts[k] for k in again], [generated[k] for k in again])
        for b in range(0, len(again), batch_size):
            lg, st = forward_at_last(model, x_cot[b : b + batch_size], pad, hidden=True)
            for j, k in enumerate(again[b : b + batch_size]):
                states[k], logits[k] = st[j], lg[j]
    return generated, torch.stack(states).cpu(), torch.stack(logits).cpu()
