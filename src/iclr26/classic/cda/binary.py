"""Binary CDA training: rotate a centroid direction, plane by plane, towards the best cut.

Start from CDB0 (the centroid direction). Each iteration re-weights the samples by their
distance to the current threshold, takes the re-weighted centroid direction, orthogonalises
it against the current direction, and searches the rotation angle in the plane the two span
for the best cross-validated performance score. Every candidate angle only recombines the two
precomputed projections and sorts them, so an iteration costs O(NM + N log N) (linear) or
O(N^2) (kernel). The best iterate is kept; training stops early when the performance score
has settled (coefficient of variation of the last ``ps_trace_length`` scores below
``cv_threshold``); a null model of random angles in the best plane checks the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V
from iclr26.classic.cda.angle_search import ANGLE_RANGE, bo_angle, golden_angle
from iclr26.classic.cda.cut import cv_cut_batch, fold_masks
from iclr26.classic.cda.geometry import (
    KernelSpace,
    LinearSpace,
    Space,
    orthonormal_partner,
    unit_centroid,
    update_weights,
)

REFINE_EVALS = (10, 20, 30)


@dataclass(frozen=True)
class Plane:
    """The rotation plane: unit current direction and its orthonormal partner, with their
    training projections."""

    d1: np.ndarray
    Q1: np.ndarray
    d2: np.ndarray
    Q2: np.ndarray

    def direction(self, theta_deg: float) -> np.ndarray:
        theta = np.deg2rad(theta_deg)
        return np.cos(theta) * self.d1 + np.sin(theta) * self.d2

    def projections(self, theta_deg) -> np.ndarray:
        """Q(theta) = cos(theta) Q1 + sin(theta) Q2; shape (N,) or (A, N) for A angles."""
        theta = np.deg2rad(np.asarray(theta_deg, dtype=float))
        if theta.ndim == 1:
            theta = theta[:, None]
        return np.cos(theta) * self.Q1 + np.sin(theta) * self.Q2


@dataclass(frozen=True)
class Candidate:
    """A direction with its training projections and cross-validated (ps, oop)."""

    direction: np.ndarray
    projections: np.ndarray
    ps: float
    oop: float


@dataclass(frozen=True)
class BinaryCDA:
    """A trained binary CDA: ``f(x) = <direction, phi(x)> - oop``, positive when f >= 0."""

    direction: np.ndarray
    oop: float
    ps: float
    ps_cdb0: float
    n_iter: int
    best_iter: int
    p_value: float
    finalization: str
    ps_trace: np.ndarray
    n_projections: int = 0
    n_scored: int = 0


class _Trainer:
    """Scores candidate projections on fixed CV folds and runs the angle searches."""

    def __init__(self, y: np.ndarray, n_folds: int, angle_search: str, seed: int):
        self.y = np.asarray(y, dtype=bool)
        self.seed = seed
        self.masks = fold_masks(self.y, n_folds, np.random.default_rng([seed, 0]))
        self.angle_search = angle_search
        self.n_scored = 0  # candidate projections scored: a load-free count of the cut work

    def score(self, projections: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cross-validated (ps, oop) of one (N,) or several (A, N) projections."""
        projections = np.atleast_2d(projections)
        self.n_scored += projections.shape[0]
        return cv_cut_batch(projections, self.y, self.masks)

    def candidate(self, plane: Plane, theta: float) -> Candidate:
        Q = plane.projections(theta)
        ps, oop = self.score(Q)
        return Candidate(plane.direction(theta), Q, float(ps[0]), float(oop[0]))

    def search(self, plane: Plane, n_evals: int, call: int) -> Candidate:
        def loss(theta: float) -> float:
            return -float(self.score(plane.projections(theta))[0][0])

        if self.angle_search == "golden":
            theta = golden_angle(loss, max(n_evals, 2))
        else:
            theta = bo_angle(loss, n_evals, np.random.default_rng([self.seed, 1, call]))
        return self.candidate(plane, theta)


class _CountingSpace:
    """A space that counts its products with the data (``project``: O(NM) linear, O(N^2)
    kernel), the load-free measure of CDA's per-iteration cost."""

    def __init__(self, space: Space):
        self.space = space
        self.n_projections = 0

    def direction(self, weights: np.ndarray) -> np.ndarray:
        return self.space.direction(weights)

    def project(self, direction: np.ndarray) -> np.ndarray:
        self.n_projections += 1
        return self.space.project(direction)

    def inner(self, a: np.ndarray, a_projection: np.ndarray, b: np.ndarray) -> float:
        return self.space.inner(a, a_projection, b)


