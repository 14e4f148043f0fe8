"""Z-NERD (§3.1): Orthogonal Semantic Decomposition and Multi-Scale TCQK attention.

OSD (§3.1.1) appends to each token embedding E_t the part of its change ΔE_t = E_t - E_{t-1}
that is orthogonal to E_{t-1}: v_sus = (ΔE·E_{t-1} / ‖E_{t-1}‖²) E_{t-1}, v_div = ΔE - v_sus,
F_t = [E_t ; v_div,t] (a "semantic turn" feature; v_div = 0 at the first token and next to
padding). Multi-Scale TCQK (§3.1.2) splits the attention heads into groups, convolves the
queries and keys of group g along the sequence with a 1-D kernel of width k_g (values are not
convolved), then runs scaled dot-product attention, so different heads look at different n-gram
lengths; output projection, dropout, residual and LayerNorm follow. A linear layer tags BIO
labels, decoded by argmax with BIO repair.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .data import ENTITY_TYPES, Document, check_documents
from .encoder import HashingEncoder, TokenEncoder, check_texts

__all__ = [
    "orthogonal_semantic_decomposition",
    "OrthogonalSemanticDecomposition",
    "MultiScaleTCQKAttention",
    "ZNERDNet",
    "ZNERDTagger",
    "StandardAttentionTagger",
    "bio_labels",
    "decode_bio",
    "span_f1",
]


def orthogonal_semantic_decomposition(
    embeddings: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-8
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(v_sus, v_div)`` of §3.1.1 for ``embeddings`` (B, T, d); ``mask`` (B, T) marks real
    tokens. Both are 0 at t = 0 and wherever t or t - 1 is padding."""
    V.check_tensor(embeddings, "embeddings", ndim=3, floating=True)
    eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
    prev = torch.zeros_like(embeddings)
    prev[:, 1:] = embeddings[:, :-1]
    valid = torch.ones(embeddings.shape[:2], dtype=torch.bool, device=embeddings.device)
    valid[:, 0] = False
    if mask is not None:
        V.check_tensor(mask, "mask", shape=embeddings.shape[:2])
        mask = mask.bool()
        valid[:, 1:] &= mask[:, 1:] & mask[:, :-1]
    delta = embeddings - prev
    coef = (delta * prev).sum(-1, keepdim=True) / (prev.pow(2).sum(-1, keepdim=True) + eps)
    v_sus = coef * prev
    v_div = delta - v_sus
    keep = valid.unsqueeze(-1).to(embeddings.dtype)
    return v_sus * keep, v_div * keep


class OrthogonalSemanticDecomposition(nn.Module):
    """``F = [E ; v_div]`` (B, T, 2d)."""

    def __init__(self, eps: float = 1e-8):
        super().__init__()
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _, v_div = orthogonal_semantic_decomposition(embeddings, mask, self.eps)
        return torch.cat([embeddings, v_div], dim=-1)


