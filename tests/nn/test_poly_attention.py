import itertools

import numpy as np
import pytest
import torch

import iclr26.data.polyadic as polyadic
from iclr26.claims import run_claim
from iclr26.nn.poly_attention import (
    PolyadicClassifier,
    PolyAttention,
    PolyTransformerBlock,
    compare_on_match3,
    function_composition,
    match3,
    parse_polynomial,
    poly_attention,
)


def _inputs(t, n=7, d=4, dv=3, batch=2, seed=0, dtype=torch.float64, spread=2.0):
    g = torch.Generator().manual_seed(seed)
    q = [torch.randn(batch, n, d, generator=g, dtype=dtype) * spread for _ in range(t)]
    v = [None] + [torch.randn(batch, n, dv, generator=g, dtype=dtype) for _ in range(t - 1)]
    return q, v


def test_parser_and_presets():
    p = parse_polynomial("x1*x2 + x2*x3")
    assert p.edges == [(0, 1), (1, 2)] and p.is_tree and p.num_slots == 3
    assert parse_polynomial("strassen").is_triangle and not parse_polynomial("strassen").is_tree
    assert not parse_polynomial("tensor3").is_tree
    assert parse_polynomial("tree:star:3").edges == [(0, 1), (0, 2), (0, 3)]
    assert parse_polynomial("tree:path:3").num_slots == 4
    with pytest.raises(ValueError, match="repeats"):
        parse_polynomial("x1*x1 + x1*x2")
    with pytest.raises(ValueError):
        parse_polynomial("x1*y2")
    with pytest.raises(ValueError):
        parse_polynomial("x1*x3")  # slot x2 missing


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_sdpa(causal):
    q, v = _inputs(2)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q[0], q[1], v[1], is_causal=causal, scale=1 / 4
    )
    for backend in ("tree", "brute"):
        out = poly_attention(q, v, "self", causal=causal, backend=backend)
        assert torch.allclose(out, ref, atol=1e-12)


@pytest.mark.parametrize(
    "poly", ["tree:path:2", "tree:path:3", "tree:star:3", "x1*x2 + x1*x3 + x3*x4"]
)
@pytest.mark.parametrize("causal", [False, True])
def test_tree_equals_brute(poly, causal):
    t = parse_polynomial(poly).num_slots
    q, v = _inputs(t)
    a = poly_attention(q, v, poly, causal=causal, backend="tree")
    b = poly_attention(q, v, poly, causal=causal, backend="brute")
    assert (a - b).abs().max() < 1e-12


def test_tree_brute_by_hand_small():
    # Direct sum over all (l2, l3) for x1*x2 + x2*x3, n = 3.
    q, v = _inputs(3, n=3, batch=1)
    out = poly_attention(q, v, "tree:path:2", scale=0.5, backend="tree")[0]
    Q1, Q2, Q3 = (x[0] for x in q)
    V2, V3 = v[1][0], v[2][0]
    for i in range(3):
        num, den = 0, 0
        for j, k in itertools.product(range(3), repeat=2):
            w = torch.exp(0.5 * (Q1[i] @ Q2[j] + Q2[j] @ Q3[k]))
            num, den = num + w * V2[j] * V3[k], den + w
        assert torch.allclose(out[i], num / den, atol=1e-12)


def test_huge_scores_stay_finite():
    q, v = _inputs(3, spread=1e3, dtype=torch.float32)
    out = poly_attention(q, v, "tree:path:2", backend="tree")
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("causal", [False, True])
def test_strassen_equals_brute(causal):
    q, v = _inputs(3)
    a = poly_attention(q, v, "strassen", causal=causal, backend="strassen")
    b = poly_attention(q, v, "strassen", causal=causal, backend="brute")
    assert (a - b).abs().max() < 1e-12


def test_permuting_key_tokens_leaves_query_output_unchanged():
    torch.manual_seed(0)
    attn = PolyAttention(8, "x1*x2 + x2*x3", heads=2, head_dim=4).double()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    perm = torch.tensor([3, 1, 4, 0, 2, 5])  # keeps the query token (last) in place
    assert torch.allclose(attn(x)[0, -1], attn(x[:, perm])[0, -1], atol=1e-12)


