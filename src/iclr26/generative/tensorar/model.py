"""A small class-conditional decoder-only AR image-token model (the LlamaGen-style base that
TensorAR wraps): class token at position 0, codebook tokens after it, pre-LN transformer with
a key/value cache, LM head over the codebook. It exposes the three pieces a TensorAR wrapper
needs: ``embed`` (inputs to hidden states), ``body`` (the causal transformer) and ``head``."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, mlp_ratio: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(
            nn.Linear(d, mlp_ratio * d), nn.GELU(), nn.Linear(mlp_ratio * d, d)
        )

    def forward(self, x, past=None):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if past is not None:  # one new position attends to every cached one
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
            a = F.scaled_dot_product_attention(q, k, v)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=n > 1)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.ln2(x)), (k, v)


def sample_logits(logits, temperature: float = 1.0, top_k: int | None = None, generator=None):
    """Draw one token per row of ``logits`` (..., V): ``temperature=0`` is argmax, ``top_k``
    keeps the k largest logits."""
    if temperature == 0:
        return logits.argmax(-1)
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    probs = torch.softmax(z.reshape(-1, z.shape[-1]).float(), -1)
    if generator is not None and generator.device != probs.device:  # CPU generator, GPU model
        return (
            torch.multinomial(probs.cpu(), 1, generator=generator).to(z.device).view(z.shape[:-1])
        )
    return torch.multinomial(probs, 1, generator=generator).view(z.shape[:-1])


def check_generator(generator, name: str = "generator"):
    """``None`` or a ``torch.Generator`` (a seed is not accepted: it would be silently ignored
    or fail deep in a sampling call)."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def check_sampling(temperature, top_k, cfg_scale):
    temperature = V.check_scalar(temperature, "temperature", low=0.0)
    top_k = V.check_int(top_k, "top_k", low=1, allow_none=True)
    cfg_scale = V.check_scalar(cfg_scale, "cfg_scale", low=0.0)
    return temperature, top_k, cfg_scale


def check_tokens_labels(tokens, labels, vocab: int, seq_len: int, n_classes: int):
    """Tokens ``(n, seq_len)`` in ``[0, vocab)`` and labels ``(n,)`` in ``[0, n_classes)`` as
    int64 tensors."""
    t = V.check_array(tokens, "tokens", ndim=2, shape=(None, seq_len), low=0, high=vocab - 1)
    y = V.check_array(labels, "labels", ndim=1, low=0, high=n_classes - 1)
    for name, a in (("tokens", t), ("labels", y)):
        if not np.issubdtype(a.dtype, np.integer) and not np.all(a == np.round(a)):
            raise TypeError(f"{name} must hold integers")
    V.check_same_length(tokens=t, labels=y)
    return torch.as_tensor(t.astype(np.int64)), torch.as_tensor(y.astype(np.int64))


def check_labels(labels, n_classes: int) -> torch.Tensor:
    y = V.check_array(labels, "labels", ndim=1, low=0, high=n_classes - 1)
    if not np.issubdtype(y.dtype, np.integer) and not np.all(y == np.round(y)):
        raise TypeError("labels must hold integers")
    return torch.as_tensor(y.astype(np.int64))


