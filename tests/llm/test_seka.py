import dataclasses

import numpy as np
import pytest
import torch

from iclr26.claims import run_claim
from iclr26.llm.seka import (
    PASTA,
    SEKA,
    AdaSEKA,
    SEKAProjections,
    build_seka_projections,
    continuation_logprobs,
    cumulative_rank,
    encode_with_markers,
    extract_span_keys,
    random_projections,
    span_token_indices,
)
from iclr26.llm.seka.projections import KeyCapture
from iclr26.llm.seka.tasks import conflict_prompts, projection_triplets


@pytest.fixture(scope="module")
def tok():
    from iclr26.models.tinylm import get_tokenizer

    return get_tokenizer(max_files=40)


def _llama(**over):
    from transformers import LlamaForCausalLM

    from iclr26.models.tinylm import tiny_llama_config

    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_llama_config("test", **over)).eval()


@pytest.fixture(scope="module")
def model():
    return _llama()


@pytest.fixture(scope="module")
def proj(model, tok):
    return build_seka_projections(
        model, tok, projection_triplets(6, seed=0), min_diff=0.0, save_svd=True
    )


PROMPT = "P1: The code of Zarl is 4 7. **P2: The code of Zarl is 1 8.** Question: What is the code?"


def _logits(model, ids, mask=None, method=None, **kw):
    with torch.no_grad():
        if method is None:
            return model(input_ids=ids, **kw).logits
        with method.highlight(ids, mask):
            return model(input_ids=ids, **kw).logits


def _no_hooks(model):
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


# ------------------------------------------------------------------ markers


def test_markers_mark_exactly_the_span(tok):
    batch = encode_with_markers(tok, ["ab **cd ef** gh **ij** kl", "**x** y"])
    text = batch.texts[0]
    assert "**" not in text and text == "ab cd ef gh ij kl"
    assert batch.spans[0] == [(3, 8), (12, 14)]
    row = batch.input_ids[0][batch.attention_mask[0].bool()]
    marks = batch.steer_mask[0][batch.attention_mask[0].bool()]
    marked_text = "".join(tok.decode([int(i)]) for i, m in zip(row, marks) if m)
    plain_text = "".join(tok.decode([int(i)]) for i, m in zip(row, marks) if not m)
    assert marked_text.replace(" ", "") == "cdefij"
    assert plain_text.replace(" ", "") == "abghkl"
    assert batch.attention_mask[1, 0] == 0 and not batch.steer_mask[1, 0]  # left padding


def test_unmatched_marker_and_missing_span_raise(tok):
    with pytest.raises(ValueError, match="unmatched"):
        encode_with_markers(tok, "a **b c")
    with pytest.raises(ValueError, match="no highlighted span"):
        encode_with_markers(tok, "a b c")
    assert not encode_with_markers(tok, "a b c", require_highlight=False).steer_mask.any()
    with pytest.raises(ValueError, match="span"):
        span_token_indices(tok, "the colour is red", "blue")
    assert span_token_indices(tok, "The colour is RED.", "red")


# ------------------------------------------------------------------ projections


def test_cumulative_rank_rule():
    s = torch.tensor([5.0, 3.0, 1.0, 1.0])
    assert cumulative_rank(s, 0.5) == 1  # 5/10 >= 0.5
    assert cumulative_rank(s, 0.8) == 2
    assert cumulative_rank(s, 0.85) == 3
    assert cumulative_rank(s, 1.0) == 4


def test_projections_are_orthogonal_projectors_of_rank_k(proj):
    P = proj.P_pos_raw.double()
    assert torch.allclose(P, P.transpose(-1, -2), atol=1e-5)
    assert torch.allclose(P @ P, P, atol=1e-5)
    ranks = torch.linalg.matrix_rank(P, atol=1e-4)
    assert torch.equal(ranks, proj.k_pos)
    N = proj.P_neg_raw.double()
    assert torch.allclose(N @ N, N, atol=1e-5)
    # the pre-RoPE keys of layer 0 depend on the token only: no question effect there
    assert float(proj.D[0].max()) < 1e-5 and float(proj.D[1].min()) > 0


