"""Bad-input cases of the PCG room (tiny toy networks; each call fails at the public boundary)."""

import numpy as np
import torch
from torch import nn

from iclr26.vision.pcg import (
    PCG,
    RSGD,
    ConvVAE,
    Decoder,
    Encoder,
    LatentWachter,
    MLPClassifier,
    PerceptualEmbedding,
    PixelWachter,
    counterfactual,
    frechet_distance,
    l1,
    oracle_validity,
    path_energy,
    path_smoothness,
    pgd_attack,
    pullback_metric,
    refine_path,
    straight_path,
    train_classifier,
    train_vae,
    validity,
)

NAN, INF = float("nan"), float("inf")


class Gen(nn.Module):
    """2-D latent -> (1, 8, 8): z[0] sets the left half, z[1] the right half."""

    def forward(self, z):
        cols = torch.cat([z[:, :1].expand(-1, 4), z[:, 1:2].expand(-1, 4)], 1)
        return torch.sigmoid(cols)[:, None, None, :].expand(-1, 1, 8, 8)


class Clf(nn.Module):
    def forward(self, x):
        left, right = x[..., :4].mean((1, 2, 3)), x[..., 4:].mean((1, 2, 3))
        return torch.stack([left - right, right - left], 1)


class Feats(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


GEN, CLF = Gen(), Clf()
EMB = PerceptualEmbedding(Feats(), layers=("conv",))
Z0 = torch.tensor([[1.0, -1.0], [2.0, -1.0]])  # class 0 (left brighter)
X0 = GEN(Z0)
X_NAN = X0.clone()
X_NAN[0, 0, 0, 0] = NAN
X_BIG = X0 + 1.0
X_RANK3 = X0[:, 0]
Z_NAN = Z0.clone()
Z_NAN[0, 0] = NAN
PATH = torch.rand(2, 5, 2)
PTS = torch.rand(2, 5, 3)
ARR = np.random.default_rng(0).random((8, 1, 8, 8)).astype(np.float32)
Y = np.arange(8) % 2
TGT = torch.tensor([1, 1])


def _pcg(**kw):
    return PCG(GEN, CLF, EMB, steps=(4, 2), warm_steps=1, **kw)


def _cf(x=X0, target=1, **kw):
    return counterfactual(
        x, target, generator=GEN, classifier=CLF, z0=Z0, steps=(4, 2), warm_steps=1, **kw
    )


CASES = [
    ("PCG", "type", lambda: PCG(lambda z: z, CLF, EMB), TypeError, "generator"),
    ("PCG", "type", lambda: PCG(GEN, CLF, Feats()), TypeError, "perceptual"),
    ("PCG", "range", lambda: _pcg(n_points=0), ValueError, "n_points"),
    ("PCG", "range", lambda: _pcg(lam_cls=NAN), ValueError, "lam_cls"),
    ("PCG", "range", lambda: _pcg(kappa=1.0), ValueError, "kappa"),
    ("PCG", "range", lambda: _pcg(lr=-1.0), ValueError, "lr"),
    ("PCG", "range", lambda: PCG(GEN, CLF, EMB, steps=(0, 1)), ValueError, "steps"),
    ("PCG", "other", lambda: _pcg().explain(z0=Z0, target=0), ValueError, "target"),
    ("PCG", "range", lambda: _pcg().explain(z0=Z0, target=5), ValueError, "target"),
    ("PCG", "dtype", lambda: _pcg().explain(z0=Z0, target=[0.5, 1.0]), TypeError, "target"),
    ("PCG", "nan", lambda: _pcg().explain(z0=Z_NAN, target=1), ValueError, "z0"),
    ("PCG", "nan", lambda: _pcg().explain(X_NAN, 1, encoder=lambda x: Z0), ValueError, "x0"),
    ("PCG", "range", lambda: _pcg().explain(X_BIG, 1, encoder=lambda x: Z0), ValueError, "x0"),
    ("PCG", "shape", lambda: _pcg().explain(X_RANK3, 1, encoder=lambda x: Z0), ValueError, "x0"),
    (
        "PCG",
        "shape",
        lambda: _pcg().explain(torch.rand(2, 3, 8, 8), 1, z0=Z0),
        ValueError,
        "generator",
    ),
    ("PCG", "other", lambda: _pcg().explain(X0, 1), ValueError, "encoder"),
    ("PCG", "shape", lambda: _pcg().explain(z0=Z0, target=[1, 1, 1]), ValueError, "target"),
    ("counterfactual", "range", lambda: _cf(X_BIG), ValueError, "x"),
    ("counterfactual", "shape", lambda: _cf(X_RANK3), ValueError, "x"),
    ("counterfactual", "nan", lambda: _cf(X_NAN), ValueError, "x"),
    ("counterfactual", "other", lambda: _cf(target=0), ValueError, "target"),
    (
        "counterfactual",
        "type",
        lambda: counterfactual(X0, 1, generator=GEN, classifier=lambda x: x, z0=Z0),
        TypeError,
        "classifier",
    ),
    ("counterfactual", "range", lambda: _cf(kappa=NAN), ValueError, "kappa"),
    ("LatentWachter", "type", lambda: LatentWachter(GEN, "f"), TypeError, "classifier"),
    ("LatentWachter", "range", lambda: LatentWachter(GEN, CLF, lam=0.0), ValueError, "lam"),
    ("LatentWachter", "range", lambda: LatentWachter(GEN, CLF, steps=0), ValueError, "steps"),
    (
        "LatentWachter",
        "other",
        lambda: LatentWachter(GEN, CLF, steps=2).explain(z0=Z0, target=0),
        ValueError,
        "target",
    ),
    (
        "LatentWachter",
        "nan",
        lambda: LatentWachter(GEN, CLF, steps=2).explain(z0=Z_NAN, target=1),
        ValueError,
        "z0",
    ),
    ("RSGD", "range", lambda: RSGD(GEN, CLF, mu=0.0), ValueError, "mu"),
    ("RSGD", "range", lambda: RSGD(GEN, CLF, lr=INF), ValueError, "lr"),
    (
        "RSGD",
        "other",
        lambda: RSGD(GEN, CLF, steps=2).explain(z0=Z0, target=0),
        ValueError,
        "target",
    ),
    ("PixelWachter", "range", lambda: PixelWachter(CLF, lam=NAN), ValueError, "lam"),
    (
        "PixelWachter",
        "range",
        lambda: PixelWachter(CLF, steps=2).explain(X_BIG, 1),
        ValueError,
        "x0",
    ),
    (
        "PixelWachter",
        "shape",
        lambda: PixelWachter(CLF, steps=2).explain(X_RANK3, 1),
        ValueError,
        "x0",
    ),
    (
        "PixelWachter",
        "other",
        lambda: PixelWachter(CLF, steps=2).explain(X0, 0),
        ValueError,
        "target",
    ),
    (
        "PerceptualEmbedding",
        "type",
        lambda: PerceptualEmbedding(lambda x: x),
        TypeError,
        "feature_net",
    ),
    (
        "PerceptualEmbedding",
        "other",
        lambda: PerceptualEmbedding(Feats(), layers=("layer9",)),
        ValueError,
        "layers",
    ),
    (
        "PerceptualEmbedding",
        "shape",
        lambda: PerceptualEmbedding(Feats(), layers=("conv",), weights=[1.0, 2.0]),
        ValueError,
        "weights",
    ),
    (
        "PerceptualEmbedding",
        "range",
        lambda: PerceptualEmbedding(Feats(), layers=("conv",), weights=[-1.0]),
        ValueError,
        "weights",
    ),
    (
        "PerceptualEmbedding",
        "range",
        lambda: PerceptualEmbedding(Feats(), layers=("conv",), eps=0.0),
        ValueError,
        "eps",
    ),
    ("PerceptualEmbedding", "type", lambda: EMB(np.zeros((1, 1, 8, 8))), TypeError, "x"),
    ("pullback_metric", "nan", lambda: pullback_metric(GEN, Z_NAN), ValueError, "z"),
    ("pullback_metric", "shape", lambda: pullback_metric(GEN, Z0[0]), ValueError, "z"),
    ("pullback_metric", "type", lambda: pullback_metric(3, Z0), TypeError, "fn"),
    ("path_energy", "shape", lambda: path_energy(torch.rand(5)), ValueError, "points"),
    ("path_energy", "nan", lambda: path_energy(torch.full((2, 3, 2), NAN)), ValueError, "points"),
    ("path_energy", "empty", lambda: path_energy(torch.rand(2, 1, 3)), ValueError, "points"),
    ("straight_path", "shape", lambda: straight_path(Z0, Z0[:1], 4), ValueError, "z_end"),
    ("straight_path", "range", lambda: straight_path(Z0, Z0, 0), ValueError, "n_points"),
    ("straight_path", "inf", lambda: straight_path(Z0 * INF, Z0, 3), ValueError, "z_start"),
    (
        "refine_path",
        "shape",
        lambda: refine_path(lambda z: z, torch.rand(5, 2)),
        ValueError,
        "path",
    ),
    ("refine_path", "range", lambda: refine_path(lambda z: z, PATH, steps=-1), ValueError, "steps"),
    ("refine_path", "range", lambda: refine_path(lambda z: z, PATH, lr=0.0), ValueError, "lr"),
    (
        "path_smoothness",
        "shape",
        lambda: path_smoothness(EMB, torch.rand(2, 5, 8, 8)),
        ValueError,
        "path_x",
    ),
    (
        "path_smoothness",
        "empty",
        lambda: path_smoothness(EMB, torch.rand(2, 1, 1, 8, 8)),
        ValueError,
        "path_x",
    ),
    (
        "path_smoothness",
        "type",
        lambda: path_smoothness(None, torch.rand(2, 3, 1, 8, 8)),
        TypeError,
        "features",
    ),
    ("validity", "shape", lambda: validity(CLF, X0, [1, 1, 1]), ValueError, "target"),
    ("validity", "type", lambda: validity("f", X0, [1, 1]), TypeError, "classifier"),
    ("oracle_validity", "nan", lambda: oracle_validity(CLF, X_NAN, [1, 1]), ValueError, "x_cf"),
    ("oracle_validity", "type", lambda: oracle_validity(None, X0, [1, 1]), TypeError, "oracle"),
    (
        "frechet_distance",
        "shape",
        lambda: frechet_distance(lambda x: x, X_RANK3, X0),
        ValueError,
        "x_cf",
    ),
    (
        "frechet_distance",
        "shape",
        lambda: frechet_distance(lambda x: x, X0, torch.rand(3, 3, 8, 8)),
        ValueError,
        "x_real",
    ),
    ("frechet_distance", "type", lambda: frechet_distance(1, X0, X0), TypeError, "features"),
    ("l1", "shape", lambda: l1(X0, X0[:1]), ValueError, "x0"),
    ("l1", "nan", lambda: l1(X_NAN, X0), ValueError, "x_cf"),
    ("pgd_attack", "range", lambda: pgd_attack(CLF, X0, TGT, eps=2.0), ValueError, "eps"),
    ("pgd_attack", "range", lambda: pgd_attack(CLF, X_BIG, TGT), ValueError, "x"),
    ("pgd_attack", "dtype", lambda: pgd_attack(CLF, X0, TGT.float()), TypeError, "y"),
    ("pgd_attack", "type", lambda: pgd_attack(lambda x: x, X0, TGT), TypeError, "model"),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(MLPClassifier(64, 2), ARR + 1, Y),
        ValueError,
        "X",
    ),
    (
        "train_classifier",
        "nan",
        lambda: train_classifier(MLPClassifier(64, 2), ARR * NAN, Y),
        ValueError,
        "X",
    ),
    (
        "train_classifier",
        "shape",
        lambda: train_classifier(MLPClassifier(64, 2), ARR, Y[:3]),
        ValueError,
        "y",
    ),
    (
        "train_classifier",
        "range",
        lambda: train_classifier(MLPClassifier(64, 2), ARR, Y, eps=NAN),
        ValueError,
        "eps",
    ),
    (
        "train_classifier",
        "empty",
        lambda: train_classifier(MLPClassifier(64, 2), ARR[:0], Y[:0]),
        ValueError,
        "X",
    ),
    ("train_vae", "type", lambda: train_vae(MLPClassifier(64, 2), ARR), TypeError, "vae"),
    ("train_vae", "range", lambda: train_vae(ConvVAE(8), ARR, beta=-1.0), ValueError, "beta"),
    ("train_vae", "shape", lambda: train_vae(ConvVAE(8), ARR[:, 0]), ValueError, "X"),
    ("ConvVAE", "range", lambda: ConvVAE(size=12), ValueError, "size"),
    ("ConvVAE", "range", lambda: ConvVAE(latent_dim=0), ValueError, "latent_dim"),
    ("MLPClassifier", "range", lambda: MLPClassifier(64, n_classes=1), ValueError, "n_classes"),
    ("MLPClassifier", "range", lambda: MLPClassifier(0), ValueError, "in_dim"),
    ("Decoder", "type", lambda: Decoder(MLPClassifier(4, 2)), TypeError, "vae"),
    ("Encoder", "type", lambda: Encoder(None), TypeError, "vae"),
]

EXEMPT = {
    "CounterfactualResult": "a record dataclass returned by explain(); it takes no user data",
}