class MultiScaleTCQKAttention(nn.Module):
    """Self-attention whose head group g sees queries and keys convolved with width k_g.

    ``kernel_sizes=None`` gives standard multi-head attention (same projections, no
    convolution). Convolutions are separate for Q and K, shared by the heads of a group, and
    Dirac-initialised (so training starts from standard attention). The block returns
    ``LayerNorm(x + Dropout(W_o · heads))``."""

    def __init__(
        self,
        dim: int,
        heads: int = 8,
        kernel_sizes: tuple[int, ...] | None = (1, 3, 5, 7),
        proj_dim: int | None = None,
        dropout: float = 0.1,
    ):
        super().__init__()
        self.dim = V.check_int(dim, "dim", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        self.proj_dim = V.check_int(dim if proj_dim is None else proj_dim, "proj_dim", low=1)
        self.dropout_p = V.check_probability(dropout, "dropout", open_high=True)
        if self.proj_dim % self.heads:
            raise ValueError(f"proj_dim ({self.proj_dim}) must be divisible by heads ({heads})")
        self.head_dim = self.proj_dim // self.heads
        if kernel_sizes is not None:
            kernel_sizes = tuple(kernel_sizes)
            if not kernel_sizes:
                raise ValueError("kernel_sizes is empty: give at least one width or None")
            for k in kernel_sizes:
                k = V.check_int(k, "kernel_sizes", low=1)
                if k % 2 == 0:
                    raise ValueError(f"kernel_sizes must be odd (centred windows), got {k}")
            if self.heads % len(kernel_sizes):
                raise ValueError(
                    f"heads ({heads}) must be divisible by len(kernel_sizes) ({len(kernel_sizes)})"
                )
        self.kernel_sizes = kernel_sizes
        self.q = nn.Linear(dim, self.proj_dim)
        self.k = nn.Linear(dim, self.proj_dim)
        self.v = nn.Linear(dim, self.proj_dim)
        self.out = nn.Linear(self.proj_dim, dim)
        self.drop = nn.Dropout(self.dropout_p)
        self.norm = nn.LayerNorm(dim)
        if kernel_sizes is not None:

            def conv(k: int) -> nn.Conv1d:
                layer = nn.Conv1d(self.head_dim, self.head_dim, k, padding=k // 2, bias=False)
                nn.init.dirac_(layer.weight)
                return layer

            self.q_convs = nn.ModuleList(conv(k) for k in kernel_sizes)
            self.k_convs = nn.ModuleList(conv(k) for k in kernel_sizes)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)  # (B, H, T, hd)

    def _convolve(self, x: torch.Tensor, convs: nn.ModuleList) -> torch.Tensor:
        b, h, t, hd = x.shape
        per = h // len(convs)
        parts = []
        for g, conv in enumerate(convs):
            grp = x[:, g * per : (g + 1) * per].reshape(b * per, t, hd).transpose(1, 2)
            parts.append(conv(grp).transpose(1, 2).reshape(b, per, t, hd))
        return torch.cat(parts, dim=1)

    def queries_keys(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        """Per-head (convolved) queries and keys, (B, H, T, head_dim) each."""
        q, k = self._split(self.q(x)), self._split(self.k(x))
        if self.kernel_sizes is not None:
            if mask is not None:  # padding must not leak into real positions' windows
                keep = mask[:, None, :, None].to(q.dtype)
                q, k = q * keep, k * keep
            q, k = self._convolve(q, self.q_convs), self._convolve(k, self.k_convs)
        return q, k

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        V.check_tensor(x, "x", ndim=3, floating=True)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension {self.dim}, got {x.shape[-1]}")
        if mask is not None:
            V.check_tensor(mask, "mask", shape=x.shape[:2])
            mask = mask.bool()
        q, k = self.queries_keys(x, mask)
        v = self._split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        attn = self.drop(torch.softmax(scores, dim=-1))
        heads = (attn @ v).transpose(1, 2).reshape(x.shape[0], x.shape[1], self.proj_dim)
        return self.norm(x + self.drop(self.out(heads)))


class ZNERDNet(nn.Module):
    """Token tagger over frozen encoder features (B, T, d).

    ``input_mode``: ``"osd"`` -> [E ; v_div] (Z-NERD), ``"zeros"`` -> [E ; 0] (w/o OSD, same
    shapes), ``"linear"`` -> a learned d -> 2d projection (the standard tagger: its parameters
    stand in for the convolutions so the counts match). ``use_tcqk=False`` -> standard MHA."""

    def __init__(
        self,
        in_dim: int,
        n_labels: int,
        *,
        input_mode: str = "osd",
        use_tcqk: bool = True,
        heads: int = 8,
        kernel_sizes: tuple[int, ...] = (1, 3, 5, 7),
        proj_dim: int | None = None,
        dropout: float = 0.1,
    ):
        super().__init__()
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        self.n_labels = V.check_int(n_labels, "n_labels", low=2)
        self.input_mode = V.check_choice(input_mode, "input_mode", ("osd", "zeros", "linear"))
        use_tcqk = V.check_bool(use_tcqk, "use_tcqk")
        dim = 2 * in_dim
        self.osd = OrthogonalSemanticDecomposition()
        self.expand = nn.Linear(in_dim, dim) if input_mode == "linear" else None
        self.attention = MultiScaleTCQKAttention(
            dim, heads, tuple(kernel_sizes) if use_tcqk else None, proj_dim, dropout
        )
        self.head = nn.Linear(dim, n_labels)

    def features(self, embeddings: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if self.input_mode == "osd":
            return self.osd(embeddings, mask)
        if self.input_mode == "zeros":
            return torch.cat([embeddings, torch.zeros_like(embeddings)], dim=-1)
        return self.expand(embeddings)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        V.check_tensor(embeddings, "embeddings", ndim=3, floating=True)
        if embeddings.shape[-1] != self.in_dim:
            raise ValueError(
                f"embeddings must have last dimension {self.in_dim}, got {embeddings.shape[-1]}"
            )
        return self.head(self.attention(self.features(embeddings, mask), mask))


# ---------------------------------------------------------------- BIO labels and scoring


def _label_names(types) -> list[str]:
    return ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]


def bio_labels(offsets, mentions, types=ENTITY_TYPES) -> np.ndarray:
    """BIO label ids per token: ``offsets`` (T, 2) character spans of the tokens, ``mentions``
    ``[(start, end, type), ...]``. A token is inside a mention when its span lies within it;
    the token at the mention's start is B. Label ids: 0 = O, 1 + 2i = B-type_i, 2 + 2i = I."""
    offsets = V.check_array(offsets, "offsets", ndim=2, shape=(None, 2), dtype=np.int64)
    index = {t: i for i, t in enumerate(types)}
    labels = np.zeros(len(offsets), dtype=np.int64)
    for start, end, typ in mentions:
        if typ not in index:
            raise ValueError(f"mentions: unknown entity type {typ!r}; known: {list(types)}")
        inside = (offsets[:, 0] >= start) & (offsets[:, 1] <= end) & (offsets[:, 1] > offsets[:, 0])
        where = np.flatnonzero(inside)
        if where.size:
            labels[where] = 2 + 2 * index[typ]
            labels[where[0]] = 1 + 2 * index[typ]
    return labels


def decode_bio(label_ids, offsets, types=ENTITY_TYPES) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, type)`` from per-token label ids with BIO repair: an I-type that does
    not continue a B/I of the same type opens a new span (is read as B-type)."""
    label_ids = V.check_array(
        label_ids, "label_ids", ndim=1, dtype=np.int64, low=0, high=2 * len(types)
    )
    offsets = V.check_array(offsets, "offsets", ndim=2, shape=(len(label_ids), 2), dtype=np.int64)
    spans: list[tuple[int, int, str]] = []
    current: list | None = None
    for lab, (s, e) in zip(label_ids.tolist(), offsets.tolist()):
        if lab == 0:
            if current is not None:
                spans.append(tuple(current))
                current = None
            continue
        typ = types[(lab - 1) // 2]
        is_inside = lab % 2 == 0
        if is_inside and current is not None and current[2] == typ:
            current[1] = e
        else:
            if current is not None:
                spans.append(tuple(current))
            current = [s, e, typ]
    if current is not None:
        spans.append(tuple(current))
    return spans


def span_f1(predicted, gold, *, typed: bool = False, min_words: int = 0, texts=None) -> dict:
    """Micro precision/recall/F1 of exact spans over documents. ``predicted`` and ``gold`` are
    lists (one per document) of ``(start, end, type)``; ``typed`` also requires the type;
    ``min_words`` > 0 keeps only spans of at least that many words (``texts`` needed)."""
    if len(predicted) != len(gold):
        raise ValueError(
            f"predicted and gold must have one entry per document: {len(predicted)} vs {len(gold)}"
        )
    min_words = V.check_int(min_words, "min_words", low=0)
    if min_words and (texts is None or len(texts) != len(gold)):
        raise ValueError("texts must give each document's text when min_words > 0")
    tp = n_pred = n_gold = 0

    def keep(spans, text):
        out = set()
        for s, e, t in spans:
            if min_words and len(text[s:e].split()) < min_words:
                continue
            out.add((s, e, t) if typed else (s, e))
        return out

    for i, (p, g) in enumerate(zip(predicted, gold)):
        text = texts[i] if min_words else ""
        ps, gs = keep(p, text), keep(g, text)
        tp += len(ps & gs)
        n_pred += len(ps)
        n_gold += len(gs)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "n_pred": n_pred, "n_gold": n_gold}


# ---------------------------------------------------------------- the tagger


def _resolve_encoder(encoder):
    if isinstance(encoder, str):
        return HashingEncoder() if encoder == "hash" else TokenEncoder(encoder)
    if isinstance(encoder, TokenEncoder | HashingEncoder):
        return encoder
    return V.check_module_attrs(encoder, "encoder", ("encode", "dim"))


def _pad(batch: list[np.ndarray], fill: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(len(x) for x in batch)
    shape = (len(batch), longest) + batch[0].shape[1:]
    out = np.full(shape, fill, dtype=batch[0].dtype)
    mask = np.zeros((len(batch), longest), dtype=bool)
    for i, x in enumerate(batch):
        out[i, : len(x)] = x
        mask[i, : len(x)] = True
    return torch.from_numpy(out), torch.from_numpy(mask)


class ZNERDTagger:
    """Z-NERD entity tagger with a scikit-learn-like ``fit`` / ``predict``.

    ``encoder`` is ``"minilm"`` (default), ``"hash"`` (the fast test encoder), a Hugging Face
    model name, or an encoder object (``encode(texts) -> [(features, offsets)]`` and ``dim``);
    it stays frozen. ``use_osd=False`` / ``use_tcqk=False`` give the paper's ablations."""

    input_mode_default = "osd"

    def __init__(
        self,
        encoder="minilm",
        *,
        kernel_sizes: tuple[int, ...] = (1, 3, 5, 7),
        heads: int = 8,
        proj_dim: int | None = 128,
        use_osd: bool = True,
        use_tcqk: bool = True,
        dropout: float = 0.1,
        types: tuple[str, ...] = ENTITY_TYPES,
        device: str = "cpu",
    ):
        self.encoder = _resolve_encoder(encoder)
        self.device = torch.device(device)
        self.kernel_sizes = tuple(kernel_sizes)
        self.heads = V.check_int(heads, "heads", low=1)
        self.proj_dim = V.check_int(proj_dim, "proj_dim", low=1, allow_none=True)
        self.use_osd = V.check_bool(use_osd, "use_osd")
        self.use_tcqk = V.check_bool(use_tcqk, "use_tcqk")
        self.dropout = V.check_probability(dropout, "dropout", open_high=True)
        self.types = tuple(types)
        if not self.types:
            raise ValueError("types is empty: give at least one entity type")
        self.net: ZNERDNet | None = None
        # validate the architecture now (a bad kernel/heads combination fails before fit)
        self._build(torch.Generator().manual_seed(0), dim=4)

    @classmethod
    def from_pretrained(cls, name: str, **kwargs) -> ZNERDTagger:
        """A tagger over a Hugging Face encoder (e.g. ``allenai/scibert_scivocab_uncased``;
        its weights must be available locally or downloadable)."""
        return cls(TokenEncoder(name), **kwargs)

    def _input_mode(self) -> str:
        return "osd" if self.use_osd else "zeros"

    def _build(self, generator: torch.Generator, dim: int | None = None) -> ZNERDNet:
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
        return ZNERDNet(
            dim if dim is not None else self.encoder.dim,
            1 + 2 * len(self.types),
            input_mode=self._input_mode(),
            use_tcqk=self.use_tcqk,
            heads=self.heads,
            kernel_sizes=self.kernel_sizes,
            proj_dim=self.proj_dim,
            dropout=self.dropout,
        )

    def n_parameters(self) -> int:
        net = self.net if self.net is not None else self._build(torch.Generator().manual_seed(0))
        return sum(p.numel() for p in net.parameters())

    def fit(
        self,
        docs,
        *,
        epochs: int = 5,
        lr: float = 1e-3,
        batch_size: int = 16,
        warmup: float = 0.1,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> ZNERDTagger:
        """Train on annotated :class:`Document` s with AdamW and a linear schedule with warm-up
        (Table 5's recipe; the learning rate is for a frozen encoder)."""
        docs = check_documents(docs, "docs")
        epochs = V.check_int(epochs, "epochs", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        warmup = V.check_probability(warmup, "warmup", open_high=True)
        weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
        seed = V.check_int(seed, "seed", low=0)
        encoded = self.encoder.encode([d.text for d in docs])
        labels = [bio_labels(o, d.mentions(), self.types) for (_, o), d in zip(encoded, docs)]
        gen = torch.Generator().manual_seed(seed)
        self.net = net = self._build(gen).to(self.device)
        opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
        steps = epochs * math.ceil(len(docs) / batch_size)
        warm = max(1, int(warmup * steps))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
        )
        loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
        net.train()
        self.losses_: list[float] = []
        for _ in range(epochs):
            order = torch.randperm(len(docs), generator=gen).tolist()
            for b in range(0, len(order), batch_size):
                idx = order[b : b + batch_size]
                x, mask = _pad([encoded[i][0] for i in idx])
                y, _ = _pad([labels[i] for i in idx], fill=-100)
                x, mask, y = x.to(self.device), mask.to(self.device), y.to(self.device)
                logits = net(x, mask)
                loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                self.losses_.append(float(loss.detach()))
        net.eval()
        return self

    def _texts(self, texts) -> list[str]:
        if isinstance(texts, list | tuple) and texts and isinstance(texts[0], Document):
            return [d.text for d in check_documents(texts, "texts", need_entities=False)]
        return check_texts(texts, "texts")

    def predict(self, texts, *, batch_size: int = 32) -> list[list[tuple[int, int, str]]]:
        """Entity spans ``(start, end, type)`` per text (strings or Documents)."""
        if self.net is None:
            raise RuntimeError("this tagger is not fitted yet; call fit first")
        texts = self._texts(texts)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        encoded = self.encoder.encode(texts)
        out = []
        with torch.inference_mode():
            for b in range(0, len(texts), batch_size):
                chunk = encoded[b : b + batch_size]
                x, mask = _pad([f for f, _ in chunk])
                pred = self.net(x.to(self.device), mask.to(self.device)).argmax(-1).cpu().numpy()
                for row, (_, offs) in enumerate(chunk):
                    out.append(decode_bio(pred[row, : len(offs)], offs, self.types))
        return out

    def evaluate(self, docs) -> dict:
        """Untyped and typed exact-span F1 and the untyped F1 on entities of >= 4 words."""
        docs = check_documents(docs, "docs")
        pred = self.predict(docs)
        gold = [d.mentions() for d in docs]
        texts = [d.text for d in docs]
        return {
            "f1": span_f1(pred, gold)["f1"],
            "typed_f1": span_f1(pred, gold, typed=True)["f1"],
            "long_f1": span_f1(pred, gold, min_words=4, texts=texts)["f1"],
        }


class StandardAttentionTagger(ZNERDTagger):
    """The baseline: standard multi-head attention (same projections, no convolutions) and a
    linear BIO head on the same frozen encoder features, without the OSD feature (its input is
    [E ; 0], so the shapes and the parameter count match Z-NERD's to within 2%)."""

    def __init__(self, encoder="minilm", **kwargs):
        for key in ("use_osd", "use_tcqk"):
            if kwargs.pop(key, False):
                raise ValueError(f"{key}: the standard tagger has no {key[4:].upper()}")
        super().__init__(encoder, use_osd=False, use_tcqk=False, **kwargs)
