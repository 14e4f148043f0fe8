"""Bad-input cases of the poly-attention room (tiny tensors; every call fails at the boundary)."""

import torch

from iclr26.nn.poly_attention import (
    PolyadicClassifier,
    PolyAttention,
    Polynomial,
    PolyTransformerBlock,
    compare_on_match3,
    function_composition,
    match3,
    parse_polynomial,
    poly_attention,
    train_classifier,
)

NAN, INF = float("nan"), float("inf")
Q = [torch.randn(1, 4, 3), torch.randn(1, 4, 3)]
V = [None, torch.randn(1, 4, 2)]
Q_NAN = [Q[0].clone(), Q[1]]
Q_NAN[0][0, 1, 1] = NAN
V_INF = [None, V[1].clone()]
V_INF[1][0, 0, 0] = INF
X = torch.randn(2, 4, 8)
X_NAN = X.clone()
X_NAN[0, 0, 0] = NAN
# fixed values (a 0 token makes TOKENS - 1 out of range whatever the global RNG state)
TOKENS = torch.tensor([[0, 1, 2, 3], [4, 0, 1, 2], [3, 4, 0, 1]])
LABELS = torch.tensor([0, 1, 0])

CASES = [
    # poly_attention
    ("poly_attention", "nan", lambda: poly_attention(Q_NAN, V, "self"), ValueError, "Q .*NaN"),
    ("poly_attention", "inf", lambda: poly_attention(Q, V_INF, "self"), ValueError, r"V\[1\]"),
    (
        "poly_attention",
        "empty",
        lambda: poly_attention([q[:, :0] for q in Q], [None, V[1][:, :0]], "self"),
        ValueError,
        "Q .*empty",
    ),
    (
        "poly_attention",
        "shape",
        lambda: poly_attention(Q, [None, torch.randn(1, 5, 2)], "self"),
        ValueError,
        r"V\[1\] must have shape",
    ),
    (
        "poly_attention",
        "shape",
        lambda: poly_attention(Q, V, "self", attn_mask=torch.zeros(3, 3, dtype=torch.bool)),
        ValueError,
        "attn_mask",
    ),
    (
        "poly_attention",
        "nan",
        lambda: poly_attention(Q, V, "self", key_padding_mask=torch.full((1, 4), NAN)),
        ValueError,
        "key_padding_mask contains NaN",
    ),
    (
        "poly_attention",
        "range",
        lambda: poly_attention(Q, V, "self", scale=NAN),
        ValueError,
        "scale",
    ),
    (
        "poly_attention",
        "range",
        lambda: poly_attention(Q, V, "self", backend="fft"),
        ValueError,
        "backend",
    ),
    ("poly_attention", "type", lambda: poly_attention(Q, V, "self", causal=1), TypeError, "causal"),
    (
        "poly_attention",
        "dtype",
        lambda: poly_attention([q.long() for q in Q], V, "self"),
        TypeError,
        "Q",
    ),
    # PolyAttention / PolyTransformerBlock
    ("PolyAttention", "nan", lambda: PolyAttention(8)(X_NAN), ValueError, "x contains NaN"),
    ("PolyAttention", "empty", lambda: PolyAttention(8)(X[:, :0]), ValueError, "x is empty"),
    (
        "PolyAttention",
        "shape",
        lambda: PolyAttention(8)(X[..., :4]),
        ValueError,
        "x must have shape",
    ),
    ("PolyAttention", "range", lambda: PolyAttention(0), ValueError, "dim"),
    ("PolyAttention", "type", lambda: PolyAttention(8, heads=1.5), TypeError, "heads"),
    (
        "PolyAttention",
        "range",
        lambda: PolyAttention(8, polynomial="x1*y2"),
        ValueError,
        "polynomial",
    ),
    (
        "PolyAttention",
        "type",
        lambda: PolyAttention(8)(X, key_padding_mask=[[False] * 4] * 2),
        TypeError,
        "key_padding_mask",
    ),
    (
        "PolyTransformerBlock",
        "nan",
        lambda: PolyTransformerBlock(8)(X_NAN),
        ValueError,
        "x contains",
    ),
    (
        "PolyTransformerBlock",
        "range",
        lambda: PolyTransformerBlock(8, mlp_ratio=NAN),
        ValueError,
        "mlp_ratio",
    ),
    # polynomials
    ("parse_polynomial", "other", lambda: parse_polynomial("x1*x1"), ValueError, "polynomial"),
    ("parse_polynomial", "type", lambda: parse_polynomial(3), TypeError, "polynomial"),
    (
        "parse_polynomial",
        "range",
        lambda: parse_polynomial("tree:path:0"),
        ValueError,
        "polynomial",
    ),
    ("Polynomial", "range", lambda: Polynomial(1, ((0,),)), ValueError, "num_slots"),
    ("Polynomial", "empty", lambda: Polynomial(2, ()), ValueError, "monomials"),
    # classifier, training, comparison
    ("PolyadicClassifier", "range", lambda: PolyadicClassifier([5], 1), ValueError, "n_classes"),
    ("PolyadicClassifier", "empty", lambda: PolyadicClassifier([], 2), ValueError, "vocab_sizes"),
    (
        "PolyadicClassifier",
        "range",
        lambda: PolyadicClassifier([5], 2, readout="mean"),
        ValueError,
        "readout",
    ),
    (
        "PolyadicClassifier",
        "dtype",
        lambda: PolyadicClassifier([5], 2, dim=8)(TOKENS.float()),
        TypeError,
        "tokens",
    ),
    (
        "PolyadicClassifier",
        "range",
        lambda: PolyadicClassifier([5], 2, dim=8)(TOKENS - 1),
        ValueError,
        "tokens",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(
            PolyadicClassifier([5], 2, dim=8), (TOKENS, LABELS), (TOKENS, LABELS), 0
        ),
        ValueError,
        "epochs",
    ),
    (
        "train_classifier",
        "shape",
        lambda: train_classifier(
            PolyadicClassifier([5], 2, dim=8), (TOKENS, LABELS[:2]), (TOKENS, LABELS), 1
        ),
        ValueError,
        "train",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(
            PolyadicClassifier([5], 2, dim=8), (TOKENS, LABELS), (TOKENS, LABELS), 1, lr=NAN
        ),
        ValueError,
        "lr",
    ),
    (
        "compare_on_match3",
        "empty",
        lambda: compare_on_match3(mechanisms=()),
        ValueError,
        "mechanisms",
    ),
    ("compare_on_match3", "range", lambda: compare_on_match3(modulus=1), ValueError, "modulus"),
    ("compare_on_match3", "range", lambda: compare_on_match3(lr=NAN), ValueError, "lr"),
    # the shared polyadic tasks this room re-exports
    ("function_composition", "range", lambda: function_composition(1, 10), ValueError, "m"),
    ("function_composition", "type", lambda: function_composition(12.5, 10), TypeError, "m"),
    ("match3", "range", lambda: match3(4, 1, 10), ValueError, "modulus"),
    ("match3", "range", lambda: match3(4, 7, 0), ValueError, "n_samples"),
]

EXEMPT = {}
