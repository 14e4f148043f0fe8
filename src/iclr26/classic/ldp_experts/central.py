"""Central-DP baseline: tree-aggregated noisy cumulative gains followed by Hedge.

Agarwal & Singh (2017) privatise the running gain sums with the binary-tree mechanism: each
report enters L = ceil(log2 T) + 1 dyadic nodes, every node gets independent noise, and a prefix
sum is the sum of at most L nodes. With Gaussian node noise sigma = Delta sqrt(L) / mu the whole
release is mu-GDP (L-fold composition of mu/sqrt(L) mechanisms). Hedge (exponential weights)
then plays on the noisy prefix sums. The curator is trusted: it sees raw gains.
"""

from __future__ import annotations

import math

import numpy as np

from iclr26 import validation as V
from iclr26.classic.ldp_experts.privacy import check_gains, check_mu, resolve_sensitivity


class TreeAggregator:
    """Binary-tree mechanism for prefix sums of a (T, n) stream with Gaussian node noise."""

    def __init__(self, T: int, n: int, sigma: float, random_state=None):
        self.T = V.check_int(T, "T", low=1)
        self.n = V.check_int(n, "n", low=1)
        self.sigma = V.check_scalar(sigma, "sigma", low=0.0)
        T, n = self.T, self.n
        self.levels = math.ceil(math.log2(T)) + 1 if T > 1 else 1
        rng = np.random.default_rng(random_state)
        self.node_noise = [
            sigma * rng.standard_normal((math.ceil(T / 2**lvl), n)) for lvl in range(self.levels)
        ]

    def nodes_containing(self, s: int) -> list[tuple[int, int]]:
        """(level, index) of every node the 1-based report s enters."""
        s = V.check_int(s, "s", low=1, high=self.T)
        return [(lvl, (s - 1) >> lvl) for lvl in range(self.levels)]

    def prefix_noise(self) -> np.ndarray:
        """Noise of the released prefix sums S_0 .. S_T, shape (T + 1, n) (S_0 is exact)."""
        counts = np.arange(self.T + 1)
        noise = np.zeros((self.T + 1, self.n))
        for lvl in range(self.levels):
            shifted = counts >> lvl
            use = (shifted & 1).astype(bool)
            noise[use] += self.node_noise[lvl][shifted[use] - 1]
        return noise

    def prefix_sums(self, gains: np.ndarray) -> np.ndarray:
        """Noisy prefix sums S~_c = sum_{s<=c} g_s + noise, c = 0..T, shape (T + 1, n)."""
        gains = V.check_array(gains, "gains", shape=(self.T, self.n), dtype=np.float64)
        exact = np.vstack([np.zeros((1, self.n)), np.cumsum(gains, axis=0)])
        return exact + self.prefix_noise()


def hedge_gains(noisy_prefix: np.ndarray, gains: np.ndarray, learning_rate: float) -> np.ndarray:
    """Expected per-round gains of Hedge playing p_t ~ exp(lr * S~_{t-1}) on true gains."""
    scores = learning_rate * noisy_prefix[:-1]
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=1, keepdims=True)
    return np.sum(weights * gains, axis=1)


class CentralDPHedge:
    """Hedge on tree-aggregated Gaussian-noised cumulative gains (central mu-GDP).

    ``learning_rate``: ``"min-noise"`` (sqrt(8 log n / T)), ``"min-regret"`` (best on
    ``lr_grid`` in hindsight: an optimistic oracle, not itself private) or a positive number.
    After ``play_central``: ``per_round_gain_`` (expected gain of the Hedge distribution),
    ``learning_rate_`` (the rate used).
    """

    trust = "central"

    def __init__(
        self,
        mu: float,
        sensitivity: str | float,
        learning_rate="min-noise",
        lr_grid=None,
        random_state=None,
    ):
        self.mu = check_mu(mu)
        self.sensitivity = sensitivity
        resolve_sensitivity(sensitivity, 2)
        if isinstance(learning_rate, str):
            V.check_choice(learning_rate, "learning_rate", ("min-noise", "min-regret"))
        else:
            V.check_scalar(learning_rate, "learning_rate", low=0.0, low_open=True)
        if lr_grid is not None:
            grid = V.check_array(lr_grid, "lr_grid", ndim=1, dtype=np.float64)
            if np.any(grid <= 0):
                raise ValueError("lr_grid must hold rates > 0")
        self.learning_rate = learning_rate
        self.lr_grid = lr_grid
        self.random_state = random_state

    def play_central(self, gains) -> np.ndarray:
        gains = check_gains(gains)
        T, n = gains.shape
        delta = resolve_sensitivity(self.sensitivity, n)
        tree = TreeAggregator(T, n, 1.0, self.random_state)
        tree_sigma = delta * math.sqrt(tree.levels) / self.mu
        tree.node_noise = [tree_sigma * z for z in tree.node_noise]
        tree.sigma = tree_sigma
        self.tree_ = tree
        noisy = tree.prefix_sums(gains)
        if self.learning_rate == "min-noise":
            rates = [math.sqrt(8.0 * math.log(n) / T)]
        elif self.learning_rate == "min-regret":
            grid = self.lr_grid if self.lr_grid is not None else np.geomspace(1e-3, 30.0, 25)
            rates = [float(r) for r in grid]
        else:
            rates = [float(self.learning_rate)]
        results = [hedge_gains(noisy, gains, lr) for lr in rates]
        best = int(np.argmax([r.sum() for r in results]))
        self.learning_rate_ = rates[best]
        self.per_round_gain_ = results[best]
        return self.per_round_gain_
