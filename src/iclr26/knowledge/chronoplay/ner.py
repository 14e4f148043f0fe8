"""Entity extraction E(·) for snippets, announcements and questions.

The paper extracts entities with an LLM (Self-ICL). Offline, ``GazetteerNER`` finds known entity
names (the world's entities, or wiki titles) by case-insensitive longest match; an optional
fallback adds capitalised n-grams that are not sentence openers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from iclr26 import validation as V

_TOKEN = re.compile(r"[\w'-]+")
_CAP_NGRAM = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z0-9]+(?:\s+[A-Z][a-z0-9]+)*)")


class GazetteerNER:
    """``ner(text) -> set[str]`` of canonical entity names found in ``text``.

    ``names`` is an iterable of names, or a mapping name -> type (then :meth:`tag` can put
    typed placeholders in place of the names). Matching is case-insensitive, on word
    boundaries, longest name first."""

    def __init__(self, names: Iterable[str] | Mapping[str, str], *, fallback: bool = False):
        if isinstance(names, str):
            raise TypeError("names must be a collection of entity names, got one string")
        if isinstance(names, Mapping):
            self.types = {str(k): str(v) for k, v in names.items()}
            names = list(names)
        else:
            names = list(names)
            self.types = {}
        for i, n in enumerate(names):
            if not isinstance(n, str):
                raise TypeError(f"names[{i}] must be a string, got {type(n).__name__}")
        names = [n for n in names if n.strip()]
        if not names:
            raise ValueError("names is empty: the gazetteer needs at least one entity name")
        self.fallback = V.check_bool(fallback, "fallback")
        self.canonical = {" ".join(n.lower().split()): n for n in names}
        # names made of word tokens are matched by token n-gram lookup (fast); any other
        # name (punctuation inside) goes through a regular expression
        self._by_tokens: dict[tuple[str, ...], str] = {}
        odd = []
        for low, name in self.canonical.items():
            toks = tuple(_TOKEN.findall(low))
            if " ".join(toks) == low:
                self._by_tokens[toks] = name
            else:
                odd.append(low)
        self._max_len = max((len(t) for t in self._by_tokens), default=0)
        self._odd = (
            re.compile(
                r"(?<!\w)("
                + "|".join(re.escape(a) for a in sorted(odd, key=len, reverse=True))
                + r")(?!\w)",
                re.IGNORECASE,
            )
            if odd
            else None
        )

    def __call__(self, text: str) -> set[str]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        found = {name for _, _, name in self.spans(text)}
        if self.fallback:
            rest = text
            for s, e, _ in reversed(self.spans(text)):
                rest = rest[:s] + " " + rest[e:]
            found |= {m.group(1) for m in _CAP_NGRAM.finditer(rest)}
        return found

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, canonical name)`` of every gazetteer match, left to right, longest
        first, non-overlapping."""
        toks = [(m.start(), m.end(), m.group(0).lower()) for m in _TOKEN.finditer(text)]
        out = []
        i = 0
        while i < len(toks):
            for n in range(min(self._max_len, len(toks) - i), 0, -1):
                name = self._by_tokens.get(tuple(t[2] for t in toks[i : i + n]))
                if name is not None:
                    out.append((toks[i][0], toks[i + n - 1][1], name))
                    i += n
                    break
            else:
                i += 1
        if self._odd is not None:
            taken = [(s, e) for s, e, _ in out]
            for m in self._odd.finditer(text):
                if all(m.end() <= s or m.start() >= e for s, e in taken):
                    key = " ".join(m.group(1).lower().split())
                    out.append((m.start(), m.end(), self.canonical[key]))
            out.sort()
        return out

    def tag(self, text: str) -> tuple[str, list[str]]:
        """``text`` with each typed name replaced by ``[TYPE]``, and the names replaced."""
        if not self.types:
            raise ValueError("tag needs a gazetteer built from a name -> type mapping")
        out, names, last = [], [], 0
        for s, e, name in self.spans(text):
            out.append(text[last:s])
            out.append(f"[{self.types[name]}]")
            names.append(name)
            last = e
        out.append(text[last:])
        return "".join(out), names
