"""TARF (TARget-aware Forgetting) and the unlearning baselines, all behind one protocol:
``unlearn(model, forget, remain) -> nn.Module`` returns an unlearned deep copy and leaves the
input model untouched. ``forget`` and ``remain`` are ``(X, y)`` pairs (images and the model's
labels) or ``torch.utils.data.DataLoader``s yielding such batches.

TARF (the paper's Sec. 4) runs annealed gradient ascent on the forgetting data together with
gradient descent on the *hard-to-affect* part of the remaining data. Which remaining samples
are easily affected is read from the forgetting dynamics: gradient ascent on D_f lowers the
confidence of representationally similar samples too ("representational gravity"), so the
drop of each remaining sample's own-label confidence separates the data that share the target
concept from the rest. The objective has three phases: exposure (ascent only), joint
forgetting (annealed ascent plus selected descent) and consolidation (selected descent only).
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .model import as_tensors, predict_proba


def _materialise(data, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(data, torch.utils.data.DataLoader):
        xs, ys = [], []
        for batch in data:
            if not isinstance(batch, (tuple, list)) or len(batch) < 2:
                raise TypeError(f"{name} must yield (images, labels) batches")
            xs.append(torch.as_tensor(batch[0]))
            ys.append(torch.as_tensor(batch[1]))
        if not xs:
            raise ValueError(f"{name} is empty")
        return as_tensors(torch.cat(xs).float(), torch.cat(ys), name)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"{name} must be an (X, y) pair or a DataLoader")
    return as_tensors(data[0], data[1], name)


def _check_model(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return model


def _features(model: nn.Module, feature_fn):
    if feature_fn is not None:
        return feature_fn
    if hasattr(model, "features") and callable(model.features):
        return model.features
    return None


def clipped_ce(logits: torch.Tensor, y: torch.Tensor, loss_max: float) -> torch.Tensor:
    """Per-sample cross-entropy clipped at ``loss_max`` (no gradient beyond it), averaged; the
    clip keeps gradient ascent from diverging."""
    per = nn.functional.cross_entropy(logits, y, reduction="none")
    return torch.clamp(per, max=loss_max).mean()


@dataclass
class Unlearner(ABC):
    """Shared settings and helpers of every unlearner: SGD with momentum, ``epochs`` passes,
    each of ``ceil(|D_f| / batch)`` steps that pair a forgetting batch with a remaining batch."""

    epochs: int = 10
    lr: float = 0.01
    batch: int = 128
    momentum: float = 0.9
    loss_max: float = 10.0
    seed: int = 0
    steps_done_: int = field(default=0, init=False, repr=False)
    samples_done_: int = field(default=0, init=False, repr=False)

    def _check(self) -> None:
        self.epochs = V.check_int(self.epochs, "epochs", low=1)
        self.lr = V.check_scalar(self.lr, "lr", low=0.0, low_open=True)
        self.batch = V.check_int(self.batch, "batch", low=1)
        self.momentum = V.check_scalar(self.momentum, "momentum", low=0.0, high=1.0, high_open=True)
        self.loss_max = V.check_scalar(self.loss_max, "loss_max", low=0.0, low_open=True)
        self.seed = V.check_int(self.seed, "seed")

    def _prepare(self, model, forget, remain):
        self._check()
        model = _check_model(model)
        Xf, yf = _materialise(forget, "forget")
        Xr, yr = _materialise(remain, "remain")
        if Xf.shape[1:] != Xr.shape[1:]:
            raise ValueError(
                f"forget and remain images differ in shape: {tuple(Xf.shape[1:])} vs "
                f"{tuple(Xr.shape[1:])}"
            )
        self.steps_done_ = 0
        self.samples_done_ = 0
        work = copy.deepcopy(model)
        work.train()
        opt = torch.optim.SGD(work.parameters(), lr=self.lr, momentum=self.momentum)
        gen = torch.Generator().manual_seed(self.seed)
        return work, opt, gen, Xf, yf, Xr, yr

    def _steps_per_epoch(self, n_forget: int) -> int:
        return max(1, math.ceil(n_forget / self.batch))

    def _step(self, opt, loss: torch.Tensor, n_samples: int, mask=None, model=None) -> None:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if mask is not None:
            for p, m in zip(model.parameters(), mask):
                if p.grad is not None:
                    p.grad.mul_(m)
        opt.step()
        self.steps_done_ += 1
        self.samples_done_ += n_samples

    @abstractmethod
    def unlearn(self, model: nn.Module, forget, remain) -> nn.Module:
        """Return an unlearned deep copy of ``model``; ``model`` itself is left untouched."""


@dataclass
class FineTune(Unlearner):
    """FT: gradient descent on the remaining data only (full passes over D_r), relying on
    catastrophic forgetting of D_f."""

    def unlearn(self, model, forget, remain):
        work, opt, gen, Xf, yf, Xr, yr = self._prepare(model, forget, remain)
        for _ in range(self.epochs):
            order = torch.randperm(len(Xr), generator=gen)
            for s in range(0, len(Xr), self.batch):
                idx = order[s : s + self.batch]
                loss = nn.functional.cross_entropy(work(Xr[idx]), yr[idx])
                self._step(opt, loss, len(idx))
        return work.eval()


@dataclass
class GradientAscent(Unlearner):
    """GA: gradient ascent on the forgetting data only (per-sample loss clipped)."""

    def unlearn(self, model, forget, remain):
        work, opt, gen, Xf, yf, Xr, yr = self._prepare(model, forget, remain)
        for _ in range(self.epochs):
            order = torch.randperm(len(Xf), generator=gen)
            for s in range(0, len(Xf), self.batch):
                idx = order[s : s + self.batch]
                loss = -clipped_ce(work(Xf[idx]), yf[idx], self.loss_max)
                self._step(opt, loss, len(idx))
        return work.eval()


@dataclass
class NegGradPlus(Unlearner):
    """NegGrad+: ascent on D_f plus descent on all of D_r with a constant weight ``beta``."""

    beta: float = 1.0

    def unlearn(self, model, forget, remain):
        self.beta = V.check_scalar(self.beta, "beta", low=0.0)
        work, opt, gen, Xf, yf, Xr, yr = self._prepare(model, forget, remain)
        for _ in range(self.epochs):
            order = torch.randperm(len(Xf), generator=gen)
            for s in range(0, len(Xf), self.batch):
                idx = order[s : s + self.batch]
                ridx = torch.randint(len(Xr), (self.batch,), generator=gen)
                loss = nn.functional.cross_entropy(work(Xr[ridx]), yr[ridx]) - self.beta * (
                    clipped_ce(work(Xf[idx]), yf[idx], self.loss_max)
                )
                self._step(opt, loss, len(idx) + len(ridx))
        return work.eval()


def _random_other_labels(y: torch.Tensor, n_classes: int, gen) -> torch.Tensor:
    shift = torch.randint(1, n_classes, y.shape, generator=gen)
    return (y + shift) % n_classes


@dataclass
class RandomLabel(Unlearner):
    """RL: train on D_f relabelled with random wrong classes, together with D_r batches."""

    def _mask(self, work, Xf, yf):
        return None

    def unlearn(self, model, forget, remain):
        work, opt, gen, Xf, yf, Xr, yr = self._prepare(model, forget, remain)
        with torch.no_grad():
            n_classes = int(work(Xf[:1]).shape[1])
        if n_classes < 2:
            raise ValueError("RandomLabel needs a model with at least 2 outputs")
        mask = self._mask(work, Xf, yf)
        for _ in range(self.epochs):
            order = torch.randperm(len(Xf), generator=gen)
            for s in range(0, len(Xf), self.batch):
                idx = order[s : s + self.batch]
                ridx = torch.randint(len(Xr), (self.batch,), generator=gen)
                fake = _random_other_labels(yf[idx], n_classes, gen)
                loss = nn.functional.cross_entropy(work(Xf[idx]), fake) + (
                    nn.functional.cross_entropy(work(Xr[ridx]), yr[ridx])
                )
                self._step(opt, loss, len(idx) + len(ridx), mask=mask, model=work)
        return work.eval()


@dataclass
class SalUnLite(RandomLabel):
    """SalUn-lite: random labelling restricted to the salient weights, those whose forgetting
    gradient magnitude |∇ℓ_f| is in the top ``saliency`` fraction (one global threshold)."""

    saliency: float = 0.5

    def _mask(self, work, Xf, yf):
        frac = V.check_probability(self.saliency, "saliency", open_low=True)
        work.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(work(Xf), yf).backward()
        grads = [
            (p.grad if p.grad is not None else torch.zeros_like(p)).abs() for p in work.parameters()
        ]
        flat = torch.cat([g.flatten() for g in grads])
        k = max(1, int(round(frac * flat.numel())))
        threshold = torch.topk(flat, k).values.min()
        work.zero_grad(set_to_none=True)
        return [(g >= threshold).float() for g in grads]


def anneal(t: int, epochs_joint: int, alpha0: float, kind: str = "linear") -> float:
    """The ascent weight α_t of epoch ``t``: α0 at t = 0, decreasing to 0 at the end of the
    joint phase (``epochs_joint`` = E₂) and 0 afterwards; ``kind`` "linear" or "cosine"."""
    V.check_choice(kind, "kind", ("linear", "cosine"))
    t = V.check_int(t, "t", low=0)
    epochs_joint = V.check_int(epochs_joint, "epochs_joint", low=0)
    alpha0 = V.check_scalar(alpha0, "alpha0", low=0.0)
    frac = min(max(t / max(epochs_joint, 1), 0.0), 1.0)
    if kind == "linear":
        return alpha0 * (1.0 - frac)
    return alpha0 * 0.5 * (1.0 + math.cos(math.pi * frac))


def gravity_split(scores: np.ndarray, seed: int = 0) -> np.ndarray:
    """Which scores belong to the high component of a two-component 1-D Gaussian mixture (the
    easily affected samples); all False when the scores do not split."""
    from sklearn.mixture import GaussianMixture

    scores = V.check_array(scores, "scores", ndim=1, dtype=np.float64)
    if len(scores) < 4 or np.ptp(scores) < 1e-8:
        return np.zeros(len(scores), bool)
    gmm = GaussianMixture(2, random_state=seed, reg_covar=1e-6).fit(scores[:, None])
    high = int(np.argmax(gmm.means_.ravel()))
    return gmm.predict(scores[:, None]) == high


@dataclass
class TARF(Unlearner):
    """TARget-aware Forgetting: annealed gradient ascent on D_f and gradient descent on the
    hard-to-affect remaining data, in three phases over ``epochs``.

    Phase 1 (epochs t < E₁ = ceil(f₁ E)): ascent only, α_t ℓ(D_f). Then, every epoch, each
    remaining sample's gravity g(x) = p_θ0(y|x) − p_θt(y|x) (the drop of its own-label
    confidence) is split by a two-component Gaussian mixture; the high component is the
    easily affected set D_r^tgt and the rest D_r^sel. Phase 2 (E₁ ≤ t < E₂ = ceil(f₂ E)):
    −α_t ℓ(D_f) + ℓ(D_r^sel). Phase 3: descent on D_r^sel only. α_t is annealed from
    ``alpha0`` to 0 at E₂. ``select_by="feature"`` marks as easily affected the samples whose
    representation is as close to the mean forgetting feature as the ``quantile`` of D_f's own
    similarities; ``"both"`` requires both. ``expand_forget`` adds D_r^tgt to the ascent set
    (for tasks whose target concept is broader than the forgetting data's label).
    """

    alpha0: float = 1.0
    anneal: str = "linear"
    phase_fracs: tuple[float, float] = (0.2, 0.7)
    select_by: str = "gravity"
    expand_forget: bool = True
    quantile: float = 0.1
    feature_fn: object = None
    selections_: list = field(default_factory=list, init=False, repr=False)
    alphas_: list = field(default_factory=list, init=False, repr=False)

    def _check(self) -> None:
        super()._check()
        self.alpha0 = V.check_scalar(self.alpha0, "alpha0", low=0.0)
        V.check_choice(self.anneal, "anneal", ("linear", "cosine"))
        V.check_choice(self.select_by, "select_by", ("gravity", "feature", "both"))
        V.check_bool(self.expand_forget, "expand_forget")
        self.quantile = V.check_probability(self.quantile, "quantile")
        if not isinstance(self.phase_fracs, (tuple, list)) or len(self.phase_fracs) != 2:
            raise ValueError("phase_fracs must be a pair (f1, f2) with 0 <= f1 <= f2 <= 1")
        f1 = V.check_probability(self.phase_fracs[0], "phase_fracs[0]")
        f2 = V.check_probability(self.phase_fracs[1], "phase_fracs[1]")
        if f1 > f2:
            raise ValueError(f"phase_fracs must be ordered, got ({f1}, {f2})")
        self.phase_fracs = (f1, f2)
        if self.feature_fn is not None and not callable(self.feature_fn):
            raise TypeError("feature_fn must be callable (model -> penultimate features)")

    def phases(self) -> tuple[int, int]:
        """(E₁, E₂): the first epoch of the joint phase and of consolidation."""
        e1 = math.ceil(self.phase_fracs[0] * self.epochs)
        e2 = max(e1, math.ceil(self.phase_fracs[1] * self.epochs))
        return e1, e2

    @torch.no_grad()
    def _easily_affected(self, work, p0, Xr, yr, Xf) -> np.ndarray:
        gravity_mask = np.zeros(len(Xr), bool)
        if self.select_by in ("gravity", "both"):
            p_now = predict_proba(work, Xr).gather(1, yr[:, None]).squeeze(1)
            gravity_mask = gravity_split((p0 - p_now).numpy(), self.seed)
        if self.select_by == "gravity":
            return gravity_mask
        feats = _features(work, self.feature_fn)
        if feats is None:
            raise TypeError(
                "select_by='feature' needs penultimate features: pass feature_fn or use a "
                "model with a .features(x) method"
            )
        was = work.training
        work.eval()
        fr = nn.functional.normalize(feats(Xr).flatten(1), dim=1)
        ff = nn.functional.normalize(feats(Xf).flatten(1), dim=1)
        work.train(was)
        mu = nn.functional.normalize(ff.mean(0), dim=0)
        cut = torch.quantile(ff @ mu, self.quantile)
        feature_mask = ((fr @ mu) >= cut).numpy()
        return feature_mask if self.select_by == "feature" else (feature_mask & gravity_mask)

    def unlearn(self, model, forget, remain):
        work, opt, gen, Xf, yf, Xr, yr = self._prepare(model, forget, remain)
        e1, e2 = self.phases()
        with torch.no_grad():
            p0 = predict_proba(work, Xr).gather(1, yr[:, None]).squeeze(1)
        self.selections_, self.alphas_ = [], []
        selected = torch.arange(len(Xr))
        ascend_X, ascend_y = Xf, yf
        steps = self._steps_per_epoch(len(Xf))
        for t in range(self.epochs):
            alpha = anneal(t, e2, self.alpha0, self.anneal) if t < e2 else 0.0
            self.alphas_.append(alpha)
            if t >= e1:
                affected = self._easily_affected(work, p0, Xr, yr, Xf)
                self.selections_.append(affected)
                keep = np.flatnonzero(~affected)
                selected = torch.as_tensor(keep if len(keep) else np.arange(len(Xr)))
                if self.expand_forget and affected.any():
                    extra = torch.as_tensor(np.flatnonzero(affected))
                    ascend_X, ascend_y = torch.cat([Xf, Xr[extra]]), torch.cat([yf, yr[extra]])
                else:
                    ascend_X, ascend_y = Xf, yf
            order = torch.randperm(len(ascend_X), generator=gen)
            for s in range(steps):
                idx = order[(s * self.batch) % len(order) :][: self.batch]
                loss = torch.zeros(())
                n = 0
                if alpha > 0:
                    loss = loss - alpha * clipped_ce(
                        work(ascend_X[idx]), ascend_y[idx], self.loss_max
                    )
                    n += len(idx)
                if t >= e1:
                    pick = selected[torch.randint(len(selected), (self.batch,), generator=gen)]
                    loss = loss + nn.functional.cross_entropy(work(Xr[pick]), yr[pick])
                    n += len(pick)
                if n:
                    self._step(opt, loss, n)
        return work.eval()


UNLEARNERS = {
    "FT": FineTune,
    "GA": GradientAscent,
    "NegGrad+": NegGradPlus,
    "RL": RandomLabel,
    "SalUn-lite": SalUnLite,
    "TARF": TARF,
}
