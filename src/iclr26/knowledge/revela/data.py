"""Revela's data: chunking raw code into passages, the interleaved batch recipe (paper §4.1,
App. B.2), and the held-out stdlib code-search set the claims evaluate on.

Training needs no query-document pairs: chunks of raw source text are grouped so that one batch
holds several chunks of a few files (the paper's "interleave then cut" recipe), which gives the
in-batch attention related chunks to read. Evaluation pairs the first paragraph of a function's
docstring (the query) with that function's source with every docstring removed (the document),
over the val + test files of the shared stdlib split, which neither the tiny LM nor Revela trains
on.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V

__all__ = [
    "chunk_code",
    "chunk_corpus",
    "make_interleaved_batches",
    "StdlibCodeSearch",
    "stdlib_code_search",
    "stdlib_training_batches",
]

_TOP_LEVEL = re.compile(r"^(?:async\s+def\s|def\s|class\s|@)")


def _check_texts(texts, name: str) -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name}: expected a list of strings, got one string (wrap it in a list)")
    try:
        texts = list(texts)
    except TypeError as exc:
        raise TypeError(f"{name}: expected a list of strings, got {type(texts).__name__}") from exc
    if not texts:
        raise ValueError(f"{name} is empty: need at least one text")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
    return texts


def _top_level_pieces(source: str) -> list[str]:
    """Split at lines that open a top-level ``def``/``class``/decorator (column 0), keeping a
    decorator with the definition below it."""
    lines = source.splitlines()
    pieces, current = [], []
    prev_decorator = False
    for line in lines:
        opens = bool(_TOP_LEVEL.match(line))
        if opens and current and not prev_decorator:
            pieces.append("\n".join(current))
            current = []
        current.append(line)
        prev_decorator = line.startswith("@")
    if current:
        pieces.append("\n".join(current))
    return pieces


def _split_blank_lines(piece: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", piece) if p.strip()]


def _words(text: str) -> int:
    return len(text.split())


def chunk_code(source: str, max_words: int = 120) -> list[str]:
    """Cut one source file into chunks of at most ``max_words`` whitespace words.

    The cut points follow the code's structure: top-level ``def``/``class`` boundaries first,
    then blank lines inside a piece, then single lines; consecutive pieces are merged while they
    fit (the code analogue of the paper's whole-sentence chunks of <= 120 words). A single line
    longer than ``max_words`` is cut between words. Whitespace-only input gives no chunk."""
    if not isinstance(source, str):
        raise TypeError(f"source: expected a string, got {type(source).__name__}")
    max_words = V.check_int(max_words, "max_words", low=1)
    units: list[str] = []
    for piece in _top_level_pieces(source):
        if _words(piece) <= max_words:
            units.append(piece)
            continue
        for block in _split_blank_lines(piece):
            if _words(block) <= max_words:
                units.append(block)
                continue
            for line in block.splitlines():
                words = line.split()
                if len(words) <= max_words:
                    units.append(line)
                else:
                    indent = line[: len(line) - len(line.lstrip())]
                    units.extend(
                        indent + " ".join(words[k : k + max_words])
                        for k in range(0, len(words), max_words)
                    )
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for unit in units:
        n = _words(unit)
        if n == 0:
            continue
        if current and count + n > max_words:
            chunks.append("\n".join(current).strip("\n"))
            current, count = [], 0
        current.append(unit)
        count += n
    if current:
        chunks.append("\n".join(current).strip("\n"))
    return [c for c in chunks if c.strip()]


def chunk_corpus(
    documents: Sequence[str],
    max_words: int = 120,
    min_words: int = 5,
    dedup: bool = True,
) -> list[list[str]]:
    """Chunk every document with :func:`chunk_code`; returns one list of chunks per document.

    Chunks under ``min_words`` words are dropped (blank scaffolding, lone imports), and with
    ``dedup`` an exact duplicate of an earlier chunk anywhere in the corpus is dropped, so that
    the in-batch attention can never copy a chunk from its twin (the spec's duplicate pitfall).
    """
    documents = _check_texts(documents, "documents")
    max_words = V.check_int(max_words, "max_words", low=1)
    min_words = V.check_int(min_words, "min_words", low=0, high=max_words)
    dedup = V.check_bool(dedup, "dedup")
    seen: set[str] = set()
    out = []
    for doc in documents:
        kept = []
        for chunk in chunk_code(doc, max_words):
            if _words(chunk) < min_words:
                continue
            key = chunk.strip()
            if dedup:
                if key in seen:
                    continue
                seen.add(key)
            kept.append(chunk)
        out.append(kept)
    return out


def make_interleaved_batches(
    chunked: Sequence[Sequence[str]],
    batch_size: int = 16,
    docs_per_batch: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = True,
) -> list[list[str]]:
    """Group chunks into batches of ``batch_size`` (paper App. B.2).

    ``docs_per_batch=None`` is the paper's Wikipedia recipe: interleave the documents' chunks
    (d_11, d_21, ..., d_n1, d_12, ...) and cut consecutive groups of ``batch_size``.
    ``docs_per_batch=m`` is the code recipe of the spec: take ``m`` consecutive documents at a
    time and interleave their chunks, so a batch holds ``batch_size / m`` chunks of each of
    ``m`` files. With ``shuffle`` the order inside each batch is permuted (seeded); a short last
    batch is dropped unless ``drop_last=False``."""
    if isinstance(chunked, str) or not isinstance(chunked, Sequence):
        raise TypeError("chunked: expected a list of per-document chunk lists")
    if not chunked:
        raise ValueError("chunked is empty: need at least one document")
    for i, doc in enumerate(chunked):
        if isinstance(doc, str) or not isinstance(doc, Sequence):
            raise TypeError(f"chunked[{i}]: expected a list of chunk strings")
        for c in doc:
            if not isinstance(c, str):
                raise TypeError(f"chunked[{i}]: chunks must be strings, got {type(c).__name__}")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    if docs_per_batch is not None:
        docs_per_batch = V.check_int(docs_per_batch, "docs_per_batch", low=1, high=batch_size)
    shuffle = V.check_bool(shuffle, "shuffle")
    drop_last = V.check_bool(drop_last, "drop_last")
    seed = V.check_int(seed, "seed", low=0)
    if sum(len(d) for d in chunked) == 0:
        raise ValueError("chunked holds no chunk: every document is empty")

    def interleave(docs: Sequence[Sequence[str]]) -> list[str]:
        order = []
        depth = max((len(d) for d in docs), default=0)
        for k in range(depth):
            order.extend(d[k] for d in docs if k < len(d))
        return order

    if docs_per_batch is None:
        stream = interleave(chunked)
        groups = [stream[k : k + batch_size] for k in range(0, len(stream), batch_size)]
    else:
        per_doc = batch_size // docs_per_batch
        groups = []
        nonempty = [d for d in chunked if d]
        for start in range(0, len(nonempty), docs_per_batch):
            docs = nonempty[start : start + docs_per_batch]
            # cut each document into runs of per_doc chunks, then take run r of every document
            runs = max((len(d) + per_doc - 1) // per_doc for d in docs)
            stream = []
            for r in range(runs):
                for d in docs:
                    stream.extend(d[r * per_doc : (r + 1) * per_doc])
            groups.extend(stream[k : k + batch_size] for k in range(0, len(stream), batch_size))
    if drop_last:
        groups = [g for g in groups if len(g) == batch_size]
    rng = np.random.default_rng(seed)
    batches = []
    for g in groups:
        g = list(g)
        if shuffle:
            g = [g[p] for p in rng.permutation(len(g))]
        batches.append(g)
    if not batches:
        raise ValueError(
            f"batch_size={batch_size} is larger than the corpus allows (no full batch); "
            "lower it or pass drop_last=False"
        )
    return batches


# ---------------------------------------------------------------- the stdlib code-search set


@dataclass
class StdlibCodeSearch:
    """A code-search set: ``queries[i]`` is relevant to ``corpus[relevant[i]]`` only.

    ``names[k]`` is ``"relpath:qualname"`` of document ``k``; ``info`` records how the set was
    built (files, functions, dropped duplicates, the corpus fingerprint)."""

    queries: list[str]
    corpus: list[str]
    relevant: np.ndarray
    names: list[str]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queries)


def _strip_docstrings(node: ast.AST, lines: list[str]) -> str:
    """Source of ``node`` with the docstring of it and of every nested def/class removed."""
    drop: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub.body:
            first = sub.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno - 1, first.end_lineno))
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno]) - 1
    kept = [lines[k] for k in range(start, node.end_lineno) if k not in drop]
    if not kept:
        return ""
    indent = (
        min(len(x) - len(x.lstrip()) for x in kept if x.strip())
        if any(x.strip() for x in kept)
        else 0
    )
    return "\n".join(x[indent:] for x in kept).strip("\n")


def _functions(source: str) -> list[tuple[str, ast.AST]]:
    """Functions not nested in another function: module level and methods of classes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + node.name, node))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return out


