import pytest
import torch
import torch.nn.functional as F

from iclr26.claims import run_claim
from iclr26.nn.learned_nonlinearities import (
    AdditionTask,
    CopyTask,
    LinearSpline,
    Nonlinearities,
    SplineTransformer,
    compatibility_matrix,
    discover_nonlinearities,
    masked_loss,
    patch_hf_activations,
    steps_to_reach,
    text_task,
    train_with_frozen,
)
from iclr26.nn.learned_nonlinearities.procedure import History


def test_spline_values_interpolation_and_extrapolation():
    torch.manual_seed(0)
    s = LinearSpline(n_anchors=11, x_range=5.0)
    with torch.no_grad():
        s.values.copy_(torch.randn(11))
    torch.testing.assert_close(s(s.anchors), s.values.detach())
    mid = (s.anchors[:-1] + s.anchors[1:]) / 2
    torch.testing.assert_close(s(mid), (s.values[:-1] + s.values[1:]).detach() / 2)
    outside = torch.tensor([-100.0, -5.5, 5.5, 100.0])
    expected = torch.stack([s.values[0]] * 2 + [s.values[-1]] * 2).detach()
    torch.testing.assert_close(s(outside), expected)


def test_linear_init_is_identity_on_range():
    s = LinearSpline(n_anchors=64, x_range=15.0, init="linear")
    x = torch.linspace(-15, 15, 1001)
    torch.testing.assert_close(s(x), x, atol=1e-5, rtol=0)


def test_gradient_touches_only_bracketing_anchors():
    s = LinearSpline(n_anchors=9, x_range=4.0)
    s(torch.tensor([0.3])).sum().backward()
    nonzero = torch.nonzero(s.values.grad).flatten().tolist()
    assert nonzero == [4, 5]
    torch.testing.assert_close(s.values.grad[4:6], torch.tensor([0.7, 0.3]))


def test_per_channel_spline():
    s = LinearSpline(5, 2.0, init="linear", per_channel=True, channels=3)
    with torch.no_grad():
        s.values[1] *= 2
    x = torch.tensor([[0.5, 0.5, 0.5]])
    torch.testing.assert_close(s(x), torch.tensor([[0.5, 1.0, 0.5]]))


def test_score_fn_with_exp_values_matches_softmax_attention():
    torch.manual_seed(0)
    theta = Nonlinearities(mlp=False, attention="score_fn", n_anchors=801, x_range=8.0)
    with torch.no_grad():  # softplus^-1(exp(a)) so that K = exp(score)
        target = torch.exp(theta.attn[0].anchors)
        theta.attn[0].values.copy_(torch.where(target > 20, target, torch.log(torch.expm1(target))))
    learned = SplineTransformer(20, 16, 2, 1, context=8, nonlinearities=theta)
    base = SplineTransformer(20, 16, 2, 1, context=8)
    base.load_state_dict(learned.state_dict(), strict=False)
    idx = torch.randint(0, 20, (3, 8))
    torch.testing.assert_close(learned(idx), base(idx), atol=1e-2, rtol=1e-2)


def test_stage_one_wiring():
    task = AdditionTask(n_digits=1, n_train=80, n_test=10, seed=0)
    theta = Nonlinearities(mlp=True, attention="kernel_feature")
    seen = []

    def make(nl):
        model = SplineTransformer(task.vocab_size, 8, 2, 1, context=task.context, nonlinearities=nl)
        seen.append(model)
        return model

    before = [p.clone() for p in theta.parameters()]
    discover_nonlinearities(make, theta, task, n_models=3, steps=1, batch=8)
    assert len(seen) == 3 and all(m.nonlinearities is theta for m in seen)
    assert any(not torch.equal(a, b) for a, b in zip(before, theta.parameters()))
    # a D_arch-only step: the model weights get no gradient, only theta does
    model = seen[0]
    w_before = [p.clone() for p in model.weight_parameters()]
    arch = masked_loss(model, task.sample("arch", 8, torch.Generator().manual_seed(1)))
    grads = torch.autograd.grad(arch, list(theta.parameters()))
    assert any(g.abs().sum() > 0 for g in grads)
    assert all(p.grad is None for p in model.weight_parameters())
    assert all(torch.equal(a, b) for a, b in zip(w_before, model.weight_parameters()))


