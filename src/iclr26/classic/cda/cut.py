"""The optimal operating point: where to cut a 1-D projection into two classes.

A CDA direction is scored by the best cut of the training projections ``Q = X v``. Every cut
between consecutive sorted values is evaluated at once from cumulative class counts (one sort,
then O(N)), and the cut maximising the performance score

    ps = mean(F1 of the positive class, F1 of the negative class, AC),
    AC = 2 TPR TNR / (TPR + TNR),

is kept; its threshold (the "optimal operating point", OOP) is the midpoint of the two
projections it separates. ``cv_cut`` averages ps and OOP over K folds of the training set,
which smooths both the threshold and the score that the angle search maximises.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

# Elements per batch of (angles x folds x samples) arrays; bounds the memory of a batched search.
_BATCH_ELEMENTS = 2_000_000


def performance_score(tp, tn, fp, fn) -> np.ndarray:
    """Mean of F1(positive), F1(negative) and the AC score, elementwise over count arrays.

    Degenerate cases follow the reference implementation: recall is 1 for a class without
    members and precision is 0 when nothing is predicted as that class, so F1 is 0 whenever
    the class has no hit (F1 = 2 TP / (2 TP + FP + FN), with 0/0 read as 0); in the AC score a
    rate is 0 for an empty class and AC is 0 when both rates are 0.
    """
    tp, tn, fp, fn = (
        V.check_array(a, name, dtype=np.float64, low=0.0)
        for a, name in ((tp, "tp"), (tn, "tn"), (fp, "fp"), (fn, "fn"))
    )
    try:
        np.broadcast_shapes(tp.shape, tn.shape, fp.shape, fn.shape)
    except ValueError:
        raise ValueError(
            f"tp, tn, fp and fn must broadcast together, got shapes {tp.shape}, {tn.shape}, "
            f"{fp.shape} and {fn.shape}"
        ) from None
    return _score(tp, tn, fp, fn, tp + fn, tn + fp)


def _score(tp, tn, fp, fn, n_pos, n_neg) -> np.ndarray:
    """performance_score with the class sizes given (they are constant along a cut search)."""
    f1_pos = 2.0 * tp / np.maximum(tp + n_pos + fp, 1.0)  # 2TP + FP + FN = TP + P + FP
    f1_neg = 2.0 * tn / np.maximum(tn + n_neg + fn, 1.0)
    tpr = tp / np.maximum(n_pos, 1.0)
    tnr = tn / np.maximum(n_neg, 1.0)
    rate_sum = tpr + tnr
    ac = 2.0 * tpr * tnr / np.where(rate_sum > 0, rate_sum, 1.0)
    return (f1_pos + f1_neg + ac) / 3.0


def best_cut(Q: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Best cut of projections ``Q`` for binary labels ``y`` (1 = positive, on the high side).

    Returns ``(ps, oop)``: the best performance score and its threshold; samples with
    ``Q >= oop`` are predicted positive. Tied best cuts are resolved by the median rule
    (the middle cut, or the mean of the two middle thresholds).
    """
    Q, y = _check_projection(Q, y)
    ps, oop = _cut_search(Q[None, :], y, np.ones((1, y.size), dtype=bool))
    return float(ps[0, 0]), float(oop[0, 0])


