"""The tiny multimodal policy: the shared tiny Llama configuration (a Hugging Face
``LlamaForCausalLM``) over a small arithmetic vocabulary, plus a vision adapter that turns each
8x8 digit scan into one embedding injected at its ``<img>`` slot through ``inputs_embeds``.

``TinyMLLM(lm=...)`` wraps any Hugging Face causal LM instead (its tokenizer then encodes the
text and ``<sep>`` marks image slots), so the tiny path and the real-model path share code."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models import hf_compat
from iclr26.rl.grpo.rollout import Rollouts, left_pad, position_ids_from_mask, sample_rollouts
from iclr26.rl.revisual_r1.tasks import IMAGE_TOKEN, Problem

SPECIALS = ("<pad>", "<bos>", "<eos>", "<think>", "</think>", "<answer>", "</answer>", IMAGE_TOKEN)
CHARS = tuple("0123456789+-*()=;")


ADAPTER_FILE, META_FILE = "vision_adapter.safetensors", "mllm.json"
_CHAR = object()  # ``tokenizer=_CHAR``: a saved language model over the character vocabulary


class CharVocab:
    """Character vocabulary of the arithmetic task: special tags are single tokens."""

    def __init__(self):
        self.tokens = list(SPECIALS) + list(CHARS)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad_token_id, self.bos_token_id, self.eos_token_id = 0, 1, 2
        self.image_token_id = self.index[IMAGE_TOKEN]

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        ids, i = [], 0
        while i < len(text):
            for tag in SPECIALS:
                if text.startswith(tag, i):
                    ids.append(self.index[tag])
                    i += len(tag)
                    break
            else:
                ch = text[i]
                if ch not in self.index:
                    raise ValueError(f"text has a character outside the vocabulary: {ch!r}")
                ids.append(self.index[ch])
                i += 1
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.tokens[i] for i in ids if i not in (0, 1, 2))


class _TokenizerVocab:
    """A Hugging Face tokenizer seen through the :class:`CharVocab` interface."""

    def __init__(self, tokenizer, image_token: str = "<sep>"):
        self.tok = tokenizer
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.bos_token_id = tokenizer.bos_token_id
        self.eos_token_id = tokenizer.eos_token_id
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)
        self.image_token = image_token

    def __len__(self) -> int:
        return len(self.tok)

    def encode(self, text: str) -> list[int]:
        return list(
            self.tok.encode(text.replace(IMAGE_TOKEN, self.image_token), add_special_tokens=False)
        )

    def decode(self, ids: Sequence[int]) -> str:
        ids = [i for i in ids if i != self.eos_token_id]
        return self.tok.decode(ids, skip_special_tokens=False).replace(
            self.image_token, IMAGE_TOKEN
        )


class TinyMLLM(nn.Module):
    """Causal LM + digit-scan adapter (``64 -> hidden -> hidden`` MLP, one token per scan).

    ``size`` picks the shared tiny Llama configuration (``"test"``: 64 hidden, 2 layers) built
    for the character vocabulary and randomly initialised; ``lm``/``tokenizer`` wrap an existing
    Hugging Face causal LM instead. ``forward`` takes the usual causal-LM arguments plus
    ``images [B, K, 64]`` (the scans of each row's ``K`` image slots, in order)."""

    def __init__(
        self, size: str = "test", seed: int = 0, lm=None, tokenizer=None, max_len: int = 64
    ):
        super().__init__()
        V.check_int(seed, "seed", low=0)
        torch.manual_seed(seed)
        if lm is None:
            from transformers import LlamaForCausalLM

            from iclr26.models.tinylm import tiny_llama_config

            self.vocab = CharVocab()
            max_len = V.check_int(max_len, "max_len", low=8)
            config = tiny_llama_config(
                size,
                vocab_size=len(self.vocab),
                max_position_embeddings=max_len,
                pad_token_id=0,
                bos_token_id=1,
                eos_token_id=2,
            )
            lm = LlamaForCausalLM(config)
        else:
            if tokenizer is None:
                raise ValueError("tokenizer is required when lm is given")
            self.vocab = CharVocab() if tokenizer is _CHAR else _TokenizerVocab(tokenizer)
        self.lm = lm
        hidden = lm.get_input_embeddings().embedding_dim
        self.vision = nn.Sequential(nn.Linear(64, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self._cache_kw = hf_compat.cache_kwarg(lm)

    def save_pretrained(self, path) -> None:
        """Write the policy to the folder ``path``: the language model with its own
        ``save_pretrained`` (safetensors, its dtype kept), the vision adapter as
        ``vision_adapter.safetensors``, the vocabulary kind in ``mllm.json`` and, for a wrapped
        Hugging Face tokenizer, the tokenizer. :meth:`from_pretrained` reads it back."""
        import json
        from pathlib import Path

        from safetensors.torch import save_file

        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.lm.save_pretrained(folder)
        state = {k: v.detach().contiguous().cpu() for k, v in self.vision.state_dict().items()}
        save_file(state, str(folder / ADAPTER_FILE))
        char = isinstance(self.vocab, CharVocab)
        if not char:
            self.vocab.tok.save_pretrained(folder)
        meta = {"vocab": "char" if char else "tokenizer"}
        if not char:
            meta["image_token"] = self.vocab.image_token
        (folder / META_FILE).write_text(json.dumps(meta))

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs) -> TinyMLLM:
        """A folder written by :meth:`save_pretrained` gives that policy back (language model,
        vision adapter and vocabulary). Anything else wraps a causal LM loaded through
        :func:`iclr26.models.tinylm.load_causal_lm` (a tiny size name or any
        ``from_pretrained`` id/path); its vision adapter starts untrained."""
        import json
        from pathlib import Path

        if not isinstance(name_or_path, str | Path):
            raise TypeError(
                f"name_or_path must be a str or path, got {type(name_or_path).__name__}"
            )
        folder = Path(name_or_path)
        if (folder / META_FILE).is_file():
            from safetensors.torch import load_file
            from transformers import AutoModelForCausalLM, AutoTokenizer

            meta = json.loads((folder / META_FILE).read_text())
            lm = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
            if meta.get("vocab") == "char":
                policy = cls(lm=lm, tokenizer=_CHAR)
            else:
                tok = AutoTokenizer.from_pretrained(folder)
                policy = cls(lm=lm, tokenizer=tok)
                policy.vocab = _TokenizerVocab(tok, meta.get("image_token", "<sep>"))
            adapter = load_file(str(folder / ADAPTER_FILE))
            policy.vision.load_state_dict(adapter)
            return policy.to(lm.dtype)
        from iclr26.models.tinylm import load_causal_lm

        lm, tok = load_causal_lm(name_or_path, **kwargs)
        return cls(lm=lm, tokenizer=tok)

    def embed(self, input_ids: torch.Tensor, images: torch.Tensor | None) -> torch.Tensor:
        emb = self.lm.get_input_embeddings()(input_ids)
        slots = input_ids == self.vocab.image_token_id
        if images is None:
            if bool(slots.any()) and input_ids.shape[1] > 1:
                raise ValueError("input_ids has image slots but no images were given")
            return emb
        images = V.check_tensor(images, "images", ndim=3, floating=True)
        if images.shape[0] != input_ids.shape[0] or images.shape[2] != 64:
            raise ValueError(
                f"images must have shape [{input_ids.shape[0]}, K, 64], got {tuple(images.shape)}"
            )
        if int(slots.sum(1).max()) > images.shape[1]:
            raise ValueError("a row has more image slots than images")
        # the scans arrive as float32; the adapter may be in bf16/fp16 with the rest of the model
        feats = self.vision((images / 16.0).to(self.vision[0].weight.dtype))
        which = (slots.long().cumsum(1) - 1).clamp(min=0)
        gathered = feats.gather(1, which[..., None].expand(-1, -1, feats.shape[-1]))
        return torch.where(slots[..., None], gathered.to(emb.dtype), emb)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        images: torch.Tensor | None = None,
        cache=None,
        past_key_values=None,
        use_cache: bool | None = None,
        labels: torch.Tensor | None = None,
    ):
        cache = cache if cache is not None else past_key_values
        kwargs = {} if cache is None else {self._cache_kw: cache}
        if labels is not None:
            labels = labels.masked_fill(labels == self.vocab.image_token_id, -100)
        out = self.lm(
            inputs_embeds=self.embed(input_ids, images),
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
            labels=labels,
            **kwargs,
        )
        # image slots are inputs only: the policy never emits one (a large finite negative,
        # not -inf, keeps entropies and log-probabilities finite)
        slot = torch.zeros(out.logits.shape[-1], dtype=torch.bool, device=out.logits.device)
        slot[self.vocab.image_token_id] = True
        out.logits = out.logits.masked_fill(slot, -1e9)
        return out


def stack_images(problems: Sequence[Problem]) -> torch.Tensor | None:
    """``[B, K, 64]`` scans of the problems (zero-padded to the largest K), or None."""
    problems = check_problems(problems)
    if not any(p.images is not None for p in problems):
        return None
    k = max(0 if p.images is None else len(p.images) for p in problems)
    out = np.zeros((len(problems), k, 64), dtype=np.float32)
    for i, p in enumerate(problems):
        if p.images is not None:
            out[i, : len(p.images)] = p.images
    return torch.from_numpy(out)


def check_problems(problems, name: str = "problems") -> list[Problem]:
    if isinstance(problems, Problem):
        problems = [problems]
    if isinstance(problems, str) or not isinstance(problems, Sequence) or len(problems) == 0:
        raise ValueError(f"{name} must be a non-empty list of Problem")
    for p in problems:
        if not isinstance(p, Problem):
            raise TypeError(f"{name} must hold Problem objects, got {type(p).__name__}")
    return list(problems)


class MLLMGenerator:
    """``generate(problems, n, generator=None)`` for :class:`~iclr26.rl.grpo.GRPOTrainer`:
    samples ``n`` completions per problem from a :class:`TinyMLLM` (temperature, top-p)."""

    def __init__(
        self,
        policy: TinyMLLM,
        max_new_tokens: int = 32,
        temperature: float = 1.0,
        top_p: float = 0.95,
    ):
        if not isinstance(policy, TinyMLLM):
            raise TypeError(f"policy must be a TinyMLLM, got {type(policy).__name__}")
        self.policy = policy
        self.max_new_tokens = V.check_int(max_new_tokens, "max_new_tokens", low=1)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        self.top_p = V.check_scalar(top_p, "top_p", low=0.0, high=1.0, low_open=True)

    def __call__(self, problems, n: int, generator=None, greedy: bool = False) -> Rollouts:
        problems = check_problems(problems)
        vocab = self.policy.vocab
        prompts = [[vocab.bos_token_id, *vocab.encode(p.prompt)] for p in problems]
        images = stack_images(problems)
        return sample_rollouts(
            self.policy,
            prompts,
            n,
            self.max_new_tokens,
            eos_token_id=vocab.eos_token_id,
            pad_token_id=vocab.pad_token_id,
            temperature=self.temperature,
            top_p=self.top_p,
            generator=generator,
            model_kwargs=None if images is None else {"images": images},
            decode=vocab.decode,
            greedy=greedy,
        )


def sft(
    policy: TinyMLLM,
    examples: Sequence[tuple[Problem, str]],
    steps: int,
    lr: float = 3e-3,
    batch: int = 32,
    seed: int = 0,
) -> list[float]:
    """Supervised fine-tuning on ``(problem, completion)`` pairs, loss on the completion (and
    its ``<eos>``) only; AdamW, gradient norm clipped to 1. Returns the loss per step."""
    if not isinstance(policy, TinyMLLM):
        raise TypeError(f"policy must be a TinyMLLM, got {type(policy).__name__}")
    if len(examples) == 0:
        raise ValueError("examples is empty")
    steps = V.check_int(steps, "steps", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch = V.check_int(batch, "batch", low=1)
    vocab = policy.vocab
    rows, starts = [], []
    for prob, completion in examples:
        prompt = [vocab.bos_token_id, *vocab.encode(prob.prompt)]
        rows.append(prompt + vocab.encode(completion) + [vocab.eos_token_id])
        starts.append(len(prompt))
    problems = [p for p, _ in examples]
    rng = np.random.default_rng(seed)
    device = next(policy.parameters()).device
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    policy.train()
    for _ in range(steps):
        pick = rng.integers(0, len(rows), size=batch)
        ids, attn = left_pad([rows[i] for i in pick], vocab.pad_token_id)
        width = ids.shape[1]
        labels = ids.clone()
        for r, i in enumerate(pick):
            labels[r, : width - len(rows[i]) + starts[i]] = -100
        images = stack_images([problems[i] for i in pick])
        ids, attn, labels = ids.to(device), attn.to(device), labels.to(device)
        images = None if images is None else images.to(device)
        out = policy(
            input_ids=ids,
            attention_mask=attn,
            position_ids=position_ids_from_mask(attn),
            images=images,
            labels=labels,
        )
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        losses.append(float(out.loss.detach()))
    policy.eval()
    return losses
