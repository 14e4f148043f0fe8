"""Attention polynomials: which token slots interact in a poly-attention head.

An attention polynomial is a multilinear ``h(x_1..x_t) = sum_m prod_{j in S_m} x_j`` (the
paper's Definition 2.2). Slot 1 is the query slot. A polynomial whose monomials all have
degree 2 and whose variable graph is a tree is a *tree polynomial*: exactly the class the
paper shows to be computable in quadratic time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PRESETS = {
    "self": "x1*x2",
    "tensor3": "x1*x2*x3",
    "strassen": "x1*x2 + x2*x3 + x3*x1",
}


@dataclass(frozen=True)
class Polynomial:
    """A multilinear attention polynomial over ``num_slots`` slots (0-based internally)."""

    num_slots: int
    monomials: tuple[tuple[int, ...], ...]
    _tree: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.num_slots, bool) or not isinstance(self.num_slots, int):
            raise TypeError(f"num_slots must be an integer, got {self.num_slots!r}")
        if self.num_slots < 2:
            raise ValueError(
                "num_slots must be >= 2: a poly-attention needs a query slot and a key slot"
            )
        if not self.monomials:
            raise ValueError("monomials is empty: the polynomial has no monomials")
        used = sorted({j for mono in self.monomials for j in mono})
        if used != list(range(self.num_slots)):
            raise ValueError(
                f"monomials must use slots x1..x{self.num_slots} with none missing, got {used}"
            )

    @property
    def edges(self) -> list[tuple[int, int]]:
        """Monomials as slot pairs (only meaningful when every monomial has degree 2)."""
        return [tuple(sorted(m)) for m in self.monomials if len(m) == 2]

    @property
    def is_tree(self) -> bool:
        """Degree-2 monomials forming a spanning tree of the slots."""
        if any(len(m) != 2 for m in self.monomials):
            return False
        if len(self.monomials) != self.num_slots - 1:
            return False
        return len(self._components()) == 1

    @property
    def is_triangle(self) -> bool:
        """The Strassen polynomial ``x1 x2 + x2 x3 + x3 x1``."""
        return (
            self.num_slots == 3
            and sorted(self.edges) == [(0, 1), (0, 2), (1, 2)]
            and len(self.monomials) == 3
        )

    def _components(self) -> list[set[int]]:
        parent = list(range(self.num_slots))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for a, b in self.edges:
            parent[find(a)] = find(b)
        groups: dict[int, set[int]] = {}
        for j in range(self.num_slots):
            groups.setdefault(find(j), set()).add(j)
        return list(groups.values())

    def tree(self) -> tuple[list[int], list[list[int]]]:
        """Parent array and children lists of the tree rooted at the query slot 0."""
        if not self.is_tree:
            raise ValueError(f"{self} is not a tree polynomial")
        adjacency: dict[int, list[int]] = {j: [] for j in range(self.num_slots)}
        for a, b in self.edges:
            adjacency[a].append(b)
            adjacency[b].append(a)
        parent = [-1] * self.num_slots
        children: list[list[int]] = [[] for _ in range(self.num_slots)]
        order, seen = [0], {0}
        for node in order:
            for nb in sorted(adjacency[node]):
                if nb not in seen:
                    seen.add(nb)
                    parent[nb] = node
                    children[node].append(nb)
                    order.append(nb)
        return parent, children

    def __str__(self) -> str:
        return " + ".join("*".join(f"x{j + 1}" for j in m) for m in self.monomials)


def parse_polynomial(spec: str | Polynomial) -> Polynomial:
    """Parse ``"x1*x2 + x2*x3"`` or a preset.

    Presets: ``"self"``, ``"tensor3"``, ``"strassen"``, ``"tree:path:r"`` (``x1 x2 + ... +
    x_r x_{r+1}``, r-fold composition) and ``"tree:star:k"`` (``x1 x2 + x1 x3 + ... +
    x1 x_{k+1}``).
    """
    if isinstance(spec, Polynomial):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"polynomial must be a string or Polynomial, got {type(spec).__name__}")
    text = spec.strip().lower()
    if text in _PRESETS:
        text = _PRESETS[text]
    elif text.startswith("tree:"):
        parts = text.split(":")
        if len(parts) != 3 or parts[1] not in {"path", "star"} or not parts[2].isdigit():
            raise ValueError(
                f"polynomial {spec!r} is a bad tree preset; use 'tree:path:r' or 'tree:star:k'"
            )
        size = int(parts[2])
        if size < 1:
            raise ValueError(f"polynomial {spec!r}: a tree preset needs at least one edge")
        if parts[1] == "path":
            text = " + ".join(f"x{j}*x{j + 1}" for j in range(1, size + 1))
        else:
            text = " + ".join(f"x1*x{j}" for j in range(2, size + 2))
    monomials = []
    for term in text.split("+"):
        factors = [f.strip() for f in term.split("*")]
        slots = []
        for factor in factors:
            match = re.fullmatch(r"x(\d+)", factor)
            if match is None or int(match.group(1)) < 1:
                raise ValueError(f"polynomial {spec!r}: cannot parse factor {factor!r}")
            slots.append(int(match.group(1)) - 1)
        if len(set(slots)) != len(slots):
            raise ValueError(
                f"polynomial {spec!r}: monomial {term.strip()!r} repeats a variable "
                "(h must be multilinear)"
            )
        monomials.append(tuple(sorted(slots)))
    num_slots = max(j for m in monomials for j in m) + 1
    return Polynomial(num_slots=num_slots, monomials=tuple(monomials))
