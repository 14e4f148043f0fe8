"""Bad-input cases for the Revela room (read by tests/framework/test_bad_input.py)."""

import functools

import numpy as np
import torch

from iclr26.knowledge.revela import (
    BM25Retriever,
    ContrieverTrainer,
    CorpusIndex,
    InBatchAttentionLM,
    REPLUGTrainer,
    RevelaRetriever,
    RevelaTrainer,
    chunk_code,
    chunk_corpus,
    code_tokenize,
    in_batch_attention,
    make_interleaved_batches,
    ndcg_at_k,
    pseudo_pairs,
    recall_at_k,
    relevant_rank,
    retrieval_metrics,
    retriever_similarity,
    stdlib_code_search,
    stdlib_training_batches,
)

NAN, INF = float("nan"), float("inf")


@functools.cache
def _tiny():
    from iclr26.models.tinylm import pretrain_tiny_lm

    return pretrain_tiny_lm("test", steps=2, seq_len=32, batch=2, max_files=40)


@functools.cache
def _retriever():
    model, tok = _tiny()
    return RevelaRetriever.from_causal_lm(model, tokenizer=tok, max_length=16)


@functools.cache
def _lm():
    return InBatchAttentionLM(_tiny()[0])


def _with(t, value):
    t = t.clone()
    t.view(-1)[1] = value
    return t


_g = torch.Generator().manual_seed(0)
Q = torch.randn(2, 4, 5, 16, generator=_g)
KV = torch.randn(2, 2, 5, 16, generator=_g)
SIM = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
EMB = torch.randn(3, 8, generator=_g)
IDS = torch.randint(3, 100, (2, 6), generator=_g)
BATCH = ["def f(x):\n    return x", "def g(y):\n    return y * 2"]
RANKED = np.array([[1, 2, 3], [0, 2, 1]])


def _attn(**over):
    args = dict(query=Q, key_local=KV, value_local=KV, key_cross=KV, value_cross=KV, sim=SIM)
    args.update(over)
    return in_batch_attention(**args)


