"""Tests of the AWQ baseline of the QAT-for-reasoning room: the scale formula and search, the
exact folding, clipping, the explicit input scale, export/reload and the CLI."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from iclr26.llm.qat_reasoning import (
    QuantLinear,
    awq_clip_search,
    awq_quantize,
    awq_scale,
    awq_search_scale,
    dequantize_model,
    load_quantized,
    quant_layers,
    quantize_model,
    rtn_quantize,
    save_quantized,
)
from iclr26.llm.qat_reasoning import awq as awq_module
from iclr26.llm.qat_reasoning.awq import alpha_grid, rtn_weight, scales_for

VOCAB = 256


def outlier_llama(seed=0, heads=4, kv_heads=2):
    """A tiny random Llama whose norms give a few input channels large activations, the
    situation AWQ is built for (intermediate 48: a short last group of 16 at group size 32)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.input_layernorm.weight[:4] *= 8
            layer.post_attention_layernorm.weight[:3] *= 6
            layer.mlp.up_proj.weight[:5] *= 6  # outliers at the input of down_proj
    return model


def outlier_qwen2(seed=0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,  # v_proj and o_proj are square: the v -> o fold exists
        max_position_embeddings=64,
    )
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.input_layernorm.weight[:4] *= 8
            layer.self_attn.v_proj.weight[:3] *= 5
            layer.self_attn.v_proj.bias.normal_()
    return model


def ids(n=8, t=16, seed=0):
    return torch.randint(0, VOCAB, (n, t), generator=torch.Generator().manual_seed(seed))


def correlated_inputs(n=512, d=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) @ torch.randn(d, d, generator=g) * 0.3
    x[:, :3] *= 20  # salient channels
    return x


def logits(model, x):
    with torch.no_grad():
        return model(input_ids=x).logits


# ------------------------------------------------------------------ the search of one layer


def test_scale_formula_and_grid():
    x_mean = torch.tensor([0.5, 2.0, 8.0, 1.0])
    s = scales_for(x_mean, 0.5)
    raw = x_mean.sqrt()
    torch.testing.assert_close(s, raw / (raw.max() * raw.min()).sqrt())
    torch.testing.assert_close(s.max() * s.min(), torch.tensor(1.0))
    assert torch.equal(scales_for(x_mean, 0.0), torch.ones(4))
    assert alpha_grid(20) == [i / 20 for i in range(20)]


def test_alpha_zero_is_rtn_and_best_alpha_not_worse():
    torch.manual_seed(0)
    w = torch.randn(48, 64)
    x = correlated_inputs()
    s, alpha, losses = awq_search_scale(w, x, 3, 32)
    q = QuantLinear.from_linear(nn.Linear(64, 48, bias=False), 3, 32)
    with torch.no_grad():
        q.weight.copy_(w)
    q.init_minmax()
    rtn_mse = float((x @ q.dequantized_weight().detach().T - x @ w.T).pow(2).mean())
    assert losses[0] == pytest.approx(rtn_mse, rel=1e-6)
    assert len(losses) == 20 and min(losses) == losses[alpha_grid(20).index(alpha)]
    assert min(losses) < 0.9 * losses[0]  # salient channels: scaling pays
    # the returned scale is the chosen alpha's, and its loss is what the search recorded
    torch.testing.assert_close(s, scales_for(x.abs().mean(0), alpha))
    w_hat = rtn_weight(w * s, 3, 32) / s
    assert float((x @ w_hat.T - x @ w.T).pow(2).mean()) == pytest.approx(min(losses), rel=1e-5)


# ------------------------------------------------------------------ the model transform


def test_alpha_zero_model_equals_rtn_exactly():
    model = outlier_llama()
    awq = awq_quantize(model, ids(), 3, 32, n_grid=1, clip=False)
    rtn = rtn_quantize(model, 3, 32)
    a, b = quant_layers(awq), quant_layers(rtn)
    assert list(a) == list(b)
    for name in a:
        assert torch.equal(a[name].codes(), b[name].codes()), name
        assert torch.equal(a[name].scale, b[name].scale) and torch.equal(
            a[name].zero_point, b[name].zero_point
        )
    assert torch.equal(logits(awq, ids(2, 8, 1)), logits(rtn, ids(2, 8, 1)))
    assert all(g.alpha == 0.0 for g in awq.awq_report_.groups)


