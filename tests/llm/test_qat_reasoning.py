"""Tests of the QAT-for-reasoning room: quantizer, losses, calibration, GPTQ, export, claims."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from iclr26.claims import run_claim
from iclr26.llm.qat_reasoning import (
    MixedDomainCalibration,
    QuantLinear,
    ReasoningQAT,
    RewardRectificationLoss,
    arithmetic_problems,
    blockwise_calibrate,
    dequantize_model,
    gptq_layer,
    gptq_quantize,
    load_quantized,
    pack_bits,
    parse_answer,
    quant_layers,
    quantize_model,
    rtn_quantize,
    save_quantized,
    unpack_bits,
)
from iclr26.llm.qat_reasoning.calibrate import block_inputs, run_block
from iclr26.llm.qat_reasoning.quant import decoder_layers, minmax_params

VOCAB = 256


def tiny_llama(seed=0, layers=2):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,  # not a multiple of the group size 32: the short last group
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(cfg).eval()


def tiny_qwen2(seed=0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return Qwen2ForCausalLM(cfg).eval()


def ids(n=8, t=16, seed=0):
    return torch.randint(0, VOCAB, (n, t), generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------ quantizer


def test_8bit_full_group_reproduces_linear():
    torch.manual_seed(0)
    lin = nn.Linear(40, 24)
    q = QuantLinear.from_linear(lin, bits=8, group_size=40)
    x = torch.randn(5, 40)
    ref, out = lin(x), q(x)
    assert (out - ref).norm() / ref.norm() < 1e-2


def test_2bit_codes_and_dequantization_formula():
    torch.manual_seed(1)
    q = QuantLinear.from_linear(nn.Linear(64, 8, bias=False), bits=2, group_size=32)
    codes = q.codes()
    assert set(codes.unique().tolist()) <= {0, 1, 2, 3}
    z = q.zero_point.detach().round()
    cols = torch.arange(64) // 32
    want = (codes.float() - z[:, cols]) * q.scale.detach()[:, cols]
    torch.testing.assert_close(q.dequantized_weight().detach(), want)


def test_ste_gradient_reaches_weight_scale_and_zero():
    torch.manual_seed(2)
    q = QuantLinear.from_linear(nn.Linear(32, 6), bits=3, group_size=16)
    with torch.no_grad():  # a tighter grid clips some weights: only then does z get a gradient
        q.scale.mul_(0.6)
    q(torch.randn(4, 32)).pow(2).sum().backward()
    for p in (q.weight, q.scale, q.zero_point, q.bias):
        assert p.grad is not None and p.grad.abs().sum() > 0


def test_short_last_group_uses_its_own_columns():
    torch.manual_seed(3)
    w = torch.randn(4, 40)  # groups of 16: [0,16), [16,32), [32,40)
    scale, zero = minmax_params(w, 4, 16)
    assert scale.shape == (4, 3)
    last = w[:, 32:]
    torch.testing.assert_close(scale[:, 2], (last.amax(1) - last.amin(1)) / 15)
    q = QuantLinear.from_linear(nn.Linear(40, 4, bias=False), bits=4, group_size=16)
    assert q.n_groups == 3 and q.dequantized_weight().shape == (4, 40)


def test_trainable_flags():
    q = QuantLinear(16, 4, bits=4, group_size=8, train_weight=False, train_zero=False)
    assert not q.weight.requires_grad and q.scale.requires_grad and not q.zero_point.requires_grad


def test_quantize_model_touches_only_decoder_linears_and_other_family():
    for model in (tiny_llama(), tiny_qwen2()):
        ref = copy.deepcopy(model)
        quantize_model(model, bits=4, group_size=32)
        names = set(quant_layers(model))
        assert names and all(".layers." in n for n in names)
        assert isinstance(model.lm_head, nn.Linear) and not isinstance(model.lm_head, QuantLinear)
        torch.testing.assert_close(model.model.embed_tokens.weight, ref.model.embed_tokens.weight)
        x = ids(2, 8)
        assert torch.isfinite(model(input_ids=x).logits).all()


def test_quantize_model_named_targets_and_atomic_failure():
    model = tiny_llama()
    quantize_model(model, 4, 32, targets=["model.layers.0.self_attn.q_proj"])
    assert list(quant_layers(model)) == ["model.layers.0.self_attn.q_proj"]
    fresh = tiny_llama()
    before = {k: v.clone() for k, v in fresh.state_dict().items()}
    with pytest.raises(ValueError, match="targets"):
        quantize_model(fresh, 4, 32, targets=["model.layers.0.mlp.up_proj", "no.such.module"])
    assert not quant_layers(fresh)
    assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items())
    with pytest.raises(ValueError, match="bits"):
        quantize_model(fresh, 5, 32)
    assert not quant_layers(fresh)


def test_rtn_quantize_leaves_input_untouched_and_8bit_is_close():
    model = tiny_llama()
    q = rtn_quantize(model, 8, 32)
    assert not quant_layers(model) and quant_layers(q)
    x = ids(2, 8)
    a, b = model(input_ids=x).logits, q(input_ids=x).logits
    assert (a - b).abs().max() < 0.05 * a.abs().max()


def test_bf16_and_save_pretrained_roundtrip(tmp_path):
    from transformers import AutoModelForCausalLM

    model = quantize_model(tiny_qwen2(), 3, 32)
    half = copy.deepcopy(model).to(torch.bfloat16)
    out = half(input_ids=ids(2, 8)).logits
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()
    x = ids(2, 8)
    want = model(input_ids=x).logits
    plain = dequantize_model(copy.deepcopy(model))
    assert not quant_layers(plain)
    plain.save_pretrained(tmp_path / "hf")
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "hf").eval()
    torch.testing.assert_close(again(input_ids=x).logits, want, atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------ export


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_pack_unpack_roundtrip(bits):
    codes = torch.randint(0, 2**bits, (7, 13), generator=torch.Generator().manual_seed(bits))
    packed = pack_bits(codes, bits)
    assert packed.numel() == -(-codes.numel() * bits // 8)
    assert torch.equal(
        unpack_bits(packed, bits, codes.numel()).reshape(7, 13), codes.to(torch.uint8)
    )


def test_export_reload_same_codes_and_smaller(tmp_path):
    model = tiny_llama()
    q = rtn_quantize(model, 2, 32)
    sizes = save_quantized(q, tmp_path / "packed")
    model.save_pretrained(tmp_path / "fp32")
    fp = sum(p.stat().st_size for p in (tmp_path / "fp32").iterdir())
    assert sizes["total"] < fp
    back = load_quantized(tmp_path / "packed")
    for (na, a), (nb, b) in zip(quant_layers(q).items(), quant_layers(back).items()):
        assert na == nb and torch.equal(a.codes(), b.codes())
    x = ids(2, 8)
    torch.testing.assert_close(back(input_ids=x).logits, q(input_ids=x).logits, atol=2e-3, rtol=0)


# ------------------------------------------------------------------ loss


def _logits(seed, shape=(2, 6, 11)):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def test_rectified_ce_with_teacher_equal_student_is_dft_gradient():
    z = _logits(0).requires_grad_(True)
    labels = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(1))
    labels[0, :2] = -100
    loss = RewardRectificationLoss(alpha=1.0, beta=0.0)(z, z.detach(), labels)
    (g,) = torch.autograd.grad(loss, z)
    z2 = z.detach().clone().requires_grad_(True)
    logp = torch.log_softmax(z2[:, :-1], -1)
    y = labels[:, 1:]
    m = y != -100
    tok = logp.gather(-1, y.clamp(min=0)[..., None]).squeeze(-1)
    dft = -(tok * tok.detach().exp() * m).sum() / m.sum()
    (g2,) = torch.autograd.grad(dft, z2)
    torch.testing.assert_close(g, g2)
    self_w = RewardRectificationLoss(alpha=1.0, beta=0.0, weight_source="student")
    torch.testing.assert_close(self_w(z, None, labels), dft)


def test_unit_teacher_probability_is_plain_ce():
    z = _logits(2)
    labels = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(3))
    teacher = torch.full_like(z, -1e4).scatter(-1, labels.roll(-1, 1)[..., None], 1e4)
    got = RewardRectificationLoss(alpha=1.0, beta=0.0)(z, teacher, labels)
    ce = nn.functional.cross_entropy(z[:, :-1].reshape(-1, 11), labels[:, 1:].reshape(-1))
    torch.testing.assert_close(got, ce)
    plain = RewardRectificationLoss(alpha=1.0, beta=0.0, weight_source="none")(z, None, labels)
    torch.testing.assert_close(plain, ce)


@pytest.mark.parametrize("normalize", [True, False])
def test_kl_zero_for_identical_logits(normalize):
    z = _logits(4)
    labels = torch.randint(0, 11, (2, 6))
    loss = RewardRectificationLoss(alpha=0.0, beta=1.0, kl_topk=5, normalize_topk=normalize)
    assert float(loss(z, z.clone(), labels)) == pytest.approx(0.0, abs=1e-6)
    assert float(loss(z, _logits(5), labels)) > 0 if normalize else True


def test_ignored_labels_do_not_count():
    z, t = _logits(6), _logits(7)
    labels = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(8))
    labels[:, 1:3] = -100  # predicted from positions 0 and 1
    loss = RewardRectificationLoss(kl_topk=4)
    base = loss(z, t, labels)
    z2, t2 = z.clone(), t.clone()
    z2[:, 0:2] += 5 * torch.randn(2, 2, 11)
    t2[:, 0:2] -= 3
    torch.testing.assert_close(loss(z2, t2, labels), base)


def test_sequence_granularity_uses_one_weight_per_row():
    z, t = _logits(9), _logits(10)
    labels = torch.randint(0, 11, (2, 6))
    seq = RewardRectificationLoss(alpha=1.0, beta=0.0, granularity="sequence")
    tok = RewardRectificationLoss(alpha=1.0, beta=0.0)
    assert float(seq(z, t, labels)) != pytest.approx(float(tok(z, t, labels)))


# ------------------------------------------------------------------ stage 1, GPTQ


def test_blockwise_calibration_lowers_block_mse():
    fp = tiny_llama()
    q = quantize_model(copy.deepcopy(fp), 2, 32)
    report = blockwise_calibrate(q, fp, ids(16, 16), epochs=1, lr_quant=1e-2, lr_weight=1e-3)
    assert len(report.mse_init) == 2 and report.steps == 2 * 4
    assert report.mse_final[0] < report.mse_init[0]
    assert report.mse_final[1] < report.mse_init[1]


def test_blockwise_uses_quantized_stream_as_input():
    fp = tiny_llama()
    q = quantize_model(copy.deepcopy(fp), 2, 32)
    x = ids(4, 16)
    hidden, kw = block_inputs(fp, x)
    y0 = run_block(decoder_layers(q)[0], hidden, kw)
    report = blockwise_calibrate(q, fp, x, epochs=0)
    with torch.no_grad():
        y1_q = run_block(decoder_layers(q)[1], y0, kw)
        y1_fp = run_block(decoder_layers(fp)[1], run_block(decoder_layers(fp)[0], hidden, kw), kw)
    assert report.mse_final[1] == pytest.approx(
        float(nn.functional.mse_loss(y1_q, y1_fp)), rel=1e-4
    )


def test_blockwise_restores_model_after_error(monkeypatch):
    from iclr26.llm.qat_reasoning import calibrate

    fp = tiny_llama()
    q = quantize_model(copy.deepcopy(fp), 3, 32)
    before = {k: v.clone() for k, v in q.state_dict().items()}
    calls = {"n": 0}
    original = calibrate._train_block

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("interrupted")
        return original(*args, **kwargs)

    monkeypatch.setattr(calibrate, "_train_block", failing)
    with pytest.raises(RuntimeError, match="interrupted"):
        blockwise_calibrate(q, fp, ids(8, 16), epochs=1, lr_quant=1e-2)
    assert all(torch.equal(before[k], v) for k, v in q.state_dict().items())


def test_gptq_beats_rtn_on_correlated_inputs():
    g = torch.Generator().manual_seed(0)
    mix = torch.randn(64, 64, generator=g)
    x = torch.randn(2000, 8, generator=g) @ torch.randn(8, 64, generator=g) + 0.1 * (
        torch.randn(2000, 64, generator=g) @ mix
    )
    w = torch.randn(16, 64, generator=g)
    H = 2 * x.T @ x / len(x)
    for act_order in (False, True):
        codes, scale, zero = gptq_layer(w, H, 3, 32, act_order=act_order)
        q = QuantLinear.from_linear(nn.Linear(64, 16, bias=False), 3, 32)
        q.load_export(codes, scale, zero)
        rtn = QuantLinear.from_linear(nn.Linear(64, 16, bias=False), 3, 32)
        with torch.no_grad():
            rtn.weight.copy_(w)
        rtn.init_minmax()
        err_gptq = (x @ w.T - x @ q.dequantized_weight().detach().T).norm()
        err_rtn = (x @ w.T - x @ rtn.dequantized_weight().detach().T).norm()
        assert err_gptq < 0.9 * err_rtn
        assert torch.equal(q.codes(), codes)


def test_gptq_with_identity_hessian_is_rtn():
    # uncorrelated inputs: the Cholesky factor of H^-1 is diagonal, so no error is spread and
    # GPTQ must give exactly the round-to-nearest codes and group parameters
    w = torch.randn(8, 72, generator=torch.Generator().manual_seed(5))
    codes, scale, zero = gptq_layer(w, torch.eye(72), 3, 32)
    rtn = QuantLinear.from_linear(nn.Linear(72, 8, bias=False), 3, 32)
    with torch.no_grad():
        rtn.weight.copy_(w)
    rtn.init_minmax()
    assert torch.equal(codes, rtn.codes())
    torch.testing.assert_close(scale, rtn.scale.detach())
    torch.testing.assert_close(zero, rtn.zero_point.detach())


def test_gptq_quantize_model_whole():
    model = tiny_llama()
    q = gptq_quantize(model, ids(8, 16), 4, 32)
    assert not quant_layers(model) and len(quant_layers(q)) == 14
    assert torch.isfinite(q(input_ids=ids(2, 8)).logits).all()


# ------------------------------------------------------------------ tasks and pipeline


def _left_to_right(p):
    expr = str(p.operands[0])
    for op, b in zip(p.ops, p.operands[1:]):
        expr = f"({expr}{op}{b})"
    return eval(expr) % 10  # noqa: S307 - digits and operators only


def test_arithmetic_answers_and_chain():
    for p in arithmetic_problems(300, (2, 3, 4, 5), seed=4):
        assert p.answer == _left_to_right(p)
        assert parse_answer(p.completion) == p.answer
        assert p.completion.count(";") == p.k - 1
    a, b = arithmetic_problems(20, 3, seed=1), arithmetic_problems(20, 3, seed=1)
    assert [x.text for x in a] == [x.text for x in b]


@pytest.mark.parametrize(
    "text, want",
    [
        (" <think> 1+2=3 </think> <answer> 3 </answer>", 3),
        ("<answer>7</answer> trailing", 7),
        ("<answer> 12 </answer>", None),
        ("<answer> 4", None),
        ("no tags at all 5", None),
        ("", None),
    ],
)
def test_parser_handles_malformed_output(text, want):
    assert parse_answer(text) == want


def test_mixed_domain_calibration_ratio():
    reasoning = torch.arange(1000) % 7 + 100
    pretrain = torch.arange(1000) % 5
    cal = MixedDomainCalibration(reasoning, pretrain, 0.75, n=20, seq_len=8, seed=0)
    assert cal.input_ids.shape == (20, 8)
    assert cal.domains.count("reasoning") == 15
    for row, dom in zip(cal.input_ids, cal.domains):
        assert (row >= 100).all() if dom == "reasoning" else (row < 5).all()


class _Tok:
    """A character tokenizer: enough for the SFT encoding of the pipeline."""

    eos_token_id, pad_token_id = 1, 0

    def encode(self, text, add_special_tokens=False):
        return [2 + (ord(c) % 200) for c in text]


def test_reasoning_qat_fit_end_to_end():
    teacher = tiny_llama()
    ref = {k: v.clone() for k, v in teacher.state_dict().items()}
    tok = _Tok()
    texts = [p.text for p in arithmetic_problems(50, 3, seed=0)]
    pairs = [(p.prompt, p.completion) for p in arithmetic_problems(20, 3, seed=1)]
    qat = ReasoningQAT(
        bits=2,
        group_size=32,
        n_calib=8,
        calib_seq_len=16,
        calib_epochs=1,
        ft_steps=3,
        ft_batch=2,
        lr_weight=1e-3,
        calib_lr_quant=1e-3,
    )
    q = qat.fit(teacher, tok, texts, texts, pairs)
    assert quant_layers(q) and not quant_layers(teacher)
    assert all(torch.equal(ref[k], v) for k, v in teacher.state_dict().items())
    assert len(qat.history_["loss"]) == 3 and qat.calibration_report_.steps == 4
    s = ReasoningQAT(bits=2, group_size=32, loss="S", ft_steps=2, ft_batch=2)
    assert s.criterion.beta == 0 and s.criterion.weight_source == "none"
    before = {k: v.clone() for k, v in q.state_dict().items()}
    with pytest.raises(TypeError, match="sft_pairs"):
        s.finetune(q, teacher, [("only one",)], tok)
    assert all(torch.equal(before[k], v) for k, v in q.state_dict().items())


# ------------------------------------------------------------------ claims at smoke scale


def _assert_figures_open(record, out_dir):
    """Every claim saves at least one figure, and each one is a PNG that opens."""
    from PIL import Image

    assert record["figures"], f"{record['claim']} saved no figure"
    for name in record["figures"]:
        with Image.open(out_dir / name) as image:
            assert image.format == "PNG" and min(image.size) > 0


@pytest.mark.parametrize(
    "name", ["mixed-domain-calibration", "two-bit-pipeline-vs-ptq", "teacher-vs-self-reweighting"]
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("qat_reasoning", name, scale="smoke", out_dir=tmp_path)
    assert record["verdict"] in {"reproduced", "not reproduced", "inconclusive"}, record["reason"]
    assert record["metrics"] and record["baseline"]
    _assert_figures_open(record, tmp_path)
    if name != "teacher-vs-self-reweighting":  # where the time goes, per stage
        stages = record["metrics"]["stage_seconds"]
        assert "teacher fine-tune or load" in stages["setup"]
        assert all(v["cpu_s"] >= 0 and v["calls"] >= 1 for v in stages["claim"].values())
        assert record["metrics"]["teacher"]["anchor_weight"] == 5.0


def test_warm_teacher_builds_the_claims_cache_entry():
    from iclr26.llm.qat_reasoning.claims import Scale, _base, _teacher, warm_teacher

    told = []
    folder = warm_teacher("smoke", progress=lambda *a: told.append(a))
    assert (folder / "meta.json").is_file() and told[-1][:2] == (1, 1)
    first = _teacher(Scale.SMOKE, *_base(Scale.SMOKE)[:4])  # the claims' call reads it back
    assert first.tinylm_cache_dir == folder and first.tinylm_meta["anchor_weight"] == 5.0
    assert json.loads((folder / "meta.json").read_text())["steps"] == first.tinylm_meta["steps"]
    assert warm_teacher("test") == folder  # "test" (the CLI's smallest size) means smoke
    with pytest.raises(ValueError, match="size"):
        warm_teacher("huge")


def test_cli_quantizes_a_local_model(tmp_path):
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
    args = parser.parse_args(
        [
            "--model",
            str(tmp_path / "model"),
            "--bits",
            "3",
            "--group",
            "32",
            "--method",
            "rtn",
            "--out",
            str(out),
        ]
    )
    assert run(args) == 0
    back = load_quantized(out)
    assert len(quant_layers(back)) == 7 and all(q.bits == 3 for q in quant_layers(back).values())
    bad = parser.parse_args(["--bits", "5", "--out", str(tmp_path / "x")])
    assert run(bad) == 2


def test_finetune_restores_model_after_mid_training_error():
    teacher = tiny_llama()
    qat = ReasoningQAT(bits=2, group_size=32, ft_steps=4, ft_batch=2, lr_weight=1e-2)
    q = qat.quantize(teacher)
    before = {k: v.clone() for k, v in q.state_dict().items()}
    calls = {"n": 0}
    original = qat.criterion.forward

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("interrupted")
        return original(*args, **kwargs)

    qat.criterion.forward = failing
    pairs = [(p.prompt, p.completion) for p in arithmetic_problems(10, 2, seed=2)]
    with pytest.raises(RuntimeError, match="interrupted"):
        qat.finetune(q, teacher, pairs, _Tok())
    assert calls["n"] == 3
    assert all(torch.equal(before[k], v) for k, v in q.state_dict().items())


# ------------------------------------------------------------------ teacher fine-tune and eval


def _sft_pairs_mixed():
    """CoT pairs of several lengths and prompt-free code rows, some cut by max_len."""
    pairs = [(p.prompt, p.completion) for p in arithmetic_problems(12, (2, 3, 5), seed=4)]
    pairs += [("", "def f(x):\n    return x * 2 + 1  # a longer code row " * 2)] * 3
    pairs += [("", "x = 1")]
    return pairs


def test_sft_finetune_matches_shared_finetune_lm():
    """The grouped, label-positions-only loop takes the same steps as the padded one."""
    from iclr26.llm.qat_reasoning.teacher import sft_finetune
    from iclr26.models.tinylm import finetune_lm

    pairs = _sft_pairs_mixed()
    ref, ours = tiny_llama(seed=3), tiny_llama(seed=3)
    finetune_lm(ref, _Tok(), pairs, steps=4, lr=3e-3, batch=6, seed=1, max_len=40)
    sft_finetune(ours, _Tok(), pairs, steps=4, lr=3e-3, batch=6, seed=1, max_len=40)
    assert ours.tinylm_meta["losses"] == pytest.approx(ref.tinylm_meta["losses"], rel=1e-5)
    for (name, a), b in zip(ref.state_dict().items(), ours.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), name
    assert not ours.training


def test_sft_step_loss_counts_only_completion_tokens():
    from iclr26.llm.qat_reasoning.teacher import encode_examples, sft_step_loss

    model = tiny_llama(seed=5)
    tok = _Tok()
    rows, starts = encode_examples(tok, [("ab", "cd"), ("", "xyz")], max_len=None)
    assert starts == [2, 0] and rows[0][-1] == tok.eos_token_id
    loss, count = sft_step_loss(model, rows, starts, [0, 1], tok.pad_token_id, scale=0.0)
    assert count == 3 + 3  # "cd<eos>" and "yz<eos>" (a row's first token is never a label)
    with torch.no_grad():
        ids = torch.tensor([rows[0], rows[1] + [0]])
        labels = torch.tensor([[-100, -100] + rows[0][2:], rows[1] + [-100]])
        want = model(input_ids=ids, labels=labels).loss
    assert loss == pytest.approx(float(want), rel=1e-5)


def test_length_groups_partition_and_padding():
    from iclr26.llm.qat_reasoning.teacher import length_groups

    lengths = [64, 20, 21, 64, 40, 22, 64, 41]
    groups = length_groups(lengths, overhead=8)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    padded = sum(len(g) * max(lengths[i] for i in g) for g in groups)
    assert padded < len(lengths) * max(lengths)
    assert {tuple(sorted(lengths[i] for i in g)) for g in groups} == {
        (20, 21, 22),
        (40, 41),
        (64, 64, 64),
    }
    assert len(length_groups(lengths, overhead=10_000)) == 1


def test_frozen_eval_model_has_the_same_outputs():
    from iclr26.llm.qat_reasoning.evaluate import frozen_for_eval

    q = rtn_quantize(tiny_llama(), bits=2, group_size=32)
    q.train()
    frozen = frozen_for_eval(q)
    assert not quant_layers(frozen) and len(quant_layers(q)) == 14 and q.training
    x = ids(3, 12)
    with torch.no_grad():
        assert torch.equal(frozen(input_ids=x).logits, q(input_ids=x).logits)
    name = next(iter(quant_layers(q)))
    q.get_submodule(name).set_input_scale(torch.full((32,), 2.0))
    assert list(quant_layers(frozen_for_eval(q))) == [name]  # kept: its forward divides x
    plain = tiny_llama()
    assert frozen_for_eval(plain) is plain


@pytest.mark.parametrize("loss", ["R", "S"])
def test_stage2_on_label_positions_matches_padded_batches(monkeypatch, loss):
    from iclr26.llm.qat_reasoning import pipeline

    teacher = tiny_llama()
    pairs = [(p.prompt, p.completion) for p in arithmetic_problems(12, (2, 3, 5), seed=6)]
    runs = {}
    for mode in ("label positions", "padded"):
        if mode == "padded":  # the plain path: full logits of the padded, masked batch
            monkeypatch.setattr(pipeline, "head_and_body", lambda model: None)
        qat = ReasoningQAT(bits=2, group_size=32, loss=loss, ft_steps=3, ft_batch=5,
                           lr_weight=1e-3, lr_quant=1e-3)  # fmt: skip
        q = qat.quantize(teacher)
        qat.finetune(q, teacher, pairs, _Tok())
        runs[mode] = (qat.history_, q.state_dict())
    (h1, s1), (h2, s2) = runs["label positions"], runs["padded"]
    for key in ("loss", "rectified_ce", "kl"):
        assert h1[key] == pytest.approx(h2[key], rel=1e-5, abs=1e-7), key
    for name, value in s1.items():
        assert torch.allclose(value, s2[name], atol=1e-5, rtol=1e-4), name


def test_sft_anchor_kl_is_zero_at_the_start_and_only_on_full_rows():
    """KL(anchor || model) adds nothing while the model is the anchor, and after a change it
    reads the prompt-free (full-sequence) rows only."""
    from iclr26.llm.qat_reasoning.teacher import encode_examples, sft_step_loss

    tok = _Tok()
    model = tiny_llama(seed=5)
    anchor = copy.deepcopy(model)
    rows, starts = encode_examples(tok, [("ab", "cd"), ("", "xyz")], max_len=None)
    plain, count = sft_step_loss(model, rows, starts, [0, 1], tok.pad_token_id, scale=0.0)
    anchored, count2 = sft_step_loss(
        model, rows, starts, [0, 1], tok.pad_token_id, 0.0, anchor, 5.0
    )
    assert count2 == count and anchored == pytest.approx(plain, abs=1e-6)
    with torch.no_grad():
        model.model.layers[0].mlp.down_proj.weight.add_(0.3)
    ce_prompt, _ = sft_step_loss(model, rows, starts, [0], tok.pad_token_id, scale=0.0)
    kl_prompt, _ = sft_step_loss(model, rows, starts, [0], tok.pad_token_id, 0.0, anchor, 5.0)
    assert kl_prompt == pytest.approx(ce_prompt, rel=1e-6)  # a prompted row: no KL term
    ce_full, _ = sft_step_loss(model, rows, starts, [1], tok.pad_token_id, scale=0.0)
    kl_full, _ = sft_step_loss(model, rows, starts, [1], tok.pad_token_id, 0.0, anchor, 5.0)
    assert kl_full > ce_full + 1e-4


def test_sft_finetune_freezes_embeddings_and_keys_the_cache(tmp_path, monkeypatch):
    from iclr26.llm.qat_reasoning.teacher import sft_finetune

    pairs = _sft_pairs_mixed()
    model = tiny_llama(seed=3)
    emb = model.get_input_embeddings().weight.detach().clone()
    layer = model.model.layers[0].mlp.up_proj.weight.detach().clone()
    sft_finetune(model, _Tok(), pairs, steps=3, lr=3e-3, batch=4, freeze_embeddings=True,
                 anchor_weight=1.0)  # fmt: skip
    assert torch.equal(model.get_input_embeddings().weight, emb)
    assert model.get_input_embeddings().weight.requires_grad  # restored afterwards
    assert not torch.equal(model.model.layers[0].mlp.up_proj.weight, layer)
    assert model.tinylm_meta["anchor_weight"] == 1.0 and model.tinylm_meta["freeze_embeddings"]
    with pytest.raises(ValueError, match="anchor_weight"):
        sft_finetune(tiny_llama(), _Tok(), pairs, steps=1, lr=1e-3, batch=2, anchor_weight=-1)
    with pytest.raises(TypeError, match="freeze_embeddings"):
        sft_finetune(tiny_llama(), _Tok(), pairs, steps=1, lr=1e-3, batch=2, freeze_embeddings=1)
