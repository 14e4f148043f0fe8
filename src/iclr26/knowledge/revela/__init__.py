"""Revela: dense retriever learning via language modeling (Cai et al., ICLR 2026).

Revela trains a retriever without query-document pairs: a batch of chunks runs through a causal
LM whose layers also attend across chunks (in-batch attention), and the cross-chunk parts are
weighted by the retriever's similarities, so the next-token loss teaches the retriever which
chunks help predict which. :class:`RevelaTrainer` trains retriever and LM jointly;
:class:`RevelaRetriever` encodes and searches a corpus through a saveable :class:`CorpusIndex`;
:class:`ContrieverTrainer` and :class:`REPLUGTrainer` are the baselines on the same batches.
"""

from iclr26.knowledge.revela.attention import (
    ATTENTION_NAME,
    InBatchAttentionLM,
    in_batch_attention,
    retriever_similarity,
)
from iclr26.knowledge.revela.data import (
    StdlibCodeSearch,
    chunk_code,
    chunk_corpus,
    make_interleaved_batches,
    stdlib_code_search,
    stdlib_training_batches,
)
from iclr26.knowledge.revela.evaluate import (
    ndcg_at_k,
    recall_at_k,
    relevant_rank,
    retrieval_metrics,
)
from iclr26.knowledge.revela.retriever import (
    PASSAGE_PREFIX,
    QUERY_PREFIX,
    BM25Retriever,
    CorpusIndex,
    RevelaRetriever,
    code_tokenize,
)
from iclr26.knowledge.revela.training import (
    ContrieverTrainer,
    REPLUGTrainer,
    RevelaTrainer,
    pseudo_pairs,
)

__all__ = [
    "ATTENTION_NAME",
    "BM25Retriever",
    "ContrieverTrainer",
    "CorpusIndex",
    "InBatchAttentionLM",
    "PASSAGE_PREFIX",
    "QUERY_PREFIX",
    "REPLUGTrainer",
    "RevelaRetriever",
    "RevelaTrainer",
    "StdlibCodeSearch",
    "chunk_code",
    "chunk_corpus",
    "code_tokenize",
    "in_batch_attention",
    "make_interleaved_batches",
    "ndcg_at_k",
    "pseudo_pairs",
    "recall_at_k",
    "relevant_rank",
    "retrieval_metrics",
    "retriever_similarity",
    "stdlib_code_search",
    "stdlib_training_batches",
]