def test_gradcheck_tree_head():
    q, v = _inputs(3, n=4, d=2, dv=2, batch=1)
    for x in q + v[1:]:
        x.requires_grad_(True)

    def f(*args):
        return poly_attention(list(args[:3]), [None, *args[3:]], "tree:path:2", backend="tree")

    assert torch.autograd.gradcheck(f, tuple(q + v[1:]))


def test_modules_shapes_and_errors():
    block = PolyTransformerBlock(16, "tree:path:2", heads=2)
    assert block(torch.randn(3, 5, 16)).shape == (3, 5, 16)
    attn = PolyAttention(16, "tensor3", heads=1, head_dim=8, causal=True)
    assert attn(torch.randn(2, 5, 16)).shape == (2, 5, 16)
    with pytest.raises(ValueError):
        attn(torch.randn(2, 5, 15))
    with pytest.raises(ValueError):
        PolyAttention(16, "self", backend="fast")
    q, v = _inputs(3)
    with pytest.raises(ValueError):
        poly_attention(q, v, "self")  # three Q tensors for a two-slot polynomial
    with pytest.raises(ValueError):
        poly_attention(q, [q[0]] + v[1:], "tree:path:2")  # slot 1 must carry no value
    with pytest.raises(ValueError):
        poly_attention(q, v, "tensor3", backend="tree")


def test_function_composition_labels():
    tokens, labels = function_composition(12, 50, seed=3)
    assert tokens.shape == (50, 25, 3)
    for s in range(50):
        f = {a: b for t, a, b in tokens[s, :-1] if t == 0}
        g = {a: b for t, a, b in tokens[s, :-1] if t == 1}
        assert len(f) == 12 and len(g) == 12
        x = tokens[s, -1, 1]
        assert labels[s] == g[f[x]]
    # fresh functions per sample
    assert len({tuple(tokens[s, :, 2]) for s in range(50)}) > 45


def test_match3_labels():
    x, y = match3(n=6, modulus=11, n_samples=20, seed=1)
    for s in range(20):
        for i in range(6):
            want = any((x[s, i] + x[s, j] + x[s, k]) % 11 == 0 for j in range(6) for k in range(6))
            assert y[s, i] == int(want)


def _per_monomial_inputs(poly, n=7, d=4, dv=3, seed=5):
    p = parse_polynomial(poly)
    g = torch.Generator().manual_seed(seed)
    q = [
        [torch.randn(2, n, d, generator=g, dtype=torch.float64) * 2 for _ in mono]
        for mono in p.monomials
    ]
    v = [None] + [
        torch.randn(2, n, dv, generator=g, dtype=torch.float64) for _ in range(p.num_slots - 1)
    ]
    return q, v


@pytest.mark.parametrize("poly", ["tree:path:2", "tree:path:3", "tree:star:3"])
@pytest.mark.parametrize("causal", [False, True])
def test_per_monomial_projections_tree_equals_brute(poly, causal):
    q, v = _per_monomial_inputs(poly)
    a = poly_attention(q, v, poly, causal=causal, backend="tree")
    b = poly_attention(q, v, poly, causal=causal, backend="brute")
    assert (a - b).abs().max() < 1e-12


@pytest.mark.parametrize("causal", [False, True])
def test_per_monomial_projections_strassen_equals_brute(causal):
    q, v = _per_monomial_inputs("strassen")
    a = poly_attention(q, v, "strassen", causal=causal, backend="strassen")
    b = poly_attention(q, v, "strassen", causal=causal, backend="brute")
    assert (a - b).abs().max() < 1e-12


def test_per_monomial_projections_by_hand():
    # x1*x2 + x2*x3 with slot 2 projected differently in its two monomials.
    q, v = _per_monomial_inputs("tree:path:2", n=3)
    (q1, q2a), (q2b, q3) = ((x[0] for x in pair) for pair in q)
    V2, V3 = v[1][0], v[2][0]
    out = poly_attention(q, v, "tree:path:2", scale=0.5)[0]
    for i in range(3):
        num, den = 0, 0
        for j, k in itertools.product(range(3), repeat=2):
            w = torch.exp(0.5 * (q1[i] @ q2a[j] + q2b[j] @ q3[k]))
            num, den = num + w * V2[j] * V3[k], den + w
        assert torch.allclose(out[i], num / den, atol=1e-12)


