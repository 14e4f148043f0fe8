"""A synthetic web corpus of known provenance, built offline.

Clean documents are paragraphs of real prose that ships with Python (the reference manual's
help topics and the standard library's docstrings), exact-deduplicated and used once each.
Junk documents come from six labelled generators (J1 keyword spam, J2 navigation/link lists,
J3 number/price tables, J4 hex/base64 blobs, J5 run-on "SEO" text with its sentence
punctuation removed, J6 bigram Markov word salad fit on the clean text). Boilerplate spans
(footers, cookie banners, disclaimers) of 60-300 tokens are planted in several documents each,
half inside a line and half as whole lines, and recorded as character intervals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V
from iclr26.data import stdlib_texts

_LETTER = re.compile(r"[^\W\d_]")
JUNK_KINDS = ("J1", "J2", "J3", "J4", "J5", "J6")

_BOILER_WORDS = (
    "cookies consent privacy policy terms service accept reject partners advertising analytics "
    "personalised content measurement subscribe newsletter copyright reserved rights disclaimer "
    "liability affiliate links commission sponsored editorial independent contact support "
    "unsubscribe preferences settings manage storage device identifiers legitimate interest "
    "vendors processing purposes withdraw notice updated effective jurisdiction governing law"
).split()


@dataclass
class Document:
    doc_id: int
    text: str
    label: str  # "clean" or one of JUNK_KINDS
    source: str  # train/val/test for clean docs, the generator for junk
    planted: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, span id)


def clean_paragraphs(split: str, max_files: int | None = None) -> list[str]:
    """Unique prose paragraphs (>= 12 words, mostly letters) of one split, in a fixed order."""
    texts = stdlib_texts(split, kinds=("prose", "docstrings"), max_files=max_files)
    seen, out = set(), []
    for t in texts:
        for para in re.split(r"\n\s*\n", t.text):
            para = " ".join(para.split())
            letters = len(_LETTER.findall(para))
            if len(para.split()) >= 12 and letters / max(1, len(para)) > 0.6 and para not in seen:
                seen.add(para)
                out.append(para)
    return out


class _Junk:
    def __init__(self, clean: list[str], rng: np.random.Generator) -> None:
        self.rng = rng
        words = " ".join(clean).split()
        self.words = [w for w in words if w.isalpha()]
        vocab, counts = np.unique([w.lower() for w in self.words], return_counts=True)
        self.top = vocab[np.argsort(-counts)][:300]
        # Bigram chain over whitespace tokens of the clean text (punctuation stays attached).
        self.chain: dict[str, list[str]] = {}
        for a, b in zip(words[:-1], words[1:]):
            self.chain.setdefault(a, []).append(b)
        self.starts = [w for w in words if w[:1].isupper()] or words

    def n_words(self) -> int:
        return int(self.rng.integers(60, 220))

    def J1(self) -> str:  # keyword spam: frequent words repeated, no punctuation
        pool = self.rng.choice(self.top[:40], size=int(self.rng.integers(4, 9)), replace=False)
        return " ".join(self.rng.choice(pool, size=self.n_words()))

    def J2(self) -> str:  # navigation bars and link lists
        items = [
            "Home",
            "About",
            "Contact",
            "Blog",
            "Shop",
            "Login",
            "Sign up",
            "FAQ",
            "Careers",
            "Press",
            "Help",
            "Sitemap",
            "News",
            "Events",
            "Docs",
            "Pricing",
        ]
        lines = []
        for _ in range(int(self.rng.integers(4, 12))):
            k = int(self.rng.integers(3, 8))
            if self.rng.random() < 0.5:
                lines.append(" | ".join(self.rng.choice(items, size=k, replace=False)))
            else:
                slug = "-".join(self.rng.choice(self.top[:200], size=3))
                lines.append(f"https://www.example{int(self.rng.integers(1, 999))}.com/{slug}")
        return "\n".join(lines)

    def J3(self) -> str:  # number and price tables
        rows = []
        for _ in range(int(self.rng.integers(6, 20))):
            item = " ".join(self.rng.choice(self.top[:200], size=2)).title()
            price = self.rng.uniform(1, 999)
            qty = int(self.rng.integers(1, 500))
            rows.append(
                f"{item} {qty} ${price:.2f} {qty * price:.2f} SKU{int(self.rng.integers(1e5, 1e6))}"
            )
        return "\n".join(rows)

    def J4(self) -> str:  # hex / base64 / minified blobs
        alphabet = (
            np.array(list("0123456789abcdef"))
            if self.rng.random() < 0.5
            else np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
        )
        chunks = [
            "".join(self.rng.choice(alphabet, size=int(self.rng.integers(8, 40))))
            for _ in range(int(self.rng.integers(15, 60)))
        ]
        return " ".join(chunks)

    def J5(self, clean_doc: str) -> str:  # run-on SEO text: real words shuffled, no punctuation
        words = re.sub(r"[.!?;:]", "", clean_doc).split()
        return " ".join(self.rng.permutation(words))

    def J6(self) -> str:  # bigram Markov word salad
        n = self.n_words()
        draws = self.rng.random(n + 1)
        word = self.starts[int(draws[0] * len(self.starts))]
        out = [word]
        for u in draws[1:]:
            nxt = self.chain.get(word) or self.starts
            word = nxt[int(u * len(nxt))]
            out.append(word)
        return " ".join(out)


def _boilerplate(rng: np.random.Generator, n_spans: int) -> list[str]:
    spans = []
    for i in range(n_spans):
        n = int(rng.integers(45, 220))  # words; about 60-300 WordPiece tokens
        words = rng.choice(_BOILER_WORDS, size=n)
        sentences, start = [], 0
        while start < n:
            length = int(rng.integers(6, 16))
            chunk = " ".join(words[start : start + length])
            sentences.append(chunk[:1].upper() + chunk[1:] + ".")
            start += length
        spans.append(f"Notice {i + 1}-{int(rng.integers(1e4, 1e5))}: " + " ".join(sentences))
    return spans


@dataclass
class SyntheticWebCorpus:
    """Documents, their labels and planted boilerplate, reproducible from ``seed``.

    ``split`` selects which clean paragraphs are used (train for the filtered corpus and the
    classifiers' training, val/test for evaluation). ``junk_fraction`` of documents are junk,
    spread evenly over the six generators.
    """

    n_docs: int = 4000
    split: str = "train"
    junk_fraction: float = 0.35
    n_boilerplate: int = 40
    copies: tuple[int, int] = (3, 30)
    seed: int = 0
    max_files: int | None = None

    def __post_init__(self) -> None:
        self.n_docs = V.check_int(self.n_docs, "n_docs", low=12)
        V.check_choice(self.split, "split", ("train", "val", "test"))
        self.junk_fraction = V.check_scalar(
            self.junk_fraction, "junk_fraction", low=0.0, high=1.0, high_open=True
        )
        self.n_boilerplate = V.check_int(self.n_boilerplate, "n_boilerplate", low=0)
        if len(self.copies) != 2:
            raise ValueError(f"copies must be (low, high), got {self.copies!r}")
        lo = V.check_int(self.copies[0], "copies", low=1)
        hi = V.check_int(self.copies[1], "copies", low=lo)
        self.copies = (lo, hi)
        self.seed = V.check_int(self.seed, "seed", low=0)
        self.max_files = V.check_int(self.max_files, "max_files", low=1, allow_none=True)
        rng = np.random.default_rng(self.seed)
        pool = clean_paragraphs(self.split, self.max_files)
        order = rng.permutation(len(pool))
        n_junk = int(round(self.n_docs * self.junk_fraction))
        n_clean = self.n_docs - n_junk
        per_doc = rng.integers(1, 4, size=n_clean)
        if per_doc.sum() > len(pool):
            per_doc = np.maximum(1, (per_doc * len(pool) // max(per_doc.sum(), 1)))
            if per_doc.sum() > len(pool):
                raise ValueError(
                    f"the {self.split} split has {len(pool)} clean paragraphs, too few for "
                    f"{n_clean} clean documents; lower n_docs"
                )
        docs: list[Document] = []
        cursor = 0
        for k in per_doc:
            paras = [pool[i] for i in order[cursor : cursor + k]]
            cursor += k
            docs.append(Document(0, "\n\n".join(paras), "clean", self.split))
        junk = _Junk([d.text for d in docs], rng)
        kinds = [JUNK_KINDS[i % len(JUNK_KINDS)] for i in range(n_junk)]
        for kind in kinds:
            if kind == "J5":
                text = junk.J5(docs[int(rng.integers(len(docs)))].text)
            else:
                text = getattr(junk, kind)()
            docs.append(Document(0, text, kind, kind))
        docs = [docs[i] for i in rng.permutation(len(docs))]
        for i, d in enumerate(docs):
            d.doc_id = i
        self.boilerplate = _boilerplate(rng, self.n_boilerplate)
        self._plant(docs, rng)
        self.documents = docs

    def _plant(self, docs: list[Document], rng: np.random.Generator) -> None:
        inserts: dict[int, list[tuple[int, str, int]]] = {}
        lo, hi = self.copies
        for span_id, span in enumerate(self.boilerplate):
            k = int(rng.integers(lo, min(hi, len(docs)) + 1))
            whole_line = span_id % 2 == 0
            for doc in rng.choice(len(docs), size=k, replace=False):
                text = docs[doc].text
                if whole_line:
                    cuts = [m.end() for m in re.finditer("\n", text)] + [len(text)]
                    pos = int(rng.choice(cuts))
                    piece = ("\n" if pos and text[pos - 1] != "\n" else "") + span + "\n"
                else:
                    spaces = [m.start() for m in re.finditer(" ", text)] or [len(text)]
                    pos = int(rng.choice(spaces))
                    piece = " " + span + " "
                inserts.setdefault(int(doc), []).append((pos, piece, span_id))
        for doc, items in inserts.items():
            text = docs[doc].text
            pieces, planted, last, offset = [], [], 0, 0
            for pos, piece, span_id in sorted(items, key=lambda t: t[0]):
                pieces.append(text[last:pos])
                offset += pos - last
                start = offset + piece.index(self.boilerplate[span_id])
                planted.append((start, start + len(self.boilerplate[span_id]), span_id))
                pieces.append(piece)
                offset += len(piece)
                last = pos
            pieces.append(text[last:])
            docs[doc].text = "".join(pieces)
            docs[doc].planted = planted

    @property
    def texts(self) -> list[str]:
        return [d.text for d in self.documents]

    @property
    def labels(self) -> list[str]:
        return [d.label for d in self.documents]

    def shards(self, n_shards: int) -> list[list[Document]]:
        """Contiguous shards in document order."""
        if n_shards < 1:
            raise ValueError("n_shards must be >= 1")
        bounds = np.linspace(0, len(self.documents), n_shards + 1).astype(int)
        return [self.documents[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
