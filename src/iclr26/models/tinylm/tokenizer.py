"""The byte-level BPE tokenizer of the tiny LM, trained on the stdlib train split.

Digits are split into single tokens (as in Llama/Qwen tokenizers) so arithmetic tasks see one
token per digit; offsets are character offsets into the input, so spans can be mapped back.
No special token is added automatically: callers insert ``<bos>``/``<eos>`` where they want
them. The trained ``tokenizer.json`` is cached under a key made from the settings and the
corpus fingerprint.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from iclr26.data import corpus_fingerprint, stdlib_corpus
from iclr26.models.tinylm.cache import stable_hash, tinylm_dir, version_tag
from iclr26.models.tinylm.config import SPECIAL_TOKENS, VOCAB_SIZE

TOKENIZER_KINDS = ("code", "prose")


def _tokenizer_key(vocab_size: int) -> str:
    return stable_hash(
        {
            "kind": "bpe-bytelevel-digits",
            "vocab_size": vocab_size,
            "special": SPECIAL_TOKENS,
            "trained_on": TOKENIZER_KINDS,
            "corpus": corpus_fingerprint(),
        }
    )


def _train_bpe(vocab_size: int, path: Path) -> None:
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
    texts = stdlib_corpus("train", kinds=TOKENIZER_KINDS)
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


def get_tokenizer(vocab_size: int = VOCAB_SIZE):
    """The shared ``PreTrainedTokenizerFast`` (trained once, then loaded from the cache)."""
    if not isinstance(vocab_size, int) or vocab_size < 300:
        raise ValueError("vocab_size must be an int >= 300 (256 bytes + special tokens + merges)")
    folder = tinylm_dir() / f"tokenizer-v{vocab_size}-{_tokenizer_key(vocab_size)}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    if not path.exists():
        _train_bpe(vocab_size, path)
    return _load(str(path))


def token_stream(tok, split: str = "train", kinds: tuple[str, ...] = ("code",)) -> np.ndarray:
    """All texts of a corpus split encoded and joined by ``<eos>``, as one uint16/int32 array
    (cached next to the tokenizer)."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    key = stable_hash(
        {
            "tok": tok.name_or_path,
            "vocab": len(tok),
            "split": split,
            "kinds": kinds,
            "corpus": corpus_fingerprint(),
            **version_tag(),
        }
    )
    own = tok.name_or_path and Path(tok.name_or_path).is_dir()
    folder = Path(tok.name_or_path) if own else tinylm_dir()
    path = folder / f"stream-{split}-{'+'.join(kinds)}-{key}.npy"
    if path.exists():
        return np.load(path)
    texts = stdlib_corpus(split, kinds=kinds)
    eos = tok.eos_token_id
    encoded = tok.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    pieces = []
    for enc in encoded:
        pieces.append(np.asarray(enc.ids, dtype=np.int64))
        pieces.append(np.asarray([eos], dtype=np.int64))
    dtype = np.uint16 if len(tok) < 65536 else np.int32
    stream = np.concatenate(pieces).astype(dtype) if pieces else np.zeros(0, dtype)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, stream)
    tmp.replace(path)
    return stream
