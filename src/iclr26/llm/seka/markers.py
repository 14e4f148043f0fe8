"""Highlight markers -> token masks, through the tokenizer's character offsets.

A user marks the text to highlight with ``**...**``; the markers are stripped, the plain text is
tokenised with ``return_offsets_mapping`` and a token is highlighted when its character span
(leading/trailing whitespace of the token trimmed, since byte-level BPE glues the preceding
space onto a word) lies inside a marked span. Batches are left-padded, as for generation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from iclr26 import validation as V


@dataclass
class MarkedBatch:
    """What :func:`encode_with_markers` returns: left-padded ids, the highlight mask (B, T),
    the attention mask (B, T), the plain texts and each text's marked character spans."""

    input_ids: torch.Tensor
    steer_mask: torch.Tensor
    attention_mask: torch.Tensor
    texts: list[str]
    spans: list[list[tuple[int, int]]]

    def __iter__(self):  # ids, mask, attention = encode_with_markers(...)
        return iter((self.input_ids, self.steer_mask, self.attention_mask))


def check_tokenizer(tok) -> None:
    V.check_module_attrs(tok, "tok", ("__call__", "decode"))
    if not getattr(tok, "is_fast", True):
        raise TypeError("tok must be a fast tokenizer (it must return offset_mapping)")


def _check_markers(marker) -> tuple[str, str]:
    if isinstance(marker, str):
        marker = (marker, marker)
    if (
        not isinstance(marker, (tuple, list))
        or len(marker) != 2
        or not all(isinstance(m, str) and m for m in marker)
    ):
        raise ValueError(
            f"marker must be a non-empty string or a (start, end) pair; got {marker!r}"
        )
    return marker[0], marker[1]


def strip_markers(text: str, marker=("**", "**")) -> tuple[str, list[tuple[int, int]]]:
    """The text without markers and the marked character spans in it. An opening marker with
    no closing one is an error (it would silently highlight nothing or everything)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    start, end = _check_markers(marker)
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = length = 0
    while True:
        open_at = text.find(start, pos)
        if open_at < 0:
            pieces.append(text[pos:])
            break
        close_at = text.find(end, open_at + len(start))
        if close_at < 0:
            raise ValueError(
                f"text has an unmatched highlight marker {start!r} at character {open_at}"
            )
        before = text[pos:open_at]
        inner = text[open_at + len(start) : close_at]
        pieces.append(before)
        length += len(before)
        if inner:
            spans.append((length, length + len(inner)))
        pieces.append(inner)
        length += len(inner)
        pos = close_at + len(end)
    return "".join(pieces), spans


def _token_spans(text: str, offsets) -> list[tuple[int, int]]:
    """Character span of each token with surrounding whitespace trimmed."""
    out = []
    for s, e in offsets:
        s, e = int(s), int(e)
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        out.append((s, e))
    return out


def mask_from_spans(text: str, offsets, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """A token is marked when its trimmed character span (its raw span if it is all
    whitespace) is non-empty and inside a span."""
    marks = []
    for (s, e), (rs, re_) in zip(_token_spans(text, offsets), offsets):
        if e <= s:
            s, e = int(rs), int(re_)
        marks.append(e > s and any(a <= s and e <= b for a, b in spans))
    return marks


def _encode(tok, text: str):
    enc = tok(text, return_offsets_mapping=True, add_special_tokens=False)
    if "offset_mapping" not in enc:
        raise TypeError("tok must return offset_mapping (use a fast tokenizer)")
    return list(enc["input_ids"]), list(enc["offset_mapping"])


def span_token_indices(tok, text: str, span: str) -> list[int]:
    """Token positions of the first case-insensitive occurrence of ``span`` in ``text``."""
    check_tokenizer(tok)
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty string")
    if not isinstance(span, str) or not span.strip():
        raise ValueError("span must be a non-empty string")
    at = text.lower().find(span.lower())
    if at < 0:
        raise ValueError(f"span {span!r} is not found in the text {text[:60]!r}...")
    _, offsets = _encode(tok, text)
    marks = mask_from_spans(text, offsets, [(at, at + len(span))])
    index = [i for i, m in enumerate(marks) if m]
    if not index:
        raise ValueError(f"span {span!r} covers no whole token of the text")
    return index


def encode_with_markers(
    tok,
    texts: str | Sequence[str],
    marker=("**", "**"),
    *,
    require_highlight: bool = True,
    add_bos: bool = False,
) -> MarkedBatch:
    """Strip the markers, tokenise, and build the highlight mask from the offsets.

    ``texts`` is one string or a list. With ``require_highlight`` a text with no marked span is
    an error (a highlight that silently does nothing); pass ``False`` to allow it. ``add_bos``
    prepends the tokenizer's BOS token (never highlighted)."""
    check_tokenizer(tok)
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence) or len(texts) == 0:
        raise ValueError("texts must be a non-empty string or list of strings")
    V.check_bool(require_highlight, "require_highlight")
    rows, masks, plains, all_spans = [], [], [], []
    for i, raw in enumerate(texts):
        if not isinstance(raw, str) or not raw:
            raise ValueError(f"texts[{i}] must be a non-empty string")
        plain, spans = strip_markers(raw, marker)
        if require_highlight and not spans:
            raise ValueError(f"texts[{i}] has no highlighted span (mark one with {marker!r})")
        ids, offsets = _encode(tok, plain)
        marks = mask_from_spans(plain, offsets, spans)
        if spans and not any(marks):
            raise ValueError(f"texts[{i}]: the highlighted span covers no whole token")
        if add_bos:
            ids = [tok.bos_token_id] + ids
            marks = [False] + marks
        if not ids:
            raise ValueError(f"texts[{i}] tokenises to nothing")
        rows.append(ids)
        masks.append(marks)
        plains.append(plain)
        all_spans.append(spans)
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad), dtype=torch.long)
    steer = torch.zeros((len(rows), width), dtype=torch.bool)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for r, (row, mark) in enumerate(zip(rows, masks)):
        ids[r, width - len(row) :] = torch.tensor(row)
        steer[r, width - len(row) :] = torch.tensor(mark)
        attention[r, width - len(row) :] = 1
    return MarkedBatch(ids, steer, attention, plains, all_spans)
