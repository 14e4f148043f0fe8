"""Tests of the SRL room: slot attention (softmax over slots, permutation equivariance), the
decoder masks, the stop-gradients of the two contrastive losses, the redundancy regularizer's
choice, the schedule gates, the mechanism scores, a tiny end-to-end run and the claims at
smoke scale."""

import math

import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.metrics.vision import fg_ari, mbo
from iclr26.models.vision import TinyViT
from iclr26.vision.srl import (
    MLPDecoder,
    SlotAttention,
    SlotContrastLoss,
    SlotVideoModel,
    SRLLoss,
    boundary_sharpness,
    decoder_deblur_loss,
    encoder_denoise_loss,
    evaluate_discovery,
    lr_factor,
    mask_noise,
    redundant_slots,
    slot_contrast_loss,
    slot_redundancy_loss,
    train_slot_model,
)


def _backbone():
    torch.manual_seed(0)
    return TinyViT(img_size=32, patch=8, dim=16, depth=1, heads=2).eval()


def _model(srl=True, k=3):
    torch.manual_seed(1)
    return SlotVideoModel(_backbone(), 16, n_slots=k, slot_dim=8, decoder_hidden=(16,),
                          predictor_heads=2, srl_heads=srl)  # fmt: skip


def _video(b=2, t=4, seed=0):
    return torch.rand(b, t, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def test_slot_attention_is_softmax_over_slots_and_permutation_equivariant():
    torch.manual_seed(0)
    sa = SlotAttention(6, 6, n_iters=3)
    inputs, slots = torch.randn(2, 10, 6), torch.randn(2, 4, 6)
    out = sa(slots, inputs)
    assert torch.allclose(out["masks"].sum(1), torch.ones(2, 10), atol=1e-6)
    assert torch.allclose(out["attn_patches"].sum(-1), torch.ones(2, 4), atol=1e-5)
    perm = torch.tensor([2, 0, 3, 1])
    permuted = sa(slots[:, perm], inputs)
    assert torch.allclose(permuted["slots"], out["slots"][:, perm], atol=1e-5)
    assert torch.allclose(permuted["masks"], out["masks"][:, perm], atol=1e-5)


def test_decoder_masks_sum_to_one_and_single_slot_reconstructs_its_features():
    torch.manual_seed(0)
    dec = MLPDecoder(8, 5, (12,), n_patches=9)
    out = dec(torch.randn(2, 3, 4, 8))
    assert out["masks"].shape == (2, 3, 4, 9) and out["recon"].shape == (2, 3, 9, 5)
    assert torch.allclose(out["masks"].sum(2), torch.ones(2, 3, 9), atol=1e-6)
    one = dec(torch.randn(2, 1, 8))
    assert torch.allclose(one["masks"], torch.ones_like(one["masks"]))
    assert torch.allclose(one["recon"], one["slot_feats"][:, 0], atol=1e-6)


def test_model_outputs_and_frozen_backbone():
    model = _model()
    out = model(_video())
    b, t, k, n, d = 2, 4, 3, 16, 16
    assert out["feats"].shape == (b, t, n, d) and out["recon"].shape == (b, t, n, d)
    assert out["slots"].shape == (b, t, k, 8)
    for key in ("enc_masks", "dec_masks", "enc_attn_patches"):
        assert out[key].shape == (b, t, k, n)
    assert torch.allclose(out["enc_masks"].sum(2), torch.ones(b, t, n), atol=1e-5)
    assert out["proj_recon"].shape == out["proj_feats"].shape == (b, t, n, 8)
    assert not out["proj_feats"].requires_grad and not out["feats"].requires_grad
    assert all(not p.requires_grad for p in model.backbone.parameters())
    seg = model.segment(_video(), size=(20, 24))
    assert seg.shape == (2, 4, 20, 24) and seg.dtype == torch.int64 and seg.max() < k


def test_base_and_srl_models_share_weights_for_a_seed():
    base, srl = _model(srl=False), _model(srl=True)
    sb, ss = base.state_dict(), srl.state_dict()
    assert set(ss) - set(sb) == {"proj_dec.weight", "proj_enc.weight"}
    assert all(torch.equal(sb[k], ss[k]) for k in sb)


def test_decoder_loss_stop_gradient_and_flow_through_reconstruction_only():
    model = _model()
    out = model(_video())
    loss = decoder_deblur_loss(out["proj_recon"], out["proj_feats"], out["enc_masks"], 4)
    p1 = model.proj_dec.weight
    grad_p1, grad_rec = torch.autograd.grad(loss, (p1, out["recon"]), retain_graph=True)
    assert grad_rec.abs().sum() > 0 and grad_p1.abs().sum() > 0
    # the same gradient on P1 as a graph where only the reconstruction branch exists
    q = torch.nn.functional.linear(out["recon"].detach(), p1)
    ref = decoder_deblur_loss(q, out["proj_feats"], out["enc_masks"], 4)
    (grad_ref,) = torch.autograd.grad(ref, p1)
    assert torch.allclose(grad_p1, grad_ref, atol=1e-6)
    # no gradient reaches the backbone or the encoder's masks (semi-positives are hard labels)
    feats = out["feats"].clone().requires_grad_(True)
    masks = out["enc_masks"].detach().clone().requires_grad_(True)
    loss = decoder_deblur_loss(out["proj_recon"], model.proj_dec(feats), masks, 4)
    g = torch.autograd.grad(loss, (feats, masks), allow_unused=True)
    assert g[0] is None and g[1] is None


def test_encoder_loss_uses_frozen_similarity_and_decoder_labels_without_gradient():
    model = _model()
    out = model(_video())
    feats = out["feats"].clone().requires_grad_(True)
    masks = out["dec_masks"].detach().clone().requires_grad_(True)
    loss = encoder_denoise_loss(out["proj_x"], feats, masks, topk=2, group_frames=2)
    g_x, g_f, g_m = torch.autograd.grad(loss, (out["x"], feats, masks), allow_unused=True)
    assert g_f is None and g_m is None and g_x.abs().sum() > 0
    assert model.backbone.patch_embed.proj.weight.grad is None


def test_encoder_loss_is_lower_for_features_that_agree_with_their_positives():
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(1, 2, 8, 4, generator=gen)
    masks = torch.zeros(1, 2, 2, 8)
    masks[:, :, 0, :4] = 1
    masks[:, :, 1, 4:] = 1
    aligned = torch.nn.functional.pad(feats, (0, 0))  # u equal to the backbone features
    shuffled = feats[:, :, torch.randperm(8, generator=gen)]
    good = encoder_denoise_loss(aligned, feats, masks, topk=2, group_frames=2)
    bad = encoder_denoise_loss(shuffled, feats, masks, topk=2, group_frames=2)
    assert good < bad


def test_slot_contrast_positives_are_adjacent_frames_of_the_same_slot():
    slots = torch.randn(2, 3, 4, 6)
    tracked = slots[:, :1].expand(-1, 3, -1, -1)  # every slot constant over time
    assert slot_contrast_loss(tracked) < slot_contrast_loss(slots)
    swapped = tracked.clone()
    swapped[:, 1] = tracked[:, 1, [1, 0, 3, 2]]  # identities swapped at the middle frame
    assert slot_contrast_loss(tracked) < slot_contrast_loss(swapped)


def test_redundancy_picks_the_flatter_duplicate_and_is_zero_for_uniform_attention():
    b, t, k, n = 1, 2, 4, 6
    slots = torch.randn(b, t, k, 5)
    slots[:, :, 2] = slots[:, :, 0]  # slots 0 and 2 are duplicates
    attn = torch.softmax(torch.randn(b, t, k, n) * 3, -1)
    attn[:, :, 2] = torch.softmax(torch.randn(b, t, n) * 0.1, -1)  # slot 2 the flatter one
    chosen = redundant_slots(attn, slots, n_pairs=1)
    assert chosen.tolist() == [[2]]
    uniform = torch.full((b, t, k, n), 1.0 / n)
    assert slot_redundancy_loss(uniform, slots, n_pairs=2).abs() < 1e-6
    assert slot_redundancy_loss(attn, slots, n_pairs=1) > 0
    # more pairs than slots: the chosen ones are distinct and the rest is -1
    many = redundant_slots(attn, slots, n_pairs=5)[0].tolist()
    assert many[-2:] == [-1, -1] and len(set(many[:3])) == 3


def test_schedule_gates():
    model = _model()
    out = model(_video())
    crit = SRLLoss(topk=2, reg_pairs=1)
    _, start = crit(out, step=0, total_steps=100)
    assert set(start) == {"rec", "sc", "reg"}
    _, middle = crit(out, step=50, total_steps=100)
    assert set(middle) == {"rec", "sc", "dec", "enc"}
    _, edge = crit(out, step=20, total_steps=100)  # the synergy starts after 20 %
    assert set(edge) == {"rec", "sc"}
    loss, base = SlotContrastLoss()(out)
    assert set(base) == {"rec", "sc"}
    assert math.isclose(float(loss.detach()), base["rec"] + 0.25 * base["sc"], rel_tol=1e-5)


def test_srl_loss_needs_the_projectors():
    out = _model(srl=False)(_video())
    with pytest.raises(KeyError, match="srl_heads"):
        SRLLoss(topk=2)(out, step=50, total_steps=100)


def test_lr_schedule():
    assert lr_factor(0, 100) == pytest.approx(0.1)
    assert lr_factor(9, 100) == pytest.approx(1.0)
    assert lr_factor(10, 100) == pytest.approx(1.0)
    assert lr_factor(100, 100) == pytest.approx(0.5)


def test_metrics_special_cases_on_videos():
    gt = np.zeros((1, 2, 8, 8), np.int64)
    gt[:, :, :4, :4], gt[:, :, 4:, 4:] = 1, 2
    relabeled = np.where(gt == 1, 7, np.where(gt == 2, 3, 5))
    assert fg_ari(relabeled, gt, video=True) == pytest.approx(1.0)
    assert mbo(relabeled, gt) == pytest.approx(1.0)
    merged = np.where(gt > 0, 1, 0)
    assert mbo(merged, gt) < 1.0


def test_mechanism_scores():
    labels = torch.zeros(1, 6, 6, dtype=torch.long)
    labels[:, :, 3:] = 1
    assert mask_noise(labels) == 0.0
    noisy = labels.clone()
    noisy[0, 2, 1] = 1
    assert mask_noise(noisy) == pytest.approx(1 / 36)
    gt = labels.clone()
    sharp = torch.nn.functional.one_hot(labels, 2).permute(0, 3, 1, 2).float()
    blurry = torch.nn.functional.avg_pool2d(sharp, 5, 1, 2, count_include_pad=False)
    assert boundary_sharpness(sharp, gt) > boundary_sharpness(blurry, gt) > 1.0


def test_tiny_end_to_end():
    model = _model()
    video = torch.rand(8, 2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    feats = model.extract(video)
    hist = train_slot_model(model, feats, SRLLoss(topk=2, group_frames=2, reg_pairs=1), 10, 4)
    assert len(hist["total"]) == 10 and np.isfinite(hist["total"]).all()
    assert np.isfinite(hist["reg"][0]) and np.isfinite(hist["dec"][-1])
    inst = np.zeros((8, 2, 32, 32), np.int64)
    inst[:, :, 8:20, 8:20] = 1
    scores = evaluate_discovery(model, feats, inst)
    assert 0.0 <= scores["mbo"] <= 100.0 and np.isfinite(scores["fg_ari"])


@pytest.mark.parametrize("name", ["object-discovery", "step-overhead"])
def test_claims_smoke(name, tmp_path):
    record = run_claim("srl", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive"), record
    assert contract_problems(record) == []
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])
