"""Analyses: the 3-component swap mixture model of angular responses (Bays et al. 2009, fitted
by EM), distribution distances (energy distance), multimodality, principal angles between item
subspaces (Panichello & Buschman 2021-style plane alignment) and linear decoders."""

from __future__ import annotations

import numpy as np
import torch
from scipy.linalg import subspace_angles
from scipy.special import i0e

from iclr26 import validation as V

from .surrogate import responses_to_angles
from .task import Trials, check_angles, wrap_angle

__all__ = [
    "decoder_accuracy",
    "energy_distance",
    "item_subspace_angles",
    "mixture_model_fit",
    "mixture_responsibilities",
    "multimodality_fraction",
]


def _vm_pdf(err: np.ndarray, kappa: float) -> np.ndarray:
    return np.exp(kappa * (np.cos(err) - 1.0)) / (2 * np.pi * i0e(kappa))


def _a1inv(r: float) -> float:
    """Inverse of A1(kappa) = I1/I0 (Fisher 1993 approximation, as in Bays' JV10 code)."""
    r = float(np.clip(r, 0.0, 1.0 - 1e-9))
    if r < 0.53:
        return 2 * r + r**3 + 5 * r**5 / 6
    if r < 0.85:
        return -0.4 + 1.39 * r + 0.43 / (1 - r)
    return 1.0 / (r**3 - 4 * r**2 + 3 * r)


def _prepare(responses, trials: Trials, min_separation: float):
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials record, got {type(trials).__name__}")
    angles = responses_to_angles(responses)
    if angles.ndim == 1:
        angles = angles[:, None]
    if angles.ndim != 2:
        raise ValueError(
            f"responses must be (trials,), (trials, samples) or (trials, samples, 2); "
            f"got angles of shape {angles.shape}"
        )
    V.check_same_length(responses=angles, trials=trials.report)
    min_separation = V.check_scalar(min_separation, "min_separation", low=0.0, high=np.pi)
    keep = np.ones(trials.n_trials, dtype=bool)
    if trials.n_items > 1 and min_separation > 0:
        gaps = np.abs(wrap_angle(trials.report[:, :, None] - trials.report[:, None, :]))
        gaps[:, np.arange(trials.n_items), np.arange(trials.n_items)] = np.inf
        keep = gaps.min(axis=(1, 2)) >= min_separation
    if not keep.any():
        raise ValueError("trials: every trial has items closer than min_separation")
    return angles, keep


def _em(err_t, err_nt, n_iter: int, tol: float):
    """EM for p(e) = pT vM(e_T) + pNT mean_j vM(e_NTj) + pU / 2pi on flattened errors."""
    k_nt = err_nt.shape[1]
    p_t, p_nt, p_u, kappa = (0.6, 0.3 if k_nt else 0.0, 0.1, 5.0)
    if not k_nt:
        p_t = 0.9
    ll_old = -np.inf
    for _ in range(n_iter):
        l_t = p_t * _vm_pdf(err_t, kappa)
        l_ntj = (p_nt / max(k_nt, 1)) * _vm_pdf(err_nt, kappa) if k_nt else np.zeros_like(err_nt)
        l_u = np.full_like(err_t, p_u / (2 * np.pi))
        total = l_t + l_ntj.sum(1) + l_u
        ll = float(np.log(total).sum())
        w_t, w_ntj, w_u = l_t / total, l_ntj / total[:, None], l_u / total
        p_t, p_nt, p_u = w_t.mean(), w_ntj.sum(1).mean(), w_u.mean()
        mass = w_t.sum() + w_ntj.sum()
        if mass > 0:
            r = (np.sum(w_t * np.cos(err_t)) + np.sum(w_ntj * np.cos(err_nt))) / mass
            kappa = max(_a1inv(r), 1e-3)
        if abs(ll - ll_old) < tol:
            break
        ll_old = ll
    return {"p_target": p_t, "p_swap": p_nt, "p_guess": p_u, "kappa": kappa, "log_lik": ll}, (
        w_t,
        w_ntj,
        w_u,
    )


