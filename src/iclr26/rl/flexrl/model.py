"""TinyVLM: a small vision-language policy (linear patch embedding + character embedding ->
causal transformer blocks -> LM head) whose attention can run *sequence-parallel*: a long
sequence is cut into contiguous chunks, each worker computes Q/K/V of its chunk and the K/V of
the group are exchanged (FlexUlysses' sub-sequence sharding) so that every chunk attends
exactly, with global positions and a causal mask, to all earlier tokens.

A sequence is laid out ``[media patches][prompt tokens][response tokens]`` and processed as
``G`` rows (the group of sampled responses of one prompt). ``comm`` objects (see
:mod:`iclr26.rl.flexrl.parallel`) provide the exchange; ``comm=None`` is the single-worker
forward."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.rl.flexrl.data import PATCH_DIM, VOCAB_SIZE


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, mlp: int):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(g, n, 3, self.heads, self.dh).unbind(2)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [G, H, n, dh]

    def forward(self, x, start: int, comm=None, cache=None):
        """``x``: ``[G, n, d]`` at global positions ``start .. start + n``. Returns the block
        output and this layer's full-prefix ``(K, V)`` (``[G, H, start + n, dh]``)."""
        q, k, v = self._split(x)
        if cache is not None:  # decoding: prepend the cached prefix
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            att = _causal_attention(q, k, v, start)
            full_k, full_v = k, v
        elif comm is None:
            att = _causal_attention(q, k, v, start)
            full_k, full_v = k, v
        else:
            att, full_k, full_v = comm.attention(q, k, v, start)
        g, _, n, _ = att.shape
        x = x + self.proj(att.transpose(1, 2).reshape(g, n, -1))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x, (full_k, full_v)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_start: int):
    """Exact causal attention of queries ``[G, H, n, dh]`` at global positions ``q_start ..``
    over keys/values ``[G, H, m, dh]`` at positions ``0 .. m`` (a key is visible iff its
    position <= the query's); ``q_start + n <= m``."""
    V.check_tensor(q, "q", ndim=4, floating=True)
    V.check_tensor(k, "k", ndim=4, floating=True, shape=(*q.shape[:2], None, q.shape[3]))
    V.check_tensor(v, "v", ndim=4, floating=True, shape=tuple(k.shape))
    V.check_int(q_start, "q_start", low=0, high=k.shape[2] - q.shape[2])
    return _causal_attention(q, k, v, q_start)


def _causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_start: int):
    n, m = q.shape[2], k.shape[2]
    q_pos = torch.arange(q_start, q_start + n).unsqueeze(1)
    visible = torch.arange(m).unsqueeze(0) <= q_pos
    return F.scaled_dot_product_attention(q, k, v, attn_mask=visible)