@pytest.mark.parametrize("make", [outlier_llama, outlier_qwen2])
def test_folded_model_computes_the_same_function(make):
    model = make()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    scaled, report = awq_scale(model, ids(), 3, 32, clip=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # input kept
    folded = [g for g in report.groups if g.fold_into is not None]
    assert folded and any(g.alpha > 0 for g in folded)
    prev = {g.fold_into.rsplit(".", 1)[-1] for g in folded if g.alpha > 0}
    assert prev & {"input_layernorm", "post_attention_layernorm"}
    norm0 = "model.layers.0.input_layernorm.weight"
    assert not torch.equal(scaled.state_dict()[norm0], model.state_dict()[norm0])
    x = ids(3, 12, seed=5)  # not the calibration data
    torch.testing.assert_close(logits(scaled, x), logits(model, x), atol=1e-5, rtol=1e-5)


def test_layer_groups_and_fold_targets_follow_llm_awq():
    _, report = awq_scale(outlier_qwen2(), ids(), 3, 32, clip=False)
    by_first = {g.linears[0].split("layers.0.")[-1]: g for g in report.groups if g.block == 0}
    qkv = by_first["self_attn.q_proj"]
    assert [n.rsplit(".", 1)[-1] for n in qkv.linears] == ["q_proj", "k_proj", "v_proj"]
    assert qkv.inspect.endswith("self_attn")  # the attention output is compared, as llm-awq
    assert by_first["mlp.gate_proj"].inspect.endswith(".mlp")
    assert by_first["mlp.down_proj"].inspect == "linears"
    for first, prev in (("self_attn.o_proj", "v_proj"), ("mlp.down_proj", "up_proj")):
        g = by_first[first]
        assert g.alpha == 0.0 or g.fold_into.endswith(prev), (first, g.fold_into)


def test_inexact_fold_is_rejected(monkeypatch):
    """With no name preference gate_proj (behind SiLU) is tried before up_proj for the input
    of down_proj; the function check must refuse it."""
    tried = []
    original = awq_module._BlockAWQ.fold

    def spy(self, prev, names, s, check):
        ok = original(self, prev, names, s, check)
        tried.append((prev, names[0], ok))
        return ok

    monkeypatch.setattr(awq_module, "PREFERRED_PREV", ())
    monkeypatch.setattr(awq_module._BlockAWQ, "fold", spy)
    model = outlier_llama()
    scaled, report = awq_scale(model, ids(), 3, 32, clip=False)
    down = [g for g in report.groups if g.linears[0].endswith("layers.0.mlp.down_proj")][0]
    assert down.alpha > 0 and down.fold_into.endswith("mlp.up_proj")
    assert ("mlp.gate_proj", "mlp.down_proj", False) in tried
    torch.testing.assert_close(logits(scaled, ids(2, 8, 3)), logits(model, ids(2, 8, 3)))


def test_chosen_alpha_mse_not_above_rtn_on_calibration_data():
    """Quantize only block 0's down_proj: its output MSE on the calibration inputs is the
    search's recorded loss at the chosen alpha, and not above RTN's."""
    model, calib = outlier_llama(), ids()
    name = "model.layers.0.mlp.down_proj"
    scaled, report = awq_scale(model, calib, 3, 32, clip=False, targets=[name])
    (group,) = report.groups
    assert group.alpha > 0 and group.fold_into.endswith("up_proj")

    def down_output(m):
        seen = []
        handle = m.get_submodule(name).register_forward_hook(lambda mod, a, out: seen.append(out))
        logits(m, calib)
        handle.remove()
        return torch.cat([o.reshape(-1, o.shape[-1]) for o in seen])

    ref = down_output(model)
    mse_awq = float((down_output(quantize_model(scaled, 3, 32, [name])) - ref).pow(2).mean())
    mse_rtn = float((down_output(rtn_quantize(model, 3, 32, [name])) - ref).pow(2).mean())
    assert mse_awq == pytest.approx(min(group.losses), rel=1e-4)
    assert mse_rtn == pytest.approx(group.losses[0], rel=1e-4)
    assert mse_awq <= mse_rtn


def test_awq_beats_rtn_end_to_end_on_outliers():
    model, calib = outlier_llama(), ids(16, 16)
    ref = logits(model, calib)
    err = {
        "rtn": float((logits(rtn_quantize(model, 3, 32), calib) - ref).pow(2).mean()),
        "awq": float((logits(awq_quantize(model, calib, 3, 32), calib) - ref).pow(2).mean()),
    }
    assert err["awq"] < err["rtn"], err


# ------------------------------------------------------------------ clipping


def test_clip_search_matches_brute_force():
    torch.manual_seed(1)
    w, x = torch.randn(6, 40), torch.randn(100, 40)  # groups of 16: a short last group of 8
    m = awq_clip_search(w, x, 2, 16, n_grid=10, max_shrink=0.5)
    for r in range(6):
        for g, (lo, hi) in enumerate(((0, 16), (16, 32), (32, 40))):
            wg, xg = w[r, lo:hi], x[:, lo:hi]
            top = wg.abs().max()
            errs = []
            for i in range(5):
                c = top * (1 - i / 10)
                wc = wg.clamp(-c, c)
                low, high = wc.min(), wc.max()
                step = ((high - low) / 3).clamp(min=1e-8)
                zero = torch.round(-low / step).clamp(0, 3)
                q = (torch.clamp(torch.round(wc / step) + zero, 0, 3) - zero) * step
                errs.append(float((xg @ q - xg @ wg).pow(2).mean()))
            best = min(range(5), key=lambda i: (errs[i], i))
            assert float(m[r, g]) == pytest.approx(float(top * (1 - best / 10)), rel=1e-6)


def test_clipping_lowers_layer_error_of_gaussian_weights():
    torch.manual_seed(2)
    w, x = torch.randn(32, 64), torch.randn(600, 64)
    m = awq_clip_search(w, x, 2, 32)
    cols = m.repeat_interleave(32, dim=1)
    clipped = torch.maximum(torch.minimum(w, cols), -cols)
    err = lambda v: float((x @ rtn_weight(v, 2, 32).T - x @ w.T).pow(2).mean())  # noqa: E731
    assert (m <= w.reshape(32, 2, 32).abs().amax(-1)).all()
    assert err(clipped) < 0.9 * err(w)


# ------------------------------------------------------------------ GQA, explicit scales, export


def test_gqa_o_proj_skip_or_explicit_input_scale(tmp_path):
    model, calib = outlier_llama(), ids()  # 4 query heads, 2 KV heads: v_proj narrower
    skip = awq_quantize(model, calib, 3, 32, clip=False)
    o_groups = [g for g in skip.awq_report_.groups if g.linears[0].endswith("o_proj")]
    assert o_groups and all(g.fold_into is None and g.alpha == 0.0 for g in o_groups)
    assert all(q.input_scale is None for q in quant_layers(skip).values())

    explicit = awq_quantize(model, calib, 3, 32, clip=False, unfoldable="explicit")
    report = explicit.awq_report_
    scaled_names = set(report.input_scales)
    assert scaled_names and all(n.endswith("o_proj") for n in scaled_names)
    name = next(iter(scaled_names))
    q = explicit.get_submodule(name)
    s = report.input_scales[name]
    torch.testing.assert_close(q.input_scale, s)
    # the layer computes (x / s) Q(W s)^T, with Q the room's quantizer of the scaled weight
    w = model.get_submodule(name).weight.detach()
    xin = torch.randn(5, w.shape[1])
    want = (xin / s) @ rtn_weight(w * s, 3, 32).T
    torch.testing.assert_close(q(xin), want, atol=1e-5, rtol=1e-5)
    # export and reload keep codes and the explicit scale; dequantize folds it into W
    save_quantized(explicit, tmp_path / "awq")
    back = load_quantized(tmp_path / "awq")
    torch.testing.assert_close(back.get_submodule(name).input_scale, s)
    x = ids(2, 8, 4)
    torch.testing.assert_close(logits(back, x), logits(explicit, x), atol=2e-3, rtol=0)
    plain = dequantize_model(copy.deepcopy(explicit))
    torch.testing.assert_close(logits(plain, x), logits(explicit, x), atol=1e-5, rtol=1e-5)


def test_awq_model_exports_and_reloads(tmp_path):
    model = outlier_qwen2()
    q = awq_quantize(model, ids(), 2, 32)
    assert q.awq_report_.clip_ratio and all(
        0.5 <= r <= 1.0 for r in q.awq_report_.clip_ratio.values()
    )
    save_quantized(q, tmp_path / "packed")
    back = load_quantized(tmp_path / "packed")
    for (na, a), (nb, b) in zip(quant_layers(q).items(), quant_layers(back).items()):
        assert na == nb and torch.equal(a.codes(), b.codes()) and a.bits == b.bits == 2
    norm = "model.layers.0.input_layernorm.weight"
    torch.testing.assert_close(back.state_dict()[norm], q.state_dict()[norm])  # folded norm
    x = ids(2, 8, 2)
    torch.testing.assert_close(logits(back, x), logits(q, x), atol=2e-3, rtol=0)


def test_set_input_scale_refuses_bad_scales():
    q = QuantLinear(8, 4, bits=4, group_size=8)
    with pytest.raises(ValueError, match="scale"):
        q.set_input_scale(torch.zeros(8))
    with pytest.raises(ValueError, match="scale"):
        q.set_input_scale(torch.ones(7))
    q.set_input_scale(torch.full((8,), 2.0))
    q.set_input_scale(None)
    assert q.input_scale is None and "input_scale" not in q.state_dict()


def test_cli_awq_method(tmp_path):
    import argparse

    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr26.llm.qat_reasoning.cli import configure, run
    from iclr26.models.tinylm import get_tokenizer

    tok = get_tokenizer(max_files=40)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    parser = argparse.ArgumentParser()
    configure(parser)
    out = tmp_path / "packed"
    argv = ["--model", str(tmp_path / "model"), "--bits", "3", "--group", "32"]
    args = parser.parse_args([*argv, "--method", "awq", "--n-calib", "8", "--out", str(out)])
    assert run(args) == 0
    back = load_quantized(out)
    assert len(quant_layers(back)) == 7 and all(q.bits == 3 for q in quant_layers(back).values())
