"""Unlearning metrics, each compared with the Retrain reference of the same setting.

FA (accuracy on the target concept's training samples), RA (on the retained training samples),
TA-keep / TA-forget (test samples outside / inside the target concept), MIA (the efficacy of a
loss-threshold membership-inference attack: the fraction of target-concept training samples
that an attack trained on retained-train vs test losses calls non-members), and Avg-Gap, the
mean absolute difference to the reference over those five, in points.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .model import as_tensors
from .settings import Setting

METRICS = ("FA", "RA", "TA_keep", "TA_forget", "MIA")


@torch.no_grad()
def _losses_and_hits(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch: int = 1024):
    was = model.training
    model.eval()
    losses, hits = [], []
    for s in range(0, len(X), batch):
        logits = model(X[s : s + batch])
        losses.append(nn.functional.cross_entropy(logits, y[s : s + batch], reduction="none"))
        hits.append(logits.argmax(1) == y[s : s + batch])
    model.train(was)
    return torch.cat(losses).numpy(), torch.cat(hits).numpy()


def accuracy(model: nn.Module, X, y) -> float:
    """Top-1 accuracy in percent (NaN-free: an empty set is an error)."""
    X, y = as_tensors(X, y)
    return float(100.0 * _losses_and_hits(model, X, y)[1].mean())


def mia_efficacy(model: nn.Module, member, non_member, target, seed: int = 0) -> float:
    """Percent of ``target`` samples that a loss-based attack calls non-members. The attack is
    a logistic regression on the per-sample loss, trained on equal numbers of ``member``
    (retained training) and ``non_member`` (test) samples."""
    from sklearn.linear_model import LogisticRegression

    lm = _losses_and_hits(model, *as_tensors(*member, "member"))[0]
    ln = _losses_and_hits(model, *as_tensors(*non_member, "non_member"))[0]
    lt = _losses_and_hits(model, *as_tensors(*target, "target"))[0]
    rng = np.random.default_rng(seed)
    n = min(len(lm), len(ln))
    lm, ln = rng.choice(lm, n, replace=False), rng.choice(ln, n, replace=False)
    feats = np.log1p(np.concatenate([lm, ln]))[:, None]
    labels = np.concatenate([np.ones(n), np.zeros(n)])
    attack = LogisticRegression().fit(feats, labels)
    return float(100.0 * (attack.predict(np.log1p(lt)[:, None]) == 0).mean())


def unlearning_report(
    model: nn.Module,
    setting: Setting,
    X_train,
    X_test,
    y_sub_test,
    y_super_test,
    reference: dict | None = None,
    seed: int = 0,
) -> dict:
    """FA, RA, TA-keep, TA-forget and MIA of ``model`` under ``setting``; with ``reference``
    (the Retrain model's report) also the per-metric gaps and ``avg_gap`` in points."""
    if not isinstance(setting, Setting):
        raise TypeError("setting must come from make_setting")
    X_train, y_train = as_tensors(X_train, setting.labels, "X_train")
    y_sub_test = V.check_array(y_sub_test, "y_sub_test", ndim=1, dtype=np.int64)
    y_super_test = V.check_array(
        y_super_test, "y_super_test", ndim=1, dtype=np.int64, n_rows=len(y_sub_test)
    )
    X_test, y_test = as_tensors(X_test, setting.labels_of(y_sub_test, y_super_test), "X_test")
    t_train = torch.as_tensor(setting.target)
    t_test = torch.as_tensor(setting.target_of(y_sub_test, y_super_test))
    if not t_test.any() or t_test.all():
        raise ValueError("the test set must hold samples inside and outside the target concept")
    report = {
        "FA": accuracy(model, X_train[t_train], y_train[t_train]),
        "RA": accuracy(model, X_train[~t_train], y_train[~t_train]),
        "TA_keep": accuracy(model, X_test[~t_test], y_test[~t_test]),
        "TA_forget": accuracy(model, X_test[t_test], y_test[t_test]),
        "MIA": mia_efficacy(
            model,
            (X_train[~t_train], y_train[~t_train]),
            (X_test[~t_test], y_test[~t_test]),
            (X_train[t_train], y_train[t_train]),
            seed=seed,
        ),
    }
    if reference is not None:
        gaps = {k: abs(report[k] - reference[k]) for k in METRICS}
        report["gaps"] = gaps
        report["avg_gap"] = float(np.mean(list(gaps.values())))
    return report
