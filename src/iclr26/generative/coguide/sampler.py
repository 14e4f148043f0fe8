"""Guided DDIM samplers: CoGuide and its baselines.

Every sampler runs the same deterministic DDIM chain of a :class:`FloorplanPrior`. At DDIM step
k the guided ones take the Tweedie estimate x0_hat(x_t), a guidance loss l(x_t) on it, its
gradient by autograd through the epsilon-model (the DPS chain rule) and move the DDIM proposal
x'_{t-1} against it: CoGuide (Algorithm 1 of the paper) with Adam moments that persist over the
steps and a step size eta_k that is constant, then cosine-annealed to rho * eta0, then gated to
zero for the last steps. Its loss is the contrastive surrogate (1 / (2 tau)) ||f(x0_hat) -
g(y)||^2 plus the intersection penalty lambda_int ||y * wall(x0_hat)||_1, which every guided
baseline also gets. Baselines: unguided DDIM; guidance through a differentiable planner (soft
value iteration) with Adam or with the DPS normalised-gradient step; and inpainting of the
walked cells as free space (RePaint-style projection).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch.nn import functional as F

from iclr26 import validation as V
from iclr26.generative.coguide.floorplan import (
    Trajectory,
    intersection_penalty,
    rasterize,
    wall,
)
from iclr26.generative.coguide.likelihood import ContrastiveLikelihood
from iclr26.generative.coguide.prior import FloorplanPrior

_SHIFTS8 = ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def step_size_schedule(
    steps: int,
    eta0: float = 0.05,
    rho: float = 0.1,
    start: float = 0.2,
    end: float = 0.7,
    stop: float = 0.9,
) -> np.ndarray:
    """eta_k for k = 0..steps-1: eta0 for k <= k_s, cosine from eta0 to eta_min = rho * eta0
    for k_s < k < k_e, rho * eta0 for k >= k_e, and 0 from k_stop on (the hard gate);
    k_s, k_e, k_stop are ``start``, ``end``, ``stop`` times ``steps``, rounded."""
    steps = V.check_int(steps, "steps", low=1)
    eta0 = V.check_scalar(eta0, "eta0", low=0.0)
    rho = V.check_probability(rho, "rho")
    start = V.check_probability(start, "start")
    end = V.check_probability(end, "end")
    stop = V.check_probability(stop, "stop")
    if not start <= end:
        raise ValueError(f"end must be >= start, got start={start}, end={end}")
    k_s, k_e, k_stop = (int(round(f * steps)) for f in (start, end, stop))
    eta_min = rho * eta0
    k = np.arange(steps, dtype=np.float64)
    out = np.full(steps, eta_min)
    out[k <= k_s] = eta0
    mid = (k > k_s) & (k < k_e)
    out[mid] = eta_min + 0.5 * (eta0 - eta_min) * (1 + np.cos(np.pi * (k[mid] - k_s) / (k_e - k_s)))
    out[k >= k_stop] = 0.0
    return out


def _shift(v: torch.Tensor, dr: int, dc: int, fill: float) -> torch.Tensor:
    """out[..., r, c] = v[..., r + dr, c + dc] (``fill`` outside)."""
    p = F.pad(v, (1, 1, 1, 1), value=fill)
    s = v.shape[-1]
    return p[..., 1 + dr : 1 + dr + s, 1 + dc : 1 + dc + s]


def _check_cost_goals(cost, cells, name):
    V.check_tensor(cost, "cost", ndim=3, floating=True, low=0.0)
    if cost.shape[1] != cost.shape[2]:
        raise ValueError(f"cost must be (b, s, s) square maps, got {tuple(cost.shape)}")
    V.check_tensor(
        cells, name, shape=(cost.shape[0], 2), integer=True, low=0, high=cost.shape[1] - 1
    )


def soft_value_iteration(
    cost: torch.Tensor, goals: torch.Tensor, temperature: float = 0.1, iters: int = 60
) -> torch.Tensor:
    """Soft-min Bellman values V(s) = softmin_tau over the 8 neighbours n of c(n) + V(n), with
    V(goal) = 0, for cost maps ``cost`` (b, s, s) and goal cells ``goals`` (b, 2). As the
    temperature goes to 0 this is the shortest-path cost (BFS distance for unit costs)."""
    temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
    iters = V.check_int(iters, "iters", low=1)
    _check_cost_goals(cost, goals, "goals")
    b, s, _ = cost.shape
    big = 1e4
    goal = torch.zeros(b, s, s, dtype=torch.bool, device=cost.device)
    goal[torch.arange(b), goals[:, 0], goals[:, 1]] = True
    value = torch.full((b, s, s), big, dtype=cost.dtype, device=cost.device).masked_fill(goal, 0.0)
    for _ in range(iters):
        q = torch.stack([_shift(cost + value, dr, dc, big) for dr, dc in _SHIFTS8])
        value = (-temperature * torch.logsumexp(-q / temperature, dim=0)).masked_fill(goal, 0.0)
    return value


def soft_visitation(
    cost: torch.Tensor,
    starts: torch.Tensor,
    goals: torch.Tensor,
    temperature: float = 0.1,
    iters: int = 60,
) -> torch.Tensor:
    """Expected visitation (b, s, s), clipped to [0, 1], of the soft-optimal policy
    pi(n | s) ~ exp(-(c(n) + V(n)) / tau) from ``starts`` to ``goals``, propagated ``iters``
    steps with the goal absorbing: the differentiable planner of the B1 baseline."""
    _check_cost_goals(cost, starts, "starts")
    value = soft_value_iteration(cost, goals, temperature, iters)
    b, s, _ = cost.shape
    big = 1e4
    q = torch.stack([_shift(cost + value, dr, dc, big) for dr, dc in _SHIFTS8])
    policy = torch.softmax(-q / temperature, dim=0)  # (8, b, s, s): move from s along shift
    mass = torch.zeros(b, s, s, dtype=cost.dtype, device=cost.device)
    mass[torch.arange(b), starts[:, 0], starts[:, 1]] = 1.0
    goal = torch.zeros(b, s, s, dtype=torch.bool, device=cost.device)
    goal[torch.arange(b), goals[:, 0], goals[:, 1]] = True
    visit = mass.clone()
    for _ in range(iters):
        moving = mass.masked_fill(goal, 0.0)
        mass = sum(_shift(policy[i] * moving, -dr, -dc, 0.0) for i, (dr, dc) in enumerate(_SHIFTS8))
        visit = visit + mass
    return visit.clamp(0.0, 1.0)


def _as_trajectories(ys, size: int) -> list[Trajectory]:
    if isinstance(ys, Trajectory):
        ys = [ys]
    if not isinstance(ys, Sequence) or len(ys) == 0:
        raise ValueError("ys must be a Trajectory or a non-empty list of them")
    for y in ys:
        if not isinstance(y, Trajectory):
            raise TypeError(f"ys must hold Trajectory objects, got {type(y).__name__}")
        rasterize(y, size)  # a walk that leaves the plan is an error
    return list(ys)


class DDIMSampler:
    """Unguided deterministic DDIM from a :class:`FloorplanPrior` (the B0 baseline, and the
    chain every guided sampler follows). ``cfg`` > 0 with a trajectory-conditioned prior
    applies classifier-free guidance eps_u + (1 + cfg)(eps_c - eps_u) (``cfg=0``: plain
    conditional) ; ``cfg=None`` ignores the condition."""

    def __init__(self, prior: FloorplanPrior, steps: int = 25, cfg: float | None = None):
        if not isinstance(prior, FloorplanPrior):
            raise TypeError(f"prior must be a FloorplanPrior, got {type(prior).__name__}")
        if prior.size is None:
            raise ValueError("prior must be fitted before sampling")
        self.prior = prior
        self.steps = V.check_int(steps, "steps", low=1, high=prior.T)
        self.cfg = V.check_scalar(cfg, "cfg", low=0.0, allow_none=True)
        if self.cfg is not None and prior.cond is None:
            raise ValueError("cfg needs a prior trained with cond='trajectory'")
        self.counts = {"forward": 0, "backward": 0, "planner_iters": 0}

    def eta(self) -> np.ndarray:
        """The guidance step size per DDIM step: zero everywhere for the unguided chain."""
        return np.zeros(self.steps)

    def guidance_loss(self, x0: torch.Tensor, state: dict) -> torch.Tensor:
        """Per-sample guidance loss on the Tweedie estimate: none for the unguided chain (its
        step size is zero, so this is never evaluated; guided samplers override it)."""
        return x0.new_zeros(len(x0))

    def prepare(self, ys: list[Trajectory], n: int) -> dict:
        s = self.prior.size
        masks = np.stack([rasterize(y, s) for y in ys for _ in range(n)])
        dev = self.prior.alpha_bar.device
        return {
            "masks": torch.from_numpy(masks)[:, None].to(dev),
            "ys": [y for y in ys for _ in range(n)],
        }

    def update(self, x_prev, grad, eta, state):
        return x_prev - eta * grad

    def project(self, x_prev, t_prev, state, noise_gen):
        return x_prev

    def _eps(self, x, t, state):
        tt = torch.full((len(x),), t, dtype=torch.long, device=x.device)
        self.counts["forward"] += 1
        if self.cfg is None:
            return self.prior(x, tt)
        self.counts["forward"] += 1
        eps_c = self.prior(x, tt, state["masks"])
        eps_u = self.prior(x, tt, torch.zeros_like(state["masks"]))
        return eps_u + (1 + self.cfg) * (eps_c - eps_u)

    def sample(self, ys, n: int = 1, seed: int = 0) -> np.ndarray:
        """``n`` plans per trajectory in ``ys`` (a :class:`Trajectory` or a list), as an
        array (len(ys) * n, s, s) in {-1, +1} (thresholded at 0)."""
        return np.where(self.sample_continuous(ys, n, seed) >= 0, 1.0, -1.0).astype(np.float32)

    def sample_continuous(self, ys, n: int = 1, seed: int = 0) -> np.ndarray:
        """The final DDIM iterate before thresholding."""
        n = V.check_int(n, "n", low=1)
        seed = V.check_int(seed, "seed", low=0)
        s = self.prior.size
        ys = _as_trajectories(ys, s)
        state = self.prepare(ys, n)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(len(state["ys"]), 1, s, s, generator=g).to(self.prior.alpha_bar.device)
        ts = self.prior.timesteps(self.steps)
        etas = self.eta()
        for k in range(self.steps):
            t, t_prev = ts[k], ts[k + 1]
            if etas[k] > 0:
                x_in = x.detach().requires_grad_(True)
                eps = self._eps(x_in, t, state)
                x0 = self.prior.tweedie(x_in, t, eps)
                loss = self.guidance_loss(x0, state).sum()
                (grad,) = torch.autograd.grad(loss, x_in)
                self.counts["backward"] += 1
                if not torch.isfinite(grad).all():
                    raise FloatingPointError(f"guidance gradient is not finite at step {k}")
                with torch.no_grad():
                    x_prev = self.prior.ddim_step(x0, eps, t_prev)
                    x = self.update(x_prev, grad, float(etas[k]), state)
            else:
                with torch.no_grad():
                    eps = self._eps(x, t, state)
                    x0 = self.prior.tweedie(x, t, eps)
                    x = self.prior.ddim_step(x0, eps, t_prev)
            with torch.no_grad():
                x = self.project(x, t_prev, state, g)
        return x[:, 0].cpu().numpy()


class _GuidedDDIM(DDIMSampler, abc.ABC):
    """Shared step-size schedule, optimiser and intersection penalty of the guided samplers; a
    subclass gives the guidance loss."""

    def __init__(
        self,
        prior: FloorplanPrior,
        steps: int = 25,
        scale: float = 1.0,
        eta0: float = 0.05,
        rho: float = 0.1,
        t_start: float = 0.2,
        t_end: float = 0.7,
        t_stop: float = 0.9,
        optimizer: str = "adam",
        betas: tuple[float, float] = (0.9, 0.999),
        eps_adam: float = 1e-8,
        lambda_int: float = 6e-4,
        cfg: float | None = None,
    ):
        super().__init__(prior, steps, cfg)
        self.scale = V.check_scalar(scale, "scale", low=0.0)
        self.optimizer = V.check_choice(optimizer, "optimizer", ("adam", "gd", "dps"))
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair, got {betas!r}")
        self.betas = tuple(
            V.check_scalar(b, "betas", low=0.0, high=1.0, high_open=True) for b in betas
        )
        self.eps_adam = V.check_scalar(eps_adam, "eps_adam", low=0.0, low_open=True)
        self.lambda_int = V.check_scalar(lambda_int, "lambda_int", low=0.0)
        self._etas = step_size_schedule(self.steps, eta0 * self.scale, rho, t_start, t_end, t_stop)

    def eta(self) -> np.ndarray:
        return self._etas

    @abc.abstractmethod
    def guidance_loss(self, x0: torch.Tensor, state: dict) -> torch.Tensor:
        """Per-sample guidance loss l(x0_hat) whose gradient through the epsilon-model moves
        the DDIM proposal (shape ``(len(x0),)``)."""

    def prepare(self, ys, n):
        state = super().prepare(ys, n)
        state.update(m=None, v=None, k=0)
        return state

    def penalty(self, x0, state):
        return self.lambda_int * intersection_penalty(x0[:, 0], state["masks"][:, 0])

    def update(self, x_prev, grad, eta, state):
        if self.optimizer == "gd":
            return x_prev - eta * grad
        if self.optimizer == "dps":  # a per-sample RMS-normalised gradient step
            rms = grad.flatten(1).norm(dim=1).clamp(min=1e-12) / math.sqrt(grad[0].numel())
            return x_prev - eta * grad / rms[:, None, None, None]
        b1, b2 = self.betas
        if state["m"] is None:
            state["m"], state["v"] = torch.zeros_like(grad), torch.zeros_like(grad)
        state["k"] += 1
        state["m"] = b1 * state["m"] + (1 - b1) * grad
        state["v"] = b2 * state["v"] + (1 - b2) * grad**2
        m_hat = state["m"] / (1 - b1 ** state["k"])
        v_hat = state["v"] / (1 - b2 ** state["k"])
        return x_prev - eta * m_hat / (v_hat.sqrt() + self.eps_adam)


class CoGuideSampler(_GuidedDDIM):
    """CoGuide: DDIM guided by the contrastive surrogate of a fitted
    :class:`ContrastiveLikelihood` plus the intersection penalty, with Adam (``optimizer``
    "adam"; "gd" for the paper's ablation) under the annealed, gated step size
    (``scale`` multiplies ``eta0``; ``scale=0`` is the unguided sampler)."""

    def __init__(self, prior: FloorplanPrior, likelihood: ContrastiveLikelihood, **kwargs):
        super().__init__(prior, **kwargs)
        if not isinstance(likelihood, ContrastiveLikelihood):
            raise TypeError(
                f"likelihood must be a ContrastiveLikelihood, got {type(likelihood).__name__}"
            )
        self.likelihood = likelihood

    def prepare(self, ys, n):
        state = super().prepare(ys, n)
        with torch.no_grad():
            state["g_y"] = self.likelihood.embed_trajectory(state["masks"])
        return state

    def guidance_loss(self, x0, state):
        return self.likelihood.guidance_loss(x0, state["g_y"]) + self.penalty(x0, state)


class PlannerGuidedSampler(_GuidedDDIM):
    """Guidance through a differentiable planner (the B1 baseline): soft value iteration on the
    cost exp(``wall_cost`` * wall(x0_hat)) between consecutive observed waypoints gives an
    expected visitation map; the loss is its binary cross-entropy against the walked mask, plus
    the intersection penalty. ``optimizer="dps"`` takes the DPS normalised step, "adam" the
    CoGuide optimiser."""

    def __init__(
        self,
        prior: FloorplanPrior,
        temperature: float = 0.1,
        iters: int = 60,
        wall_cost: float = 3.0,
        optimizer: str = "dps",
        **kwargs,
    ):
        super().__init__(prior, optimizer=optimizer, **kwargs)
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)
        self.iters = V.check_int(iters, "iters", low=1)
        self.wall_cost = V.check_scalar(wall_cost, "wall_cost", low=0.0)

    def prepare(self, ys, n):
        state = super().prepare(ys, n)
        owner, starts, goals = [], [], []
        for i, y in enumerate(state["ys"]):
            wp = torch.as_tensor(y.waypoints)
            owner.append(torch.full((len(wp) - 1,), i))
            starts.append(wp[:-1])
            goals.append(wp[1:])
        state["seg_owner"] = torch.cat(owner)
        dev = state["masks"].device
        state["seg_owner"] = state["seg_owner"].to(dev)
        state["starts"], state["goals"] = torch.cat(starts).to(dev), torch.cat(goals).to(dev)
        return state

    def visitation(self, x0: torch.Tensor, state: dict) -> torch.Tensor:
        cost = torch.exp(self.wall_cost * wall(x0[:, 0]).clamp(0.0, 1.0))
        seg_cost = cost[state["seg_owner"]]
        visit = soft_visitation(
            seg_cost, state["starts"], state["goals"], self.temperature, self.iters
        )
        self.counts["planner_iters"] += 2 * self.iters * len(seg_cost)
        log_miss = torch.zeros_like(cost).index_add_(
            0, state["seg_owner"], torch.log1p(-visit.clamp(max=1 - 1e-6))
        )
        return 1 - log_miss.exp()  # visited by at least one segment

    def guidance_loss(self, x0, state):
        v = self.visitation(x0, state).clamp(1e-4, 1 - 1e-4)
        bce = F.binary_cross_entropy(v, state["masks"][:, 0], reduction="none").sum((-2, -1))
        return bce + self.penalty(x0, state)


class InpaintingSampler(DDIMSampler):
    """Measurement as inpainting (the B2 baseline): after every DDIM step the walked cells are
    replaced by the forward-noised value of "free" (-1) at the new time, RePaint-style; only
    "walked cells are not walls" is used."""

    def project(self, x_prev, t_prev, state, noise_gen):
        ab = self.prior.alpha_bar[t_prev]
        known = -ab.sqrt() + (1 - ab).sqrt() * torch.randn(x_prev.shape, generator=noise_gen).to(
            x_prev.device
        )
        mask = state["masks"]
        return mask * known + (1 - mask) * x_prev
