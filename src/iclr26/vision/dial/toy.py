"""A planted linear toy for DIAL: embeddings built from a sparse dictionary in which each
point activates its class atom, its spurious-value atom and a few nuisance atoms; the class
prompts lean towards the spurious value that co-occurs with their class, so zero-shot fails on
the minority groups. No encoder is needed (tests, examples)."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def planted_toy(
    n_per_group: int = 200,
    d: int = 32,
    n_nuisance: int = 40,
    bias: float = 0.9,
    spurious_strength: float = 1.2,
    noise: float = 0.05,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """A group-balanced pool of 2 classes x 2 spurious values. Returns ``img_emb`` (n, d),
    ``class_text_emb`` (2, d), ``spurious_text_emb`` (2, d), ``y``, ``spurious`` and
    ``groups`` (``2 * y + spurious``; groups 1 and 2 are the minority combinations), and the
    planted ``atoms`` (class 0, class 1, value 0, value 1, nuisance...)."""
    n = V.check_int(n_per_group, "n_per_group", low=1)
    d = V.check_int(d, "d", low=4)
    n_nuisance = V.check_int(n_nuisance, "n_nuisance", low=0)
    bias = V.check_scalar(bias, "bias", low=0.0)
    spurious_strength = V.check_scalar(spurious_strength, "spurious_strength", low=0.0)
    noise = V.check_scalar(noise, "noise", low=0.0)
    rng = np.random.default_rng(seed)
    atoms = rng.standard_normal((4 + n_nuisance, d))
    atoms /= np.linalg.norm(atoms, axis=1, keepdims=True)
    y = np.repeat([0, 0, 1, 1], n)
    s = np.repeat([0, 1, 0, 1], n)
    codes = np.zeros((4 * n, len(atoms)))
    rows = np.arange(4 * n)
    codes[rows, y] = rng.uniform(0.8, 1.2, 4 * n)
    codes[rows, 2 + s] = spurious_strength * rng.uniform(0.8, 1.2, 4 * n)
    if n_nuisance:
        for _ in range(3):
            codes[rows, 4 + rng.integers(0, n_nuisance, 4 * n)] += rng.uniform(0.2, 0.6, 4 * n)
    emb = codes @ atoms + noise * rng.standard_normal((4 * n, d))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    class_text = atoms[[0, 1]] + bias * atoms[[2, 3]]
    class_text /= np.linalg.norm(class_text, axis=1, keepdims=True)
    return {
        "img_emb": emb,
        "class_text_emb": class_text,
        "spurious_text_emb": atoms[[2, 3]].copy(),
        "y": y,
        "spurious": s,
        "groups": 2 * y + s,
        "atoms": atoms,
    }
