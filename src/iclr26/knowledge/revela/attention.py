"""Revela's retriever similarity (paper §3.3) and in-batch attention (§3.2, Eqs. 3-7; the
V-normalisation of App. B.5, Eqs. 8-9) on the Hugging Face Llama module layout.

A batch of B chunks runs through the LM twice. Pass 1 is the model's ordinary forward with a KV
cache: the e stream, whose cached keys and values K^e_j, V^e_j (RoPE applied) every chunk j
offers to the others. Pass 2 runs the same model with an attention function registered in the
transformers attention registry: chunk i's in-batch stream h_i attends causally to itself
(s_i) and fully to every other chunk's cached e stream (b_ij), and the cross parts are mixed
with the retriever's similarities, h_i = s_i + sum_{j != i} Sim(D_i, D_j) b_ij. The next-token
loss is read from the h stream, so its gradient reaches the retriever only through Sim.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclr26 import validation as V

__all__ = [
    "retriever_similarity",
    "in_batch_attention",
    "InBatchAttentionLM",
    "ATTENTION_NAME",
]

ATTENTION_NAME = "revela_in_batch"


def retriever_similarity(
    query_emb: torch.Tensor, key_emb: torch.Tensor | None = None, tau: float = 1e-4
) -> torch.Tensor:
    """Sim(D_i, D_j) = exp(S_ij / tau) / sum_{k != i} exp(S_ik / tau), S = cosine similarity.

    ``query_emb`` (B, d) embeds each chunk as a query and ``key_emb`` (B, d) as a key (``None``:
    the same embeddings, the paper's code setting). The diagonal is exactly 0 and every row sums
    to 1; with B = 1 there is no other chunk and the result is the (1, 1) zero matrix."""
    query_emb = V.check_tensor(query_emb, "query_emb", ndim=2, floating=True)
    if key_emb is None:
        key_emb = query_emb
    key_emb = V.check_tensor(key_emb, "key_emb", ndim=2, floating=True, shape=query_emb.shape)
    tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
    b = query_emb.shape[0]
    if b == 1:
        return torch.zeros(1, 1, dtype=query_emb.dtype, device=query_emb.device)
    cos = F.normalize(query_emb, dim=-1) @ F.normalize(key_emb, dim=-1).T
    eye = torch.eye(b, dtype=torch.bool, device=cos.device)
    logits = (cos / tau).masked_fill(eye, float("-inf"))
    return torch.softmax(logits, dim=-1).masked_fill(eye, 0.0)


def _repeat_kv(x: torch.Tensor, heads: int) -> torch.Tensor:
    groups = heads // x.shape[1]
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def in_batch_attention(
    query: torch.Tensor,
    key_local: torch.Tensor,
    value_local: torch.Tensor,
    key_cross: torch.Tensor,
    value_cross: torch.Tensor,
    sim: torch.Tensor,
    key_mask: torch.Tensor | None = None,
    *,
    scaling: float | None = None,
    v_norm: bool = False,
    eps: float = 1e-6,
    pair_block: int = 4,
) -> torch.Tensor:
    """One layer's in-batch attention output h = s + sum_j Sim_ij b~_ij, shape (B, H, L, D).

    ``query`` (B, H, L, D) and ``key_local``/``value_local`` (B, H_kv, L, D) come from the h
    stream; ``key_cross``/``value_cross`` (B, H_kv, L, D) are the cached e stream. s_i is
    causal attention of chunk i's queries over its own h-stream keys (Eq. 4); b_ij is full
    attention over chunk j's e-stream keys with j's padding masked (Eq. 5); with ``v_norm``,
    b~_ij = b_ij / (N_ij + eps) where N_ij is the same attention applied to the value norms
    ||V^e_j|| (Eqs. 8-9). ``key_mask`` (B, L) is True at real tokens. Pairs are computed
    ``pair_block`` query chunks at a time through ``scaled_dot_product_attention`` so that the
    B x B x H x L x L scores are never materialised at once."""
    query = V.check_tensor(query, "query", ndim=4, floating=True)
    b, heads, length, dim = query.shape
    for name, t in (
        ("key_local", key_local),
        ("value_local", value_local),
        ("key_cross", key_cross),
        ("value_cross", value_cross),
    ):
        V.check_tensor(t, name, ndim=4, floating=True, shape=(b, None, length, dim))
        if heads % t.shape[1]:
            raise ValueError(f"{name}: {t.shape[1]} KV heads do not divide {heads} query heads")
    sim = V.check_tensor(sim, "sim", ndim=2, floating=True, shape=(b, b), low=0.0)
    if key_mask is None:
        key_mask = torch.ones(b, length, dtype=torch.bool, device=query.device)
    key_mask = V.check_tensor(key_mask, "key_mask", ndim=2, shape=(b, length))
    key_mask = key_mask.to(torch.bool)
    if not bool(key_mask[:, 0].all()):
        raise ValueError("key_mask: every chunk needs a real first token (right padding)")
    scaling = dim**-0.5 if scaling is None else V.check_scalar(scaling, "scaling", low=0.0)
    eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
    pair_block = V.check_int(pair_block, "pair_block", low=1)

    k_loc, v_loc = _repeat_kv(key_local, heads), _repeat_kv(value_local, heads)
    k_x, v_x = _repeat_kv(key_cross, heads), _repeat_kv(value_cross, heads)
    causal = torch.ones(length, length, dtype=torch.bool, device=query.device).tril()
    local_mask = causal[None, None] & key_mask[:, None, None, :]
    local = F.scaled_dot_product_attention(query, k_loc, v_loc, attn_mask=local_mask, scale=scaling)
    if b == 1:
        return local
    if v_norm:  # an extra value column carries ||V_j|| so one pass also gives N_ij
        v_x = torch.cat([v_x, v_x.norm(dim=-1, keepdim=True)], dim=-1)
    cross_mask = key_mask[None, :, None, None, :]  # (1, B_j, 1, 1, L)
    parts = []
    for start in range(0, b, pair_block):
        stop = min(start + pair_block, b)
        n = stop - start
        q = query[start:stop, None].expand(n, b, heads, length, dim)
        k = k_x[None].expand(n, b, heads, length, dim)
        v = v_x[None].expand(n, b, *v_x.shape[1:])
        out = F.scaled_dot_product_attention(
            q.reshape(n * b, heads, length, dim),
            k.reshape(n * b, heads, length, dim),
            v.reshape(n * b, *v_x.shape[1:]),
            attn_mask=cross_mask.expand(n, b, 1, 1, length).reshape(n * b, 1, 1, length),
            scale=scaling,
        ).reshape(n, b, heads, length, -1)
        if v_norm:
            out = out[..., :dim] / (out[..., dim:] + eps)
        parts.append(torch.einsum("ij,ijhtd->ihtd", sim[start:stop].to(out.dtype), out))
    return local + torch.cat(parts, dim=0)


# ---------------------------------------------------------------- the HF integration


@dataclass
class _PassState:
    sim: torch.Tensor
    key_mask: torch.Tensor
    cache: object
    v_norm: bool
    eps: float
    pair_block: int


_ACTIVE: contextvars.ContextVar[_PassState | None] = contextvars.ContextVar(
    "revela_in_batch_state", default=None
)


def _cached_kv(cache, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return layers[layer].keys, layers[layer].values
    return cache.key_cache[layer], cache.value_cache[layer]  # transformers < 4.56


def _in_batch_attention_function(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """The attention function registered as ``"revela_in_batch"``: HF passes the h stream's
    rotated query/key/value; the e stream's cached keys/values come from the active pass."""
    state = _ACTIVE.get()
    if state is None:
        raise RuntimeError(
            "the 'revela_in_batch' attention runs only inside InBatchAttentionLM.forward"
        )
    k_e, v_e = _cached_kv(state.cache, module.layer_idx)
    out = in_batch_attention(
        query,
        key,
        value,
        k_e,
        v_e,
        state.sim,
        state.key_mask,
        scaling=scaling,
        v_norm=state.v_norm,
        eps=state.eps,
        pair_block=state.pair_block,
    )
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, _in_batch_attention_function)


