"""The predictive tail functions and their Bellman recursion (our reconstruction).

On the budget-augmented state (s, eta), for action a and return-to-go G:
  tail probability  F(s, a, eta) = P(G <= eta),
  tail value        H(s, a, eta) = E[G 1{G <= eta}],
  shortfall         L(s, a, eta) = E[(eta - G)_+] = eta F - H.
For a transition (s, a) -> (r, s') with eta' = eta - r and a' greedy at (s', eta'):
  F(s, a, eta) = E[F(s', a', eta')],   H(s, a, eta) = E[r F(s', a', eta') + H(s', a', eta')],
and at a terminal s': F = 1{eta' >= 0}, H = r 1{eta' >= 0}. The immediate reward enters H
every step. Greedy rule (policy improvement): a = argmin_a L(s, a, eta), ties broken by the
risk-neutral Q. Static CVaR of the return at level q (Rockafellar-Uryasev):
CVaR_q = max_eta {eta - L(s0, eta) / q}. Budgets off the grid are clamped: below it
F = H = 0; above it F = 1 and H = E[G] under the risk-neutral optimal continuation. Rewards that are not
multiples of the grid step send eta - r between grid points; F and H are then read by linear
interpolation between the two neighbouring grid budgets (separately, and L = eta F - H from
the interpolated pair). Everything that depends on these definitions lives in this module.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

TIE_TOL = 1e-9


def _finite(values, name: str) -> np.ndarray:
    """Float array of budgets or rewards; NaN or infinity would index the grid silently wrong
    (a cheap check: these methods run in the learners' inner loop)."""
    arr = np.asarray(values, dtype=float)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got NaN or infinity")
    return arr


class BudgetGrid:
    """Evenly spaced budgets eta_k = lo + k * step, k = 0..K-1. Rewards that are multiples
    of ``step`` keep eta - r on the grid (exact integer index shifts); other rewards are
    handled by linear interpolation at the fractional grid position (``position``)."""

    MAX_SIZE = 1_000_000

    def __init__(self, lo: float, hi: float, step: float = 1.0):
        lo = V.check_scalar(lo, "lo")
        hi = V.check_scalar(hi, "hi", low=lo)
        step = V.check_scalar(step, "step", low=0.0, low_open=True)
        size = int(round((hi - lo) / step)) + 1
        if size > self.MAX_SIZE:
            raise ValueError(
                f"step {step:g} over [{lo:g}, {hi:g}] gives {size} budgets; at most "
                f"{self.MAX_SIZE} are allowed"
            )
        self.lo, self.step = lo, step
        self.size = size
        self.values = self.lo + self.step * np.arange(self.size)

    @property
    def hi(self) -> float:
        return float(self.values[-1])

    def __repr__(self) -> str:
        return f"BudgetGrid(lo={self.lo:g}, hi={self.hi:g}, step={self.step:g})"

    def covers(self, lo: float, hi: float, tol: float = 1e-9) -> bool:
        """Whether [lo, hi] lies inside the grid's range."""
        return self.lo <= lo + tol and self.hi >= hi - tol

    def shift(self, reward: np.ndarray) -> np.ndarray:
        """Integer index shift -r/step for rewards on the grid's lattice."""
        shift = -_finite(reward, "reward") / self.step
        rounded = np.rint(shift)
        if np.any(np.abs(shift - rounded) > 1e-9):
            raise ValueError("rewards must be multiples of the budget grid step")
        return rounded.astype(np.int64)

    def on_lattice(self, reward: np.ndarray) -> bool:
        """Whether every reward is a multiple of the step (so eta - r stays on the grid)."""
        shift = -_finite(reward, "reward") / self.step
        return bool(np.all(np.abs(shift - np.rint(shift)) <= 1e-9))

    def offset(self, reward: np.ndarray) -> np.ndarray:
        """Fractional index shift -r/step (any rewards)."""
        return -_finite(reward, "reward") / self.step

    def position(self, eta: np.ndarray) -> np.ndarray:
        """Fractional grid position (eta - lo)/step (outside [0, K-1] off the grid)."""
        return (_finite(eta, "eta") - self.lo) / self.step

    def index(self, eta: np.ndarray) -> np.ndarray:
        """Integer grid index of budgets on the lattice (may fall outside [0, K))."""
        return np.rint((_finite(eta, "eta") - self.lo) / self.step).astype(np.int64)


def interpolation(u: np.ndarray, K: int):
    """Linear interpolation at fractional grid positions u: (left index j0 in [0, K-2] (0 when
    K = 1), weight w of j0 + 1 in [0, 1], below mask u < 0, above mask u > K - 1)."""
    u = np.asarray(u, dtype=float)
    below, above = u < 0, u > K - 1
    if K == 1:
        return np.zeros(u.shape, np.int64), np.zeros(u.shape), below, above
    j0 = np.clip(np.floor(u), 0, K - 2).astype(np.int64)
    w = np.clip(u - j0, 0.0, 1.0)
    return j0, w, below, above


def lerp(left: np.ndarray, right: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(1 - w) left + w right, w broadcast over a trailing action axis when needed."""
    w = np.asarray(w)
    if w.ndim < np.ndim(left):
        w = w[..., None]
    return (1.0 - w) * left + w * right


def shortfall(eta: np.ndarray, tail_prob: np.ndarray, tail_value: np.ndarray) -> np.ndarray:
    """L = eta F - H."""
    return eta * tail_prob - tail_value


def greedy_action(loss: np.ndarray, q_neutral: np.ndarray, axis: int = -1) -> np.ndarray:
    """argmin of the shortfall along ``axis``, ties broken by the larger risk-neutral Q."""
    best = loss.min(axis=axis, keepdims=True)
    score = np.where(loss <= best + TIE_TOL, q_neutral, -np.inf)
    return score.argmax(axis=axis)


def clamped_tail(
    j: np.ndarray,
    K: int,
    tail_prob_in: np.ndarray,
    tail_value_in: np.ndarray,
    v_neutral: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """F and H ([R, K, A]) at budget indices or fractional positions j ([R, K]) with the
    off-grid rules: below the grid F = H = 0; above it F = 1 and H = E[G] (``v_neutral``,
    broadcast to [R, K, A])."""
    below, above = j < 0, j > K - 1
    tail_prob, tail_value = tail_prob_in.copy(), tail_value_in.copy()
    if below.any():
        tail_prob[below] = 0.0
        tail_value[below] = 0.0
    if above.any():
        tail_prob[above] = 1.0
        tail_value[above] = np.broadcast_to(v_neutral, tail_value.shape)[above]
    return tail_prob, tail_value


def terminal_targets(eta_next: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F and H targets when s' is terminal: 1{eta' >= 0} and r 1{eta' >= 0}."""
    hit = (eta_next >= 0).astype(float)
    return hit, reward * hit


def bootstrap_targets(
    reward: np.ndarray, tail_prob_next: np.ndarray, tail_value_next: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """F and H targets through a non-terminal s': F(s', a', eta') and r F + H(s', a', eta')."""
    return tail_prob_next, reward * tail_prob_next + tail_value_next


def initial_budget(grid_values: np.ndarray, min_shortfall: np.ndarray, q: float) -> np.ndarray:
    """Index of argmax_eta {eta - min_a L(s0, a, eta) / q} (last axis = budgets)."""
    return (grid_values - min_shortfall / q).argmax(axis=-1)


def cvar_from_shortfall(grid_values: np.ndarray, min_shortfall: np.ndarray, q: float):
    """max_eta {eta - min_a L / q} over the grid."""
    return (grid_values - min_shortfall / q).max(axis=-1)


def check_risk_level(q: float, name: str = "q") -> float:
    """The CVaR level q in (0, 1]."""
    return V.check_scalar(q, name, low=0.0, high=1.0, low_open=True)
