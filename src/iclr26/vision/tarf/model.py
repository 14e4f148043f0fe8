"""The small classifier the claims use and the shared training loop (also the Retrain oracle)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V


class MaxPool2d(nn.MaxPool2d):
    """``nn.MaxPool2d`` computed on a channels-last copy and returned contiguous.

    The result and its gradient equal the plain layer's (a maximum does not depend on the
    memory layout), but torch's CPU kernel is several times faster on channels-last input,
    and pooling is most of this small network's inference time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            return super().forward(x)
        return super().forward(x.contiguous(memory_format=torch.channels_last)).contiguous()


class SmallCNN(nn.Module):
    """Two convolutions and two fully connected layers with a 64-d penultimate layer.

    ``features(x)`` returns the penultimate representation e(x) and ``head`` maps it to
    logits, so ``forward(x) == head(features(x))``."""

    def __init__(self, n_classes: int, in_channels: int = 3, size: int = 16, width: int = 32):
        super().__init__()
        self.n_classes = V.check_int(n_classes, "n_classes", low=2)
        in_channels = V.check_int(in_channels, "in_channels", low=1)
        self.size = V.check_int(size, "size", low=4)
        width = V.check_int(width, "width", low=1)
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1),
            nn.ReLU(),
            MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(2 * width * (self.size // 4) ** 2, 64),
            nn.ReLU(),
        )
        self.head = nn.Linear(64, self.n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def as_tensors(X, y, name: str = "X") -> tuple[torch.Tensor, torch.Tensor]:
    """Images (n, C, H, W) and integer labels as tensors, validated (finite, non-empty)."""
    if isinstance(X, torch.Tensor):
        V.check_tensor(X, name, ndim=4, floating=True)
        X_t = X.float()
    else:
        X_t = torch.as_tensor(V.check_array(X, name, ndim=4, dtype=np.float32))
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu().numpy()
    y_np = V.check_array(y, "y", ndim=1, n_rows=X_t.shape[0], low=0)
    if y_np.dtype.kind == "f" and not np.all(y_np == np.round(y_np)):
        raise TypeError("y must hold integer class labels")
    return X_t, torch.as_tensor(y_np.astype(np.int64))


def train_classifier(
    model: nn.Module,
    X,
    y,
    *,
    epochs: int = 15,
    lr: float = 0.05,
    batch: int = 128,
    seed: int = 0,
) -> nn.Module:
    """Train ``model`` in place with SGD (momentum 0.9) on cross-entropy; returns it in eval
    mode. The Retrain oracle is this loop on the retained data from a fresh model."""
    X, y = as_tensors(X, y)
    epochs = V.check_int(epochs, "epochs", low=1)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    batch = V.check_int(batch, "batch", low=1)
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(X), generator=g)
        for start in range(0, len(X), batch):
            idx = order[start : start + batch]
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sched.step()
    return model.eval()


@torch.no_grad()
def predict_proba(model: nn.Module, X: torch.Tensor, batch: int = 1024) -> torch.Tensor:
    """Softmax outputs in eval mode (restoring the model's mode afterwards)."""
    V.check_tensor(X, "X", min_ndim=2)
    was = model.training
    model.eval()
    out = torch.cat([torch.softmax(model(X[i : i + batch]), 1) for i in range(0, len(X), batch)])
    model.train(was)
    return out
