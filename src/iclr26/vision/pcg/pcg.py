"""Perceptual Counterfactual Geodesics (PCG): the two-stage path optimisation (spec steps 4-5).

The counterfactual is the end z_T of a discrete path gamma = (z_0, ..., z_T) from the query's
latent z_0, under the metric pulled back from a robust feature net through the generator.
Stage 1 (reach the target): the path starts on the straight line z_0 -> z_0 + delta (delta: a
few latent-Wachter steps) and Adam minimises
E(gamma) + lam_cls * CE(f(g(z_T)), y*) + lam_prior * ||z_T||^2 / d over z_1..z_T, stopping a
query once p_f(y* | g(z_T)) >= kappa. Stage 2 (geodesic refinement): z_T frozen, Adam
minimises E over the interior points (the hinge max(0, kappa - p) is constant then and is
dropped). The result holds x_cf = g(z_T) and the whole path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision import check_images
from iclr26.vision.pcg.common import (
    Counter,
    CounterfactualResult,
    as_weights,
    check_module,
    freeze,
    prepare_query,
    target_prob,
)
from iclr26.vision.pcg.embedding import PerceptualEmbedding, pullback_metric
from iclr26.vision.pcg.geodesic import path_energy, refine_path, straight_path


class PCG:
    """Counterfactuals on robust perceptual geodesics.

    ``generator``: an ``nn.Module`` g from latents (B, d) to images (B, C, H, W) (a VAE
    decoder, a StyleGAN2 synthesis network ...); ``classifier``: the ``nn.Module`` f to
    explain (logits); ``perceptual``: a :class:`PerceptualEmbedding` of a robust feature net.
    Both networks are frozen (eval, no parameter gradients). ``steps = (stage 1 budget,
    stage 2 steps)``; ``warm_steps`` latent-Wachter steps (proximity weight 1 / lam_cls) give
    the initial straight line and count against the stage-1 budget."""

    def __init__(
        self,
        generator: nn.Module,
        classifier: nn.Module,
        perceptual: PerceptualEmbedding,
        n_points: int = 10,
        lam_cls: float = 1.0,
        lam_prior: float = 0.01,
        kappa: float = 0.9,
        steps: Sequence[int] = (300, 200),
        lr: float = 0.05,
        warm_steps: int = 10,
    ):
        self.generator = freeze(check_module(generator, "generator"))
        self.classifier = freeze(check_module(classifier, "classifier"))
        if not isinstance(perceptual, PerceptualEmbedding):
            raise TypeError(
                f"perceptual must be a PerceptualEmbedding, got {type(perceptual).__name__}"
            )
        self.perceptual = perceptual
        self.n_points = V.check_int(n_points, "n_points", low=1)
        self.lam_cls = V.check_scalar(lam_cls, "lam_cls", low=0.0, low_open=True)
        self.lam_prior = V.check_scalar(lam_prior, "lam_prior", low=0.0)
        self.kappa = V.check_scalar(
            kappa, "kappa", low=0.0, high=1.0, low_open=True, high_open=True
        )
        if isinstance(steps, str) or not isinstance(steps, Sequence) or len(steps) != 2:
            raise TypeError(f"steps must be a pair (stage 1, stage 2), got {steps!r}")
        self.steps = (V.check_int(steps[0], "steps", low=1), V.check_int(steps[1], "steps", low=0))
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.warm_steps = V.check_int(warm_steps, "warm_steps", low=0)
        if self.warm_steps >= self.steps[0]:
            raise ValueError(f"warm_steps must be < the stage-1 budget {self.steps[0]}")

    def embed_latent(self, z: torch.Tensor) -> torch.Tensor:
        """phi(g(z)), (N, D)."""
        return self.perceptual(self.generator(z))

    def metric(self, z: torch.Tensor) -> torch.Tensor:
        """The pulled-back metric G(z) = J^T J of z -> phi(g(z)), (B, d, d)."""
        V.check_tensor(z, "z", ndim=2, floating=True)
        return pullback_metric(self.embed_latent, z)

    def explain(
        self,
        x0: torch.Tensor | None = None,
        target=None,
        *,
        z0: torch.Tensor | None = None,
        encoder: Callable | None = None,
    ) -> CounterfactualResult:
        """Counterfactuals of the queries ``x0`` (B, C, H, W) in [0, 1] (inverted by
        ``encoder``) or latents ``z0`` (B, d), towards ``target`` (an int or (B,) ints)."""
        if target is None:
            raise ValueError("target must be given (the class the counterfactual should get)")
        z0, x0, target, _ = prepare_query(
            self.generator, self.classifier, target, x0=x0, z0=z0, encoder=encoder
        )
        return self._solve(z0, target, self.lam_cls)

    # -- the two stages ------------------------------------------------------------------
    def _warm_start(self, z0, target, lam_cls, counter: Counter) -> torch.Tensor:
        delta = torch.zeros_like(z0, requires_grad=True)
        opt = torch.optim.Adam([delta], lr=self.lr)
        for _ in range(self.warm_steps):
            logits = self.classifier(self.generator(z0 + delta))
            ce = F.cross_entropy(logits, target, reduction="none")
            loss = (ce + (delta * delta).sum(1) / lam_cls).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            counter.add(generator=len(z0), classifier=len(z0))
        return delta.detach()

    def _solve(self, z0: torch.Tensor, target: torch.Tensor, lam_cls) -> CounterfactualResult:
        batch, dim = z0.shape
        lam_cls = as_weights(lam_cls, "lam_cls", batch)
        dev = z0.device
        lam_vec = (
            lam_cls if isinstance(lam_cls, torch.Tensor) else torch.full((batch,), lam_cls)
        ).to(dev)
        counter = Counter()
        T = self.n_points
        delta = self._warm_start(z0, target, lam_vec, counter)
        path = straight_path(z0, z0 + delta, T)
        with torch.no_grad():
            phi0 = self.embed_latent(z0)
        counter.add(generator=batch, feature=batch)
        points = path[:, 1:].clone().requires_grad_(True)  # z_1 .. z_T
        opt = torch.optim.Adam([points], lr=self.lr)
        active = torch.ones(batch, dtype=torch.bool, device=dev)
        steps_used = torch.full((batch,), self.warm_steps, device=dev)
        stage1 = []
        for _ in range(self.steps[0] - self.warm_steps):
            idx = active.nonzero().flatten()
            if len(idx) == 0:
                break
            mine = points[idx]
            images = self.generator(mine.reshape(-1, dim))
            emb = self.perceptual(images).reshape(len(idx), T, -1)
            energy = path_energy(torch.cat([phi0[idx, None], emb], 1))
            logits = self.classifier(images.reshape(len(idx), T, *images.shape[1:])[:, -1])
            counter.add(generator=len(idx) * T, feature=len(idx) * T, classifier=len(idx))
            ce = F.cross_entropy(logits, target[idx], reduction="none")
            prob = F.softmax(logits, 1).gather(1, target[idx, None])[:, 0]
            done = prob.detach() >= self.kappa
            active[idx[done]] = False
            if bool(done.all()):
                break
            z_end = mine[:, -1]
            loss = energy + lam_vec[idx] * ce + self.lam_prior * (z_end * z_end).sum(1) / dim
            loss = loss[~done].sum()
            stage1.append(float(loss.detach()) / int((~done).sum()))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            keep = points.detach()[~active].clone()
            opt.step()
            with torch.no_grad():
                points[~active] = keep
            steps_used[active] += 1
        path = torch.cat([z0[:, None], points.detach()], 1)
        path, stage2, n_embedded = refine_path(self.embed_latent, path, self.steps[1], self.lr)
        counter.add(generator=n_embedded, feature=n_embedded)
        with torch.no_grad():
            path_x = self.generator(path.reshape(-1, dim))
            path_x = path_x.reshape(batch, T + 1, *path_x.shape[1:])
            energy = path_energy(self.perceptual(path_x.flatten(0, 1)).reshape(batch, T + 1, -1))
        x_cf = path_x[:, -1]
        prob, valid = target_prob(self.classifier, x_cf, target)
        return CounterfactualResult(
            x_cf=x_cf,
            z_cf=path[:, -1],
            path_z=path,
            path_x=path_x,
            energy=energy,
            prob_target=prob,
            valid=valid,
            target=target,
            passes=counter.passes,
            history={"stage1_loss": stage1, "stage2_energy": stage2},
            steps_used=steps_used,
        )


def counterfactual(
    x: torch.Tensor,
    target,
    *,
    generator: nn.Module,
    classifier: nn.Module,
    encoder: Callable | None = None,
    z0: torch.Tensor | None = None,
    feature_net: nn.Module | None = None,
    layers: Sequence[str] | None = None,
    **options,
) -> CounterfactualResult:
    """PCG counterfactuals of images ``x`` (B, C, H, W) in [0, 1] towards ``target`` for any
    generator/classifier pair (torch modules). The query latent is ``z0`` or ``encoder(x)``.
    The metric comes from ``feature_net`` at ``layers`` (pass an adversarially robust
    network; None uses the classifier's own output, a non-robust geometry). ``options`` go
    to :class:`PCG` (n_points, lam_cls, lam_prior, kappa, steps, lr, warm_steps)."""
    check_images(x, "x", channels=None, unit_range=True)
    check_module(generator, "generator")
    check_module(classifier, "classifier")
    if feature_net is None:
        feature_net, layers = classifier, None
    check_module(feature_net, "feature_net")
    emb = PerceptualEmbedding(feature_net, layers=layers)
    try:
        method = PCG(generator, classifier, emb, **options)
        return method.explain(x, target, z0=z0, encoder=encoder)
    finally:
        emb.remove_hooks()
