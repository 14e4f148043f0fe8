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

Several parameter groups each perturb by their own ``eps`` and step with their own ``lr`` and
``weight_decay`` (a decay / no-decay split works as with any torch optimizer); for MeZO the
projected gradient of group g is divided by that group's eps, which keeps the estimate unbiased.
``state_dict()`` holds the seed generator, the counters and the configuration, so a run resumed
from it continues bit for bit. A closure that raises leaves the weights as they were: with
``exact_restore=True`` exactly (a copy of the trainable parameters is kept during a step, and
un-perturbing copies it back), otherwise the live perturbation is undone in place (one
rounding, as after every perturbation in the official trainer, and no extra memory).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.optim.fzoo.batched import stacked_perturbations
from iclr26.optim.fzoo.perturb import KINDS, add_direction, directions

HYPER = ("lr", "eps", "weight_decay")


def _loss_value(value) -> float:
    """The float value of a closure's loss; a non-scalar is a clear error."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"the closure must return a scalar loss, got a tensor of shape {tuple(value.shape)}"
            )
        return float(value.detach())
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"the closure must return a scalar loss, got {type(value).__name__}")


def _check_hyper(values: dict, where: str = "") -> None:
    """lr > 0, eps > 0, weight_decay >= 0, all finite (NaN is never in range)."""
    suffix = f" of {where}" if where else ""
    if "lr" in values:
        V.check_scalar(values["lr"], f"lr{suffix}", low=0.0, low_open=True)
    if "eps" in values:
        V.check_scalar(values["eps"], f"eps{suffix}", low=0.0, low_open=True)
    if "weight_decay" in values:
        V.check_scalar(values["weight_decay"], f"weight_decay{suffix}", low=0.0)


class ZerothOrderOptimizer(torch.optim.Optimizer):
    """Shared bookkeeping: parameter groups, seeds, forward-pass counter, exact resume and
    the restore-on-error contract."""

    def __init__(self, params: Iterable, defaults: dict, seed: int, exact_restore: bool):
        _check_hyper(defaults)
        seed = V.check_int(seed, "seed", low=0)
        self.exact_restore = V.check_bool(exact_restore, "exact_restore")
        super().__init__(params, defaults)
        self.forward_passes = 0
        self.steps = 0
        self._seeds = np.random.default_rng(seed)
        self._live_backup: list[torch.Tensor] | None = None

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        where = f"param group {len(self.param_groups) - 1}" if len(self.param_groups) > 1 else ""
        _check_hyper({k: group[k] for k in HYPER if k in group}, where)
        for p in group["params"]:
            if not p.is_floating_point():
                raise TypeError(f"params must be floating-point tensors, got {p.dtype}")

    # ------------------------------------------------------------ groups and seeds
    def _groups(self) -> list[tuple[int, dict, list[torch.Tensor]]]:
        """(index, group, trainable tensors) for each group (``requires_grad=True``; PEFT
        freezes the rest); groups without trainable tensors are left out."""
        out = []
        for i, g in enumerate(self.param_groups):
            params = [p for p in g["params"] if p.requires_grad]
            if params:
                out.append((i, g, params))
        return out

    def trainable(self) -> list[torch.Tensor]:
        return [p for _, _, ps in self._groups() for p in ps]

    @staticmethod
    def _group_offset(index: int) -> int:
        return 7919 * index

    def _new_seed(self) -> int:
        return int(self._seeds.integers(0, 2**62))

    def _evaluate(self, closure: Callable) -> float:
        with torch.no_grad():
            value = _loss_value(closure())
        self.forward_passes += 1
        return value

    @staticmethod
    def _check_closure(closure) -> Callable:
        if closure is None:
            raise ValueError("closure is required: it must return the mini-batch loss")
        if not callable(closure):
            raise TypeError(f"closure must be callable, got {type(closure).__name__}")
        return closure

    # ------------------------------------------------------------ perturb / restore
    def _perturb(self, seed: int, kind: str, sign: float) -> None:
        """params += sign * eps_group * u(seed), group by group in a fixed order."""
        for i, group, params in self._groups():
            add_direction(params, seed + self._group_offset(i), kind, sign * group["eps"])

    def _backup(self) -> list[torch.Tensor] | None:
        return [p.detach().clone() for p in self.trainable()] if self.exact_restore else None

    @torch.no_grad()
    def _restore(self, backup: list[torch.Tensor] | None, seed: int, kind: str, sign: float):
        """Undo a live perturbation ``sign * eps * u(seed)``: exactly from the backup if one
        is kept, else in place (one rounding)."""
        if backup is not None:
            for p, b in zip(self.trainable(), backup):
                p.copy_(b)
        else:
            self._perturb(seed, kind, -sign)

    @torch.no_grad()
    def _apply(self, seeds_coefs: list[tuple[int, float]], kind: str, per_eps: bool) -> None:
        """theta <- (1 - lr wd) theta - lr * sum_i coef_i u_i per group, regenerating each u_i
        (``per_eps``: coef_i is divided by the group's eps, MeZO's projected gradient)."""
        for i, group, params in self._groups():
            lr, wd = group["lr"], group["weight_decay"]
            scale = 1.0 / group["eps"] if per_eps else 1.0
            if wd:
                for p in params:
                    p.mul_(1 - lr * wd)
            for seed, coef in seeds_coefs:
                add_direction(params, seed + self._group_offset(i), kind, -lr * coef * scale)

    def _guarded(self, body: Callable[[list], float]) -> float:
        """Run one step's ``body(live)``; if anything raises, the weights, the seed stream and
        the counters are put back as they were before the step. ``live`` is a one-element
        list holding the perturbation applied now, ``(seed, kind, sign)`` or None."""
        rng_state = self._seeds.bit_generator.state
        counters = self._counters()
        backup = self._backup()
        live: list = [None]
        self._live_backup = backup
        try:
            return body(live)
        except BaseException:
            if backup is not None:
                self._restore(backup, 0, "rademacher", 0.0)
            elif live[0] is not None:
                self._restore(None, *live[0])
            self._seeds.bit_generator.state = rng_state
            self._set_counters(counters)
            raise
        finally:
            self._live_backup = None

    # ------------------------------------------------------------ resume
    def _counters(self) -> dict:
        return {"forward_passes": self.forward_passes, "steps": self.steps}

    def _set_counters(self, counters: dict) -> None:
        self.forward_passes = int(counters["forward_passes"])
        self.steps = int(counters["steps"])

    def _config(self) -> dict:
        return {}

    def state_dict(self) -> dict:
        """Torch's optimizer state plus ``zeroth_order``: the seed generator's state, the
        counters and the configuration (a resumed run continues bit for bit)."""
        out = super().state_dict()
        out["zeroth_order"] = {
            "rng": self._seeds.bit_generator.state,
            "counters": self._counters(),
            "config": self._config(),
        }
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        extra = state_dict.pop("zeroth_order", None)
        if extra is None:
            raise ValueError("state_dict has no 'zeroth_order' entry (not saved by this class)")
        mine = self._config()
        for key, value in extra.get("config", {}).items():
            if key in mine and mine[key] != value:
                raise ValueError(
                    f"state_dict was saved with {key}={value!r}, this optimizer has "
                    f"{key}={mine[key]!r}"
                )
        super().load_state_dict(state_dict)
        self._seeds.bit_generator.state = extra["rng"]
        self._set_counters(extra["counters"])

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
        exact_restore: bool = False,
    ):
        if isinstance(n_perturb, bool) or not isinstance(n_perturb, int) or n_perturb < 2:
            raise ValueError(
                f"n_perturb must be an int >= 2 (the std of one loss is undefined), got "
                f"{n_perturb!r}"
            )
        V.check_choice(perturbation, "perturbation", KINDS)
        batched = V.check_bool(batched, "batched")
        std_floor = V.check_scalar(std_floor, "std_floor", low=0.0, allow_inf=True)
        defaults = dict(lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, seed, exact_restore)
        self.n_perturb, self.perturbation = n_perturb, perturbation
        self.batched, self.std_floor = batched, std_floor
        self.last_sigma = float("nan")
        self.last_losses: list[float] = []
        self.last_coefs: list[float] = []
        self.last_seeds: list[int] = []
        self.skipped_steps = 0

    def _config(self) -> dict:
        return {"n_perturb": self.n_perturb, "perturbation": self.perturbation}

    def _counters(self) -> dict:
        return {**super()._counters(), "skipped_steps": self.skipped_steps}

    def _set_counters(self, counters: dict) -> None:
        super()._set_counters(counters)
        self.skipped_steps = int(counters.get("skipped_steps", 0))

    def _perturbed_losses_batched(self, closure, seeds: list[int]) -> list[float]:
        batched = getattr(closure, "batched", None)
        if batched is None:
            raise TypeError("batched=True needs a closure with a .batched method (make_closure)")
        params, perturbations = [], []
        for i, group, ps in self._groups():
            offset = self._group_offset(i)
            params += ps
            perturbations += stacked_perturbations(
                ps, [s + offset for s in seeds], self.perturbation, group["eps"]
            )
        losses = batched(params, perturbations)
        if losses.numel() != len(seeds):
            raise ValueError("the batched closure must return one loss per perturbation")
        self.forward_passes += len(seeds)
        return [float(v) for v in losses.detach().reshape(-1)]

    @torch.no_grad()
    def step(self, closure: Callable) -> float:
        """One FZOO step (N + 1 forward passes); returns the loss at the current weights."""
        closure = self._check_closure(closure)
        if not self.trainable():
            raise ValueError("params has no tensor with requires_grad=True: nothing to train")
        return self._guarded(lambda live: self._step(closure, live))

    def _step(self, closure: Callable, live: list) -> float:
        l0 = self._evaluate(closure)
        seeds = [self._new_seed() for _ in range(self.n_perturb)]
        if self.batched:
            losses = self._perturbed_losses_batched(closure, seeds)
        else:
            losses = []
            for seed in seeds:
                self._perturb(seed, self.perturbation, +1.0)
                live[0] = (seed, self.perturbation, +1.0)
                losses.append(self._evaluate(closure))
                self._restore(self._live_backup, seed, self.perturbation, +1.0)
                live[0] = None
        values = np.asarray(losses)
        sigma = float(values.std())  # population std (divide by N)
        self.last_losses, self.last_seeds, self.last_sigma = losses, seeds, sigma
        self.steps += 1
        if not (math.isfinite(sigma) and math.isfinite(l0)) or sigma < self.std_floor:
            self.skipped_steps += 1
            self.last_coefs = [0.0] * len(seeds)
            return l0
        coefs = ((values - l0) / (len(seeds) * sigma)).tolist()
        self.last_coefs = coefs
        self._apply(list(zip(seeds, coefs)), self.perturbation, per_eps=False)
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
        exact_restore: bool = False,
    ):
        if isinstance(n_directions, bool) or not isinstance(n_directions, int) or n_directions < 1:
            raise ValueError(f"n_directions must be an int >= 1, got {n_directions!r}")
        defaults = dict(lr=lr, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults, seed, exact_restore)
        self.n_directions = n_directions
        self.last_projected: list[float] = []

    def _config(self) -> dict:
        return {"n_directions": self.n_directions}

    @torch.no_grad()
    def step(self, closure: Callable) -> float:
        """One MeZO step (2 forward passes per direction); returns the mean of l+ and l-."""
        closure = self._check_closure(closure)
        if not self.trainable():
            raise ValueError("params has no tensor with requires_grad=True: nothing to train")
        return self._guarded(lambda live: self._step(closure, live))

    def _step(self, closure: Callable, live: list) -> float:
        updates, mids = [], []
        backup = self._live_backup
        for _ in range(self.n_directions):
            seed = self._new_seed()
            self._perturb(seed, "gaussian", +1.0)
            live[0] = (seed, "gaussian", +1.0)
            l_plus = self._evaluate(closure)
            if backup is not None:
                self._restore(backup, seed, "gaussian", +1.0)
                self._perturb(seed, "gaussian", -1.0)
            else:
                self._perturb(seed, "gaussian", -2.0)
            live[0] = (seed, "gaussian", -1.0)
            l_minus = self._evaluate(closure)
            self._restore(backup, seed, "gaussian", -1.0)
            live[0] = None
            # (l+ - l-) / 2; each group divides by its own eps in _apply
            half_diff = 0.5 * (l_plus - l_minus)
            updates.append((seed, half_diff / self.n_directions))
            mids.append(0.5 * (l_plus + l_minus))
        eps0 = self._groups()[0][1]["eps"]
        self.last_projected = [c * self.n_directions / eps0 for _, c in updates]
        self.steps += 1
        if all(math.isfinite(c) for _, c in updates):
            self._apply(updates, "gaussian", per_eps=True)
        return float(np.mean(mids))


def flat_update_direction(opt: FZOO) -> torch.Tensor:
    """sum_i c_i u_i of the last FZOO step as a flat vector over all trainable tensors, group
    by group (tests and ablations)."""
    if not isinstance(opt, FZOO):
        raise TypeError(f"opt must be an FZOO optimizer, got {type(opt).__name__}")
    parts = []
    for i, _, params in opt._groups():
        total = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype)
        offset = opt._group_offset(i)
        for seed, coef in zip(opt.last_seeds, opt.last_coefs):
            total += coef * torch.cat(
                [u.reshape(-1) for u in directions(params, seed + offset, opt.perturbation)]
            )
        parts.append(total)
    return torch.cat(parts)
