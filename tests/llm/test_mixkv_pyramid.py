"""PyramidKV (layer-wise budgets) as a base of MixKV, and AdaKV's ``skip`` option."""

import itertools
import math
from fractions import Fraction

import pytest
import torch

from iclr26.llm.mixkv import (
    AdaKV,
    KVCompressionConfig,
    MixKV,
    PyramidKV,
    SnapKV,
    adakv_capacities,
    continuation_nll,
    enable_kv_compression,
    make_policy,
    pyramid_budgets,
    snapkv_scores,
)
from iclr26.models import hf_compat


@pytest.fixture(scope="module")
def llama():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config("test")).eval()


def _kv(b=2, h_q=4, h_kv=2, t=120, w=8, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h_q, w, d, generator=g)
    k = torch.randn(b, h_kv, t, d, generator=g)
    v = torch.randn(b, h_kv, t, d, generator=g)
    return q, k, v


# ------------------------------------------------------------------ the budgets


def test_pyramid_budgets_by_hand():
    # C = 16, beta 20: targets 31.2, 21.07, 10.93, 0.8 (sum 64); floors 31, 21, 10, 0 leave 2
    # tokens, which go to the largest remainders (layers 2 and 3)
    assert pyramid_budgets(32, 16, 4, prompt_len=448).tolist() == [47, 37, 27, 17]
    # C = 48: targets 93.6, 63.2, 32.8, 2.4; floors leave 2, to layers 2 (.8) and 0 (.6)
    assert pyramid_budgets(64, 16, 4, prompt_len=448).tolist() == [110, 79, 49, 18]
    # prompt of 40: the bottom layer is capped at its 24 prefix tokens, the top gets 32 - 24
    assert pyramid_budgets(32, 16, 4, prompt_len=40).tolist() == [40, 35, 29, 24]
    # a prompt shorter than 2C (= 64) keeps the uniform budget, as in the released code
    assert pyramid_budgets(40, 8, 4, prompt_len=50).tolist() == [40] * 4
    assert pyramid_budgets(40, 8, 4, prompt_len=64).tolist() != [40] * 4
    # beta = 1: low = high = C, uniform
    assert pyramid_budgets(40, 8, 5, beta=1.0).tolist() == [40] * 5
    assert pyramid_budgets(40, 8, 1).tolist() == [40]


@pytest.mark.parametrize(
    "budget, window, layers, beta, prompt",
    list(
        itertools.product(
            (24, 33, 64, 200), (4, 16), (2, 3, 7, 32), (1.0, 3.5, 20.0), (None, 260, 2000)
        )
    ),
)
def test_pyramid_budgets_sum_order_and_targets(budget, window, layers, beta, prompt):
    try:
        got = pyramid_budgets(budget, window, layers, beta, prompt)
    except ValueError as exc:  # only when a layer would keep nothing beyond the window
        assert "too small" in str(exc) and Fraction(budget - window) / Fraction(beta) < 1
        return
    assert int(got.sum()) == layers * budget  # exact total
    assert bool((got[1:] <= got[:-1]).all())  # non-increasing with depth
    assert bool((got > window).all())  # window plus at least one chosen token everywhere
    if prompt is not None:
        assert bool((got <= prompt).all())
    # the exact linear schedule, before rounding (each budget within one token of it)
    c = Fraction(budget - window)
    if prompt is not None and prompt < 2 * c:
        targets = [c] * layers
    else:
        low = c / Fraction(beta)
        high = 2 * c - low
        if prompt is not None and high >= prompt - window:
            high = Fraction(prompt - window)
            low = 2 * c - high
        targets = [high - i * (high - low) / (layers - 1) for i in range(layers)]
    for cap, target in zip((got - window).tolist(), targets):
        assert abs(cap - target) < 1


def test_pyramid_budgets_decrease_strictly_for_the_default_beta():
    got = pyramid_budgets(256 + 32, 32, 32, prompt_len=4096)
    assert bool((got[1:] < got[:-1]).all())
    assert got[0] - 32 > 2 * 256 - 256 / 20 - 1 and got[-1] - 32 < 256 / 20 + 1


# ------------------------------------------------------------------ the policies