def test_extract_span_keys_shape(model, tok):
    keys = extract_span_keys(model, tok, "Context: The colour of Zarl is red.", "red", layers=[1])
    assert set(keys) == {1} and keys[1].shape[1:] == (2, 16)


def test_filtered_head_is_not_steered(model, tok, proj):
    batch = encode_with_markers(tok, PROMPT)
    base = _logits(model, batch.input_ids)
    blocked = proj.refilter(1e9)
    assert not blocked.P_pos.any()
    out = _logits(model, batch.input_ids, batch.steer_mask, SEKA(model, tok, blocked, 2.0, 0.5))
    assert torch.equal(out, base)


def test_zero_gain_and_empty_mask_are_identity(model, tok, proj):
    batch = encode_with_markers(tok, PROMPT)
    base = _logits(model, batch.input_ids)
    zero = SEKA(model, tok, proj, gain_pos=0.0, gain_neg=0.0)
    assert torch.equal(_logits(model, batch.input_ids, batch.steer_mask, zero), base)
    steer = SEKA(model, tok, proj, gain_pos=2.0, gain_neg=0.0)
    empty = torch.zeros_like(batch.steer_mask)
    assert torch.equal(_logits(model, batch.input_ids, empty, steer), base)
    assert not torch.equal(_logits(model, batch.input_ids, batch.steer_mask, steer), base)


def test_edits_only_masked_positions_of_selected_layers(model, tok, proj):
    batch = encode_with_markers(tok, PROMPT)
    ids, mask = batch.input_ids, batch.steer_mask
    only_last = dataclasses.replace(
        proj,
        layers=[1],
        P_pos_raw=proj.P_pos_raw[1:],
        P_neg_raw=None,
        D=proj.D[1:],
        k_pos=proj.k_pos[1:],
        k_neg=None,
        U_pos=None,
        S_pos=None,
    )
    steer = SEKA(model, tok, only_last, gain_pos=1.5, gain_neg=0.0)
    with torch.no_grad(), KeyCapture(model, [0, 1]) as plain:
        model(input_ids=ids)
    with torch.no_grad(), steer.highlight(ids, mask), KeyCapture(model, [0, 1]) as edited:
        model(input_ids=ids)
    assert torch.equal(plain.keys[0], edited.keys[0])
    k, k2 = plain.keys[1][0], edited.keys[1][0]
    m = mask[0]
    assert torch.equal(k[~m], k2[~m])
    P = only_last.P_pos[0]
    want = k[m] + 1.5 * torch.einsum("nhd,hde->nhe", k[m], P)
    assert torch.allclose(k2[m], want, atol=1e-5)
    assert _no_hooks(model)


def test_hooks_removed_even_on_exceptions(model, tok, proj):
    batch = encode_with_markers(tok, PROMPT)
    steer = SEKA(model, tok, proj, gain_pos=1.0, gain_neg=0.0)
    with pytest.raises(RuntimeError, match="boom"):
        with steer.highlight(batch.input_ids, batch.steer_mask):
            raise RuntimeError("boom")
    assert _no_hooks(model)
    with pytest.raises(ValueError, match="steer_mask"):
        with steer.highlight(batch.input_ids, batch.steer_mask[:, 1:]):
            pass
    assert _no_hooks(model)