def test_per_monomial_with_shared_tensors_equals_per_slot():
    q, v = _inputs(4)
    poly = parse_polynomial("x1*x2 + x2*x3 + x2*x4")
    per_mono = [[q[j] for j in mono] for mono in poly.monomials]
    assert torch.equal(poly_attention(per_mono, v, poly), poly_attention(q, v, poly))


@pytest.mark.parametrize("poly", ["tree:path:2", "tree:star:3", "strassen"])
def test_per_monomial_module_differs_then_ties_to_shared(poly):
    torch.manual_seed(0)
    shared = PolyAttention(8, poly, heads=2, head_dim=4).double()
    torch.manual_seed(0)
    per_mono = PolyAttention(8, poly, heads=2, head_dim=4, per_monomial_projections=True).double()
    p = parse_polynomial(poly)
    assert len(per_mono.monomial_proj) == len(p.monomials)
    assert not hasattr(per_mono, "query_proj")
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    per_mono.value_proj.load_state_dict(shared.value_proj.state_dict())
    per_mono.out.load_state_dict(shared.out.state_dict())
    assert (per_mono(x) - shared(x)).abs().max() > 1e-6  # independent projections
    with torch.no_grad():
        for mono, group in zip(p.monomials, per_mono.monomial_proj):
            for slot, layer in zip(mono, group):
                layer.load_state_dict(shared.query_proj[slot].state_dict())
    assert torch.allclose(per_mono(x), shared(x), atol=1e-12)  # tied: the shared head


def test_per_monomial_is_per_slot_for_one_monomial():
    # tensor3 has one monomial: both parametrisations draw the same layers in the same order.
    torch.manual_seed(1)
    shared = PolyAttention(8, "tensor3", head_dim=4).double()
    torch.manual_seed(1)
    per_mono = PolyAttention(8, "tensor3", head_dim=4, per_monomial_projections=True).double()
    x = torch.randn(1, 4, 8, dtype=torch.float64)
    assert torch.equal(per_mono(x), shared(x))


def test_per_monomial_bad_input():
    q, v = _per_monomial_inputs("tree:path:2")
    with pytest.raises(TypeError, match="mixes"):
        poly_attention([q[0][0], q[1]], v, "tree:path:2")
    with pytest.raises(ValueError, match="monomials"):
        poly_attention(q[:1], v, "tree:path:2")
    with pytest.raises(ValueError, match="needs 2"):
        poly_attention([q[0], q[1][:1]], v, "tree:path:2")
    with pytest.raises(TypeError):
        poly_attention(q[0][0], v, "tree:path:2")


def test_tasks_live_in_data_polyadic():
    assert function_composition is polyadic.function_composition and match3 is polyadic.match3
    with pytest.raises(TypeError):
        polyadic.match3(n=6.0)
    with pytest.raises(ValueError):
        polyadic.function_composition(m=1)


def test_polyadic_classifier_shapes_and_errors():
    model = PolyadicClassifier([3, 12, 13], 12, "tree:path:2", dim=16)
    tokens = torch.from_numpy(function_composition(12, 4, seed=0)[0])
    assert model(tokens).shape == (4, 12)
    per_token = PolyadicClassifier([11], 2, "strassen", dim=8, readout="all")
    assert per_token(torch.from_numpy(match3(5, 11, 3)[0])).shape == (3, 5, 2)
    with pytest.raises(ValueError):
        model(tokens[..., :2])
    with pytest.raises(ValueError):
        PolyadicClassifier([3], 2, readout="first")


def test_compare_on_match3_smoke():
    out = compare_on_match3(n=5, modulus=11, n_train=32, n_test=16, epochs=1, dim=8)
    assert set(out["mechanisms"]) == {"self", "tensor3", "strassen", "tree:path:2"}
    for rec in out["mechanisms"].values():
        assert 0.0 <= rec["accuracy"] <= 1.0 and len(rec["curve"]) == 1
    assert 0.5 <= out["majority_baseline"] <= 1.0
    with pytest.raises(ValueError):
        compare_on_match3(mechanisms=())