@pytest.mark.parametrize("layers", [2, 4])
def test_pyramidkv_layer_equals_snapkv_at_the_layer_budget(layers):
    q, k, v = _kv(t=120, w=8)
    pyr = PyramidKV(40, 8, num_layers=layers)
    budgets = pyramid_budgets(40, 8, layers, prompt_len=120)
    assert pyr.layer_budgets(120).tolist() == budgets.tolist()
    for layer in range(layers):
        sel = pyr.select(q, k, v, layer=layer)
        assert bool(sel.keep[..., -8:].all())  # the window is always kept
        assert bool((sel.counts == budgets[layer]).all())
        ref = SnapKV(int(budgets[layer]), 8).select(q, k, v)
        assert torch.equal(sel.keep, ref.keep)
    # the model total: L * budget per KV head
    total = sum(pyr.select(q, k, v, layer=i).counts for i in range(layers))
    assert bool((total == layers * 40).all())


def test_pyramidkv_with_one_layer_is_snapkv():
    q, k, v = _kv(t=90, w=8, seed=3)
    for kw in ({}, {"kernel": 1, "pooling": "none"}, {"gqa": "max", "pooling": "max"}):
        got = PyramidKV(24, 8, num_layers=1, **kw).select(q, k, v, layer=0)
        assert torch.equal(got.keep, SnapKV(24, 8, **kw).select(q, k, v).keep)


def test_mixkv_on_pyramidkv_at_zero_diversity_is_pyramidkv():
    # redundancy 0 drops the diversity term; values of equal norm make the value-norm term
    # constant (zero after its min-max), so the score is PyramidKV's attention alone
    q, k, v = _kv(t=100, w=8, seed=4)
    v = torch.where(v >= 0, 1.0, -1.0)  # every value norm exactly 4
    pyr = PyramidKV(30, 8, num_layers=3)
    for layer in range(3):
        want = pyr.select(q, k, v, layer=layer).keep
        got = MixKV(pyr, redundancy=0.0).select(q, k, v, layer=layer).keep
        assert torch.equal(got, want)
    # with the diversity on, the tokens change, the counts do not
    mixed = MixKV(pyr).select(q, k, v, layer=0)
    assert not torch.equal(mixed.keep, pyr.select(q, k, v, layer=0).keep)


def test_mixkv_on_pyramidkv_equals_mixkv_on_snapkv_at_each_layer_budget():
    q, k, v = _kv(t=100, w=8, seed=5)
    budgets = pyramid_budgets(30, 8, 3, prompt_len=100)
    mix = MixKV(PyramidKV(30, 8, num_layers=3))
    assert mix.name == "pyramidkv+mixkv"
    for layer in range(3):
        got = mix.select(q, k, v, layer=layer)
        want = MixKV(SnapKV(int(budgets[layer]), 8)).select(q, k, v)
        assert torch.equal(got.keep, want.keep)
        assert bool((got.counts == budgets[layer]).all())


def test_pyramidkv_needs_its_layer_and_depth():
    q, k, v = _kv()
    with pytest.raises(TypeError, match="layer"):
        PyramidKV(40, 8, num_layers=2).select(q, k, v)
    with pytest.raises(TypeError, match="num_layers"):
        PyramidKV(40, 8).select(q, k, v, layer=0)
    with pytest.raises(ValueError, match="layer"):
        PyramidKV(40, 8, num_layers=2).select(q, k, v, layer=2)
    bound = PyramidKV(40, 8).for_layers(3)
    assert bound.num_layers == 3
    assert MixKV(PyramidKV(40, 8)).for_layers(3).base.num_layers == 3
    with pytest.raises(ValueError, match="num_layers"):
        PyramidKV(40, 8, num_layers=2).for_layers(3)


# ------------------------------------------------------------------ inside a model