def test_cache_holds_edited_keys_and_decode_matches_recompute(model, tok, proj):
    from transformers import DynamicCache
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    batch = encode_with_markers(tok, PROMPT)
    ids, mask = batch.input_ids, batch.steer_mask
    steer = SEKA(model, tok, proj, gain_pos=1.5, gain_neg=0.0)
    cache = DynamicCache(config=model.config)
    nxt = torch.tensor([[5]])
    with torch.no_grad(), steer.highlight(ids, mask):
        model(input_ids=ids, cache=cache, use_cache=True)
        step = model(input_ids=nxt, cache=cache, use_cache=True).logits[:, -1]
    # recompute the prefill keys under steering to compare with the cache
    with torch.no_grad(), steer.highlight(ids, mask), KeyCapture(model, [1]) as cap:
        model(input_ids=ids)
    pre = cap.keys[1].transpose(1, 2)  # (B, H, T, d)
    pos = torch.arange(ids.shape[1])[None]
    cos, sin = model.model.rotary_emb(pre, pos)
    _, rotated = apply_rotary_pos_emb(pre, pre, cos, sin)
    assert torch.allclose(cache.layers[1].keys[:, :, : ids.shape[1]], rotated, atol=1e-5)
    full_ids = torch.cat([ids, nxt], 1)
    full_mask = torch.cat([mask, torch.zeros(1, 1, dtype=torch.bool)], 1)
    full = _logits(model, full_ids, full_mask, steer)[:, -1]
    assert torch.allclose(step, full, atol=1e-4)


def test_adaseka_single_expert_equals_seka(model, tok, proj):
    batch = encode_with_markers(tok, PROMPT)
    ada = AdaSEKA(model, tok, {"only": proj}, gain=1.2, top_k=3)
    weights = ada.weights_for(ada.last_token_queries(batch.input_ids))[0, 0]  # (L, H)
    assert torch.allclose(weights.abs(), torch.ones_like(weights))
    Uk = proj.U_pos[..., :3]
    same = dataclasses.replace(
        proj, P_pos_raw=weights[..., None, None] * (Uk @ Uk.transpose(-1, -2)), P_neg_raw=None
    )
    seka = SEKA(model, tok, same, gain_pos=1.2, gain_neg=0.0)
    a = _logits(model, batch.input_ids, batch.steer_mask, ada)
    b = _logits(model, batch.input_ids, batch.steer_mask, seka)
    assert torch.allclose(a, b, atol=1e-5)
    assert _no_hooks(model)


def test_pasta_rows_sum_to_one_and_restores_attention(model, tok):
    batch = encode_with_markers(tok, PROMPT)
    before = model.config._attn_implementation
    pasta = PASTA(model, tok, [(0, 1), (1, 3)], alpha=0.01)
    base = _logits(model, batch.input_ids)
    out = _logits(model, batch.input_ids, batch.steer_mask, pasta)
    assert pasta.last_row_error is not None and pasta.last_row_error < 1e-5
    assert not torch.allclose(out, base)
    assert model.config._attn_implementation == before
    assert torch.equal(_logits(model, batch.input_ids), base)
    assert isinstance(pasta.generate(PROMPT, max_new_tokens=3), str)


def test_seka_is_kernel_agnostic_and_saves(model, tok, proj, tmp_path):
    from iclr26.llm.seka.pasta import attention_implementation

    batch = encode_with_markers(tok, PROMPT)
    steer = SEKA(model, tok, proj, gain_pos=2.0, gain_neg=0.3)
    with attention_implementation(model, "sdpa"):
        a = _logits(model, batch.input_ids, batch.steer_mask, steer)
    with attention_implementation(model, "eager"):
        b = _logits(model, batch.input_ids, batch.steer_mask, steer)
    assert (a - b).abs().max() < 1e-4
    path = proj.save(tmp_path / "p.safetensors")
    back = SEKAProjections.load(path)
    assert back.layers == proj.layers and torch.equal(back.P_pos, proj.P_pos)
    assert torch.equal(back.U_pos, proj.U_pos) and back.info == proj.info
    again = SEKA(model, tok, back, gain_pos=2.0, gain_neg=0.3)
    assert torch.equal(_logits(model, batch.input_ids, batch.steer_mask, again), a)


def test_bf16_model(tok, proj):
    model = _llama().to(torch.bfloat16)
    batch = encode_with_markers(tok, PROMPT)
    base = _logits(model, batch.input_ids)
    out = _logits(model, batch.input_ids, batch.steer_mask, SEKA(model, tok, proj, 2.0, 0.0))
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()
    assert not torch.equal(out, base)
    zero = SEKA(model, tok, proj, 0.0, 0.0)
    assert torch.equal(_logits(model, batch.input_ids, batch.steer_mask, zero), base)