def test_stage_two_freezes_theta():
    task = AdditionTask(n_digits=1, n_train=80, n_test=10, seed=0)
    theta = Nonlinearities(mlp=True, attention="pre_qkv")

    def make(nl):
        return SplineTransformer(task.vocab_size, 8, 2, 1, context=task.context, nonlinearities=nl)

    model, hist = train_with_frozen(make, theta, task, steps=3, batch=8, eval_every=1)
    frozen = model.nonlinearities
    assert all(not p.requires_grad for p in frozen.parameters())
    assert all(torch.equal(a, b) for a, b in zip(frozen.parameters(), theta.parameters()))
    assert len(hist.metric) == 3


def test_addition_task_encoding():
    task = AdditionTask(n_digits=3, n_train=50, n_test=10, seed=0)
    x, y, mask = task.sample("wts", 4, torch.Generator().manual_seed(0))
    seq = torch.cat([x, y[:, -1:]], dim=1)
    for row in seq.tolist():
        a = int("".join(map(str, row[0:3])))
        b = int("".join(map(str, row[4:7])))
        s = sum(d * 10**i for i, d in enumerate(row[8:12]))
        assert row[3] == task.PLUS and row[7] == task.EQUALS and s == a + b
    assert mask.sum(1).tolist() == [4] * 4
    train = {tuple(r) for r in torch.cat([task.data["wts"], task.data["arch"]]).tolist()}
    assert not train & {tuple(r) for r in task.data["test"].tolist()}


def test_copy_task_encoding_and_metrics():
    task = CopyTask(length=5, n_symbols=4, n_train=200, n_test=20, seed=1, metric="token")
    seqs = task.data["wts"]
    assert seqs.shape == (160, 11) and task.vocab_size == 5 and task.context == 10
    assert torch.equal(seqs[:, :5], seqs[:, 6:]) and (seqs[:, 5] == 4).all()
    x, y, mask = task.sample("arch", 3, torch.Generator().manual_seed(0))
    assert mask.sum(1).tolist() == [5] * 3 and torch.equal(y[:, -5:], x[:, :5])
    all_seqs = {tuple(r) for r in torch.cat(list(task.data.values())).tolist()}
    assert len(all_seqs) == 220

    class Oracle(torch.nn.Module):  # right on every answer token but the last one
        def forward(self, x):
            logits = F.one_hot(torch.cat([x[:, 1:], x[:, :1]], 1), 5).float()
            logits[:, -5:] = F.one_hot(x[:, :5], 5).float()
            logits[:, -1] = F.one_hot((x[:, 4] + 1) % 4, 5).float()
            return logits

    assert task.evaluate(Oracle(), "test") == pytest.approx(0.8)
    task.metric = "exact"
    assert task.evaluate(Oracle(), "test") == 0.0


def test_text_task_code_encoding():
    task = text_task("code", context=8, n_eval_windows=4, max_files=2)
    ids = task.streams["wts"]
    assert ids.dtype == torch.long and int(ids.min()) >= 0 and int(ids.max()) < task.vocab_size
    x, y, mask = task.sample("test", 3, torch.Generator().manual_seed(0))
    assert x.shape == (3, 8) and torch.equal(x[:, 1:], y[:, :-1]) and mask.all()
    with pytest.raises(ValueError):
        text_task("poetry")


def test_compatibility_matrix_zero_for_baseline_equivalent_theta():
    task = AdditionTask(n_digits=1, n_train=80, n_test=20, seed=0)

    def make_for(_task):
        return lambda nl: SplineTransformer(12, 8, 2, 1, 2, task.context, nonlinearities=nl)

    # A spline initialised as GeLU, softmax attention: same model as the baseline up to the
    # interpolation error, so every entry is about 0.
    theta = Nonlinearities(
        mlp=True, attention="softmax", n_anchors=2001, x_range=10.0, mlp_init="gelu"
    )
    loss = lambda h: h.metric[-1]  # noqa: E731
    m = compatibility_matrix(
        {"a": theta, "b": theta},
        {"x": task},
        make_for,
        steps=3,
        batch=8,
        seeds=(0, 1),
        metric=loss,
        eval_every=1,
    )
    assert set(m) == {"a", "b"} and set(m["a"]) == {"x"}
    assert abs(m["a"]["x"]) < 1e-6 and m["a"]["x"] == m["b"]["x"]
    with pytest.raises(ValueError):
        compatibility_matrix({}, {"x": task}, make_for)


