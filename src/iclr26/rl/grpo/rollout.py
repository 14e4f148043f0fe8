"""Rollouts from any Hugging Face causal LM: batched temperature/top-p sampling with the KV
cache over left-padded prompts, and teacher-forced per-token log-probabilities of the sampled
responses (the quantities the GRPO loss needs).

A policy is any module called as ``model(input_ids=, attention_mask=, position_ids=,
use_cache=, <cache kwarg>=, **model_kwargs)`` returning an object with ``.logits`` (every
``transformers`` causal LM, and wrappers such as a vision adapter that consume extra
``model_kwargs`` like images on the prompt pass)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from iclr26 import validation as V
from iclr26.models import hf_compat
from iclr26.rl.grpo.losses import token_entropy


@dataclass
class Rollouts:
    """A batch of sampled completions, ``N`` rows laid out group by group.

    ``input_ids``/``attention_mask``: ``[N, P + T]`` (prompt left-padded to ``P``, response
    right-padded to ``T``); ``response_mask``: ``[N, T]``, 1 on generated tokens up to and
    including the end-of-sequence token; ``completions``: decoded response texts;
    ``model_kwargs``: extra forward inputs with first dimension ``N`` (e.g. images)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor
    prompt_len: int
    completions: list[str] = field(default_factory=list)
    model_kwargs: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a custom ``generate`` builds these; a malformed batch must fail here, by name, not as
        # a broadcasting error inside the loss
        V.check_tensor(self.input_ids, "input_ids", ndim=2, integer=True)
        n, width = self.input_ids.shape
        V.check_tensor(self.attention_mask, "attention_mask", shape=(n, width))
        self.prompt_len = V.check_int(self.prompt_len, "prompt_len", low=1, high=width - 1)
        V.check_tensor(self.response_mask, "response_mask", shape=(n, width - self.prompt_len))
        if self.completions and len(self.completions) != n:
            raise ValueError(f"completions has {len(self.completions)} entries for {n} rows")
        for key, value in self.model_kwargs.items():
            if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.shape[0] != n:
                raise ValueError(f"model_kwargs[{key!r}] must be a tensor with {n} rows")

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def n_response_tokens(self) -> int:
        return int(self.response_mask.sum())

    def select(self, index: torch.Tensor) -> Rollouts:
        """Rows ``index`` (duplicates allowed, as a batch selector with replacement gives)."""
        index = torch.as_tensor(index, dtype=torch.long).to(self.input_ids.device)
        return Rollouts(
            self.input_ids[index],
            self.attention_mask[index],
            self.response_mask[index],
            self.prompt_len,
            [self.completions[i] for i in index.tolist()] if self.completions else [],
            {k: v[index] for k, v in self.model_kwargs.items()},
        )


def _device_of(model: torch.nn.Module) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions that skip left padding (0 at each row's first real token)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists -> ``(ids [B, P], attention_mask [B, P])`` padded on the left."""
    if len(rows) == 0:
        raise ValueError("prompts is empty")
    width = max(len(r) for r in rows)
    if width == 0:
        raise ValueError("prompts must not be empty token lists")
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r) == 0:
            raise ValueError(f"prompts[{i}] is an empty token list")
        ids[i, width - len(r) :] = torch.as_tensor(list(r), dtype=torch.long)
        mask[i, width - len(r) :] = 1
    return ids, mask


def _top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    # drop a token once the mass of the tokens before it already reaches top_p (keeps >= 1)
    drop = probs.cumsum(-1) - probs >= top_p
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)


def _cache_of(out) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


