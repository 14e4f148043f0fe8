"""Hypothesis classes with vectorised version-space primitives: 1-D stumps and depth-2 trees.

Pool points live in integer cells (1-D positions, or a w x w grid); ``weights`` counts the pool
points per cell. Every class offers, for a boolean version-space ``mask`` over its hypotheses:
``errors(c0, c1)`` (mistakes of every hypothesis given per-cell label counts),
``disagreement_region(mask)`` (cells where two surviving hypotheses disagree),
``radius(mask, center)`` (largest pool disagreement mass with ``center``) and decoding/prediction.

Depth-2 trees on a 2-D grid use the additive structure of the paper's setting: a tree is a root
split (feature f, threshold a) with a left and a right child, each a constant leaf or a split on
the other feature (two leaf labels); its error is e_L(f, a, c_L) + e_R(f, a, c_R), computed for
every child from 2-D prefix sums. With ``allow_feature_reuse`` children may also split on the
root's feature inside their side (the paper's necessity construction).
"""

from __future__ import annotations

import math

import numpy as np

from iclr26 import validation as V


def _lexi_argmin(values: np.ndarray, mask: np.ndarray) -> tuple:
    """Index of the smallest value among ``mask`` (ties: lexicographically first)."""
    if not mask.any():
        raise ValueError("the version space is empty")
    values = np.asarray(values)
    masked = values.astype(np.promote_types(values.dtype, np.float32), copy=True)
    np.copyto(masked, np.inf, where=~mask)
    return np.unravel_index(int(np.argmin(masked)), values.shape)


