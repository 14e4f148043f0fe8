"""Bad-input cases of the AnyUp room (tiny tensors; each call fails at the public boundary)."""

import numpy as np
import torch

from iclr26.vision.anyup import (
    AnyUp,
    JointBilateralUpsampler,
    LearnedFeatureUnification,
    SpecificUpsampler,
    as_feature_map,
    bicubic,
    bilinear,
    feature_fidelity,
    load_official,
    probe_miou,
    reconstruction_loss,
    train_anyup,
    upsample_batched,
    window_mask,
)

NAN, INF = float("nan"), float("inf")
CFG = dict(qk_dim=8, num_heads=2, lfu_dim=4)
UP = AnyUp(**CFG)
IMG = torch.rand(2, 3, 16, 16)
FEAT = torch.randn(2, 5, 4, 4)
IMG_NAN = IMG.clone()
IMG_NAN[0, 0, 0, 0] = NAN
FEAT_NAN = FEAT.clone()
FEAT_NAN[0, 0, 0, 0] = NAN
FEAT_INF = FEAT.clone()
FEAT_INF[1, 2, 1, 1] = INF
IMG_BIG = IMG + 1.5  # outside [0, 1]
IMG_GREY = torch.rand(2, 1, 16, 16)
IMG_RANK3 = torch.rand(3, 16, 16)
FEAT_ODD = torch.randn(2, 5, 3, 5)  # 3 x 5 does not divide 16 x 16
FEAT_ASPECT = torch.randn(2, 5, 4, 2)  # divides 16 x 16, but with strides 4 and 8
IMG_WIDE = torch.rand(2, 3, 16, 24)  # 4 x 4 features divide it, but the aspect is 2:3
FEAT_EMPTY = torch.randn(0, 5, 4, 4)
IMG_EMPTY = torch.rand(0, 3, 16, 16)
POOL = np.random.default_rng(0).random((4, 3, 32, 32)).astype(np.float32)


def _net(x):
    return torch.nn.functional.avg_pool2d(x, 8)


MASKS = np.zeros((2, 16, 16), dtype=np.int64)
MASKS[:, 8:] = 1

