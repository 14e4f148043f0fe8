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

from iclr26 import validation as V
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
        n, d, m = (V.check_int(v, k, low=1) for v, k in ((n, "n"), (d, "d"), (m, "m")))
        lam = V.check_scalar(lam, "lam", low=0.0)
        scales = V.check_array(scales, "scales", shape=(2,), dtype=np.float64)
        if not 0 < scales[0] <= scales[1]:
            raise ValueError(f"scales must satisfy 0 < low <= high, got {tuple(scales)}")
        seed = V.check_int(seed, "seed", low=0)
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

    def _check_x(self, x, name: str = "x", nodes: bool = True, finite: bool = True) -> torch.Tensor:
        x = V.check_tensor(
            x,
            name,
            floating=True,
            min_ndim=2 if nodes else 1,
            allow_nan=not finite,
            allow_inf=not finite,
        )
        want = (self.n, self.d) if nodes else (self.d,)
        if tuple(x.shape[-len(want) :]) != want:
            shape = "[..., n, d]" if nodes else "[..., d]"
            raise ValueError(f"{name} must have shape {shape} = {want}, got {tuple(x.shape)}")
        return x

    def _check_x_shape(self, x) -> torch.Tensor:
        """Shape only: a diverged run's iterates are passed on (``run_local`` decides)."""
        return self._check_x(x, finite=False)

    def local_grads(self, x: torch.Tensor) -> torch.Tensor:
        """Exact gradients of every f_i at its own iterate: x [..., n, d] -> [..., n, d]."""
        return self._local_grads(self._check_x(x))

    def _local_grads(self, x: torch.Tensor) -> torch.Tensor:
        """Computed in float64 (the problem's dtype), returned in x's dtype."""
        x64 = x.to(self.A.dtype)
        resid = torch.einsum("imd,...id->...im", self.A, x64) - self.b
        data = torch.einsum("imd,...im->...id", self.A, resid) / self.m
        return (self.s[:, None] * (data + self._reg_grad(x64))).to(x.dtype)

    def node_grad(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Exact gradient of f_i at x [d]."""
        i = V.check_int(i, "i", low=0, high=self.n - 1)
        x = self._check_x(x, nodes=False)
        x64 = x.to(self.A.dtype)
        resid = self.A[i] @ x64 - self.b[i]
        return (self.s[i] * (self.A[i].T @ resid / self.m + self._reg_grad(x64))).to(x.dtype)

    def full_grad(self, x: torch.Tensor) -> torch.Tensor:
        """Gradient of f = mean_i f_i at one point x [..., d]."""
        x = V.check_tensor(x, "x", floating=True, min_ndim=1)
        if x.shape[-1] != self.d:
            raise ValueError(f"x must have shape [..., d] = [..., {self.d}], got {tuple(x.shape)}")
        return self._full_grad(x)

    def _full_grad(self, x: torch.Tensor) -> torch.Tensor:
        """full_grad without checks (non-finite points give non-finite gradients: the claims
        evaluate diverged runs of a step-size grid with it)."""
        xs = x.unsqueeze(-2).expand(*x.shape[:-1], self.n, self.d)
        return self._local_grads(xs).mean(-2)


class SyntheticOracle:
    """Stochastic local gradient: exact gradient plus heavy-tailed noise from the node's own
    stream (picklable, so a Ray actor can hold it)."""

    def __init__(self, problem: HeterogeneousRegression, noise: HeavyTailedNoise):
        if not isinstance(problem, HeterogeneousRegression):
            raise TypeError(
                f"problem must be a HeterogeneousRegression, got {type(problem).__name__}"
            )
        if not isinstance(noise, HeavyTailedNoise):
            raise TypeError(f"noise must be a HeavyTailedNoise, got {type(noise).__name__}")
        self.problem, self.noise = problem, noise

    def __call__(self, i: int, x: torch.Tensor, t: int) -> torch.Tensor:
        """Node i's stochastic gradient at its iterate x [d] (finite)."""
        g = self.problem.node_grad(i, x)
        return g + torch.from_numpy(self.noise.draw(i, g.shape[-1])).to(g.dtype)

    def all_nodes(self, x: torch.Tensor) -> torch.Tensor:
        """Noisy gradients of every node at x [..., n, d]; the same noise for every leading
        index (paired comparisons across a vectorised grid). Only the shape is checked, so a
        diverged run's iterates pass; ``run_local`` refuses non-finite gradients by default."""
        g = self.problem._local_grads(self.problem._check_x_shape(x))
        noise = np.stack([self.noise.draw(i, self.problem.d) for i in range(self.problem.n)])
        return g + torch.from_numpy(noise).to(g.dtype)
