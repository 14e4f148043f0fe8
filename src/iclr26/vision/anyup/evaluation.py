"""Evaluating upsampled features: a per-pixel linear probe (a 1x1 conv) for semantic
segmentation scored by mIoU, the feature fidelity cos(AreaDown(F), P), and batched
upsampling.

The probe is trained on upsampled training features at pixels drawn at random (seeded,
``pixels_per_image`` per image; a 1x1 conv sees pixels independently, so this is the full
probe's objective on a subsample), standardised with the training statistics, with Adam for
``epochs`` epochs; it is evaluated on every pixel of the test images. A probe returned by
one call can be applied to another upsampler's features with ``probe=`` (the paper's
"semantic preservation" check, labelled as such by the caller).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.metrics.vision import miou
from iclr26.vision.anyup.model import check_inputs

Upsampler = Callable[..., torch.Tensor]


@dataclass
class LinearProbe:
    """A trained per-pixel linear probe: standardisation and a (C -> K) linear map."""

    mean: torch.Tensor
    std: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor

    def logits(self, feats: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) features -> (B, K, H, W) logits."""
        z = (feats - self.mean[None, :, None, None]) / self.std[None, :, None, None]
        return torch.einsum("bchw,kc->bkhw", z, self.weight) + self.bias[None, :, None, None]


def _as_tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    return torch.from_numpy(V.check_array(x, name, dtype=np.float32))


def _batches(n: int, batch_size: int):
    for start in range(0, n, batch_size):
        yield slice(start, min(n, start + batch_size))


def upsample_batched(
    upsampler: Upsampler, images, features, output_size=None, batch_size: int = 16
) -> torch.Tensor:
    """``upsampler(images, features, output_size)`` in batches without gradients;
    (N, C, H_out, W_out)."""
    images = _as_tensor(images, "images")
    features = _as_tensor(features, "features")
    check_inputs(images[:1], features[:1], output_size, unit_range=False)
    if len(images) != len(features):
        raise ValueError(f"features must have {len(images)} rows like images, got {len(features)}")
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    with torch.no_grad():
        return torch.cat(
            [
                upsampler(images[s], features[s], output_size)
                for s in _batches(len(images), batch_size)
            ]
        )


def feature_fidelity(
    upsampler: Upsampler, images, features, output_size=None, batch_size: int = 16
) -> float:
    """Mean over low-resolution cells of cos(AreaDown(F_hat), P): how well the upsampled
    features average back to the input features."""
    images = _as_tensor(images, "images")
    features = _as_tensor(features, "features")
    check_inputs(images[:1], features[:1], output_size, unit_range=False)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    total, count = 0.0, 0
    with torch.no_grad():
        for s in _batches(len(images), batch_size):
            up = upsampler(images[s], features[s], output_size)
            down = F.interpolate(up, size=features.shape[-2:], mode="area")
            cos = F.cosine_similarity(down, features[s], dim=1, eps=1e-8)
            total += float(cos.sum())
            count += cos.numel()
    return total / count


def _train_probe(
    z: torch.Tensor, y: torch.Tensor, n_classes: int, epochs: int, lr: float, seed: int
) -> LinearProbe:
    mean, std = z.mean(0), z.std(0).clamp_min(1e-6)
    zs = (z - mean) / std
    gen = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(z.shape[1], n_classes)
    with torch.no_grad():
        lin.weight.normal_(0, 0.01, generator=gen)
        lin.bias.zero_()
    opt = torch.optim.Adam(lin.parameters(), lr=lr)
    batch = 1024
    for _ in range(epochs):
        order = torch.randperm(len(zs), generator=gen)
        for s in _batches(len(zs), batch):
            idx = order[s]
            loss = F.cross_entropy(lin(zs[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return LinearProbe(mean, std, lin.weight.detach().clone(), lin.bias.detach().clone())


def probe_miou(
    upsampler: Upsampler,
    train_images,
    train_features,
    train_masks,
    test_images,
    test_features,
    test_masks,
    n_classes: int,
    epochs: int = 50,
    pixels_per_image: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
    batch_size: int = 16,
    probe: LinearProbe | None = None,
) -> dict:
    """Train a 1x1-conv linear probe on upsampled training features (at the mask size) and
    return ``{"miou", "pixel_acc", "probe"}`` on the test set; with ``probe`` given, skip
    training and evaluate that probe on this upsampler's test features."""
    tr_x, te_x = _as_tensor(train_images, "train_images"), _as_tensor(test_images, "test_images")
    tr_f = _as_tensor(train_features, "train_features")
    te_f = _as_tensor(test_features, "test_features")
    tr_y = V.check_array(train_masks, "train_masks", ndim=3, dtype=None)
    te_y = V.check_array(test_masks, "test_masks", ndim=3, dtype=None)
    n_classes = V.check_int(n_classes, "n_classes", low=2)
    epochs = V.check_int(epochs, "epochs", low=1)
    pixels_per_image = V.check_int(pixels_per_image, "pixels_per_image", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    V.check_same_length(train_images=tr_x, train_features=tr_f, train_masks=tr_y)
    V.check_same_length(test_images=te_x, test_features=te_f, test_masks=te_y)
    if tr_y.min() < 0 or tr_y.max() >= n_classes or te_y.min() < 0 or te_y.max() >= n_classes:
        raise ValueError(f"train_masks and test_masks must hold labels in [0, {n_classes})")
    size = tuple(te_y.shape[1:])
    if probe is None:
        if tuple(tr_y.shape[1:]) != size:
            raise ValueError("train_masks and test_masks must have the same (H, W)")
        rng = np.random.default_rng(seed)
        n_pix = size[0] * size[1]
        pick = rng.integers(0, n_pix, (len(tr_x), pixels_per_image))
        labels = torch.from_numpy(np.take_along_axis(tr_y.reshape(len(tr_y), -1), pick, 1))
        pick_t = torch.from_numpy(pick)
        rows = []
        with torch.no_grad():
            for s in _batches(len(tr_x), batch_size):
                up = upsampler(tr_x[s], tr_f[s], size).flatten(2)  # (b, C, H*W)
                idx = pick_t[s][:, None, :].expand(-1, up.shape[1], -1)
                rows.append(up.gather(2, idx).transpose(1, 2).reshape(-1, up.shape[1]))
        z = torch.cat(rows).float()
        probe = _train_probe(z, labels.reshape(-1).long(), n_classes, epochs, lr, seed)
    preds = []
    with torch.no_grad():
        for s in _batches(len(te_x), batch_size):
            up = upsampler(te_x[s], te_f[s], size).float()
            preds.append(probe.logits(up).argmax(1).numpy())
    pred = np.concatenate(preds)
    return {
        "miou": float(miou(pred, te_y, n_classes)),
        "pixel_acc": float((pred == te_y).mean()),
        "probe": probe,
    }
