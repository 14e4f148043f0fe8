"""The class-incremental protocol: disjoint class groups, one per task, no task id at test."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V


@dataclass
class Task:
    """One task of a class-incremental stream: its classes and its train (and test) images."""

    task_id: int
    classes: np.ndarray
    x: np.ndarray
    y: np.ndarray
    x_test: np.ndarray | None = None
    y_test: np.ndarray | None = None


def _images(x, name: str) -> np.ndarray:
    x = V.check_array(x, name, ndim=4, dtype=np.float32)
    return x


def _labels(y, name: str, n: int) -> np.ndarray:
    y = V.check_array(y, name, ndim=1, n_rows=n, dtype=None)
    if y.dtype.kind not in "iu":
        if y.dtype.kind == "f" and np.all(y == np.round(y)):
            return y.astype(np.int64)
        raise TypeError(f"{name} must hold integer class labels, got dtype {y.dtype}")
    if y.min() < 0:
        raise ValueError(f"{name} must hold non-negative class labels, got {y.min()}")
    return y.astype(np.int64)


def class_incremental(
    X,
    y,
    n_tasks: int,
    seed: int = 0,
    X_test=None,
    y_test=None,
    shuffle_classes: bool = True,
) -> list[Task]:
    """Split images ``X`` (n, C, H, W) with labels ``y`` into ``n_tasks`` tasks of disjoint,
    equally many classes (class order permuted with ``seed`` unless ``shuffle_classes`` is
    False); ``X_test``/``y_test`` are split by the same class groups."""
    X = _images(X, "X")
    y = _labels(y, "y", len(X))
    classes = np.unique(y)
    n_tasks = V.check_int(n_tasks, "n_tasks", low=1, high=len(classes))
    V.check_bool(shuffle_classes, "shuffle_classes")
    if len(classes) % n_tasks:
        raise ValueError(f"n_tasks ({n_tasks}) must divide the number of classes ({len(classes)})")
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test must be given together")
    if X_test is not None:
        X_test = _images(X_test, "X_test")
        y_test = _labels(y_test, "y_test", len(X_test))
        if X_test.shape[1:] != X.shape[1:]:
            raise ValueError(
                f"X_test must have images shaped {X.shape[1:]}, got {X_test.shape[1:]}"
            )
        unknown = np.setdiff1d(np.unique(y_test), classes)
        if unknown.size:
            raise ValueError(f"y_test holds classes absent from y: {unknown.tolist()}")
    order = np.random.default_rng(seed).permutation(classes) if shuffle_classes else classes
    tasks = []
    for t, group in enumerate(np.split(order, n_tasks)):
        group = np.sort(group)
        sel = np.isin(y, group)
        task = Task(t, group, X[sel], y[sel])
        if X_test is not None:
            sel_test = np.isin(y_test, group)
            task.x_test, task.y_test = X_test[sel_test], y_test[sel_test]
        tasks.append(task)
    return tasks
