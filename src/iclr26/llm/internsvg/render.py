"""Rendering SVG code to pixels, and SMIL animations to frames (SArena's evaluation inputs).

:func:`render_svg` rasterises with ``resvg`` (the ``resvg-py`` wheel) on a white canvas, as the
released evaluation does with cairosvg. Text that does not parse as XML, a root that is not
``<svg>`` or a renderer error gives an all-black image and ``ok=False`` (SArena's rule: broken
output is scored as a black image), never an exception.

resvg does not play SMIL, so :func:`svg_at_time` rewrites an animated SVG into the static SVG
it shows at time ``t`` (``<animate>`` linear from/to/values over ``dur`` with ``begin``,
``repeatCount`` and ``fill="freeze"``; ``<animateTransform>`` of type translate, scale or
rotate), and :func:`sample_animation_frames` renders those (the paper samples 8 frames).
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET

import numpy as np

from iclr26 import validation as V
from iclr26.llm.internsvg.canonical import _fmt, parse_svg, serialise_svg

_ANIM_TAGS = {"animate", "animateTransform", "animateMotion", "set"}


def _decode_png(data: bytes, size: int) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        rgba = np.asarray(im.convert("RGBA"), dtype=np.float32)
    if rgba.shape[:2] != (size, size):  # a non-square viewBox: paste onto the canvas
        canvas = np.full((size, size, 4), 255.0, dtype=np.float32)
        h, w = min(size, rgba.shape[0]), min(size, rgba.shape[1])
        canvas[:h, :w] = rgba[:h, :w]
        rgba = canvas
    return np.clip(np.rint(rgba[..., :3]), 0, 255).astype(np.uint8)


def render_svg(
    svg: str, size: int = 128, background: str = "white", return_ok: bool = False
) -> np.ndarray | tuple[np.ndarray, bool]:
    """``svg`` rendered to a ``(size, size, 3)`` uint8 RGB array on ``background``.

    A failed render is an all-black image; with ``return_ok=True`` the result is
    ``(image, ok)``. Only a non-string ``svg`` raises (a ``TypeError``)."""
    if not isinstance(svg, str):
        raise TypeError(f"svg must be a string, got {type(svg).__name__}")
    size = V.check_int(size, "size", low=8, high=4096)
    if not isinstance(background, str):
        raise TypeError(f"background must be a CSS colour string, got {type(background).__name__}")
    return_ok = V.check_bool(return_ok, "return_ok")
    black = np.zeros((size, size, 3), dtype=np.uint8)
    try:
        parse_svg(svg)
        import resvg_py

        data = resvg_py.svg_to_bytes(
            svg_string=svg,
            width=size,
            height=size,
            background=background,
            skip_system_fonts="<text" not in svg,  # font loading is the slow part
        )
        image, ok = _decode_png(bytes(data), size), True
    except Exception:  # any renderer error on this text is a render failure, never a crash
        image, ok = black, False
    except BaseException as exc:
        # a Rust panic inside resvg surfaces as pyo3's PanicException, a BaseException
        if type(exc).__name__ != "PanicException":
            raise
        image, ok = black, False
    return (image, ok) if return_ok else image


# ------------------------------------------------------------------ SMIL at time t

_CLOCK_RE = re.compile(r"^\s*([-+]?\d*\.?\d+)\s*(ms|s|min|h)?\s*$")
_COLOUR_RE = re.compile(r"^#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")
_NUM_LIST_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _clock(value: str | None, default: float) -> float:
    if value is None or value.strip() in ("", "indefinite"):
        return default
    m = _CLOCK_RE.match(value)
    if not m:
        return default
    scale = {"ms": 1e-3, "s": 1.0, None: 1.0, "min": 60.0, "h": 3600.0}[m.group(2)]
    return float(m.group(1)) * scale


def _rgb(value: str) -> tuple[int, int, int] | None:
    m = _COLOUR_RE.match(value.strip())
    if not m:
        return None
    h = m.group(1)
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _interpolate(a: str, b: str, frac: float) -> str:
    """Linear interpolation of two attribute values: numbers (also lists of numbers with the
    same count, e.g. transform arguments) and #rrggbb colours; anything else is discrete
    (switches at the middle)."""
    ca, cb = _rgb(a), _rgb(b)
    if ca and cb:
        mixed = [round(x + (y - x) * frac) for x, y in zip(ca, cb)]
        return "#" + "".join(f"{v:02x}" for v in mixed)
    na, nb = _NUM_LIST_RE.findall(a), _NUM_LIST_RE.findall(b)
    if na and len(na) == len(nb) and not re.sub(_NUM_LIST_RE, "", a).strip(" ,"):
        vals = [float(x) + (float(y) - float(x)) * frac for x, y in zip(na, nb)]
        return " ".join(_fmt(v, 3) for v in vals)
    return a if frac < 0.5 else b


def _value_at(anim: ET.Element, t: float, base: str | None) -> str | None:
    """The animated value at document time ``t`` (``None``: the animation has no effect)."""
    begin = _clock(anim.get("begin"), 0.0)
    dur = _clock(anim.get("dur"), math.inf)
    if not (dur > 0) or math.isinf(dur):
        return None
    repeat = anim.get("repeatCount", "1").strip()
    count = math.inf if repeat == "indefinite" else max(_clock(repeat, 1.0), 0.0)
    if "values" in anim.attrib:
        values = [v.strip() for v in anim.get("values", "").split(";") if v.strip()]
    else:
        start = anim.get("from", base)
        values = [v for v in (start, anim.get("to")) if v is not None]
    if not values or t < begin:
        return None
    local = t - begin
    if local >= dur * count:  # the active duration is over
        if anim.get("fill", "remove") != "freeze":
            return None
        frac = 1.0 if count == math.inf or float(count).is_integer() else (count % 1.0)
    else:
        frac = (local % dur) / dur
    if len(values) == 1:
        return values[0]
    pos = frac * (len(values) - 1)
    k = min(int(pos), len(values) - 2)
    return _interpolate(values[k], values[k + 1], pos - k)


def _transform_value(anim: ET.Element, value: str) -> str:
    kind = anim.get("type", "translate").strip()
    return f"{kind}({value})"


def svg_at_time(svg: str, t: float) -> str:
    """The static SVG that the SMIL-animated ``svg`` shows at time ``t`` seconds (canonical text,
    numbers to three decimals): every animation element is applied to its parent and removed (``<animateMotion>`` and ``<set>``
    are removed without effect). Raises ``ValueError`` when ``svg`` does not parse."""
    t = V.check_scalar(t, "t", low=0.0)
    root = parse_svg(svg)
    for parent in list(root.iter()):
        for child in list(parent):
            if not isinstance(child.tag, str):
                continue
            tag = child.tag.rpartition("}")[2]
            if tag not in _ANIM_TAGS:
                continue
            parent.remove(child)
            if tag == "animate":
                name = child.get("attributeName")
                if name:
                    value = _value_at(child, t, parent.get(name))
                    if value is not None:
                        parent.set(name, value)
            elif tag == "animateTransform":
                value = _value_at(child, t, None)
                if value is not None:
                    moved = _transform_value(child, value)
                    if child.get("additive") == "sum" and parent.get("transform"):
                        moved = f"{parent.get('transform')} {moved}"
                    parent.set("transform", moved)
    return serialise_svg(root, decimals=3)


def sample_animation_frames(svg: str, times, size: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Frames of the animated ``svg`` at ``times`` (seconds): ``(frames [T, size, size, 3]
    uint8, ok [T] bool)``. A document that does not parse gives black frames and ``ok``
    False."""
    times = V.check_array(times, "times", ndim=1, dtype=np.float64, low=0.0)
    size = V.check_int(size, "size", low=8, high=4096)
    if not isinstance(svg, str):
        raise TypeError(f"svg must be a string, got {type(svg).__name__}")
    frames = np.zeros((len(times), size, size, 3), dtype=np.uint8)
    ok = np.zeros(len(times), dtype=bool)
    for i, t in enumerate(times):
        try:
            static = svg_at_time(svg, float(t))
        except ValueError:
            continue
        frames[i], ok[i] = render_svg(static, size, return_ok=True)
    return frames, ok


def animation_duration(svg: str, default: float = 1.0) -> float:
    """The longest ``begin + dur x repeatCount`` (finite repeats) of the animations in ``svg``
    (``default`` when there is none or it does not parse)."""
    if not isinstance(svg, str):
        raise TypeError(f"svg must be a string, got {type(svg).__name__}")
    default = V.check_scalar(default, "default", low=0.0, low_open=True)
    try:
        root = parse_svg(svg)
    except ValueError:
        return default
    longest = 0.0
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.rpartition("}")[2] in _ANIM_TAGS:
            dur = _clock(el.get("dur"), 0.0)
            rep = el.get("repeatCount", "1")
            count = 1.0 if rep.strip() == "indefinite" else _clock(rep, 1.0)
            longest = max(longest, _clock(el.get("begin"), 0.0) + dur * count)
    return longest if longest > 0 else default
