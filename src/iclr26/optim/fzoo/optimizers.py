"""FZOO and its MeZO baseline as ``torch.optim.Optimizer`` subclasses driven by a loss closure.

Zeroth-order contract: ``step(closure)`` calls ``closure()`` several times, each returning the
scalar mini-batch loss at the current (perturbed) weights without a backward pass, on the same
mini-batch, with dropout off. No ``.grad`` buffer is ever created; perturbation directions are
regenerated from integer seeds, never stored.

FZOO (one step, N one-sided Rademacher perturbations u_i, population std sigma of the N
perturbed losses l_i, l_0 the unperturbed loss):

    c_i = (l_i - l_0) / (N * sigma),        theta <- theta - lr * sum_i c_i u_i

There is no 1/eps factor (eps cancels because sigma ~ eps * ||grad||), so ``lr`` is eps-free;
a write-up with g = (1/(eps N)) sum (l_i - l_0) u_i and theta <- theta - eta g / sigma uses
eta = eps * lr. To first order the step is a normalized-SGD step of norm ~ lr * sqrt(d / N).

MeZO (Malladi et al., 2023): two-sided SPSA with a Gaussian z,
p = (L(theta + eps z) - L(theta - eps z)) / (2 eps), theta <- theta - lr * p * z.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import torch

from iclr26.optim.fzoo.batched import stacked_perturbations
from iclr26.optim.fzoo.perturb import KINDS, add_direction, directions


def _loss_value(value) -> float:
    """The float value of a closure's loss; a non-scalar is a clear error."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"the closure must return a scalar loss, got a tensor of shape {tuple(value.shape)}"
            )
        return float(value.detach())
    if isinstance(value, (int, float, np.floating, np.integer)):
        return float(value)
    raise TypeError(f"the closure must return a scalar loss, got {type(value).__name__}")


class ZerothOrderOptimizer(torch.optim.Optimizer):
    """Shared bookkeeping: trainable-parameter list, seeds, forward-pass counter."""

    def __init__(self, params: Iterable, defaults: dict, seed: int):
        lr = defaults.get("lr")
        if lr is None or not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if not defaults.get("eps", 1.0) > 0:
            raise ValueError(f"eps must be > 0, got {defaults.get('eps')}")
        if defaults.get("weight_decay", 0.0) < 0:
            raise ValueError("weight_decay must be >= 0")
        super().__init__(params, defaults)
        self.forward_passes = 0
        self._seeds = np.random.default_rng(seed)

    def _groups(self) -> list[tuple[dict, list[torch.Tensor]]]:
        """Each group with its trainable tensors (``requires_grad=True``; PEFT freezes the rest)."""
        return [(g, [p for p in g["params"] if p.requires_grad]) for g in self.param_groups]

    def trainable(self) -> list[torch.Tensor]:
        return [p for _, ps in self._groups() for p in ps]

    def _evaluate(self, closure: Callable) -> float:
        with torch.no_grad():
            value = _loss_value(closure())
        self.forward_passes += 1
        return value

    def _new_seed(self) -> int:
        return int(self._seeds.integers(0, 2**62))

    def _perturb(self, seed: int, kind: str, sign: float) -> None:
        """params += sign * eps_group * u(seed), group by group in a fixed order."""
        for group, params in self._groups():
            add_direction(params, seed + self._group_offset(group), kind, sign * group["eps"])

    def _group_offset(self, group: dict) -> int:
        return 7919 * self.param_groups.index(group)

    @torch.no_grad()
    def _apply(self, seeds_coefs: list[tuple[int, float]], kind: str) -> None:
        """theta <- (1 - lr wd) theta - lr * sum_i coef_i u_i, regenerating each u_i."""
        for group, params in self._groups():
            lr, wd = group["lr"], group["weight_decay"]
            if wd:
                for p in params:
                    p.mul_(1 - lr * wd)
            for seed, coef in seeds_coefs:
                add_direction(params, seed + self._group_offset(group), kind, -lr * coef)

    def state_bytes(self) -> int:
        """Optimizer state kept between steps: none (only seeds of the current step)."""
        return 0


