"""Heavy-tailed gradient noise: Student-t, symmetric Pareto, alpha-stable.

Student-t with df degrees of freedom has finite p-th moments only for p < df (df = 1.5: infinite
variance). Every node draws from its own generator seeded by (seed, node), so a node's noise is
the same whichever backend runs it.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

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
        V.check_choice(kind, "kind", NOISE_KINDS)
        df = V.check_scalar(df, "df", low=0.0, low_open=True)
        alpha = V.check_scalar(alpha, "alpha", low=0.0, high=2.0, low_open=True)
        scale = V.check_scalar(scale, "scale", low=0.0)
        seed = V.check_int(seed, "seed", low=0)
        self.kind, self.df, self.alpha, self.scale, self.seed = kind, df, alpha, scale, seed
        self._rngs: dict[int, np.random.Generator] = {}

    @classmethod
    def student_t(cls, df: float, scale: float = 1.0, seed: int = 0) -> HeavyTailedNoise:
        return cls("student_t", df=df, scale=scale, seed=seed)

    def rng(self, node: int) -> np.random.Generator:
        node = V.check_int(node, "node", low=0)
        if node not in self._rngs:
            self._rngs[node] = np.random.default_rng([self.seed, node])
        return self._rngs[node]

    def draw(self, node: int, d: int) -> np.ndarray:
        """One noise vector of length d for ``node`` (advances that node's stream)."""
        d = V.check_int(d, "d", low=1)
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

    def state_dict(self) -> dict:
        """The state of every node's stream (to resume a run exactly)."""
        return {node: rng.bit_generator.state for node, rng in self._rngs.items()}

    def load_state_dict(self, state: dict) -> None:
        for node, st in state.items():
            self.rng(int(node)).bit_generator.state = st
