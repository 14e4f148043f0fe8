"""Tests of the SMoPE room: the aggregated router, sparse selection and adaptive noise, the
attention formula, the router and prototype losses, the frozen backbone, class masking,
parameter and pass counts, the baselines, the protocol stream and the claims at smoke scale."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr26.claims import contract_problems, run_claim
from iclr26.models.vision import TinyViT, pooled
from iclr26.vision.smope import (
    CODAPromptLite,
    ContinualTrainer,
    DualPromptLite,
    L2PLite,
    NCMClassifier,
    PassCounter,
    SharedPrefix,
    SMoPE,
    aggregated_scores,
    average_forgetting,
    class_incremental,
    noisy_selection_scores,
    prototype_loss,
    router_loss,
    usage_entropy,
)


def _vit(seed=0, dim=32, depth=3, heads=2):
    torch.manual_seed(seed)
    return TinyViT(img_size=32, patch=8, dim=dim, depth=depth, heads=heads)


def _x(n=6, seed=1):
    return torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def _smope(vit=None, **kw):
    kw = dict(layers=(0, 1), n_experts=6, top_k=2) | kw
    torch.manual_seed(3)
    return SMoPE(vit if vit is not None else _vit(), 4, **kw)


def test_aggregated_score_is_the_mean_per_token_logit():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 2, 7, 5, generator=g)
    keys = torch.randn(2, 4, 5, generator=g)
    per_token = torch.einsum("bhtd,hed->bhte", q, keys)
    torch.testing.assert_close(aggregated_scores(q, keys), per_token.mean(2))


def test_selection_is_exactly_k_experts_and_topk_without_noise():
    m = _smope().train()
    q = torch.randn(5, m.num_heads, 9, m.head_dim)
    scores, selected = m.route(0, q)
    assert selected.shape == (5, m.num_heads, 2)
    assert all(len(set(row.tolist())) == 2 for row in selected.reshape(-1, 2))
    expected = scores.topk(2, dim=-1).indices
    assert torch.equal(selected.sort(-1).values, expected.sort(-1).values)


def test_flagged_expert_penalty_is_eps_times_the_range_and_unused_never_chosen_at_eval():
    m = _smope(eps=0.4)
    m.frequent[0, :, 1] = True
    scores = torch.randn(4, m.num_heads, m.n_experts)
    m.train()
    noisy = noisy_selection_scores(scores, m.selection_penalty(0))
    spread = scores.amax(-1) - scores.amin(-1)
    torch.testing.assert_close(scores[..., 1] - noisy[..., 1], 0.4 * spread)
    torch.testing.assert_close(noisy[..., 0], scores[..., 0])
    # at evaluation, experts with frequency 0 are never selected, whatever their score
    m.eval()
    m.frequency[0] = 1.0
    m.frequency[0, :, :3] = 0.0
    m.prompt_keys.data[0, :, :3] *= 100.0  # make the unused experts score highest
    q = torch.rand(8, m.num_heads, 9, m.head_dim)
    _, selected = m.route(0, q)
    assert int(selected.min()) >= 3


def test_flagged_expert_loses_a_close_race_in_training_only():
    m = _smope(eps=0.4, n_experts=3, top_k=1)
    scores = torch.tensor([[[1.0, 0.9, 0.0]]]).expand(1, m.num_heads, 3)
    m.frequent[0, :, 0] = True
    m.train()
    assert noisy_selection_scores(scores, m.selection_penalty(0)).argmax(-1).eq(1).all()
    m.frequency[0] = 1.0
    m.eval()
    assert noisy_selection_scores(scores, m.selection_penalty(0)).argmax(-1).eq(0).all()


def test_smope_with_all_experts_equals_aggregated_shared_prefix_not_per_token():
    vit = _vit()
    x = _x()
    m = _smope(vit, top_k=6, alpha_router=0.0, alpha_proto=0.0, eps=0.0).eval()
    agg = SharedPrefix(vit, 4, layers=(0, 1), n_experts=6, aggregated=True).eval()
    tok = SharedPrefix(vit, 4, layers=(0, 1), n_experts=6, aggregated=False).eval()
    for other in (agg, tok):
        other.prompt_keys.data.copy_(m.prompt_keys.data)
        other.prompt_values.data.copy_(m.prompt_values.data)
    with torch.no_grad():
        f_smope, f_agg, f_tok = m.features(x), agg.features(x), tok.features(x)
        m.dense = True
        f_dense = m.features(x)
    torch.testing.assert_close(f_smope, f_agg, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(f_dense, f_agg, atol=1e-5, rtol=1e-5)
    assert (f_smope - f_tok).abs().max() > 1e-3


def test_prefix_attention_matches_a_hand_written_formula():
    vit = _vit()
    m = _smope(vit).eval()
    m.frequency.fill_(1.0)
    attn = vit.blocks[0].attn
    tokens = torch.randn(2, 17, 32)
    with torch.no_grad(), m.prefixes_active():
        out = attn(tokens)
    b, t, d = tokens.shape
    h, dh = attn.num_heads, d // attn.num_heads
    q, k, v = attn.qkv(tokens).reshape(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)
    s = torch.einsum("bhd,hed->bhe", q.mean(2), m.prompt_keys[0])
    top = s.topk(2, -1).indices
    ref = torch.empty(b, h, t, dh)
    for bi in range(b):
        for hi in range(h):
            sel = top[bi, hi]
            logits = (
                torch.cat([s[bi, hi, sel].expand(t, -1), q[bi, hi] @ k[bi, hi].t()], dim=1)
                / dh**0.5
            )  # the same expert logit for every token
            values = torch.cat([m.prompt_values[0, hi, sel], v[bi, hi]], 0)
            ref[bi, hi] = logits.softmax(-1) @ values
    ref = attn.proj(ref.transpose(1, 2).reshape(b, t, d))
    torch.testing.assert_close(out, ref.detach(), atol=1e-5, rtol=1e-5)


def test_patched_backbone_is_unchanged_without_active_prompts():
    vit = _vit()
    x = _x()
    with torch.no_grad():
        before = pooled(vit, x)
        _smope(vit)
        after = pooled(vit, x)
    torch.testing.assert_close(before, after)


def test_router_uses_the_prompted_pass_itself():
    vit = _vit()
    x = _x(5)
    m = _smope(vit).eval()
    l2p = L2PLite(vit, 4, layers=(0, 1)).eval()
    coda = CODAPromptLite(vit, 4, n_tasks=2, layers=(0, 1)).eval()
    for model, passes in ((m, 1), (l2p, 2), (coda, 2)):
        with torch.no_grad(), PassCounter(vit) as counter:
            model(x)
        assert counter.per_image(len(x)) == passes == model.backbone_passes_per_image
    # the routing records come from the prompted blocks of that single pass
    with torch.no_grad():
        m(x)
    assert len(m._records) == len(m.layers)


def test_router_loss_gradient_raises_selected_scores():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 2, 6, generator=g, requires_grad=True)
    selected = scores.detach().topk(2, -1).indices
    loss = router_loss(scores, selected, eps=0.4)
    loss.backward()
    grad_sel = scores.grad.gather(-1, selected)
    assert loss.item() > 0 and bool((grad_sel < 0).all())
    # the margin makes the loss larger than plain cross-entropy on the same targets
    plain = router_loss(scores.detach(), selected, eps=0.0)
    assert loss.item() > plain.item()


def _prototype_loop(keys, old, frequent, k):
    """The per-head formula of the official code, as a loop (the reference)."""
    total = keys.new_zeros(())
    for layer in range(keys.shape[0]):
        for head in range(keys.shape[1]):
            proto = old[layer, head][frequent[layer, head]]
            if len(proto) == 0:
                continue
            targets = (proto @ old[layer, head].t()).topk(k, -1).indices
            logits = proto @ keys[layer, head].t()
            for i in range(k):
                total = total + nn.functional.cross_entropy(logits, targets[:, i])
    return total


def test_prototype_loss_matches_reference_gradient_and_grows_when_routing_moves():
    g = torch.Generator().manual_seed(0)
    old = torch.rand(2, 2, 6, 4, generator=g, dtype=torch.float64)
    frequent = torch.rand(2, 2, 6, generator=g) > 0.5
    frequent[:, :, 0] = True
    keys = old.clone().requires_grad_(True)
    loss = prototype_loss(keys, old, frequent, 2)
    torch.testing.assert_close(loss, _prototype_loop(keys, old, frequent, 2))
    assert torch.autograd.gradcheck(lambda kk: prototype_loss(kk, old, frequent, 2), (keys,))
    # moving the keys so that old prototypes route elsewhere raises the loss
    moved = old.flip(2).clone()
    assert prototype_loss(moved, old, frequent, 2).item() > loss.item() + 1e-3
    # descending the loss from perturbed keys brings it down (the gradient restores routing)
    keys = (old + 0.3 * torch.randn(old.shape, generator=g, dtype=torch.float64)).requires_grad_()
    start = prototype_loss(keys, old, frequent, 2).item()
    opt = torch.optim.SGD([keys], lr=0.5)
    for _ in range(20):
        opt.zero_grad()
        prototype_loss(keys, old, frequent, 2).backward()
        opt.step()
    assert prototype_loss(keys, old, frequent, 2).item() < start


def test_prototype_loss_only_after_a_task_and_only_on_current_keys():
    m = _smope(alpha_router=0.0, alpha_proto=1.0).train()
    m.begin_task([0, 1])
    m(_x())
    assert float(m.prompt_loss()) == 0.0  # first task: no snapshot yet
    m.end_task(_x(8, seed=4))
    assert bool(m.frequent.any())
    torch.testing.assert_close(m.old_keys, m.prompt_keys.detach())
    m.begin_task([2, 3])
    m(_x())
    loss = m.prompt_loss()
    assert loss.item() > 0
    loss.backward()
    assert m.prompt_keys.grad is not None and m.prompt_keys.grad.abs().sum() > 0
    assert not m.old_keys.requires_grad


def test_frequency_counts_flags_and_snapshot_at_task_end_only():
    m = _smope()
    x = _x(10, seed=5)
    m.begin_task([0, 1])
    before = m.frequency.clone()
    m.train()
    m(x)
    torch.testing.assert_close(m.frequency, before)  # training batches do not count
    m.end_task(x)
    per_head = m.frequency.sum(-1)
    torch.testing.assert_close(per_head, torch.full_like(per_head, 10.0 * m.top_k))
    nonzero = m.frequency > 0
    mean = m.frequency.sum(-1, keepdim=True) / nonzero.sum(-1, keepdim=True)
    assert torch.equal(m.frequent, (m.frequency >= mean) & nonzero)
    assert 0.0 <= m.usage_entropy()[0] <= 1.0
    assert usage_entropy(torch.ones(1, 1, 4)) == pytest.approx(1.0)
    assert usage_entropy(torch.tensor([[[5.0, 0.0, 0.0, 0.0]]])) == pytest.approx(0.0)


def test_frozen_backbone_gets_no_gradient_only_prompts_and_head_do():
    vit = _vit()
    m = _smope(vit).train()
    m.begin_task([0, 1])
    reference = {k: v.clone() for k, v in vit.state_dict().items()}
    trainer = ContinualTrainer(m, epochs_per_task=1, batch_size=4, dense_warmup=0.0)
    x = _x(8)
    y = torch.tensor([0, 1] * 4)
    logits = m(x)
    (nn.functional.cross_entropy(logits, y) + m.prompt_loss()).backward()
    assert all(p.grad is None for p in vit.parameters())
    for p in (m.prompt_keys, m.prompt_values, m.head.weight):
        assert p.grad is not None and p.grad.abs().sum() > 0
    trainer.fit_task(x, y, [0, 1])
    for k, v in vit.state_dict().items():
        torch.testing.assert_close(v, reference[k])
    assert not vit.training


def test_class_masks_current_in_training_seen_at_evaluation():
    m = _smope()
    m.begin_task([0, 1])
    m.end_task()
    m.begin_task([2])
    x = _x(3)
    logits = m.train()(x)
    assert torch.isinf(logits[:, [0, 1, 3]]).all() and torch.isfinite(logits[:, 2]).all()
    logits = m.eval()(x)
    assert torch.isinf(logits[:, 3]).all() and torch.isfinite(logits[:, :3]).all()


def test_parameter_counts_the_papers_way():
    m = _smope()
    assert m.param_count() == 2 * 2 * 6 * 2 * 16  # layers x heads x experts x (k, v) x d_h
    assert m.param_count(include_head=True) == m.param_count() + 32 * 4 + 4
    # the paper's configuration: ViT-B widths, 6 layers, 12 heads, 25 experts, 200 classes
    torch.manual_seed(0)
    vitb = TinyViT(img_size=16, patch=16, dim=768, depth=6, heads=12, mlp_ratio=0.01)
    paper = SMoPE(vitb, 200, layers=range(6), n_experts=25, top_k=5)
    assert paper.param_count() == 230_400
    assert paper.param_count(include_head=True) - 200 == 384_000  # 0.38M (head bias aside)
    vit = _vit()
    l2p = L2PLite(vit, 4, layers=(0, 1), pool_size=10, length=5)
    assert l2p.param_count() == 2 * 10 * 10 * 32 + 10 * 32
    coda = CODAPromptLite(vit, 4, n_tasks=5, layers=(0, 1), per_task=4, length=4)
    assert coda.param_count() == 2 * 20 * (8 * 32 + 2 * 32)
    assert NCMClassifier(vit, 4).param_count() == 0


def test_coda_components_orthogonal_and_earlier_ones_frozen():
    vit = _vit()
    coda = CODAPromptLite(vit, 4, n_tasks=2, layers=(0,), per_task=3, length=2).train()
    coda.begin_task([0, 1])
    first = coda.component_keys.detach()[0, :3].clone()
    coda.end_task()
    coda.begin_task([2, 3])
    keys = coda.component_keys.detach()[0]
    torch.testing.assert_close(keys[:3], first)
    gram = keys @ keys.t()
    torch.testing.assert_close(gram[3:, :3], torch.zeros(3, 3), atol=1e-5, rtol=0)
    torch.testing.assert_close(gram[3:, 3:], torch.eye(3), atol=1e-5, rtol=0)
    logits = coda(_x(4))
    logits[:, 2].sum().backward()
    grad = coda.component_keys.grad[0]
    assert grad[:3].abs().sum() == 0 and grad[3:6].abs().sum() > 0


def test_ncm_is_exact_on_separable_class_means():
    vit = _vit()
    ncm = NCMClassifier(vit, 3)
    x = _x(9)
    y = torch.tensor([0, 1, 2] * 3)
    ncm.observe(x, y)
    feats = ncm.features(x)
    means = torch.stack([feats[y == c].mean(0) for c in range(3)])
    expected = (feats @ nn.functional.normalize(means, dim=1).t()).argmax(1)
    assert torch.equal(ncm(x).argmax(1), expected)


class _PlainAttention(nn.Module):
    """A protocol attention with explicit matmuls and its own ``scale`` (not TinyViT's)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads, self.scale = heads, 0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        a = ((q @ k.transpose(-2, -1)) * self.scale).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, d))


class _Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = _PlainAttention(dim, heads)

    def forward(self, x):
        return x + self.attn(x)


class _OtherViT(nn.Module):
    """A minimal protocol ViT (no class token: features are the mean patch token)."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.patch_embed = nn.Sequential(nn.Conv2d(3, dim, 8, 8), nn.Flatten(2))
        self.patch_embed.patch_size = 8
        self.pos_embed, self.cls_token, self.reg_token = None, None, None
        self.num_prefix_tokens, self.embed_dim = 0, dim
        self.blocks = nn.ModuleList([_Block(dim, heads), _Block(dim, heads)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):  # unused by the room
        raise AssertionError


class _Transpose(nn.Module):
    def forward(self, x):
        return x.transpose(1, 2)


def test_wraps_any_protocol_vit_and_names_a_missing_attribute():
    torch.manual_seed(0)
    vit = _OtherViT()
    vit.patch_embed.append(_Transpose())
    m = SMoPE(vit, 4, layers=(1,), n_experts=4, top_k=2)
    trainer = ContinualTrainer(m, epochs_per_task=1, batch_size=4)
    trainer.fit_task(_x(8), torch.tensor([0, 1] * 4), [0, 1])
    assert 0.0 <= trainer.evaluate(_x(4), torch.tensor([0, 1, 0, 1])) <= 1.0
    del vit.blocks[0].attn.num_heads
    with pytest.raises(TypeError, match="num_heads"):
        SMoPE(vit, 4, layers=(0,))
    with pytest.raises(TypeError, match="patch_embed"):
        SMoPE(nn.Linear(2, 2), 4)


def test_class_incremental_stream_and_forgetting():
    x = np.random.default_rng(0).random((24, 3, 8, 8)).astype(np.float32)
    y = np.arange(24) % 6
    tasks = class_incremental(x, y, 3, seed=0, X_test=x, y_test=y)
    groups = [set(t.classes.tolist()) for t in tasks]
    assert set().union(*groups) == set(range(6)) and sum(len(g) for g in groups) == 6
    for t in tasks:
        assert set(np.unique(t.y)) == set(t.classes) == set(np.unique(t.y_test))
    acc = np.array([[0.9, np.nan], [0.6, 0.8]])
    assert average_forgetting(acc) == pytest.approx(0.3)


def test_tiny_end_to_end_two_tasks_every_method():
    vit = _vit()
    x = _x(16, seed=7)
    y = np.arange(16) % 4
    tasks = class_incremental(x.numpy(), y, 2, seed=0, X_test=x.numpy(), y_test=y)
    for make in (
        lambda: _smope(vit),
        lambda: SharedPrefix(vit, 4, layers=(0, 1), n_experts=6),
        lambda: L2PLite(vit, 4, layers=(0,)),
        lambda: CODAPromptLite(vit, 4, n_tasks=2, layers=(0,)),
        lambda: DualPromptLite(vit, 4, n_tasks=2, g_layers=(0,), e_layers=(1, 2)),
        lambda: NCMClassifier(vit, 4),
    ):
        result = ContinualTrainer(make(), epochs_per_task=1, batch_size=4).run(tasks)
        assert 0.0 <= result.faa <= 1.0 and len(result.accuracy) == 2
        assert np.isnan(result.accuracy[0][1])


@pytest.mark.parametrize("name", ["faa-vs-prompts", "one-pass-fewer-params", "components"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("smope", name, scale="smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert contract_problems(record) == []
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
    if name == "one-pass-fewer-params":
        assert record["metrics"]["smope_passes_per_image"] == 1
        assert record["baseline"]["l2p_lite"]["passes_per_image"] == 2
        assert record["baseline"]["dual_prompt_lite"]["passes_per_image"] == 2
    if name == "faa-vs-prompts":
        assert "dual_prompt_lite" in record["baseline"]


def test_classifier_alignment_retrains_the_head_on_class_gaussians():
    m = _smope(classifier_alignment=True)
    trainer = ContinualTrainer(m, epochs_per_task=1, batch_size=4, ca_epochs=2)
    x, y = _x(8), torch.tensor([0, 1] * 4)
    trainer.fit_task(x, y, [0, 1])
    assert sorted(trainer.class_stats) == [0, 1]
    mean, cov = trainer.class_stats[0]
    assert mean.shape == (32,) and cov.shape == (32, 32)
    assert bool(torch.all(torch.linalg.eigvalsh(cov) > 0))


def test_deepcopy_of_a_wrapped_model_routes_through_the_copy():
    import copy

    m = _smope().eval()
    m.frequency.fill_(1.0)
    twin = copy.deepcopy(m)
    x = _x(3)
    with torch.no_grad():
        torch.testing.assert_close(twin(x), m(x))
        twin.prompt_values.add_(1.0)
        assert (twin(x) - m(x)).abs().max() > 1e-4
