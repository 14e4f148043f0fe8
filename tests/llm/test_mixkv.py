import itertools
import json
import math

import pytest
import torch
import torch.nn.functional as F

from iclr26.claims import contract_problems, run_claim
from iclr26.llm.mixkv import (
    AdaKV,
    CompressedCache,
    FullKV,
    KVCompressionConfig,
    MixKV,
    RandomKV,
    Selection,
    SnapKV,
    StreamingKV,
    adakv_capacities,
    attention_modules,
    cache_nbytes,
    calibrate_redundancy,
    capture_prompt_kv,
    continuation_nll,
    enable_kv_compression,
    head_redundancy,
    make_policy,
    mixkv_scores,
    snapkv_scores,
)
from iclr26.llm.mixkv.integration import _STATE_ATTR
from iclr26.models import hf_compat


@pytest.fixture(scope="module")
def llama():
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config("test")).eval()


@pytest.fixture(scope="module")
def qwen():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(1)
    cfg = Qwen2Config(
        vocab_size=512,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    return Qwen2ForCausalLM(cfg).eval()


def _kv(b=2, h_q=4, h_kv=2, t=40, w=8, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h_q, w, d, generator=g)
    k = torch.randn(b, h_kv, t, d, generator=g)
    v = torch.randn(b, h_kv, t, d, generator=g)
    return q, k, v


def _run(model, ids, cont, policy, mode, steps=3):
    """Prompt pass, one multi-token continuation pass and a few one-token steps."""
    with torch.no_grad(), enable_kv_compression(model, policy, mode=mode):
        cache = hf_compat.empty_cache(model.config)
        l1, cache = hf_compat.forward_with_cache(model, ids, cache)
        outs = [l1]
        l2, cache = hf_compat.forward_with_cache(model, cont, cache)
        outs.append(l2)
        for t in range(steps):
            l3, cache = hf_compat.forward_with_cache(model, cont[:, t : t + 1], cache)
            outs.append(l3)
    return torch.cat(outs, 1), cache


# ------------------------------------------------------------------ scoring


def test_head_redundancy_equals_brute_force_pairwise_cosine():
    keys = torch.randn(3, 25, 8, dtype=torch.float64)
    unit = F.normalize(keys, dim=-1)
    cos = unit @ unit.transpose(-1, -2)
    t = keys.shape[1]
    brute = (cos.sum((-1, -2)) - cos.diagonal(dim1=-2, dim2=-1).sum(-1)) / (t * (t - 1))
    assert torch.allclose(head_redundancy(keys).double(), brute, atol=1e-5)
    same = torch.randn(1, 8).repeat(10, 1)[None]
    assert torch.allclose(head_redundancy(same), torch.ones(1), atol=1e-5)


def _naive_snapkv(q, k, kernel, pooling, gqa):
    b, h_q, w, d = q.shape
    h_kv, t = k.shape[1], k.shape[2]
    out = torch.zeros(b, h_kv, t - w)
    for bi, h in itertools.product(range(b), range(h_kv)):
        per_query_head = []
        for g in range(h_q // h_kv):
            hq = h * (h_q // h_kv) + g
            acc = torch.zeros(t)
            for i in range(w):
                pos = t - w + i
                logits = torch.tensor(
                    [float(q[bi, hq, i] @ k[bi, h, j]) / math.sqrt(d) for j in range(pos + 1)]
                )
                acc[: pos + 1] += torch.softmax(logits, 0)
            per_query_head.append(acc[: t - w] / w)
        stacked = torch.stack(per_query_head)
        red = stacked.mean(0) if gqa == "mean" else stacked.max(0).values
        for j in range(t - w):
            lo, hi = max(0, j - kernel // 2), min(t - w, j + kernel // 2 + 1)
            win = red[lo:hi]
            out[bi, h, j] = win.max() if pooling == "max" else win.sum() / kernel
    return out


@pytest.mark.parametrize("pooling, gqa", [("max", "mean"), ("avg", "max")])
def test_snapkv_scores_equal_a_naive_loop(pooling, gqa):
    q, k, _ = _kv(b=1, t=20, w=4, d=8)
    got = snapkv_scores(q, k, kernel=5, pooling=pooling, gqa=gqa)
    assert torch.allclose(got, _naive_snapkv(q, k, 5, pooling, gqa), atol=1e-5)


def test_kernel_one_top1_is_argmax_of_window_attention():
    q, k, v = _kv(b=1, h_q=2, h_kv=2, t=30, w=6)
    raw = snapkv_scores(q, k, kernel=1, pooling="none")
    sel = SnapKV(budget=7, window=6, kernel=1, pooling="none").select(q, k, v)
    prefix = sel.keep[..., :24]
    assert torch.equal(prefix.float().argmax(-1), raw.argmax(-1))
    assert torch.equal(prefix.sum(-1), torch.ones(1, 2, dtype=torch.long))


def test_unbatched_inputs_give_unbatched_outputs():
    q, k, v = _kv(b=1)
    assert snapkv_scores(q[0], k[0]).shape == (2, 32)
    assert head_redundancy(k[0]).shape == (2,)
    assert SnapKV(12, 8).select(q[0], k[0], v[0]).keep.shape == (2, 40)


# ------------------------------------------------------------------ policies


@pytest.mark.parametrize("floor", [0.0, 0.2, 0.5, 1.0])
def test_adakv_capacities_sum_and_floor(floor):
    g = torch.Generator().manual_seed(3)
    scores = torch.rand(4, 5, 50, generator=g) ** 4
    caps = adakv_capacities(scores, 13, floor)
    assert torch.equal(caps.sum(-1), torch.full((4,), 5 * 13))
    assert bool((caps >= math.floor(floor * 13)).all())
    assert bool((caps <= 50).all())
    if floor == 1.0:
        assert bool((caps == 13).all())


def test_adakv_gives_more_to_a_peaked_head():
    scores = torch.full((1, 2, 40), 0.01)
    scores[0, 0, :20] = 1.0  # head 0 holds all the mass
    caps = adakv_capacities(scores, 10, 0.2)
    assert caps[0, 0] == 18 and caps[0, 1] == 2  # 20 * 0.8 + 2 and 0 * 0.8 + 2


@pytest.mark.parametrize("base", [SnapKV(16, 8), AdaKV(16, 8)])
def test_selection_keeps_window_and_budget(base):
    q, k, v = _kv(t=40)
    for pol in (base, MixKV(base), RandomKV(16, 8), StreamingKV(16, 8)):
        sel = pol.select(q, k, v)
        assert bool(sel.keep[..., -8:].all())
        assert torch.equal(sel.counts.sum(-1), torch.full((2,), 2 * 16))
        if not isinstance(pol, AdaKV) and not (
            isinstance(pol, MixKV) and pol.name == "adakv+mixkv"
        ):
            assert bool((sel.counts == 16).all())


def _manual_mix_keep(att, k, v, r, capacity, window):
    t = k.shape[2]
    s_vn = v[..., : t - window, :].norm(dim=-1)
    unit = F.normalize(k, dim=-1)
    s_div = -(unit[..., : t - window, :] * unit.mean(2, keepdim=True)).sum(-1)

    def rescale(x):
        x = (x - x.amin(-1, keepdim=True)) / (x.amax(-1, keepdim=True) - x.amin(-1, keepdim=True))
        return x * att.mean(-1, keepdim=True) / x.mean(-1, keepdim=True)

    score = r * rescale(s_div) + (1 - r) * (att + rescale(s_vn))
    top = score.topk(capacity, -1).indices
    return torch.zeros_like(score, dtype=torch.bool).scatter(-1, top, True)


@pytest.mark.parametrize("r", [0.0, 1.0, 0.3])
def test_mixkv_with_forced_redundancy_matches_its_parts(r):
    q, k, v = _kv(t=60, w=8, seed=5)
    base = SnapKV(20, 8)
    att = snapkv_scores(q, k)
    want = _manual_mix_keep(att, k, v, r, 12, 8)
    got = MixKV(base, redundancy=r).select(q, k, v).keep[..., :52]
    assert torch.equal(got, want)
    if r == 0.0:  # importance only: attention + value norm, no key term
        k_other = torch.randn_like(k)
        k_other[..., -8:, :] = k[..., -8:, :]
        # different prefix keys change the attention too, so compare on the score level
        mixed = mixkv_scores(att, k, v, 0.0)
        assert torch.allclose(mixed, mixkv_scores(att, k_other, v, 0.0))


def test_mixkv_online_equals_table_of_the_same_redundancy():
    q, k, v = _kv(b=1, seed=7)
    table = head_redundancy(k)  # [1, kv_heads] for one row: a one-layer table
    online = MixKV(SnapKV(16, 8)).select(q, k, v)
    calibrated = MixKV(SnapKV(16, 8), "calibrated", table=table).select(q, k, v, layer=0)
    assert torch.equal(online.keep, calibrated.keep)


def test_mixkv_on_adakv_keeps_adakv_capacities():
    q, k, v = _kv(seed=9)
    base = AdaKV(16, 8)
    caps = adakv_capacities(snapkv_scores(q, k), 8, 0.2)
    assert torch.equal(MixKV(base).select(q, k, v).counts, caps + 8)
    assert torch.equal(base.select(q, k, v).counts, caps + 8)


def test_gather_plan_lists_kept_positions_in_order():
    keep = torch.tensor([[[1, 0, 1, 1], [0, 1, 0, 1]]], dtype=torch.bool)
    index, valid = Selection(keep).gather_plan()
    assert index.tolist() == [[[0, 2, 3], [1, 3, 3]]]
    assert valid.tolist() == [[[True, True, True], [True, True, False]]]


def test_config_builds_named_policies():
    assert isinstance(KVCompressionConfig(method="adakv+mixkv", budget=40).policy().base, AdaKV)
    assert make_policy("snapkv+mixkv", 40, 16).name == "snapkv+mixkv"
    assert isinstance(make_policy("full", 40), FullKV)
    assert make_policy("streaming", 40, 16).sinks == 4


# ------------------------------------------------------------------ integration


def test_budget_equal_to_prompt_gives_full_attention_logits(llama):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 4000, (2, 48), generator=g)
    cont = torch.randint(3, 4000, (2, 8), generator=g)
    with torch.no_grad():
        ref = llama(torch.cat([ids, cont, cont[:, :3]], 1)).logits
    for pol in (SnapKV(48, 16), MixKV(AdaKV(48, 16))):
        got, _ = _run(llama, ids, cont, pol, "evict")
        assert torch.allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("name", ["snapkv", "snapkv+mixkv", "adakv+mixkv", "streaming"])
def test_gather_equals_evict(llama, name):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 4000, (2, 64), generator=g)
    cont = torch.randint(3, 4000, (2, 6), generator=g)
    pol = make_policy(name, 24, 8)
    evict, c_e = _run(llama, ids, cont, pol, "evict")
    gather, c_g = _run(llama, ids, cont, pol, "gather")
    assert isinstance(c_g, CompressedCache) and not isinstance(c_e, CompressedCache)
    assert torch.allclose(evict, gather, atol=1e-4)
    assert c_g.get_seq_length() == c_e.get_seq_length() == 64 + 6 + 3
    with torch.no_grad():
        full = llama(torch.cat([ids, cont], 1)).logits[:, 64:]
    assert not torch.allclose(evict[:, 64:70], full, atol=1e-3)  # compression did something
    if name != "adakv+mixkv":
        assert cache_nbytes(c_g) == cache_nbytes(c_e) * (24 + 9) // (64 + 9)


def test_eager_and_sdpa_agree(llama):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(3, 4000, (1, 40), generator=g)
    cont = torch.randint(3, 4000, (1, 5), generator=g)
    pol = MixKV(AdaKV(16, 8))
    sdpa, _ = _run(llama, ids, cont, pol, "gather")
    hf_compat.set_attention(llama, "eager")
    try:
        eager, _ = _run(llama, ids, cont, pol, "gather")
        eager_evict, _ = _run(llama, ids, cont, pol, "evict")
    finally:
        hf_compat.set_attention(llama, "sdpa")
    assert torch.allclose(sdpa, eager, atol=1e-4)
    assert torch.allclose(sdpa, eager_evict, atol=1e-4)


def test_generate_runs_compressed_and_restores_the_model(llama):
    ids = torch.randint(3, 4000, (1, 40), generator=torch.Generator().manual_seed(3))
    before = llama.config._attn_implementation
    outs = {}
    for mode in ("evict", "gather"):
        cfg = KVCompressionConfig(method="mixkv", budget=16, window=8, mode=mode)
        with enable_kv_compression(llama, cfg) as state:
            outs[mode] = llama.generate(input_ids=ids, max_new_tokens=6, do_sample=False)
            assert len(state.selections) == llama.config.num_hidden_layers
    assert torch.equal(outs["evict"], outs["gather"])
    assert llama.config._attn_implementation == before
    assert not any(hasattr(m, _STATE_ATTR) for m in llama.modules())
    assert not llama._forward_pre_hooks and not llama._forward_hooks


def test_prompt_shorter_than_budget_is_refused_and_model_restored(llama):
    ids = torch.randint(3, 4000, (1, 20))
    with pytest.raises(ValueError, match="budget"):
        with enable_kv_compression(llama, SnapKV(32, 8)):
            llama.generate(input_ids=ids, max_new_tokens=2, do_sample=False)
    assert llama.config._attn_implementation == "sdpa"
    assert not any(hasattr(m, _STATE_ATTR) for m in llama.modules())


def test_second_family_qwen2(qwen):
    ids = torch.randint(1, 512, (1, 50), generator=torch.Generator().manual_seed(4))
    cont = torch.randint(0, 512, (1, 4), generator=torch.Generator().manual_seed(5))
    assert len(attention_modules(qwen)) == 2
    pol = MixKV(SnapKV(20, 8))
    evict, _ = _run(qwen, ids, cont, pol, "evict")
    gather, cache = _run(qwen, ids, cont, pol, "gather")
    assert torch.allclose(evict, gather, atol=1e-4)
    with enable_kv_compression(qwen, KVCompressionConfig(method="adakv", budget=20, window=8)):
        out = qwen.generate(input_ids=ids, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert out.shape == (1, 53)


def test_unhookable_models_are_refused():
    from transformers import MambaConfig, MambaForCausalLM

    mamba = MambaForCausalLM(
        MambaConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, state_size=4)
    )
    with pytest.raises(ValueError, match="model"):
        with enable_kv_compression(mamba, SnapKV(16, 8)):
            pass
    with pytest.raises(TypeError, match="model"):
        with enable_kv_compression(torch.nn.Linear(2, 2), SnapKV(16, 8)):
            pass


def test_continuation_nll_matches_the_public_path(llama):
    g = torch.Generator().manual_seed(6)
    ids = torch.randint(3, 4000, (3, 48), generator=g)
    cont = torch.randint(3, 4000, (3, 8), generator=g)
    pols = {"full": FullKV(), "mix": MixKV(SnapKV(16, 8)), "ada": AdaKV(16, 8)}
    nll = continuation_nll(llama, ids, cont, pols, batch=2)
    for name, pol in pols.items():
        with torch.no_grad(), enable_kv_compression(llama, pol if name != "full" else None):
            cache = hf_compat.empty_cache(llama.config)
            l1, cache = hf_compat.forward_with_cache(llama, ids, cache)
            l2, _ = hf_compat.forward_with_cache(llama, cont[:, :-1], cache)
        logp = torch.log_softmax(torch.cat([l1[:, -1:], l2], 1).float(), -1)
        want = -logp.gather(-1, cont[..., None])[..., 0].mean(1)
        assert torch.allclose(nll[name], want, atol=1e-4)


def test_calibrated_table_is_the_mean_online_redundancy(llama):
    ids = torch.randint(3, 4000, (3, 32), generator=torch.Generator().manual_seed(8))
    table = calibrate_redundancy(llama, ids, batch=2)
    layers = capture_prompt_kv(llama, ids, window=4)["layers"]
    want = torch.stack([head_redundancy(k).mean(0) for _, k, _, _ in layers])
    assert table.shape == (2, 2) and torch.allclose(table, want, atol=1e-5)


# ------------------------------------------------------------------ claims


@pytest.mark.parametrize(
    "name", ["importance-diversity-nll", "head-redundancy-heterogeneous", "selection-efficiency"]
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("mixkv", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert not contract_problems(record)
    assert record["figures"]


def test_cli_eval_on_the_test_model(capsys):
    import argparse

    from iclr26.llm.mixkv.cli import configure, run

    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(
        [
            "eval",
            "--model",
            "test",
            "--windows",
            "2",
            "--prompt-tokens",
            "40",
            "--continuation-tokens",
            "4",
            "--window",
            "8",
            "--budgets",
            "16",
            "--json",
        ]
    )
    assert run(args) == 0
    out = capsys.readouterr().out
    assert '"snapkv+mixkv@16"' in out
    bad = parser.parse_args(["eval", "--model", "test", "--methods", "h2o"])
    assert run(bad) == 2


def test_calibrated_table_runs_inside_generate(llama):
    ids = torch.randint(3, 4000, (2, 40), generator=torch.Generator().manual_seed(9))
    table = calibrate_redundancy(llama, ids)
    cfg = KVCompressionConfig(
        method="adakv+mixkv", budget=16, window=8, redundancy="calibrated", table=table
    )
    with enable_kv_compression(llama, cfg) as state:
        out = llama.generate(input_ids=ids[:1], max_new_tokens=3, do_sample=False)
    assert out.shape == (1, 43)
    assert all(int(sel.counts.sum()) == 2 * 16 for sel in state.selections.values())


def test_kvcache_command_line(capsys):
    from iclr26.cli import main

    code = main(
        "kvcache eval --model test --windows 2 --budgets 24 --window 8 --prompt-tokens 64 "
        "--continuation-tokens 8 --methods snapkv,snapkv+mixkv --json".split()
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["gap"]) == {"snapkv@24", "snapkv+mixkv@24"}
    assert all(math.isfinite(v) for v in out["gap"].values()) and out["full_nll"] > 0
    assert main("kvcache eval --model test --budgets x".split()) == 2