class TinyVLM(nn.Module):
    """A tiny VLM policy. ``forward(patches, ids)`` gives next-token logits for a single
    sequence of ``G`` rows: ``patches`` float ``[P, patch_dim]`` (shared by the rows; ``P`` may
    be 0) and ``ids`` int64 ``[G, T]``. The logits at position ``t`` predict token ``t + 1``."""

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        vocab_size: int = VOCAB_SIZE,
        patch_dim: int = PATCH_DIM,
        max_len: int = 2048,
        mlp_ratio: int = 4,
        seed: int = 0,
    ):
        super().__init__()
        d_model = V.check_int(d_model, "d_model", low=4)
        n_layers = V.check_int(n_layers, "n_layers", low=1)
        n_heads = V.check_int(n_heads, "n_heads", low=1)
        if d_model % n_heads:
            raise ValueError(f"n_heads ({n_heads}) must divide d_model ({d_model})")
        self.vocab_size = V.check_int(vocab_size, "vocab_size", low=4)
        self.patch_dim = V.check_int(patch_dim, "patch_dim", low=1)
        self.max_len = V.check_int(max_len, "max_len", low=2)
        mlp_ratio = V.check_int(mlp_ratio, "mlp_ratio", low=1)
        V.check_int(seed, "seed", low=0)
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        self.patch_embed = nn.Linear(self.patch_dim, d_model)
        self.tok_embed = nn.Embedding(self.vocab_size, d_model)
        self.pos_embed = nn.Embedding(self.max_len, d_model)
        nn.init.normal_(self.pos_embed.weight, std=0.02)
        nn.init.normal_(self.tok_embed.weight, std=0.02)
        self.blocks = nn.ModuleList(
            [_Block(d_model, n_heads, mlp_ratio * d_model) for _ in range(n_layers)]
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, self.vocab_size)
        torch.random.set_rng_state(gen_state)

    # ------------------------------------------------------------------ inputs
    def check_inputs(self, patches, ids) -> tuple[torch.Tensor, torch.Tensor]:
        patches = V.check_tensor(patches, "patches", ndim=2, floating=True, nonempty=False)
        if patches.shape[1] != self.patch_dim:
            raise ValueError(f"patches must have {self.patch_dim} columns, got {patches.shape[1]}")
        ids = V.check_tensor(ids, "ids", ndim=2, integer=True, nonempty=False)
        if ids.shape[0] < 1:
            raise ValueError("ids must have at least one row")
        if patches.shape[0] + ids.shape[1] == 0:
            raise ValueError("the sequence has no tokens (no patches and no ids)")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise ValueError(f"ids must lie in [0, {self.vocab_size})")
        if patches.shape[0] + ids.shape[1] > self.max_len:
            raise ValueError(
                f"the sequence has {patches.shape[0] + ids.shape[1]} tokens, above max_len "
                f"{self.max_len}"
            )
        return patches, ids

    def embed(self, patches: torch.Tensor, ids: torch.Tensor, start: int = 0, end=None):
        """Input embeddings of positions ``start .. end`` of the sequence (``[G, n, d]``);
        only the patches/ids inside that window are embedded."""
        n_p = patches.shape[0]
        total = n_p + ids.shape[1]
        end = total if end is None else end
        parts = []
        if start < n_p:
            pe = self.patch_embed(patches[start : min(end, n_p)])
            parts.append(pe.unsqueeze(0).expand(ids.shape[0], -1, -1))
        if end > n_p:
            parts.append(self.tok_embed(ids[:, max(start, n_p) - n_p : end - n_p]))
        x = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
        return x + self.pos_embed(torch.arange(start, end))

    # ------------------------------------------------------------------ forward
    def forward_chunk(self, patches, ids, start: int, end: int, comm=None):
        """Logits ``[G, end - start, vocab]`` of the chunk ``[start, end)`` and the per-layer
        full-prefix K/V. With ``comm`` the chunk is one of a sequence-parallel group's."""
        x = self.embed(patches, ids, start, end)
        kv = []
        for block in self.blocks:
            x, layer_kv = block(x, start, comm)
            kv.append(layer_kv)
        return self.head(self.ln_f(x)), kv

    def forward(self, patches: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        patches, ids = self.check_inputs(patches, ids)
        return self.forward_chunk(patches, ids, 0, patches.shape[0] + ids.shape[1])[0]

    def decode_step(self, tokens: torch.Tensor, position: int, cache):
        """One decoding step: ``tokens`` ``[G]`` at ``position`` with the per-layer ``cache``
        (list of ``(K, V)``). Returns logits ``[G, vocab]`` and the extended cache."""
        x = self.tok_embed(tokens[:, None]) + self.pos_embed.weight[position]
        new_cache = []
        for block, layer_cache in zip(self.blocks, cache):
            x, layer_kv = block(x, position, cache=layer_cache)
            new_cache.append(layer_kv)
        return self.head(self.ln_f(x))[:, -1], new_cache

    # ------------------------------------------------------------------ counts
    def flops_per_row(self, length: int) -> float:
        """Forward FLOPs of one row of ``length`` tokens (dense masked attention, as here):
        ``2 * params_per_token * L + 4 * d * L^2`` per layer for scores and values."""
        d, L = self.d_model, int(length)
        per_layer_linear = 2 * L * (3 * d * d + d * d + 2 * d * self.blocks[0].fc1.out_features)
        per_layer_attn = 4 * d * L * L
        head = 2 * L * d * self.vocab_size
        return float(self.n_layers * (per_layer_linear + per_layer_attn) + head)


def token_logprobs_chunk(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of ``targets`` ``[G, n]`` under ``logits`` ``[G, n, V]``."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[..., None]).squeeze(-1)


@torch.no_grad()
def sample_tokens(logits: torch.Tensor, temperature: float, generator: torch.Generator):
    """Temperature sampling of one token per row (``temperature == 0`` is greedy)."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def full_sequence_ids(prompt_ids: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """``[G, T_prompt + T_resp]`` token ids: the prompt repeated over the rows, then each
    row's response (padded)."""
    return torch.cat([prompt_ids.unsqueeze(0).expand(responses.shape[0], -1), responses], dim=1)


def n_params(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def attention_pairs(length: int) -> int:
    """Query-key pairs a dense masked attention over ``length`` tokens scores."""
    return int(length) * int(length)
