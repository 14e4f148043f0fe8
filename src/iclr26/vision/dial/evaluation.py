"""Group-robustness metrics: per-group accuracy, worst-group accuracy (WGA), average accuracy
and their gap, in percent."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def group_accuracy(pred, y, groups) -> dict:
    """``{"avg", "wga", "gap", "per_group"}`` in percent; ``avg`` is the plain mean accuracy
    over all points (on a group-balanced pool, the mean of the group accuracies)."""
    pred = V.check_array(pred, "pred", ndim=1, dtype=np.int64)
    y = V.check_array(y, "y", ndim=1, dtype=np.int64, n_rows=len(pred))
    groups = V.check_array(groups, "groups", ndim=1, dtype=np.int64, n_rows=len(pred))
    correct = pred == y
    per_group = {int(g): 100.0 * float(correct[groups == g].mean()) for g in np.unique(groups)}
    avg = 100.0 * float(correct.mean())
    wga = min(per_group.values())
    return {"avg": avg, "wga": wga, "gap": avg - wga, "per_group": per_group}
