"""Exact substring deduplication of one shard with a suffix array (the recipe's first step).

Each document is tokenized losslessly (:meth:`TokenizerAdapter.encode_lossless`: vocabulary
tokens where they spell the text exactly, UTF-8 bytes elsewhere, so two different texts never
share a token stream, whatever their script) and written as uint16 big-endian token bytes behind a unique
6-byte separator (``0xFFFF`` and the 4-byte document index), so that no match crosses two
documents. The suffix array and LCP array of the shard's byte string (``pydivsufsort``)
group every token position whose next ``length_threshold`` tokens occur elsewhere in the
shard; within each group the first occurrence in document order is kept and the others are
removed, and the windows of all removed occurrences are merged, so a repeat of any length
``M >= L`` is removed whole. Only even byte offsets are token starts; odd suffixes are
skipped and the LCP between two kept suffixes is the minimum of the LCPs between them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V
from iclr26.llm.gneissweb.tokenizer import MINILM, TokenizerAdapter, check_texts

_SEP_BYTES = 6


@dataclass
class DedupReport:
    """What one shard's deduplication removed."""

    documents: int = 0
    chars_in: int = 0
    chars_removed: int = 0
    spans_removed: int = 0
    removed_spans: list[list[tuple[int, int]]] = field(default_factory=list)

    @property
    def removed_fraction(self) -> float:
        return self.chars_removed / self.chars_in if self.chars_in else 0.0


