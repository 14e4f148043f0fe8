"""Synthetic heterogeneous nonconvex regression with heavy-tailed gradient noise.

Node i holds A_i (m x d, entries N(0, 1/d)), its own planted optimum x_i* ~ N(0, 4 I),
b_i = A_i x_i* + 0.1 N(0, 1), and a scale s_i (log-spaced in [0.1, 10]):
    f_i(x) = s_i [ ||A_i x - b_i||^2 / (2m) + lam sum_k x_k^2 / (1 + x_k^2) ].
The optima differ across nodes, so normalized local steps need not cancel at a stationary
point of f = mean_i f_i; that is what gradient tracking fixes.
"""

from __future__ import annotations

import numpy as np
import torch

from iclr26.optim.gt_nsgdm.noise import HeavyTailedNoise


class HeterogeneousRegression:
    def __init__(
        self,
        n: int = 8,
        d: int = 20,
        m: int = 50,
        lam: float = 0.1,
        scales: tuple[float, float] = (0.1, 10.0),
        seed: int = 0,
    ):
        if min(n, d, m) < 1:
            raise ValueError("n, d, m must be >= 1")
        rng = np.random.default_rng(seed)
        self.n, self.d, self.m, self.lam = n, d, m, lam
        a = rng.normal(0, 1 / np.sqrt(d), size=(n, m, d))
        x_star = rng.normal(0, 2.0, size=(n, d))
        b = np.einsum("imd,id->im", a, x_star) + 0.1 * rng.standard_normal((n, m))
        self.A = torch.tensor(a)
        self.b = torch.tensor(b)
        self.s = torch.tensor(np.geomspace(scales[0], scales[1], n) if n > 1 else [1.0])

    def _reg_grad(self, x: torch.Tensor) -> torch.Tensor:
        return self.lam * 2 * x / (1 + x**2) ** 2

    def local_grads(self, x: torch.Tensor) -> torch.Tensor:
        """Exact gradients of every f_i at its own iterate: x [..., n, d] -> [..., n, d]."""
        resid = torch.einsum("imd,...id->...im", self.A, x) - self.b
        data = torch.einsum("imd,...im->...id", self.A, resid) / self.m
        return self.s[:, None] * (data + self._reg_grad(x))

    def node_grad(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Exact gradient of f_i at x [d]."""
        resid = self.A[i] @ x - self.b[i]
        return self.s[i] * (self.A[i].T @ resid / self.m + self._reg_grad(x))

    def full_grad(self, x: torch.Tensor) -> torch.Tensor:
        """Gradient of f = mean_i f_i at one point x [..., d]."""
        xs = x.unsqueeze(-2).expand(*x.shape[:-1], self.n, self.d)
        return self.local_grads(xs).mean(-2)


class SyntheticOracle:
    """Stochastic local gradient: exact gradient plus heavy-tailed noise from the node's own
    stream (picklable, so a Ray actor can hold it)."""

    def __init__(self, problem: HeterogeneousRegression, noise: HeavyTailedNoise):
        self.problem, self.noise = problem, noise

    def __call__(self, i: int, x: torch.Tensor, t: int) -> torch.Tensor:
        g = self.problem.node_grad(i, x)
        return g + torch.from_numpy(self.noise.draw(i, g.shape[-1]))

    def all_nodes(self, x: torch.Tensor) -> torch.Tensor:
        """Noisy gradients of every node at x [..., n, d]; the same noise for every leading
        index (paired comparisons across a vectorised grid)."""
        g = self.problem.local_grads(x)
        noise = np.stack([self.noise.draw(i, self.problem.d) for i in range(self.problem.n)])
        return g + torch.from_numpy(noise)
