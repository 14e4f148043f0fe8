"""A vector-quantised image tokenizer fitted here: a k-means codebook over non-overlapping
``patch x patch`` pixel patches, tokens in raster order (the offline stand-in for the VQGAN
tokenizers of LlamaGen / Open-MAGVIT2), and the digits data it is fitted on."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


class VQTokenizer:
    """k-means VQ tokenizer: ``fit`` learns ``codebook_size`` patch centroids, ``encode`` maps
    square images to ``(side / patch) ** 2`` code indices (raster order), ``decode`` pastes the
    centroids back."""

    def __init__(self, codebook_size: int = 32, patch: int = 2, seed: int = 0):
        self.codebook_size = V.check_int(codebook_size, "codebook_size", low=2)
        self.patch = V.check_int(patch, "patch", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        self.codebook_: np.ndarray | None = None
        self.side_: int | None = None

    def _patches(self, images, name: str) -> np.ndarray:
        x = V.check_array(images, name, dtype=np.float64)
        if x.ndim == 2:  # flat square images
            side = int(round(np.sqrt(x.shape[1])))
            if side * side != x.shape[1]:
                raise ValueError(f"{name} rows must be flattened square images, got {x.shape[1]}")
            x = x.reshape(len(x), side, side)
        if x.ndim != 3 or x.shape[1] != x.shape[2]:
            raise ValueError(
                f"{name} must have shape (n, side, side) or (n, side*side), got {x.shape}"
            )
        side = x.shape[1]
        if side % self.patch:
            raise ValueError(f"{name} side {side} is not divisible by patch={self.patch}")
        if self.side_ is not None and side != self.side_:
            raise ValueError(f"{name} side {side} differs from the fitted side {self.side_}")
        g = side // self.patch
        p = x.reshape(len(x), g, self.patch, g, self.patch).transpose(0, 1, 3, 2, 4)
        return p.reshape(len(x), g * g, self.patch * self.patch), side

    def fit(self, images) -> VQTokenizer:
        from sklearn.cluster import KMeans

        patches, side = self._patches(images, "images")
        flat = patches.reshape(-1, patches.shape[-1])
        if len(np.unique(flat, axis=0)) < self.codebook_size:
            raise ValueError(
                f"images have fewer distinct patches than codebook_size={self.codebook_size}"
            )
        km = KMeans(self.codebook_size, n_init=1, random_state=self.seed).fit(flat)
        # order codes by mean intensity so that index 0 is the background patch
        order = np.argsort(km.cluster_centers_.mean(axis=1))
        self.codebook_ = km.cluster_centers_[order]
        self.side_ = side
        return self

    def _fitted(self) -> np.ndarray:
        if self.codebook_ is None:
            raise RuntimeError("VQTokenizer is not fitted; call fit(images) first")
        return self.codebook_

    @property
    def seq_len(self) -> int:
        self._fitted()
        return (self.side_ // self.patch) ** 2

    def encode(self, images) -> np.ndarray:
        """Nearest-centroid code of every patch: ``(n, seq_len)`` int64."""
        book = self._fitted()
        patches, _ = self._patches(images, "images")
        d = ((patches[:, :, None, :] - book[None, None]) ** 2).sum(-1)
        return d.argmin(-1).astype(np.int64)

    def decode(self, tokens) -> np.ndarray:
        """Images ``(n, side, side)`` from codes ``(n, seq_len)``."""
        book = self._fitted()
        t = V.check_array(tokens, "tokens", ndim=2, low=0, high=self.codebook_size - 1)
        if not np.issubdtype(t.dtype, np.integer):
            if not np.all(t == np.round(t)):
                raise TypeError("tokens must hold integer code indices")
            t = t.astype(np.int64)
        if t.shape[1] != self.seq_len:
            raise ValueError(f"tokens must have {self.seq_len} columns, got {t.shape[1]}")
        g, p = self.side_ // self.patch, self.patch
        x = book[t].reshape(len(t), g, g, p, p).transpose(0, 1, 3, 2, 4)
        return x.reshape(len(t), self.side_, self.side_)


def load_digits_split(test_size: int = 297, seed: int = 0):
    """scikit-learn's 1797 8x8 digits (intensities 0..16), a stratified train/test split:
    ``(X_train, y_train, X_test, y_test)`` with images of shape ``(n, 8, 8)``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    test_size = V.check_int(test_size, "test_size", low=10, high=1000)
    seed = V.check_int(seed, "seed", low=0)
    d = load_digits()
    xtr, xte, ytr, yte = train_test_split(
        d.images, d.target, test_size=test_size, stratify=d.target, random_state=seed
    )
    return xtr, ytr.astype(np.int64), xte, yte.astype(np.int64)
