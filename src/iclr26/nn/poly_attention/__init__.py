"""Poly-attention: attention over token tuples scored by an attention polynomial.

Self-attention, 3-tensor attention and Strassen attention are special cases; tree
polynomials (the paper's new mechanism) are computed exactly in quadratic time and perform
function composition in one layer.
"""

from .functional import poly_attention
from .modules import PolyAttention, PolyTransformerBlock
from .polynomial import Polynomial, parse_polynomial
from .tasks import function_composition, match3

__all__ = [
    "PolyAttention",
    "PolyTransformerBlock",
    "Polynomial",
    "function_composition",
    "match3",
    "parse_polynomial",
    "poly_attention",
]
