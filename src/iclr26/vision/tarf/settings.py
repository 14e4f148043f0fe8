"""The four label-domain settings of TARF (Sec. 3 of the paper).

Three label domains are told apart: the labels attached to the forgetting data (Y_D), the
model's output label space (Y_M) and the granularity of the concept to erase (Y_T). With a
two-level hierarchy (superclass S, subclass c) that gives the conventional task and three
mismatch tasks:

| setting | model labels | forgetting data | target concept | retrained reference |
|---|---|---|---|---|
| ``all_matched`` | sub | samples of sub c | c | sub-model without c |
| ``target_mismatch`` | sub | samples of sub c | super S(c) | sub-model without all of S(c) |
| ``model_mismatch`` | super | samples of sub c, labelled S(c) | c | super-model without c |
| ``data_mismatch`` | super | samples of sub c, labelled S(c) | super S(c) | super-model without S(c) |

In ``target_mismatch`` and ``data_mismatch`` the siblings of c are *hidden target data* in the
remaining set; in ``model_mismatch`` they are retained data that share the forgotten output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

SETTINGS = ("all_matched", "target_mismatch", "model_mismatch", "data_mismatch")


@dataclass(frozen=True)
class Setting:
    """Index sets and labels of one unlearning task over a training set.

    ``labels`` are the model's labels of every training sample; ``forget_idx`` is D_f and
    ``remain_idx`` its complement D_r; ``target`` marks the samples of the target concept
    (D_f plus any hidden target data in D_r); ``retrain_idx`` is what the retrained reference
    is trained on (everything outside the target concept)."""

    name: str
    forget_sub: int
    forget_super: int
    model_level: str  # "sub" or "super"
    target_level: str  # "sub" or "super"
    labels: np.ndarray
    n_classes: int
    forget_idx: np.ndarray
    remain_idx: np.ndarray
    target: np.ndarray
    retrain_idx: np.ndarray

    @property
    def hidden_target_idx(self) -> np.ndarray:
        """Target-concept samples inside the remaining set (siblings of c where they count)."""
        return self.remain_idx[self.target[self.remain_idx]]

    def labels_of(self, y_sub: np.ndarray, y_super: np.ndarray) -> np.ndarray:
        """The model's labels of other samples (e.g. a test set) under this setting."""
        return np.asarray(y_sub if self.model_level == "sub" else y_super, dtype=np.int64)

    def target_of(self, y_sub: np.ndarray, y_super: np.ndarray) -> np.ndarray:
        """Which of other samples (e.g. a test set) belong to the target concept."""
        if self.target_level == "sub":
            return np.asarray(y_sub) == self.forget_sub
        return np.asarray(y_super) == self.forget_super


def make_setting(name: str, y_sub, y_super, forget_sub: int) -> Setting:
    """The index sets and labels of setting ``name`` for forgetting subclass ``forget_sub``.

    ``y_sub`` and ``y_super`` are the fine and coarse labels of the training set; every
    subclass must belong to exactly one superclass."""
    V.check_choice(name, "name", SETTINGS)
    y_sub = V.check_array(y_sub, "y_sub", ndim=1, dtype=np.int64, low=0)
    y_super = V.check_array(y_super, "y_super", ndim=1, dtype=np.int64, low=0, n_rows=len(y_sub))
    forget_sub = V.check_int(forget_sub, "forget_sub", low=0)
    if not np.any(y_sub == forget_sub):
        raise ValueError(f"forget_sub={forget_sub} has no training sample (the model never saw it)")
    parents = {int(s): set(np.unique(y_super[y_sub == s]).tolist()) for s in np.unique(y_sub)}
    bad = [s for s, p in parents.items() if len(p) != 1]
    if bad:
        raise ValueError(
            f"y_sub and y_super are not a hierarchy: subclass {bad[0]} has "
            f"superclasses {sorted(parents[bad[0]])}"
        )
    forget_super = next(iter(parents[forget_sub]))
    model_level = "sub" if name in ("all_matched", "target_mismatch") else "super"
    target_level = "sub" if name in ("all_matched", "model_mismatch") else "super"
    labels = y_sub if model_level == "sub" else y_super
    forget = y_sub == forget_sub
    target = (y_sub == forget_sub) if target_level == "sub" else (y_super == forget_super)
    return Setting(
        name=name,
        forget_sub=forget_sub,
        forget_super=forget_super,
        model_level=model_level,
        target_level=target_level,
        labels=labels.astype(np.int64),
        n_classes=int(labels.max()) + 1,
        forget_idx=np.flatnonzero(forget),
        remain_idx=np.flatnonzero(~forget),
        target=target,
        retrain_idx=np.flatnonzero(~target),
    )
