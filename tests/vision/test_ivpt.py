"""Tests of the IVPT room: shapes and normalisation, prompt counts and token restoration,
gradient paths (frozen backbone, detached pooling, consistency reaching the assignment), the
aggregation and loss identities, equivariance on a colour-only toy model, the cached prefix,
the baselines, the metrics and the claims at smoke scale."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.claims import contract_problems, run_claim
from iclr26.models.vision import TinyViT
from iclr26.vision.ivpt import (
    IVPT,
    IVPTLoss,
    PartPrototypeHead,
    VPTDeep,
    aggregate_maps,
    consistency_loss,
    consistency_rate,
    enforced_presence_loss,
    equivariance_loss,
    evaluate,
    fit,
    invert_affine,
    orthogonality_loss,
    pixel_entropy_loss,
    predict_parts,
    presence_loss,
    prototype_maps,
    region_features,
    total_variation_loss,
)

N_PRO = (9, 7, 5)


def _vit(seed=0, depth=3):
    torch.manual_seed(seed)
    return TinyViT(img_size=32, patch=8, dim=32, depth=depth, heads=2).eval()


def _x(n=4, seed=1, size=32):
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _ivpt(vit=None, **kw):
    torch.manual_seed(2)
    return IVPT(vit if vit is not None else _vit(), 6, n_pro=N_PRO, **kw)


def test_shapes_and_final_maps_are_distributions():
    m = _ivpt().eval()
    out = m(_x())
    assert out["logits"].shape == (4, 6)
    assert out["part_maps_final"].shape == (4, 5, 4, 4)
    torch.testing.assert_close(out["part_maps_final"].sum(1), torch.ones(4, 4, 4))
    assert [t.shape[1] for t in out["part_maps_layers"]] == [9, 7, 5]
    assert [t.shape for t in out["aggregated_maps"]] == [(4, 5, 4, 4)] * 2
    assert [t.shape for t in out["assignments"]] == [(4, 8, 4), (4, 6, 4)]
    assert out["part_features"].shape == (4, 32, 5)
    for agg in out["aggregated_maps"]:  # Q rows are distributions, so A_hat is one too
        torch.testing.assert_close(agg.sum(1), torch.ones(4, 4, 4))


def test_prompt_count_and_token_length_restored_per_block():
    vit = _vit()
    m = _ivpt(vit).eval()
    seen = []
    hooks = [
        b.register_forward_pre_hook(lambda mod, a: seen.append(a[0].shape[1])) for b in vit.blocks
    ]
    try:
        out = m(_x())
    finally:
        for h in hooks:
            h.remove()
    n_tok = 1 + 16
    assert seen == [n_tok, n_tok + 4, n_tok + 4]  # block 0 unprompted; N = 4 prompts, not 8
    assert all(p.shape == (4, 4, 32) for p in out["prompts"])


def test_frozen_backbone_no_grad_and_trainable_parts_get_grad():
    vit = _vit()
    m = _ivpt(vit).train()
    x = _x()
    out = m(x)
    out_t = m(x)
    theta = torch.eye(2, 3).expand(4, 2, 3).clone()
    loss, parts = IVPTLoss()(out, torch.tensor([0, 1, 2, 3]), out_t, theta)
    loss.backward()
    assert all(p.grad is None for p in vit.parameters())
    for name in ("prototypes", "prior_bias", "part_classifier", "prompt_proj", "head"):
        grads = [p.grad for n, p in m.named_parameters() if n.startswith(name)]
        assert grads and all(g is not None and g.abs().sum() > 0 for g in grads), name
    assert set(parts) >= {"cls", "consistency", "equivariance", "presence", "entropy"}


def test_classification_does_not_reach_fine_prototypes_or_assignment():
    """Pitfall: region features use detached maps and detached Q in the prompts, so the
    classifier's gradient reaches the prompt projection but not P_i (i < L) or C_i; the
    consistency loss does reach C_i through Q in the aggregated maps."""
    m = _ivpt().train()
    out = m(_x())
    F.cross_entropy(out["logits"], torch.tensor([0, 1, 2, 3])).backward()
    assert m.prompt_proj[0].weight.grad.abs().sum() > 0
    for p in (m.prototypes[0], m.prototypes[1], *m.part_classifier[0].parameters()):
        assert p.grad is None or p.grad.abs().sum() == 0
    m.zero_grad(set_to_none=True)
    out = m(_x())
    consistency_loss(out["aggregated_maps"][0], out["part_maps_final"]).backward()
    assert m.part_classifier[0].weight.grad.abs().sum() > 0
    assert m.prototypes[0].grad.abs().sum() > 0
    assert m.prompt_proj[0].weight.grad is None


def test_eval_is_deterministic_and_explain_shapes():
    m = _ivpt().eval()
    x = _x()
    a, b = m(x)["logits"], m(x)["logits"]
    torch.testing.assert_close(a, b)
    m.train()
    ex = m.explain(x)
    assert m.training  # restored
    assert len(ex["layers"]) == 2
    layer = ex["layers"][0]
    assert layer["block"] == 1 and layer["prompt_regions"].shape == (4, 4, 4, 4)
    assert layer["assignment"].shape == (4, 8, 4) and layer["region_ids"].shape == (4, 4, 4)
    assert ex["part_ids"].shape == (4, 4, 4)


def test_cached_prefix_equals_the_full_pass():
    m = _ivpt().eval()
    x = _x()
    torch.testing.assert_close(m(x)["logits"], m.forward_from(m.embed(x))["logits"])


def test_prototype_maps_match_the_definition():
    g = torch.Generator().manual_seed(0)
    feats, protos, bias = (
        torch.randn(2, 3, 2, 2, generator=g),
        torch.randn(4, 3, generator=g),
        torch.randn(4, 2, 2, generator=g),
    )
    maps = prototype_maps(feats, protos, bias)
    x = feats.permute(0, 2, 3, 1)[..., None, :]  # (B, H, W, 1, D)
    dist = ((x - protos) ** 2).sum(-1).permute(0, 3, 1, 2)
    torch.testing.assert_close(maps, torch.softmax(bias - dist, 1))


def test_region_features_hard_weighted_and_empty_regions():
    maps = torch.tensor([[0.9, 0.6], [0.1, 0.4], [0.0, 0.0]]).reshape(1, 3, 1, 2)
    feats = torch.tensor([[1.0, 3.0]]).reshape(1, 1, 1, 2)
    pooled, counts = region_features(maps, feats)
    torch.testing.assert_close(counts, torch.tensor([[1.5, 0.0, 0.0]]))
    torch.testing.assert_close(pooled[0, :, 0], torch.tensor([(0.9 + 1.8) / 1.5, 0.0, 0.0]))


def test_aggregation_with_identity_assignment_is_the_identity():
    maps = torch.softmax(torch.randn(2, 5, 3, 3), 1)
    eye = torch.eye(4).expand(2, 4, 4)
    torch.testing.assert_close(aggregate_maps(maps, eye), maps)


def test_consistency_loss_zero_when_equal_and_nonnegative():
    a = torch.softmax(torch.randn(3, 5, 4, 4), 1)
    b = torch.softmax(torch.randn(3, 5, 4, 4), 1)
    assert consistency_loss(a, a).abs() < 1e-6
    assert consistency_loss(a, b) > 0
    kl = F.kl_div(a.log(), b, reduction="none").sum(1).mean()
    torch.testing.assert_close(consistency_loss(a, b), kl, atol=1e-5, rtol=1e-4)


def _rot90_theta(n):
    """Sampling matrices of a 90-degree rotation (output -> input coordinates)."""
    return torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]).expand(n, 2, 3).clone()


def test_equivariance_zero_for_identity_and_for_a_colour_only_model():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 3, 8, 8, generator=g)
    protos, bias = torch.rand(4, 3, generator=g), torch.zeros(4, 8, 8)
    maps = prototype_maps(x * 4, protos * 4, bias)
    eye = torch.eye(2, 3).expand(2, 2, 3).clone()
    assert equivariance_loss(maps, maps, eye).abs() < 1e-6
    theta = _rot90_theta(2)
    grid = F.affine_grid(theta, tuple(x.shape), align_corners=False)
    x_rot = F.grid_sample(x, grid, align_corners=False)  # exact on pixel centres
    maps_rot = prototype_maps(x_rot * 4, protos * 4, bias)
    assert equivariance_loss(maps, maps_rot, theta) < 1e-5
    assert equivariance_loss(maps, maps, theta) > 1e-3  # unrotated maps do not match


def test_invert_affine_composes_to_identity():
    theta = torch.tensor([[[0.5, -0.2, 0.1], [0.3, 1.2, -0.4]]])
    inv = invert_affine(theta)
    full = torch.cat([theta, torch.tensor([[[0.0, 0.0, 1.0]]])], 1)
    full_inv = torch.cat([inv, torch.tensor([[[0.0, 0.0, 1.0]]])], 1)
    torch.testing.assert_close(full @ full_inv, torch.eye(3)[None])


def test_regulariser_special_cases():
    onehot = F.one_hot(torch.zeros(2, 4, 4, dtype=torch.long), 3).permute(0, 3, 1, 2).float()
    assert pixel_entropy_loss(onehot) < 1e-4
    assert total_variation_loss(onehot) == 0
    assert presence_loss(onehot[:, :1]) < 1e-6  # map 0 fully present
    assert presence_loss(onehot[:, 1:2]) == 1.0  # map 1 absent everywhere
    bg = torch.zeros(2, 2, 6, 6)
    bg[:, 1] = 1.0
    assert enforced_presence_loss(bg) < 1e-6  # background reaches the corners
    eye = torch.eye(3).expand(2, 3, 3)
    assert orthogonality_loss(eye) < 1e-8


def test_vpt_deep_prompts_and_attention_maps():
    vit = _vit()
    m = VPTDeep(vit, 6, n_prompts=4, layers=2).eval()
    seen = []
    hooks = [
        b.register_forward_pre_hook(lambda mod, a: seen.append(a[0].shape[1])) for b in vit.blocks
    ]
    try:
        out = m(_x(), return_attention=True)
    finally:
        for h in hooks:
            h.remove()
    assert seen == [17, 21, 21]
    assert out["logits"].shape == (4, 6)
    maps = out["part_maps"]
    assert maps.shape == (4, 4, 4, 4)
    assert (maps >= 0).all() and (maps.sum((2, 3)) <= 1 + 1e-5).all()
    assert m.param_count() == 2 * 4 * 32 + 32 * 6 + 6


def test_part_prototype_head_has_no_prompts():
    vit = _vit()
    m = PartPrototypeHead(vit, 6, n_parts=3).eval()
    out = m(_x())
    assert out["aggregated_maps"] == [] and out["prompts"] == []
    assert out["part_maps_final"].shape == (4, 4, 4, 4)
    loss, parts = IVPTLoss(w_eq=0)(out, torch.tensor([0, 1, 2, 3]))
    assert "consistency" not in parts and torch.isfinite(loss)


def test_tiny_end_to_end_fit_and_evaluate():
    from iclr26.data.vision import make_part_objects

    X, y, parts = make_part_objects(16, 4, 32, seed=0)
    torch.manual_seed(0)
    m = IVPT(_vit(), 4, n_pro=N_PRO)
    res = fit(m, X, y, epochs=1, batch_size=4, lr=1e-3, seed=0)  # 4 steps
    res2 = fit(PartPrototypeHead(_vit(), 4), X, y, epochs=1, batch_size=16, seed=0)
    assert res.steps == 4 and res2.steps == 1
    assert all(math.isfinite(v) for v in res.losses + list(res.terms[-1].values()))
    ev = evaluate(m, X, y, parts)
    assert 0 <= ev["accuracy"] <= 100 and ev["part_ids"].shape == (16, 32, 32)
    assert ev["part_ids"].max() < 4
    ev_vpt = evaluate(VPTDeep(_vit(), 4), X, y, parts)
    assert -100 <= ev_vpt["ari"] <= 100


def test_consistency_rate_and_predict_parts():
    gt = np.zeros((3, 4, 4), np.int64)
    gt[:, :2, :2], gt[:, 2:, 2:] = 1, 2
    pred = np.where(gt == 2, 1, 0)
    assert consistency_rate(pred, gt, 2) == 1.0  # part 0 -> GT 1, part 1 -> GT 2
    assert consistency_rate(np.zeros_like(gt), gt, 2, min_share=0.6) == 0.0  # half/half
    maps = torch.zeros(1, 2, 2, 2)
    maps[0, 1, :, 1] = 1.0
    ids = predict_parts(maps, (4, 4))
    assert ids.shape == (1, 4, 4) and ids[0, 0, 3] == 1 and ids[0, 0, 0] == 0


@pytest.mark.parametrize("name", ["parts-and-accuracy", "step-cost"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("ivpt", name, scale="smoke", out_dir=tmp_path)
    assert record["verdict"] != "error", record.get("traceback")
    assert contract_problems(record) == []
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
