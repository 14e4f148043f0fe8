"""Local privatisation of gain reports and Gaussian-DP accounting.

The Gaussian mechanism with L2 sensitivity Delta and noise scale eta is mu-GDP with
mu = Delta / eta (Dong, Roth & Su, "Gaussian Differential Privacy"); mu-GDP guarantees compose
as sqrt(sum mu_i^2). The privacy unit is explicit: ``"coordinate"`` (one expert's report per
round is one person's datum, Delta = 1) or ``"vector"`` (the whole gain vector is one datum,
Delta = sqrt(n)), or a positive number.

:class:`LDPReportStream` is the only object that touches raw gains; online algorithms only ever
receive the privatised reports it yields.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

SENSITIVITY_UNITS = ("coordinate", "vector")


def resolve_sensitivity(sensitivity: str | float, n: int) -> float:
    """L2 sensitivity of one privacy unit for gain vectors in [0, 1]^n."""
    if isinstance(sensitivity, str):
        if sensitivity == "coordinate":
            return 1.0
        if sensitivity == "vector":
            return math.sqrt(n)
        raise ValueError(
            f"sensitivity must be one of {SENSITIVITY_UNITS} or a positive number, "
            f"got {sensitivity!r}"
        )
    value = float(sensitivity)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"sensitivity must be positive, got {sensitivity!r}")
    return value


def check_mu(mu: float) -> float:
    """Validate a GDP level mu (> 0, finite)."""
    try:
        value = float(mu)
    except (TypeError, ValueError):
        raise TypeError(f"mu must be a number, got {type(mu).__name__}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"privacy level mu must be positive and finite, got {mu!r}")
    return value


def noise_scale(mu: float, sensitivity: str | float, n: int) -> float:
    """eta = Delta / mu, the per-coordinate Gaussian noise of a mu-GDP report."""
    return resolve_sensitivity(sensitivity, n) / check_mu(mu)


def compose_gdp(mus) -> float:
    """mu of the composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2)."""
    arr = np.asarray(mus, dtype=float)
    if np.any(arr <= 0):
        raise ValueError("every mu must be positive")
    return float(np.sqrt(np.sum(arr**2)))


def check_gains(gains) -> np.ndarray:
    """A (T, n) array of gains in [0, 1] with T >= 1 and n >= 2."""
    g = np.asarray(gains, dtype=float)
    if g.ndim != 2:
        raise ValueError(f"gains must be a (T, n) array, got shape {g.shape}")
    if g.shape[0] < 1 or g.shape[1] < 2:
        raise ValueError(f"need at least one round and two experts, got shape {g.shape}")
    if not np.all(np.isfinite(g)) or g.min() < 0 or g.max() > 1:
        raise ValueError("gains must be finite and lie in [0, 1]")
    return g


def gaussian_ldp_report(
    g, mu: float, sensitivity: str | float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """The Gaussian mechanism applied to one report (or a (T, n) block): g + N(0, eta^2 I)."""
    g = np.asarray(g, dtype=float)
    n = g.shape[-1]
    eta = noise_scale(mu, sensitivity, n)
    rng = np.random.default_rng(rng)
    return g + eta * rng.standard_normal(g.shape)


class LDPReportStream:
    """Privatised reports of a gain sequence: the only holder of the raw gains.

    Iterating yields g~_t = g_t + z_t, z_t ~ N(0, eta^2 I) with eta = Delta / mu. The noise is
    drawn once at construction, so several algorithms can consume the same stream (common
    random numbers). The raw gains are kept private to the stream; ``noisy`` is the whole
    (T, n) block of reports.
    """

    def __init__(self, gains, mu: float, sensitivity: str | float, random_state=None):
        g = check_gains(gains)
        self.mu = check_mu(mu)
        self.sensitivity = sensitivity
        self.delta = resolve_sensitivity(sensitivity, g.shape[1])
        self.eta = self.delta / self.mu
        rng = np.random.default_rng(random_state)
        self._noisy = g + self.eta * rng.standard_normal(g.shape)
        self._noisy.setflags(write=False)
        self.shape = g.shape

    @property
    def noisy(self) -> np.ndarray:
        return self._noisy

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._noisy)
