"""Networks built from lmKAN layers: an MLP-like stack, its training loop, and a regressor."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted
from torch import nn

from iclr26 import validation as V

from .conv import _check_batch_for_batchnorm
from .layer import LMKAN2d


def hessian_schedule(
    step: int, total_steps: int, lam0: float = 1.0, decade_fraction: float = 0.06
) -> float:
    """Smoothness weight: ``lam0 / 10**(step / (decade_fraction * total))`` for the first half
    of training, 0 afterwards (the official 250 + 250 epoch schedule with a decade every 30
    epochs, compressed to ``total_steps``)."""
    step = V.check_int(step, "step", low=0)
    total_steps = V.check_int(total_steps, "total_steps", low=1)
    lam0 = V.check_scalar(lam0, "lam0", low=0.0)
    decade_fraction = V.check_scalar(decade_fraction, "decade_fraction", low=0.0, low_open=True)
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
        extrapolate: str = "clamp",
    ) -> None:
        super().__init__()
        in_dim = V.check_int(in_dim, "in_dim", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        out_dim = V.check_int(out_dim, "out_dim", low=1)
        depth = V.check_int(depth, "depth", low=1)
        widths = [in_dim] + [hidden] * depth + [out_dim]
        layers: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [
                nn.BatchNorm1d(a, affine=False),
                LMKAN2d(a, b, num_grids, init_scale, extrapolate=extrapolate, backend=backend),
            ]
        self.net = nn.Sequential(*layers)
        self.in_dim = in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        V.check_tensor(x, "x", ndim=2, shape=(None, self.in_dim), floating=True)
        _check_batch_for_batchnorm(self, x)
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
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    V.check_tensor(x, "x", min_ndim=2, floating=True)
    if loss_fn is F.cross_entropy:
        V.check_tensor(y, "labels", ndim=1, integer=True, low=0)
    else:
        V.check_tensor(y, "y", min_ndim=1, floating=True)
    if x.shape[0] != y.shape[0]:
        name = "labels" if loss_fn is F.cross_entropy else "y"
        raise ValueError(f"x has {x.shape[0]} rows but {name} has {y.shape[0]}")
    if x.shape[0] < 2:
        raise ValueError(f"x has {x.shape[0]} sample(s); training needs at least 2")
    epochs = V.check_int(epochs, "epochs", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=2)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    lam0 = V.check_scalar(lam0, "lam0", low=0.0)
    seed = V.check_int(seed, "seed", low=0)
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


def _feature_matrix(X, owner: str) -> np.ndarray:
    """A dense, finite, real 2-D float32 matrix, with scikit-learn's wording for the cases its
    estimator checks look for (sparse input, 1-D input, zero features)."""
    if sp.issparse(X):
        raise TypeError(
            f"X is a sparse matrix; {owner} needs dense data (sparse input is not supported)"
        )
    if X is not None and not isinstance(X, str | bytes):
        try:
            X = np.asarray(X)
        except Exception as exc:  # ragged lists and the like
            raise ValueError(f"X could not be read as an array: {exc}") from None
        if X.dtype.kind == "c":
            raise ValueError("X holds complex values: Complex data not supported")
        if X.dtype.kind == "O":
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"X must hold numbers: {exc}") from None
        if X.ndim == 1:
            raise ValueError(
                "X must be 2-D, got a 1-D array. Reshape your data either using "
                "array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) "
                "if it contains a single sample."
            )
        if X.ndim == 2 and X.shape[1] == 0:
            raise ValueError(
                f"X has 0 feature(s) (shape=({X.shape[0]}, 0)) while a minimum of 1 is required."
            )
    X = V.check_array(X, "X", ndim=2)
    return np.array(X, dtype=np.float32, order="C")  # a writable copy for torch


class LMKANRegressor(RegressorMixin, BaseEstimator):
    """scikit-learn regressor around :class:`LMKANMLP` (standardised targets).

    Hyperparameters are validated in :meth:`fit` (the scikit-learn convention), so ``clone``,
    ``set_params``, ``GridSearchCV`` and ``cross_val_score`` work. ``X`` is cast to float32;
    NaN and infinity are refused. Training is deterministic for a fixed ``random_state``.

    ``sklearn.utils.estimator_checks.check_estimator`` passes (tested at a tiny size). Tags
    declare what that rests on: dense, finite input only (sparse and NaN input are refused
    with an error naming ``X``), one target, and ``poor_score`` (the check suite's regression
    score threshold is not asserted, since the checks run a network for a handful of epochs).
    ``fit`` takes no ``sample_weight``; one sample is refused (BatchNorm needs two).
    """

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
        self.hidden = hidden
        self.depth = depth
        self.num_grids = num_grids
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.lam0 = lam0
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        tags.regressor_tags.poor_score = True
        tags.non_deterministic = False
        return tags

    def _check_params(self) -> None:
        V.check_int(self.hidden, "hidden", low=1)
        V.check_int(self.depth, "depth", low=1)
        V.check_int(self.num_grids, "num_grids", low=3)
        V.check_int(self.epochs, "epochs", low=1)
        V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        V.check_int(self.batch_size, "batch_size", low=2)
        V.check_scalar(self.lam0, "lam0", low=0.0)
        V.check_int(self.random_state, "random_state", low=0)

    def fit(self, X, y) -> LMKANRegressor:
        self._check_params()
        X = _feature_matrix(X, type(self).__name__)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        y = V.check_array(y, "y", ndim=(1, 2)).astype(np.float32)
        if y.ndim == 2:
            if y.shape[1] != 1:
                raise ValueError(f"y must be 1-D (one target), got shape {y.shape}")
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected; y is flattened",
                DataConversionWarning,
                stacklevel=2,
            )
            y = y[:, 0]
        V.check_same_length(X=X, y=y)
        if X.shape[0] < 2:
            raise ValueError(
                f"X has 1 sample; {type(self).__name__} needs at least 2 samples (BatchNorm)"
            )
        self.n_features_in_ = X.shape[1]
        self.y_mean_ = float(y.mean())
        self.y_std_ = float(y.std()) or 1.0
        torch.manual_seed(self.random_state)
        self.model_ = LMKANMLP(X.shape[1], self.hidden, 1, self.depth, self.num_grids)
        target = torch.from_numpy((y - self.y_mean_) / self.y_std_).unsqueeze(1)
        train_regressor(
            self.model_,
            torch.from_numpy(X),
            target,
            self.epochs,
            min(self.batch_size, max(2, X.shape[0])),
            self.lr,
            self.lam0,
            self.random_state,
        )
        return self

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = _feature_matrix(X, type(self).__name__)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        self.model_.eval()
        with torch.no_grad():
            out = self.model_(torch.from_numpy(X)).squeeze(1).numpy()
        return out.astype(np.float64) * self.y_std_ + self.y_mean_
