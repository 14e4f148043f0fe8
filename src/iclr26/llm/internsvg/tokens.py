"""SVG-specific tokens and their subword-mean initialisation (§4.1, Eq. 1, App. A).

InternSVG adds 55 tag tokens, 42 attribute tokens, the integers -128..128 and 100 decimal
fractions to the tokenizer of its LLM, so that SVG code (tags, attribute names, coordinates on
the 128x128 canvas) costs far fewer tokens. Each new token's input embedding starts as the mean
of the embeddings of the base-tokenizer pieces it used to be split into (Eq. 1):
``e_t = (1/n) sum_i e_{s_i}``.

:class:`SVGTokenizer` pre-splits text with a regular expression into tag tokens, attribute
tokens, numbers (integer part and fraction, also inside packed path data ``35.35-28.65``) and
the rest, which goes to the base tokenizer; the encoding is lossless
(``decode(encode(text)) == text``). :func:`add_svg_tokens` grows a Hugging Face causal LM's
embedding matrix for the new tokens and initialises the new rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch

from iclr26 import validation as V

# 55 tag tokens (App. A)
SVG_TAG_TOKENS: tuple[str, ...] = (
    "<svg", "</svg>", "<defs", "</defs>", "<use", "</use>", "/>",
    "<g", "</g>", "<path", "</path>",
    "<rect", "</rect>", "<circle", "</circle>", "<ellipse", "</ellipse>", "<line", "</line>",
    "<polyline", "</polyline>", "<polygon", "</polygon>",
    "<text", "</text>", "<tspan", "</tspan>", "<textPath", "</textPath>",
    "<linearGradient", "</linearGradient>", "<radialGradient", "</radialGradient>",
    "<stop", "</stop>",
    "<clipPath", "</clipPath>", "<mask", "</mask>",
    "<filter", "</filter>", "<feGaussianBlur", "</feGaussianBlur>",
    "<feColorMatrix", "</feColorMatrix>", "<feComposite", "</feComposite>",
    "<feBlend", "</feBlend>",
    "<animate", "</animate>", "<animateMotion", "</animateMotion>",
    "<animateTransform", "</animateTransform>",
)  # fmt: skip

_ATTR_NAMES = (
    "width", "height", "viewBox", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry",
    "d", "points",
    "fill", "stroke", "stroke-width", "stroke-linecap", "stroke-linejoin", "stroke-miterlimit",
    "fill-rule", "opacity",
    "transform",
    "font-size", "font-family", "text-anchor",
    "gradientUnits", "gradientTransform", "offset", "stop-color",
    "begin", "dur", "repeatCount", "from", "to", "rotate", "path",
    "id", "class", "clip-path",
)  # fmt: skip
# 42 attribute tokens: a leading space, the name and ="
SVG_ATTR_TOKENS: tuple[str, ...] = tuple(f' {name}="' for name in _ATTR_NAMES)

INT_RANGE = (-128, 128)


def svg_number_tokens() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(integers, decimals)``: the 257 integer tokens ``-128 .. 128`` and the 100 decimal
    tokens ``.0 .. .9`` plus the two-digit fractions ``.01 .. .99`` not ending in 0 (the
    fractions a canonical number can end with, plus ``.0``)."""
    ints = tuple(str(i) for i in range(INT_RANGE[0], INT_RANGE[1] + 1))
    one = tuple(f".{i}" for i in range(10))
    two = tuple(f".{i:02d}" for i in range(1, 100) if i % 10)
    return ints, one + two


def all_svg_tokens() -> tuple[str, ...]:
    """Every SVG-specific token in a fixed order: tags, attributes, integers, decimals."""
    ints, decs = svg_number_tokens()
    return SVG_TAG_TOKENS + SVG_ATTR_TOKENS + ints + decs


def _alternation(strings: Sequence[str]) -> str:
    return "|".join(re.escape(s) for s in sorted(strings, key=len, reverse=True))


_OPEN_TAGS = [t for t in SVG_TAG_TOKENS if t.startswith("<") and not t.startswith("</")]
_CLOSE_TAGS = [t for t in SVG_TAG_TOKENS if t.startswith("</")] + ["/>"]
# groups: 1 open tag (followed by a non-name character), 2 closing tag or />, 3 attribute,
# 4 hex colour (kept whole for the base tokenizer), 5 sign+integer part, 6 fraction
_SPLIT_RE = re.compile(
    rf"({_alternation(_OPEN_TAGS)})(?![\w:-])"
    rf"|({_alternation(_CLOSE_TAGS)})"
    rf"|({_alternation(SVG_ATTR_TOKENS)})"
    r"|(#[0-9a-fA-F]{3,8}\b)"
    r"|(-?\d+)(\.\d+)?(?![\d])"
)


