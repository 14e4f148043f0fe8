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

from iclr26 import validation as V

SENSITIVITY_UNITS = ("coordinate", "vector")


def resolve_sensitivity(sensitivity: str | float, n: int) -> float:
    """L2 sensitivity of one privacy unit for gain vectors in [0, 1]^n."""
    n = V.check_int(n, "n", low=1)
    if isinstance(sensitivity, str):
        V.check_choice(sensitivity, "sensitivity", SENSITIVITY_UNITS)
        return 1.0 if sensitivity == "coordinate" else math.sqrt(n)
    return V.check_scalar(sensitivity, "sensitivity", low=0.0, low_open=True)


def check_mu(mu: float) -> float:
    """Validate a GDP level mu (> 0, finite)."""
    return V.check_scalar(mu, "mu", low=0.0, low_open=True)


def noise_scale(mu: float, sensitivity: str | float, n: int) -> float:
    """eta = Delta / mu, the per-coordinate Gaussian noise of a mu-GDP report."""
    return resolve_sensitivity(sensitivity, n) / check_mu(mu)


def compose_gdp(mus) -> float:
    """mu of the composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2)."""
    arr = V.check_array(mus, "mus", ndim=1, dtype=np.float64)
    if np.any(arr <= 0):
        raise ValueError(f"mus: every mu must be > 0, got a minimum of {arr.min():g}")
    return float(np.sqrt(np.sum(arr**2)))


def check_gains(gains, name: str = "gains") -> np.ndarray:
    """A (T, n) array of gains in [0, 1] with T >= 1 and n >= 2. Values outside [0, 1] are
    refused: the sensitivities above (1 per coordinate, sqrt(n) per vector) and hence the stated
    privacy level assume them."""
    return V.check_array(gains, name, ndim=2, dtype=np.float64, min_cols=2, low=0.0, high=1.0)


def gaussian_ldp_report(
    g, mu: float, sensitivity: str | float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """The Gaussian mechanism applied to one report (or a (T, n) block): g + N(0, eta^2 I).

    ``g`` must lie in [0, 1] (refused otherwise): the sensitivity, and so the mu-GDP guarantee,
    is computed for gains in that range."""
    g = V.check_array(g, "g", ndim=(1, 2), dtype=np.float64, low=0.0, high=1.0)
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
