"""Bad-input cases of the IVPT room (tiny backbones and tensors; each call fails at the public
boundary with a message naming the argument)."""

import numpy as np
import torch
from torch import nn

from iclr26.models.vision import TinyViT
from iclr26.vision.ivpt import (
    IVPT,
    IVPTLoss,
    PartPrototypeHead,
    VPTDeep,
    VPTShallow,
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
    train_step,
)

NAN, INF = float("nan"), float("inf")
torch.manual_seed(0)
VIT = TinyViT(img_size=16, patch=8, dim=16, depth=2, heads=2)
X = torch.rand(4, 3, 16, 16)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = NAN
X_INF = X.clone()
X_INF[1, 1, 1, 1] = INF
ARR = np.random.default_rng(0).random((4, 3, 16, 16)).astype(np.float32)
ARR_NAN = ARR.copy()
ARR_NAN[0, 0, 0, 0] = np.nan
Y = np.array([0, 1, 0, 1])
PARTS = np.zeros((4, 16, 16), np.int64)
PARTS[:, 4:8, 4:8] = 1
MAPS = torch.softmax(torch.randn(2, 3, 4, 4), 1)
MAPS_NAN = MAPS.clone()
MAPS_NAN[0, 0, 0, 0] = NAN
FEATS = torch.randn(2, 8, 4, 4)
THETA = torch.eye(2, 3).expand(2, 2, 3).clone()


def _ivpt(**kw):
    return IVPT(VIT, 2, **(dict(n_pro=(3, 3)) | kw))


def _out():
    return _ivpt().eval()(X[:2])


def _step_nan_tokens():
    m = _ivpt()
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad])
    tokens = m.embed(X[:2])
    tokens[0, 0, 0] = NAN
    return train_step(m, IVPTLoss(w_eq=0), opt, tokens, torch.tensor([0, 1]))