_register()


def _ntp_loss(logits: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token NLL over real target tokens (padding targets ignored)."""
    targets = input_ids[:, 1:].masked_fill(~mask[:, 1:], -100)
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
        targets.reshape(-1),
        ignore_index=-100,
    )


class InBatchAttentionLM(torch.nn.Module):
    """Wrap a Hugging Face causal LM on the Llama layout with Revela's in-batch attention.

    ``forward(input_ids, attention_mask, sim)`` runs pass 1 (the e stream, the model's own
    attention, KV cache kept with its autograd graph) and pass 2 (the h stream through the
    registered ``"revela_in_batch"`` attention) and returns a dict with ``loss`` (next-token
    loss from the h stream, plus the e-stream loss with ``dual_loss``), ``loss_h``,
    ``loss_e`` and ``logits`` (h stream). Right padding is required."""

    def __init__(
        self,
        model: torch.nn.Module,
        v_norm: bool = False,
        eps: float = 1e-6,
        dual_loss: bool = False,
        pair_block: int = 4,
    ):
        super().__init__()
        V.check_module_attrs(model, "model", ("config", "forward"))
        config = model.config
        V.check_module_attrs(config, "model.config", ("num_hidden_layers", "_attn_implementation"))
        self.model = model
        self.v_norm = V.check_bool(v_norm, "v_norm")
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
        self.dual_loss = V.check_bool(dual_loss, "dual_loss")
        self.pair_block = V.check_int(pair_block, "pair_block", low=1)

    @property
    def config(self):
        return self.model.config

    def _check_inputs(self, input_ids, attention_mask, sim):
        input_ids = V.check_tensor(input_ids, "input_ids", ndim=2, integer=True, low=0)
        if input_ids.max().item() >= self.config.vocab_size:
            raise ValueError(
                f"input_ids: ids must be < vocab_size {self.config.vocab_size}, "
                f"got {input_ids.max().item()}"
            )
        b, length = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
        attention_mask = V.check_tensor(
            attention_mask, "attention_mask", shape=(b, length), low=0, high=1
        ).to(torch.bool)
        if not bool(attention_mask[:, 0].all()):
            raise ValueError("attention_mask: every chunk needs a real first token (right padding)")
        if (attention_mask[:, 1:] & ~attention_mask[:, :-1]).any():
            raise ValueError("attention_mask: padding must be on the right")
        sim = V.check_tensor(sim, "sim", ndim=2, floating=True, shape=(b, b), low=0.0)
        return input_ids, attention_mask, sim

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        sim: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        from iclr26.models import hf_compat

        if sim is None:
            raise TypeError("sim: the (B, B) retriever similarity is required")
        input_ids, attention_mask, sim = self._check_inputs(input_ids, attention_mask, sim)
        cache = hf_compat.empty_cache(self.config)
        out_e = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask.long(),
            use_cache=True,
            **{hf_compat.cache_kwarg(self.model): cache},
        )
        filled = getattr(out_e, "cache", None) or getattr(out_e, "past_key_values", None)
        state = _PassState(
            sim=sim,
            key_mask=attention_mask,
            cache=filled if filled is not None else cache,
            v_norm=self.v_norm,
            eps=self.eps,
            pair_block=self.pair_block,
        )
        previous = self.config._attn_implementation
        token = _ACTIVE.set(state)
        try:
            self.config._attn_implementation = ATTENTION_NAME
            out_h = self.model(
                input_ids=input_ids, attention_mask=attention_mask.long(), use_cache=False
            )
        finally:
            self.config._attn_implementation = previous
            _ACTIVE.reset(token)
        loss_h = _ntp_loss(out_h.logits, input_ids, attention_mask)
        loss_e = _ntp_loss(out_e.logits, input_ids, attention_mask)
        loss = loss_h + loss_e if self.dual_loss else loss_h
        return {
            "loss": loss,
            "loss_h": loss_h,
            "loss_e": loss_e,
            "logits": out_h.logits,
            "logits_e": out_e.logits,
        }
