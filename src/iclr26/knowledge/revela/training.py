"""Training loops: Revela's joint retriever + LM training (paper §3, Eq. 7) and the two
baselines the spec builds, Contriever-style contrastive learning (App. C.1) and REPLUG-style
distillation from a frozen LM (App. B.3), all on the same batches of raw chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.knowledge.revela.attention import InBatchAttentionLM, retriever_similarity
from iclr26.knowledge.revela.retriever import PASSAGE_PREFIX, QUERY_PREFIX, RevelaRetriever

__all__ = ["RevelaTrainer", "ContrieverTrainer", "REPLUGTrainer", "pseudo_pairs"]


def _check_batches(batches, batch_size: int | None = None) -> list[list[str]]:
    if isinstance(batches, str) or not isinstance(batches, Sequence):
        raise TypeError("batches: expected a list of batches (lists of chunk strings)")
    if not batches:
        raise ValueError("batches is empty: need at least one batch")
    out = []
    for i, b in enumerate(batches):
        if isinstance(b, str) or not isinstance(b, Sequence):
            raise TypeError(f"batches[{i}]: expected a list of chunk strings")
        if len(b) < 2:
            raise ValueError(f"batches[{i}]: a batch needs at least 2 chunks, got {len(b)}")
        if batch_size is not None and len(b) != batch_size:
            raise ValueError(f"batches[{i}]: expected {batch_size} chunks, got {len(b)}")
        for c in b:
            if not isinstance(c, str) or not c.strip():
                raise ValueError(f"batches[{i}]: every chunk must be a non-empty string")
        out.append(list(b))
    return out


def _warmup_decay(optimizer, warmup: int, total: int):
    """Linear warm-up to the peak lr, then linear decay to 0 (DeepSpeed's WarmupDecayLR)."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(warmup, 1)
        return max(0.0, (total - step) / max(total - warmup, 1))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class _Loop:
    """Shared loop: AdamW, warm-up/decay schedule, gradient clipping, seeded batch order."""

    def _init_loop(self, lr, warmup_steps, weight_decay, grad_clip, seed):
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.warmup_steps = V.check_int(warmup_steps, "warmup_steps", low=0)
        self.weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
        self.grad_clip = V.check_scalar(grad_clip, "grad_clip", low=0.0, low_open=True)
        self.seed = V.check_int(seed, "seed", low=0)
        self.history: list[float] = []

    def _params(self) -> list[torch.nn.Parameter]:
        raise NotImplementedError

    def step(self, batch: list[str]) -> torch.Tensor:  # pragma: no cover - overridden
        raise NotImplementedError

    def fit(
        self,
        batches,
        steps: int | None = None,
        progress: Callable[[int, int, float], None] | None = None,
    ):
        """Train for ``steps`` optimiser steps (default: one pass over ``batches``, cycling
        if ``steps`` is larger); returns ``self`` with ``history`` holding each step's loss."""
        batches = self._check(batches)
        steps = V.check_int(len(batches) if steps is None else steps, "steps", low=1)
        params = [p for p in self._params() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        sched = _warmup_decay(opt, min(self.warmup_steps, steps), steps)
        self._rng = np.random.default_rng(self.seed)
        order = self._rng.permutation(len(batches))
        self._train_mode(True)
        for t in range(steps):
            batch = batches[order[t % len(batches)]]
            loss = self.step(batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss became {loss.item()} at step {t}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, self.grad_clip)
            opt.step()
            sched.step()
            self.history.append(float(loss.detach()))
            if progress is not None:
                progress(t + 1, steps, self.history[-1])
        self._train_mode(False)
        return self

    def _check(self, batches):
        return _check_batches(batches)

    def _train_mode(self, on: bool) -> None:
        self.retriever.train(on)


def _lm_ids(tokenizer, texts: list[str], max_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = [tokenizer.encode(t, add_special_tokens=False)[:max_tokens] or [0] for t in texts]
    length = max(len(x) for x in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    arr = torch.full((len(ids), length), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), length), dtype=torch.bool)
    for k, x in enumerate(ids):
        arr[k, : len(x)] = torch.tensor(x)
        mask[k, : len(x)] = True
    return arr, mask


class RevelaTrainer(_Loop):
    """Joint training of the retriever ``retriever`` and the LM ``lm`` by next-token prediction
    through in-batch attention (paper Eq. 7).

    Each step embeds the B chunks with the retriever (``"Passage: "`` prefix, both sides; with
    ``query_half`` the first half of a chunk is its query embedding, the REPLUG-style Wikipedia
    setting), turns them into Sim with temperature ``tau``, and takes the h-stream NTP loss of
    :class:`InBatchAttentionLM`. ``freeze_lm`` trains only the retriever. ``lm`` may be an
    :class:`InBatchAttentionLM` or a bare HF causal LM (wrapped with ``v_norm``/``dual_loss``)."""

    def __init__(
        self,
        retriever: RevelaRetriever,
        lm,
        tau: float = 1e-4,
        v_norm: bool = False,
        lr: float = 1e-4,
        batch_size: int = 16,
        dual_loss: bool = False,
        freeze_lm: bool = False,
        warmup_steps: int = 100,
        query_half: bool = False,
        max_tokens: int = 160,
        lm_tokenizer=None,
        weight_decay: float = 0.0,
        grad_clip: float = 1.0,
        seed: int = 0,
    ):
        if not isinstance(retriever, RevelaRetriever):
            raise TypeError(
                f"retriever: expected a RevelaRetriever, got {type(retriever).__name__}"
            )
        if not isinstance(lm, InBatchAttentionLM):
            lm = InBatchAttentionLM(lm, v_norm=v_norm, dual_loss=dual_loss)
        else:
            lm.v_norm = V.check_bool(v_norm, "v_norm")
            lm.dual_loss = V.check_bool(dual_loss, "dual_loss")
        self.retriever, self.lm = retriever, lm
        self.tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        self.batch_size = V.check_int(batch_size, "batch_size", low=2)
        self.freeze_lm = V.check_bool(freeze_lm, "freeze_lm")
        self.query_half = V.check_bool(query_half, "query_half")
        self.max_tokens = V.check_int(max_tokens, "max_tokens", low=2)
        self.lm_tokenizer = retriever.tokenizer if lm_tokenizer is None else lm_tokenizer
        V.check_module_attrs(self.lm_tokenizer, "lm_tokenizer", ("encode",))
        self._init_loop(lr, warmup_steps, weight_decay, grad_clip, seed)
        for p in self.lm.parameters():
            p.requires_grad_(not self.freeze_lm)

    def _params(self):
        params = list(self.retriever.parameters())
        if not self.freeze_lm:
            params += list(self.lm.parameters())
        return params

    def _check(self, batches):
        return _check_batches(batches, self.batch_size)

    def _train_mode(self, on: bool) -> None:
        self.retriever.train(on)
        self.lm.train(on and not self.freeze_lm)

    def similarity(self, batch: list[str]) -> torch.Tensor:
        """Sim (B, B) of one batch, differentiable in the retriever."""
        keys = self.retriever.embed(batch, prefix=PASSAGE_PREFIX)
        if not self.query_half:
            return retriever_similarity(keys, tau=self.tau)
        halves = [c[: max(1, len(c) // 2)] for c in batch]
        queries = self.retriever.embed(halves, prefix=PASSAGE_PREFIX)
        return retriever_similarity(queries, keys, tau=self.tau)

    def step(self, batch: list[str]) -> torch.Tensor:
        sim = self.similarity(batch)
        ids, mask = _lm_ids(self.lm_tokenizer, batch, self.max_tokens)
        device = next(self.lm.parameters()).device
        out = self.lm(ids.to(device), mask.to(device), sim.to(device))
        return out["loss"]


def pseudo_pairs(
    chunks: Sequence[str],
    tokenizer,
    rng: np.random.Generator,
    ict_probability: float = 0.5,
    crop_ratio: tuple[float, float] = (0.1, 0.5),
) -> tuple[list[str], list[str]]:
    """Contriever's positive pairs from raw chunks: with probability ``ict_probability`` the
    inverse cloze task (one random non-blank line vs the chunk without it), else independent
    cropping (two random token spans, each ``crop_ratio`` of the chunk's length)."""
    from iclr26.knowledge.revela.data import _check_texts

    chunks = _check_texts(chunks, "chunks")
    V.check_module_attrs(tokenizer, "tokenizer", ("encode", "decode"))
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy Generator, got {type(rng).__name__}")
    ict_probability = V.check_probability(ict_probability, "ict_probability")
    if not isinstance(crop_ratio, Sequence) or len(crop_ratio) != 2:
        raise TypeError("crop_ratio: expected a (low, high) pair")
    lo, hi = crop_ratio
    lo = V.check_scalar(lo, "crop_ratio", low=0.0, low_open=True, high=1.0)
    hi = V.check_scalar(hi, "crop_ratio", low=lo, high=1.0)
    queries, docs = [], []
    for chunk in chunks:
        lines = [k for k, line in enumerate(chunk.splitlines()) if line.strip()]
        if len(lines) >= 2 and rng.random() < ict_probability:
            drop = lines[rng.integers(len(lines))]
            all_lines = chunk.splitlines()
            queries.append(all_lines[drop].strip())
            docs.append("\n".join(x for k, x in enumerate(all_lines) if k != drop))
            continue
        ids = tokenizer.encode(chunk, add_special_tokens=False)
        spans = []
        for _ in range(2):
            n = max(1, int(round(len(ids) * rng.uniform(lo, hi))))
            start = int(rng.integers(0, max(1, len(ids) - n + 1)))
            spans.append(tokenizer.decode(ids[start : start + n]) or chunk)
        queries.append(spans[0])
        docs.append(spans[1])
    return queries, docs


class ContrieverTrainer(_Loop):
    """Contrastive training of ``retriever`` on pseudo-pairs of the same chunks (ICT and
    independent cropping), InfoNCE over in-batch negatives at temperature ``tau``."""

    def __init__(
        self,
        retriever: RevelaRetriever,
        tau: float = 0.05,
        lr: float = 1e-4,
        warmup_steps: int = 100,
        ict_probability: float = 0.5,
        crop_ratio: tuple[float, float] = (0.1, 0.5),
        weight_decay: float = 0.0,
        grad_clip: float = 1.0,
        seed: int = 0,
    ):
        if not isinstance(retriever, RevelaRetriever):
            raise TypeError(
                f"retriever: expected a RevelaRetriever, got {type(retriever).__name__}"
            )
        self.retriever = retriever
        self.tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        self.ict_probability = V.check_probability(ict_probability, "ict_probability")
        if not isinstance(crop_ratio, Sequence) or len(crop_ratio) != 2:
            raise TypeError("crop_ratio: expected a (low, high) pair")
        lo = V.check_scalar(crop_ratio[0], "crop_ratio", low=0.0, low_open=True, high=1.0)
        hi = V.check_scalar(crop_ratio[1], "crop_ratio", low=lo, high=1.0)
        self.crop_ratio = (lo, hi)
        self._init_loop(lr, warmup_steps, weight_decay, grad_clip, seed)

    def _params(self):
        return list(self.retriever.parameters())

    def step(self, batch: list[str]) -> torch.Tensor:
        queries, docs = pseudo_pairs(
            batch, self.retriever.tokenizer, self._rng, self.ict_probability, self.crop_ratio
        )
        q = self.retriever.embed(queries, prefix=QUERY_PREFIX)
        d = self.retriever.embed(docs, prefix=PASSAGE_PREFIX)
        logits = q @ d.T / self.tau
        return F.cross_entropy(logits, torch.arange(len(batch), device=logits.device))


class REPLUGTrainer(_Loop):
    """REPLUG-style retriever training from a frozen LM (App. B.3): the LM's preference
    P_LM(j | i) = softmax_j(-l_ij / tau_lm), l_ij the mean next-token NLL of chunk i with chunk j
    prepended, is distilled into the retriever's P_R(j | i) = softmax_j(s_ij / tau_r) by
    KL(P_LM || P_R); j ranges over the other chunks of the batch (B (B - 1) LM passes)."""

    def __init__(
        self,
        retriever: RevelaRetriever,
        lm,
        tau_r: float = 1e-3,
        tau_lm: float = 1e-3,
        lr: float = 5e-4,
        warmup_steps: int = 100,
        max_tokens: int = 160,
        lm_tokenizer=None,
        weight_decay: float = 0.0,
        grad_clip: float = 1.0,
        seed: int = 0,
    ):
        if not isinstance(retriever, RevelaRetriever):
            raise TypeError(
                f"retriever: expected a RevelaRetriever, got {type(retriever).__name__}"
            )
        if isinstance(lm, InBatchAttentionLM):
            lm = lm.model
        V.check_module_attrs(lm, "lm", ("config", "forward", "parameters"))
        self.tau_r = V.check_scalar(tau_r, "tau_r", low=0.0, low_open=True)
        self.tau_lm = V.check_scalar(tau_lm, "tau_lm", low=0.0, low_open=True)
        self.max_tokens = V.check_int(max_tokens, "max_tokens", low=2)
        self.lm_tokenizer = retriever.tokenizer if lm_tokenizer is None else lm_tokenizer
        V.check_module_attrs(self.lm_tokenizer, "lm_tokenizer", ("encode",))
        self._init_loop(lr, warmup_steps, weight_decay, grad_clip, seed)
        self.retriever, self.lm = retriever, lm
        for p in self.lm.parameters():  # the LM is frozen (App. B.3)
            p.requires_grad_(False)

    def _params(self):
        return list(self.retriever.parameters())

    @torch.no_grad()
    def lm_losses(self, batch: list[str]) -> torch.Tensor:
        """l_ij (B, B): mean NLL of chunk i's tokens after chunk j (diagonal: +inf)."""
        tok = self.lm_tokenizer
        ids = [tok.encode(t, add_special_tokens=False)[: self.max_tokens] or [0] for t in batch]
        b = len(ids)
        pairs = [(i, j) for i in range(b) for j in range(b) if i != j]
        seqs = [ids[j] + ids[i] for i, j in pairs]
        length = max(len(s) for s in seqs)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        arr = torch.full((len(seqs), length), pad, dtype=torch.long)
        target = torch.zeros((len(seqs), length), dtype=torch.bool)
        attn = torch.zeros((len(seqs), length), dtype=torch.long)
        for k, ((_i, j), s) in enumerate(zip(pairs, seqs)):
            arr[k, : len(s)] = torch.tensor(s)
            attn[k, : len(s)] = 1
            target[k, len(ids[j]) : len(s)] = True
        device = next(self.lm.parameters()).device
        self.lm.eval()
        losses = torch.empty(len(seqs))
        for start in range(0, len(seqs), 32):
            sl = slice(start, start + 32)
            logits = self.lm(input_ids=arr[sl].to(device), attention_mask=attn[sl].to(device))
            logits = logits.logits[:, :-1].float()
            nll = F.cross_entropy(
                logits.transpose(1, 2), arr[sl, 1:].to(device), reduction="none"
            ).cpu()
            m = target[sl, 1:].float()
            losses[sl] = (nll * m).sum(1) / m.sum(1).clamp_min(1.0)
        out = torch.full((b, b), float("inf"))
        for k, (i, j) in enumerate(pairs):
            out[i, j] = losses[k]
        return out

    def step(self, batch: list[str]) -> torch.Tensor:
        loss_ij = self.lm_losses(batch)
        eye = torch.eye(len(batch), dtype=torch.bool)
        p_lm = torch.softmax((-loss_ij / self.tau_lm).masked_fill(eye, float("-inf")), dim=-1)
        emb = self.retriever.embed(batch, prefix=PASSAGE_PREFIX)
        # a large finite mask keeps the diagonal's 0 * log-ratio term finite (and its gradient)
        s = (emb @ emb.T / self.tau_r).masked_fill(eye.to(emb.device), -1e9)
        log_p_r = torch.log_softmax(s, dim=-1)
        p_lm = p_lm.to(emb.device)
        kl = p_lm * (torch.log(p_lm.clamp_min(1e-30)) - log_p_r)
        return kl.sum(-1).mean()
