"""The contrastive likelihood surrogate of CoGuide.

A plan encoder f_phi and a trajectory encoder g_psi map onto the unit sphere; at the InfoNCE
optimum <f(x), g(y)> / tau = log p(y|x) - log p(y) + C, so the gradient of the score is a
likelihood score. Training uses the symmetric multi-positive supervised contrastive loss
L = lam L_{f->t} + (1 - lam) L_{t->f} + lam_align L_align with a delayed alignment weight, and
optionally hard negatives: the same plan with a wall dropped across the walked path, which the
walk then crosses (incompatible by construction).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from iclr26 import validation as V
from iclr26.generative.coguide.floorplan import Trajectory, rasterize


class Encoder(nn.Module):
    """A small strided CNN onto the unit sphere in R^dim (input (n, 1, s, s))."""

    def __init__(self, dim: int = 128, width: int = 32):
        super().__init__()
        dim = V.check_int(dim, "dim", low=2)
        width = V.check_int(width, "width", low=4)
        self.net = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.SiLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1),
            nn.SiLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
            nn.SiLU(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1),
            nn.SiLU(),
            nn.AdaptiveAvgPool2d(2),
            nn.Flatten(),
            nn.Linear(8 * width, dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x), dim=-1)


def supcon_loss(scores: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Multi-positive SupCon: for each anchor row, -(1/|P|) sum_{p in P} log softmax(scores)_p,
    averaged over anchors. ``scores`` (a, c) logits, ``positives`` (a, c) boolean with at least
    one positive per row."""
    V.check_tensor(scores, "scores", ndim=2, floating=True)
    V.check_tensor(positives, "positives", ndim=2)
    if positives.shape != scores.shape:
        raise ValueError(f"positives must have shape {tuple(scores.shape)}")
    pos = positives.float()
    if (pos.sum(1) == 0).any():
        raise ValueError("positives must hold at least one positive per anchor")
    logp = scores.log_softmax(dim=1)
    return (-(logp * pos).sum(1) / pos.sum(1)).mean()


