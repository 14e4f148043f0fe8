"""Procedural SVG data: the offline, small analogue of SAgoge (§3.1).

:class:`ProceduralSVG` draws SVGs in four domains on the 128x128 canvas — ``icon`` (1-4
primitives), ``chemistry`` (a ring of line bonds with labelled substituents, named by a small
grammar), ``illustration`` (10-40 primitives, nested groups, a linear gradient, curved paths:
the long-sequence domain) and ``animation`` (an icon with 1-3 SMIL animations). Every sample
carries, generated from its structure, a text description (the text-to-SVG prompt), three
multiple-choice questions (SArena understanding: colour, geometry, quantity) and editing
triplets for the paper's eight low-level operations (colour, stroke, translate, scale, rotate,
flip, opacity, crop). All SVG text is canonical (:func:`canonicalize_svg`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from iclr26 import validation as V
from iclr26.llm.internsvg.canonical import _fmt, canonicalize_svg

DOMAINS = ("icon", "chemistry", "illustration", "animation")
TASKS = ("text_to_svg", "understanding", "editing", "description")
EDIT_OPS = ("color", "stroke", "translate", "scale", "rotate", "flip", "opacity", "crop")
PALETTE = {
    "black": "#000000", "white": "#ffffff", "red": "#e6194b", "green": "#3cb44b",
    "yellow": "#ffe119", "blue": "#4363d8", "orange": "#f58231", "purple": "#911eb4",
    "cyan": "#42d4f4", "magenta": "#f032e6", "lime": "#bfef45", "pink": "#fabed4",
    "teal": "#469990", "brown": "#9a6324", "navy": "#000075", "grey": "#a9a9a9",
}  # fmt: skip
_COLOURS = [c for c in PALETTE if c != "white"]
_SHAPES = ("circle", "rect", "ellipse", "line", "polygon", "path")
_GROUPS = {"OH": "a hydroxyl", "CH3": "a methyl", "NH2": "an amino", "Cl": "a chloro"}
_HEAD = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 128 128">'


def _n(x: float) -> str:
    return _fmt(float(x), 2)


@dataclass
class MCQItem:
    """A four-option question about an SVG; ``answer`` indexes ``options``."""

    question: str
    options: list[str]
    answer: int
    category: str

    def prompt(self, svg: str) -> str:
        letters = "ABCD"
        opts = " ".join(f"{letters[i]}. {o}" for i, o in enumerate(self.options))
        return f"SVG: {svg}\nQuestion: {self.question} {opts}\nAnswer:"


@dataclass
class EditTriplet:
    """An editing instruction with its source and target SVG (both canonical)."""

    op: str
    instruction: str
    source: str
    target: str


@dataclass
class SVGSample:
    """One procedural SVG with everything generated from its structure."""

    domain: str
    svg: str
    description: str
    shapes: list[dict] = field(default_factory=list)
    mcq: list[MCQItem] = field(default_factory=list)
    edits: list[EditTriplet] = field(default_factory=list)


def _position(cx: float, cy: float) -> str:
    row = "top" if cy < 128 / 3 else ("bottom" if cy > 256 / 3 else "middle")
    col = "left" if cx < 128 / 3 else ("right" if cx > 256 / 3 else "center")
    if row == "middle" and col == "center":
        return "in the center"
    return f"at the {row} {col}" if row != "middle" else f"at the middle {col}"


class ProceduralSVG:
    """Seeded generator of procedural SVG samples (see the module docstring)."""

    def __init__(
        self,
        seed: int = 0,
        stroke_prob: float = 0.3,
        group_prob: float = 0.2,
        icon_shapes: tuple[int, int] = (1, 4),
    ):
        self.seed = V.check_int(seed, "seed", low=0)
        if not isinstance(icon_shapes, tuple | list) or len(icon_shapes) != 2:
            raise TypeError("icon_shapes must be a (min, max) pair of shape counts")
        lo = V.check_int(icon_shapes[0], "icon_shapes[0]", low=1, high=40)
        hi = V.check_int(icon_shapes[1], "icon_shapes[1]", low=lo, high=40)
        self.icon_shapes = (lo, hi)
        self.stroke_prob = V.check_probability(stroke_prob, "stroke_prob")
        self.group_prob = V.check_probability(group_prob, "group_prob")
        self.rng = np.random.default_rng(self.seed)

    # -------------------------------------------------------------- public
    def sample(self, n: int, domain: str = "icon", edits: bool = True) -> list[SVGSample]:
        """``n`` fresh samples of ``domain`` (the generator's state advances)."""
        n = V.check_int(n, "n", low=1)
        V.check_choice(domain, "domain", DOMAINS)
        edits = V.check_bool(edits, "edits")
        make = {
            "icon": self._icon,
            "chemistry": self._chemistry,
            "illustration": self._illustration,
            "animation": self._animation,
        }[domain]
        out = []
        for _ in range(n):
            s = make()
            s.mcq = self._mcq(s)
            if edits and s.domain in ("icon", "animation", "chemistry"):
                s.edits = self._edits(s)
            out.append(s)
        return out

    @staticmethod
    def examples(samples: list[SVGSample], task: str) -> list[tuple[str, str]]:
        """``(prompt, completion)`` pairs of ``task`` (one of :data:`TASKS`) from ``samples``."""
        V.check_choice(task, "task", TASKS)
        if not isinstance(samples, list | tuple) or not samples:
            raise ValueError("samples must be a non-empty list of SVGSample")
        out: list[tuple[str, str]] = []
        for s in samples:
            if not isinstance(s, SVGSample):
                raise TypeError(f"samples must hold SVGSample, got {type(s).__name__}")
            if task == "text_to_svg":
                out.append((text_to_svg_prompt(s.description), s.svg))
            elif task == "description":
                out.append((f"SVG: {s.svg}\nDescribe this SVG:", " " + s.description))
            elif task == "understanding":
                out.extend((q.prompt(s.svg), " " + "ABCD"[q.answer]) for q in s.mcq)
            else:
                out.extend(
                    (f"SVG: {e.source}\nEdit: {e.instruction}\nSVG:", " " + e.target)
                    for e in s.edits
                )
        return out

    # -------------------------------------------------------------- shapes
    def _colour(self) -> str:
        return _COLOURS[int(self.rng.integers(len(_COLOURS)))]

    def _shape(self, kind: str | None = None, lo: float = 8, hi: float = 120) -> dict:
        rng = self.rng
        kind = kind or _SHAPES[int(rng.integers(len(_SHAPES)))]
        colour = self._colour()
        cx, cy = (float(v) for v in np.round(rng.uniform(lo + 16, hi - 16, 2), 2))
        size = float(np.round(rng.uniform(8, 28), 2))
        attrs: dict[str, str]
        if kind == "circle":
            attrs = {"cx": _n(cx), "cy": _n(cy), "r": _n(size)}
            box = (cx - size, cy - size, cx + size, cy + size)
        elif kind == "rect":
            w, h = (float(v) for v in np.round(rng.uniform(10, 50, 2), 2))
            attrs = {"x": _n(cx - w / 2), "y": _n(cy - h / 2), "width": _n(w), "height": _n(h)}
            box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        elif kind == "ellipse":
            rx, ry = (float(v) for v in np.round(rng.uniform(6, 28, 2), 2))
            attrs = {"cx": _n(cx), "cy": _n(cy), "rx": _n(rx), "ry": _n(ry)}
            box = (cx - rx, cy - ry, cx + rx, cy + ry)
        elif kind == "line":
            ang = rng.uniform(0, math.pi)
            dx, dy = size * math.cos(ang), size * math.sin(ang)
            attrs = {
                "x1": _n(cx - dx),
                "y1": _n(cy - dy),
                "x2": _n(cx + dx),
                "y2": _n(cy + dy),
                "stroke-width": _n(float(rng.integers(2, 6))),
            }
            box = (cx - abs(dx), cy - abs(dy), cx + abs(dx), cy + abs(dy))
        elif kind == "polygon":
            k = int(rng.integers(3, 7))
            rot = rng.uniform(0, 2 * math.pi)
            pts = [
                (cx + size * math.cos(rot + 2 * math.pi * i / k),
                 cy + size * math.sin(rot + 2 * math.pi * i / k))
                for i in range(k)
            ]  # fmt: skip
            attrs = {"points": " ".join(f"{_n(x)} {_n(y)}" for x, y in pts)}
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            box = (min(xs), min(ys), max(xs), max(ys))
        else:  # a closed path with a line, a quadratic and a cubic segment
            p = (
                np.round(cx + rng.uniform(-size, size, 8), 2),
                np.round(cy + rng.uniform(-size, size, 8), 2),
            )
            xs, ys = p
            d = (
                f"M{_n(xs[0])} {_n(ys[0])}L{_n(xs[1])} {_n(ys[1])}"
                f"Q{_n(xs[2])} {_n(ys[2])} {_n(xs[3])} {_n(ys[3])}"
                f"C{_n(xs[4])} {_n(ys[4])} {_n(xs[5])} {_n(ys[5])} {_n(xs[6])} {_n(ys[6])}Z"
            )
            attrs = {"d": d}
            box = (float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()))
        paint = "stroke" if kind == "line" else "fill"
        attrs[paint] = PALETTE[colour]
        if kind != "line" and rng.random() < self.stroke_prob:
            attrs["stroke"] = PALETTE[self._colour()]
            attrs["stroke-width"] = _n(float(rng.integers(1, 4)))
        area = max(box[2] - box[0], 1.0) * max(box[3] - box[1], 1.0)
        if kind == "circle":
            area = math.pi * size**2
        name = {"rect": "rectangle", "polygon": f"{len(attrs.get('points', '').split()) // 2}"
                "-sided polygon", "path": "curved shape"}.get(kind, kind)  # fmt: skip
        return {
            "kind": kind,
            "name": name,
            "colour": colour,
            "attrs": attrs,
            "box": box,
            "area": float(area),
            "center": ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2),
        }

    @staticmethod
    def _element(shape: dict, extra: str = "", children: str = "") -> str:
        attrs = "".join(f' {k}="{v}"' for k, v in shape["attrs"].items())
        if children:
            return f"<{shape['kind']}{attrs}{extra}>{children}</{shape['kind']}>"
        return f"<{shape['kind']}{attrs}{extra}/>"

    def _describe(self, shapes: list[dict], what: str = "An icon") -> str:
        parts = []
        for s in shapes:
            article = "an" if s["colour"][0] in "aeiou" else "a"
            parts.append(f"{article} {s['colour']} {s['name']} {_position(*s['center'])}")
        body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{what} with {body}."

    # -------------------------------------------------------------- domains
    def _icon(self, k: int | None = None) -> SVGSample:
        lo, hi = self.icon_shapes
        k = int(self.rng.integers(lo, hi + 1)) if k is None else k
        shapes = [self._shape() for _ in range(k)]
        body = "".join(self._element(s) for s in shapes)
        if self.rng.random() < self.group_prob:
            ang = int(self.rng.integers(-30, 31))
            body = f'<g transform="rotate({ang} 64 64)">{body}</g>'
        svg = canonicalize_svg(_HEAD + body + "</svg>")
        return SVGSample("icon", svg, self._describe(shapes), shapes)

    def _chemistry(self) -> SVGSample:
        rng = self.rng
        ring = int(rng.choice([5, 6]))
        radius = float(np.round(rng.uniform(22, 30), 2))
        rot = float(rng.uniform(0, 2 * math.pi / ring))
        verts = [
            (64 + radius * math.cos(rot + 2 * math.pi * i / ring),
             64 + radius * math.sin(rot + 2 * math.pi * i / ring))
            for i in range(ring)
        ]  # fmt: skip
        parts = []
        for i in range(ring):
            (x1, y1), (x2, y2) = verts[i], verts[(i + 1) % ring]
            parts.append(
                f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                'stroke="#000000" stroke-width="2"/>'
            )
        n_sub = int(rng.integers(1, 3))
        positions = sorted(int(p) for p in rng.choice(ring, size=n_sub, replace=False))
        subs, shapes = [], []
        for pos in positions:
            group = list(_GROUPS)[int(rng.integers(len(_GROUPS)))]
            vx, vy = verts[pos]
            ux, uy = (vx - 64) / radius, (vy - 64) / radius
            ex, ey = vx + 16 * ux, vy + 16 * uy
            lx, ly = vx + 26 * ux, vy + 26 * uy + 4
            parts.append(
                f'<line x1="{_n(vx)}" y1="{_n(vy)}" x2="{_n(ex)}" y2="{_n(ey)}" '
                'stroke="#000000" stroke-width="2"/>'
            )
            parts.append(
                f'<text x="{_n(lx)}" y="{_n(ly)}" font-size="10" text-anchor="middle">'
                f"{group}</text>"
            )
            subs.append(f"{_GROUPS[group]} group at position {pos + 1}")
            shapes.append({"kind": "text", "name": group, "colour": "black", "center": (lx, ly),
                           "area": 0.0, "box": (lx, ly, lx, ly)})  # fmt: skip
        size = {5: "five", 6: "six"}[ring]
        desc = f"A {size}-membered ring with " + " and ".join(subs) + "."
        svg = canonicalize_svg(_HEAD + "".join(parts) + "</svg>")
        ring_shape = {"kind": "ring", "name": f"{size}-membered ring", "colour": "black",
                      "center": (64.0, 64.0), "area": math.pi * radius**2,
                      "box": (64 - radius, 64 - radius, 64 + radius, 64 + radius)}  # fmt: skip
        return SVGSample("chemistry", svg, desc, [ring_shape, *shapes])

    def _illustration(self) -> SVGSample:
        rng = self.rng
        k = int(rng.integers(10, 41))
        c1, c2 = self._colour(), self._colour()
        grad = (
            '<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1">'
            f'<stop offset="0" stop-color="{PALETTE[c1]}"/>'
            f'<stop offset="1" stop-color="{PALETTE[c2]}"/></linearGradient></defs>'
            '<rect x="0" y="0" width="128" height="128" fill="url(#bg)"/>'
        )
        shapes = [self._shape() for _ in range(k)]
        groups, body = [], ""
        i = 0
        while i < k:
            take = int(rng.integers(2, 7))
            chunk = shapes[i : i + take]
            inner = "".join(self._element(s) for s in chunk)
            if rng.random() < 0.5:
                dx, dy = (float(v) for v in np.round(rng.uniform(-8, 8, 2), 2))
                inner = f'<g transform="translate({_n(dx)} {_n(dy)})">{inner}</g>'
            groups.append(f"<g>{inner}</g>")
            i += take
        body = "".join(groups)
        svg = canonicalize_svg(_HEAD + grad + body + "</svg>")
        counts: dict[str, int] = {}
        for s in shapes:
            counts[s["name"]] = counts.get(s["name"], 0) + 1
        listed = ", ".join(f"{v} {n}{'s' if v > 1 else ''}" for n, v in sorted(counts.items()))
        desc = f"An illustration on a {c1}-to-{c2} gradient background with {listed}."
        return SVGSample("illustration", svg, desc, shapes)

    def _animation(self) -> SVGSample:
        rng = self.rng
        k = int(rng.integers(1, 3))
        shapes = [
            self._shape(kind=str(rng.choice(["circle", "rect", "ellipse"]))) for _ in range(k)
        ]
        n_anim = int(rng.integers(1, 4))
        anims: list[list[str]] = [[] for _ in shapes]
        words = []
        for _ in range(n_anim):
            j = int(rng.integers(k))
            s = shapes[j]
            dur = int(rng.integers(1, 4))
            kind = str(rng.choice(["move", "rotate", "colour"]))
            if kind == "move":
                attr = "cx" if s["kind"] != "rect" else "x"
                start = float(s["attrs"][attr])
                end = float(np.clip(start + rng.uniform(-40, 40), 4, 124))
                anims[j].append(
                    f'<animate attributeName="{attr}" from="{_n(start)}" to="{_n(end)}" '
                    f'dur="{dur}s" repeatCount="indefinite"/>'
                )
                words.append(f"the {s['colour']} {s['name']} moves horizontally")
            elif kind == "rotate":
                cx, cy = s["center"]
                anims[j].append(
                    f'<animateTransform attributeName="transform" type="rotate" '
                    f'from="0 {_n(cx)} {_n(cy)}" to="360 {_n(cx)} {_n(cy)}" dur="{dur}s" '
                    'repeatCount="indefinite"/>'
                )
                words.append(f"the {s['colour']} {s['name']} spins")
            else:
                other = self._colour()
                anims[j].append(
                    f'<animate attributeName="fill" from="{PALETTE[s["colour"]]}" '
                    f'to="{PALETTE[other]}" dur="{dur}s" repeatCount="indefinite"/>'
                )
                words.append(f"the {s['colour']} {s['name']} turns {other}")
        body = "".join(self._element(s, children="".join(a)) for s, a in zip(shapes, anims))
        svg = canonicalize_svg(_HEAD + body + "</svg>")
        desc = self._describe(shapes, "An animation") + " " + "; ".join(words).capitalize() + "."
        return SVGSample("animation", svg, desc, shapes)

    # -------------------------------------------------------------- understanding
    def _options(self, right: str, pool: list[str]) -> tuple[list[str], int]:
        wrong = [p for p in dict.fromkeys(pool) if p != right]
        self.rng.shuffle(wrong)
        opts = [right, *wrong[:3]]
        while len(opts) < 4:
            opts.append(f"none {len(opts)}")
        order = self.rng.permutation(4)
        opts = [opts[i] for i in order]
        return opts, opts.index(right)

    def _mcq(self, s: SVGSample) -> list[MCQItem]:
        shapes = [x for x in s.shapes if x.get("kind") not in ("text",)]
        if not shapes:
            shapes = s.shapes
        kinds = [x["name"] for x in shapes]
        target = kinds[int(self.rng.integers(len(kinds)))]
        count = kinds.count(target)
        nums = [str(count + d) for d in (-1, 1, 2, 3) if count + d >= 0]
        opts, ans = self._options(str(count), nums)
        items = [MCQItem(f"How many {target} shapes are there?", opts, ans, "quantity")]
        largest = max(shapes, key=lambda x: x["area"])
        opts, ans = self._options(largest["colour"], list(_COLOURS))
        items.append(MCQItem("What colour is the largest shape?", opts, ans, "color"))
        top = min(shapes, key=lambda x: x["box"][1])
        pool = [x for x in dict.fromkeys(_SHAPES_NAMES) if x != top["name"]]
        opts, ans = self._options(top["name"], pool)
        items.append(MCQItem("Which shape reaches highest?", opts, ans, "geometry"))
        return items

    # -------------------------------------------------------------- editing
    def _edits(self, s: SVGSample) -> list[EditTriplet]:
        rng = self.rng
        inner = s.svg[len(_HEAD) : -len("</svg>")]
        out = []

        def wrap(transform: str) -> str:
            return canonicalize_svg(f'{_HEAD}<g transform="{transform}">{inner}</g></svg>')

        first = s.shapes[0]
        old = PALETTE.get(first.get("colour", "black"), "#000000")
        new_name = self._colour()
        target = s.svg.replace(old, PALETTE[new_name], 1)
        out.append(EditTriplet("color", f"Change the colour {old} to {new_name}.", s.svg, target))
        out.append(
            EditTriplet(
                "stroke",
                "Add a black stroke of width 2 to every shape.",
                s.svg,
                canonicalize_svg(f'{_HEAD}<g stroke="#000000" stroke-width="2">{inner}</g></svg>'),
            )
        )
        dx, dy = (int(v) for v in rng.integers(-20, 21, 2))
        out.append(
            EditTriplet(
                "translate",
                f"Move everything by ({dx}, {dy}).",
                s.svg,
                wrap(f"translate({dx} {dy})"),
            )
        )
        k = float(rng.choice([0.5, 0.75, 1.25, 1.5]))
        out.append(
            EditTriplet(
                "scale",
                f"Scale everything by {_n(k)} around the center.",
                s.svg,
                wrap(f"translate(64 64) scale({_n(k)}) translate(-64 -64)"),
            )
        )
        ang = int(rng.choice([-90, -45, 45, 90, 180]))
        out.append(
            EditTriplet(
                "rotate",
                f"Rotate everything by {ang} degrees.",
                s.svg,
                wrap(f"rotate({ang} 64 64)"),
            )
        )
        out.append(EditTriplet("flip", "Flip horizontally.", s.svg, wrap("matrix(-1 0 0 1 128 0)")))
        out.append(
            EditTriplet(
                "opacity",
                "Make everything half transparent.",
                s.svg,
                canonicalize_svg(f'{_HEAD}<g opacity="0.5">{inner}</g></svg>'),
            )
        )
        x0, y0 = (int(v) for v in rng.integers(0, 33, 2))
        crop = s.svg.replace('viewBox="0 0 128 128"', f'viewBox="{x0} {y0} 96 96"', 1)
        out.append(EditTriplet("crop", f"Crop to the 96x96 window at ({x0}, {y0}).", s.svg, crop))
        return out


_SHAPES_NAMES = [
    "circle", "rectangle", "ellipse", "line", "3-sided polygon", "4-sided polygon",
    "5-sided polygon", "6-sided polygon", "curved shape",
]  # fmt: skip


def text_to_svg_prompt(description: str) -> str:
    """The text-to-SVG prompt for ``description``."""
    if not isinstance(description, str) or not description.strip():
        raise ValueError("description must be a non-empty string")
    return f"Write the SVG code of: {description}\nSVG:"
