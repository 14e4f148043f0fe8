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

Mixing in the local backend (``mixing=``): ``"dense"`` is one ``W @ X`` product (fastest for
the small and medium networks of the claims), ``"sparse"`` a CSR product over the edges (large
sparse graphs), ``"ordered"`` sums each node's neighbour messages one by one in ascending order,
exactly as a Ray actor does, so that the two backends agree bit for bit; ``"auto"`` (default)
takes the dense product for a dense graph or a small product (n^2 x columns < 2e6
multiply-adds, where a call's overhead dominates) and the sparse one otherwise. All give the
same update up to rounding.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable

import torch

from iclr26 import validation as V
from iclr26.optim.gt_nsgdm.graphs import check_mixing, neighbour_slots

Schedule = float | Callable[[int], float]
MIXING = ("auto", "dense", "sparse", "ordered")
DENSE_MADDS = 2_000_000  # below this a dense W @ X beats a sparse product on CPU (measured)


def _check_schedule(value, name: str, *, low: float, high: float | None = None, **kw):
    """A hyper-parameter given as a number, a tensor of per-run values or a callable of t;
    numbers and tensors are checked now (finite, in range), callables at every step."""
    if callable(value) and not isinstance(value, torch.Tensor):
        return value
    if isinstance(value, torch.Tensor):
        V.check_tensor(value, name, floating=True)
        bad_low = (value <= low) if kw.get("low_open") else (value < low)
        bad_high = (
            ((value >= high) if kw.get("high_open") else (value > high))
            if high is not None
            else torch.zeros_like(value, dtype=torch.bool)
        )
        if bool((bad_low | bad_high).any()):
            lo = "(" if kw.get("low_open") else "["
            hi = ")" if kw.get("high_open") else "]"
            raise ValueError(f"{name} must lie in {lo}{low}, {high}{hi}, got {value.flatten()}")
        return value
    return V.check_scalar(value, name, low=low, high=high, **kw)


def _value(s, t: int):
    """A hyper-parameter at step t: a float, a callable of t, or a tensor (one value per run
    of a vectorised grid, broadcast over the leading dimensions)."""
    if isinstance(s, torch.Tensor):
        return s
    return float(s(t)) if callable(s) else float(s)


def _norm_eps(v: torch.Tensor, eps: float) -> torch.Tensor:
    """||v_i|| + eps for every row (kept as a [..., n, 1] column)."""
    return torch.linalg.vector_norm(v, dim=-1, keepdim=True).add_(eps)


def _unit(v: torch.Tensor, eps: float) -> torch.Tensor:
    return v / _norm_eps(v, eps)


def _step_along(x: torch.Tensor, direction: torch.Tensor, lr, denom=None) -> torch.Tensor:
    """x - lr * direction / denom (denom None: 1) in one fused tensor operation."""
    if isinstance(lr, torch.Tensor):  # one lr per run of a vectorised grid
        if denom is None:
            return torch.addcmul(x, direction, -lr)
        return torch.addcdiv(x, direction, denom / (-lr))
    if denom is None:
        return torch.add(x, direction, alpha=-lr)
    return torch.addcdiv(x, direction, denom, value=-lr)


class DecentralizedAlgorithm(ABC):
    """Base: holds W (validated) and the node-level phases; ``step`` runs them all locally."""

    name = "base"
    tracks = False  # whether the algorithm has a tracking round
    messages_per_step = 1

    def __init__(self, W, lr: Schedule, eps: float = 1e-12, mixing: str = "auto"):
        self.W = check_mixing(W)
        self.lr = _check_schedule(lr, "lr", low=0.0, low_open=True)
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True)
        V.check_choice(mixing, "mixing", MIXING)
        self.n = self.W.shape[0]
        self.slots = neighbour_slots(self.W)
        self.mixing_mode = mixing
        self._dense_graph = int((self.W > 0).sum()) > self.n * self.n // 4
        self._cache: dict = {}

    def resolve_mixing(self, columns: int) -> str:
        """The product ``mix`` uses for messages with ``columns`` entries per node."""
        if self.mixing_mode != "auto":
            return self.mixing_mode
        small = self.n * self.n * columns < DENSE_MADDS
        return "dense" if self._dense_graph or small else "sparse"

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
    def _matrix(self, dtype, device, kind: str):
        """W in the messages' dtype and device, in the form ``kind`` uses (cached)."""
        key = (kind, dtype, device)
        w = self._cache.get(key)
        if w is None:
            w = self.W.to(dtype=dtype, device=device)
            if kind == "sparse":
                with warnings.catch_warnings():  # "sparse CSR support is in beta"
                    warnings.simplefilter("ignore", UserWarning)
                    w = w.to_sparse_csr()
            elif kind == "ordered":
                idx, wt = self.slots
                w = (idx.to(device), wt.to(dtype=dtype, device=device))
            self._cache[key] = w
        return w

    def mix(self, m: torch.Tensor) -> torch.Tensor:
        """sum_r w_ir m_r for every node (rows of the node axis -2)."""
        mode = self.mixing_mode
        if mode == "auto":
            mode = self.resolve_mixing(m.numel() // max(m.shape[-2], 1))
        w = self._matrix(m.dtype, m.device, mode)
        if mode == "dense":
            if m.dim() == 2:
                return torch.mm(w, m)
            # leading grid axes: one batched product with W broadcast (expanded view cached)
            flat = m if m.dim() == 3 else m.reshape(-1, *m.shape[-2:])
            key = ("expanded", m.dtype, m.device, flat.shape[0])
            wb = self._cache.get(key)
            if wb is None:
                wb = self._cache[key] = w.expand(flat.shape[0], *w.shape)
            out = torch.bmm(wb, flat)
            return out if m.dim() == 3 else out.reshape(m.shape)
        if mode == "sparse":  # leading grid axes folded into the columns of one product
            lead, (n, d) = m.shape[:-2], m.shape[-2:]
            flat = m.movedim(-2, 0).reshape(n, -1)
            return (w @ flat).reshape(n, *lead, d).movedim(0, -2)
        idx, wt = w  # ordered: neighbour slots in ascending order, as in a Ray actor
        out = torch.zeros_like(m)
        for k in range(idx.shape[1]):
            out = out + wt[:, k, None] * m[..., idx[:, k], :]
        return out

    def init(self, x0: torch.Tensor) -> dict:
        """State for iterates starting at ``x0`` ([d] shared by all nodes, or [..., n, d])."""
        x0 = V.check_tensor(x0, "x0", floating=True, min_ndim=1)
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
        """One synchronous round given the local stochastic gradients at ``s["x"]``
        (``grads`` is not checked for NaN here, per step; use ``check_grads`` or
        ``run_local`` for that)."""
        if not isinstance(grads, torch.Tensor) or grads.shape != s["x"].shape:
            raise ValueError(f"grads must be a tensor of shape {tuple(s['x'].shape)}")
        t = s["t"]
        msg = self.phase1(s, grads, t)
        if msg is not None:
            self.after_mix1(s, self.mix(msg))
        self.after_mix2(s, self.mix(self.phase2(s, t)), t)
        s["t"] = t + 1
        return s


class GTNSGDm(DecentralizedAlgorithm):
    name, tracks, messages_per_step = "gt_nsgdm", True, 2

    def __init__(
        self,
        W,
        lr: Schedule = 1e-2,
        beta: Schedule = 0.9,
        eps: float = 1e-12,
        mixing: str = "auto",
    ):
        super().__init__(W, lr, eps, mixing)
        self.beta = _check_schedule(beta, "beta", low=0.0, high=1.0, high_open=True)

    def phase1(self, s, g, t):
        v_prev = s["v"]
        s["v"] = torch.lerp(v_prev, g, 1 - _value(self.beta, t))  # b v + (1 - b) g
        return (s["v"] - v_prev).add_(s["y"])

    def after_mix1(self, s, mixed):
        s["y"] = mixed

    def phase2(self, s, t):
        y = s["y"]
        return _step_along(s["x"], y, _value(self.lr, t), _norm_eps(y, self.eps))

    def step(self, s: dict, grads: torch.Tensor) -> dict:
        """One round: the same operations as phase1 / mix / phase2 / mix, inlined (the hot
        path of the local backend)."""
        x = s["x"]
        if not isinstance(grads, torch.Tensor) or grads.shape != x.shape:
            raise ValueError(f"grads must be a tensor of shape {tuple(x.shape)}")
        t = s["t"]
        v_prev = s["v"]
        v = torch.lerp(v_prev, grads, 1 - _value(self.beta, t))
        y = self.mix((v - v_prev).add_(s["y"]))
        s["v"], s["y"] = v, y
        s["x"] = self.mix(_step_along(x, y, _value(self.lr, t), _norm_eps(y, self.eps)))
        s["t"] = t + 1
        return s


class DSGD(DecentralizedAlgorithm):
    name = "dsgd"

    def phase2(self, s, t):
        return s["x"]

    def after_mix2(self, s, mixed, t):
        s["x"] = _step_along(mixed, s["g"], _value(self.lr, t))


class GTDSGD(DecentralizedAlgorithm):
    name, tracks, messages_per_step = "gt_dsgd", True, 2

    def phase1(self, s, g, t):
        msg = (g - s["g_prev"]).add_(s["y"])
        s["g_prev"] = g
        return msg

    def after_mix1(self, s, mixed):
        s["y"] = mixed

    def phase2(self, s, t):
        return _step_along(s["x"], s["y"], _value(self.lr, t))


class DNSGDm(GTNSGDm):
    """Per-node normalized momentum without tracking (the paper's failure case)."""

    name, tracks, messages_per_step = "d_nsgdm", False, 1
    step = DecentralizedAlgorithm.step  # no tracking round: the generic phases

    def phase1(self, s, g, t):
        s["v"] = torch.lerp(s["v"], g, 1 - _value(self.beta, t))
        return None

    def phase2(self, s, t):
        v = s["v"]
        return _step_along(s["x"], v, _value(self.lr, t), _norm_eps(v, self.eps))


class DSGDClip(DSGD):
    """DSGD on clipped local gradients: ``gclip`` (norm <= tau) or ``cclip`` (|g_k| <= tau)."""

    def __init__(
        self,
        W,
        lr: Schedule = 1e-2,
        tau: float = 1.0,
        mode: str = "gclip",
        eps: float = 1e-12,
        mixing: str = "auto",
    ):
        super().__init__(W, lr, eps, mixing)
        tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        V.check_choice(mode, "mode", ("gclip", "cclip"))
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
    V.check_choice(name, "name", tuple(ALGORITHMS))
    return ALGORITHMS[name](W, **kwargs)


def theory_schedule(
    T: int, p: float | None = None, c_eta: float = 1.0, c_beta: float = 1.0
) -> tuple[float, float]:
    """Constant (eta, beta) for horizon T: with known tail index p,
    eta = c_eta T^{-(2p-1)/(3p-2)}, 1 - beta = c_beta T^{-p/(3p-2)}; with p unknown,
    eta = c_eta T^{-3/4}, 1 - beta = c_beta T^{-1/2} (1 - beta capped at 1)."""
    T = V.check_int(T, "T", low=1)
    c_eta = V.check_scalar(c_eta, "c_eta", low=0.0, low_open=True)
    c_beta = V.check_scalar(c_beta, "c_beta", low=0.0, low_open=True)
    if p is not None:
        p = V.check_scalar(p, "p", low=1.0, high=2.0, low_open=True)
    if p is None:
        eta, one_minus = c_eta * T**-0.75, c_beta * T**-0.5
    else:
        eta = c_eta * T ** (-(2 * p - 1) / (3 * p - 2))
        one_minus = c_beta * T ** (-p / (3 * p - 2))
    return eta, 1.0 - min(1.0, one_minus)