def contrastive_loss(
    f_x: torch.Tensor,
    g_y: torch.Tensor,
    owner: torch.Tensor,
    tau: float,
    lam: float,
    lam_align: float,
    f_neg: torch.Tensor | None = None,
    neg_owner: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """L = lam L_{f->t} + (1 - lam) L_{t->f} + lam_align L_align for plan embeddings ``f_x``
    (b, d), trajectory embeddings ``g_y`` (m, d) and ``owner`` (m,) the plan index of each
    trajectory. Hard-negative plan embeddings ``f_neg`` (k, d), built for trajectory
    ``neg_owner`` (k,) indices, join the candidates of L_{t->f} as negatives only."""
    V.check_tensor(f_x, "f_x", ndim=2, floating=True)
    V.check_tensor(g_y, "g_y", ndim=2, floating=True, shape=(None, f_x.shape[1]))
    V.check_tensor(owner, "owner", shape=(len(g_y),), integer=True, low=0, high=len(f_x) - 1)
    tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
    lam = V.check_probability(lam, "lam")
    lam_align = V.check_scalar(lam_align, "lam_align", low=0.0)
    if f_neg is not None:
        V.check_tensor(f_neg, "f_neg", ndim=2, floating=True, shape=(None, f_x.shape[1]))
    s = f_x @ g_y.T / tau  # (b, m)
    pos = owner[None, :] == torch.arange(len(f_x), device=f_x.device)[:, None]
    l_ft = supcon_loss(s, pos)
    s_t = s.T  # (m, b)
    pos_t = pos.T
    if f_neg is not None and len(f_neg):
        s_t = torch.cat([s_t, g_y @ f_neg.T / tau], 1)
        pos_t = torch.cat(
            [pos_t, torch.zeros(len(g_y), len(f_neg), dtype=torch.bool, device=g_y.device)], 1
        )
    l_tf = supcon_loss(s_t, pos_t)
    l_align = (g_y - f_x[owner]).pow(2).sum(1).mean()
    total = lam * l_ft + (1 - lam) * l_tf + lam_align * l_align
    return {"loss": total, "f_to_t": l_ft, "t_to_f": l_tf, "align": l_align}


def align_weight(progress: float, start: float, full: float, max_weight: float) -> float:
    """The delayed alignment weight: 0 until ``start`` of training, then a linear ramp that
    reaches ``max_weight`` at ``full``."""
    progress = V.check_probability(progress, "progress")
    start = V.check_probability(start, "start")
    full = V.check_probability(full, "full")
    max_weight = V.check_scalar(max_weight, "max_weight", low=0.0)
    if full < start:
        raise ValueError(f"full must be >= start, got start={start}, full={full}")
    if progress <= start:
        return 0.0
    if progress >= full:
        return max_weight
    return max_weight * (progress - start) / (full - start)


def hard_negative(x: np.ndarray, y: Trajectory, rng: np.random.Generator) -> np.ndarray:
    """The plan ``x`` with a 3-cell wall dropped across a random interior cell of the walk
    (perpendicular to the local direction), so the walk crosses a wall there."""
    x = V.check_array(x, "x", ndim=2, dtype=np.float32)
    if not isinstance(y, Trajectory):
        raise TypeError(f"y must be a Trajectory, got {type(y).__name__}")
    rasterize(y, x.shape[0])
    if len(y.cells) < 2:
        raise ValueError("y must have at least two cells")
    cells = y.cells
    k = int(rng.integers(1, max(2, len(cells) - 1)))
    k = min(k, len(cells) - 1)
    r, c = cells[k]
    dr, dc = cells[k] - cells[k - 1]
    neg = x.copy()
    s = x.shape[0]
    if dr == 0:  # horizontal step: a vertical bar
        bar = [(r + j, c) for j in (-1, 0, 1)]
    elif dc == 0:  # vertical step: a horizontal bar
        bar = [(r, c + j) for j in (-1, 0, 1)]
    else:  # diagonal step: block both corners it squeezes between
        bar = [(r - dr, c), (r, c - dc), (r, c)]
    for rr, cc in bar:
        if 0 <= rr < s and 0 <= cc < s:
            neg[rr, cc] = 1.0
    neg[r, c] = 1.0
    return neg


class ContrastiveLikelihood(nn.Module):
    """The surrogate log-likelihood s(x, y) = <f_phi(x), g_psi(y)> / tau.

    ``lam`` weights plan-anchored against trajectory-anchored SupCon; the alignment weight
    ramps from 0 at ``align_start`` to ``align_weight`` at ``align_full`` (fractions of
    training); ``noise`` is the std of the Gaussian perturbation of plans fed to f_phi (so it
    handles blurry Tweedie estimates); ``hard_negatives`` adds one perturbed-plan negative per
    trajectory."""

    def __init__(
        self,
        tau: float = 0.07,
        lam: float = 0.5,
        dim: int = 128,
        width: int = 32,
        align_start: float = 0.25,
        align_full: float = 0.5,
        align_weight: float = 1.0,
        noise: float = 0.5,
        hard_negatives: bool = False,
    ):
        super().__init__()
        self.tau = V.check_scalar(tau, "tau", low=0.0, low_open=True)
        self.lam = V.check_probability(lam, "lam")
        self.align_start = V.check_probability(align_start, "align_start")
        self.align_full = V.check_probability(align_full, "align_full")
        if self.align_full < self.align_start:
            raise ValueError("align_full must be >= align_start")
        self.align_weight = V.check_scalar(align_weight, "align_weight", low=0.0)
        self.noise = V.check_scalar(noise, "noise", low=0.0)
        self.hard_negatives = V.check_bool(hard_negatives, "hard_negatives")
        self.f = Encoder(dim, width)
        self.g = Encoder(dim, width)
        self.history: list[dict[str, float]] = []

    def embed_plan(self, x: torch.Tensor) -> torch.Tensor:
        """f_phi(x) for plans (n, 1, s, s) or (n, s, s)."""
        return self.f(x if x.dim() == 4 else x[:, None])

    def embed_trajectory(self, masks: torch.Tensor) -> torch.Tensor:
        """g_psi(y) for visit masks (n, 1, s, s) or (n, s, s)."""
        return self.g(masks if masks.dim() == 4 else masks[:, None])

    def score(self, x, y_masks) -> torch.Tensor:
        """s(x, y) = <f(x), g(y)> / tau for paired batches (n, s, s) each."""
        x = torch.as_tensor(V.check_array(x, "x", ndim=3, dtype=np.float32))
        m = torch.as_tensor(V.check_array(y_masks, "y_masks", shape=x.shape, dtype=np.float32))
        dev = next(self.parameters()).device
        x, m = x.to(dev), m.to(dev)
        with torch.no_grad():
            return ((self.embed_plan(x) * self.embed_trajectory(m)).sum(-1) / self.tau).cpu()

    def guidance_loss(self, x0: torch.Tensor, g_y: torch.Tensor) -> torch.Tensor:
        """(1 / (2 tau)) ||f(x0) - g(y)||^2 per sample (the negative surrogate log-likelihood
        up to a constant, for unit vectors)."""
        return (self.embed_plan(x0) - g_y).pow(2).sum(-1) / (2 * self.tau)

    def fit(
        self,
        X,
        Y,
        steps: int = 800,
        batch_size: int = 32,
        lr: float = 1e-3,
        seed: int = 0,
        device: str | torch.device | None = None,
    ) -> ContrastiveLikelihood:
        """Train on plans ``X`` (n, s, s) and ``Y``: for each plan a list of its
        :class:`Trajectory` objects (at least two per plan give multi-positives)."""
        X = V.check_array(X, "X", ndim=3, dtype=np.float32, low=-1.0, high=1.0)
        if not isinstance(Y, (list, tuple)):
            raise TypeError(f"Y must be a list of lists of Trajectory, got {type(Y).__name__}")
        V.check_same_length(X=X, Y=Y)
        if any(not isinstance(ys, (list, tuple)) or len(ys) == 0 for ys in Y):
            raise ValueError("Y must hold a non-empty list of trajectories for every plan")
        steps = V.check_int(steps, "steps", low=1)
        batch_size = V.check_int(batch_size, "batch_size", low=2)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        seed = V.check_int(seed, "seed", low=0)
        if device is not None:
            self.to(device)
        dev = next(self.parameters()).device
        s = X.shape[1]
        masks = [np.stack([rasterize(y, s) for y in ys]) for ys in Y]
        rng = np.random.default_rng(seed)
        g = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        self.history = []
        batch_size = min(batch_size, len(X))
        for step in range(steps):
            idx = rng.choice(len(X), batch_size, replace=False)
            plans = torch.from_numpy(X[idx])[:, None]
            traj = torch.from_numpy(np.concatenate([masks[i] for i in idx]))[:, None]
            owner = torch.from_numpy(
                np.concatenate([np.full(len(masks[i]), j) for j, i in enumerate(idx)])
            )
            if self.noise > 0:  # robustness to blurry Tweedie estimates
                level = torch.rand(len(plans), 1, 1, 1, generator=g) * self.noise
                plans = plans + level * torch.randn(plans.shape, generator=g)
            plans, traj, owner = plans.to(dev), traj.to(dev), owner.to(dev)
            f_neg = neg_owner = None
            if self.hard_negatives:
                negs = [hard_negative(X[i], Y[i][0], rng) for i in idx]
                first = np.cumsum([0] + [len(masks[i]) for i in idx])[:-1]
                f_neg = self.embed_plan(torch.from_numpy(np.stack(negs))[:, None].to(dev))
                neg_owner = torch.from_numpy(first)
            lam_align = align_weight(
                step / steps, self.align_start, self.align_full, self.align_weight
            )
            out = contrastive_loss(
                self.embed_plan(plans),
                self.embed_trajectory(traj),
                owner,
                self.tau,
                self.lam,
                lam_align,
                f_neg,
                neg_owner,
            )
            opt.zero_grad()
            out["loss"].backward()
            opt.step()
            self.history.append({k: float(v.detach()) for k, v in out.items()})
        self.eval()
        return self