def mixture_model_fit(
    responses,
    trials: Trials,
    *,
    min_separation: float = np.pi / 6,
    n_iter: int = 500,
    tol: float = 1e-7,
) -> dict[str, float]:
    """Fit the 3-component mixture (target von Mises + non-target/swap von Mises + uniform
    guess, one shared concentration) to ``responses`` by EM.

    ``responses``: angles ``(n,)`` / ``(n, M)`` in (-pi, pi] or planar samples ``(n, M, 2)``
    (as :meth:`BehaviourRNN.sample` returns); ``trials`` gives the items. Trials whose items
    are closer than ``min_separation`` (default 30 degrees) are left out, since a swap cannot
    be told from a correct report there. Returns ``p_target, p_swap, p_guess, kappa,
    log_lik, n_trials_used``."""
    angles, keep = _prepare(responses, trials, min_separation)
    n_iter = V.check_int(n_iter, "n_iter", low=1)
    tol = V.check_scalar(tol, "tol", low=0.0)
    sub = trials.subset(np.flatnonzero(keep))
    ang = angles[keep]
    err_t = wrap_angle(ang - sub.target[:, None]).ravel()
    err_nt = wrap_angle(ang[:, :, None] - sub.nontargets[:, None, :]).reshape(
        -1, trials.n_items - 1
    )
    out, _ = _em(err_t, err_nt, n_iter, tol)
    out["n_trials_used"] = int(keep.sum())
    return {k: float(v) if k != "n_trials_used" else v for k, v in out.items()}


def mixture_responsibilities(responses, trials: Trials, *, n_iter: int = 500) -> dict:
    """Per response, the posterior probability of the target ``(n, M)``, of each non-target
    ``(n, M, K - 1)`` and of a guess ``(n, M)`` under the fitted mixture (all trials kept)."""
    angles, _ = _prepare(responses, trials, 0.0)
    n, m = angles.shape
    err_t = wrap_angle(angles - trials.target[:, None]).ravel()
    err_nt = wrap_angle(angles[:, :, None] - trials.nontargets[:, None, :]).reshape(
        -1, trials.n_items - 1
    )
    params, (w_t, w_ntj, w_u) = _em(err_t, err_nt, V.check_int(n_iter, "n_iter", low=1), 1e-7)
    return {
        "target": w_t.reshape(n, m),
        "nontarget": w_ntj.reshape(n, m, -1),
        "guess": w_u.reshape(n, m),
        "params": params,
    }


def energy_distance(x, y) -> np.ndarray:
    """Energy distance between sample sets, per set: ``x`` ``(n, M, D)`` and ``y`` ``(n, M', D)``
    (or single sets ``(M, D)``). Returns ``sqrt(2 E|X - Y| - E|X - X'| - E|Y - Y'|)`` (the
    convention of ``scipy.stats.energy_distance``; V-statistics), shape ``(n,)`` or scalar."""
    xa = V.check_array(x, "x", ndim=(2, 3), dtype=np.float64)
    ya = V.check_array(y, "y", ndim=(2, 3), dtype=np.float64)
    if xa.ndim != ya.ndim:
        raise ValueError(
            f"x and y must have the same number of dimensions, got {xa.ndim} and {ya.ndim}"
        )
    single = xa.ndim == 2
    if single:
        xa, ya = xa[None], ya[None]
    if xa.shape[0] != ya.shape[0]:
        raise ValueError(
            f"x and y must hold the same number of sets, got {xa.shape[0]} and {ya.shape[0]}"
        )
    if xa.shape[2] != ya.shape[2]:
        raise ValueError(
            f"x and y must have the same dimension, got {xa.shape[2]} and {ya.shape[2]}"
        )
    tx, ty = torch.from_numpy(xa), torch.from_numpy(ya)
    exy = torch.cdist(tx, ty).mean((1, 2))
    exx = torch.cdist(tx, tx).mean((1, 2))
    eyy = torch.cdist(ty, ty).mean((1, 2))
    out = torch.sqrt(torch.clamp(2 * exy - exx - eyy, min=0.0)).numpy()
    return out[0] if single else out