def fold_masks(y: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """Training masks (K, N) of a K-fold split of the training set.

    Plain (stratification-free) random folds as in the reference; stratified when a class has
    fewer than ``n_folds`` members, so that no training part loses a whole class needlessly.
    """
    y = V.check_array(y, "y", ndim=1, dtype=None)
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must be binary with values 0 (negative) and 1 (positive)")
    y = y.astype(bool)
    n_folds = V.check_int(n_folds, "n_folds", low=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n = y.size
    n_folds = int(min(n_folds, n))
    if n_folds < 2:
        return np.ones((1, n), dtype=bool)
    fold = np.empty(n, dtype=int)
    if min(y.sum(), n - y.sum()) < n_folds:
        for members in (np.flatnonzero(y), np.flatnonzero(~y)):
            fold[rng.permutation(members)] = np.arange(members.size) % n_folds
    else:
        order = rng.permutation(n)
        fold[order] = np.arange(n) * n_folds // n
    return fold[None, :] != np.arange(n_folds)[:, None]


def cv_cut(
    Q: np.ndarray,
    y: np.ndarray,
    n_folds: int = 5,
    seed: int | np.random.Generator | None = 0,
    masks: np.ndarray | None = None,
) -> tuple[float, float]:
    """K-fold cut: ``best_cut`` on each fold's training part; returns the mean (ps, oop).

    Pass precomputed ``masks`` (from :func:`fold_masks`) to score many candidate projections
    on the same folds, as the training loop does.
    """
    Q, y = _check_projection(Q, y)
    if masks is None:
        masks = fold_masks(y, n_folds, np.random.default_rng(seed))
    else:
        masks = V.check_array(masks, "masks", ndim=2, dtype=None)
        if masks.dtype != bool or masks.shape[1] != y.size:
            raise ValueError(f"masks must be a boolean (K, {y.size}) array, got {masks.shape}")
    ps, oop = cv_cut_batch(Q[None, :], y, masks)
    return float(ps[0]), float(oop[0])


def cv_cut_batch(Q: np.ndarray, y: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold-averaged (ps, oop) for each row of ``Q`` (A, N); the batched form of ``cv_cut``."""
    y = np.asarray(y, dtype=bool)
    per_batch = max(1, _BATCH_ELEMENTS // (masks.shape[0] * y.size))
    ps_parts, oop_parts = [], []
    for start in range(0, Q.shape[0], per_batch):
        ps, oop = _cut_search(Q[start : start + per_batch], y, masks)
        ps_parts.append(ps.mean(axis=1))
        oop_parts.append(oop.mean(axis=1))
    return np.concatenate(ps_parts), np.concatenate(oop_parts)


def _check_projection(Q: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Q = V.check_array(Q, "Q", ndim=1, dtype=np.float64, min_rows=2)
    y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=Q.shape[0])
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must be binary with values 0 (negative) and 1 (positive)")
    return Q, y.astype(bool)


def _cut_search(Q: np.ndarray, y: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best cut for every candidate projection (rows of Q, shape (A, N)) and every training
    mask (rows of ``train``, shape (K, N)); returns ps and oop of shape (A, K).

    One sort per candidate; the folds reuse it: in sorted order, cumulative counts of a fold's
    positive and negative training samples give the confusion matrix of every cut at once.
    """
    n = y.size
    order = np.argsort(Q, axis=1)  # (A, N)
    q_sorted = np.take_along_axis(Q, order, axis=1)[:, None, :]  # (A, 1, N)
    in_train = np.moveaxis(train[:, order], 0, 1)  # (A, K, N)
    # training samples at or below each cut are predicted negative: FN and TN
    n_below = np.cumsum(in_train, axis=-1, dtype=float)
    fn = np.cumsum(in_train & y[order][:, None, :], axis=-1, dtype=float)
    tn = n_below - fn
    n_pos, n_neg = fn[..., -1:], tn[..., -1:]
    cut_fn, cut_tn = fn[..., :-1], tn[..., :-1]
    scores = _score(n_pos - cut_fn, cut_tn, n_neg - cut_tn, cut_fn, n_pos, n_neg)

    # A cut after sorted position i exists when i is a training sample and a later training
    # sample has a strictly larger projection; its threshold is the midpoint of the two.
    ties = np.any(q_sorted[..., 1:] == q_sorted[..., :-1])
    if ties:
        position = np.where(in_train, np.arange(n), n)
        next_train = np.minimum.accumulate(position[..., :0:-1], axis=-1)[..., ::-1]
        q_padded = np.concatenate([q_sorted[:, 0, :], np.full((Q.shape[0], 1), -np.inf)], 1)
        q_next = np.take_along_axis(q_padded[:, None, :], next_train, axis=-1)
        valid = in_train[..., :-1] & (q_next > q_sorted[..., :-1])
    else:  # distinct values: every training sample but the last opens a cut
        valid = in_train[..., :-1] & (n_below[..., :-1] < n_below[..., -1:])
    scores = np.where(valid, scores, -np.inf)

    best = scores.max(axis=-1)
    tied = scores == best[..., None]
    n_tied = tied.sum(axis=-1)
    if np.all(n_tied == 1):
        low = high = np.argmax(tied, axis=-1)[..., None]
    else:  # median rule: the middle tied cut, or the two middle ones
        rank = np.cumsum(tied, axis=-1)
        low = np.argmax(rank > ((n_tied - 1) // 2)[..., None], axis=-1)[..., None]
        high = np.argmax(rank > (n_tied // 2)[..., None], axis=-1)[..., None]
    oop = 0.5 * (_midpoint(q_sorted, n_below, low) + _midpoint(q_sorted, n_below, high))

    # No valid cut (all training projections equal): predict everything positive.
    no_cut = ~np.isfinite(best)
    if no_cut.any():
        all_positive = _score(n_pos, 0 * n_neg, n_neg, 0 * n_pos, n_pos, n_neg)[..., 0]
        lowest = np.where(in_train, q_sorted, np.inf).min(axis=-1)
        best = np.where(no_cut, all_positive, best)
        oop = np.where(no_cut, lowest, oop)
    return best, oop


def _midpoint(q_sorted: np.ndarray, n_below: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """Threshold of the cut after sorted position ``cut`` (A, K, 1): the midpoint between it
    and the next training sample, found where the training count first rises past it."""
    count = np.take_along_axis(n_below, cut, axis=-1)
    following = np.argmax(n_below > count, axis=-1)[..., None]
    q = np.broadcast_to(q_sorted, n_below.shape)
    return 0.5 * (np.take_along_axis(q, cut, -1) + np.take_along_axis(q, following, -1))[..., 0]