CASES = [
    ("AnyUp", "range", lambda: AnyUp(qk_dim=0), ValueError, "qk_dim"),
    ("AnyUp", "range", lambda: AnyUp(qk_dim=10, num_heads=4), ValueError, "qk_dim"),
    ("AnyUp", "range", lambda: AnyUp(window_ratio=NAN), ValueError, "window_ratio"),
    ("AnyUp", "range", lambda: AnyUp(window_ratio=1.5), ValueError, "window_ratio"),
    ("AnyUp", "range", lambda: AnyUp(kernel_size_lfu=4), ValueError, "kernel_size_lfu"),
    ("AnyUp", "range", lambda: AnyUp(lfu_dim=0), ValueError, "lfu_dim"),
    ("AnyUp", "type", lambda: AnyUp(normalize_image="yes"), TypeError, "normalize_image"),
    ("AnyUp", "nan", lambda: UP(IMG_NAN, FEAT), ValueError, "image"),
    ("AnyUp", "nan", lambda: UP(IMG, FEAT_NAN), ValueError, "features"),
    ("AnyUp", "inf", lambda: UP(IMG, FEAT_INF), ValueError, "features"),
    ("AnyUp", "range", lambda: UP(IMG_BIG, FEAT), ValueError, "image"),
    ("AnyUp", "shape", lambda: UP(IMG_GREY, FEAT), ValueError, "image"),
    ("AnyUp", "shape", lambda: UP(IMG_RANK3, FEAT), ValueError, "image"),
    ("AnyUp", "shape", lambda: UP(IMG, FEAT[0]), ValueError, "features"),
    ("AnyUp", "shape", lambda: UP(IMG, FEAT_ODD), ValueError, "features"),
    ("AnyUp", "shape", lambda: UP(IMG, FEAT[:1]), ValueError, "features"),
    ("AnyUp", "shape", lambda: UP(IMG, FEAT_ASPECT), ValueError, "features.*aspect"),
    ("AnyUp", "shape", lambda: UP(IMG_WIDE, FEAT), ValueError, "features.*aspect"),
    ("AnyUp", "empty", lambda: UP(IMG_EMPTY, FEAT_EMPTY), ValueError, "image"),
    ("AnyUp", "range", lambda: UP(IMG, FEAT, (2, 8)), ValueError, "output_size"),
    ("AnyUp", "range", lambda: UP(IMG, FEAT, (0, 8)), ValueError, "output_size"),
    ("AnyUp", "type", lambda: UP(IMG, FEAT, "big"), TypeError, "output_size"),
    ("AnyUp", "range", lambda: UP(IMG, FEAT, q_chunk_size=0), ValueError, "q_chunk_size"),
    ("AnyUp", "dtype", lambda: UP(IMG, FEAT.long()), TypeError, "features"),
    ("AnyUp", "type", lambda: UP(IMG.numpy(), FEAT), TypeError, "image"),
    ("SpecificUpsampler", "range", lambda: SpecificUpsampler(0), ValueError, "in_dim"),
    ("SpecificUpsampler", "shape", lambda: SpecificUpsampler(3, **CFG)(IMG, FEAT), ValueError,
     "in_dim"),
    ("SpecificUpsampler", "nan", lambda: SpecificUpsampler(5, **CFG)(IMG, FEAT_NAN), ValueError,
     "features"),
    ("LearnedFeatureUnification", "range", lambda: LearnedFeatureUnification(0), ValueError,
     "out_channels"),
    ("LearnedFeatureUnification", "range", lambda: LearnedFeatureUnification(4, 2), ValueError,
     "kernel_size"),
    ("bilinear", "shape", lambda: bilinear(IMG, FEAT_ODD), ValueError, "features"),
    ("bilinear", "shape", lambda: bilinear(IMG_WIDE, FEAT), ValueError, "features.*aspect"),
    ("bilinear", "nan", lambda: bilinear(IMG, FEAT_NAN), ValueError, "features"),
    ("bilinear", "range", lambda: bilinear(IMG, FEAT, (3, 3)), ValueError, "output_size"),
    ("bicubic", "empty", lambda: bicubic(IMG_EMPTY, FEAT_EMPTY), ValueError, "image"),
    ("bicubic", "shape", lambda: bicubic(IMG_GREY, FEAT), ValueError, "image"),
    ("JointBilateralUpsampler", "range", lambda: JointBilateralUpsampler(sigma_spatial=0.0),
     ValueError, "sigma_spatial"),
    ("JointBilateralUpsampler", "nan", lambda: JointBilateralUpsampler(sigma_range=NAN),
     ValueError, "sigma_range"),
    ("JointBilateralUpsampler", "range", lambda: JointBilateralUpsampler(radius=-1), ValueError,
     "radius"),
    ("JointBilateralUpsampler", "range", lambda: JointBilateralUpsampler()(IMG_BIG, FEAT),
     ValueError, "image"),
    ("JointBilateralUpsampler", "inf", lambda: JointBilateralUpsampler()(IMG, FEAT_INF),
     ValueError, "features"),
    ("window_mask", "range", lambda: window_mask((0, 4), (2, 2), 0.1), ValueError, "high"),
    ("window_mask", "nan", lambda: window_mask((4, 4), (2, 2), NAN), ValueError, "ratio"),
    ("reconstruction_loss", "shape", lambda: reconstruction_loss(FEAT, FEAT[:1]), ValueError,
     "target"),
    ("reconstruction_loss", "nan", lambda: reconstruction_loss(FEAT_NAN, FEAT), ValueError,
     "pred"),
    ("as_feature_map", "type", lambda: as_feature_map(3), TypeError, "backbone"),
    ("train_anyup", "range", lambda: train_anyup(_net, POOL, steps=0), ValueError, "steps"),
    ("train_anyup", "range", lambda: train_anyup(_net, POOL, crop_frac=1.5), ValueError,
     "crop_frac"),
    ("train_anyup", "range", lambda: train_anyup(_net, POOL, lr=NAN), ValueError, "lr"),
    ("train_anyup", "range", lambda: train_anyup(_net, POOL, w_aug=-1.0), ValueError, "w_aug"),
    ("train_anyup", "range", lambda: train_anyup(_net, POOL + 2.0), ValueError, "images"),
    ("train_anyup", "nan", lambda: train_anyup(_net, POOL * NAN), ValueError, "images"),
    ("train_anyup", "shape", lambda: train_anyup(_net, POOL[..., :30]), ValueError, "images"),
    ("train_anyup", "empty", lambda: train_anyup({}, POOL), ValueError, "backbones"),
    ("feature_fidelity", "shape", lambda: feature_fidelity(bilinear, IMG, FEAT_ODD), ValueError,
     "features"),
    ("feature_fidelity", "nan", lambda: feature_fidelity(bilinear, IMG_NAN, FEAT), ValueError,
     "image"),
    ("probe_miou", "range", lambda: probe_miou(bilinear, IMG, FEAT, MASKS, IMG, FEAT, MASKS, 1),
     ValueError, "n_classes"),
    ("probe_miou", "range", lambda: probe_miou(bilinear, IMG, FEAT, MASKS + 5, IMG, FEAT, MASKS,
     2), ValueError, "train_masks"),
    ("probe_miou", "shape", lambda: probe_miou(bilinear, IMG, FEAT, MASKS[:1], IMG, FEAT, MASKS,
     2), ValueError, "train_masks"),
    ("probe_miou", "range", lambda: probe_miou(bilinear, IMG, FEAT, MASKS, IMG, FEAT, MASKS, 2,
     epochs=0), ValueError, "epochs"),
    ("upsample_batched", "shape", lambda: upsample_batched(bilinear, IMG, FEAT[:1]), ValueError,
     "features"),
    ("upsample_batched", "shape", lambda: upsample_batched(bilinear, IMG, FEAT_ODD), ValueError,
     "features"),
    ("upsample_batched", "range", lambda: upsample_batched(bilinear, IMG, FEAT, batch_size=0),
     ValueError, "batch_size"),
    ("load_official", "other", lambda: load_official("dinov2"), ValueError, "name"),
]  # fmt: skip
EXEMPT = {}
