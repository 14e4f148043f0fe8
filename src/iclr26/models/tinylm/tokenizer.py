"""The byte-level BPE tokenizer of the tiny LM, trained on the stdlib train split.

Digits are split into single tokens (as in Llama/Qwen tokenizers) so arithmetic tasks see one
token per digit; offsets are character offsets into the input, so spans can be mapped back.
No special token is added automatically: callers insert ``<bos>``/``<eos>`` where they want
them. The trained ``tokenizer.json`` is cached under a key made from the settings and the
corpus fingerprint.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from iclr26.claims import build_lock
from iclr26.data import corpus_fingerprint, stdlib_corpus
from iclr26.models.tinylm.cache import stable_hash, tinylm_dir, version_tag
from iclr26.models.tinylm.config import SPECIAL_TOKENS, VOCAB_SIZE

TOKENIZER_KINDS = ("code", "prose")


def _check_max_files(max_files: int | None) -> int | None:
    if max_files is not None and (not isinstance(max_files, int) or max_files < 1):
        raise ValueError("max_files must be a positive int or None (the whole split)")
    return max_files


def _tokenizer_key(vocab_size: int, max_files: int | None = None) -> str:
    payload = {
        "kind": "bpe-bytelevel-digits",
        "vocab_size": vocab_size,
        "special": SPECIAL_TOKENS,
        "trained_on": TOKENIZER_KINDS,
        "corpus": corpus_fingerprint(),
    }
    if max_files is not None:  # only then, so keys of the whole-split tokenizer stay stable
        payload["max_files"] = max_files
    return stable_hash(payload)


def _train_bpe(vocab_size: int, path: Path, max_files: int | None = None) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = stdlib_corpus("train", kinds=TOKENIZER_KINDS, max_files=max_files)
    tok.train_from_iterator(texts, trainer)
    tmp = path.with_suffix(".tmp")
    tok.save(str(tmp))
    tmp.replace(path)


@functools.lru_cache(maxsize=8)
def _load(path: str):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=path,
        name_or_path=str(Path(path).parent),
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        sep_token="<sep>",
        additional_special_tokens=list(SPECIAL_TOKENS[4:]),
        model_max_length=1 << 20,
    )


def get_tokenizer(vocab_size: int = VOCAB_SIZE, max_files: int | None = None):
    """The shared ``PreTrainedTokenizerFast`` (trained once, then loaded from the cache).

    ``max_files`` trains on only the first files of the train split (a cheap tokenizer for
    tests and smoke runs, cached under its own key); ``None`` uses the whole split."""
    if not isinstance(vocab_size, int) or vocab_size < 300:
        raise ValueError("vocab_size must be an int >= 300 (256 bytes + special tokens + merges)")
    _check_max_files(max_files)
    key = _tokenizer_key(vocab_size, max_files)
    small = "" if max_files is None else f"-f{max_files}"
    folder = tinylm_dir() / f"tokenizer-v{vocab_size}{small}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    if not path.exists():
        with build_lock(path):
            if not path.exists():
                _train_bpe(vocab_size, path, max_files)
    return _load(str(path))


def token_stream(
    tok, split: str = "train", kinds: tuple[str, ...] = ("code",), max_files: int | None = None
) -> np.ndarray:
    """All texts of a corpus split (or its first ``max_files`` files) encoded and joined by
    ``<eos>``, as one uint16/int32 array (cached next to the tokenizer)."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    _check_max_files(max_files)
    payload = {
        "tok": tok.name_or_path,
        "vocab": len(tok),
        "split": split,
        "kinds": kinds,
        "corpus": corpus_fingerprint(),
        **version_tag(),
    }
    if max_files is not None:
        payload["max_files"] = max_files
    key = stable_hash(payload)
    own = tok.name_or_path and Path(tok.name_or_path).is_dir()
    folder = Path(tok.name_or_path) if own else tinylm_dir()
    path = folder / f"stream-{split}-{'+'.join(kinds)}-{key}.npy"
    if path.exists():
        return np.load(path)
    texts = stdlib_corpus(split, kinds=kinds, max_files=max_files)
    eos = tok.eos_token_id
    encoded = tok.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    pieces = []
    for enc in encoded:
        pieces.append(np.asarray(enc.ids, dtype=np.int64))
        pieces.append(np.asarray([eos], dtype=np.int64))
    dtype = np.uint16 if len(tok) < 65536 else np.int32
    stream = np.concatenate(pieces).astype(dtype) if pieces else np.zeros(0, dtype)
    # a per-process temporary name: two processes that encode the same split at once (two
    # claims starting together) each write their own file and the last rename wins, with the
    # same content
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
    np.save(tmp, stream)
    tmp.replace(path)
    return stream