class SVGTokenizer:
    """A base tokenizer extended with the SVG-specific tokens.

    ``base`` is any Hugging Face tokenizer (the shared tiny LM's BPE, a Qwen tokenizer, ...).
    Ids of the base tokenizer stay as they are; a new token that already is one base token
    keeps that id, and every other new token gets ``id_offset + k`` (``id_offset`` defaults to
    ``len(base)``). Text between SVG tokens goes to the base tokenizer unchanged, so encoding
    is lossless. The object offers the part of the tokenizer protocol that training and
    decoding need (``encode``, ``decode``, ``__call__``-free ``eos_token_id`` /
    ``pad_token_id`` / ``bos_token_id``, ``__len__``)."""

    def __init__(self, base: Any, id_offset: int | None = None):
        V.check_module_attrs(base, "base", ("encode", "decode"))
        self.base = base
        n_base = len(base)
        id_offset = n_base if id_offset is None else id_offset
        self.id_offset = V.check_int(id_offset, "id_offset", low=n_base)
        self.tokens = all_svg_tokens()
        self.token_to_id: dict[str, int] = {}
        self.reused: dict[str, int] = {}
        next_id = self.id_offset
        self._pieces = dict(zip(self.tokens, self._encode_batch(list(self.tokens))))
        for tok in self.tokens:
            pieces = self._pieces[tok]
            if len(pieces) == 1 and self._base_decode(pieces) == tok:
                self.token_to_id[tok] = pieces[0]
                self.reused[tok] = pieces[0]
            else:
                self.token_to_id[tok] = next_id
                next_id += 1
        self.new_tokens = tuple(t for t in self.tokens if t not in self.reused)
        self.id_to_token = {i: t for t, i in self.token_to_id.items() if t not in self.reused}
        self.vocab_size = next_id
        ints, decs = svg_number_tokens()
        self._ints, self._decs = set(ints), set(decs)

    # -------------------------------------------------------------- protocol
    def __len__(self) -> int:
        return self.vocab_size

    @property
    def eos_token_id(self):
        return getattr(self.base, "eos_token_id", None)

    @property
    def pad_token_id(self):
        return getattr(self.base, "pad_token_id", None)

    @property
    def bos_token_id(self):
        return getattr(self.base, "bos_token_id", None)

    def _base_ids(self, text: str) -> list[int]:
        return list(self.base.encode(text, add_special_tokens=False))

    def _base_decode(self, ids: Sequence[int]) -> str:
        return self.base.decode(list(ids), clean_up_tokenization_spaces=False)

    # -------------------------------------------------------------- splitting
    def split(self, text: str) -> list[tuple[str, bool]]:
        """``text`` as ``(piece, is_svg_token)`` pairs; joining the pieces gives ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        out: list[tuple[str, bool]] = []
        rest: list[str] = []
        last = 0

        def flush() -> None:
            if rest:
                out.append(("".join(rest), False))
                rest.clear()

        for m in _SPLIT_RE.finditer(text):
            if m.start() > last:
                rest.append(text[last : m.start()])
            last = m.end()
            tag_open, tag_close, attr, hexcol, integer, frac = m.groups()
            whole = tag_open or tag_close or attr
            if whole:
                flush()
                out.append((whole, True))
                continue
            if hexcol:
                rest.append(hexcol)
                continue
            if integer in self._ints:
                flush()
                out.append((integer, True))
            else:
                rest.append(integer)
            if frac:
                if frac in self._decs:
                    flush()
                    out.append((frac, True))
                else:
                    rest.append(frac)
        if last < len(text):
            rest.append(text[last:])
        flush()
        return out

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text`` (lossless). ``add_special_tokens`` is accepted for protocol
        compatibility and ignored: no ``<bos>``/``<eos>`` is added."""
        pieces = self.split(text)
        plain = [p for p, special in pieces if not special]
        encoded = iter(self._encode_batch(plain)) if plain else iter(())
        ids: list[int] = []
        for piece, special in pieces:
            ids.extend([self.token_to_id[piece]] if special else next(encoded))
        return ids

    def _encode_batch(self, texts: list[str]) -> list[list[int]]:
        try:
            return [list(x) for x in self.base(texts, add_special_tokens=False)["input_ids"]]
        except TypeError:  # a tokenizer without batch __call__
            return [self._base_ids(t) for t in texts]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of ``ids``: new-token ids map to their strings, runs of base ids go to the base
        tokenizer's ``decode``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.reshape(-1).tolist()
        ids = [int(i) for i in ids]
        out: list[str] = []
        run: list[int] = []
        for i in ids:
            if i in self.id_to_token:
                if run:
                    out.append(self._decode_base(run, skip_special_tokens))
                    run = []
                out.append(self.id_to_token[i])
            elif 0 <= i < self.vocab_size:
                run.append(i)
            else:
                raise ValueError(f"ids holds {i}, outside the vocabulary of {self.vocab_size}")
        if run:
            out.append(self._decode_base(run, skip_special_tokens))
        return "".join(out)

    def _decode_base(self, run: list[int], skip: bool) -> str:
        return self.base.decode(run, skip_special_tokens=skip, clean_up_tokenization_spaces=False)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        base = self.base.convert_ids_to_tokens
        return [self.id_to_token[i] if i in self.id_to_token else base(int(i)) for i in ids]

    def pieces_of(self, token: str) -> list[int]:
        """The base-tokenizer ids a new token used to be split into (for Eq. 1)."""
        V.check_choice(token, "token", self.token_to_id)
        return list(self._pieces[token])