CASES = [
    # retriever_similarity
    (
        "retriever_similarity",
        "nan",
        lambda: retriever_similarity(_with(EMB, NAN)),
        ValueError,
        "query_emb",
    ),
    (
        "retriever_similarity",
        "inf",
        lambda: retriever_similarity(_with(EMB, INF)),
        ValueError,
        "query_emb",
    ),
    (
        "retriever_similarity",
        "shape",
        lambda: retriever_similarity(EMB[0]),
        ValueError,
        "query_emb",
    ),
    (
        "retriever_similarity",
        "shape",
        lambda: retriever_similarity(EMB, EMB[:2]),
        ValueError,
        "key_emb",
    ),
    (
        "retriever_similarity",
        "range",
        lambda: retriever_similarity(EMB, tau=0.0),
        ValueError,
        "tau",
    ),
    (
        "retriever_similarity",
        "range",
        lambda: retriever_similarity(EMB, tau=NAN),
        ValueError,
        "tau",
    ),
    (
        "retriever_similarity",
        "dtype",
        lambda: retriever_similarity(torch.ones(3, 2, dtype=torch.long)),
        TypeError,
        "query_emb",
    ),
    # in_batch_attention
    ("in_batch_attention", "nan", lambda: _attn(query=_with(Q, NAN)), ValueError, "query"),
    ("in_batch_attention", "inf", lambda: _attn(key_cross=_with(KV, INF)), ValueError, "key_cross"),
    (
        "in_batch_attention",
        "shape",
        lambda: _attn(value_local=KV[:, :, :3]),
        ValueError,
        "value_local",
    ),
    ("in_batch_attention", "shape", lambda: _attn(sim=torch.zeros(3, 3)), ValueError, "sim"),
    ("in_batch_attention", "range", lambda: _attn(sim=-SIM), ValueError, "sim"),
    (
        "in_batch_attention",
        "range",
        lambda: in_batch_attention(Q, KV, KV, KV, KV, SIM, eps=0.0),
        ValueError,
        "eps",
    ),
    (
        "in_batch_attention",
        "other",
        lambda: _attn(key_mask=torch.zeros(2, 5, dtype=torch.bool)),
        ValueError,
        "key_mask",
    ),
    # InBatchAttentionLM
    ("InBatchAttentionLM", "type", lambda: InBatchAttentionLM(object()), TypeError, "model"),
    (
        "InBatchAttentionLM",
        "range",
        lambda: InBatchAttentionLM(_tiny()[0], eps=-1.0),
        ValueError,
        "eps",
    ),
    (
        "InBatchAttentionLM",
        "type",
        lambda: InBatchAttentionLM(_tiny()[0], v_norm="yes"),
        TypeError,
        "v_norm",
    ),
    ("InBatchAttentionLM", "shape", lambda: _lm()(IDS, None, torch.zeros(3, 3)), ValueError, "sim"),
    ("InBatchAttentionLM", "nan", lambda: _lm()(IDS, None, _with(SIM, NAN)), ValueError, "sim"),
    ("InBatchAttentionLM", "dtype", lambda: _lm()(IDS.float(), None, SIM), TypeError, "input_ids"),
    ("InBatchAttentionLM", "empty", lambda: _lm()(IDS[:, :0], None, SIM), ValueError, "input_ids"),
    ("InBatchAttentionLM", "other", lambda: _lm()(IDS, None, None), TypeError, "sim"),
    # chunking and batching
    ("chunk_code", "type", lambda: chunk_code(b"def f(): pass"), TypeError, "source"),
    ("chunk_code", "range", lambda: chunk_code("x = 1", max_words=0), ValueError, "max_words"),
    ("chunk_corpus", "empty", lambda: chunk_corpus([]), ValueError, "documents"),
    ("chunk_corpus", "type", lambda: chunk_corpus("one string"), TypeError, "documents"),
    ("chunk_corpus", "type", lambda: chunk_corpus(["ok", 3]), TypeError, "documents"),
    (
        "chunk_corpus",
        "range",
        lambda: chunk_corpus(["x"], max_words=5, min_words=9),
        ValueError,
        "min_words",
    ),
    (
        "make_interleaved_batches",
        "empty",
        lambda: make_interleaved_batches([]),
        ValueError,
        "chunked",
    ),
    (
        "make_interleaved_batches",
        "empty",
        lambda: make_interleaved_batches([[], []]),
        ValueError,
        "chunked",
    ),
    (
        "make_interleaved_batches",
        "range",
        lambda: make_interleaved_batches([["a"]], batch_size=0),
        ValueError,
        "batch_size",
    ),
    (
        "make_interleaved_batches",
        "range",
        lambda: make_interleaved_batches([["a", "b"]], batch_size=4),
        ValueError,
        "batch_size",
    ),
    (
        "make_interleaved_batches",
        "type",
        lambda: make_interleaved_batches(["abc"]),
        TypeError,
        "chunked",
    ),
    (
        "make_interleaved_batches",
        "range",
        lambda: make_interleaved_batches([["a"]], batch_size=2, docs_per_batch=3),
        ValueError,
        "docs_per_batch",
    ),
    (
        "stdlib_code_search",
        "range",
        lambda: stdlib_code_search(splits=("dev",)),
        ValueError,
        "splits",
    ),
    ("stdlib_code_search", "empty", lambda: stdlib_code_search(splits=()), ValueError, "splits"),
    (
        "stdlib_code_search",
        "range",
        lambda: stdlib_code_search(min_query_words=0),
        ValueError,
        "min_query_words",
    ),
    (
        "stdlib_training_batches",
        "range",
        lambda: stdlib_training_batches(max_files=0),
        ValueError,
        "max_files",
    ),
    (
        "stdlib_training_batches",
        "range",
        lambda: stdlib_training_batches(batch_size=4, docs_per_batch=8, max_files=2),
        ValueError,
        "docs_per_batch",
    ),
    # metrics
    ("ndcg_at_k", "range", lambda: ndcg_at_k(RANKED, [1, 2], k=0), ValueError, "k"),
    ("ndcg_at_k", "shape", lambda: ndcg_at_k(RANKED, [1, 2, 3]), ValueError, "relevant"),
    ("ndcg_at_k", "empty", lambda: ndcg_at_k(np.zeros((0, 3)), []), ValueError, "ranked"),
    ("recall_at_k", "shape", lambda: recall_at_k(RANKED[0], [1]), ValueError, "ranked"),
    (
        "recall_at_k",
        "nan",
        lambda: recall_at_k([[NAN, 1.0]], [1]),
        (ValueError, TypeError),
        "ranked",
    ),
    ("relevant_rank", "dtype", lambda: relevant_rank([[0.5, 1.0]], [1]), TypeError, "ranked"),
    (
        "retrieval_metrics",
        "range",
        lambda: retrieval_metrics(RANKED, [1, 2], k=-1),
        ValueError,
        "k",
    ),
    (
        "retrieval_metrics",
        "shape",
        lambda: retrieval_metrics(RANKED, [[1, 2]]),
        ValueError,
        "relevant",
    ),
    # index and BM25
    ("CorpusIndex", "nan", lambda: CorpusIndex(np.array([[NAN, 1.0]])), ValueError, "embeddings"),
    ("CorpusIndex", "empty", lambda: CorpusIndex(np.zeros((0, 4))), ValueError, "embeddings"),
    (
        "CorpusIndex",
        "shape",
        lambda: CorpusIndex(np.ones((3, 2)), owner=[0, 1]),
        ValueError,
        "owner",
    ),
    (
        "CorpusIndex",
        "range",
        lambda: CorpusIndex(np.ones((2, 2)), owner=[0, -1]),
        ValueError,
        "owner",
    ),
    (
        "CorpusIndex",
        "shape",
        lambda: CorpusIndex(np.ones((2, 2))).search(np.ones((1, 3))),
        ValueError,
        "queries",
    ),
    (
        "CorpusIndex",
        "range",
        lambda: CorpusIndex(np.ones((2, 2))).search(np.ones((1, 2)), k=0),
        ValueError,
        "k",
    ),
    (
        "CorpusIndex",
        "inf",
        lambda: CorpusIndex(np.ones((2, 2))).search(np.array([[INF, 0.0]])),
        ValueError,
        "queries",
    ),
    ("BM25Retriever", "empty", lambda: BM25Retriever().index([]), ValueError, "documents"),
    (
        "BM25Retriever",
        "empty",
        lambda: BM25Retriever().index(["def f(): pass", " \n"]),
        ValueError,
        r"documents\[1\] is blank",
    ),
    (
        "BM25Retriever",
        "empty",
        lambda: BM25Retriever().index(["a b"]).search([""]),
        ValueError,
        r"queries\[0\] is blank",
    ),
    (
        "BM25Retriever",
        "other",
        lambda: BM25Retriever().index(["a b"]).search(["a b", "()"]),
        ValueError,
        r"queries\[1\] has no word token",
    ),
    ("BM25Retriever", "range", lambda: BM25Retriever(k1=NAN), ValueError, "k1"),
    ("BM25Retriever", "range", lambda: BM25Retriever(b=1.5), ValueError, "b"),
    (
        "BM25Retriever",
        "empty",
        lambda: BM25Retriever().index(["a b"]).search([]),
        ValueError,
        "queries",
    ),
    ("code_tokenize", "type", lambda: code_tokenize(None), TypeError, "text"),
    # retriever
    (
        "RevelaRetriever",
        "range",
        lambda: RevelaRetriever(_tiny()[0].get_decoder(), _tiny()[1], pooling="cls"),
        ValueError,
        "pooling",
    ),
    (
        "RevelaRetriever",
        "range",
        lambda: RevelaRetriever(_tiny()[0].get_decoder(), _tiny()[1], max_length=1),
        ValueError,
        "max_length",
    ),
    (
        "RevelaRetriever",
        "type",
        lambda: RevelaRetriever(object(), _tiny()[1]),
        TypeError,
        "backbone",
    ),
    ("RevelaRetriever", "empty", lambda: _retriever().encode([]), ValueError, "sentences"),
    ("RevelaRetriever", "type", lambda: _retriever().encode([1, 2]), TypeError, "sentences"),
    ("RevelaRetriever", "empty", lambda: _retriever().index([]), ValueError, "documents"),
    (
        "RevelaRetriever",
        "empty",
        lambda: _retriever().index(["def f(): pass", ""]),
        ValueError,
        r"documents\[1\] is blank",
    ),
    (
        "RevelaRetriever",
        "empty",
        lambda: _retriever().search(["  "], CorpusIndex(np.ones((1, 64)))),
        ValueError,
        r"queries\[0\] is blank",
    ),
    (
        "RevelaRetriever",
        "empty",
        lambda: _retriever().search([], CorpusIndex(np.ones((1, 64)))),
        ValueError,
        "queries",
    ),
    ("RevelaRetriever", "type", lambda: _retriever().search(["q"], "index"), TypeError, "index"),
    (
        "RevelaRetriever",
        "range",
        lambda: _retriever().encode(["a"], batch_size=0),
        ValueError,
        "batch_size",
    ),
    (
        "RevelaRetriever",
        "type",
        lambda: RevelaRetriever.from_causal_lm(_tiny()[0]),
        TypeError,
        "tokenizer",
    ),
    # trainers
    (
        "RevelaTrainer",
        "type",
        lambda: RevelaTrainer("retriever", _tiny()[0]),
        TypeError,
        "retriever",
    ),
    (
        "RevelaTrainer",
        "range",
        lambda: RevelaTrainer(_retriever(), _lm(), tau=0.0),
        ValueError,
        "tau",
    ),
    (
        "RevelaTrainer",
        "range",
        lambda: RevelaTrainer(_retriever(), _lm(), lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "RevelaTrainer",
        "range",
        lambda: RevelaTrainer(_retriever(), _lm(), batch_size=1),
        ValueError,
        "batch_size",
    ),
    (
        "RevelaTrainer",
        "empty",
        lambda: RevelaTrainer(_retriever(), _lm(), batch_size=2).fit([]),
        ValueError,
        "batches",
    ),
    (
        "RevelaTrainer",
        "shape",
        lambda: RevelaTrainer(_retriever(), _lm(), batch_size=4).fit([BATCH]),
        ValueError,
        "batches",
    ),
    (
        "RevelaTrainer",
        "other",
        lambda: RevelaTrainer(_retriever(), _lm(), batch_size=2).fit([["x", "  "]]),
        ValueError,
        "batches",
    ),
    (
        "RevelaTrainer",
        "range",
        lambda: RevelaTrainer(_retriever(), _lm(), batch_size=2).fit([BATCH], steps=0),
        ValueError,
        "steps",
    ),
    (
        "ContrieverTrainer",
        "range",
        lambda: ContrieverTrainer(_retriever(), tau=-1.0),
        ValueError,
        "tau",
    ),
    (
        "ContrieverTrainer",
        "range",
        lambda: ContrieverTrainer(_retriever(), ict_probability=2.0),
        ValueError,
        "ict_probability",
    ),
    (
        "ContrieverTrainer",
        "range",
        lambda: ContrieverTrainer(_retriever(), crop_ratio=(0.5, 0.2)),
        ValueError,
        "crop_ratio",
    ),
    (
        "ContrieverTrainer",
        "empty",
        lambda: ContrieverTrainer(_retriever()).fit([]),
        ValueError,
        "batches",
    ),
    (
        "REPLUGTrainer",
        "range",
        lambda: REPLUGTrainer(_retriever(), _tiny()[0], tau_r=0.0),
        ValueError,
        "tau_r",
    ),
    (
        "REPLUGTrainer",
        "range",
        lambda: REPLUGTrainer(_retriever(), _tiny()[0], tau_lm=INF),
        ValueError,
        "tau_lm",
    ),
    ("REPLUGTrainer", "type", lambda: REPLUGTrainer(_retriever(), object()), TypeError, "lm"),
    (
        "pseudo_pairs",
        "range",
        lambda: pseudo_pairs(BATCH, _tiny()[1], np.random.default_rng(0), ict_probability=NAN),
        ValueError,
        "ict_probability",
    ),
    (
        "pseudo_pairs",
        "range",
        lambda: pseudo_pairs(BATCH, _tiny()[1], np.random.default_rng(0), crop_ratio=(0.0, 0.5)),
        ValueError,
        "crop_ratio",
    ),
]

EXEMPT = {
    "StdlibCodeSearch": "a record dataclass returned by stdlib_code_search; takes no user data",
}