def test_steps_to_reach():
    h = History(steps=[10, 20, 30], metric=[0.5, 0.95, 0.99])
    assert steps_to_reach(h, 0.9, 100) == 20
    assert steps_to_reach(h, 0.999, 100) == 100


def test_patch_hf_gpt2_and_llama():
    transformers = pytest.importorskip("transformers")
    theta = Nonlinearities(mlp=True, attention="softmax", mlp_init="gelu")
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16)
    )
    names = patch_hf_activations(gpt2, theta)
    assert len(names) == 2 and all(n.endswith("mlp.act") for n in names)
    assert isinstance(gpt2.transformer.h[0].mlp.act, LinearSpline)
    assert not gpt2.transformer.h[0].mlp.act.values.requires_grad
    out = gpt2(torch.randint(0, 50, (1, 6))).logits
    assert out.shape == (1, 6, 50)
    llama = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=50,
            max_position_embeddings=16,
        )
    )
    assert len(patch_hf_activations(llama, theta)) == 2
    assert llama(torch.randint(0, 50, (1, 5))).logits.shape == (1, 5, 50)


def test_spline_gelu_init_matches_gelu_inside_range():
    s = LinearSpline(n_anchors=601, x_range=6.0, init="gelu")
    x = torch.linspace(-5.9, 5.9, 333)
    torch.testing.assert_close(s(x), F.gelu(x), atol=1e-3, rtol=0)


def test_bad_input():
    with pytest.raises(ValueError):
        LinearSpline(n_anchors=1)
    with pytest.raises(ValueError):
        Nonlinearities(attention="relu")
    with pytest.raises(TypeError):
        SplineTransformer(10, 8, 2, 1, nonlinearities="gelu")
    with pytest.raises(ValueError):
        patch_hf_activations(torch.nn.Linear(2, 2), Nonlinearities())
    with pytest.raises(ValueError):
        AdditionTask(arch_fraction=1.5)
    with pytest.raises(ValueError):
        AdditionTask(n_train=50, n_test=5, metric="bleu")
    with pytest.raises(ValueError):
        CopyTask(length=2, n_symbols=3, n_train=20, n_test=5)


@pytest.mark.parametrize(
    "name", ["addition-speed", "prose-gain", "compatibility-matrix", "prose-to-code-transfer"]
)
def test_claims_smoke(name, tmp_path):
    record = run_claim("learned_nonlinearities", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record["traceback"]
    assert record["metrics"]
    assert record["figures"]


def _tiny_hf_models(transformers):
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=40,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=16,
        )
    )
    vit = transformers.ViTModel(
        transformers.ViTConfig(
            image_size=8,
            patch_size=4,
            num_channels=3,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=32,
        )
    )
    llama = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=50,
            max_position_embeddings=16,
        )
    )
    inputs = {
        "bert": {"input_ids": torch.randint(0, 40, (2, 6))},
        "vit": {"pixel_values": torch.randn(2, 3, 8, 8)},
        "llama": {"input_ids": torch.randint(0, 50, (2, 5))},
    }
    return {"bert": bert, "vit": vit, "llama": llama}, inputs


def _first_output(model, inputs):
    out = model(**inputs)
    return out.logits if hasattr(out, "logits") else out.last_hidden_state


