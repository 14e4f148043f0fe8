"""IE-CL: entropy generation (a learnable transform) and preservation (an encoder
regulariser) as plug-ins to a two-view contrastive framework.

Per batch, after ``transform_warmup`` of the steps (before that A_phi is the identity and
is not trained), two alternating updates (*project instantiation* of the paper's design):

- transform step (encoder frozen): ``min_phi -lam * Delta H(v2, A_phi(v2)) + mu *
  relu(L(v1, A_phi(v2)) - (L_bar + m))``, where ``L_bar`` is the running mean of the
  framework's loss on the un-transformed pair and ``m`` the consistency margin; the hinge
  keeps the transformed view identifiable as its own positive.
- encoder step: ``min_theta L(v1, A_phi(v2)) - beta * R(theta)`` with the entropy-preserving
  regulariser R on the projections of both views (mean over those that carry gradient: the
  queries only for asymmetric MoCo, whose keys come from the frozen key network). The
  transformed view is the one the transform step produced (before phi's update), detached,
  so A_phi runs once per batch.

Gradients are routed explicitly: the transform step asks autograd only for phi's gradients
(no ``.grad`` of theta is written), and the encoder step sees the transformed view detached.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.vision.iecl.byol import BYOLLite
from iclr26.vision.iecl.entropy import ESTIMATORS, DescriptorProjection, incremental_entropy
from iclr26.vision.iecl.moco import MoCo
from iclr26.vision.iecl.regularizer import EntropyPreservingRegularizer
from iclr26.vision.iecl.simclr import SimCLR, TwoViewFramework
from iclr26.vision.iecl.transform import LearnableEntropyTransform

BASES = ("simclr", "byol", "moco")


class IECLWrapper(nn.Module):
    """Add IE-CL's two modules to any :class:`TwoViewFramework` (``base``)."""

    def __init__(
        self,
        base: TwoViewFramework,
        transform: nn.Module | None = None,
        lam_entropy: float = 1.0,
        beta_reg: float = 0.05,
        consistency_margin: float = 0.5,
        consistency_weight: float = 10.0,
        estimator: str = "logdet",
        reg_mode: str = "rate",
        transform_warmup: float = 0.1,
        loss_ema: float = 0.9,
        in_ch: int = 3,
    ):
        super().__init__()
        if not isinstance(base, TwoViewFramework):
            raise TypeError(
                f"base must be a TwoViewFramework (SimCLR, MoCo, BYOLLite, ...), got {type(base).__name__}"
            )
        self.base = base
        in_ch = V.check_int(in_ch, "in_ch", low=1)
        if transform is None:
            transform = LearnableEntropyTransform(in_ch=in_ch)
        elif not isinstance(transform, nn.Module):
            raise TypeError(f"transform must be a torch.nn.Module, got {type(transform).__name__}")
        self.transform = transform
        self.lam_entropy = V.check_scalar(lam_entropy, "lam_entropy", low=0.0)
        self.beta_reg = V.check_scalar(beta_reg, "beta_reg", low=0.0)
        self.consistency_margin = V.check_scalar(consistency_margin, "consistency_margin", low=0.0)
        self.consistency_weight = V.check_scalar(consistency_weight, "consistency_weight", low=0.0)
        self.estimator = V.check_choice(estimator, "estimator", ESTIMATORS)
        self.transform_warmup = V.check_probability(
            transform_warmup, "transform_warmup", open_high=True
        )
        self.loss_ema = V.check_probability(loss_ema, "loss_ema", open_high=True)
        self.regularizer = EntropyPreservingRegularizer(reg_mode)
        self.psi = DescriptorProjection(in_ch)
        self.loss_bar: float | None = None
        self._last_transformed: torch.Tensor | None = None
        self.opt_enc: torch.optim.Optimizer | None = None
        self.opt_tf: torch.optim.Optimizer | None = None

    # -- the running loss L_bar travels in ``state_dict`` so a resumed run is identical
    def get_extra_state(self) -> dict:
        return {"loss_bar": self.loss_bar}

    def set_extra_state(self, state: dict) -> None:
        self.loss_bar = state["loss_bar"]

    # -------------------------------------------------------------- optimisers
    def configure_optimizers(self, lr: float = 1e-3, lr_transform: float | None = None):
        """``(opt_enc, opt_tf)``: Adam over the framework's parameters and over A_phi's."""
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        lr_tf = (
            lr
            if lr_transform is None
            else V.check_scalar(lr_transform, "lr_transform", low=0.0, low_open=True)
        )
        self.opt_enc = torch.optim.Adam(self.base.trainable_parameters(), lr=lr)
        self.opt_tf = torch.optim.Adam(
            [p for p in self.transform.parameters() if p.requires_grad], lr=lr_tf
        )
        return self.opt_enc, self.opt_tf

    def _ensure_optimizers(self) -> None:
        if self.opt_enc is None or self.opt_tf is None:
            self.configure_optimizers()

    def active(self, step: int, total_steps: int) -> bool:
        """Whether A_phi is applied (and trained) at ``step`` of ``total_steps``."""
        return step >= self.transform_warmup * total_steps

    # -------------------------------------------------------------- the two updates
    def _update_loss_bar(self, value: float) -> None:
        self.loss_bar = (
            value
            if self.loss_bar is None
            else self.loss_ema * self.loss_bar + (1 - self.loss_ema) * value
        )

    def transform_step(self, v1: torch.Tensor, v2: torch.Tensor) -> dict[str, float]:
        """One update of phi with theta frozen; only phi's ``.grad`` fields are written."""
        self._ensure_optimizers()
        with torch.no_grad():
            plain, _, _ = self.base.pair_loss(v1, v2)
        self._update_loss_bar(float(plain))
        v2t = self.transform(v2, generator=self.base.generator)
        delta_h = incremental_entropy(v2, v2t, self.psi, self.estimator)
        loss_t, _, _ = self.base.pair_loss(v1, v2t)
        violation = torch.relu(loss_t - (self.loss_bar + self.consistency_margin))
        objective = (
            -self.lam_entropy * delta_h.to(loss_t.dtype) + self.consistency_weight * violation
        )
        params = [p for p in self.transform.parameters() if p.requires_grad]
        grads = torch.autograd.grad(objective, params, allow_unused=True)
        self.opt_tf.zero_grad(set_to_none=True)
        for p, g in zip(params, grads):
            p.grad = g
        self.opt_tf.step()
        self._last_transformed = v2t.detach()
        return {
            "delta_h": float(delta_h.detach()),
            "loss_plain": float(plain),
            "loss_transformed": float(loss_t.detach()),
            "violation": float(violation.detach()),
        }

    def encoder_step(
        self,
        v1: torch.Tensor,
        v2: torch.Tensor,
        apply_transform: bool = True,
        transformed: torch.Tensor | None = None,
    ) -> dict[str, float]:
        """One update of theta on (v1, A_phi(v2)) (A_phi frozen, its output detached).
        ``transformed`` reuses a view A_phi already produced (the transform step's)."""
        self._ensure_optimizers()
        delta_in = None
        if apply_transform:
            with torch.no_grad():
                if transformed is None:
                    v2_in = self.transform(v2, generator=self.base.generator)
                else:
                    v2_in = transformed.detach()
                if self.regularizer.mode == "gap":
                    delta_in = incremental_entropy(v2, v2_in, self.psi, self.estimator)
        else:
            v2_in = v2
        loss, z1, z2 = self.base.pair_loss(v1, v2_in)
        if self.regularizer.mode == "rate":
            # averaged over the projections that carry gradient to theta: both views for
            # SimCLR / BYOL, the queries only for asymmetric MoCo (its keys are frozen)
            trained = [z for z in (z1, z2) if z.requires_grad] or [z1, z2]
            reg = sum(self.regularizer(z) for z in trained) / len(trained)
        else:
            z2_plain = self.base.embed_second(v2)
            reg = self.regularizer(
                z2, z_plain=z2_plain, delta_in=0.0 if delta_in is None else delta_in
            )
        total = loss - self.beta_reg * reg.to(loss.dtype)
        self.opt_enc.zero_grad(set_to_none=True)
        total.backward()
        self.opt_enc.step()
        self.base.after_step()
        if not apply_transform:
            self._update_loss_bar(float(loss.detach()))
        return {"loss": float(loss.detach()), "reg": float(reg.detach())}

    def training_step(
        self, x: torch.Tensor, step: int = 0, total_steps: int = 1
    ) -> dict[str, float]:
        """Both alternating updates on batch ``x``; returns loss, R, Delta H (0 before the
        transform is active) and whether it was active."""
        self.base.check_batch(x)
        step = V.check_int(step, "step", low=0)
        total_steps = V.check_int(total_steps, "total_steps", low=1)
        self.train()
        v1, v2 = self.base.views(x)
        log: dict[str, float] = {"delta_h": 0.0, "active": 0.0}
        on = self.active(step, total_steps)
        transformed = None
        if on:
            log.update(self.transform_step(v1, v2))
            log["active"] = 1.0
            transformed = self._last_transformed
        log.update(self.encoder_step(v1, v2, apply_transform=on, transformed=transformed))
        return log

    def encode(self, x, batch_size: int = 512) -> torch.Tensor:
        return self.base.encode(x, batch_size)