class StumpClass:
    """Thresholds on a 1-D pool of ``n`` positions: h_{s,a}(x) = s if x < a else 1 - s.

    Hypotheses are indexed (s, a), s in {0, 1}, a in 0..n (a = 0 or n: constant classifiers).
    """

    def __init__(self, n: int):
        self.n = V.check_int(n, "n", low=2)
        self.shape = (2, self.n + 1)
        self.size = 2 * (self.n + 1)
        self.cell_shape = (self.n,)
        self.weights = np.ones(self.n)
        self.vc_dim = 2

    def full_mask(self) -> np.ndarray:
        return np.ones(self.shape, dtype=bool)

    def errors(self, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
        """Mistakes of every stump: label-1 counts left of a for s = 0 plus label-0 counts right."""
        z = np.zeros(1)
        left0 = np.concatenate([z, np.cumsum(c0)])  # sum over x < a
        left1 = np.concatenate([z, np.cumsum(c1)])
        right0, right1 = left0[-1] - left0, left1[-1] - left1
        return np.stack([left1 + right0, left0 + right1])

    def predict_cells(self, index) -> np.ndarray:
        s, a = int(index[0]), int(index[1])
        x = np.arange(self.n)
        return np.where(x < a, s, 1 - s).astype(np.int8)

    def disagreement_region(self, mask: np.ndarray) -> np.ndarray:
        x = np.arange(self.n)
        predicted = np.zeros((2, self.n), dtype=bool)  # label l predicted somewhere at x
        a = np.arange(self.n + 1)
        for s in (0, 1):
            alive = a[mask[s]]
            if alive.size == 0:
                continue
            predicted[s] |= alive.max() > x  # some surviving a > x predicts s at x
            predicted[1 - s] |= alive.min() <= x
        return predicted[0] & predicted[1]

    def radius(self, mask: np.ndarray, center) -> float:
        return _radius(self, mask, center)

    def argmin(self, values: np.ndarray, mask: np.ndarray) -> tuple:
        return _lexi_argmin(values, mask)


def _radius(cls, mask: np.ndarray, center) -> float:
    pred = cls.predict_cells(center)
    c0 = cls.weights * (pred == 0)
    c1 = cls.weights * (pred == 1)
    dist = cls.errors(c0, c1)
    dist = dist.astype(np.promote_types(dist.dtype, np.float32), copy=False)
    np.copyto(dist, -np.inf, where=~mask)  # in place: the tree pair table is large
    return float(np.max(dist)) / float(cls.weights.sum())


class GridTreeClass:
    """Depth-2 decision trees on a ``w`` x ``w`` integer grid (distinct features on each path).

    Hypothesis index (f, a, c_L, c_R): root feature f in {0, 1}, threshold between values a
    and a + 1 (a in 0..w-2), child options c in 0..K'-1: 0/1 constant leaves, then
    2 + 4 b + 2 l_low + l_high for a split on the other feature at b; with feature reuse also
    K + 4 b + 2 l_low + l_high for a split on the root's feature (valid only inside the side).
    ``weights`` (w x w) counts the pool points per cell (default: one per cell).
    """

    def __init__(
        self,
        w: int,
        dim: int = 2,
        depth: int = 2,
        allow_feature_reuse: bool = False,
        weights: np.ndarray | None = None,
    ):
        V.check_int(dim, "dim")
        V.check_int(depth, "depth")
        if dim != 2 or depth != 2:
            raise ValueError(
                "dim and depth: GridTreeClass implements depth-2 trees on 2-D grids; "
                "use EnumeratedClass for other (dim, depth)"
            )
        self.w = V.check_int(w, "w", low=2)
        self.allow_feature_reuse = V.check_bool(allow_feature_reuse, "allow_feature_reuse")
        self.k_other = 2 + 4 * (self.w - 1)
        self.k = self.k_other + (4 * (self.w - 1) if self.allow_feature_reuse else 0)
        self.shape = (2, self.w - 1, self.k, self.k)
        self.size = int(np.prod(self.shape))
        self.cell_shape = (self.w, self.w)
        if weights is None:
            weights = np.ones(self.cell_shape)
        weights = V.check_array(
            weights, "weights", shape=self.cell_shape, dtype=np.float64, low=0.0
        )
        if not weights.sum() > 0:
            raise ValueError("weights must put positive mass on some cell")
        self.weights = weights
        self.vc_dim = 4 * (2 + math.log(2))  # 2^d (d + ln D), the paper's O(.) without constants

    # ----- child options -------------------------------------------------------------------
    def decode_child(self, c: int) -> tuple:
        """('const', label) | ('other', b, l_low, l_high) | ('same', b, l_low, l_high)."""
        c = int(c)
        if c < 2:
            return ("const", c)
        if c < self.k_other:
            b, code = divmod(c - 2, 4)
            return ("other", b, code >> 1, code & 1)
        b, code = divmod(c - self.k_other, 4)
        return ("same", b, code >> 1, code & 1)

    def child_errors(self, c0: np.ndarray, c1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """e_L, e_R of shape (2, w-1, K'): mistakes of each child option on each side of each
        root (f, a), from per-cell label counts (invalid same-feature options: +inf)."""
        w = self.w
        e_left = np.empty((2, w - 1, self.k))
        e_right = np.empty((2, w - 1, self.k))
        for f in (0, 1):
            counts = [np.asarray(c0, float), np.asarray(c1, float)]
            if f == 1:  # rows = root feature, columns = the other feature
                counts = [c.T for c in counts]
            rect, tot_side, full_cols, tot = [], [], [], []
            for c in counts:
                rows = np.cumsum(c, axis=0)[:-1]  # (w-1, w): sum over v <= a
                area = np.cumsum(rows, axis=1)  # sum over v <= a, u <= b
                rect.append(area[:, :-1])  # (w-1 [a], w-1 [b])
                tot_side.append(area[:, -1])  # (w-1,)
                full_cols.append(np.cumsum(c.sum(axis=0))[:-1])  # (w-1 [b],) all v, u <= b
                tot.append(c.sum())
            for side, out in (("L", e_left), ("R", e_right)):
                if side == "L":
                    area = rect
                    side_tot = tot_side
                else:
                    area = [full_cols[l][None, :] - rect[l] for l in (0, 1)]
                    side_tot = [tot[l] - tot_side[l] for l in (0, 1)]
                out[f, :, 0] = side_tot[1]  # constant 0 errs on the label-1 points
                out[f, :, 1] = side_tot[0]
                for l_low in (0, 1):
                    for l_high in (0, 1):
                        wrong_low = area[1 - l_low]
                        wrong_high = side_tot[1 - l_high][:, None] - area[1 - l_high]
                        out[f, :, 2 + 2 * l_low + l_high : self.k_other : 4] = (
                            wrong_low + wrong_high
                        )
                if self.allow_feature_reuse:
                    marg = [np.cumsum(c.sum(axis=1)) for c in counts]  # (w,) sum over v' <= v
                    a = np.arange(w - 1)[:, None]
                    b = np.arange(w - 1)[None, :]
                    for l_low in (0, 1):
                        for l_high in (0, 1):
                            ml, mh = marg[1 - l_low], marg[1 - l_high]
                            if side == "L":  # v <= b low, b < v <= a high; needs b < a
                                err = ml[b] + (mh[a] - mh[b])
                                valid = b < a
                            else:  # a < v <= b low, v > b high; needs b > a
                                err = (ml[b] - ml[a]) + (mh[-1] - mh[b])
                                valid = b > a
                            out[f, :, self.k_other + 2 * l_low + l_high :: 4] = np.where(
                                valid, err, np.inf
                            )
        return e_left, e_right

    def errors(self, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
        """The pair table e_L[..., :, None] + e_R[..., None, :] (float32), shape (2, w-1, K', K')."""
        e_left, e_right = self.child_errors(c0, c1)
        return e_left.astype(np.float32)[..., :, None] + e_right.astype(np.float32)[..., None, :]

    def full_mask(self) -> np.ndarray:
        e_left, e_right = self.child_errors(np.zeros(self.cell_shape), np.zeros(self.cell_shape))
        return np.isfinite(e_left)[..., :, None] & np.isfinite(e_right)[..., None, :]

    # ----- prediction ----------------------------------------------------------------------
    def predict_cells(self, index) -> np.ndarray:
        """Labels of tree (f, a, c_L, c_R) on every grid cell, shape (w, w)."""
        f, a, c_left, c_right = (int(i) for i in index)
        v = np.arange(self.w)[:, None] * np.ones((1, self.w), dtype=int)  # root feature
        u = v.T  # the other feature
        out = np.empty((self.w, self.w), dtype=np.int8)
        for side, c in (("L", c_left), ("R", c_right)):
            region = v <= a if side == "L" else v > a
            kind = self.decode_child(c)
            if kind[0] == "const":
                lab = np.full(region.shape, kind[1])
            else:
                _, b, l_low, l_high = kind
                coord = u if kind[0] == "other" else v
                lab = np.where(coord <= b, l_low, l_high)
            out[region] = lab[region]
        return out if f == 0 else out.T

    def predict(self, index, X: np.ndarray) -> np.ndarray:
        X = _check_grid_points(X, self.w)
        return self.predict_cells(index)[X[:, 0], X[:, 1]]

    def disagreement_region(self, mask: np.ndarray) -> np.ndarray:
        """Cells where two surviving trees disagree, from the children each side uses."""
        mask = np.asarray(mask, dtype=bool)
        used_left = mask.any(axis=3)  # (2, w-1, K')
        used_right = mask.any(axis=2)
        return self._dis_from_used(used_left, used_right)

    def _dis_from_used(self, used_left: np.ndarray, used_right: np.ndarray) -> np.ndarray:
        w = self.w
        predicted = np.zeros((2, w, w), dtype=bool)  # [label, x0, x1]
        cells = np.arange(w)
        for f in (0, 1):
            pred_f = np.zeros((2, w, w), dtype=bool)  # [label, v (root feat), u]
            for side, used in (("L", used_left[f]), ("R", used_right[f])):
                other = used[:, 2 : self.k_other].reshape(w - 1, w - 1, 2, 2)  # [a, b, lo, hi]
                for lab in (0, 1):
                    b_idx = np.arange(w - 1)
                    low = other[:, :, lab, :].any(axis=2)  # (a, b): a used split has lab low
                    high = other[:, :, :, lab].any(axis=2)
                    max_b = np.where(low.any(axis=1), np.max(np.where(low, b_idx, -1), 1), -1)
                    min_b = np.where(high.any(axis=1), np.min(np.where(high, b_idx, w), 1), w)
                    pattern = (
                        used[:, lab][:, None]
                        | (cells[None, :] <= max_b[:, None])
                        | (cells[None, :] > min_b[:, None])
                    )  # (a, u)
                    if side == "L":  # rows v <= a: OR over a >= v (suffix)
                        acc = np.logical_or.accumulate(pattern[::-1], axis=0)[::-1]
                        pred_f[lab, : w - 1] |= acc
                    else:  # rows v > a: OR over a < v (prefix)
                        acc = np.logical_or.accumulate(pattern, axis=0)
                        pred_f[lab, 1:] |= acc
                    if self.allow_feature_reuse:
                        same = used[:, self.k_other :].reshape(w - 1, w - 1, 2, 2)
                        s_low = same[:, :, lab, :].any(axis=2)
                        s_high = same[:, :, :, lab].any(axis=2)
                        a_idx = np.arange(w - 1)[:, None]
                        v = cells[None, :]
                        mb = np.max(np.where(s_low, b_idx, -1), axis=1)[:, None]
                        nb = np.min(np.where(s_high, b_idx, w), axis=1)[:, None]
                        if side == "L":
                            rows = (v <= mb) | ((v > nb) & (v <= a_idx))
                        else:
                            rows = ((v > a_idx) & (v <= mb)) | (v > nb)
                        pred_f[lab] |= rows.any(axis=0)[:, None]
            predicted |= pred_f if f == 0 else pred_f.transpose(0, 2, 1)
        return predicted[0] & predicted[1]

    def radius(self, mask: np.ndarray, center) -> float:
        return _radius(self, mask, center)

    def argmin(self, values: np.ndarray, mask: np.ndarray) -> tuple:
        return _lexi_argmin(values, mask)

    def ball_disagreement(self, center, r: float) -> np.ndarray:
        """DIS(B(center, r)) for the ball of pool mass r, by projection: a child is used on a
        side iff its distance plus the other side's smallest distance is <= r (no pair table)."""
        pred = self.predict_cells(center)
        d_left, d_right = self.child_errors(self.weights * (pred == 0), self.weights * (pred == 1))
        budget = r * self.weights.sum() + 1e-9
        used_left = d_left + d_right.min(axis=2, keepdims=True) <= budget
        used_right = d_right + d_left.min(axis=2, keepdims=True) <= budget
        return self._dis_from_used(used_left, used_right)

    def to_dict(self, index) -> dict:
        """A nested-dict export of tree (f, a, c_L, c_R) (thresholds at a + 0.5)."""
        f, a, c_left, c_right = (int(i) for i in index)

        def child(c):
            kind = self.decode_child(c)
            if kind[0] == "const":
                return {"leaf": kind[1]}
            feat = (1 - f) if kind[0] == "other" else f
            return {
                "feature": feat,
                "threshold": kind[1] + 0.5,
                "left": {"leaf": kind[2]},
                "right": {"leaf": kind[3]},
            }

        return {"feature": f, "threshold": a + 0.5, "left": child(c_left), "right": child(c_right)}


def _check_grid_points(X, w: int) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X must be an (m, 2) array of grid coordinates, got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.integer):
        if not np.all(np.equal(np.mod(X, 1), 0)):
            raise ValueError("grid coordinates must be integers")
        X = X.astype(int)
    if X.min(initial=0) < 0 or X.max(initial=0) >= w:
        raise ValueError(f"grid coordinates must lie in 0..{w - 1}")
    return X


class EnumeratedClass:
    """Brute-force hypothesis class: an explicit (N, cells) prediction matrix (tests, small w).

    ``EnumeratedClass.grid_trees(w, allow_feature_reuse)`` enumerates depth-2 trees on a w x w
    grid by evaluating each tree's rule directly; indices follow :class:`GridTreeClass`.
    """

    def __init__(self, predictions: np.ndarray, weights: np.ndarray | None = None):
        predictions = V.check_array(predictions, "predictions", ndim=2)
        if not np.isin(predictions, (0, 1)).all():
            raise ValueError("predictions must hold 0/1 labels")
        self.predictions = predictions.astype(np.int8)
        self.shape = (self.predictions.shape[0],)
        self.size = self.shape[0]
        self.cell_shape = (self.predictions.shape[1],)
        if weights is None:
            self.weights = np.ones(self.cell_shape)
        else:
            self.weights = V.check_array(
                np.ravel(weights), "weights", shape=self.cell_shape, dtype=np.float64, low=0.0
            )
        self.vc_dim = math.log2(max(self.size, 2))
        self.index = None

    @classmethod
    def grid_trees(cls, w: int, allow_feature_reuse: bool = False) -> EnumeratedClass:
        w = V.check_int(w, "w", low=2)
        k_other = 2 + 4 * (w - 1)
        k = k_other + (4 * (w - 1) if allow_feature_reuse else 0)
        x0, x1 = np.meshgrid(np.arange(w), np.arange(w), indexing="ij")
        rows, index = [], []
        for f in (0, 1):
            root = x0 if f == 0 else x1
            other = x1 if f == 0 else x0
            for a in range(w - 1):
                children = {"L": [], "R": []}
                for side in ("L", "R"):
                    for c in range(k):
                        if c < 2:
                            lab = np.full((w, w), c)
                        elif c < k_other:
                            b, code = divmod(c - 2, 4)
                            lab = np.where(other <= b, code >> 1, code & 1)
                        else:
                            b, code = divmod(c - k_other, 4)
                            if (side == "L" and not b < a) or (side == "R" and not b > a):
                                continue
                            lab = np.where(root <= b, code >> 1, code & 1)
                        children[side].append((c, lab))
                for cl, lab_l in children["L"]:
                    for cr, lab_r in children["R"]:
                        rows.append(np.where(root <= a, lab_l, lab_r).ravel())
                        index.append((f, a, cl, cr))
        out = cls(np.array(rows))
        out.index = np.array(index)
        return out

    def full_mask(self) -> np.ndarray:
        return np.ones(self.shape, dtype=bool)

    def errors(self, c0, c1) -> np.ndarray:
        c0, c1 = np.ravel(c0), np.ravel(c1)
        return (self.predictions == 1) @ c0 + (self.predictions == 0) @ c1

    def predict_cells(self, index) -> np.ndarray:
        return self.predictions[int(np.ravel(index)[0])]

    def disagreement_region(self, mask) -> np.ndarray:
        alive = self.predictions[np.asarray(mask, dtype=bool)]
        if alive.shape[0] == 0:
            return np.zeros(self.cell_shape, dtype=bool)
        return alive.min(axis=0) != alive.max(axis=0)

    def radius(self, mask, center) -> float:
        return _radius(self, mask, center)

    def argmin(self, values, mask) -> tuple:
        return _lexi_argmin(values, mask)
