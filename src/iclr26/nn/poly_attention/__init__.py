"""Poly-attention: attention over token tuples scored by an attention polynomial.

Self-attention, 3-tensor attention and Strassen attention are special cases; tree
polynomials (the paper's new mechanism) are computed exactly in quadratic time and perform
function composition in one layer. The polyadic tasks (function composition, Match3) come
from :mod:`iclr26.data.polyadic`.
"""

from .experiments import PolyadicClassifier, compare_on_match3, train_classifier
from .functional import poly_attention
from .modules import PolyAttention, PolyTransformerBlock
from .polynomial import Polynomial, parse_polynomial
from .tasks import function_composition, match3

__all__ = [
    "PolyAttention",
    "PolyTransformerBlock",
    "PolyadicClassifier",
    "Polynomial",
    "compare_on_match3",
    "function_composition",
    "match3",
    "parse_polynomial",
    "poly_attention",
    "train_classifier",
]