@torch.no_grad()
def sample_rollouts(
    model: torch.nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    n: int,
    max_new_tokens: int,
    eos_token_id: int,
    pad_token_id: int = 0,
    temperature: float = 1.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    model_kwargs: dict[str, torch.Tensor] | None = None,
    decode: Callable[[list[int]], str] | None = None,
    greedy: bool = False,
) -> Rollouts:
    """Sample ``n`` completions per prompt (rows grouped: prompt ``p`` -> rows
    ``p*n .. p*n+n-1``) with the KV cache; ``model_kwargs`` (first dimension = number of
    prompts) go to the prompt pass only and are repeated ``n`` times in the result."""
    n = V.check_int(n, "n", low=1)
    max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
    V.check_int(eos_token_id, "eos_token_id", low=0)
    V.check_int(pad_token_id, "pad_token_id", low=0)
    V.check_bool(greedy, "greedy")
    if not greedy:
        V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        V.check_scalar(top_p, "top_p", low=0.0, high=1.0, low_open=True)
    device = _device_of(model)
    ids, attn = left_pad(prompt_ids, pad_token_id)
    ids, attn = ids.repeat_interleave(n, 0).to(device), attn.repeat_interleave(n, 0).to(device)
    extra = {}
    for k, v in (model_kwargs or {}).items():
        if v.shape[0] != len(prompt_ids):
            raise ValueError(f"model_kwargs[{k!r}] must have one row per prompt")
        extra[k] = v.repeat_interleave(n, 0).to(device)
    rows = ids.shape[0]
    was_training = model.training
    model.eval()
    cache_kw = hf_compat.cache_kwarg(model)
    try:
        pos = position_ids_from_mask(attn)
        out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True, **extra)
        cache = _cache_of(out)
        next_pos = pos[:, -1] + 1
        done = torch.zeros(rows, dtype=torch.bool, device=device)
        new_tokens, live = [], []
        for _ in range(max_new_tokens):
            logits = out.logits[:, -1].float()
            if greedy:
                nxt = logits.argmax(-1)
            else:
                probs = _top_p_filter(logits / temperature, top_p).softmax(-1)
                # sampled on the CPU so one seeded CPU generator drives every device
                nxt = torch.multinomial(probs.cpu(), 1, generator=generator)[:, 0].to(device)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            live.append(~done)
            new_tokens.append(nxt)
            done = done | (nxt == eos_token_id)
            if bool(done.all()):
                break
            attn = torch.cat([attn, live[-1].long()[:, None]], 1)
            out = model(
                input_ids=nxt[:, None],
                attention_mask=attn,
                position_ids=next_pos[:, None],
                use_cache=True,
                **{cache_kw: cache},
            )
            cache = _cache_of(out)
            next_pos = next_pos + 1
    finally:
        model.train(was_training)
    response = torch.stack(new_tokens, 1)
    response_mask = torch.stack(live, 1).long()
    prompt_len = ids.shape[1]
    full_ids = torch.cat([ids, response], 1)
    full_attn = torch.cat([attn[:, :prompt_len], response_mask], 1)
    completions = []
    if decode is not None:
        for r in range(rows):
            completions.append(decode(response[r][response_mask[r].bool()].tolist()))
    return Rollouts(full_ids, full_attn, response_mask, prompt_len, completions, extra)


def token_logprobs(
    model: torch.nn.Module, rollouts: Rollouts, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Teacher-forced log-probabilities of the response tokens (``[N, T]``) and, when asked,
    the entropy of the policy at those positions. Differentiable (no ``no_grad`` here)."""
    if not isinstance(rollouts, Rollouts):
        raise TypeError(f"rollouts must be Rollouts, got {type(rollouts).__name__}")
    pos = position_ids_from_mask(rollouts.attention_mask)
    out = model(
        input_ids=rollouts.input_ids,
        attention_mask=rollouts.attention_mask,
        position_ids=pos,
        **rollouts.model_kwargs,
    )
    logits = out.logits if hasattr(out, "logits") else out
    p = rollouts.prompt_len
    # the logit at position t predicts token t + 1
    resp_logits = logits[:, p - 1 : -1].float()
    targets = rollouts.input_ids[:, p:]
    logp = torch.log_softmax(resp_logits, -1).gather(-1, targets[..., None])[..., 0]
    entropy = token_entropy(resp_logits) if with_entropy else None
    return logp, entropy


class HFGenerator:
    """The ``generate(prompts, n)`` callable of :class:`GRPOTrainer` for a Hugging Face causal
    LM and its tokenizer: prompts are strings, completions are decoded without special
    tokens' text (``skip_special_tokens=False`` keeps tags such as ``<answer>``)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        top_p: float = 0.95,
        add_bos: bool = False,
        skip_special_tokens: bool = False,
    ):
        V.check_module_attrs(tokenizer, "tokenizer", ["encode", "decode"])
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        self.top_p = V.check_scalar(top_p, "top_p", low=0.0, high=1.0, low_open=True)
        self.add_bos = V.check_bool(add_bos, "add_bos")
        self.skip_special_tokens = V.check_bool(skip_special_tokens, "skip_special_tokens")
        self.generator: torch.Generator | None = None

    def encode(self, prompt: str) -> list[int]:
        if not isinstance(prompt, str):
            raise TypeError(f"prompts must be strings, got {type(prompt).__name__}")
        ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return ([bos] if self.add_bos and bos is not None else []) + list(ids)

    def decode(self, ids: list[int]) -> str:
        eos = self.tokenizer.eos_token_id
        ids = [i for i in ids if i != eos]
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)

    def __call__(
        self,
        prompts: Sequence[str],
        n: int,
        greedy: bool = False,
        generator: torch.Generator | None = None,
    ) -> Rollouts:
        """``n`` sampled completions per prompt. ``generator`` (the trainer passes its seeded
        one) drives the sampling; without it, ``self.generator`` (default: torch's global
        generator)."""
        if isinstance(prompts, str) or len(prompts) == 0:
            raise ValueError("prompts must be a non-empty list of strings")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return sample_rollouts(
            self.model,
            [self.encode(p) for p in prompts],
            n,
            self.max_new_tokens,
            eos_token_id=tok.eos_token_id,
            pad_token_id=pad,
            temperature=self.temperature,
            top_p=self.top_p,
            generator=generator if generator is not None else self.generator,
            decode=self.decode,
            greedy=greedy,
        )
