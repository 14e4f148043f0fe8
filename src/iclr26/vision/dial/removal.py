"""Subspace removal and the label-free choice of its size and magnitude (DIAL steps 4-5).

``e' = normalize(e - alpha U_k U_k^T e)`` with ``U_k`` an orthonormal basis (QR) of the top-k
spurious directions, applied to the affected points only (or to all). The number of
directions ``k`` and the magnitude ``alpha`` are chosen from a grid without labels: the pair
whose removal brings the margin distribution of the affected points closest (1-Wasserstein)
to that of the unaffected points, subject to the removal leaving at least ``min_agreement``
of the unaffected points' predictions unchanged when it is applied to them (a guard against
removing class directions). Ties go to the smaller ``k``, then the smaller ``alpha``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from iclr26 import validation as V
from iclr26.vision.dial.filtering import _unit, margins, zero_shot_probs


def subspace_basis(directions, k: int | None = None) -> np.ndarray:
    """Orthonormal basis (d, r) of the span of the first ``k`` rows of ``directions``
    (r = rank, at most k); near-dependent directions are dropped."""
    D = V.check_array(directions, "directions", ndim=2, dtype=np.float64)
    k = len(D) if k is None else V.check_int(k, "k", low=1)
    if k > len(D):
        raise ValueError(f"k must be <= the number of directions ({len(D)}), got {k}")
    Q, R = np.linalg.qr(D[:k].T)
    keep = np.abs(np.diag(R)) > 1e-8 * max(1.0, float(np.abs(R).max()))
    if not keep.any():
        raise ValueError("directions span nothing (all rows are zero)")
    return Q[:, keep]


def remove_subspace(emb, basis, alpha: float = 1.0, mask=None, normalize: bool = True):
    """``normalize(e - alpha U U^T e)`` for the rows selected by ``mask`` (all when None);
    the other rows are returned unchanged."""
    E = V.check_array(emb, "emb", ndim=2, dtype=np.float64)
    U = V.check_array(basis, "basis", ndim=2, dtype=np.float64)
    if U.shape[0] != E.shape[1]:
        raise ValueError(f"basis must have {E.shape[1]} rows (the embedding size), got "
                         f"{U.shape[0]}")  # fmt: skip
    alpha = V.check_scalar(alpha, "alpha", low=0.0, high=1.0)
    if mask is None:
        mask = np.ones(len(E), dtype=bool)
    else:
        mask = V.check_array(mask, "mask", ndim=1, dtype=bool, n_rows=len(E))
    out = E.copy()
    sel = out[mask]
    sel = sel - alpha * (sel @ U) @ U.T
    out[mask] = _unit(sel) if V.check_bool(normalize, "normalize") else sel
    return out


def check_grid(values: Iterable, name: str, *, integer: bool, low, high=None) -> tuple:
    try:
        items = tuple(values)
    except TypeError:
        raise TypeError(
            f"{name} must be an iterable of numbers, got {type(values).__name__}"
        ) from None
    if not items:
        raise ValueError(f"{name} is empty")
    out = tuple(V.check_scalar(v, name, low=low, high=high, integer=integer) for v in items)
    return tuple(sorted(set(out)))


def select_k_alpha(
    img_emb,
    class_text_emb,
    affected,
    directions,
    k_grid=range(1, 9),
    alpha_grid=(0.25, 0.5, 0.75, 1.0),
    temperature: float = 0.01,
    min_agreement: float = 0.98,
    apply_to: str = "affected",
) -> tuple[int, float, list[dict]]:
    """``(k, alpha, table)``: the grid point with the smallest 1-Wasserstein distance between
    the margins of the affected and the unaffected points after removal among those that keep
    ``>= min_agreement`` of the unaffected predictions. ``k`` values above the number of
    directions are skipped. ``(0, 0.0, table)`` when no grid point is feasible.

    The affected margins are taken after removal, the unaffected ones as ``apply_to`` leaves
    them; the agreement guard always applies the removal to the unaffected points."""
    from scipy.stats import wasserstein_distance

    E = V.check_array(img_emb, "img_emb", ndim=2, dtype=np.float64)
    A = V.check_array(affected, "affected", ndim=1, dtype=bool, n_rows=len(E))
    D = V.check_array(directions, "directions", ndim=2, dtype=np.float64)
    ks = check_grid(k_grid, "k_grid", integer=True, low=1)
    alphas = check_grid(alpha_grid, "alpha_grid", integer=False, low=0.0, high=1.0)
    min_agreement = V.check_probability(min_agreement, "min_agreement")
    apply_to = V.check_choice(apply_to, "apply_to", ("affected", "all"))
    if not A.any() or A.all():
        raise ValueError("affected must select some but not all points")
    pred0, m0 = margins(zero_shot_probs(E, class_text_emb, temperature))
    table = []
    for k in ks:
        if k > len(D):
            continue
        U = subspace_basis(D, k)
        for alpha in alphas:
            removed = remove_subspace(E, U, alpha)  # applied to every point, for the guard
            pred, m = margins(zero_shot_probs(removed, class_text_emb, temperature))
            agree = float((pred[~A] == pred0[~A]).mean())
            reference = m[~A] if apply_to == "all" else m0[~A]
            dist = float(wasserstein_distance(m[A], reference))
            table.append({"k": k, "alpha": alpha, "w1": dist, "agreement": agree,
                          "feasible": agree >= min_agreement})  # fmt: skip
    feasible = [row for row in table if row["feasible"]]
    if not feasible:
        return 0, 0.0, table
    best = min(feasible, key=lambda r: (r["w1"], r["k"], r["alpha"]))
    return best["k"], best["alpha"], table
