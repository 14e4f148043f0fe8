"""Evaluation on digits: a small CNN trained on the real training images (frozen), whose 64-d
penultimate features give the Fréchet distance between generated and real images (the FID
analogue, "FD-digits") and whose predictions give the class consistency of samples."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


def frechet_distance(feats_a, feats_b) -> float:
    """``||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})`` between Gaussians fitted to two
    feature sets ``(n, d)``."""
    a = V.check_array(feats_a, "feats_a", ndim=2, dtype=np.float64, min_rows=2)
    b = V.check_array(feats_b, "feats_b", ndim=2, dtype=np.float64, min_rows=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feats_b must have {a.shape[1]} columns like feats_a, got {b.shape[1]}")
    mu = a.mean(0) - b.mean(0)
    sa, sb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    # tr (S_a S_b)^{1/2} = sum of sqrt eigenvalues of the PSD matrix S_a^{1/2} S_b S_a^{1/2}
    # (stable where S_a S_b is singular, e.g. dead ReLU features)
    w, u = np.linalg.eigh(sa)
    root_a = (u * np.sqrt(w.clip(0))) @ u.T
    tr_covmean = np.sqrt(np.linalg.eigvalsh(root_a @ sb @ root_a).clip(0)).sum()
    return float(mu @ mu + np.trace(sa) + np.trace(sb) - 2 * tr_covmean)


class _CNN(nn.Module):
    def __init__(self, n_classes: int, feat: int):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.fc = nn.Linear(32 * 16, feat)
        self.out = nn.Linear(feat, n_classes)

    def features(self, x):
        return F.relu(self.fc(self.conv(x).flatten(1)))

    def forward(self, x):
        return self.out(self.features(x))


class DigitEvaluator:
    """CNN on 8x8 images with intensities in [0, 16]; ``fit`` on real images, then
    ``features`` (n, 64), ``predict`` and ``accuracy``."""

    def __init__(self, epochs: int = 15, lr: float = 2e-3, feat_dim: int = 64, seed: int = 0):
        self.epochs = V.check_int(epochs, "epochs", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.feat_dim = V.check_int(feat_dim, "feat_dim", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        self.net_: _CNN | None = None

    @staticmethod
    def _images(images) -> torch.Tensor:
        x = V.check_array(images, "images", dtype=np.float32, low=0.0, high=16.0)
        if x.ndim == 2 and x.shape[1] == 64:
            x = x.reshape(-1, 8, 8)
        if x.ndim != 3 or x.shape[1:] != (8, 8):
            raise ValueError(f"images must have shape (n, 8, 8) or (n, 64), got {x.shape}")
        return torch.from_numpy(x[:, None] / 16.0)

    def fit(self, images, labels) -> DigitEvaluator:
        x = self._images(images)
        y = V.check_array(labels, "labels", ndim=1, low=0)
        V.check_same_length(images=x, labels=y)
        y = torch.as_tensor(y.astype(np.int64))
        torch.manual_seed(self.seed)
        net = _CNN(int(y.max()) + 1, self.feat_dim)
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        g = torch.Generator().manual_seed(self.seed)
        for _ in range(self.epochs):
            for idx in torch.randperm(len(x), generator=g).split(64):
                loss = F.cross_entropy(net(x[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.net_ = net.eval()
        return self

    def _net(self) -> _CNN:
        if self.net_ is None:
            raise RuntimeError("DigitEvaluator is not fitted; call fit(images, labels) first")
        return self.net_

    @torch.no_grad()
    def features(self, images) -> np.ndarray:
        return self._net().features(self._images(images)).numpy().astype(np.float64)

    @torch.no_grad()
    def predict(self, images) -> np.ndarray:
        return self._net()(self._images(images)).argmax(1).numpy()

    def accuracy(self, images, labels) -> float:
        y = V.check_array(labels, "labels", ndim=1)
        pred = self.predict(images)
        V.check_same_length(images=pred, labels=y)
        return float((pred == y).mean())