@pytest.mark.parametrize("family", ["qwen3", "mistral"])
def test_other_families(tok, family):
    import transformers

    common = dict(
        vocab_size=4096,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
        pad_token_id=0,
    )
    config = (transformers.Qwen3Config if family == "qwen3" else transformers.MistralConfig)(
        **common
    )
    torch.manual_seed(1)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    p = build_seka_projections(
        model, tok, projection_triplets(3, seed=1), min_diff=0.0, save_svd=True
    )
    if family == "qwen3":
        keys = extract_span_keys(model, tok, "Context: The colour of Zarl is red.", "red")
        assert keys[0].shape[1:] == (2, 16)
    batch = encode_with_markers(tok, PROMPT)
    base = _logits(model, batch.input_ids)
    out = _logits(model, batch.input_ids, batch.steer_mask, SEKA(model, tok, p, 2.0, 0.0))
    assert not torch.equal(out, base) and torch.isfinite(out).all()
    ada = AdaSEKA(model, tok, {"a": p}, gain=1.0)
    assert torch.isfinite(_logits(model, batch.input_ids, batch.steer_mask, ada)).all()
    assert _no_hooks(model)


def test_unhookable_family_is_refused_untouched(tok, proj):
    import transformers

    config = transformers.GPT2Config(
        vocab_size=4096, n_embd=32, n_layer=2, n_head=2, n_positions=128
    )
    gpt2 = transformers.GPT2LMHeadModel(config).eval()
    with pytest.raises(TypeError, match="model.*cannot be hooked"):
        SEKA(gpt2, tok, proj)
    with pytest.raises(TypeError, match="model.*cannot be hooked"):
        build_seka_projections(gpt2, tok, projection_triplets(2, seed=0))
    assert _no_hooks(gpt2)


def test_generate_and_score_pipeline(model, tok, proj):
    steer = SEKA(model, tok, proj, gain_pos=1.5, gain_neg=0.0)
    out = steer.generate([PROMPT, "**P1: a b.** c"], max_new_tokens=3)
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    prompts = conflict_prompts(4, seed=0)
    steered = steer.score([p.marked for p in prompts], [p.new for p in prompts])
    plain = continuation_logprobs(model, tok, [p.plain for p in prompts], [p.new for p in prompts])
    single = continuation_logprobs(model, tok, [prompts[0].plain], [prompts[0].new])
    assert np.isfinite(steered).all() and not np.allclose(steered, plain)
    assert np.isclose(single[0], plain[0], atol=1e-4)  # padding does not change a row's score
    assert _no_hooks(model)


def test_random_projection_keeps_rank_and_filter(proj):
    rand = random_projections(proj.refilter(0.05), seed=3)
    assert torch.equal(torch.linalg.matrix_rank(rand.P_pos_raw, atol=1e-4), proj.k_pos)
    assert torch.equal(rand.applied_mask, proj.refilter(0.05).applied_mask)
    assert rand.refilter(float("-inf")).applied_mask.all()


# ------------------------------------------------------------------ claims


def _assert_figures_open(record, out_dir):
    """Every claim saves at least one figure, and each one is a PNG that opens."""
    from PIL import Image

    assert record["figures"], f"{record['claim']} saved no figure"
    for name in record["figures"]:
        with Image.open(out_dir / name) as image:
            assert image.format == "PNG" and min(image.size) > 0


@pytest.mark.parametrize(
    "name",
    [
        "steering-efficacy",
        "overhead-and-fused-attention",
        "ablation-subspace-and-filter",
        "adaseka-routing",
    ],
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("seka", name, scale="smoke", out_dir=tmp_path)
    assert record["verdict"] in {"reproduced", "not reproduced"}, record.get("traceback")
    _assert_figures_open(record, tmp_path)
    if name == "steering-efficacy":  # setup times come from the timing helper, with counts
        row = record["metrics"]["per_seed"][0]
        assert row["pasta_search"]["count_heads_scored"] > 0
        assert row["projection_build"]["count_prompts_encoded"] > 0
