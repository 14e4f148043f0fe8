"""Bad-input cases of the SRL room (tiny tensors; each call fails at the public boundary)."""

import numpy as np
import torch

from iclr26.models.vision import TinyViT
from iclr26.vision.srl import (
    MLPDecoder,
    SlotAttention,
    SlotContrastLoss,
    SlotVideoModel,
    SRLLoss,
    backbone_tokens,
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

NAN, INF = float("nan"), float("inf")
torch.manual_seed(0)
VIT = TinyViT(img_size=16, patch=8, dim=8, depth=1, heads=2).eval()
MODEL = SlotVideoModel(VIT, 8, n_slots=2, slot_dim=4, decoder_hidden=(4,), predictor_heads=2)
BASE = SlotVideoModel(VIT, 8, n_slots=2, slot_dim=4, decoder_hidden=(4,), predictor_heads=2,
                      srl_heads=False)  # fmt: skip
VIDEO = torch.rand(1, 2, 3, 16, 16)
ONE_FRAME = torch.rand(1, 1, 3, 16, 16)
VIDEO_NAN = VIDEO.clone()
VIDEO_NAN[0, 1, 0, 0, 0] = NAN
VIDEO_GREY = torch.rand(1, 2, 1, 16, 16)
FEATS = torch.randn(2, 2, 4, 8)
FEATS_INF = FEATS.clone()
FEATS_INF[0, 0, 0, 0] = INF
FEATS_ONE = torch.randn(2, 1, 4, 8)
FEATS_WIDE = torch.randn(2, 2, 4, 9)
OUT = MODEL.forward_features(FEATS)
OUT_BASE = BASE.forward_features(FEATS)
P = torch.randn(1, 4, 4, 3)  # (B, T, N, C)
MASKS = torch.softmax(torch.randn(1, 4, 2, 4), 2)
P_NAN = P.clone()
P_NAN[0, 0, 0, 0] = NAN
SLOTS = torch.randn(1, 3, 2, 4)
ATTN = torch.softmax(torch.randn(1, 3, 2, 5), -1)
GT = np.zeros((2, 2, 16, 16), np.int64)
GT[:, :, 4:10, 4:10] = 1
SOFT = torch.softmax(torch.randn(2, 3, 6, 6), 1)
LAB = torch.zeros(2, 6, 6, dtype=torch.long)

CASES = [
    # the model
    ("SlotVideoModel", "type", lambda: SlotVideoModel("vit", 8), TypeError, "backbone"),
    ("SlotVideoModel", "range", lambda: SlotVideoModel(VIT, 0), ValueError, "feat_dim"),
    ("SlotVideoModel", "range", lambda: SlotVideoModel(VIT, 8, n_slots=0), ValueError, "n_slots"),
    (
        "SlotVideoModel",
        "range",
        lambda: SlotVideoModel(VIT, 8, slot_dim=6, predictor_heads=4),
        ValueError,
        "slot_dim",
    ),
    ("SlotVideoModel", "range", lambda: SlotVideoModel(VIT, 8, n_iters=0), ValueError, "n_iters"),
    (
        "SlotVideoModel",
        "range",
        lambda: SlotVideoModel(VIT, 8, first_iters=NAN),
        (ValueError, TypeError),
        "first_iters",
    ),
    (
        "SlotVideoModel",
        "type",
        lambda: SlotVideoModel(VIT, 8, decoder_hidden=()),
        TypeError,
        "decoder_hidden",
    ),
    (
        "SlotVideoModel",
        "range",
        lambda: SlotVideoModel(VIT, 8, decoder_hidden=(0,)),
        ValueError,
        "decoder_hidden",
    ),
    (
        "SlotVideoModel",
        "other",
        lambda: SlotVideoModel(torch.nn.Identity(), 8),
        ValueError,
        "n_patches",
    ),
    (
        "SlotVideoModel",
        "type",
        lambda: SlotVideoModel(VIT, 8, srl_heads="yes"),
        TypeError,
        "srl_heads",
    ),
    ("SlotVideoModel", "shape", lambda: MODEL(ONE_FRAME), ValueError, "at least 2 frames"),
    ("SlotVideoModel", "nan", lambda: MODEL(VIDEO_NAN), ValueError, "video"),
    ("SlotVideoModel", "shape", lambda: MODEL(VIDEO_GREY), ValueError, "video"),
    ("SlotVideoModel", "shape", lambda: MODEL(VIDEO[0]), ValueError, "video"),
    ("SlotVideoModel", "type", lambda: MODEL(VIDEO.numpy()), TypeError, "video"),
    ("SlotVideoModel", "empty", lambda: MODEL(VIDEO[:0]), ValueError, "video"),
    (
        "SlotVideoModel",
        "shape",
        lambda: MODEL(torch.rand(1, 2, 3, 24, 24)),
        ValueError,
        "n_patches",
    ),
    ("SlotVideoModel", "shape", lambda: MODEL.forward_features(FEATS_ONE), ValueError, "feats"),
    ("SlotVideoModel", "shape", lambda: MODEL.forward_features(FEATS_WIDE), ValueError, "feats"),
    ("SlotVideoModel", "inf", lambda: MODEL.forward_features(FEATS_INF), ValueError, "feats"),
    ("SlotVideoModel", "dtype", lambda: MODEL.forward_features(FEATS.long()), TypeError, "feats"),
    ("SlotVideoModel", "range", lambda: MODEL.segment(VIDEO, size=(0, 4)), ValueError, "size"),
    ("SlotVideoModel", "type", lambda: MODEL.segment(VIDEO, size=8), TypeError, "size"),
    ("SlotVideoModel", "range", lambda: MODEL.segment(VIDEO, which="slots"), ValueError, "which"),
    ("SlotVideoModel", "shape", lambda: MODEL.segment(ONE_FRAME), ValueError, "at least 2"),
    # building blocks
    ("SlotAttention", "range", lambda: SlotAttention(0, 4), ValueError, "inp_dim"),
    ("SlotAttention", "range", lambda: SlotAttention(4, 4, eps=NAN), ValueError, "eps"),
    (
        "SlotAttention",
        "shape",
        lambda: SlotAttention(4, 4)(torch.randn(1, 2, 4), torch.randn(1, 3, 5)),
        ValueError,
        "inputs",
    ),
    (
        "SlotAttention",
        "nan",
        lambda: SlotAttention(4, 4)(torch.full((1, 2, 4), NAN), torch.randn(1, 3, 4)),
        ValueError,
        "slots",
    ),
    ("MLPDecoder", "range", lambda: MLPDecoder(4, 3, (4,), n_patches=0), ValueError, "n_patches"),
    (
        "MLPDecoder",
        "nan",
        lambda: MLPDecoder(4, 3, (4,), 2)(torch.full((1, 2, 4), NAN)),
        ValueError,
        "slots",
    ),
    ("backbone_tokens", "shape", lambda: backbone_tokens(VIT, VIDEO), ValueError, "images"),
    (
        "backbone_tokens",
        "type",
        lambda: backbone_tokens(torch.nn.Flatten(), VIDEO[0]),
        TypeError,
        "backbone",
    ),
    # losses
    (
        "slot_contrast_loss",
        "shape",
        lambda: slot_contrast_loss(SLOTS[:, :1]),
        ValueError,
        "at least 2 frames",
    ),
    ("slot_contrast_loss", "nan", lambda: slot_contrast_loss(SLOTS * NAN), ValueError, "slots"),
    (
        "slot_contrast_loss",
        "range",
        lambda: slot_contrast_loss(SLOTS, temperature=0),
        ValueError,
        "temperature",
    ),
    (
        "slot_contrast_loss",
        "range",
        lambda: slot_contrast_loss(SLOTS, base_temperature=NAN),
        ValueError,
        "base_temperature",
    ),
    (
        "decoder_deblur_loss",
        "shape",
        lambda: decoder_deblur_loss(P[:, :3], P[:, :3], MASKS[:, :3], group_frames=2),
        ValueError,
        "group_frames",
    ),
    (
        "decoder_deblur_loss",
        "nan",
        lambda: decoder_deblur_loss(P_NAN, P, MASKS, 2),
        ValueError,
        "proj_recon",
    ),
    (
        "decoder_deblur_loss",
        "shape",
        lambda: decoder_deblur_loss(P, P, MASKS[..., :3], 2),
        ValueError,
        "enc_masks",
    ),
    (
        "decoder_deblur_loss",
        "shape",
        lambda: decoder_deblur_loss(P, P[..., :2], MASKS, 2),
        ValueError,
        "channel",
    ),
    (
        "decoder_deblur_loss",
        "range",
        lambda: decoder_deblur_loss(P, P, MASKS, 0),
        ValueError,
        "group_frames",
    ),
    (
        "encoder_denoise_loss",
        "range",
        lambda: encoder_denoise_loss(P, P, MASKS, topk=5, group_frames=2),
        ValueError,
        "topk",
    ),
    (
        "encoder_denoise_loss",
        "range",
        lambda: encoder_denoise_loss(P, P, MASKS, topk=0),
        ValueError,
        "topk",
    ),
    (
        "encoder_denoise_loss",
        "shape",
        lambda: encoder_denoise_loss(P, P[:, :2], MASKS, 2, 2),
        ValueError,
        "feats",
    ),
    (
        "encoder_denoise_loss",
        "nan",
        lambda: encoder_denoise_loss(P, P_NAN, MASKS, 2, 2),
        ValueError,
        "feats",
    ),
    (
        "slot_redundancy_loss",
        "range",
        lambda: slot_redundancy_loss(ATTN, SLOTS, n_pairs=0),
        ValueError,
        "n_pairs",
    ),
    (
        "slot_redundancy_loss",
        "range",
        lambda: slot_redundancy_loss(-ATTN, SLOTS),
        ValueError,
        "attn_patches",
    ),
    (
        "slot_redundancy_loss",
        "shape",
        lambda: slot_redundancy_loss(ATTN, SLOTS[:, :2]),
        ValueError,
        "slots",
    ),
    ("redundant_slots", "range", lambda: redundant_slots(ATTN, SLOTS, 0), ValueError, "n_pairs"),
    (
        "redundant_slots",
        "nan",
        lambda: redundant_slots(ATTN * NAN, SLOTS, 1),
        ValueError,
        "attn_patches",
    ),
    ("SlotContrastLoss", "range", lambda: SlotContrastLoss(w_rec=-1), ValueError, "w_rec"),
    ("SlotContrastLoss", "range", lambda: SlotContrastLoss(tau=0), ValueError, "tau"),
    (
        "SlotContrastLoss",
        "range",
        lambda: SlotContrastLoss(w_rec=0, w_sc=0)(OUT),
        ValueError,
        "no loss term",
    ),
    ("SlotContrastLoss", "type", lambda: SlotContrastLoss()(FEATS), TypeError, "out"),
    (
        "SlotContrastLoss",
        "range",
        lambda: SlotContrastLoss()(OUT, step=5, total_steps=4),
        ValueError,
        "step",
    ),
    (
        "SlotContrastLoss",
        "other",
        lambda: SlotContrastLoss()(OUT, step=1),
        ValueError,
        "total_steps",
    ),
    ("SRLLoss", "range", lambda: SRLLoss(w_dec=NAN), ValueError, "w_dec"),
    ("SRLLoss", "range", lambda: SRLLoss(reg_until=1.5), ValueError, "reg_until"),
    ("SRLLoss", "range", lambda: SRLLoss(synergy_from=-0.1), ValueError, "synergy_from"),
    ("SRLLoss", "range", lambda: SRLLoss(group_frames=0), ValueError, "group_frames"),
    (
        "SRLLoss",
        "other",
        lambda: SRLLoss(topk=2, group_frames=2)(OUT_BASE, step=9, total_steps=10),
        KeyError,
        "srl_heads",
    ),
    (
        "SRLLoss",
        "shape",
        lambda: SRLLoss(topk=2, group_frames=4)(OUT, step=9, total_steps=10),
        ValueError,
        "group_frames",
    ),
    (
        "SRLLoss",
        "range",
        lambda: SRLLoss(topk=8, group_frames=2)(OUT, step=9, total_steps=10),
        ValueError,
        "topk",
    ),
    # training and evaluation
    ("lr_factor", "range", lambda: lr_factor(-1, 10), ValueError, "step"),
    ("lr_factor", "range", lambda: lr_factor(1, 0), ValueError, "total_steps"),
    ("lr_factor", "range", lambda: lr_factor(1, 10, decay_rate=0), ValueError, "decay_rate"),
    (
        "train_slot_model",
        "type",
        lambda: train_slot_model(VIT, FEATS, SRLLoss(), 1),
        TypeError,
        "model",
    ),
    (
        "train_slot_model",
        "type",
        lambda: train_slot_model(MODEL, FEATS, torch.nn.MSELoss(), 1),
        TypeError,
        "criterion",
    ),
    (
        "train_slot_model",
        "range",
        lambda: train_slot_model(MODEL, FEATS, SRLLoss(), 0),
        ValueError,
        "steps",
    ),
    (
        "train_slot_model",
        "range",
        lambda: train_slot_model(MODEL, FEATS, SRLLoss(), 1, lr=NAN),
        ValueError,
        "lr",
    ),
    (
        "train_slot_model",
        "inf",
        lambda: train_slot_model(MODEL, FEATS_INF, SRLLoss(), 1),
        ValueError,
        "feats",
    ),
    (
        "train_slot_model",
        "shape",
        lambda: train_slot_model(MODEL, FEATS_WIDE, SRLLoss(), 1),
        ValueError,
        "feats",
    ),
    (
        "train_slot_model",
        "range",
        lambda: train_slot_model(MODEL, FEATS, SRLLoss(), 1, clip=0),
        ValueError,
        "clip",
    ),
    (
        "evaluate_discovery",
        "shape",
        lambda: evaluate_discovery(MODEL, FEATS, GT[:1]),
        ValueError,
        "instance",
    ),
    (
        "evaluate_discovery",
        "dtype",
        lambda: evaluate_discovery(MODEL, FEATS, GT * 1.0),
        TypeError,
        "instance",
    ),
    (
        "evaluate_discovery",
        "nan",
        lambda: evaluate_discovery(MODEL, FEATS * NAN, GT),
        ValueError,
        "feats",
    ),
    ("evaluate_discovery", "type", lambda: evaluate_discovery(VIT, FEATS, GT), TypeError, "model"),
    ("boundary_sharpness", "shape", lambda: boundary_sharpness(SOFT, LAB[:, :4]), ValueError, "gt"),
    (
        "boundary_sharpness",
        "nan",
        lambda: boundary_sharpness(SOFT * NAN, LAB),
        ValueError,
        "soft_masks",
    ),
    ("boundary_sharpness", "dtype", lambda: boundary_sharpness(SOFT, LAB.float()), TypeError, "gt"),
    ("mask_noise", "range", lambda: mask_noise(LAB - 1), ValueError, "labels"),
    ("mask_noise", "dtype", lambda: mask_noise(LAB.float()), TypeError, "labels"),
    ("mask_noise", "shape", lambda: mask_noise(LAB[0]), ValueError, "labels"),
]

EXEMPT: dict[str, str] = {}
