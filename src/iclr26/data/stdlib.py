"""The Python standard library as an offline text and code corpus.

Files are taken from the running interpreter's stdlib directory (tests, site-packages,
caches and files over 300 KB skipped), sorted by relative path and split by
``zlib.crc32(relpath) % 20``: 0 is test, 1 is val, the rest train. The ``prose`` kind is the
reference manual's text shipped in ``pydoc_data.topics``, split the same way by topic key;
the ``docstrings`` kind is every docstring of the code files, pulled out with ``ast``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sysconfig
import zlib
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "val", "test")
KINDS = ("code", "docstrings", "prose")
_SKIP_DIRS = {"site-packages", "test", "tests", "idle_test", "__pycache__"}
_MAX_BYTES = 300_000


@dataclass(frozen=True)
class CorpusText:
    """One text of the corpus: its kind, its source key (relative path or topic) and text."""

    kind: str
    key: str
    text: str


def split_of(key: str) -> str:
    bucket = zlib.crc32(key.encode("utf-8")) % 20
    return "test" if bucket == 0 else "val" if bucket == 1 else "train"


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=1)
def _code_files() -> tuple[tuple[str, int], ...]:
    root = stdlib_root()
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]  # prune, never descend
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = Path(dirpath) / name
            size = path.stat().st_size
            if size <= _MAX_BYTES:
                files.append((path.relative_to(root).as_posix(), size))
    return tuple(sorted(files))


def corpus_fingerprint() -> str:
    """sha256 over the sorted (relpath, size) list of the code files, plus the prose keys."""
    digest = hashlib.sha256()
    for rel, size in _code_files():
        digest.update(f"{rel}\0{size}\n".encode())
    for key in sorted(_prose_topics()):
        digest.update(f"topic:{key}\n".encode())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _prose_topics() -> dict[str, str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip pydoc_data
        return {}
    return dict(topics)


def _read(rel: str) -> str:
    return (stdlib_root() / rel).read_text(encoding="utf-8", errors="replace")


def _docstrings(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    nodes = [tree] + [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    docs = (ast.get_docstring(n) for n in nodes)
    return [d for d in docs if d]


def cache_dir() -> Path:
    """The package's on-disk cache: ``$ICLR26_CACHE``, default ``~/.cache/iclr26``."""
    path = Path(os.environ.get("ICLR26_CACHE", Path.home() / ".cache" / "iclr26"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.lru_cache(maxsize=1)
def _all_docstrings() -> dict[str, list[str]]:
    """Docstrings of every code file, parsed once and cached on disk by fingerprint."""
    path = cache_dir() / f"stdlib-docstrings-{corpus_fingerprint()[:16]}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    docs = {rel: _docstrings(_read(rel)) for rel, _ in _code_files()}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(docs), encoding="utf-8")
    os.replace(tmp, path)
    return docs


def stdlib_texts(
    split: str = "train", kinds: tuple[str, ...] = ("code",), max_files: int | None = None
) -> list[CorpusText]:
    """Texts of one split, each tagged with its kind, in a deterministic order."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"unknown corpus kinds {bad}; valid: {', '.join(KINDS)}")
    if max_files is not None and max_files < 1:
        raise ValueError("max_files must be a positive integer or None")
    out: list[CorpusText] = []
    if "code" in kinds or "docstrings" in kinds:
        files = [rel for rel, _ in _code_files() if split_of(rel) == split]
        if max_files is not None:
            files = files[:max_files]
        docstrings = _all_docstrings() if "docstrings" in kinds and max_files is None else None
        for rel in files:
            if "code" in kinds:
                out.append(CorpusText("code", rel, _read(rel)))
            if "docstrings" in kinds:
                docs = docstrings[rel] if docstrings is not None else _docstrings(_read(rel))
                out.extend(CorpusText("docstrings", rel, d) for d in docs)
    if "prose" in kinds:
        topics = _prose_topics()
        keys = [k for k in sorted(topics) if split_of(k) == split]
        if max_files is not None:
            keys = keys[:max_files]
        out.extend(CorpusText("prose", k, topics[k]) for k in keys)
    return out


def stdlib_corpus(
    split: str = "train", kinds: tuple[str, ...] | str = ("code",), max_files: int | None = None
) -> list[str]:
    """The stdlib corpus as plain strings (see :func:`stdlib_texts` for tagged texts)."""
    return [t.text for t in stdlib_texts(split, kinds, max_files)]
