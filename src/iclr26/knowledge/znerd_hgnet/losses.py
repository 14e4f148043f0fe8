"""HGNet's structural regularisers (§3.2): the Differentiable Hierarchy Loss and the Continuum
Abstraction Field loss. Both are plain ``nn.Module`` losses usable with any graph model.

DHL on a soft parent adjacency A (A[u, v] = P(u is parent of v)):
L_acyc = tr(exp(A ∘ A)) - n (NOTEARS; 0 exactly for a DAG, ReLU'd as in the official code) and
L_sep = Σ_{u,w} (A²)_{uw} A_{uw} (a direct edge that is also a two-hop path is a shortcut),
L_hier = λ_acyc L_acyc + λ_sep L_sep. The trace is exact (``torch.linalg.matrix_exp``) or, for
large graphs, a Hutchinson estimate (1/s) Σ z^T exp(M) z with Rademacher probes z and the action
exp(M) z by a truncated Taylor series (App. A.7).

CAF: a learned unit direction w (stored raw, used as raw/‖raw‖), score ŷ(v) = h_v · w;
L_rank = mean over gold child->parent edges of max(0, (h_c - h_p)·w + δ),
L_anchor = mean over roots (ŷ - 1)² + mean over leaves ŷ², L_reg = mean (ŷ - y_topo)²,
L_caf = L_rank + γ1 L_anchor + γ2 L_reg.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

__all__ = ["HierarchyLoss", "CAFLoss", "acyclicity", "separation"]


def _check_adjacency(adjacency: torch.Tensor, name: str = "adjacency") -> torch.Tensor:
    V.check_tensor(adjacency, name, ndim=(2, 3), floating=True)
    if adjacency.shape[-1] != adjacency.shape[-2]:
        raise ValueError(
            f"{name} must be square in its last two dimensions, got {tuple(adjacency.shape)}"
        )
    return adjacency


def _taylor_action(m: torch.Tensor, z: torch.Tensor, terms: int) -> torch.Tensor:
    """exp(M) z by the Taylor series with ``terms`` terms (M is scaled down by 2^s and the
    action applied 2^s times so that the series converges quickly)."""
    norm = float(m.abs().sum(-1).max()) if m.numel() else 0.0
    squarings = max(0, int(torch.tensor(norm).clamp(min=1.0).log2().ceil()))
    scaled = m / (2**squarings)
    out = z
    for _ in range(2**squarings):
        term, acc = out, out
        for k in range(1, terms + 1):
            term = scaled @ term / k
            acc = acc + term
        out = acc
    return out


def acyclicity(
    adjacency: torch.Tensor,
    *,
    method: str = "exact",
    probes: int = 64,
    terms: int = 12,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``relu(tr(exp(A ∘ A)) - n)`` per graph: a scalar for (n, n), a vector for (B, n, n)."""
    a = _check_adjacency(adjacency)
    method = V.check_choice(method, "method", ("exact", "hutchinson"))
    probes = V.check_int(probes, "probes", low=1)
    terms = V.check_int(terms, "terms", low=1)
    m = a * a
    n = a.shape[-1]
    if method == "exact":
        trace = torch.linalg.matrix_exp(m).diagonal(dim1=-2, dim2=-1).sum(-1)
    else:
        shape = m.shape[:-2] + (n, probes)
        z = torch.randint(0, 2, shape, generator=generator, device=m.device).to(m.dtype) * 2 - 1
        trace = (z * _taylor_action(m, z, terms)).sum(-2).mean(-1)
    return torch.relu(trace - n)


def separation(adjacency: torch.Tensor) -> torch.Tensor:
    """``Σ (A²) ∘ A`` per graph (shortcut edges that duplicate a two-hop path)."""
    a = _check_adjacency(adjacency)
    return ((a @ a) * a).sum((-2, -1))


