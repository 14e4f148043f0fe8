"""Bad-input cases of the IE-CL room (tiny tensors; each call fails at the public boundary)."""

import numpy as np
import torch
from torch import nn

from iclr26.models.vision import TinyConvNet
from iclr26.vision.iecl import (
    IECL,
    BYOLLite,
    DescriptorProjection,
    EntropyPreservingRegularizer,
    IECLFeatureExtractor,
    IECLWrapper,
    InfoNCELoss,
    LearnableEntropyTransform,
    MoCo,
    SimCLR,
    TwoViewFramework,
    coding_rate,
    gaussian_entropy,
    histogram_entropy,
    incremental_entropy,
    make_framework,
    queue_infonce,
    train_ssl,
)

NAN, INF = float("nan"), float("inf")
ENC = TinyConvNet(width=4, out_dim=8, stride=8)
X = torch.rand(4, 3, 16, 16)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = NAN
X_BIG = X + 1.0  # outside [0, 1]
X_RANK3 = torch.rand(4, 16, 16)
X_GREY = torch.rand(4, 1, 16, 16)
Z = torch.randn(4, 5)
ARR = np.random.default_rng(0).random((8, 3, 16, 16)).astype(np.float32)


class NoDim(nn.Module):
    """An encoder without the ``embed_dim`` attribute the frameworks read."""

    def forward(self, x):
        return x.mean((2, 3))


def _simclr():
    return SimCLR(TinyConvNet(width=4, out_dim=8, stride=8), 8, proj_dim=4)


def _iecl():
    return IECL(TinyConvNet(width=4, out_dim=8, stride=8), 8, proj_dim=4)


def _moco(**kwargs):
    return MoCo(TinyConvNet(width=4, out_dim=8, stride=8), 8, proj_dim=4, **kwargs)