def test_pyramidkv_inside_generate_and_gather_equals_evict(llama):
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(3, 4000, (2, 96), generator=g)
    cont = torch.randint(3, 4000, (2, 6), generator=g)
    budgets = pyramid_budgets(40, 8, 2, prompt_len=96).tolist()
    assert budgets[0] > budgets[1]
    outs = {}
    for mode in ("evict", "gather"):
        pol = make_policy("pyramidkv+mixkv", 40, 8)
        assert pol.base.num_layers is None  # fitted by the context
        with torch.no_grad(), enable_kv_compression(llama, pol, mode=mode) as state:
            cache = hf_compat.empty_cache(llama.config)
            l1, cache = hf_compat.forward_with_cache(llama, ids, cache)
            l2, cache = hf_compat.forward_with_cache(llama, cont, cache)
            assert state.policy.base.num_layers == 2
            assert [int(state.selections[i].counts.max()) for i in (0, 1)] == budgets
            assert all(bool((state.selections[i].counts == budgets[i]).all()) for i in (0, 1))
        outs[mode] = torch.cat([l1, l2], 1)
    assert torch.allclose(outs["evict"], outs["gather"], atol=1e-4)
    cfg = KVCompressionConfig(method="pyramidkv", budget=40, window=8, mode="gather")
    with enable_kv_compression(llama, cfg):
        out = llama.generate(input_ids=ids[:1], max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 99)
    with pytest.raises(ValueError, match="num_layers"):
        with enable_kv_compression(llama, PyramidKV(40, 8, num_layers=4)):
            pass


def test_pyramidkv_on_a_one_layer_model_is_snapkv():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(2)
    model = LlamaForCausalLM(tiny_llama_config("test", num_hidden_layers=1)).eval()
    g = torch.Generator().manual_seed(12)
    ids = torch.randint(3, 4000, (3, 64), generator=g)
    cont = torch.randint(3, 4000, (3, 6), generator=g)
    nll = continuation_nll(
        model,
        ids,
        cont,
        {
            "pyr": PyramidKV(20, 8),
            "snap": SnapKV(20, 8),
            "pyr+mix": MixKV(PyramidKV(20, 8)),
            "snap+mix": MixKV(SnapKV(20, 8)),
        },
    )
    assert torch.equal(nll["pyr"], nll["snap"])
    assert torch.equal(nll["pyr+mix"], nll["snap+mix"])


# ------------------------------------------------------------------ AdaKV skip


def test_adakv_skip_keeps_uniform_budgets_in_the_first_layers():
    q, k, v = _kv(t=80, w=8, seed=6)
    caps = adakv_capacities(snapkv_scores(q, k), 16, 0.2)
    assert not bool((caps == 16).all())  # the adaptive split is uneven on this input
    ada, skipped = AdaKV(24, 8), AdaKV(24, 8, skip=2)
    for layer in range(4):
        got = skipped.select(q, k, v, layer=layer)
        if layer < 2:  # SnapKV's uniform split, still compressed
            assert torch.equal(got.keep, SnapKV(24, 8).select(q, k, v).keep)
            assert bool((got.counts == 24).all())
        else:
            assert torch.equal(got.keep, ada.select(q, k, v, layer=layer).keep)
            assert torch.equal(got.counts, caps + 8)
        mixed = MixKV(skipped).select(q, k, v, layer=layer)
        ref = MixKV(SnapKV(24, 8) if layer < 2 else ada).select(q, k, v, layer=layer)
        assert torch.equal(mixed.keep, ref.keep)
    with pytest.raises(TypeError, match="layer"):
        skipped.select(q, k, v)
    assert torch.equal(AdaKV(24, 8, skip=0).select(q, k, v).keep, ada.select(q, k, v).keep)


def test_adakv_skip_inside_generate(llama):
    ids = torch.randint(3, 4000, (1, 72), generator=torch.Generator().manual_seed(13))
    counts = {}
    for skip in (0, 1):
        cfg = KVCompressionConfig(method="adakv", budget=24, window=8, adakv_skip=skip)
        with enable_kv_compression(llama, cfg) as state:
            llama.generate(input_ids=ids, max_new_tokens=2, do_sample=False)
        counts[skip] = {i: s.counts for i, s in state.selections.items()}
    assert not bool((counts[0][0] == 24).all())  # layer 0 is adaptive without skip
    assert bool((counts[1][0] == 24).all())  # and uniform with skip=1
    assert torch.equal(counts[1][1], counts[0][1])  # layer 1 is unchanged
    assert math.isclose(float(counts[1][0].sum()), 2 * 24)
