"""Poly-attention as a function of the slots' projections, with three exact algorithms.

For a tuple of token indices ``(l_1..l_t)`` the score is ``H = sum_m sum_a prod_{j in S_m}
Q^(j)[l_j, a]`` and the output at ``l_1`` is the ``exp(scale * H)``-weighted average of the
element-wise product ``V^(2)[l_2] * ... * V^(t)[l_t]`` (the paper's Definition 2.2). With
per-monomial projections (ours) monomial m uses its own ``Q^(m,j)`` in place of ``Q^(j)``;
every algorithm below takes either form.

* ``brute``: any polynomial, all ``n^(t-1)`` tuples per query, chunked over queries.
* ``tree``: tree polynomials, message passing from the leaves to the query slot; every edge
  is one ``n x n`` score matrix, so the cost is ``O(t n^2 d)`` (the paper's quadratic-time
  algorithm). Each node carries a normalised mean value and a log-partition, so every edge is
  stabilised by its own log-sum-exp.
* ``strassen``: the triangle ``x1 x2 + x2 x3 + x3 x1`` through ``d`` batched ``n x n``
  matrix products (``O(d n^3)`` with dense matmul).

Causal masking: for a tree polynomial each slot's index must not exceed its parent's (rooted
at the query slot), which keeps the factorisation; for any other polynomial every slot's index
must not exceed the query's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .polynomial import Polynomial, parse_polynomial

BACKENDS = ("auto", "brute", "tree", "strassen")


def resolve_scale(scale: str | float, head_dim: int) -> float:
    """``"1/d"`` (the paper's formula), ``"1/sqrt(d)"`` (transformer convention) or a number."""
    if isinstance(scale, str):
        if scale == "1/d":
            return 1.0 / head_dim
        if scale == "1/sqrt(d)":
            return 1.0 / math.sqrt(head_dim)
        raise ValueError(f"scale must be '1/d', '1/sqrt(d)' or a number, got {scale!r}")
    return float(scale)


def _per_monomial(Q: Sequence, poly: Polynomial) -> tuple[list[list[torch.Tensor]], torch.Tensor]:
    """Q as one list per monomial (its slots' projections in increasing slot order).

    ``Q`` is either one tensor per slot (shared by every monomial that uses the slot) or one
    sequence of tensors per monomial (``per_monomial_projections``).
    """
    if not isinstance(Q, Sequence) or isinstance(Q, torch.Tensor) or len(Q) == 0:
        raise TypeError("Q must be a non-empty list of tensors or of lists of tensors")
    if all(isinstance(q, torch.Tensor) for q in Q):
        if len(Q) != poly.num_slots:
            raise ValueError(
                f"polynomial {poly} has {poly.num_slots} slots, got {len(Q)} Q tensors"
            )
        return [[Q[j] for j in mono] for mono in poly.monomials], Q[0]
    if any(isinstance(q, torch.Tensor) for q in Q):
        raise TypeError(
            "Q mixes tensors and lists: pass one tensor per slot or one list per monomial"
        )
    if len(Q) != len(poly.monomials):
        raise ValueError(
            f"polynomial {poly} has {len(poly.monomials)} monomials, got {len(Q)} Q lists"
        )
    per_mono = []
    for mono, qs in zip(poly.monomials, Q):
        qs = list(qs)
        if len(qs) != len(mono) or not all(isinstance(q, torch.Tensor) for q in qs):
            raise ValueError(f"monomial {mono} needs {len(mono)} Q tensors, got {len(qs)}")
        per_mono.append(qs)
    return per_mono, per_mono[0][0]


def _check_inputs(
    Q: Sequence, V: Sequence[torch.Tensor | None], poly: Polynomial
) -> tuple[list[list[torch.Tensor]], list[torch.Tensor | None], tuple[int, ...]]:
    per_mono, ref = _per_monomial(Q, poly)
    if len(V) != poly.num_slots:
        raise ValueError(f"need {poly.num_slots} value entries (V[0] = None), got {len(V)}")
    if V[0] is not None:
        raise ValueError("slot 1 (the query slot) carries no value: pass V[0] = None")
    if ref.dim() < 2:
        raise ValueError("Q tensors must have shape (..., n, d)")
    lead, (n, d) = ref.shape[:-2], ref.shape[-2:]
    for m, qs in enumerate(per_mono):
        for q in qs:
            if q.shape != ref.shape:
                raise ValueError(
                    f"Q of monomial {m + 1} has shape {tuple(q.shape)}, expected {tuple(ref.shape)}"
                )
    values = [v for v in V[1:] if v is not None]
    if not values:
        raise ValueError("at least one slot j >= 2 needs a value tensor")
    dv = values[0].shape[-1]
    for j, v in enumerate(V[1:], start=1):
        if v is not None and (v.shape[:-1] != ref.shape[:-1] or v.shape[-1] != dv):
            raise ValueError(f"V[{j}] must have shape (..., {n}, {dv}), got {tuple(v.shape)}")
    flat_q = [[q.reshape(-1, n, d) for q in qs] for qs in per_mono]
    flat_v = [None if v is None else v.reshape(-1, n, dv) for v in V]
    return flat_q, flat_v, tuple(lead)


def poly_attention(
    Q: Sequence[torch.Tensor] | Sequence[Sequence[torch.Tensor]],
    V: Sequence[torch.Tensor | None],
    polynomial: str | Polynomial,
    scale: str | float = "1/d",
    causal: bool = False,
    backend: str = "auto",
    chunk_elements: int = 1 << 22,
) -> torch.Tensor:
    """Poly-attention output at the query slot, shape ``(..., n, dv)``.

    ``Q[j]`` is slot j's projection ``(..., n, d)``, shared by every monomial that uses slot j.
    Alternatively ``Q[m]`` is a list with one projection per slot of monomial m (in increasing
    slot order): each (monomial, slot) pair has its own projection. ``V[0]`` must be ``None``
    and ``V[j]`` (``j >= 1``) is ``(..., n, dv)`` or ``None`` (a constant value of 1).
    """
    poly = parse_polynomial(polynomial)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    q, v, lead = _check_inputs(Q, V, poly)
    s = resolve_scale(scale, q[0][0].shape[-1])
    if backend == "auto":
        backend = "tree" if poly.is_tree else "strassen" if poly.is_triangle else "brute"
    if backend == "tree":
        out = _tree(q, v, poly, s, causal)
    elif backend == "strassen":
        if not poly.is_triangle:
            raise ValueError(f"the strassen backend needs x1*x2 + x2*x3 + x3*x1, got {poly}")
        out = _strassen(q, v, poly, s, causal)
    else:
        out = _brute(q, v, poly, s, causal, chunk_elements)
    return out.reshape(*lead, *out.shape[-2:])


def _values_or_ones(v: torch.Tensor | None, like: torch.Tensor, dv: int) -> torch.Tensor:
    if v is not None:
        return v
    return like.new_ones(like.shape[0], like.shape[1], dv)


def _causal_mask(poly: Polynomial, n: int, rows: torch.Tensor, device) -> torch.Tensor:
    """Boolean mask of allowed tuples, shape (c, n, ..., n) for query rows ``rows``."""
    t = poly.num_slots
    idx = torch.arange(n, device=device)
    shape_of = [[1] * t for _ in range(t)]
    grids = []
    for j in range(t):
        shape = shape_of[j]
        shape[j] = -1
        grids.append((rows if j == 0 else idx).reshape(shape))
    allowed = torch.ones([1] * t, dtype=torch.bool, device=device)
    if poly.is_tree:
        parent, _ = poly.tree()
        for j in range(1, t):
            allowed = allowed & (grids[j] <= grids[parent[j]])
    else:
        for j in range(1, t):
            allowed = allowed & (grids[j] <= grids[0])
    return allowed


def _brute(q, v, poly: Polynomial, scale: float, causal: bool, chunk_elements: int):
    ref = q[0][0]
    batch, n, d = ref.shape
    t = poly.num_slots
    dv = next(x for x in v[1:] if x is not None).shape[-1]
    # Element-wise product of the values of slots 2..t over all (t-1)-tuples.
    value = _values_or_ones(v[1], ref, dv)
    for j in range(2, t):
        vj = _values_or_ones(v[j], ref, dv)
        value = value.unsqueeze(-2) * vj.reshape(batch, *([1] * (j - 1)), n, dv)
    value = value.reshape(batch, n ** (t - 1), dv)
    letters = "ijklmnopqrstuvwxy"[:t]
    per_row = max(n ** (t - 1) * max(d, dv), 1)
    chunk = max(1, min(n, chunk_elements // per_row))
    outputs = []
    for start in range(0, n, chunk):
        rows = torch.arange(start, min(n, start + chunk), device=ref.device)
        c = rows.numel()
        scores = ref.new_zeros(batch, c, *([n] * (t - 1)))
        for mono, qs in zip(poly.monomials, q):
            operands = [x[:, rows] if j == 0 else x for j, x in zip(mono, qs)]
            spec = (
                ",".join(f"z{letters[j]}a" for j in mono)
                + "->z"
                + "".join(letters[j] for j in mono)
            )
            term = torch.einsum(spec, *operands)
            shape = [batch] + [term.shape[1 + mono.index(j)] if j in mono else 1 for j in range(t)]
            scores = scores + term.reshape(shape)
        scores = scores * scale
        if causal:
            mask = _causal_mask(poly, n, rows, ref.device)
            scores = scores.masked_fill(~mask.unsqueeze(0), float("-inf"))
        weights = torch.softmax(scores.reshape(batch, c, -1), dim=-1)
        outputs.append(weights @ value)
    return torch.cat(outputs, dim=1)


def _edge_projections(q, poly: Polynomial) -> dict[tuple[int, int], tuple]:
    """For every degree-2 monomial ``(a, b)``: the projections of slot a and of slot b."""
    return {tuple(mono): (qs[0], qs[1]) for mono, qs in zip(poly.monomials, q)}


def _tree(q, v, poly: Polynomial, scale: float, causal: bool):
    ref = q[0][0]
    batch, n, _ = ref.shape
    dv = next(x for x in v[1:] if x is not None).shape[-1]
    parent, children = poly.tree()
    edges = _edge_projections(q, poly)
    order = _postorder(children)
    mean: dict[int, torch.Tensor] = {}
    log_z: dict[int, torch.Tensor] = {}
    if causal:
        idx = torch.arange(n, device=ref.device)
        allowed = idx[None, :] <= idx[:, None]  # child index <= parent index
    for node in order:
        acc = ref.new_ones(batch, n, dv) if node == 0 else _values_or_ones(v[node], ref, dv)
        log_total = None
        for child in children[node]:
            a, b = edges[(min(node, child), max(node, child))]
            q_node, q_child = (a, b) if node < child else (b, a)
            logits = scale * (q_node @ q_child.transpose(-1, -2))
            if log_z[child] is not None:  # a leaf's log-partition is 0
                logits = logits + log_z[child].unsqueeze(-2)
            if causal:
                logits = logits.masked_fill(~allowed, float("-inf"))
            if node == 0:
                # The query slot's log-partition is never used: a fused softmax suffices.
                weights = torch.softmax(logits, dim=-1)
            else:
                lse = torch.logsumexp(logits, dim=-1)
                weights = torch.exp(logits - lse.unsqueeze(-1))
                log_total = lse if log_total is None else log_total + lse
            acc = acc * (weights @ mean[child])
        mean[node], log_z[node] = acc, log_total
    return mean[0]


def _postorder(children: list[list[int]]) -> list[int]:
    order: list[int] = []

    def visit(node: int) -> None:
        for child in children[node]:
            visit(child)
        order.append(node)

    visit(0)
    return order


def _strassen(q, v, poly: Polynomial, scale: float, causal: bool):
    ref = q[0][0]
    batch, n, _ = ref.shape
    dv = next(x for x in v[1:] if x is not None).shape[-1]
    v2 = _values_or_ones(v[1], ref, dv)
    v3 = _values_or_ones(v[2], ref, dv)
    edges = {}
    for (a, b), (qa, qb) in _edge_projections(q, poly).items():
        edges[(a, b)] = scale * qa @ qb.transpose(-1, -2)
    s12, s23, s13 = edges[(0, 1)], edges[(1, 2)], edges[(0, 2)]  # (i, j), (j, k), (i, k)
    if causal:
        idx = torch.arange(n, device=ref.device)
        future = idx[None, :] > idx[:, None]
        s12 = s12.masked_fill(future, float("-inf"))
        s13 = s13.masked_fill(future, float("-inf"))
    # Stabilise: B's row maxima move into A, A and C are normalised per query row.
    b_max = s23.amax(dim=-1, keepdim=True)
    a_log = s12 + b_max.transpose(-1, -2)
    a = torch.exp(a_log - a_log.amax(dim=-1, keepdim=True))
    b = torch.exp(s23 - b_max)
    c = torch.exp(s13 - s13.amax(dim=-1, keepdim=True))
    denominator = ((a @ b) * c).sum(-1)
    # Per feature: sum_{j,k} A_ij V2[j] B_jk V3[k] C_ik, batched over the features.
    av = a.unsqueeze(1) * v2.transpose(1, 2).unsqueeze(-2)  # (batch, dv, i, j)
    bv = b.unsqueeze(1) * v3.transpose(1, 2).unsqueeze(-2)  # (batch, dv, j, k)
    numerator = ((av @ bv) * c.unsqueeze(1)).sum(-1)  # (batch, dv, i)
    return (numerator / denominator.unsqueeze(1)).transpose(1, 2)