class IECL(IECLWrapper):
    """IE-CL on SimCLR (``base="simclr"``, the default), MoCo v2 (``base="moco"``, its
    default queue and momentum) or BYOL-lite (``base="byol"``)."""

    def __init__(
        self,
        encoder: nn.Module,
        feat_dim: int | None = None,
        proj_dim: int = 128,
        temperature: float = 0.2,
        transform: nn.Module | None = None,
        lam_entropy: float = 1.0,
        beta_reg: float = 0.05,
        consistency_margin: float = 0.5,
        consistency_weight: float = 10.0,
        estimator: str = "logdet",
        reg_mode: str = "rate",
        transform_warmup: float = 0.1,
        base: str = "simclr",
        in_ch: int = 3,
        seed: int = 0,
    ):
        V.check_choice(base, "base", BASES)
        if base == "simclr":
            framework = SimCLR(encoder, feat_dim, proj_dim, temperature, seed=seed)
        elif base == "moco":
            framework = MoCo(encoder, feat_dim, proj_dim, temperature, seed=seed)
        else:
            framework = BYOLLite(encoder, feat_dim, proj_dim, seed=seed)
        super().__init__(
            framework, transform, lam_entropy, beta_reg, consistency_margin, consistency_weight,
            estimator, reg_mode, transform_warmup, in_ch=in_ch,
        )  # fmt: skip
