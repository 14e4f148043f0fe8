"""Regression data for the lmKAN checks: a random teacher network and displaced methane."""

from __future__ import annotations

import numpy as np

from iclr26.data import as_rng


def random_teacher(
    n: int, dim: int = 32, width: int = 256, seed: int = 0, teacher_seed: int = 12345
) -> tuple[np.ndarray, np.ndarray]:
    """``x ~ N(0, I_dim)``, ``y = teacher(x)`` for a frozen random tanh MLP ``dim-width-width-1``.

    The teacher depends on ``teacher_seed`` only, so train and test sets drawn with different
    ``seed`` share it. Targets are standardised with the teacher's own statistics (estimated on
    a fixed reference sample).
    """
    if n < 1 or dim < 1 or width < 1:
        raise ValueError("n, dim and width must be positive")
    t_rng = np.random.default_rng(teacher_seed)
    w1 = t_rng.normal(0, 1 / np.sqrt(dim), (dim, width))
    w2 = t_rng.normal(0, 1 / np.sqrt(width), (width, width))
    w3 = t_rng.normal(0, 1 / np.sqrt(width), (width, 1))
    b1, b2 = t_rng.normal(0, 0.1, width), t_rng.normal(0, 0.1, width)

    def teacher(x: np.ndarray) -> np.ndarray:
        return (np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2) @ w3)[:, 0]

    reference = teacher(t_rng.normal(size=(4096, dim)))
    x = as_rng(seed).normal(size=(n, dim))
    y = (teacher(x) - reference.mean()) / reference.std()
    return x.astype(np.float32), y.astype(np.float32)


_BOND = 1.09  # C-H equilibrium length (angstrom)
_MASSES = np.array([12.011, 1.008, 1.008, 1.008, 1.008])


def methane_energy(coords: np.ndarray) -> np.ndarray:
    """A fixed classical force field for CH4 configurations ``(n, 5, 3)`` (C first), in eV:
    Morse C-H bonds + harmonic H-C-H angles + soft exponential H-H repulsion."""
    carbon, hydrogens = coords[:, :1], coords[:, 1:]
    bonds = hydrogens - carbon
    r = np.linalg.norm(bonds, axis=-1)
    morse = (4.7 * (1 - np.exp(-1.8 * (r - _BOND))) ** 2).sum(1)
    unit = bonds / r[..., None]
    i, j = np.triu_indices(4, 1)
    cos = np.clip((unit[:, i] * unit[:, j]).sum(-1), -1.0, 1.0)
    angles = np.arccos(cos)
    bend = (1.5 * (angles - np.arccos(-1 / 3)) ** 2).sum(1)
    hh = np.linalg.norm(hydrogens[:, i] - hydrogens[:, j], axis=-1)
    repulsion = (20.0 * np.exp(-hh / 0.35)).sum(1)
    return morse + bend + repulsion


def displaced_methane(n: int, sigma: float = 0.15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Randomly displaced methane: features = 15 centre-of-mass-removed Cartesian coordinates,
    target = :func:`methane_energy` standardised by fixed constants (mean/std of a reference
    sample), so train and test sets share the scaling."""
    if n < 1 or sigma <= 0:
        raise ValueError("need n >= 1 and sigma > 0")
    tetra = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3) * _BOND
    equilibrium = np.vstack([np.zeros(3), tetra])

    def sample(rng: np.random.Generator, count: int) -> np.ndarray:
        coords = equilibrium + rng.normal(0, sigma, (count, 5, 3))
        com = (coords * _MASSES[:, None]).sum(1, keepdims=True) / _MASSES.sum()
        return coords - com

    reference = methane_energy(sample(np.random.default_rng(999), 4096))
    coords = sample(as_rng(seed), n)
    energy = (methane_energy(coords) - reference.mean()) / reference.std()
    features = coords.reshape(n, 15) / sigma  # unit-scale inputs
    return features.astype(np.float32), energy.astype(np.float32)
