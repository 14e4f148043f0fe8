"""SEKA steering (paper Eq. 6): edit the highlighted tokens' pre-RoPE keys before attention.

At every selected layer and steered KV head, a highlighted token's key becomes
``k' = k + g+ P+ k`` or, with the negative projection, ``k' = k + (g+ P+ k + g- P- k) / 2``
(in phi-space when a feature map is set). ``P-`` is dropped when ``g- = 0``, since keeping it
would silently halve the positive term. Because the edit happens on the key projection's
output, the attention kernel itself is untouched (works with SDPA and FlashAttention) and the
KV cache holds the edited keys, so decoding needs no further work.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.seka.features import phi, phi_inv
from iclr26.llm.seka.hooks import check_steer_mask, key_edit_hooks
from iclr26.llm.seka.markers import (
    _check_markers,
    check_tokenizer,
    encode_with_markers,
    mask_from_spans,
    strip_markers,
)
from iclr26.llm.seka.projections import SEKAProjections, left_padded, position_ids
from iclr26.llm.seka.sites import attention_sites, kv_geometry, model_device


def check_projections(proj, model, name: str = "projections") -> SEKAProjections:
    if not isinstance(proj, SEKAProjections):
        raise TypeError(f"{name} must be SEKAProjections, got {type(proj).__name__}")
    sites = attention_sites(model)
    g = kv_geometry(model)
    if proj.n_kv_heads != g.n_kv_heads or proj.head_dim != g.head_dim:
        raise ValueError(
            f"{name} are for {proj.n_kv_heads} KV heads of size {proj.head_dim}; the model has "
            f"{g.n_kv_heads} of size {g.head_dim}"
        )
    bad = [ell for ell in proj.layers if not 0 <= ell < len(sites)]
    if bad:
        raise ValueError(f"{name} name layers {bad} the model does not have")
    for field in ("P_pos_raw", "D"):
        V.check_tensor(getattr(proj, field), f"{name}.{field}")
    return proj


class _Highlighter(abc.ABC):
    """What SEKA, AdaSEKA and PASTA share: marker handling, generation and scoring."""

    def __init__(self, model, tok, marker):
        attention_sites(model)  # refuse families whose attention cannot be hooked
        check_tokenizer(tok)
        self.model = model
        self.tok = tok
        self.marker = _check_markers(marker)

    def encode(self, texts, require_highlight: bool = True):
        return encode_with_markers(
            self.tok, texts, self.marker, require_highlight=require_highlight
        )

    @abc.abstractmethod
    def highlight(self, input_ids, steer_mask, attention_mask=None, prompt_end=None):
        """A context manager under which the model's forward passes steer toward the span."""

    @torch.no_grad()
    def generate(self, prompts: str | Sequence[str], max_new_tokens: int = 16, **generate_kwargs):
        """Greedy (unless told otherwise) generation with the marked spans highlighted; returns
        the new text (a string for one prompt, a list for several)."""
        V.check_int(max_new_tokens, "max_new_tokens", low=1)
        batch = self.encode(prompts)
        device = model_device(self.model)
        ids = batch.input_ids.to(device)
        attention = batch.attention_mask.to(device)
        generate_kwargs.setdefault("do_sample", False)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        generate_kwargs.setdefault("pad_token_id", pad)
        with self.highlight(ids, batch.steer_mask, attention):
            out = self.model.generate(
                input_ids=ids,
                attention_mask=attention,
                max_new_tokens=max_new_tokens,
                **generate_kwargs,
            )
        texts = [self.tok.decode(row[ids.shape[1] :], skip_special_tokens=True) for row in out]
        return texts[0] if isinstance(prompts, str) else texts

    def score(self, prompts: Sequence[str], continuations: Sequence[str], batch_size: int = 64):
        """Teacher-forced log-probability (summed over tokens) of each continuation after its
        marked prompt, with the highlight applied to the prompt."""
        return continuation_logprobs(
            self.model,
            self.tok,
            prompts,
            continuations,
            method=self,
            marker=self.marker,
            batch_size=batch_size,
        )