CASES = [
    # IVPT: backbone protocol, hyperparameters, images
    ("IVPT", "type", lambda: IVPT(nn.Linear(2, 2), 2), TypeError, "patch_embed"),
    ("IVPT", "range", lambda: _ivpt(n_pro=(3,)), ValueError, "n_pro"),
    ("IVPT", "empty", lambda: _ivpt(n_pro=()), ValueError, "n_pro"),
    ("IVPT", "range", lambda: _ivpt(n_pro=(3, 3, 3, 3)), ValueError, "n_pro"),
    ("IVPT", "range", lambda: _ivpt(n_pro=(5, 1)), ValueError, r"n_pro\[1\]"),
    ("IVPT", "type", lambda: _ivpt(n_pro=(5, 2.5)), TypeError, r"n_pro\[1\]"),
    ("IVPT", "range", lambda: _ivpt(part_dropout=1.0), ValueError, "part_dropout"),
    ("IVPT", "nan", lambda: _ivpt(part_dropout=NAN), ValueError, "part_dropout"),
    ("IVPT", "range", lambda: _ivpt(gumbel_tau=0.0), ValueError, "gumbel_tau"),
    ("IVPT", "inf", lambda: _ivpt(gumbel_tau=INF), ValueError, "gumbel_tau"),
    ("IVPT", "range", lambda: IVPT(VIT, 1, n_pro=(3, 3)), ValueError, "num_classes"),
    ("IVPT", "type", lambda: _ivpt(gumbel_hard=1), TypeError, "gumbel_hard"),
    ("IVPT", "nan", lambda: _ivpt()(X_NAN), ValueError, "x"),
    ("IVPT", "inf", lambda: _ivpt()(X_INF), ValueError, "x"),
    ("IVPT", "shape", lambda: _ivpt()(torch.rand(2, 3, 24, 24)), ValueError, "x"),
    ("IVPT", "shape", lambda: _ivpt()(torch.rand(3, 16, 16)), ValueError, "x"),
    ("IVPT", "dtype", lambda: _ivpt()(torch.ones(2, 3, 16, 16, dtype=torch.long)), TypeError, "x"),
    ("IVPT", "shape", lambda: _ivpt().forward_from(torch.rand(2, 7, 16)), ValueError, "tokens"),
    ("IVPT", "empty", lambda: _ivpt()(torch.rand(0, 3, 16, 16)), ValueError, "x"),
    # IVPTLoss
    ("IVPTLoss", "range", lambda: IVPTLoss(w_cls=-1.0), ValueError, "w_cls"),
    ("IVPTLoss", "nan", lambda: IVPTLoss(w_cons=NAN), ValueError, "w_cons"),
    ("IVPTLoss", "inf", lambda: IVPTLoss(w_eq=INF), ValueError, "w_eq"),
    ("IVPTLoss", "range", lambda: IVPTLoss(pres_beta=1.5), ValueError, "pres_beta"),
    ("IVPTLoss", "range", lambda: IVPTLoss(pres_kind="tanh"), ValueError, "pres_kind"),
    ("IVPTLoss", "type", lambda: IVPTLoss()({"a": 1}, torch.tensor([0, 1])), TypeError, "out"),
    (
        "IVPTLoss",
        "range",
        lambda: IVPTLoss(w_eq=0)(_out(), torch.tensor([0, 5])),
        ValueError,
        "target",
    ),
    (
        "IVPTLoss",
        "shape",
        lambda: IVPTLoss(w_eq=0)(_out(), torch.tensor([0])),
        ValueError,
        "target",
    ),
    (
        "IVPTLoss",
        "other",
        lambda: IVPTLoss()(_out(), torch.tensor([0, 1])),
        ValueError,
        "out_transformed",
    ),
    # baselines
    ("VPTDeep", "range", lambda: VPTDeep(VIT, 2, n_prompts=0), ValueError, "n_prompts"),
    ("VPTShallow", "range", lambda: VPTShallow(VIT, 2, n_prompts=0), ValueError, "n_prompts"),
    ("VPTShallow", "range", lambda: VPTShallow(VIT, 1), ValueError, "num_classes"),
    ("VPTShallow", "type", lambda: VPTShallow(nn.Linear(2, 2), 2), TypeError, "patch_embed"),
    ("VPTDeep", "range", lambda: VPTDeep(VIT, 2, layers=3), ValueError, "layers"),
    ("VPTDeep", "range", lambda: VPTDeep(VIT, 2, layers=(0, 5)), ValueError, "layers"),
    ("VPTDeep", "empty", lambda: VPTDeep(VIT, 2, layers=()), ValueError, "layers"),
    ("VPTDeep", "type", lambda: VPTDeep(nn.Linear(2, 2), 2), TypeError, "patch_embed"),
    ("VPTDeep", "nan", lambda: VPTDeep(VIT, 2)(X_NAN), ValueError, "x"),
    (
        "PartPrototypeHead",
        "range",
        lambda: PartPrototypeHead(VIT, 2, n_parts=0),
        ValueError,
        "n_parts",
    ),
    (
        "PartPrototypeHead",
        "range",
        lambda: PartPrototypeHead(VIT, 2, part_dropout=-0.1),
        ValueError,
        "part_dropout",
    ),
    ("PartPrototypeHead", "inf", lambda: PartPrototypeHead(VIT, 2)(X_INF), ValueError, "x"),
    # functions on maps
    (
        "prototype_maps",
        "shape",
        lambda: prototype_maps(FEATS, torch.randn(3, 5), torch.zeros(3, 4, 4)),
        ValueError,
        "prototypes",
    ),
    (
        "prototype_maps",
        "shape",
        lambda: prototype_maps(FEATS, torch.randn(3, 8), torch.zeros(3, 5, 4)),
        ValueError,
        "bias",
    ),
    (
        "prototype_maps",
        "nan",
        lambda: prototype_maps(FEATS * NAN, torch.randn(3, 8), torch.zeros(3, 4, 4)),
        ValueError,
        "features",
    ),
    (
        "region_features",
        "shape",
        lambda: region_features(MAPS, torch.randn(2, 8, 5, 5)),
        ValueError,
        "maps",
    ),
    ("region_features", "nan", lambda: region_features(MAPS_NAN, FEATS), ValueError, "maps"),
    (
        "aggregate_maps",
        "shape",
        lambda: aggregate_maps(MAPS, torch.rand(2, 3, 4)),
        ValueError,
        "assignment",
    ),
    (
        "aggregate_maps",
        "dtype",
        lambda: aggregate_maps(MAPS, torch.ones(2, 2, 4, dtype=torch.long)),
        TypeError,
        "assignment",
    ),
    ("consistency_loss", "shape", lambda: consistency_loss(MAPS, MAPS[:, :2]), ValueError, "pred"),
    ("consistency_loss", "range", lambda: consistency_loss(MAPS - 1, MAPS), ValueError, "pred"),
    ("consistency_loss", "nan", lambda: consistency_loss(MAPS, MAPS_NAN), ValueError, "target"),
    ("consistency_loss", "range", lambda: consistency_loss(MAPS, MAPS, eps=0.0), ValueError, "eps"),
    ("presence_loss", "range", lambda: presence_loss(MAPS, kind="max"), ValueError, "kind"),
    (
        "presence_loss",
        "range",
        lambda: presence_loss(MAPS, kind="soft_constraint", beta=NAN),
        ValueError,
        "beta",
    ),
    ("presence_loss", "shape", lambda: presence_loss(MAPS[0]), ValueError, "maps"),
    (
        "equivariance_loss",
        "shape",
        lambda: equivariance_loss(MAPS, MAPS, THETA[:1]),
        ValueError,
        "theta",
    ),
    (
        "equivariance_loss",
        "shape",
        lambda: equivariance_loss(MAPS, MAPS[:, :2], THETA),
        ValueError,
        "maps_transformed",
    ),
    (
        "equivariance_loss",
        "nan",
        lambda: equivariance_loss(MAPS_NAN, MAPS, THETA),
        ValueError,
        "maps",
    ),
    ("invert_affine", "shape", lambda: invert_affine(torch.eye(3)[None]), ValueError, "theta"),
    ("invert_affine", "other", lambda: invert_affine(torch.zeros(1, 2, 3)), ValueError, "theta"),
    ("invert_affine", "inf", lambda: invert_affine(THETA * INF), ValueError, "theta"),
    (
        "orthogonality_loss",
        "shape",
        lambda: orthogonality_loss(torch.rand(4, 5)),
        ValueError,
        "part_features",
    ),
    (
        "orthogonality_loss",
        "nan",
        lambda: orthogonality_loss(torch.full((1, 2, 3), NAN)),
        ValueError,
        "part_features",
    ),
    (
        "total_variation_loss",
        "shape",
        lambda: total_variation_loss(torch.rand(4, 4)),
        ValueError,
        "maps",
    ),
    ("total_variation_loss", "inf", lambda: total_variation_loss(MAPS * INF), ValueError, "maps"),
    (
        "enforced_presence_loss",
        "shape",
        lambda: enforced_presence_loss(MAPS[:, :1]),
        ValueError,
        "maps",
    ),
    ("enforced_presence_loss", "nan", lambda: enforced_presence_loss(MAPS_NAN), ValueError, "maps"),
    ("pixel_entropy_loss", "nan", lambda: pixel_entropy_loss(MAPS_NAN), ValueError, "maps"),
    (
        "pixel_entropy_loss",
        "empty",
        lambda: pixel_entropy_loss(torch.rand(0, 3, 4, 4)),
        ValueError,
        "maps",
    ),
    # training and evaluation
    ("fit", "nan", lambda: fit(_ivpt(), ARR_NAN, Y, epochs=1), ValueError, "X"),
    ("fit", "range", lambda: fit(_ivpt(), ARR * 3, Y, epochs=1), ValueError, "X"),
    ("fit", "shape", lambda: fit(_ivpt(), ARR, Y[:3], epochs=1), ValueError, "X"),
    ("fit", "range", lambda: fit(_ivpt(), ARR, Y + 5, epochs=1), ValueError, "y"),
    ("fit", "range", lambda: fit(_ivpt(), ARR, Y, epochs=0), ValueError, "epochs"),
    ("fit", "range", lambda: fit(_ivpt(), ARR, Y, lr=-1.0), ValueError, "lr"),
    ("fit", "nan", lambda: fit(_ivpt(), ARR, Y, lr=NAN), ValueError, "lr"),
    ("fit", "empty", lambda: fit(_ivpt(), ARR[:0], Y[:0]), ValueError, "X"),
    ("fit", "type", lambda: fit(_ivpt(), ARR, Y, criterion=3), TypeError, "criterion"),
    ("train_step", "nan", _step_nan_tokens, ValueError, "tokens"),
    ("evaluate", "shape", lambda: evaluate(_ivpt(), ARR, Y, PARTS[:, :8]), ValueError, "parts"),
    ("evaluate", "nan", lambda: evaluate(_ivpt(), ARR_NAN, Y, PARTS), ValueError, "X"),
    ("evaluate", "shape", lambda: evaluate(_ivpt(), ARR, Y[:2], PARTS), ValueError, "X"),
    ("predict_parts", "type", lambda: predict_parts(MAPS, 16), TypeError, "size"),
    ("predict_parts", "range", lambda: predict_parts(MAPS, (0, 4)), ValueError, "size"),
    ("predict_parts", "nan", lambda: predict_parts(MAPS_NAN, (4, 4)), ValueError, "maps"),
    (
        "consistency_rate",
        "shape",
        lambda: consistency_rate(PARTS, PARTS[:2], 2),
        ValueError,
        "pred_parts",
    ),
    (
        "consistency_rate",
        "range",
        lambda: consistency_rate(PARTS, PARTS, 2, min_share=2.0),
        ValueError,
        "min_share",
    ),
    ("consistency_rate", "range", lambda: consistency_rate(PARTS, PARTS, 0), ValueError, "n_parts"),
]

EXEMPT = {
    "FitResult": "a record dataclass returned by fit; takes no user data",
    "cross_entropy_objective": "a factory with no arguments; its loss is checked through fit",
}
