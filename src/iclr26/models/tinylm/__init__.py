"""The shared tiny causal LM: a Hugging Face ``LlamaForCausalLM`` trained on the stdlib.

Every LLM room needs "some causal LM" and none may download weights, so the package trains its
own tiny Llama once, caches it (``$ICLR26_CACHE``, default ``~/.cache/iclr26``) and hands it
out through :func:`load_causal_lm`, which sends any other name to ``from_pretrained``.

Pretraining cost, measured once on a 2-core machine shared with about twenty other processes
(load average 18-20), one torch thread: the ``quick`` size (800 steps x 8 x 512 tokens, 1.3 M
parameters) ran at 8.6 s per step (100 steps in 876 s), so the full 800 steps would take about
two hours under that load; the run was stopped there and an idle-machine time is not measured.
The 6-layer ``quick`` variant used by ABSignSGD (150 steps x 16 x 128 tokens) took 922 s under
the same load. See README.md.
"""

from iclr26.data import corpus_fingerprint, stdlib_corpus
from iclr26.models.tinylm.cache import cache_dir
from iclr26.models.tinylm.config import (
    PRETRAIN_STEPS,
    SIZES,
    SPECIAL_TOKENS,
    VOCAB_SIZE,
    tiny_llama_config,
)
from iclr26.models.tinylm.evaluate import (
    continuation_logprob,
    greedy_generate,
    next_token_accuracy,
    perplexity,
    time_it,
)
from iclr26.models.tinylm.loading import load_causal_lm, warmup
from iclr26.models.tinylm.tokenizer import get_tokenizer, token_stream
from iclr26.models.tinylm.train import (
    cosine_with_warmup,
    finetune_lm,
    pretrain_dir,
    pretrain_tiny_lm,
    sample_windows,
)

__all__ = [
    "PRETRAIN_STEPS",
    "SIZES",
    "SPECIAL_TOKENS",
    "VOCAB_SIZE",
    "cache_dir",
    "continuation_logprob",
    "corpus_fingerprint",
    "cosine_with_warmup",
    "finetune_lm",
    "get_tokenizer",
    "greedy_generate",
    "load_causal_lm",
    "next_token_accuracy",
    "perplexity",
    "pretrain_dir",
    "pretrain_tiny_lm",
    "sample_windows",
    "stdlib_corpus",
    "time_it",
    "token_stream",
    "tiny_llama_config",
    "warmup",
]
