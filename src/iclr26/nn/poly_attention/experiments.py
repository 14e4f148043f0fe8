"""Small poly-attention classifiers for the polyadic tasks, their training loop, and a Match3
comparison of attention mechanisms.

A classifier embeds each token as a sum of per-field embeddings (no positional encoding, so
the model is a function of the token set), applies pre-norm residual poly-attention layers and
reads out with an MLP, either at the last token (function composition: the query) or at every
token (Match3: one binary label per position).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.data.polyadic import match3

from .modules import PolyAttention
from .polynomial import parse_polynomial

MATCH3_MECHANISMS = ("self", "tensor3", "strassen", "tree:path:2")


class PolyadicClassifier(nn.Module):
    """Additive token embedding, ``layers`` pre-norm residual poly-attention layers, MLP readout.

    ``vocab_sizes[f]`` is the number of ids of token field f; inputs are ``(batch, n)`` (one
    field) or ``(batch, n, fields)`` integer tensors. ``readout="last"`` gives ``(batch,
    n_classes)`` logits at the last token, ``readout="all"`` gives ``(batch, n, n_classes)``.
    """

    def __init__(
        self,
        vocab_sizes: Sequence[int],
        n_classes: int,
        polynomial: str = "self",
        heads: int = 1,
        layers: int = 1,
        dim: int = 64,
        readout: str = "last",
        scale: str | float = "1/sqrt(d)",
        per_monomial_projections: bool = False,
    ) -> None:
        super().__init__()
        V.check_choice(readout, "readout", ("last", "all"))
        if isinstance(vocab_sizes, int | str) or not hasattr(vocab_sizes, "__len__"):
            raise TypeError(f"vocab_sizes must be a sequence of integers, got {vocab_sizes!r}")
        if len(vocab_sizes) == 0:
            raise ValueError("vocab_sizes is empty: give one vocabulary size per token field")
        vocab_sizes = [
            V.check_int(v, f"vocab_sizes[{k}]", low=1) for k, v in enumerate(vocab_sizes)
        ]
        n_classes = V.check_int(n_classes, "n_classes", low=2)
        layers = V.check_int(layers, "layers", low=1)
        dim = V.check_int(dim, "dim", low=1)
        heads = V.check_int(heads, "heads", low=1)
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.readout = readout
        self.embeddings = nn.ModuleList(nn.Embedding(int(v), dim) for v in vocab_sizes)
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.attn = nn.ModuleList(
            PolyAttention(
                dim,
                polynomial,
                heads,
                dim // heads,
                scale=scale,
                per_monomial_projections=per_monomial_projections,
            )
            for _ in range(layers)
        )
        self.head = nn.Sequential(
            nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, n_classes)
        )

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        V.check_tensor(tokens, "tokens", ndim=(2, 3), integer=True, low=0)
        if tokens.dim() == 2:
            tokens = tokens.unsqueeze(-1)
        if tokens.dim() != 3 or tokens.shape[-1] != len(self.embeddings):
            raise ValueError(
                f"expected tokens (batch, n, {len(self.embeddings)}), got {tuple(tokens.shape)}"
            )
        h = sum(emb(tokens[..., f]) for f, emb in enumerate(self.embeddings))
        for norm, attn in zip(self.norms, self.attn):
            h = h + attn(norm(h))
        return self.head(h[:, -1] if self.readout == "last" else h)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> float:
    """Fraction of correct argmax predictions (per sample, or per token for ``readout="all"``)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            correct += int((model(x[i : i + batch_size]).argmax(-1) == y[i : i + batch_size]).sum())
    return correct / y.numel()


def train_classifier(
    model: nn.Module,
    train: tuple[torch.Tensor, torch.Tensor],
    test: tuple[torch.Tensor, torch.Tensor],
    epochs: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> tuple[list[float], float]:
    """AdamW on the cross-entropy; returns the test accuracy after every epoch and the process
    CPU seconds per epoch (training and evaluation)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    for name, pair in (("train", train), ("test", test)):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"{name} must be a pair (tokens, labels)")
        V.check_tensor(pair[0], f"{name}[0] (tokens)", ndim=(2, 3), integer=True, low=0)
        V.check_tensor(pair[1], f"{name}[1] (labels)", integer=True, low=0)
        if len(pair[0]) != len(pair[1]):
            raise ValueError(f"{name} tokens and labels differ in length")
    V.check_int(epochs, "epochs", low=1)
    V.check_int(batch_size, "batch_size", low=1)
    V.check_scalar(lr, "lr", low=0.0, low_open=True)
    V.check_int(seed, "seed", low=0)
    x_tr, y_tr = train
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    curve = []
    start = time.process_time()
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x_tr), generator=gen)
        for i in range(0, len(x_tr), batch_size):
            idx = order[i : i + batch_size]
            logits = model(x_tr[idx])
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y_tr[idx].reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        curve.append(accuracy(model, *test))
    return curve, (time.process_time() - start) / epochs


def compare_on_match3(
    n: int = 12,
    modulus: int = 101,
    n_train: int = 4096,
    n_test: int = 1024,
    epochs: int = 10,
    dim: int = 32,
    heads: int = 1,
    mechanisms: Sequence[str] = MATCH3_MECHANISMS,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> dict:
    """Train one single-layer classifier per attention mechanism on Match3 and compare.

    All mechanisms see the same data, initial seed and training budget. ``y_i = 1`` iff some
    ``j, k`` have ``x_i + x_j + x_k = 0 mod modulus``; the default ``modulus = 101`` for
    ``n = 12`` makes the two labels about equally frequent. Returns ``{"mechanisms": {name:
    {"accuracy", "curve", "seconds_per_epoch"}}, "majority_baseline", "positive_rate"}`` with
    per-token test accuracies. Reports only; the paper's statements on Match3 give no
    threshold to judge against.
    """
    if isinstance(mechanisms, str) or not mechanisms:
        raise ValueError(f"mechanisms must be a non-empty list of polynomials, got {mechanisms!r}")
    for name, value, low in (
        ("n", n, 1),
        ("modulus", modulus, 2),
        ("n_train", n_train, 1),
        ("n_test", n_test, 1),
        ("epochs", epochs, 1),
        ("dim", dim, 1),
        ("heads", heads, 1),
        ("batch_size", batch_size, 1),
    ):
        V.check_int(value, name, low=low)
    V.check_scalar(lr, "lr", low=0.0, low_open=True)
    for name in mechanisms:
        parse_polynomial(name)
    x_tr, y_tr = (torch.from_numpy(a) for a in match3(n, modulus, n_train, seed=seed))
    x_te, y_te = (torch.from_numpy(a) for a in match3(n, modulus, n_test, seed=seed + 10_000))
    positive = float(y_te.float().mean())
    results = {}
    for name in mechanisms:
        torch.manual_seed(seed)
        model = PolyadicClassifier([modulus], 2, name, heads=heads, dim=dim, readout="all")
        curve, sec = train_classifier(
            model, (x_tr, y_tr), (x_te, y_te), epochs, batch_size, lr, seed
        )
        results[name] = {"accuracy": curve[-1], "curve": curve, "seconds_per_epoch": sec}
    return {
        "mechanisms": results,
        "majority_baseline": max(positive, 1 - positive),
        "positive_rate": positive,
        "n": n,
        "modulus": modulus,
        "n_train": n_train,
        "epochs": epochs,
    }