CASES = [
    ("InfoNCELoss", "range", lambda: InfoNCELoss(temperature=0.0), ValueError, "temperature"),
    ("InfoNCELoss", "nan", lambda: InfoNCELoss(temperature=NAN), ValueError, "temperature"),
    ("InfoNCELoss", "shape", lambda: InfoNCELoss()(Z, Z[:3]), ValueError, "z2"),
    ("InfoNCELoss", "nan", lambda: InfoNCELoss()(Z * NAN, Z), ValueError, "z1"),
    ("InfoNCELoss", "empty", lambda: InfoNCELoss()(Z[:1], Z[:1]), ValueError, "z1"),
    (
        "LearnableEntropyTransform",
        "range",
        lambda: LearnableEntropyTransform(max_delta=1.5),
        ValueError,
        "max_delta",
    ),
    (
        "LearnableEntropyTransform",
        "range",
        lambda: LearnableEntropyTransform(max_delta=0.0),
        ValueError,
        "max_delta",
    ),
    (
        "LearnableEntropyTransform",
        "range",
        lambda: LearnableEntropyTransform()(X_BIG),
        ValueError,
        "v",
    ),
    (
        "LearnableEntropyTransform",
        "shape",
        lambda: LearnableEntropyTransform()(X_RANK3),
        ValueError,
        "v",
    ),
    (
        "LearnableEntropyTransform",
        "shape",
        lambda: LearnableEntropyTransform()(X_GREY),
        ValueError,
        "channels",
    ),
    (
        "LearnableEntropyTransform",
        "nan",
        lambda: LearnableEntropyTransform()(X_NAN),
        ValueError,
        "v",
    ),
    ("DescriptorProjection", "range", lambda: DescriptorProjection(dim=0), ValueError, "dim"),
    ("DescriptorProjection", "type", lambda: DescriptorProjection(in_ch=2.5), TypeError, "in_ch"),
    ("incremental_entropy", "shape", lambda: incremental_entropy(X, X[:2]), ValueError, "v_prime"),
    (
        "incremental_entropy",
        "shape",
        lambda: incremental_entropy(X_RANK3, X_RANK3),
        ValueError,
        "v",
    ),
    ("incremental_entropy", "nan", lambda: incremental_entropy(X_NAN, X), ValueError, "v"),
    (
        "incremental_entropy",
        "other",
        lambda: incremental_entropy(X, X, estimator="knn"),
        ValueError,
        "estimator",
    ),
    (
        "incremental_entropy",
        "range",
        lambda: incremental_entropy(X, X, eps=-1.0),
        ValueError,
        "eps",
    ),
    ("incremental_entropy", "empty", lambda: incremental_entropy(X[:1], X[:1]), ValueError, "v"),
    ("gaussian_entropy", "shape", lambda: gaussian_entropy(X), ValueError, "feats"),
    ("gaussian_entropy", "inf", lambda: gaussian_entropy(Z * INF), ValueError, "feats"),
    ("gaussian_entropy", "range", lambda: gaussian_entropy(Z, eps=0.0), ValueError, "eps"),
    ("histogram_entropy", "range", lambda: histogram_entropy(X_BIG), ValueError, "v"),
    ("histogram_entropy", "range", lambda: histogram_entropy(X, bins=1), ValueError, "bins"),
    ("coding_rate", "shape", lambda: coding_rate(X), ValueError, "z"),
    ("coding_rate", "range", lambda: coding_rate(Z, eps_r=0.0), ValueError, "eps_r"),
    (
        "EntropyPreservingRegularizer",
        "other",
        lambda: EntropyPreservingRegularizer("volume"),
        ValueError,
        "mode",
    ),
    (
        "EntropyPreservingRegularizer",
        "range",
        lambda: EntropyPreservingRegularizer(eps_r=NAN),
        ValueError,
        "eps_r",
    ),
    (
        "EntropyPreservingRegularizer",
        "nan",
        lambda: EntropyPreservingRegularizer()(Z * NAN),
        ValueError,
        "z",
    ),
    (
        "EntropyPreservingRegularizer",
        "other",
        lambda: EntropyPreservingRegularizer("gap")(Z),
        ValueError,
        "z_plain",
    ),
    ("SimCLR", "type", lambda: SimCLR("resnet18", 8), TypeError, "encoder"),
    ("SimCLR", "other", lambda: SimCLR(NoDim()), TypeError, "embed_dim"),
    ("SimCLR", "range", lambda: SimCLR(ENC, 8, temperature=-1.0), ValueError, "temperature"),
    ("SimCLR", "range", lambda: SimCLR(ENC, 0), ValueError, "feat_dim"),
    ("SimCLR", "shape", lambda: _simclr().training_step(X_RANK3), ValueError, "x"),
    ("SimCLR", "range", lambda: _simclr().training_step(X_BIG), ValueError, "x"),
    ("SimCLR", "shape", lambda: SimCLR(ENC, 9).training_step(X), ValueError, "feat_dim"),
    ("SimCLR", "range", lambda: _simclr().configure_optimizers(lr=0.0), ValueError, "lr"),
    (
        "TwoViewFramework",
        "range",
        lambda: TwoViewFramework(ENC, 8, proj_dim=0),
        ValueError,
        "proj_dim",
    ),
    ("BYOLLite", "range", lambda: BYOLLite(ENC, 8, tau_ema=1.0), ValueError, "tau_ema"),
    ("BYOLLite", "other", lambda: BYOLLite(NoDim()), TypeError, "embed_dim"),
    ("IECL", "range", lambda: IECL(ENC, 8, beta_reg=-0.1), ValueError, "beta_reg"),
    ("IECL", "range", lambda: IECL(ENC, 8, lam_entropy=NAN), ValueError, "lam_entropy"),
    ("IECL", "range", lambda: IECL(ENC, 8, transform_warmup=1.0), ValueError, "transform_warmup"),
    ("IECL", "other", lambda: IECL(ENC, 8, base="swav"), ValueError, "base"),
    (
        "IECL",
        "range",
        lambda: IECL(ENC, 8, base="moco", temperature=0.0),
        ValueError,
        "temperature",
    ),
    ("IECL", "other", lambda: IECL(ENC, 8, reg_mode="volume"), ValueError, "mode"),
    ("IECL", "type", lambda: IECL(ENC, 8, transform="noise"), TypeError, "transform"),
    ("IECL", "other", lambda: IECL(NoDim()), TypeError, "embed_dim"),
    ("IECL", "nan", lambda: _iecl().training_step(X_NAN), ValueError, "x"),
    ("IECL", "range", lambda: _iecl().training_step(X, step=-1), ValueError, "step"),
    ("IECL", "range", lambda: _iecl().training_step(X_BIG), ValueError, "x"),
    ("IECL", "shape", lambda: _iecl().training_step(X_RANK3), ValueError, "x"),
    ("IECL", "shape", lambda: _iecl().encode(X_RANK3), ValueError, "x"),
    ("IECLWrapper", "type", lambda: IECLWrapper(ENC), TypeError, "base"),
    (
        "IECLWrapper",
        "range",
        lambda: IECLWrapper(_simclr(), consistency_margin=-1.0),
        ValueError,
        "consistency_margin",
    ),
    (
        "IECLFeatureExtractor",
        "range",
        lambda: IECLFeatureExtractor(steps=1).fit(ARR + 1.0),
        ValueError,
        "X",
    ),
    (
        "IECLFeatureExtractor",
        "nan",
        lambda: IECLFeatureExtractor(steps=1).fit(np.full((8, 3, 16, 16), NAN)),
        ValueError,
        "X",
    ),
    (
        "IECLFeatureExtractor",
        "shape",
        lambda: IECLFeatureExtractor(steps=1).fit(ARR[:, :2]),
        ValueError,
        "X",
    ),
    (
        "IECLFeatureExtractor",
        "shape",
        lambda: IECLFeatureExtractor(steps=1).fit(ARR[0, 0]),
        ValueError,
        "X",
    ),
    (
        "IECLFeatureExtractor",
        "empty",
        lambda: IECLFeatureExtractor(steps=1).fit(ARR[:0]),
        ValueError,
        "X",
    ),
    (
        "IECLFeatureExtractor",
        "range",
        lambda: IECLFeatureExtractor(epochs=0).fit(ARR),
        ValueError,
        "epochs",
    ),
    (
        "IECLFeatureExtractor",
        "range",
        lambda: IECLFeatureExtractor(batch_size=64).fit(ARR),
        ValueError,
        "batch_size",
    ),
    (
        "IECLFeatureExtractor",
        "other",
        lambda: IECLFeatureExtractor(backbone="vit").fit(ARR),
        ValueError,
        "backbone",
    ),
    ("make_framework", "other", lambda: make_framework("swav"), ValueError, "method"),
    (
        "make_framework",
        "range",
        lambda: make_framework("moco", momentum=1.0),
        ValueError,
        "momentum",
    ),
    ("MoCo", "type", lambda: MoCo("resnet18", 8), TypeError, "encoder"),
    ("MoCo", "other", lambda: MoCo(NoDim()), TypeError, "embed_dim"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, temperature=0.0), ValueError, "temperature"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, temperature=-0.2), ValueError, "temperature"),
    ("MoCo", "nan", lambda: MoCo(ENC, 8, temperature=NAN), ValueError, "temperature"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, momentum=1.0), ValueError, "momentum"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, momentum=-0.1), ValueError, "momentum"),
    ("MoCo", "nan", lambda: MoCo(ENC, 8, momentum=NAN), ValueError, "momentum"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, queue_size=0), ValueError, "queue_size"),
    ("MoCo", "type", lambda: MoCo(ENC, 8, queue_size=16.5), TypeError, "queue_size"),
    ("MoCo", "type", lambda: MoCo(ENC, 8, symmetric="yes"), TypeError, "symmetric"),
    ("MoCo", "range", lambda: MoCo(ENC, 8, hidden_dim=0), ValueError, "hidden_dim"),
    # the queue must be a whole number of batches of keys, and at least one batch
    ("MoCo", "range", lambda: _moco(queue_size=6).training_step(X), ValueError, "queue_size"),
    ("MoCo", "range", lambda: _moco(queue_size=2).training_step(X), ValueError, "queue_size"),
    (
        "MoCo",
        "range",
        lambda: _moco(queue_size=4, symmetric=True).training_step(X),
        ValueError,
        "queue_size",
    ),
    (
        "MoCo",
        "range",
        lambda: IECLWrapper(_moco(queue_size=6)).training_step(X),
        ValueError,
        "queue_size",
    ),
    ("MoCo", "nan", lambda: _moco(queue_size=8).training_step(X_NAN), ValueError, "x"),
    ("MoCo", "shape", lambda: _moco(queue_size=8).training_step(X_RANK3), ValueError, "x"),
    ("MoCo", "shape", lambda: _moco(queue_size=8).enqueue(Z), ValueError, "keys"),
    ("queue_infonce", "shape", lambda: queue_infonce(Z, Z[:3], Z), ValueError, "k"),
    ("queue_infonce", "shape", lambda: queue_infonce(Z, Z, Z[:, :2]), ValueError, "queue"),
    ("queue_infonce", "empty", lambda: queue_infonce(Z, Z, Z[:0]), ValueError, "queue"),
    ("queue_infonce", "nan", lambda: queue_infonce(Z * NAN, Z, Z), ValueError, "q"),
    ("queue_infonce", "inf", lambda: queue_infonce(Z, Z, Z * INF), ValueError, "queue"),
    (
        "queue_infonce",
        "range",
        lambda: queue_infonce(Z, Z, Z, temperature=0.0),
        ValueError,
        "temperature",
    ),
    ("queue_infonce", "type", lambda: queue_infonce(Z.numpy(), Z, Z), TypeError, "q"),
    ("make_framework", "range", lambda: make_framework("simclr", width=0), ValueError, "width"),
    ("train_ssl", "type", lambda: train_ssl(object(), ARR, 1), TypeError, "model"),
    ("train_ssl", "range", lambda: train_ssl(_simclr(), ARR, 0), ValueError, "steps"),
    ("train_ssl", "range", lambda: train_ssl(_simclr(), ARR * 2, 1), ValueError, "images"),
    (
        "train_ssl",
        "range",
        lambda: train_ssl(_simclr(), ARR, 1, batch_size=1),
        ValueError,
        "batch_size",
    ),
]
EXEMPT: dict[str, str] = {}
