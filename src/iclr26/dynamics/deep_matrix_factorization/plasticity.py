"""The loss-of-plasticity protocol: pre-train on few observations, then resume on more.

Phase 1 trains on Omega_1 (e.g. the diagonal) to convergence; phase 2 resumes from the phase-1
factors on Omega_2 (a superset). The control trains on Omega_2 from the *same* initial factors.
A depth-2 model pre-trained under decoupled dynamics lands on a high-rank solution and stays
there, while deeper models keep their low-rank bias (the paper's explanation of the plasticity
loss reported by Kleinman et al., 2024). All seeds run together as one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from iclr26 import validation as V

from .estimator import check_depth, check_problem
from .factorization import factor_shapes, gradient_descent, initialize, product
from .metrics import relative_error, singular_value_ratio


def _as_batch(a, S: int, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 2:
        return np.broadcast_to(a, (S,) + a.shape)
    if a.ndim == 3 and a.shape[0] == S:
        return a
    raise ValueError(f"{name} must be (n, m) or (len(seeds), n, m), got shape {a.shape}")


def plasticity_experiment(
    depth: int,
    M,
    mask_phase1,
    mask_phase2,
    *,
    init_scale: float = 1e-2,
    seeds: Sequence[int] = (0,),
    lr: float = 0.1,
    max_steps: int = 60_000,
    tol: float = 1e-10,
    width: int | None = None,
) -> dict:
    """Test error (relative, on entries outside Omega_2) and sigma_2/sigma_1 for the pre-trained
    and the from-scratch runs, one value per seed. ``M`` and the masks are (n, m), shared by all
    seeds, or (len(seeds), n, m), one problem per seed."""
    depth = check_depth(depth)
    if isinstance(seeds, str) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a sequence of integers, got {seeds!r}")
    seeds = [V.check_int(s, "seeds", low=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed")
    init_scale = V.check_scalar(init_scale, "init_scale", low=0.0, low_open=True)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    max_steps = V.check_int(max_steps, "max_steps", low=1)
    tol = V.check_scalar(tol, "tol", low=0.0, low_open=True)
    width = V.check_int(width, "width", low=1, allow_none=True)
    S = len(seeds)
    M = _as_batch(V.check_array(M, "M", ndim=(2, 3), dtype=np.float64), S, "M")
    mask1 = _as_batch(V.check_array(mask_phase1, "mask_phase1", dtype=None), S, "mask_phase1")
    mask2 = _as_batch(V.check_array(mask_phase2, "mask_phase2", dtype=None), S, "mask_phase2")
    if mask1.shape != M.shape or mask2.shape != M.shape:
        raise ValueError(
            f"mask_phase1 {mask1.shape} and mask_phase2 {mask2.shape} must have M's shape {M.shape}"
        )
    for k in range(S):
        check_problem(M[k], mask1[k])
        check_problem(M[k], mask2[k])
    mask1, mask2 = mask1.astype(bool), mask2.astype(bool)
    if np.any(mask1 & ~mask2):
        raise ValueError("mask_phase2 must contain mask_phase1")

    test = ~mask2
    if not test.any(axis=(1, 2)).all():
        raise ValueError("mask_phase2 observes everything: no held-out entries")
    n, m = M.shape[1:]
    shapes = factor_shapes(n, m, depth, max(n, m) if width is None else width)
    inits = [initialize(shapes, "gaussian", init_scale, np.random.default_rng(s)) for s in seeds]
    start = [np.stack([f[l] for f in inits]) for l in range(depth)]
    kw = dict(lr=lr, max_steps=max_steps, tol=tol, adaptive=False)
    phase1 = gradient_descent(start, M * mask1, mask1, **kw)
    resumed = gradient_descent(phase1["factors"], M * mask2, mask2, **kw)
    scratch = gradient_descent(start, M * mask2, mask2, **kw)
    for name, run in (("phase 1", phase1), ("resumed", resumed), ("scratch", scratch)):
        if run["diverged"].any():
            raise ValueError(
                f"lr={lr} makes gradient descent diverge ({name} training, "
                f"{int(run['diverged'].sum())} of {S} seeds); use a smaller lr"
            )
    out = {}
    for name, run in (("phase1", phase1), ("pretrained", resumed), ("scratch", scratch)):
        W = product(run["factors"])
        out[name] = {
            "test_error": np.array([relative_error(W[k], M[k], test[k]) for k in range(S)]),
            "sv_ratio": singular_value_ratio(W),
            "converged": run["converged"],
            "steps": run["steps"],
        }
    return out
