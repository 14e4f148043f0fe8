"""Real labelled sets that ship with scikit-learn and scikit-image (no download)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray
    description: str = ""

    @property
    def n_classes(self) -> int:
        return int(np.unique(self.y).size)


def _sklearn(name: str) -> Dataset:
    from sklearn import datasets

    loader = getattr(datasets, f"load_{name}")
    bunch = loader()
    return Dataset(name, np.asarray(bunch.data, float), np.asarray(bunch.target), "scikit-learn")


def lfw_faces() -> Dataset:
    """scikit-image's ``lfw_subset``: 100 faces and 100 non-faces, 25x25 pixels (625 features)."""
    from skimage import data

    images = np.asarray(data.lfw_subset(), dtype=float)
    y = np.r_[np.ones(100, dtype=int), np.zeros(100, dtype=int)]
    return Dataset("lfw_subset", images.reshape(len(images), -1), y, "scikit-image")


BUNDLED = ("digits", "breast_cancer", "wine", "iris", "lfw_subset")


def load(name: str) -> Dataset:
    """One bundled labelled set by name: digits, breast_cancer, wine, iris or lfw_subset."""
    if name == "lfw_subset":
        return lfw_faces()
    if name in {"digits", "breast_cancer", "wine", "iris"}:
        return _sklearn(name)
    raise ValueError(f"unknown bundled set {name!r}; valid: {', '.join(BUNDLED)}")