@pytest.mark.parametrize("name", ["function-composition", "exact-quadratic-tree-attention"])
def test_claims_smoke(name, tmp_path):
    record = run_claim("poly_attention", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert np.all([(tmp_path / f).exists() for f in record["figures"]])


# ---------------------------------------------------------------- masks and stability


def _loop_reference(q, v, poly, scale, causal=False, pair_bias=None):
    """Every (query, tuple) by explicit loops in float64: the score is the polynomial plus the
    mask terms on the slot pairs the module docstring names (tree edges for a tree polynomial,
    (query, slot) otherwise); queries with no allowed tuple give zeros."""
    poly = parse_polynomial(poly)
    t = poly.num_slots
    batch, n, _ = q[0].shape
    dv = next(x for x in v[1:] if x is not None).shape[-1]
    parent = poly.tree()[0] if poly.is_tree else [0] * t
    out = torch.zeros(batch, n, dv, dtype=torch.float64)
    for b in range(batch):
        for i in range(n):
            scores, values = [], []
            for rest in itertools.product(range(n), repeat=t - 1):
                idx = (i, *rest)
                if causal and any(idx[j] > idx[parent[j]] for j in range(1, t)):
                    continue
                h = sum(
                    torch.prod(torch.stack([q[j][b, idx[j]] for j in mono]), 0).sum()
                    for mono in poly.monomials
                )
                s = scale * float(h)
                if pair_bias is not None:
                    s += sum(float(pair_bias[b, idx[parent[j]], idx[j]]) for j in range(1, t))
                val = torch.ones(dv, dtype=torch.float64)
                for j in range(1, t):
                    if v[j] is not None:
                        val = val * v[j][b, idx[j]].double()
                scores.append(s)
                values.append(val)
            scores = torch.tensor(scores, dtype=torch.float64)
            if not len(scores) or torch.isinf(scores).all():
                continue
            w = torch.softmax(scores, 0)
            out[b, i] = (w[:, None] * torch.stack(values)).sum(0)
    return out


@pytest.mark.parametrize(
    "poly, backends",
    [
        ("self", ("tree", "brute")),
        ("tree:path:2", ("tree", "brute")),
        ("tree:star:2", ("tree", "brute")),
        ("strassen", ("strassen", "brute")),
        ("tensor3", ("brute",)),
    ],
)
def test_masks_match_brute_force_loops(poly, backends):
    t = parse_polynomial(poly).num_slots
    q, v = _inputs(t, n=5, d=3, dv=2, batch=2, seed=3)
    g = torch.Generator().manual_seed(1)
    attn = torch.rand(5, 5, generator=g) < 0.3
    attn[:, 0] = False  # keep one allowed key everywhere except the row below
    attn[4] = True  # query 4 (and, for trees, parent index 4) has no allowed partner
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[0, 3] = pad[1, 1] = True
    float_mask = torch.randn(2, 5, 5, generator=g, dtype=torch.float64)
    cases = [
        (dict(attn_mask=attn), torch.zeros(2, 5, 5).masked_fill(attn, float("-inf"))),
        (
            dict(key_padding_mask=pad),
            torch.zeros(2, 5, 5).masked_fill(pad[:, None, :], float("-inf")),
        ),
        (
            dict(attn_mask=float_mask, key_padding_mask=pad),
            float_mask.masked_fill(pad[:, None, :], float("-inf")),
        ),
    ]
    for kwargs, bias in cases:
        for causal in (False, True):
            want = _loop_reference(q, v, poly, 1 / 3, causal, bias.double())
            for backend in backends:
                got = poly_attention(q, v, poly, causal=causal, backend=backend, **kwargs)
                assert torch.isfinite(got).all(), (backend, kwargs)
                assert torch.allclose(got, want, atol=1e-10), (backend, causal, kwargs)


def test_self_attention_masks_equal_scaled_dot_product_attention():
    q, v = _inputs(2, n=6, d=4, dv=4, batch=3, seed=5)
    g = torch.Generator().manual_seed(2)
    attn = torch.rand(6, 6, generator=g) < 0.4
    attn.fill_diagonal_(False)
    pad = torch.zeros(3, 6, dtype=torch.bool)
    pad[:, -1] = True
    ours = poly_attention(
        q, v, "self", scale="1/sqrt(d)", attn_mask=attn, key_padding_mask=pad, backend="tree"
    )
    allowed = ~(attn[None] | pad[:, None, :])
    ref = torch.nn.functional.scaled_dot_product_attention(q[0], q[1], v[1], attn_mask=allowed)
    assert torch.allclose(ours, ref, atol=1e-12)


def test_module_masks_follow_multihead_attention_conventions():
    torch.manual_seed(0)
    layer = PolyAttention(8, "tree:path:2", heads=2).double()
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[0, 4:] = True
    y = layer(x, key_padding_mask=pad)
    # Padded tokens are invisible as keys: changing them changes no other position's output.
    x2 = x.clone()
    x2[0, 4:] = torch.randn(2, 8, dtype=torch.float64) * 5
    y2 = layer(x2, key_padding_mask=pad)
    assert torch.allclose(y[0, :4], y2[0, :4], atol=1e-12) and torch.allclose(y[1], y2[1])
    # A float mask of 0 / -inf equals the bool mask; (batch * heads, n, n) is accepted.
    attn = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    as_float = torch.zeros(6, 6, dtype=torch.float64).masked_fill(attn, float("-inf"))
    assert torch.allclose(layer(x, attn_mask=attn), layer(x, attn_mask=as_float))
    per_head = attn.expand(2 * 2, 6, 6)
    assert torch.allclose(layer(x, attn_mask=attn), layer(x, attn_mask=per_head))
    # The causal flag and a causal bool mask agree for self-attention.
    sa = PolyAttention(8, "self", heads=2).double()
    causal = PolyAttention(8, "self", heads=2, causal=True).double()
    causal.load_state_dict(sa.state_dict())
    assert torch.allclose(sa(x, attn_mask=attn), causal(x), atol=1e-12)
    block = PolyTransformerBlock(8, "strassen").double()
    assert torch.isfinite(block(x, attn_mask=attn, key_padding_mask=pad)).all()
    with pytest.raises(ValueError, match="attn_mask"):
        layer(x, attn_mask=torch.zeros(5, 6, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="key_padding_mask"):
        layer(x, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask contains NaN"):
        layer(x, attn_mask=torch.full((6, 6), float("nan"), dtype=torch.float64))


def test_fully_masked_queries_give_zeros_not_nan():
    for poly, backend in (("self", "tree"), ("strassen", "strassen"), ("tensor3", "brute")):
        t = parse_polynomial(poly).num_slots
        q, v = _inputs(t, n=4, batch=1)
        pad = torch.ones(1, 4, dtype=torch.bool)
        out = poly_attention(q, v, poly, backend=backend, key_padding_mask=pad)
        assert torch.equal(out, torch.zeros_like(out)), poly


def test_strassen_stays_finite_for_large_logits_in_float32():
    # Logits ~1e3: the row-wise bound max_j A + max_k C sits hundreds above the best (j, k),
    # so the factored products underflow float32; those rows are redone exactly.
    q, v = _inputs(3, n=24, d=8, dv=4, batch=2, seed=11, dtype=torch.float32, spread=1.0)
    q = [x * 30.0 for x in q]  # scale 1/d: scores ~ 900 * N(0, 1) / sqrt(8) ... up to ~1e3
    h = poly_attention([x.double() for x in q], [None] + [x.double() for x in v[1:]], "strassen")
    logits = (q[0] @ q[1].transpose(-1, -2)).abs().max() / 8
    assert logits > 500
    for backend in ("strassen", "brute"):
        out = poly_attention(q, v, "strassen", backend=backend)
        assert out.dtype == torch.float32 and torch.isfinite(out).all(), backend
        assert torch.allclose(out.double(), h, atol=5e-3), backend


def test_empty_and_non_finite_inputs_are_refused():
    q, v = _inputs(2, n=4)
    with pytest.raises(ValueError, match="Q .* is empty"):
        poly_attention([x[:, :0] for x in q], [None, v[1][:, :0]], "self")
    bad = q[0].clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="Q .* contains NaN"):
        poly_attention([bad, q[1]], v, "self")
    with pytest.raises(ValueError, match="x is empty"):
        PolyAttention(4)(torch.randn(2, 0, 4))
    with pytest.raises(ValueError, match="scale"):
        poly_attention(q, v, "self", scale=float("nan"))