def test_patch_hf_touches_only_mlp_activations():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    models, _ = _tiny_hf_models(transformers)
    theta = Nonlinearities(mlp=True, attention="softmax", mlp_init="gelu")
    expected = {
        "bert": [f"encoder.layer.{i}.intermediate.intermediate_act_fn" for i in range(2)],
        "vit": [f"layers.{i}.mlp.activation_fn" for i in range(2)],
        "llama": [f"model.layers.{i}.mlp.act_fn" for i in range(2)],
    }
    for name, model in models.items():
        assert patch_hf_activations(model, theta) == expected[name], name
    # The poolers keep their Tanh.
    assert isinstance(models["bert"].pooler.activation, torch.nn.Tanh)
    assert isinstance(models["vit"].pooler.activation, torch.nn.Tanh)
    splines = [m for m in models["bert"].modules() if isinstance(m, LinearSpline)]
    assert len(splines) == 2


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_patch_hf_works_in_half_precision(dtype):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    models, inputs = _tiny_hf_models(transformers)
    theta = Nonlinearities(mlp=True, attention="softmax", mlp_init="gelu")
    for name, model in models.items():
        model = model.to(dtype).eval()
        patch_hf_activations(model, theta)
        batch = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in inputs[name].items()}
        with torch.no_grad():
            out = _first_output(model, batch)
        assert out.dtype == dtype and torch.isfinite(out.float()).all(), name
    # The spline keeps its input's dtype and evaluates in float32.
    spline = LinearSpline(init="gelu").to(dtype)
    x = torch.linspace(-3, 3, 7, dtype=dtype)
    y = spline(x)
    assert y.dtype == dtype
    torch.testing.assert_close(y.float(), LinearSpline(init="gelu")(x.float()), atol=2e-2, rtol=0)


@pytest.mark.parametrize("freeze", [True, False])
def test_patched_model_survives_save_and_load_pretrained(tmp_path, freeze):
    transformers = pytest.importorskip("transformers")
    from iclr26.nn.learned_nonlinearities import load_patched_pretrained

    torch.manual_seed(0)
    models, inputs = _tiny_hf_models(transformers)
    theta = Nonlinearities(mlp=True, attention="softmax", mlp_init="gelu", n_layers=2)
    with torch.no_grad():  # values no GeLU has, so a lost patch shows in the outputs
        for spline in theta.mlp:
            spline.values.add_(torch.randn_like(spline.values) * 0.3)
    for name, model in models.items():
        model.eval()
        patch_hf_activations(model, theta, freeze=freeze)
        with torch.no_grad():
            want = _first_output(model, inputs[name])
        folder = tmp_path / f"{name}-{freeze}"
        model.save_pretrained(folder)
        plain = type(model).from_pretrained(folder).eval()
        with torch.no_grad():
            assert not torch.allclose(_first_output(plain, inputs[name]), want), name
        back = load_patched_pretrained(type(model), folder).eval()
        with torch.no_grad():
            got = _first_output(back, inputs[name])
        assert torch.equal(got, want), name
        spline = next(m for m in back.modules() if isinstance(m, LinearSpline))
        assert spline.values.requires_grad is (not freeze)
    fresh, _ = _tiny_hf_models(transformers)
    fresh["bert"].save_pretrained(tmp_path / "plain")
    with pytest.raises(ValueError, match="no patched model"):
        load_patched_pretrained(type(fresh["bert"]), tmp_path / "plain")
    with pytest.raises(FileNotFoundError, match="path"):
        load_patched_pretrained(type(fresh["bert"]), tmp_path / "missing")


def test_trapezoid_schedule_scales_weights_and_splines_alike():
    from iclr26.nn.learned_nonlinearities.procedure import lr_factor

    total = 20
    factors = [lr_factor("trapezoid", s, total) for s in range(total)]
    assert factors[0] == pytest.approx(0.5) and factors[1] == 1.0  # 2 warm-up steps
    assert factors[9] == 1.0 and factors[10] == 1.0 and factors[-1] == pytest.approx(0.1)
    assert all(lr_factor("constant", s, total) == 1.0 for s in range(total))
    seen = []
    original = torch.optim.Adam.step

    def spy(self, *args, **kwargs):
        if self.defaults["lr"] == 0.1:  # the spline optimiser (the weights' AdamW has 1e-3)
            seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    task = AdditionTask(n_digits=1, n_train=40, n_test=10)

    def make(nl):
        return SplineTransformer(task.vocab_size, 8, 2, 1, context=task.context, nonlinearities=nl)

    torch.optim.Adam.step = spy
    try:
        discover_nonlinearities(
            make, Nonlinearities(), task, n_models=1, steps=10, batch=4, lr_schedule="trapezoid"
        )
    finally:
        torch.optim.Adam.step = original
    # The spline optimiser (Adam, lr 0.1) follows the trapezoid: warm-up 1 step, cool-down 5.
    assert seen == pytest.approx([0.1 * lr_factor("trapezoid", s, 10) for s in range(10)])