def multimodality_fraction(
    samples,
    trials: Trials,
    *,
    radius: float = 2.5,
    angle_tol: float = np.pi / 6,
    radius_tol: float = 0.2,
) -> float:
    """Fraction of planar samples ``(n, M, 2)`` that lie within ``angle_tol`` of some item's
    colour and at a radius within ``[(1 - radius_tol) r, (1 + radius_tol) r]``."""
    s = V.check_array(samples, "samples", ndim=3, dtype=np.float64)
    if s.shape[-1] != 2:
        raise ValueError(f"samples must be planar (last dimension 2), got {s.shape[-1]}")
    if not isinstance(trials, Trials):
        raise TypeError(f"trials must be a Trials record, got {type(trials).__name__}")
    V.check_same_length(samples=s, trials=trials.report)
    radius = V.check_scalar(radius, "radius", low=0.0, low_open=True)
    angle_tol = V.check_scalar(angle_tol, "angle_tol", low=0.0, high=np.pi)
    radius_tol = V.check_scalar(radius_tol, "radius_tol", low=0.0)
    ang = np.arctan2(s[..., 1], s[..., 0])
    rad = np.linalg.norm(s, axis=-1)
    near = np.abs(wrap_angle(ang[:, :, None] - trials.report[:, None, :])).min(-1) <= angle_tol
    ring = (rad >= (1 - radius_tol) * radius) & (rad <= (1 + radius_tol) * radius)
    return float(np.mean(near & ring))


def item_subspace_angles(states, colours_a, colours_b) -> np.ndarray:
    """Principal angles (degrees, ascending) between the planes that code two colours.

    ``states`` ``(n, N)`` is regressed (least squares, with intercept) on
    ``[cos a, sin a, cos b, sin b]``; the two 2-column blocks of coefficients span the planes
    coding colour ``a`` and colour ``b`` (``scipy.linalg.subspace_angles``). Pre-cue, ``a``
    and ``b`` are the two items; post-cue, e.g. the cued colour on two sets of trials."""
    h = V.check_array(states, "states", ndim=2, dtype=np.float64, min_rows=6)
    a = check_angles(colours_a, "colours_a", ndim=1, n_rows=h.shape[0])
    b = check_angles(colours_b, "colours_b", ndim=1, n_rows=h.shape[0])
    design = np.column_stack([np.ones(len(a)), np.cos(a), np.sin(a), np.cos(b), np.sin(b)])
    coef, *_ = np.linalg.lstsq(design, h, rcond=None)  # (5, N)
    return np.degrees(subspace_angles(coef[1:3].T, coef[3:5].T))[::-1]


def decoder_accuracy(states, labels, *, train_mask=None, test_mask=None, seed: int = 0) -> float:
    """Accuracy of a logistic-regression decoder of ``labels`` from ``states`` ``(n, N)``:
    trained on ``train_mask`` and tested on ``test_mask`` (default: a 70/30 split)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    h = V.check_array(states, "states", ndim=2, dtype=np.float64)
    y = V.check_array(labels, "labels", ndim=1, dtype=np.int64, n_rows=h.shape[0])
    n = h.shape[0]
    if train_mask is None or test_mask is None:
        order = np.random.default_rng(seed).permutation(n)
        cut = int(0.7 * n)
        train_mask = np.zeros(n, bool)
        train_mask[order[:cut]] = True
        test_mask = ~train_mask
    train_mask = V.check_array(train_mask, "train_mask", ndim=1, dtype=bool, n_rows=n)
    test_mask = V.check_array(test_mask, "test_mask", ndim=1, dtype=bool, n_rows=n)
    if not test_mask.any():
        raise ValueError("test_mask selects no rows")
    if len(np.unique(y[train_mask])) < 2:
        raise ValueError("labels: the training rows need at least two classes")
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    clf.fit(h[train_mask], y[train_mask])
    return float(np.mean(clf.predict(h[test_mask]) == y[test_mask]))