def fit_binary(
    space: Space,
    y: np.ndarray,
    *,
    max_iter: int = 50,
    cv_threshold: float = 1e-3,
    ps_trace_length: int = 10,
    n_null: int = 100,
    n_folds: int = 5,
    angle_search: str = "bo",
    seed: int = 0,
) -> BinaryCDA:
    """Train binary CDA on the samples of ``space`` (a :class:`LinearSpace` or
    :class:`KernelSpace`) with labels ``y`` (1 = positive)."""
    V.check_module_attrs(space, "space", ("direction", "project", "inner"))
    n_samples = _space_size(space)
    y = V.check_array(y, "y", ndim=1, dtype=None, n_rows=n_samples)
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all() or np.unique(y).size != 2:
        raise ValueError("y must be 1-D, binary (0/1 or bool) and contain both classes")
    V.check_int(max_iter, "max_iter", low=0)
    V.check_scalar(cv_threshold, "cv_threshold", low=0.0)
    V.check_int(ps_trace_length, "ps_trace_length", low=2)
    V.check_int(n_null, "n_null", low=0)
    V.check_int(n_folds, "n_folds", low=2)
    V.check_choice(angle_search, "angle_search", ("bo", "golden"))
    V.check_int(seed, "seed", low=0)
    space = _CountingSpace(space)
    trainer = _Trainer(y, n_folds, angle_search, seed)
    alpha = np.full(trainer.y.size, 1.0 / np.sqrt(trainer.y.size))
    d, Q = unit_centroid(space, trainer.y, alpha)
    ps, oop = trainer.score(Q)
    current = Candidate(d, Q, float(ps[0]), float(oop[0]))
    ps_cdb0 = current.ps
    best, best_plane, best_iter = current, None, 0
    trace: list[float] = []
    n_iter = 0
    for t in range(1, max_iter + 1):
        n_iter = t
        alpha = update_weights(alpha, current.projections, current.oop)
        d2, Q2 = unit_centroid(space, trainer.y, alpha)
        partner = orthonormal_partner(space, current.direction, current.projections, d2, Q2)
        if partner is None:  # the re-weighted centroid adds no new direction
            break
        plane = Plane(current.direction, current.projections, *partner)
        if best_plane is None:  # CDB0 lies in the first plane, at angle 0
            best_plane = plane
        current = trainer.search(plane, min(10, t + 3), call=t)
        trace.append(current.ps)
        if current.ps > best.ps:
            best, best_plane, best_iter = current, plane, t
        recent = np.asarray(trace[-ps_trace_length:])
        if recent.size == ps_trace_length and recent.mean() > 0:
            if recent.std(ddof=1) / recent.mean() < cv_threshold:
                break

    final, p_value, how = best, float("nan"), "bo"
    if best_plane is not None and n_null > 0:
        final, p_value, how = _finalise(trainer, best, best_plane, n_null, max_iter)
    return BinaryCDA(
        direction=final.direction,
        oop=final.oop,
        ps=final.ps,
        ps_cdb0=ps_cdb0,
        n_iter=n_iter,
        best_iter=best_iter,
        p_value=p_value,
        finalization=how,
        ps_trace=np.asarray(trace),
        n_projections=space.n_projections,
        n_scored=trainer.n_scored,
    )


def _space_size(space) -> int | None:
    """Number of training samples of a known space (None for a user-supplied one)."""
    if isinstance(space, LinearSpace):
        return space.X.shape[0]
    if isinstance(space, KernelSpace):
        return space.gram.shape[0]
    return None


def _finalise(
    trainer: _Trainer, best: Candidate, plane: Plane, n_null: int, max_iter: int
) -> tuple[Candidate, float, str]:
    """Null-model check: rank the model's ps among ``n_null`` random angles of its plane.

    p = fraction of random angles scoring higher. While p > 0, search the plane again with
    10, 20, 30 evaluations (a refinement replaces the model only when it scores higher);
    if p is still > 0, take the best random angle.
    """
    rng = np.random.default_rng([trainer.seed, 2])
    thetas = rng.uniform(*ANGLE_RANGE, size=n_null)
    null_ps, null_oop = trainer.score(plane.projections(thetas))
    final, how = best, "bo"
    p_value = float(np.mean(null_ps > final.ps))
    for k, n_evals in enumerate(REFINE_EVALS):
        if p_value == 0:
            break
        refined = trainer.search(plane, n_evals, call=max_iter + 1 + k)
        if refined.ps > final.ps:
            final, how = refined, "refined"
        p_value = float(np.mean(null_ps > final.ps))
    if p_value > 0:
        i = int(np.argmax(null_ps))
        final = Candidate(
            plane.direction(thetas[i]),
            plane.projections(thetas[i]),
            float(null_ps[i]),
            float(null_oop[i]),
        )
        how = "best random"
    return final, p_value, how