def _norm(code: str) -> str:
    return hashlib.sha1(" ".join(code.split()).encode()).hexdigest()


def _train_function_hashes() -> set[str]:
    """Whitespace-normalised hashes of every train-split function (cached by fingerprint)."""
    from iclr26.data.stdlib import cache_dir, corpus_fingerprint, stdlib_texts

    path = cache_dir() / f"revela-train-functions-{corpus_fingerprint()[:16]}.json"
    if path.is_file():
        try:
            return set(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass
    hashes = set()
    for text in stdlib_texts("train"):
        lines = text.text.splitlines()
        for _, node in _functions(text.text):
            hashes.add(_norm(_strip_docstrings(node, lines)))
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(sorted(hashes)))
    os.replace(tmp, path)
    return hashes


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n")[0].split())


def stdlib_code_search(
    splits: Sequence[str] = ("val", "test"),
    min_query_words: int = 5,
    max_files: int | None = None,
    max_queries: int | None = None,
    dedup_against_train: bool = True,
) -> StdlibCodeSearch:
    """The held-out code-search set of the claims, built from the stdlib's own source.

    Every function of the ``splits`` files that is not nested in another function is a
    document (its source, every docstring removed); a function whose docstring's first
    paragraph has at least ``min_query_words`` words also gives a query (that paragraph).
    Exact duplicates (after whitespace normalisation) are dropped within the set and, with
    ``dedup_against_train``, against every train-split function. ``max_queries`` keeps the first
    queries (the corpus stays whole)."""
    from iclr26.data.stdlib import SPLITS, corpus_fingerprint, stdlib_texts

    if isinstance(splits, str):
        splits = (splits,)
    splits = tuple(splits)
    if not splits:
        raise ValueError("splits is empty: name at least one of val, test, train")
    for s in splits:
        V.check_choice(s, "splits", SPLITS)
    min_query_words = V.check_int(min_query_words, "min_query_words", low=1)
    max_files = V.check_int(max_files, "max_files", low=1, allow_none=True)
    max_queries = V.check_int(max_queries, "max_queries", low=1, allow_none=True)
    dedup_against_train = V.check_bool(dedup_against_train, "dedup_against_train")
    train = _train_function_hashes() if dedup_against_train and "train" not in splits else set()
    queries, corpus, relevant, names = [], [], [], []
    seen: set[str] = set()
    n_files = n_functions = dup_within = dup_train = 0
    for split in splits:
        for text in stdlib_texts(split, max_files=max_files):
            n_files += 1
            lines = text.text.splitlines()
            for qualname, node in _functions(text.text):
                n_functions += 1
                code = _strip_docstrings(node, lines)
                key = _norm(code)
                if key in seen:
                    dup_within += 1
                    continue
                if key in train:
                    dup_train += 1
                    continue
                seen.add(key)
                doc = ast.get_docstring(node)
                if doc and len(_first_paragraph(doc).split()) >= min_query_words:
                    if max_queries is None or len(queries) < max_queries:
                        queries.append(_first_paragraph(doc))
                        relevant.append(len(corpus))
                corpus.append(code)
                names.append(f"{text.key}:{qualname}")
    if not queries:
        raise ValueError("the selected files hold no documented function; widen splits/max_files")
    info = {
        "splits": list(splits),
        "files": n_files,
        "functions": n_functions,
        "documents": len(corpus),
        "queries": len(queries),
        "dropped_duplicates_within": dup_within,
        "dropped_duplicates_of_train": dup_train,
        "corpus_fingerprint": corpus_fingerprint()[:16],
    }
    return StdlibCodeSearch(queries, corpus, np.asarray(relevant, dtype=np.int64), names, info)


def stdlib_training_batches(
    batch_size: int = 16,
    docs_per_batch: int = 4,
    max_words: int = 120,
    max_files: int | None = None,
    seed: int = 0,
) -> list[list[str]]:
    """Self-supervised training batches from the train-split files: chunk, dedup, then
    ``docs_per_batch`` consecutive files x ``batch_size / docs_per_batch`` chunks per batch,
    shuffled within the batch (the spec's code recipe)."""
    from iclr26.data.stdlib import stdlib_corpus

    max_files = V.check_int(max_files, "max_files", low=1, allow_none=True)
    docs = stdlib_corpus("train", max_files=max_files)
    chunked = chunk_corpus(docs, max_words=max_words)
    return make_interleaved_batches(
        chunked, batch_size=batch_size, docs_per_batch=docs_per_batch, seed=seed
    )
