"""Training loop and a scikit-learn front end for array data.

:func:`train_ssl` runs any framework (``SimCLR``, ``MoCo``, ``BYOLLite``, ``IECL``...) for a fixed
number of steps on an image array and logs loss, Delta H and R. :class:`IECLFeatureExtractor`
wraps it as a ``TransformerMixin``: ``fit(X)`` trains a fresh encoder self-supervised,
``transform(X)`` returns its frozen features.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from iclr26 import validation as V
from iclr26.models.vision import TinyConvNet

BACKBONES = ("tiny_cnn",)
METHODS = ("iecl", "simclr", "byol", "iecl_byol", "moco", "iecl_moco")


def _as_images(X, name: str = "X") -> np.ndarray:
    """(n, C, H, W) float32 in [0, 1] from (n, C, H, W) or (n, H, W) input."""
    arr = V.check_array(X, name, ndim=(3, 4), dtype=np.float32, low=0.0, high=1.0)
    if arr.ndim == 3:
        arr = arr[:, None]
    if arr.shape[1] not in (1, 3):
        raise ValueError(f"{name} must have 1 or 3 channels (n, C, H, W), got {arr.shape[1]}")
    if min(arr.shape[2:]) < 8:
        raise ValueError(f"{name} images must be at least 8x8 pixels, got {arr.shape[2:]}")
    return np.ascontiguousarray(arr)


def train_ssl(
    model,
    images,
    steps: int,
    batch_size: int = 32,
    seed: int = 0,
    log_every: int = 10,
    progress: Callable[[int, dict], None] | None = None,
) -> dict[str, list[float]]:
    """Train ``model`` (anything with ``training_step(x, step, total_steps)``) for ``steps``
    steps on random batches of ``images`` (n, C, H, W) in [0, 1]; returns the history
    (``step``, ``loss``, ``delta_h``, ``reg`` every ``log_every`` steps, and ``seconds``)."""
    if not callable(getattr(model, "training_step", None)):
        raise TypeError(f"model must have a training_step method, got {type(model).__name__}")
    images = _as_images(images, "images")
    steps = V.check_int(steps, "steps", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=2, high=len(images))
    log_every = V.check_int(log_every, "log_every", low=1)
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    pool = torch.from_numpy(images)
    history: dict[str, list[float]] = {"step": [], "loss": [], "delta_h": [], "reg": []}
    started = time.perf_counter()
    for step in range(steps):
        idx = torch.from_numpy(rng.choice(len(pool), batch_size, replace=False))
        log = model.training_step(pool[idx], step, steps)
        if not np.isfinite(log["loss"]):
            raise FloatingPointError(f"training diverged at step {step}: loss {log['loss']}")
        if step % log_every == 0 or step == steps - 1:
            history["step"].append(step)
            for key in ("loss", "delta_h", "reg"):
                history[key].append(float(log.get(key, 0.0)))
            if progress is not None:
                progress(step, log)
    history["seconds"] = [time.perf_counter() - started]
    return history


def make_framework(
    method: str, in_ch: int = 3, width: int = 32, out_dim: int = 64, seed: int = 0, **kwargs
):
    """A fresh ``TinyConvNet(stride=8)`` encoder inside SimCLR / MoCo / BYOL-lite / IE-CL
    (``"iecl"`` on SimCLR, ``"iecl_byol"``, ``"iecl_moco"``)."""
    from iclr26.vision.iecl.byol import BYOLLite
    from iclr26.vision.iecl.moco import MoCo
    from iclr26.vision.iecl.model import IECL
    from iclr26.vision.iecl.simclr import SimCLR

    V.check_choice(method, "method", METHODS)
    torch.manual_seed(seed)
    encoder = TinyConvNet(width=width, out_dim=out_dim, stride=8, in_chans=in_ch)
    if method == "simclr":
        return SimCLR(encoder, out_dim, seed=seed, **kwargs)
    if method == "byol":
        return BYOLLite(encoder, out_dim, seed=seed, **kwargs)
    if method == "moco":
        return MoCo(encoder, out_dim, seed=seed, **kwargs)
    base = {"iecl": "simclr", "iecl_byol": "byol", "iecl_moco": "moco"}[method]
    return IECL(encoder, out_dim, base=base, in_ch=in_ch, seed=seed, **kwargs)


class IECLFeatureExtractor(TransformerMixin, BaseEstimator):
    """Self-supervised features for image arrays (n, 3, H, W) or (n, H, W) in [0, 1].

    ``method`` is ``"iecl"`` (IE-CL on SimCLR, default), ``"simclr"``, ``"byol"``,
    ``"iecl_byol"``, ``"moco"`` or ``"iecl_moco"`` (MoCo's queue of 4096 needs a
    ``batch_size`` dividing it); ``epochs`` passes over the data at ``batch_size`` (or exactly ``steps``
    steps when given)."""

    def __init__(
        self,
        backbone: str = "tiny_cnn",
        method: str = "iecl",
        epochs: int = 30,
        steps: int | None = None,
        batch_size: int = 32,
        lr: float = 1e-3,
        width: int = 32,
        feat_dim: int = 64,
        random_state: int = 0,
    ):
        self.backbone = backbone
        self.method = method
        self.epochs = epochs
        self.steps = steps
        self.batch_size = batch_size
        self.lr = lr
        self.width = width
        self.feat_dim = feat_dim
        self.random_state = random_state

    def fit(self, X, y=None):
        V.check_choice(self.backbone, "backbone", BACKBONES)
        V.check_choice(self.method, "method", METHODS)
        epochs = V.check_int(self.epochs, "epochs", low=1)
        steps = V.check_int(self.steps, "steps", low=1, allow_none=True)
        lr = V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        width = V.check_int(self.width, "width", low=1)
        feat_dim = V.check_int(self.feat_dim, "feat_dim", low=1)
        seed = V.check_int(self.random_state, "random_state", low=0)
        images = _as_images(X)
        batch = V.check_int(self.batch_size, "batch_size", low=2, high=len(images))
        total = steps if steps is not None else max(1, epochs * len(images) // batch)
        model = make_framework(self.method, images.shape[1], width, feat_dim, seed)
        model.configure_optimizers(lr)
        self.history_ = train_ssl(model, images, total, batch, seed)
        self.model_ = model
        self.n_channels_ = images.shape[1]
        self.n_features_out_ = feat_dim
        return self

    def transform(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        images = _as_images(X)
        if images.shape[1] != self.n_channels_:
            raise ValueError(
                f"X must have {self.n_channels_} channels like the training data, got {images.shape[1]}"
            )
        return self.model_.encode(torch.from_numpy(images)).numpy()
