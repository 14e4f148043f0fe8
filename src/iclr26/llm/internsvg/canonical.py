"""Canonical SVG text (the simplification step of SAgoge, §3.1).

SAgoge simplifies every SVG before training: metadata, comments and redundant declarations go,
numbers are written with few digits. :func:`canonicalize_svg` does the same with the standard
library's XML parser: comments, processing instructions, ``<metadata>``/``<title>``/``<desc>``
and editor-namespaced attributes are dropped, whitespace between elements is removed, every
number is rounded to at most two decimals without trailing zeros, and path data / point lists
are packed (``35.35-28.65``). Tokenisation lengths and losses are measured on this form.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape, quoteattr

from iclr26 import validation as V

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_DROP_TAGS = {"metadata", "title", "desc"}
_NO_NUMBER_REWRITE = {"id", "class", "href", "font-family", "xmlns"}
_PACKED = {"d", "points"}
# a numeric literal (optionally signed, with exponent); hex colours are skipped by the caller
NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# a number glued after a letter (e.g. "grad1", "w3") is part of a name and is left alone
_FREE_NUMBER_RE = re.compile(r"(?<![A-Za-z_])" + NUMBER_RE.pattern)
_HEX_RE = re.compile(r"#[0-9a-fA-F]{3,8}\b")
_PATH_TOKEN_RE = re.compile(r"[A-Za-z]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class SVGParseError(ValueError):
    """The text is not a well-formed SVG document."""


def format_number(value: float, decimals: int = 2) -> str:
    """``value`` rounded to ``decimals`` places, trailing zeros and a lone ``.`` removed, never
    ``-0`` (``12.50 -> 12.5``, ``3.0 -> 3``, ``-0.001 -> 0``)."""
    value = V.check_scalar(value, "value")
    decimals = V.check_int(decimals, "decimals", low=0, high=6)
    return _fmt(value, decimals)


def _fmt(value: float, decimals: int) -> str:
    """:func:`format_number` without the checks (internal hot path)."""
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", "-", ""):
        text = "0"
    return text


def _round_numbers(text: str, decimals: int) -> str:
    """Round every numeric literal in an attribute value, leaving hex colours alone."""
    pieces, last = [], 0
    for hexm in _HEX_RE.finditer(text):
        pieces.append(_round_plain(text[last : hexm.start()], decimals))
        pieces.append(hexm.group())
        last = hexm.end()
    pieces.append(_round_plain(text[last:], decimals))
    return "".join(pieces)


def _round_plain(text: str, decimals: int) -> str:
    def repl(m: re.Match) -> str:
        raw = m.group()
        if re.fullmatch(r"-?\d+", raw):  # integers stay as written (ids like "w3", "2000")
            return raw if not raw.startswith("-0") else _fmt(float(raw), decimals)
        return _fmt(float(raw), decimals)

    return _FREE_NUMBER_RE.sub(repl, text)


def pack_numbers(value: str, decimals: int = 2) -> str:
    """Path data / point lists as command letters and rounded numbers with the fewest
    separators: a space between two numbers unless the second is negative."""
    if not isinstance(value, str):
        raise TypeError(f"value must be a string of path data, got {type(value).__name__}")
    decimals = V.check_int(decimals, "decimals", low=0, high=6)
    out: list[str] = []
    prev_number = False
    for tok in _PATH_TOKEN_RE.findall(value):
        if tok[0].isalpha():
            out.append(tok)
            prev_number = False
            continue
        num = _fmt(float(tok), decimals)
        if prev_number and not num.startswith("-"):
            out.append(" ")
        out.append(num)
        prev_number = True
    return "".join(out)


def _local(name: str) -> tuple[str | None, str]:
    if name.startswith("{"):
        ns, _, local = name[1:].partition("}")
        return ns, local
    return None, name


def _serialise(elem: ET.Element, decimals: int, uses_xlink: list[bool], root: bool) -> str:
    ns, tag = _local(elem.tag)
    attrs: list[str] = []
    if root:
        attrs.append(f' xmlns="{SVG_NS}"')
    for key, value in elem.attrib.items():
        ans, name = _local(key)
        if ans == XLINK_NS:
            uses_xlink[0] = True
            name = f"xlink:{name}"
        elif ans is not None:
            continue  # editor metadata (inkscape:, sodipodi:, ...)
        if name.startswith("xmlns"):
            continue
        value = " ".join(value.split())
        if name in _PACKED:
            value = pack_numbers(value, decimals)
        elif name not in _NO_NUMBER_REWRITE and not name.endswith("href"):
            value = _round_numbers(value, decimals)
        attrs.append(f" {name}={quoteattr(value)}")
    children = [c for c in elem if isinstance(c.tag, str) and _local(c.tag)[1] not in _DROP_TAGS]
    text = elem.text if elem.text and elem.text.strip() else ""
    body = escape(text.strip()) if text else ""
    for child in children:
        body += _serialise(child, decimals, uses_xlink, root=False)
        if child.tail and child.tail.strip():
            body += escape(child.tail.strip())
    head = f"<{tag}{''.join(attrs)}"
    if not body:
        return head + "/>"
    return f"{head}>{body}</{tag}>"


def parse_svg(svg: str) -> ET.Element:
    """The root ``<svg>`` element of ``svg``; :class:`SVGParseError` if it is not one."""
    if not isinstance(svg, str):
        raise TypeError(f"svg must be a string, got {type(svg).__name__}")
    if not svg.strip():
        raise SVGParseError("svg is empty")
    try:
        root = ET.fromstring(svg.strip())
    except ET.ParseError as exc:
        raise SVGParseError(f"svg does not parse: {exc}") from None
    if _local(root.tag)[1] != "svg":
        raise SVGParseError(f"svg root element must be <svg>, got <{_local(root.tag)[1]}>")
    return root


def canonicalize_svg(svg: str, decimals: int = 2) -> str:
    """The canonical text of ``svg`` (see the module docstring). Idempotent; raises
    ``ValueError`` (:class:`SVGParseError`) when ``svg`` is not a well-formed SVG."""
    decimals = V.check_int(decimals, "decimals", low=0, high=6)
    return serialise_svg(parse_svg(svg), decimals)


def serialise_svg(root: ET.Element, decimals: int = 2) -> str:
    """Canonical text of a parsed ``<svg>`` element tree (see :func:`canonicalize_svg`)."""
    uses_xlink = [False]
    text = _serialise(root, decimals, uses_xlink, root=True)
    if uses_xlink[0]:
        text = text.replace(f' xmlns="{SVG_NS}"', f' xmlns="{SVG_NS}" xmlns:xlink="{XLINK_NS}"', 1)
    return text
