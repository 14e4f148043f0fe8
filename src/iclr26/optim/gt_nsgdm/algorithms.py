"""GT-NSGDm and its baselines as one node-level update rule with two mixing rounds.

Every algorithm is written as: a local phase producing the message of the tracking round (or
none), mixing with the neighbours, a local phase producing the message of the iterate round,
mixing again. The same functions run on all nodes at once (``local`` backend: tensors
``[..., n, d]``, mixing over padded neighbour slots) or on one node inside a Ray actor (``[1, d]``
rows, mixing over the neighbours' messages in the same order), so both backends follow one
update rule and give the same numbers.

GT-NSGDm (node i, step t; W doubly stochastic):
    v_i^t = beta v_i^{t-1} + (1 - beta) g_i(x_i^t)                      (momentum)
    y_i^t = sum_r w_ir (y_r^{t-1} + v_r^t - v_r^{t-1})                  (gradient tracking)
    x_i^{t+1} = sum_r w_ir (x_r^t - eta y_r^t / ||y_r^t||)              (normalized step + mixing)
with v^{-1} = y^{-1} = 0. Baselines: DSGD (x <- W x - eta g), GT-DSGD (tracking of g, no
normalization or momentum), D-NSGDm (normalized local momentum, no tracking), DSGD with
per-node gradient clipping (``gclip``) or coordinate clipping (``cclip``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import torch

from iclr26.optim.gt_nsgdm.graphs import check_mixing, neighbour_slots

Schedule = float | Callable[[int], float]


def _value(s, t: int):
    """A hyper-parameter at step t: a float, a callable of t, or a tensor (one value per run
    of a vectorised grid, broadcast over the leading dimensions)."""
    if isinstance(s, torch.Tensor):
        return s
    return float(s(t)) if callable(s) else float(s)


def _unit(v: torch.Tensor, eps: float) -> torch.Tensor:
    return v / (v.norm(dim=-1, keepdim=True) + eps)


class DecentralizedAlgorithm(ABC):
    """Base: holds W (validated) and the node-level phases; ``step`` runs them all locally."""

    name = "base"
    tracks = False  # whether the algorithm has a tracking round
    messages_per_step = 1

    def __init__(self, W, lr: Schedule, eps: float = 1e-12):
        self.W = check_mixing(W)
        if not callable(lr) and not bool((torch.as_tensor(lr) > 0).all()):
            raise ValueError(f"lr must be > 0, got {lr}")
        self.lr, self.eps = lr, eps
        self.n = self.W.shape[0]
        self.slots = neighbour_slots(self.W)

    # ---- node-level phases (rows of [..., m, d] tensors; m = n locally, 1 in an actor)
    def phase1(self, s: dict, g: torch.Tensor, t: int) -> torch.Tensor | None:
        s["g"] = g
        return None

    def after_mix1(self, s: dict, mixed: torch.Tensor) -> None:
        """Take the mixed tracking message (only called when ``tracks``)."""
        s["y"] = mixed

    @abstractmethod
    def phase2(self, s: dict, t: int) -> torch.Tensor:
        """The message of the iterate round."""

    def after_mix2(self, s: dict, mixed: torch.Tensor, t: int) -> None:
        s["x"] = mixed

    # ---- local backend
    def mix(self, m: torch.Tensor) -> torch.Tensor:
        """sum_r w_ir m_r for every node, over neighbour slots in ascending order."""
        idx, wt = self.slots
        out = torch.zeros_like(m)
        for k in range(idx.shape[1]):
            out = out + wt[:, k, None].to(m.dtype) * m[..., idx[:, k], :]
        return out

    def init(self, x0: torch.Tensor) -> dict:
        """State for iterates starting at ``x0`` ([d] shared by all nodes, or [..., n, d])."""
        x0 = torch.as_tensor(x0)
        if x0.dim() == 1:
            x0 = x0.expand(self.n, -1)
        if x0.shape[-2] != self.n:
            raise ValueError(f"x0 must be [d] or [..., {self.n}, d], got {tuple(x0.shape)}")
        z = torch.zeros_like(x0)
        return {
            "x": x0.clone(),
            "v": z.clone(),
            "y": z.clone(),
            "g": z.clone(),
            "g_prev": z.clone(),
            "t": 0,
        }

    def step(self, s: dict, grads: torch.Tensor) -> dict:
        """One synchronous round given the local stochastic gradients at ``s["x"]``."""
        if grads.shape != s["x"].shape:
            raise ValueError(f"grads must have shape {tuple(s['x'].shape)}")
        t = s["t"]
        msg = self.phase1(s, grads, t)
        if msg is not None:
            self.after_mix1(s, self.mix(msg))
        self.after_mix2(s, self.mix(self.phase2(s, t)), t)
        s["t"] = t + 1
        return s


class GTNSGDm(DecentralizedAlgorithm):
    name, tracks, messages_per_step = "gt_nsgdm", True, 2

    def __init__(self, W, lr: Schedule = 1e-2, beta: Schedule = 0.9, eps: float = 1e-12):
        super().__init__(W, lr, eps)
        b = torch.as_tensor(0.5 if callable(beta) else beta)
        if not bool(((b >= 0) & (b < 1)).all()):
            raise ValueError("beta must be in [0, 1)")
        self.beta = beta

    def phase1(self, s, g, t):
        b = _value(self.beta, t)
        v_prev = s["v"]
        s["v"] = b * v_prev + (1 - b) * g
        return s["y"] + s["v"] - v_prev

    def after_mix1(self, s, mixed):
        s["y"] = mixed

    def phase2(self, s, t):
        return s["x"] - _value(self.lr, t) * _unit(s["y"], self.eps)


class DSGD(DecentralizedAlgorithm):
    name = "dsgd"

    def phase2(self, s, t):
        return s["x"]

    def after_mix2(self, s, mixed, t):
        s["x"] = mixed - _value(self.lr, t) * s["g"]


class GTDSGD(DecentralizedAlgorithm):
    name, tracks, messages_per_step = "gt_dsgd", True, 2

    def phase1(self, s, g, t):
        msg = s["y"] + g - s["g_prev"]
        s["g_prev"] = g
        return msg

    def after_mix1(self, s, mixed):
        s["y"] = mixed

    def phase2(self, s, t):
        return s["x"] - _value(self.lr, t) * s["y"]


class DNSGDm(GTNSGDm):
    """Per-node normalized momentum without tracking (the paper's failure case)."""

    name, tracks, messages_per_step = "d_nsgdm", False, 1

    def phase1(self, s, g, t):
        b = _value(self.beta, t)
        s["v"] = b * s["v"] + (1 - b) * g
        return None

    def phase2(self, s, t):
        return s["x"] - _value(self.lr, t) * _unit(s["v"], self.eps)


class DSGDClip(DSGD):
    """DSGD on clipped local gradients: ``gclip`` (norm <= tau) or ``cclip`` (|g_k| <= tau)."""

    def __init__(
        self, W, lr: Schedule = 1e-2, tau: float = 1.0, mode: str = "gclip", eps: float = 1e-12
    ):
        super().__init__(W, lr, eps)
        if tau <= 0 or mode not in ("gclip", "cclip"):
            raise ValueError("tau must be > 0 and mode 'gclip' or 'cclip'")
        self.tau, self.mode, self.name = tau, mode, f"dsgd_{mode}"

    def phase1(self, s, g, t):
        if self.mode == "cclip":
            s["g"] = g.clamp(-self.tau, self.tau)
        else:
            s["g"] = g * torch.clamp(self.tau / (g.norm(dim=-1, keepdim=True) + self.eps), max=1.0)
        return None


ALGORITHMS = {
    "gt_nsgdm": GTNSGDm,
    "dsgd": DSGD,
    "gt_dsgd": GTDSGD,
    "d_nsgdm": DNSGDm,
    "dsgd_clip": DSGDClip,
}


def make_algorithm(name: str, W, **kwargs) -> DecentralizedAlgorithm:
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name](W, **kwargs)


def theory_schedule(
    T: int, p: float | None = None, c_eta: float = 1.0, c_beta: float = 1.0
) -> tuple[float, float]:
    """Constant (eta, beta) for horizon T: with known tail index p,
    eta = c_eta T^{-(2p-1)/(3p-2)}, 1 - beta = c_beta T^{-p/(3p-2)}; with p unknown,
    eta = c_eta T^{-3/4}, 1 - beta = c_beta T^{-1/2} (1 - beta capped at 1)."""
    if T < 1:
        raise ValueError("T must be >= 1")
    if p is None:
        eta, one_minus = c_eta * T**-0.75, c_beta * T**-0.5
    else:
        if not 1 < p <= 2:
            raise ValueError("the tail index p must be in (1, 2]")
        eta = c_eta * T ** (-(2 * p - 1) / (3 * p - 2))
        one_minus = c_beta * T ** (-p / (3 * p - 2))
    return eta, 1.0 - min(1.0, one_minus)