class FZOO(ZerothOrderOptimizer):
    """Fast zeroth-order optimizer: batched one-sided estimates, step scaled by 1/std."""

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-5,
        eps: float = 1e-3,
        n_perturb: int = 8,
        perturbation: str = "rademacher",
        batched: bool = False,
        std_floor: float = 1e-12,
        weight_decay: float = 0.0,
        seed: int = 0,
    ):
        if not isinstance(n_perturb, int) or n_perturb < 2:
            raise ValueError("n_perturb must be an int >= 2 (the std of one loss is undefined)")
        if perturbation not in KINDS:
            raise ValueError(f"unknown perturbation {perturbation!r}; valid: {', '.join(KINDS)}")
        defaults = dict(lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, seed)
        self.n_perturb, self.perturbation = n_perturb, perturbation
        self.batched, self.std_floor = bool(batched), float(std_floor)
        self.last_sigma = float("nan")
        self.last_losses: list[float] = []
        self.last_coefs: list[float] = []
        self.last_seeds: list[int] = []
        self.skipped_steps = 0

    def _perturbed_losses_batched(self, closure, seeds: list[int]) -> list[float]:
        batched = getattr(closure, "batched", None)
        if batched is None:
            raise TypeError("batched=True needs a closure with a .batched method (make_closure)")
        if len(self.param_groups) != 1:
            raise ValueError("batched=True supports a single parameter group")
        params = self.trainable()
        eps = self.param_groups[0]["eps"]
        offset = self._group_offset(self.param_groups[0])
        perturbations = stacked_perturbations(
            params, [s + offset for s in seeds], self.perturbation, eps
        )
        losses = batched(params, perturbations)
        if losses.numel() != len(seeds):
            raise ValueError("the batched closure must return one loss per perturbation")
        self.forward_passes += len(seeds)
        return [float(v) for v in losses.detach().reshape(-1)]

    @torch.no_grad()
    def step(self, closure: Callable) -> float:
        """One FZOO step (N + 1 forward passes); returns the loss at the current weights."""
        if closure is None:
            raise ValueError("FZOO needs a closure that returns the mini-batch loss")
        l0 = self._evaluate(closure)
        seeds = [self._new_seed() for _ in range(self.n_perturb)]
        if self.batched:
            losses = self._perturbed_losses_batched(closure, seeds)
        else:
            losses = []
            for seed in seeds:
                self._perturb(seed, self.perturbation, +1.0)
                losses.append(self._evaluate(closure))
                self._perturb(seed, self.perturbation, -1.0)
        values = np.asarray(losses)
        sigma = float(values.std())  # population std (divide by N)
        self.last_losses, self.last_seeds, self.last_sigma = losses, seeds, sigma
        if not (math.isfinite(sigma) and math.isfinite(l0)) or sigma < self.std_floor:
            self.skipped_steps += 1
            self.last_coefs = [0.0] * len(seeds)
            return l0
        coefs = ((values - l0) / (len(seeds) * sigma)).tolist()
        self.last_coefs = coefs
        self._apply(list(zip(seeds, coefs)), self.perturbation)
        return l0


class MeZO(ZerothOrderOptimizer):
    """Memory-efficient zeroth-order SGD (two-sided SPSA, Gaussian directions)."""

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-6,
        eps: float = 1e-3,
        n_directions: int = 1,
        weight_decay: float = 0.0,
        seed: int = 0,
    ):
        if not isinstance(n_directions, int) or n_directions < 1:
            raise ValueError("n_directions must be an int >= 1")
        super().__init__(params, dict(lr=lr, eps=eps, weight_decay=weight_decay), seed)
        self.n_directions = n_directions
        self.last_projected: list[float] = []

    @torch.no_grad()
    def step(self, closure: Callable) -> float:
        """One MeZO step (2 forward passes per direction); returns the mean of l+ and l-."""
        if closure is None:
            raise ValueError("MeZO needs a closure that returns the mini-batch loss")
        eps = self.param_groups[0]["eps"]
        updates, mids = [], []
        for _ in range(self.n_directions):
            seed = self._new_seed()
            self._perturb(seed, "gaussian", +1.0)
            l_plus = self._evaluate(closure)
            self._perturb(seed, "gaussian", -2.0)
            l_minus = self._evaluate(closure)
            self._perturb(seed, "gaussian", +1.0)
            projected = (l_plus - l_minus) / (2 * eps)
            updates.append((seed, projected / self.n_directions))
            mids.append(0.5 * (l_plus + l_minus))
        self.last_projected = [c * self.n_directions for _, c in updates]
        if all(math.isfinite(c) for _, c in updates):
            self._apply(updates, "gaussian")
        return float(np.mean(mids))


def flat_update_direction(opt: FZOO) -> torch.Tensor:
    """sum_i c_i u_i of the last FZOO step as a flat vector (tests and ablations)."""
    params = opt.trainable()
    offset = opt._group_offset(opt.param_groups[0])
    total = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype)
    for seed, coef in zip(opt.last_seeds, opt.last_coefs):
        total += coef * torch.cat(
            [u.reshape(-1) for u in directions(params, seed + offset, opt.perturbation)]
        )
    return total