def _serialize(token_ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shard's byte string, each document's first token byte, and bytes left in its doc."""
    lengths = np.array([len(t) for t in token_ids], dtype=np.int64)
    seg = _SEP_BYTES + 2 * lengths
    starts = np.concatenate([[0], np.cumsum(seg)[:-1]]) + _SEP_BYTES
    total = int(seg.sum())
    buf = np.empty(total, dtype=np.uint8)
    remaining = np.full(total, -1, dtype=np.int64)
    for doc, (ids, start) in enumerate(zip(token_ids, starts)):
        head = start - _SEP_BYTES
        buf[head : head + 2] = 0xFF
        buf[head + 2 : start] = np.frombuffer(int(doc).to_bytes(4, "big"), dtype=np.uint8)
        n = len(ids)
        if n:
            buf[start : start + 2 * n] = np.frombuffer(ids.astype(">u2").tobytes(), np.uint8)
            remaining[start : start + 2 * n] = np.arange(2 * n, 0, -1)
    return buf, starts, remaining


def duplicate_token_mask(
    token_ids: list[np.ndarray],
    length_threshold: int = 50,
    frequency_threshold: int = 1,
    retain_first_copy: bool = True,
) -> list[np.ndarray]:
    """Per document, a boolean mask of the tokens that belong to a removed repeated span.

    A span of ``length_threshold`` tokens that occurs more than ``frequency_threshold`` times
    in the shard is removed from every occurrence but the first (or from all, when
    ``retain_first_copy`` is False).
    """
    from pydivsufsort import divsufsort, kasai

    length_threshold = V.check_int(length_threshold, "length_threshold", low=4)
    frequency_threshold = V.check_int(frequency_threshold, "frequency_threshold", low=1)
    retain_first_copy = V.check_bool(retain_first_copy, "retain_first_copy")
    if isinstance(token_ids, np.ndarray) or not isinstance(token_ids, list | tuple):
        raise TypeError("token_ids must be a list of 1-D integer arrays, one per document")
    checked = []
    for i, ids in enumerate(token_ids):
        arr = np.asarray(ids)
        if arr.ndim != 1:
            raise ValueError(f"token_ids[{i}] must be 1-D, got {arr.ndim} dimension(s)")
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"token_ids[{i}] must hold integer ids, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= 0xFFFF):
            raise ValueError(f"token_ids[{i}] must hold ids in [0, 65534]")
        checked.append(arr.astype(np.uint16))
    token_ids = checked
    masks = [np.zeros(len(t), dtype=bool) for t in token_ids]
    if sum(len(t) for t in token_ids) < length_threshold:
        return masks
    buf, starts, remaining = _serialize(token_ids)
    window = 2 * length_threshold
    sa = divsufsort(buf).astype(np.int64)
    lcp = kasai(buf, sa.astype(np.int32)).astype(np.int64)  # lcp[i] = LCP(sa[i], sa[i + 1])
    keep = (sa % 2 == 0) & (remaining[sa] >= window)
    kept = np.flatnonzero(keep)
    if kept.size < 2:
        return masks
    # LCP between consecutive kept suffixes = min of the LCPs between them.
    between = np.minimum.reduceat(lcp[: kept[-1]], kept[:-1])
    linked = between >= window
    run_id = np.concatenate([[0], np.cumsum(~linked)])
    offsets = sa[kept]
    run_sizes = np.bincount(run_id)
    in_repeat = run_sizes[run_id] > frequency_threshold
    if not in_repeat.any():
        return masks
    offsets, run_id = offsets[in_repeat], run_id[in_repeat]
    if retain_first_copy:
        order = np.lexsort((offsets, run_id))
        offsets, run_id = offsets[order], run_id[order]
        first = np.concatenate([[True], run_id[1:] != run_id[:-1]])
        offsets = offsets[~first]
    coverage = np.zeros(buf.size + 1, dtype=np.int64)
    np.add.at(coverage, offsets, 1)
    np.add.at(coverage, offsets + window, -1)
    covered = np.cumsum(coverage[:-1]) > 0
    for doc, ids in enumerate(token_ids):
        n = len(ids)
        if n:
            masks[doc] = covered[starts[doc] : starts[doc] + 2 * n : 2]
    return masks


def _token_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[first, last] token index of each run of True values."""
    if not mask.any():
        return []
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for a, b in spans:
        pieces.append(text[last:a])
        last = b
    pieces.append(text[last:])
    return "".join(pieces)


def _line_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Widen character spans to the whole lines they touch (line granularity)."""
    if not spans:
        return []
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    line_ends = [m.end() for m in re.finditer("\n", text)] + [len(text)]
    starts = np.array(line_starts)
    widened = []
    for a, b in spans:
        first = int(np.searchsorted(starts, a, side="right") - 1)
        last = int(np.searchsorted(starts, max(b - 1, a), side="right") - 1)
        widened.append((line_starts[first], line_ends[last]))
    merged: list[tuple[int, int]] = []
    for a, b in sorted(widened):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


class ShardedExactSubstringDedup:
    """Exact substring deduplication, run independently on each shard.

    Parameters follow the recipe: ``length_threshold`` tokens (50), spans occurring more
    than ``frequency_threshold`` times (1) are removed, keeping the first copy
    (``retain_first_copy``). ``granularity="line"`` removes every line a removed span touches.
    """

    def __init__(
        self,
        length_threshold: int = 50,
        frequency_threshold: int = 1,
        retain_first_copy: bool = True,
        tokenizer: str | object = MINILM,
        granularity: str = "span",
    ) -> None:
        V.check_choice(granularity, "granularity", ("span", "line"))
        self.length_threshold = V.check_int(length_threshold, "length_threshold", low=4)
        self.frequency_threshold = V.check_int(frequency_threshold, "frequency_threshold", low=1)
        self.retain_first_copy = V.check_bool(retain_first_copy, "retain_first_copy")
        self.granularity = granularity
        self.tokenizer = TokenizerAdapter(tokenizer)

    def dedup_shard(self, texts: list[str]) -> tuple[list[str], DedupReport]:
        """The shard's texts with repeated spans removed, and a report of what was removed."""
        texts = check_texts(texts)
        encoded = self.tokenizer.encode_lossless(texts)
        masks = duplicate_token_mask(
            [ids for ids, _ in encoded],
            self.length_threshold,
            self.frequency_threshold,
            self.retain_first_copy,
        )
        report = DedupReport(documents=len(texts), chars_in=sum(len(t) for t in texts))
        out = []
        for text, (_, offsets), mask in zip(texts, encoded, masks):
            spans = [(int(offsets[a, 0]), int(offsets[b, 1])) for a, b in _token_runs(mask)]
            if self.granularity == "line":
                spans = _line_spans(text, spans)
            new = _cut(text, spans)
            report.chars_removed += len(text) - len(new)
            report.spans_removed += len(spans)
            report.removed_spans.append(spans)
            out.append(new)
        return out, report


def exact_line_dedup(texts: list[str]) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Baseline: drop every non-blank line whose exact text appeared earlier in the shard."""
    texts = check_texts(texts)
    seen: set[bytes] = set()
    out, removed = [], []
    for text in texts:
        kept, spans, pos = [], [], 0
        for line in text.splitlines(keepends=True):
            key = hashlib.blake2b(line.strip().encode("utf-8", "replace"), digest_size=16).digest()
            if line.strip() and key in seen:
                spans.append((pos, pos + len(line)))
            else:
                seen.add(key)
                kept.append(line)
            pos += len(line)
        out.append("".join(kept))
        removed.append(spans)
    return out, removed


def minhash_dedup(
    texts: list[str], threshold: float = 0.8, num_perm: int = 128, shingle: int = 5, seed: int = 1
) -> tuple[list[str], list[bool]]:
    """Baseline: document-level near-duplicate removal with ``datasketch`` MinHashLSH."""
    from datasketch import MinHash, MinHashLSH

    texts = check_texts(texts)
    threshold = V.check_scalar(threshold, "threshold", low=0.0, high=1.0, low_open=True)
    num_perm = V.check_int(num_perm, "num_perm", low=2)
    shingle = V.check_int(shingle, "shingle", low=1)
    seed = V.check_int(seed, "seed", low=0)

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    dropped = []
    for i, text in enumerate(texts):
        words = text.split()
        shingles = {
            " ".join(words[j : j + shingle]) for j in range(max(1, len(words) - shingle + 1))
        }
        mh = MinHash(num_perm=num_perm, seed=seed)
        mh.update_batch([s.encode("utf-8") for s in shingles])
        if lsh.query(mh):
            dropped.append(True)
        else:
            lsh.insert(str(i), mh)
            dropped.append(False)
    return [("" if d else t) for t, d in zip(texts, dropped)], dropped
