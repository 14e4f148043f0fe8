"""Span-key extraction and SEKA's spectral relevance projections (paper Sec. 3, Eqs. 2-5).

For each selected layer and KV head, the pre-RoPE keys of an answer span are collected in three
versions of the same context: neutral (``h``), preceded by a question the span answers
(``h+``) and by an unrelated question (``h-``). The SVDs of the cross-covariances
``Omega+- = h^T h+- / n`` give the relevance subspace: ``P+`` spans the top left singular
vectors holding a ``top_pct`` share of the singular-value mass and ``P-`` the complement of the
top directions of the irrelevant pairing. Heads whose relevant and irrelevant keys barely
differ (distance below ``min_diff``) get ``P = 0``: they are not steered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.llm.seka.features import FEATURES, phi
from iclr26.llm.seka.markers import check_tokenizer, span_token_indices
from iclr26.llm.seka.sites import attention_sites, kv_geometry, model_device, parse_layers

NEUTRAL = "Context: {c}"
POSITIVE = "Question: {q}\nContext: {c}"
NEGATIVE = "Question: {q}\nContext: {c}"
DISTANCES = ("mean_l2", "fro_over_n")


@dataclass(frozen=True)
class Triplet:
    """One contrastive item: a context, a question its ``span`` answers, an unrelated one."""

    context: str
    relevant_question: str
    span: str
    irrelevant_question: str

    def __post_init__(self) -> None:
        for name in ("context", "relevant_question", "span", "irrelevant_question"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if self.span.lower() not in self.context.lower():
            raise ValueError(f"span {self.span!r} is not found in the context")


def _as_triplet(item, i: int) -> Triplet:
    if isinstance(item, Triplet):
        t = item
        return t
    try:
        if isinstance(item, dict):
            keys = ("context", "relevant_question", "span", "irrelevant_question")
            missing = [k for k in keys if k not in item]
            if missing:
                raise ValueError(f"lacks key(s) {missing}")
            return Triplet(*(item[k] for k in keys))
        if isinstance(item, (tuple, list)) and len(item) == 4:
            return Triplet(*item)
    except ValueError as err:
        raise ValueError(f"triplets[{i}]: {err}") from None
    raise TypeError(
        f"triplets[{i}] must be a Triplet, a dict or a (context, relevant_question, span, "
        "irrelevant_question) tuple"
    )


def triplet_texts(t: Triplet, tok=None, chat: bool = False) -> tuple[str, str, str]:
    """The neutral, positive and negative texts of a triplet (optionally chat-templated)."""
    texts = (
        NEUTRAL.format(c=t.context),
        POSITIVE.format(q=t.relevant_question, c=t.context),
        NEGATIVE.format(q=t.irrelevant_question, c=t.context),
    )
    if not chat:
        return texts
    return tuple(
        tok.apply_chat_template([{"role": "user", "content": x}], tokenize=False) for x in texts
    )


# ----------------------------------------------------------------- key capture


class KeyCapture:
    """Forward hooks that record the pre-RoPE keys (B, T, H_kv, d) of chosen layers; always
    removed on exit."""

    def __init__(self, model, layers: Sequence[int]):
        self.sites = {s.layer: s for s in attention_sites(model)}
        self.geometry = kv_geometry(model)
        self.layers = list(layers)
        self.keys: dict[int, torch.Tensor] = {}
        self._handles: list = []

    def __enter__(self) -> KeyCapture:
        g = self.geometry
        try:
            for layer in self.layers:

                def record(_module, _inputs, output, layer=layer):
                    self.keys[layer] = output.detach().reshape(
                        *output.shape[:2], g.n_kv_heads, g.head_dim
                    )

                self._handles.append(self.sites[layer].key_module.register_forward_hook(record))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def left_padded(rows: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad), dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(list(r), dtype=torch.long)
        attention[i, width - len(r) :] = 1
    return ids, attention


def position_ids(attention: torch.Tensor) -> torch.Tensor:
    """Positions that ignore left padding, so a padded row computes what it would alone."""
    return (attention.long().cumsum(-1) - 1).clamp(min=0)


@torch.no_grad()
def _batched_keys(model, tok, texts: Sequence[str], layers, batch_size: int = 32):
    """Per text: {layer: (T_i, H_kv, d)} of its unpadded tokens (float32)."""
    device = model_device(model)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    encoded = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    out: list[dict[int, torch.Tensor]] = []
    for start in range(0, len(encoded), batch_size):
        chunk = encoded[start : start + batch_size]
        ids, attention = left_padded(chunk, pad)
        with KeyCapture(model, layers) as cap:
            model(
                input_ids=ids.to(device),
                attention_mask=attention.to(device),
                position_ids=position_ids(attention).to(device),
                use_cache=False,
            )
        width = ids.shape[1]
        for r, row in enumerate(chunk):
            out.append({ell: cap.keys[ell][r, width - len(row) :].float().cpu() for ell in layers})
    return out


def extract_span_keys(model, tok, text: str, span: str, layers="all") -> dict[int, torch.Tensor]:
    """``{layer: (n_span_tokens, H_kv, d)}``: the pre-RoPE keys (``k_proj`` output, or
    ``k_norm`` output where the model has one) of the tokens of ``span`` in ``text``."""
    check_tokenizer(tok)
    chosen = parse_layers(layers, len(attention_sites(model)))
    index = span_token_indices(tok, text, span)
    keys = _batched_keys(model, tok, [text], chosen)[0]
    return {ell: keys[ell][index] for ell in chosen}


# ----------------------------------------------------------------- projections


@dataclass
class SEKAProjections:
    """Per (selected layer, KV head) relevance projections.

    ``P_pos_raw`` / ``P_neg_raw`` (L, H, d, d) are the projections before head filtering;
    ``P_pos`` / ``P_neg`` are them with filtered heads zeroed (``applied_mask`` (L, H) bool).
    ``D`` (L, H) is the relevant-vs-irrelevant key distance that filtering thresholds,
    ``k_pos`` / ``k_neg`` the ranks. ``U_pos`` (L, H, d, d) and ``S_pos`` (L, H, d) are kept when
    built with ``save_svd=True`` (AdaSEKA's experts)."""

    layers: list[int]
    P_pos_raw: torch.Tensor
    P_neg_raw: torch.Tensor | None
    D: torch.Tensor
    k_pos: torch.Tensor
    k_neg: torch.Tensor | None
    min_diff: float
    top_pct: float
    feature: str | None = None
    distance: str = "mean_l2"
    U_pos: torch.Tensor | None = None
    S_pos: torch.Tensor | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        V.check_tensor(self.P_pos_raw, "P_pos_raw", ndim=4, floating=True)
        L, H, d, d2 = self.P_pos_raw.shape
        if d != d2:
            raise ValueError(f"P_pos_raw must be (L, H, d, d), got {tuple(self.P_pos_raw.shape)}")
        V.check_tensor(self.D, "D", shape=(L, H), floating=True)
        V.check_tensor(self.k_pos, "k_pos", shape=(L, H), integer=True, low=0, high=d)
        if self.P_neg_raw is not None:
            V.check_tensor(self.P_neg_raw, "P_neg_raw", shape=(L, H, d, d), floating=True)
        if self.U_pos is not None or self.S_pos is not None:
            V.check_tensor(self.U_pos, "U_pos", shape=(L, H, d, d), floating=True)
            V.check_tensor(self.S_pos, "S_pos", shape=(L, H, d), floating=True)
        if len(self.layers) != L or len(set(self.layers)) != L:
            raise ValueError(f"layers must list {L} distinct layer indices, got {self.layers}")
        self.min_diff = V.check_scalar(self.min_diff, "min_diff", allow_inf=True)
        self.top_pct = V.check_scalar(self.top_pct, "top_pct", low=0.0, high=1.0, low_open=True)
        V.check_choice(self.feature, "feature", (None, *FEATURES))
        V.check_choice(self.distance, "distance", DISTANCES)

    @property
    def applied_mask(self) -> torch.Tensor:
        return self.D >= self.min_diff

    @property
    def P_pos(self) -> torch.Tensor:
        return self.P_pos_raw * self.applied_mask[..., None, None]

    @property
    def P_neg(self) -> torch.Tensor | None:
        if self.P_neg_raw is None:
            return None
        return self.P_neg_raw * self.applied_mask[..., None, None]

    @property
    def n_kv_heads(self) -> int:
        return int(self.P_pos_raw.shape[1])

    @property
    def head_dim(self) -> int:
        return int(self.P_pos_raw.shape[2])

    def refilter(self, min_diff: float) -> SEKAProjections:
        """The same projections with another head-filter threshold (``-inf``: no filter)."""
        min_diff = V.check_scalar(min_diff, "min_diff", allow_inf=True)
        return replace(self, min_diff=min_diff)

    def without_negative(self) -> SEKAProjections:
        return replace(self, P_neg_raw=None, k_neg=None)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the projections to a safetensors file (tensors + JSON metadata)."""
        from safetensors.torch import save_file

        tensors = {"P_pos_raw": self.P_pos_raw, "D": self.D, "k_pos": self.k_pos}
        for name in ("P_neg_raw", "k_neg", "U_pos", "S_pos"):
            value = getattr(self, name)
            if value is not None:
                tensors[name] = value
        meta = {
            "layers": self.layers,
            "min_diff": self.min_diff,
            "top_pct": self.top_pct,
            "feature": self.feature,
            "distance": self.distance,
            "info": self.info,
        }
        path = Path(path)
        save_file(
            {k: v.contiguous().cpu() for k, v in tensors.items()},
            str(path),
            metadata={"seka": json.dumps(meta)},
        )
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> SEKAProjections:
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path {str(path)!r} is not a file")
        with safe_open(str(path), framework="pt") as f:
            meta = (f.metadata() or {}).get("seka")
            if meta is None:
                raise ValueError(f"path {str(path)!r} is not a SEKA projection file")
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = json.loads(meta)
        return cls(
            layers=list(meta["layers"]),
            P_pos_raw=tensors["P_pos_raw"],
            P_neg_raw=tensors.get("P_neg_raw"),
            D=tensors["D"],
            k_pos=tensors["k_pos"],
            k_neg=tensors.get("k_neg"),
            min_diff=float(meta["min_diff"]),
            top_pct=float(meta["top_pct"]),
            feature=meta["feature"],
            distance=meta["distance"],
            U_pos=tensors.get("U_pos"),
            S_pos=tensors.get("S_pos"),
            info=meta.get("info", {}),
        )


def cumulative_rank(singular_values: torch.Tensor, top_pct: float) -> int:
    """The smallest k with sum(S[:k]) / sum(S) >= top_pct (at least 1)."""
    V.check_tensor(singular_values, "singular_values", ndim=1, floating=True, low=0.0)
    top_pct = V.check_scalar(top_pct, "top_pct", low=0.0, high=1.0, low_open=True)
    s = singular_values.double()
    total = s.sum()
    if not total > 0:
        return 1
    ratio = s.cumsum(0) / total
    return int(min(int((ratio < top_pct - 1e-12).sum()) + 1, len(s)))


def projections_from_keys(
    h: torch.Tensor, h_pos: torch.Tensor, h_neg: torch.Tensor, top_pct: float
) -> tuple[torch.Tensor, torch.Tensor, int, int, torch.Tensor, torch.Tensor]:
    """(P+, P-, k+, k-, U+, S+) for one head from stacked (n, d) neutral/positive/negative keys."""
    n = h.shape[0]
    omega_pos = h.double().T @ h_pos.double() / n
    omega_neg = h.double().T @ h_neg.double() / n
    u_pos, s_pos, _ = torch.linalg.svd(omega_pos)
    u_neg, s_neg, _ = torch.linalg.svd(omega_neg)
    k_pos = cumulative_rank(s_pos, top_pct)
    k_neg = cumulative_rank(s_neg, top_pct)
    p_pos = u_pos[:, :k_pos] @ u_pos[:, :k_pos].T
    p_neg = u_neg[:, k_neg:] @ u_neg[:, k_neg:].T
    return p_pos.float(), p_neg.float(), k_pos, k_neg, u_pos.float(), s_pos.float()


def head_distance(h_pos: torch.Tensor, h_neg: torch.Tensor, distance: str) -> float:
    diff = (h_pos - h_neg).double()
    if distance == "mean_l2":
        return float(diff.norm(dim=-1).mean())
    return float(diff.norm() / h_pos.shape[0])


def build_seka_projections(
    model,
    tok,
    triplets,
    layers="all",
    top_pct: float = 0.9,
    min_diff: float = 0.2,
    feature: str | None = None,
    save_svd: bool = False,
    distance: str = "mean_l2",
    chat: bool = False,
    batch_size: int = 32,
) -> SEKAProjections:
    """SEKA's projections from contrastive triplets (no training, three forward passes per
    triplet). ``triplets`` holds :class:`Triplet`, dicts or 4-tuples ``(context,
    relevant_question, span, irrelevant_question)``. Triplets whose span tokenises to different
    lengths in the three texts are skipped and counted (``info["skipped"]``)."""
    check_tokenizer(tok)
    sites = attention_sites(model)
    geometry = kv_geometry(model)
    chosen = parse_layers(layers, len(sites))
    top_pct = V.check_scalar(top_pct, "top_pct", low=0.0, high=1.0, low_open=True)
    min_diff = V.check_scalar(min_diff, "min_diff", low=0.0)
    V.check_choice(feature, "feature", (None, *FEATURES))
    V.check_bool(save_svd, "save_svd")
    V.check_choice(distance, "distance", DISTANCES)
    V.check_bool(chat, "chat")
    V.check_int(batch_size, "batch_size", low=1)
    if isinstance(triplets, (str, bytes)) or not isinstance(triplets, Sequence):
        raise TypeError("triplets must be a list of triplets")
    if len(triplets) == 0:
        raise ValueError("triplets is empty")
    items = [_as_triplet(t, i) for i, t in enumerate(triplets)]

    texts, spans = [], []
    for t in items:
        texts.extend(triplet_texts(t, tok, chat))
        spans.append(t.span)
    index = []
    kept, skipped = [], 0
    for i, span in enumerate(spans):
        try:
            idx = [span_token_indices(tok, texts[3 * i + j], span) for j in range(3)]
        except ValueError:
            skipped += 1
            continue
        if len({len(x) for x in idx}) != 1:
            skipped += 1
            continue
        index.append(idx)
        kept.append(i)
    if not kept:
        raise ValueError("triplets: no triplet's span tokenises identically in its three texts")
    wanted = [texts[3 * i + j] for i in kept for j in range(3)]
    keys = _batched_keys(model, tok, wanted, chosen, batch_size)

    L, H, d = len(chosen), geometry.n_kv_heads, geometry.head_dim
    P_pos = torch.zeros(L, H, d, d)
    P_neg = torch.zeros(L, H, d, d)
    U_pos = torch.zeros(L, H, d, d)
    S_pos = torch.zeros(L, H, d)
    D = torch.zeros(L, H)
    k_pos = torch.zeros(L, H, dtype=torch.long)
    k_neg = torch.zeros(L, H, dtype=torch.long)
    for li, ell in enumerate(chosen):
        stacks = [[], [], []]
        for n, idx in enumerate(index):
            for j in range(3):
                stacks[j].append(keys[3 * n + j][ell][idx[j]])
        h, h_pos, h_neg = (phi(torch.cat(s, 0), feature) for s in stacks)  # (n, H, d)
        for head in range(H):
            pp, pn, kp, kn, up, sp = projections_from_keys(
                h[:, head], h_pos[:, head], h_neg[:, head], top_pct
            )
            P_pos[li, head], P_neg[li, head], U_pos[li, head], S_pos[li, head] = pp, pn, up, sp
            k_pos[li, head], k_neg[li, head] = kp, kn
            D[li, head] = head_distance(h_pos[:, head], h_neg[:, head], distance)
    if not torch.isfinite(P_pos).all() or not torch.isfinite(D).all():
        raise ValueError("model produced non-finite keys on the triplets")
    return SEKAProjections(
        layers=chosen,
        P_pos_raw=P_pos,
        P_neg_raw=P_neg,
        D=D,
        k_pos=k_pos,
        k_neg=k_neg,
        min_diff=min_diff,
        top_pct=top_pct,
        feature=feature,
        distance=distance,
        U_pos=U_pos if save_svd else None,
        S_pos=S_pos if save_svd else None,
        info={
            "triplets": len(items),
            "used": len(kept),
            "skipped": skipped,
            "span_tokens": int(sum(len(i[0]) for i in index)),
        },
    )


def random_projections(proj: SEKAProjections, seed: int = 0) -> SEKAProjections:
    """The ablation: per head a random orthonormal basis of the same rank k+ (``P-`` dropped);
    the head filter (``applied_mask``) is kept, ``refilter(-inf)`` removes it."""
    if not isinstance(proj, SEKAProjections):
        raise TypeError(f"proj must be SEKAProjections, got {type(proj).__name__}")
    V.check_int(seed, "seed", low=0)
    gen = torch.Generator().manual_seed(int(seed))
    L, H, d = proj.P_pos_raw.shape[:3]
    P = torch.zeros(L, H, d, d)
    for li in range(L):
        for head in range(H):
            k = int(proj.k_pos[li, head])
            q, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
            P[li, head] = (q[:, :k] @ q[:, :k].T).float()
    info = dict(proj.info, random_seed=int(seed))
    return replace(proj, P_pos_raw=P, P_neg_raw=None, k_neg=None, U_pos=None, S_pos=None, info=info)


def projection_report(proj: SEKAProjections) -> dict:
    """Plain numbers about a projection set (ranks, distances, how many heads are steered)."""
    mask = proj.applied_mask.numpy()
    return {
        "layers": proj.layers,
        "heads_steered": int(mask.sum()),
        "heads_total": int(mask.size),
        "k_pos": proj.k_pos.numpy().tolist(),
        "D": np.round(proj.D.numpy(), 4).tolist(),
        **{k: v for k, v in proj.info.items() if isinstance(v, (int, float))},
    }