def _std_of_rows(weight: torch.Tensor) -> float:
    return float(weight.detach().float().std())


def add_svg_tokens(
    tokenizer: Any,
    model: torch.nn.Module,
    init: str = "subword_mean",
    seed: int = 0,
) -> tuple[torch.nn.Module, SVGTokenizer]:
    """Add the SVG tokens to ``tokenizer`` (wrapped as an :class:`SVGTokenizer`) and grow the
    embedding matrix of the Hugging Face ``model`` (in place) for them.

    ``init="subword_mean"`` sets each new input-embedding row to the mean of the rows of the
    token's base pieces (Eq. 1); ``"random"`` draws N(0, sigma^2) with sigma the standard
    deviation of the existing rows (the paper's "Model T"). An untied output head gets the same
    rule on its own rows (the released code does this; the paper states only the input side);
    a tied head follows the input embedding. Returns ``(model, svg_tokenizer)``; the counts are
    in ``model.svg_token_init``."""
    V.check_choice(init, "init", ("subword_mean", "random"))
    seed = V.check_int(seed, "seed", low=0)
    V.check_module_attrs(tokenizer, "tokenizer", ("encode", "decode"))
    V.check_module_attrs(
        model, "model", ("get_input_embeddings", "get_output_embeddings", "resize_token_embeddings")
    )
    emb = model.get_input_embeddings()
    old_in = emb.weight.detach().clone()
    n_old = old_in.shape[0]
    if n_old < len(tokenizer):
        raise ValueError(
            f"model has {n_old} embedding rows but tokenizer has {len(tokenizer)} tokens"
        )
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is emb.weight
    old_out = None if head is None or tied else head.weight.detach().clone()
    svg_tok = SVGTokenizer(tokenizer, id_offset=n_old)  # reads the base, never modifies it
    try:
        model.resize_token_embeddings(svg_tok.vocab_size, mean_resizing=False)
    except TypeError:  # older transformers
        model.resize_token_embeddings(svg_tok.vocab_size)
    new_in = model.get_input_embeddings().weight
    new_head = model.get_output_embeddings()
    tied = new_head is not None and new_head.weight is new_in
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        sigma_in = _std_of_rows(old_in)
        sigma_out = _std_of_rows(old_out) if old_out is not None else None
        for tok in svg_tok.new_tokens:
            row = svg_tok.token_to_id[tok]
            pieces = [i for i in svg_tok.pieces_of(tok) if 0 <= i < n_old]
            if init == "subword_mean":  # Eq. 1; no usable piece: the mean of all rows
                rows_in = old_in[pieces] if pieces else old_in
                new_in[row] = rows_in.mean(0).to(new_in.dtype)
                if not tied and old_out is not None:
                    rows_out = old_out[pieces] if pieces else old_out
                    new_head.weight[row] = rows_out.mean(0).to(new_head.weight.dtype)
            else:
                shape = (old_in.shape[1],)
                draw = torch.randn(shape, generator=gen) * sigma_in
                new_in[row] = draw.to(new_in.device, new_in.dtype)
                if not tied and old_out is not None:
                    draw = torch.randn(shape, generator=gen) * sigma_out
                    new_head.weight[row] = draw.to(new_head.weight.device, new_head.weight.dtype)
    model.svg_token_init = {
        "init": init,
        "new_tokens": len(svg_tok.new_tokens),
        "reused_base_tokens": len(svg_tok.reused),
        "old_rows": n_old,
        "new_rows": svg_tok.vocab_size,
        "tied_head": bool(tied),
    }
    return model, svg_tok