class SEKA(_Highlighter):
    """Spectral key editing on a Hugging Face causal LM (Llama, Mistral, Qwen2/3, Gemma...).

    ``SEKA(model, tok, projections, gain_pos=0.8, gain_neg=0.2)``; use :meth:`generate`,
    :meth:`score`, or ``with steer.highlight(input_ids, steer_mask): model(input_ids)``."""

    def __init__(
        self,
        model,
        tok,
        projections: SEKAProjections,
        gain_pos: float = 0.8,
        gain_neg: float = 0.2,
        marker=("**", "**"),
    ):
        super().__init__(model, tok, marker)
        self.projections = check_projections(projections, model)
        self.gain_pos = V.check_scalar(gain_pos, "gain_pos", low=0.0)
        self.gain_neg = V.check_scalar(gain_neg, "gain_neg", low=0.0)
        self._edits = self._compile()

    def _compile(self) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """Per layer: the steered heads and their edit matrices M (k' = k + M k)."""
        proj = self.projections
        use_neg = proj.P_neg_raw is not None and self.gain_neg != 0.0
        edits = {}
        for li, ell in enumerate(proj.layers):
            heads = proj.applied_mask[li].nonzero(as_tuple=True)[0]
            if len(heads) == 0 or self.gain_pos == 0.0 and not use_neg:
                continue
            M = self.gain_pos * proj.P_pos_raw[li, heads].float()
            if use_neg:
                M = (M + self.gain_neg * proj.P_neg_raw[li, heads].float()) / 2
            if not bool(M.abs().sum() > 0):
                continue
            edits[ell] = (heads, M)
        return edits

    @property
    def steered_layers(self) -> list[int]:
        return sorted(self._edits)

    def extra_flops(self, n_highlighted: int) -> int:
        """Load-free count: multiply-adds of the key edit for ``n_highlighted`` tokens."""
        d = self.projections.head_dim
        return int(2 * n_highlighted * d * d * sum(len(h) for h, _ in self._edits.values()))

    def _edit(self, layer: int, keys: torch.Tensor, _rows: torch.Tensor) -> torch.Tensor:
        heads, M = self._edits[layer]
        M = M.to(keys.device)
        sub = keys[:, heads]
        feat = phi(sub, self.projections.feature)
        moved = feat + torch.einsum("nhd,hde->nhe", feat, M)  # M symmetric: M k == k M
        keys = keys.clone()
        keys[:, heads] = phi_inv(moved, self.projections.feature, sub)
        return keys

    @contextmanager
    def highlight(self, input_ids, steer_mask, attention_mask=None, prompt_end=None):
        """Steer every forward call inside the block whose input is the highlighted prompt
        (prefill); hooks are removed on exit, also on exceptions."""
        mask = check_steer_mask(steer_mask, input_ids)
        if not self._edits or not bool(mask.any()):
            yield
            return
        with key_edit_hooks(self.model, mask, self.steered_layers, self._edit):
            yield


def _keeps_logits(model) -> bool:
    import inspect

    return "logits_to_keep" in inspect.signature(model.forward).parameters


@torch.no_grad()
def continuation_logprobs(
    model,
    tok,
    prompts: Sequence[str],
    continuations: Sequence[str],
    method=None,
    marker=("**", "**"),
    batch_size: int = 64,
) -> np.ndarray:
    """Summed teacher-forced log-probabilities of ``continuations[i]`` after ``prompts[i]``.

    Markers in the prompts are stripped; with ``method`` (SEKA, AdaSEKA, PASTA) the marked
    tokens are highlighted during the forward pass, without it the model is plain. The
    continuation tokens are never highlighted."""
    check_tokenizer(tok)
    if isinstance(prompts, str) or isinstance(continuations, str):
        raise TypeError("prompts and continuations must be lists of strings")
    V.check_same_length(prompts=prompts, continuations=continuations)
    if len(prompts) == 0:
        raise ValueError("prompts is empty")
    V.check_int(batch_size, "batch_size", low=1)
    device = model_device(model)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    rows, marks, cont_len = [], [], []
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        if not isinstance(c, str) or not c:
            raise ValueError(f"continuations[{i}] must be a non-empty string")
        plain, spans = strip_markers(p, marker)
        enc = tok(plain, return_offsets_mapping=True, add_special_tokens=False)
        m = mask_from_spans(plain, enc["offset_mapping"], spans)
        c_ids = tok(c, add_special_tokens=False)["input_ids"]
        if not enc["input_ids"] or not c_ids:
            raise ValueError(f"prompts[{i}] or continuations[{i}] tokenises to nothing")
        rows.append(list(enc["input_ids"]) + list(c_ids))
        marks.append(m + [False] * len(c_ids))
        cont_len.append(len(c_ids))
    scores = np.zeros(len(rows))
    order = np.argsort([len(r) for r in rows])  # similar lengths together: less padding
    for start in range(0, len(rows), batch_size):
        chunk = order[start : start + batch_size]
        ids, attention = left_padded([rows[i] for i in chunk], pad)
        width = ids.shape[1]
        steer = torch.zeros_like(ids, dtype=torch.bool)
        for r, i in enumerate(chunk):
            steer[r, width - len(marks[i]) :] = torch.tensor(marks[i])
        prompt_end = torch.tensor([width - cont_len[i] - 1 for i in chunk])
        ids_d, att_d = ids.to(device), attention.to(device)
        keep = max(cont_len[i] for i in chunk) + 1  # only the continuation needs logits
        kwargs = dict(
            input_ids=ids_d,
            attention_mask=att_d,
            position_ids=position_ids(attention).to(device),
            use_cache=False,
        )
        if _keeps_logits(model):
            kwargs["logits_to_keep"] = keep
        if method is None:
            logits = model(**kwargs).logits
        else:
            with method.highlight(ids_d, steer, att_d, prompt_end=prompt_end):
                logits = model(**kwargs).logits
        logits = logits[:, -keep:]  # positions width - keep .. width - 1
        logp = torch.log_softmax(logits.float(), dim=-1)
        for r, i in enumerate(chunk):
            n = cont_len[i]
            target = ids_d[r, width - n :]
            # the token at column c is predicted at column c - 1, i.e. local index c - 1 - (width - keep)
            local = torch.arange(width - n, width, device=logp.device) - 1 - (width - keep)
            scores[i] = float(logp[r, local, target].sum())
    if not np.isfinite(scores).all():
        raise ValueError("model produced non-finite log-probabilities")
    return scores
