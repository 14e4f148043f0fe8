"""Networks built from lmKAN layers: an MLP-like stack, its training loop, and a regressor."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .layer import LMKAN2d


def hessian_schedule(
    step: int, total_steps: int, lam0: float = 1.0, decade_fraction: float = 0.06
) -> float:
    """Smoothness weight: ``lam0 / 10**(step / (decade_fraction * total))`` for the first half
    of training, 0 afterwards (the official 250 + 250 epoch schedule with a decade every 30
    epochs, compressed to ``total_steps``)."""
    if total_steps <= 0 or step < 0:
        raise ValueError("need total_steps > 0 and step >= 0")
    if step >= total_steps // 2:
        return 0.0
    return lam0 / 10 ** (step / (decade_fraction * total_steps))


def lr_factor(step: int, total_steps: int) -> float:
    """Constant learning rate for the first half, cosine decay to 0 over the second half."""
    half = total_steps // 2
    if step < half:
        return 1.0
    return 0.5 * (1.0 + math.cos(math.pi * (step - half) / max(1, total_steps - half)))


class LMKANMLP(nn.Module):
    """``[BatchNorm(affine=False) -> LMKAN2d] x depth`` then ``BatchNorm -> LMKAN2d(hidden, out)``.

    No activations: every lmKAN layer is already nonlinear. The affine-free BatchNorm keeps the
    inputs of each layer near N(0, 1), where the grid is dense.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int,
        depth: int = 2,
        num_grids: int = 8,
        init_scale: float = 0.1,
        backend: str = "embedding_bag",
    ) -> None:
        super().__init__()
        if depth < 1:
            raise ValueError("depth must be >= 1")
        widths = [in_dim] + [hidden] * depth + [out_dim]
        layers: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [
                nn.BatchNorm1d(a, affine=False),
                LMKAN2d(a, b, num_grids, init_scale, backend=backend),
            ]
        self.net = nn.Sequential(*layers)
        self.in_dim = in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"expected input (batch, {self.in_dim}), got {tuple(x.shape)}")
        return self.net(x)

    def lmkan_layers(self) -> list[LMKAN2d]:
        return [m for m in self.net if isinstance(m, LMKAN2d)]

    def hessian_penalty(self) -> torch.Tensor:
        return sum(layer.hessian_penalty() for layer in self.lmkan_layers())

    def flops(self, batch: int = 1) -> int:
        """lmKAN layers' FLOPs plus 1 per element for every BatchNorm."""
        total = sum(layer.flops() for layer in self.lmkan_layers())
        total += sum(m.num_features for m in self.net if isinstance(m, nn.BatchNorm1d))
        return batch * total


def _train(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    loss_fn,
    batch_size: int,
    lr: float,
    lam0: float,
    seed: int,
) -> nn.Module:
    if epochs < 1 or batch_size < 2 or lr <= 0:
        raise ValueError("need epochs >= 1, batch_size >= 2 and lr > 0")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} rows but y has {y.shape[0]}")
    generator = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n = x.shape[0]
    steps_per_epoch = math.ceil(n / batch_size)
    total = epochs * steps_per_epoch
    has_penalty = hasattr(model, "hessian_penalty")
    step = 0
    model.train()
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            if idx.numel() < 2:
                continue
            for group in opt.param_groups:
                group["lr"] = lr * lr_factor(step, total)
            loss = loss_fn(model(x[idx]), y[idx])
            lam = hessian_schedule(step, total, lam0) if has_penalty else 0.0
            if lam > 0:
                loss = loss + lam * model.hessian_penalty()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
    model.eval()
    return model


def train_regressor(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    lam0: float = 1.0,
    seed: int = 0,
) -> nn.Module:
    """Adam on the MSE, constant LR then cosine decay; Hessian penalty ``lambda(step)`` when the
    model has one (lmKAN) — the same loop for lmKAN and MLP baselines."""
    return _train(model, x, y, epochs, F.mse_loss, batch_size, lr, lam0, seed)


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    lam0: float = 1.0,
    seed: int = 0,
) -> nn.Module:
    """:func:`train_regressor`'s loop with the cross-entropy of logits and integer labels."""
    return _train(model, x, labels, epochs, F.cross_entropy, batch_size, lr, lam0, seed)


class LMKANRegressor:
    """scikit-learn style regressor around :class:`LMKANMLP` (standardised targets)."""

    def __init__(
        self,
        hidden: int = 16,
        depth: int = 2,
        num_grids: int = 8,
        epochs: int = 50,
        lr: float = 1e-3,
        batch_size: int = 256,
        lam0: float = 1.0,
        random_state: int = 0,
    ) -> None:
        self.hidden, self.depth, self.num_grids = hidden, depth, num_grids
        self.epochs, self.lr, self.batch_size = epochs, lr, batch_size
        self.lam0, self.random_state = lam0, random_state

    def get_params(self, deep: bool = True) -> dict:
        keys = ("hidden", "depth", "num_grids", "epochs", "lr", "batch_size", "lam0")
        return {k: getattr(self, k) for k in keys} | {"random_state": self.random_state}

    def set_params(self, **params) -> LMKANRegressor:
        for key, value in params.items():
            if key not in self.get_params():
                raise ValueError(f"unknown parameter {key!r}")
            setattr(self, key, value)
        return self

    def fit(self, X, y) -> LMKANRegressor:
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y, dtype=np.float32)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError("X must be (n, d) and y (n,) with matching n")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ValueError("X and y must be finite")
        self.y_mean_, self.y_std_ = float(y.mean()), float(y.std() + 1e-12)
        torch.manual_seed(self.random_state)
        self.model_ = LMKANMLP(X.shape[1], self.hidden, 1, self.depth, self.num_grids)
        target = torch.from_numpy((y - self.y_mean_) / self.y_std_).unsqueeze(1)
        train_regressor(
            self.model_,
            torch.from_numpy(X),
            target,
            self.epochs,
            self.batch_size,
            self.lr,
            self.lam0,
            self.random_state,
        )
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "model_"):
            raise ValueError("call fit before predict")
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must be (n, {self.n_features_in_})")
        with torch.no_grad():
            out = self.model_(torch.from_numpy(X)).squeeze(1).numpy()
        return out * self.y_std_ + self.y_mean_

    def score(self, X, y) -> float:
        y = np.asarray(y, dtype=np.float64)
        residual = ((y - self.predict(X)) ** 2).sum()
        return float(1.0 - residual / ((y - y.mean()) ** 2).sum())