def train_loop(module, loss_fn, params, *, n, steps, lr, batch_size, seed, weight_decay=0.0):
    """AdamW with a 5 % linear warm-up then cosine decay; ``loss_fn(idx, generator)`` gets a
    random mini-batch of row indices. Returns the loss curve."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=weight_decay)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            min(1.0, (s + 1) / warm) * (0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, steps)))))
        ),
    )
    losses = []
    module.train()
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=g).to(params[0].device)
        loss = loss_fn(idx, g)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    module.eval()
    return losses


class TinyARImageModel(nn.Module):
    """Class-conditional next-token model over ``vocab`` codebook entries, ``seq_len`` tokens
    per image. Ids: ``0..vocab-1`` codebook, ``vocab`` PAD; classes ``0..n_classes-1`` plus a
    null class (``n_classes``) for classifier-free guidance."""

    def __init__(
        self,
        vocab: int = 32,
        seq_len: int = 16,
        n_classes: int = 10,
        d: int = 128,
        layers: int = 4,
        heads: int = 4,
        mlp_ratio: int = 4,
        seed: int = 0,
    ):
        super().__init__()
        self.vocab = V.check_int(vocab, "vocab", low=2)
        self.seq_len = V.check_int(seq_len, "seq_len", low=1)
        self.n_classes = V.check_int(n_classes, "n_classes", low=1)
        self.d = V.check_int(d, "d", low=1)
        V.check_int(layers, "layers", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        V.check_int(mlp_ratio, "mlp_ratio", low=1)
        if d % heads:
            raise ValueError(f"d={d} must be divisible by heads={heads}")
        torch.manual_seed(V.check_int(seed, "seed", low=0))
        self.pad_id = vocab
        self.null_class = n_classes
        self.tok_emb = nn.Embedding(vocab + 1, d)
        self.cls_emb = nn.Embedding(n_classes + 1, d)
        self.pos_emb = nn.Parameter(0.02 * torch.randn(seq_len, d))
        self.blocks = nn.ModuleList(_Block(d, heads, mlp_ratio) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    # -- the three pieces a wrapper uses
    def get_input_embeddings(self) -> nn.Embedding:
        return self.tok_emb

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def embed(self, labels, inputs, start: int = 0):
        """Hidden inputs for positions ``start..start+L-1``: the class embedding at position 0,
        the token embedding of ``inputs`` (B, L) elsewhere, plus the position embedding."""
        pos = torch.arange(start, start + inputs.shape[1], device=inputs.device)
        e = self.tok_emb(inputs)
        e = torch.where((pos == 0)[None, :, None], self.cls_emb(labels)[:, None, :], e)
        return e + self.pos_emb[pos]

    def body(self, h, cache=None):
        """The causal transformer; ``cache`` is a per-layer list of (k, v) or None. Returns
        ``(normed hidden, new cache)``."""
        new = []
        for i, blk in enumerate(self.blocks):
            h, kv = blk(h, None if cache is None else cache[i])
            new.append(kv)
        return self.norm(h), new

    def head(self, h):
        return self.lm_head(h)

    # -- plain next-token AR
    def shifted_inputs(self, tokens):
        """``[PAD (class slot), x_1, ..., x_{T-1}]``: the input that predicts ``x_1..x_T``."""
        pad = torch.full_like(tokens[:, :1], self.pad_id)
        return torch.cat([pad, tokens[:, :-1]], 1)

    def forward(self, labels, tokens):
        """Next-token logits ``(B, T, vocab)`` for ground-truth ``tokens`` (teacher forcing)."""
        h, _ = self.body(self.embed(labels, self.shifted_inputs(tokens)))
        return self.head(h)

    def fit(
        self,
        tokens,
        labels,
        steps: int = 1000,
        lr: float = 1e-3,
        batch_size: int = 64,
        class_dropout: float = 0.1,
        seed: int = 0,
    ) -> list[float]:
        """Train by next-token cross-entropy; labels are dropped to the null class with
        probability ``class_dropout`` (for classifier-free guidance). Returns the loss curve."""
        x, y = check_tokens_labels(tokens, labels, self.vocab, self.seq_len, self.n_classes)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        class_dropout = V.check_probability(class_dropout, "class_dropout")
        seed = V.check_int(seed, "seed", low=0)

        dev = self.pos_emb.device
        x, y = x.to(dev), y.to(dev)

        def loss_fn(idx, g):
            lab = y[idx].clone()
            lab[(torch.rand(len(idx), generator=g) < class_dropout).to(dev)] = self.null_class
            logits = self(lab, x[idx])
            return F.cross_entropy(logits.reshape(-1, self.vocab), x[idx].reshape(-1))

        return train_loop(
            self,
            loss_fn,
            list(self.parameters()),
            n=len(x),
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
        )

    @torch.no_grad()
    def generate(
        self,
        labels,
        temperature: float = 1.0,
        top_k: int | None = None,
        cfg_scale: float = 1.0,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Sample ``(B, seq_len)`` tokens, one body pass per position."""
        y = check_labels(labels, self.n_classes)
        temperature, top_k, cfg_scale = check_sampling(temperature, top_k, cfg_scale)
        V.check_bool(use_cache, "use_cache")
        check_generator(generator)
        self.eval()
        dev = self.pos_emb.device
        y = y.to(dev)
        b, guided = len(y), cfg_scale != 1.0
        lab = torch.cat([y, torch.full_like(y, self.null_class)]) if guided else y
        out = torch.full((b, self.seq_len + 1), self.pad_id, dtype=torch.long, device=dev)
        cache, seen = None, []
        for s in range(self.seq_len):
            inp = out[:, s : s + 1]
            e = self.embed(lab, torch.cat([inp, inp]) if guided else inp, start=s)
            if use_cache:
                h, cache = self.body(e, cache)
            else:
                seen.append(e)
                h, _ = self.body(torch.cat(seen, 1))
            logits = self.head(h[:, -1])
            if guided:
                c, u = logits.chunk(2)
                logits = u + cfg_scale * (c - u)
            out[:, s + 1] = sample_logits(logits, temperature, top_k, generator)
        return out[:, 1:]
