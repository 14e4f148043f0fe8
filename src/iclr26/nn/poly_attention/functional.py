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

Masks follow ``nn.MultiheadAttention``'s conventions (bool ``True`` = not allowed, a float mask is
added to the scores). ``key_padding_mask[..., l]`` removes token ``l`` from every key slot
(j >= 2). ``attn_mask[..., r, c]`` applies to the same slot pairs as the causal mask: (parent,
child) along every edge of a tree polynomial, (query, slot j) for every j >= 2 otherwise, so
for self-attention it is exactly ``nn.MultiheadAttention``'s. A query with no allowed tuple
outputs zeros (not NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from iclr26 import validation as V_

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
    return V_.check_scalar(scale, "scale")


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
    if not isinstance(V, Sequence) or isinstance(V, torch.Tensor):
        raise TypeError(
            "V must be a list: None for the query slot, then one tensor (or None) per slot"
        )
    if len(V) != poly.num_slots:
        raise ValueError(f"need {poly.num_slots} value entries (V[0] = None), got {len(V)}")
    if V[0] is not None:
        raise ValueError("slot 1 (the query slot) carries no value: pass V[0] = None")
    for m, qs in enumerate(per_mono):
        for k, q in enumerate(qs):
            V_.check_tensor(q, f"Q (monomial {m + 1}, factor {k + 1})", min_ndim=2, floating=True)
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
    for j, v in enumerate(V[1:], start=1):
        if v is not None:
            V_.check_tensor(v, f"V[{j}]", min_ndim=2, floating=True)
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
    attn_mask: torch.Tensor | None = None,
    key_padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Poly-attention output at the query slot, shape ``(..., n, dv)``.

    ``Q[j]`` is slot j's projection ``(..., n, d)``, shared by every monomial that uses slot j.
    Alternatively ``Q[m]`` is a list with one projection per slot of monomial m (in increasing
    slot order): each (monomial, slot) pair has its own projection. ``V[0]`` must be ``None``
    and ``V[j]`` (``j >= 1``) is ``(..., n, dv)`` or ``None`` (a constant value of 1).

    ``attn_mask`` (broadcastable to ``(..., n, n)``) and ``key_padding_mask`` (broadcastable to
    ``(..., n)``) take ``nn.MultiheadAttention``'s conventions: bool ``True`` = not allowed, a
    float mask is added to the scores (see the module docstring for the slot pairs it masks).
    """
    poly = parse_polynomial(polynomial)
    V_.check_choice(backend, "backend", BACKENDS)
    V_.check_bool(causal, "causal")
    chunk_elements = V_.check_int(chunk_elements, "chunk_elements", low=1)
    q, v, lead = _check_inputs(Q, V, poly)
    n = q[0][0].shape[-2]
    bias = _mask_bias(attn_mask, key_padding_mask, lead, n, q[0][0])
    s = resolve_scale(scale, q[0][0].shape[-1])
    if backend == "auto":
        backend = "tree" if poly.is_tree else "strassen" if poly.is_triangle else "brute"
    if backend == "tree":
        out = _tree(q, v, poly, s, causal, bias)
    elif backend == "strassen":
        if not poly.is_triangle:
            raise ValueError(f"backend 'strassen' needs x1*x2 + x2*x3 + x3*x1, got {poly}")
        out = _strassen(q, v, poly, s, causal, bias, chunk_elements)
    else:
        out = _brute(q, v, poly, s, causal, chunk_elements, bias)
    return out.reshape(*lead, *out.shape[-2:])


def _additive(mask: torch.Tensor, name: str, like: torch.Tensor) -> torch.Tensor:
    """A bool mask as 0 / -inf, a float mask as it is (NaN and +inf refused)."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        zeros = torch.zeros(mask.shape, dtype=like.dtype, device=like.device)
        return zeros.masked_fill(mask.to(like.device), float("-inf"))
    V_.check_tensor(mask, name, floating=True, allow_inf=True, nonempty=False)
    if torch.isposinf(mask).any():
        raise ValueError(f"{name} contains +inf (a float mask adds to the scores; use -inf)")
    return mask.to(device=like.device, dtype=like.dtype)


def _mask_bias(attn_mask, key_padding_mask, lead, n: int, like: torch.Tensor):
    """One additive ``(batch, n, n)`` pair bias (rows: query or parent index, columns: key or
    child index) from both masks, or ``None`` when neither is given."""
    if attn_mask is None and key_padding_mask is None:
        return None
    batch = like.shape[0]
    bias = torch.zeros(batch, n, n, dtype=like.dtype, device=like.device)
    for mask, name, shape in (
        (attn_mask, "attn_mask", (*lead, n, n)),
        (key_padding_mask, "key_padding_mask", (*lead, n)),
    ):
        if mask is None:
            continue
        add = _additive(mask, name, like)
        try:
            add = torch.broadcast_to(add, shape)
        except RuntimeError:
            want = "(..., n, n)" if name == "attn_mask" else "(..., n)"
            raise ValueError(
                f"{name} of shape {tuple(mask.shape)} does not broadcast to {want} = {tuple(shape)}"
            ) from None
        add = add.reshape(batch, n, n) if name == "attn_mask" else add.reshape(batch, 1, n)
        bias = bias + add
    return bias


def _safe_softmax(logits: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax and log-sum-exp along ``dim`` that give weights 0 and log-partition -inf where
    every entry is -inf (a query or parent index with no allowed completion)."""
    top = logits.amax(dim=dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(logits - top)
    total = e.sum(dim=dim, keepdim=True)
    weights = e / torch.where(total > 0, total, torch.ones_like(total))
    return weights, (torch.log(total) + top).squeeze(dim)


def _place(matrix: torch.Tensor, a: int, b: int, t: int) -> torch.Tensor:
    """A ``(batch, n_a, n_b)`` pair term reshaped to broadcast over the score tensor
    ``(batch, c, n, ..., n)`` at the dimensions of slots a and b."""
    if a > b:
        matrix, a, b = matrix.transpose(1, 2), b, a
    shape = [matrix.shape[0]] + [1] * t
    shape[1 + a], shape[1 + b] = matrix.shape[1], matrix.shape[2]
    return matrix.reshape(shape)


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


def _brute(q, v, poly: Polynomial, scale: float, causal: bool, chunk_elements: int, bias=None):
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
        if bias is not None:
            parent = poly.tree()[0] if poly.is_tree else [0] * t
            for j in range(1, t):
                pair = bias[:, rows] if parent[j] == 0 else bias
                scores = scores + _place(pair, parent[j], j, t)
        weights, _ = _safe_softmax(scores.reshape(batch, c, -1))
        outputs.append(weights @ value)
    return torch.cat(outputs, dim=1)


def _edge_projections(q, poly: Polynomial) -> dict[tuple[int, int], tuple]:
    """For every degree-2 monomial ``(a, b)``: the projections of slot a and of slot b."""
    return {tuple(mono): (qs[0], qs[1]) for mono, qs in zip(poly.monomials, q)}


def _tree(q, v, poly: Polynomial, scale: float, causal: bool, bias=None):
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
            if bias is not None:
                logits = logits + bias
            if node == 0 and bias is None and not causal:
                # The query slot's log-partition is never used: a fused softmax suffices.
                weights = torch.softmax(logits, dim=-1)
            else:
                weights, lse = _safe_softmax(logits)
                if node != 0:
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


def _strassen(q, v, poly: Polynomial, scale: float, causal: bool, bias=None, chunk=1 << 22):
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
    if bias is not None:
        s12, s13 = s12 + bias, s13 + bias
    # Stabilise: B's row maxima move into A, A and C are normalised per query row. Every
    # factor is then <= 1; the product can still underflow when the best (j, k) of a row lies
    # far below the bound max_j A + max_k C (large logits), so such rows are redone exactly.
    b_max = _finite_max(s23)
    a_log = s12 + b_max.transpose(-1, -2)
    a = torch.exp(a_log - _finite_max(a_log))
    b = torch.exp(s23 - b_max)
    c = torch.exp(s13 - _finite_max(s13))
    denominator = ((a @ b) * c).sum(-1)
    # Per feature: sum_{j,k} A_ij V2[j] B_jk V3[k] C_ik, batched over the features.
    av = a.unsqueeze(1) * v2.transpose(1, 2).unsqueeze(-2)  # (batch, dv, i, j)
    bv = b.unsqueeze(1) * v3.transpose(1, 2).unsqueeze(-2)  # (batch, dv, j, k)
    numerator = ((av @ bv) * c.unsqueeze(1)).sum(-1)  # (batch, dv, i)
    safe = denominator > torch.finfo(denominator.dtype).tiny ** 0.5
    out = numerator / torch.where(safe, denominator, torch.ones_like(denominator)).unsqueeze(1)
    out = out.transpose(1, 2)
    if not bool(safe.all()):
        bi, ii = torch.nonzero(~safe, as_tuple=True)
        out = out.index_put((bi, ii), _triangle_rows(s12, s23, s13, v2, v3, bi, ii, chunk))
    return out


def _finite_max(x: torch.Tensor) -> torch.Tensor:
    top = x.amax(dim=-1, keepdim=True)
    return torch.where(torch.isfinite(top), top, torch.zeros_like(top))


def _triangle_rows(s12, s23, s13, v2, v3, bi, ii, chunk_elements: int) -> torch.Tensor:
    """Exact outputs of the (batch, query) rows ``(bi, ii)``: a max-shifted softmax over all
    ``n^2`` pairs (j, k) of each row, ``O(n^2 dv)`` per row, chunked over the rows."""
    n = s23.shape[-1]
    per = max(1, chunk_elements // max(n * n, 1))
    outputs = []
    for start in range(0, bi.numel(), per):
        b, i = bi[start : start + per], ii[start : start + per]
        scores = s12[b, i].unsqueeze(-1) + s23[b] + s13[b, i].unsqueeze(-2)  # (p, j, k)
        weights, _ = _safe_softmax(scores.reshape(len(b), -1))
        weights = weights.reshape(len(b), n, n)
        outputs.append(((weights @ v3[b]) * v2[b]).sum(1))  # (p, dv)
    return torch.cat(outputs)
