"""The baselines of the spec: flat latent geometry (``LatentWachter``), pixel space
(``PixelWachter``) and the generator's pixel pullback (``RSGD``). The fourth baseline,
PCG with a non-robust feature net, is :class:`~iclr26.vision.pcg.PCG` given a
:class:`~iclr26.vision.pcg.PerceptualEmbedding` of a standard network.

Each shares ``explain(x0=None, target, z0=None, encoder=None)`` and returns a
:class:`~iclr26.vision.pcg.CounterfactualResult` whose path is the straight line in the
method's own space (latent or pixel), with ``n_points`` steps.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision.pcg.common import (
    Counter,
    CounterfactualResult,
    as_weights,
    check_module,
    freeze,
    line,
    prepare_query,
    target_prob,
)
from iclr26.vision.pcg.embedding import jvp_columns


class _LatentMethod:
    def __init__(self, generator, classifier, lam, steps, lr, n_points):
        self.generator = freeze(check_module(generator, "generator"))
        self.classifier = freeze(check_module(classifier, "classifier"))
        self.lam = V.check_scalar(lam, "lam", low=0.0, low_open=True)
        self.steps = V.check_int(steps, "steps", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.n_points = V.check_int(n_points, "n_points", low=1)

    def explain(
        self,
        x0: torch.Tensor | None = None,
        target=None,
        *,
        z0: torch.Tensor | None = None,
        encoder: Callable | None = None,
    ) -> CounterfactualResult:
        """Counterfactuals of ``x0`` (inverted by ``encoder``) or of latents ``z0``."""
        if target is None:
            raise ValueError("target must be given (the class the counterfactual should get)")
        z0, _, target, _ = prepare_query(
            self.generator, self.classifier, target, x0=x0, z0=z0, encoder=encoder
        )
        return self._solve(z0, target, self.lam)

    def _loss(self, z, z0, target, lam):
        logits = self.classifier(self.generator(z))
        ce = F.cross_entropy(logits, target, reduction="none")
        return (ce + lam * ((z - z0) ** 2).sum(1)).sum()

    def _finish(self, z0, z, target, counter, history) -> CounterfactualResult:
        batch, dim = z0.shape
        path = line(z0, z.detach(), self.n_points)
        with torch.no_grad():
            path_x = self.generator(path.reshape(-1, dim))
            path_x = path_x.reshape(batch, self.n_points + 1, *path_x.shape[1:])
        prob, valid = target_prob(self.classifier, path_x[:, -1], target)
        return CounterfactualResult(
            x_cf=path_x[:, -1],
            z_cf=path[:, -1],
            path_z=path,
            path_x=path_x,
            energy=None,
            prob_target=prob,
            valid=valid,
            target=target,
            passes=counter.passes,
            history={"loss": history},
        )


class LatentWachter(_LatentMethod):
    """min_z CE(f(g(z)), y*) + lam ||z - z0||^2 by Adam in the latent space (flat metric)."""

    def __init__(
        self,
        generator: nn.Module,
        classifier: nn.Module,
        lam: float = 0.1,
        steps: int = 500,
        lr: float = 0.05,
        n_points: int = 10,
    ):
        super().__init__(generator, classifier, lam, steps, lr, n_points)

    def _solve(self, z0, target, lam) -> CounterfactualResult:
        lam = as_weights(lam, "lam", len(z0))
        counter, history = Counter(), []
        z = z0.clone().requires_grad_(True)
        opt = torch.optim.Adam([z], lr=self.lr)
        for _ in range(self.steps):
            loss = self._loss(z, z0, target, lam)
            counter.add(generator=len(z), classifier=len(z))
            history.append(float(loss.detach()) / len(z))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return self._finish(z0, z, target, counter, history)


class RSGD(_LatentMethod):
    """Riemannian gradient descent under the generator's pixel pullback G_g = J_g^T J_g:
    z <- z - lr (G_g(z) + mu I)^{-1} grad_z [CE(f(g(z)), y*) + lam ||z - z0||^2]
    (after Pegios et al., 2024; G_g is formed each step, tractable for a small latent)."""

    def __init__(
        self,
        generator: nn.Module,
        classifier: nn.Module,
        lam: float = 0.1,
        steps: int = 500,
        lr: float = 0.05,
        mu: float = 0.1,
        n_points: int = 10,
    ):
        super().__init__(generator, classifier, lam, steps, lr, n_points)
        self.mu = V.check_scalar(mu, "mu", low=0.0, low_open=True)

    def _solve(self, z0, target, lam) -> CounterfactualResult:
        lam = as_weights(lam, "lam", len(z0))
        batch, dim = z0.shape
        counter, history = Counter(), []
        z = z0.clone()
        eye = torch.eye(dim, device=z0.device)
        for _ in range(self.steps):
            zg = z.clone().requires_grad_(True)
            loss = self._loss(zg, z0, target, lam)
            (grad,) = torch.autograd.grad(loss, zg)
            cols = jvp_columns(self.generator, z)  # (B, d, pixels)
            metric = cols @ cols.transpose(1, 2) + self.mu * eye
            step = torch.linalg.solve(metric, grad[:, :, None])[:, :, 0]
            z = (z - self.lr * step).detach()
            counter.add(generator=batch * (1 + dim), classifier=batch)
            history.append(float(loss.detach()) / batch)
        return self._finish(z0, z, target, counter, history)


class PixelWachter:
    """min_x CE(f(x), y*) + lam ||x - x0||_1 by Adam in pixel space, x kept in [0, 1]
    (prone to adversarial edits: nothing keeps x on the data manifold)."""

    def __init__(
        self,
        classifier: nn.Module,
        lam: float = 0.1,
        steps: int = 500,
        lr: float = 0.01,
        n_points: int = 10,
    ):
        self.classifier = freeze(check_module(classifier, "classifier"))
        self.lam = V.check_scalar(lam, "lam", low=0.0, low_open=True)
        self.steps = V.check_int(steps, "steps", low=1)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.n_points = V.check_int(n_points, "n_points", low=1)

    def explain(
        self,
        x0: torch.Tensor | None = None,
        target=None,
        *,
        z0: torch.Tensor | None = None,
        encoder: Callable | None = None,
    ) -> CounterfactualResult:
        """Counterfactuals of the images ``x0`` (B, C, H, W) in [0, 1] (``z0`` and
        ``encoder`` are accepted for a shared signature and not used)."""
        if x0 is None:
            raise ValueError("x0 must be given (PixelWachter works on the query image)")
        if target is None:
            raise ValueError("target must be given (the class the counterfactual should get)")
        _, x0, target, _ = prepare_query(None, self.classifier, target, x0=x0, need_latent=False)
        return self._solve(x0, target, self.lam)

    def _solve(self, x0, target, lam) -> CounterfactualResult:
        lam = as_weights(lam, "lam", len(x0))
        counter, history = Counter(), []
        x = x0.clone().requires_grad_(True)
        opt = torch.optim.Adam([x], lr=self.lr)
        for _ in range(self.steps):
            ce = F.cross_entropy(self.classifier(x), target, reduction="none")
            loss = (ce + lam * (x - x0).abs().flatten(1).sum(1)).sum()
            counter.add(classifier=len(x))
            history.append(float(loss.detach()) / len(x))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                x.clamp_(0, 1)
        x = x.detach()
        path_x = line(x0, x, self.n_points)
        prob, valid = target_prob(self.classifier, x, target)
        return CounterfactualResult(
            x_cf=x,
            z_cf=None,
            path_z=None,
            path_x=path_x,
            energy=None,
            prob_target=prob,
            valid=valid,
            target=target,
            passes=counter.passes,
            history={"loss": history},
        )