class HierarchyLoss(nn.Module):
    """L_hier = λ_acyc L_acyc + λ_sep L_sep, averaged over a batch of graphs; ``mask`` (B, n)
    removes padded nodes."""

    def __init__(
        self,
        lambda_acyc: float = 1.0,
        lambda_sep: float = 0.1,
        *,
        method: str = "exact",
        probes: int = 64,
        terms: int = 12,
        exact_max_nodes: int = 512,
    ):
        super().__init__()
        self.lambda_acyc = V.check_scalar(lambda_acyc, "lambda_acyc", low=0.0)
        self.lambda_sep = V.check_scalar(lambda_sep, "lambda_sep", low=0.0)
        self.method = V.check_choice(method, "method", ("exact", "hutchinson", "auto"))
        self.probes = V.check_int(probes, "probes", low=1)
        self.terms = V.check_int(terms, "terms", low=1)
        self.exact_max_nodes = V.check_int(exact_max_nodes, "exact_max_nodes", low=1)

    def forward(self, adjacency: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        a = _check_adjacency(adjacency)
        if mask is not None:
            V.check_tensor(mask, "mask", shape=a.shape[:-1])
            keep = mask.to(a.dtype)
            a = a * keep.unsqueeze(-1) * keep.unsqueeze(-2)
        eye = torch.eye(a.shape[-1], dtype=torch.bool, device=a.device)
        a = a.masked_fill(eye, 0.0)
        method = self.method
        if method == "auto":
            method = "exact" if a.shape[-1] <= self.exact_max_nodes else "hutchinson"
        acyc = acyclicity(a, method=method, probes=self.probes, terms=self.terms)
        return (self.lambda_acyc * acyc + self.lambda_sep * separation(a)).mean()


class CAFLoss(nn.Module):
    """Continuum Abstraction Field loss with a learnable unit direction ``w`` of size ``dim``."""

    def __init__(self, dim: int, delta: float = 0.5, gammas: tuple[float, float] = (1.0, 0.5)):
        super().__init__()
        self.dim = V.check_int(dim, "dim", low=1)
        self.delta = V.check_scalar(delta, "delta", low=0.0)
        if len(tuple(gammas)) != 2:
            raise ValueError(f"gammas must be a pair (gamma1, gamma2), got {gammas!r}")
        g1, g2 = gammas
        self.gammas = (V.check_scalar(g1, "gammas", low=0.0), V.check_scalar(g2, "gammas", low=0.0))
        raw = torch.randn(self.dim)
        self.raw_direction = nn.Parameter(raw / raw.norm())

    @property
    def direction(self) -> torch.Tensor:
        """The unit vector w."""
        return self.raw_direction / self.raw_direction.norm().clamp_min(1e-12)

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Abstraction score ŷ = h · w for embeddings (..., dim)."""
        V.check_tensor(h, "h", min_ndim=1, floating=True)
        if h.shape[-1] != self.dim:
            raise ValueError(f"h must have last dimension {self.dim}, got {h.shape[-1]}")
        return h @ self.direction

    def forward(
        self,
        h: torch.Tensor,
        child_parent: torch.Tensor,
        topo: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``h`` (N, dim) or (B, N, dim); ``child_parent`` (E, 2) index pairs (E, 3 with a batch
        index first for batched ``h``) of gold child -> parent edges; ``topo`` (N,) or (B, N)
        gold y_topo in [0, 1], NaN where undefined (no is-a relation). Roots are y_topo = 1,
        leaves y_topo = 0."""
        y = self.scores(h)
        V.check_tensor(child_parent, "child_parent", ndim=2, integer=True, nonempty=False)
        width = 2 if h.dim() == 2 else 3
        if child_parent.shape[-1] != width:
            raise ValueError(
                f"child_parent must have {width} columns, got {child_parent.shape[-1]}"
            )
        loss = y.new_zeros(())
        if child_parent.shape[0]:
            idx = tuple(child_parent[:, :-2].T) if width == 3 else ()
            c = y[idx + (child_parent[:, -2],)]
            p = y[idx + (child_parent[:, -1],)]
            loss = loss + torch.relu(c - p + self.delta).mean()
        if topo is not None:
            V.check_tensor(topo, "topo", shape=tuple(y.shape), allow_nan=True)
            defined = ~torch.isnan(topo)
            roots, leaves = defined & (topo >= 1.0), defined & (topo <= 0.0)
            anchor = y.new_zeros(())
            if roots.any():
                anchor = anchor + (y[roots] - 1.0).pow(2).mean()
            if leaves.any():
                anchor = anchor + y[leaves].pow(2).mean()
            loss = loss + self.gammas[0] * anchor
            if defined.any():
                loss = loss + self.gammas[1] * (y[defined] - topo[defined]).pow(2).mean()
        return loss
