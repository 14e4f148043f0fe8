"""1-D searches for the rotation angle: Bayesian optimisation (the paper's) and golden section.

``bo_angle`` follows the reference schedule: four spread-out initial angles, then expected-
improvement steps with a Gaussian-process surrogate (Matern 5/2 with a learned amplitude,
length scale in degrees and white noise; constant mean through ``normalize_y``), EI maximised
over a 360-point grid jittered by +-0.25 degrees, and the answer is the grid angle with the
lowest posterior mean rather than the best evaluated angle.

Hyperparameters are set by type-II maximum likelihood over a log grid, scored for all grid
points at once (the amplitude in closed form). scikit-learn's L-BFGS fit of the same model
took about 40 ms per step and its fixed-hyperparameter fit + predict about 5 ms (measured,
one thread), which would dominate CDA's training time; the posterior is therefore computed in
numpy and tested to equal scikit-learn's ``GaussianProcessRegressor`` on the same kernel
(``surrogate="sklearn"`` runs the search through it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from iclr26 import validation as V

ANGLE_RANGE = (-90.0, 90.0)
N_INITIAL = 4
N_SPREAD_DRAWS = 50
GRID_SIZE = 360
GRID_JITTER = 0.25
# Type-II ML grid: length scales in degrees, noise as a fraction of the signal variance
# (its floor 1e-4 is the reference's noise floor of 1% of the objective's spread).
LENGTH_SCALES = np.geomspace(5.0, 900.0, 16)
NOISE_RATIOS = np.geomspace(1e-4, 1.0, 9)
AMPLITUDE_BOUNDS = (1e-5, 1e5)
JITTER = 1e-10  # added to the covariance diagonal, as GaussianProcessRegressor's default alpha

Objective = Callable[[float], float]


def spread_initial_angles(rng: np.random.Generator, bounds=ANGLE_RANGE) -> np.ndarray:
    """Of ``N_SPREAD_DRAWS`` + 1 random draws of 4 angles, the one with the largest minimum gap."""
    draws = rng.uniform(bounds[0], bounds[1], size=(N_SPREAD_DRAWS + 1, N_INITIAL))
    gaps = np.diff(np.sort(draws, axis=1), axis=1).min(axis=1)
    return draws[int(np.argmax(gaps))]


def matern52(distance: np.ndarray, length_scale) -> np.ndarray:
    """Matern nu=5/2 correlation (unit amplitude)."""
    r = np.sqrt(5.0) * distance / length_scale
    return (1.0 + r + r**2 / 3.0) * np.exp(-r)


def fit_hyperparameters(x: np.ndarray, y_normalised: np.ndarray) -> tuple[float, float, float]:
    """Type-II ML (amplitude, length scale, noise level) of a constant*Matern52 + white GP.

    Every (length scale, noise ratio) pair of the grid is scored at once with a batched
    Cholesky; the amplitude maximising the likelihood is closed-form, y^T A^-1 y / n.
    """
    n = x.size
    distance = np.abs(x[:, None] - x[None, :])
    corr = matern52(distance[None, :, :], LENGTH_SCALES[:, None, None])  # (L, n, n)
    A = corr[:, None, :, :] + NOISE_RATIOS[None, :, None, None] * np.eye(n)  # (L, R, n, n)
    chol = np.linalg.cholesky(A)
    solved = np.linalg.solve(chol, np.broadcast_to(y_normalised[:, None], A.shape[:-1] + (1,)))
    quad = np.sum(solved[..., 0] ** 2, axis=-1)
    log_det = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
    amplitude = np.clip(quad / n, *AMPLITUDE_BOUNDS)
    log_lik = -0.5 * quad / amplitude - 0.5 * n * np.log(amplitude) - 0.5 * log_det
    i, j = np.unravel_index(int(np.argmax(log_lik)), log_lik.shape)
    amp = float(amplitude[i, j])
    return amp, float(LENGTH_SCALES[i]), amp * float(NOISE_RATIOS[j])


class Surrogate:
    """GP posterior of a constant*Matern52 + white-noise model, constant mean via y
    normalisation, hyperparameters from :func:`fit_hyperparameters`; computed in numpy.

    ``SklearnSurrogate`` is the same model through ``GaussianProcessRegressor``; the two agree
    to rounding (tested), and this one skips scikit-learn's per-fit overhead (input validation,
    kernel cloning, a likelihood evaluation), about 5 ms per fit against well under 1 ms.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x = np.asarray(x, dtype=float)
        self.offset = float(y.mean())
        spread = float(y.std())
        self.scale = spread if spread > 0 else 1.0
        y_normalised = (y - self.offset) / self.scale
        self.amplitude, self.length_scale, self.noise = fit_hyperparameters(self.x, y_normalised)
        cov = self._cov(self.x) + (self.noise + JITTER) * np.eye(self.x.size)
        self.chol = np.linalg.cholesky(cov)
        self.weights = np.linalg.solve(self.chol.T, np.linalg.solve(self.chol, y_normalised))

    def _cov(self, grid: np.ndarray) -> np.ndarray:
        distance = np.abs(grid[:, None] - self.x[None, :])
        return self.amplitude * matern52(distance, self.length_scale)

    def predict(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent (noise-free) standard deviation on ``grid``."""
        cross = self._cov(np.asarray(grid, dtype=float))
        mean = cross @ self.weights
        solved = np.linalg.solve(self.chol, cross.T)
        var = np.maximum(self.amplitude - np.sum(solved**2, axis=0), 0.0)
        return self.offset + self.scale * mean, self.scale * np.sqrt(var)


class SklearnSurrogate:
    """The same surrogate as :class:`Surrogate`, through scikit-learn's
    ``GaussianProcessRegressor`` with ``ConstantKernel * Matern(nu=2.5) + WhiteKernel``."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        spread = y.std()
        y_normalised = (y - y.mean()) / (spread if spread > 0 else 1.0)
        amplitude, length_scale, noise = fit_hyperparameters(x, y_normalised)
        kernel = ConstantKernel(amplitude, "fixed") * Matern(length_scale, "fixed", nu=2.5)
        kernel = kernel + WhiteKernel(noise, "fixed")
        self.gp = GaussianProcessRegressor(kernel, alpha=JITTER, normalize_y=True, optimizer=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.gp.fit(np.asarray(x, dtype=float)[:, None], y)

    def predict(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, std = self.gp.predict(np.asarray(grid, dtype=float)[:, None], return_std=True)
        noise = self.gp.kernel_.k2.noise_level * float(np.squeeze(self.gp._y_train_std)) ** 2
        return mean, np.sqrt(np.maximum(std**2 - noise, 0.0))


SURROGATES = {"numpy": Surrogate, "sklearn": SklearnSurrogate}


def expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """EI for minimisation: E[max(best - f, 0)] under f ~ N(mean, std^2)."""
    gain = best - mean
    safe = np.where(std > 0, std, 1.0)
    z = gain / safe
    density = np.exp(-0.5 * z**2) / np.sqrt(2.0 * np.pi)
    ei = gain * ndtr(z) + std * density
    return np.where(std > 0, ei, np.maximum(gain, 0.0))


def jittered_grid(rng: np.random.Generator, bounds=ANGLE_RANGE) -> np.ndarray:
    grid = np.linspace(bounds[0], bounds[1], GRID_SIZE)
    grid = grid + rng.uniform(-GRID_JITTER, GRID_JITTER, size=GRID_SIZE)
    return np.clip(grid, bounds[0], bounds[1])


def bo_angle(
    objective: Objective,
    n_evals: int,
    seed: int | np.random.Generator = 0,
    surrogate: str = "numpy",
) -> float:
    """Angle (degrees, in [-90, 90]) minimising ``objective`` by Bayesian optimisation.

    ``n_evals`` objective evaluations in total: 4 spread initial angles, then at least one
    expected-improvement step. Returns the grid angle with the lowest posterior mean of the
    GP fitted to all evaluations. ``surrogate="sklearn"`` computes the same GP with
    scikit-learn's ``GaussianProcessRegressor`` (slower, identical up to rounding).
    """
    objective = _checked_objective(objective)
    n_evals = V.check_int(n_evals, "n_evals", low=1)
    V.check_choice(surrogate, "surrogate", tuple(SURROGATES))
    model = SURROGATES[surrogate]
    rng = np.random.default_rng(seed)
    x = spread_initial_angles(rng)
    y = np.array([objective(float(t)) for t in x])
    for _ in range(max(1, int(n_evals) - N_INITIAL)):
        grid = jittered_grid(rng)
        mean, std = model(x, y).predict(grid)
        candidate = float(grid[int(np.argmax(expected_improvement(mean, std, y.min())))])
        x = np.append(x, candidate)
        y = np.append(y, objective(candidate))
    grid = jittered_grid(rng)
    mean, _ = model(x, y).predict(grid)
    return float(grid[int(np.argmin(mean))])


def golden_angle(objective: Objective, n_evals: int, bounds=ANGLE_RANGE) -> float:
    """Angle minimising ``objective`` by golden-section search with ``n_evals`` evaluations
    (the paper's "CDA-Fibonacci" variant); returns the best evaluated angle."""
    objective = _checked_objective(objective)
    V.check_int(n_evals, "n_evals", low=2)
    bounds = V.check_array(bounds, "bounds", shape=(2,), dtype=np.float64)
    if not bounds[0] < bounds[1]:
        raise ValueError(f"bounds must be (low, high) with low < high, got {tuple(bounds)}")
    inv_phi = (np.sqrt(5.0) - 1.0) / 2.0
    lo, hi = float(bounds[0]), float(bounds[1])
    a, b = hi - inv_phi * (hi - lo), lo + inv_phi * (hi - lo)
    fa, fb = objective(a), objective(b)
    best = (fa, a) if fa <= fb else (fb, b)
    for _ in range(int(n_evals) - 2):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - inv_phi * (hi - lo)
            fa = objective(a)
            best = min(best, (fa, a))
        else:
            lo, a, fa = a, b, fb
            b = lo + inv_phi * (hi - lo)
            fb = objective(b)
            best = min(best, (fb, b))
    return float(best[1])


def _checked_objective(objective: Objective) -> Objective:
    """The objective, refusing a non-finite value (a NaN would poison the surrogate)."""
    if not callable(objective):
        raise TypeError(f"objective must be callable, got {type(objective).__name__}")

    def checked(theta: float) -> float:
        value = objective(theta)
        return V.check_scalar(value, f"objective({theta:.3g})")

    return checked
