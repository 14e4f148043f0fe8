"""Heavy-tailed gradient noise: Student-t, symmetric Pareto, alpha-stable.

Student-t with df degrees of freedom has finite p-th moments only for p < df (df = 1.5: infinite
variance). Every node draws from its own generator seeded by (seed, node), so a node's noise is
the same whichever backend runs it.
"""

from __future__ import annotations

import numpy as np

NOISE_KINDS = ("student_t", "pareto", "levy_stable", "gaussian", "none")


class HeavyTailedNoise:
    """Additive noise ``scale * xi`` with i.i.d. heavy-tailed coordinates, one stream per node."""

    def __init__(
        self,
        kind: str = "student_t",
        df: float = 1.5,
        alpha: float = 1.5,
        scale: float = 1.0,
        seed: int = 0,
    ):
        if kind not in NOISE_KINDS:
            raise ValueError(f"unknown noise {kind!r}; valid: {', '.join(NOISE_KINDS)}")
        if df <= 0 or not 0 < alpha <= 2 or scale < 0:
            raise ValueError("need df > 0, 0 < alpha <= 2 and scale >= 0")
        self.kind, self.df, self.alpha, self.scale, self.seed = kind, df, alpha, scale, seed
        self._rngs: dict[int, np.random.Generator] = {}

    @classmethod
    def student_t(cls, df: float, scale: float = 1.0, seed: int = 0) -> HeavyTailedNoise:
        return cls("student_t", df=df, scale=scale, seed=seed)

    def rng(self, node: int) -> np.random.Generator:
        if node not in self._rngs:
            self._rngs[node] = np.random.default_rng([self.seed, node])
        return self._rngs[node]

    def draw(self, node: int, d: int) -> np.ndarray:
        """One noise vector of length d for ``node`` (advances that node's stream)."""
        rng = self.rng(node)
        if self.kind == "none" or self.scale == 0:
            return np.zeros(d)
        if self.kind == "student_t":
            xi = rng.standard_t(self.df, size=d)
        elif self.kind == "gaussian":
            xi = rng.standard_normal(d)
        elif self.kind == "pareto":
            xi = rng.choice([-1.0, 1.0], size=d) * rng.pareto(self.alpha, size=d)
        else:
            from scipy.stats import levy_stable

            xi = levy_stable.rvs(self.alpha, 0.0, size=d, random_state=rng)
        return self.scale * xi
