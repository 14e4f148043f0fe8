"""BYOL-lite: the second base framework for the plug-in check (Claim C).

Online encoder + projector + predictor regress the target network's projection of the other
view (symmetrised ``2 - 2 cos``); the target is an exponential moving average of the online
weights (``tau_ema``, constant here instead of BYOL's cosine ramp).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.vision.iecl.simclr import TwoViewFramework, mlp


class BYOLLite(TwoViewFramework):
    def __init__(
        self,
        encoder,
        feat_dim: int | None = None,
        proj_dim: int = 128,
        hidden_dim: int = 256,
        tau_ema: float = 0.99,
        seed: int = 0,
    ):
        super().__init__(encoder, feat_dim, proj_dim, hidden_dim, seed)
        self.tau_ema = V.check_scalar(tau_ema, "tau_ema", low=0.0, high=1.0, high_open=True)
        self.predictor = mlp(self.proj_dim, hidden_dim, self.proj_dim)
        self.target_encoder = copy.deepcopy(self.encoder)
        self.target_projector = copy.deepcopy(self.projector)
        for p in list(self.target_encoder.parameters()) + list(self.target_projector.parameters()):
            p.requires_grad_(False)

    def _target(self, v: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.target_projector(self.target_encoder(v))

    def pair_loss(self, v1: torch.Tensor, v2: torch.Tensor):
        z1, z2 = self.embed(v1), self.embed(v2)
        p1, p2 = self.predictor(z1), self.predictor(z2)
        t1, t2 = self._target(v1), self._target(v2)
        loss = (2 - 2 * F.cosine_similarity(p1, t2, dim=1)).mean() + (
            2 - 2 * F.cosine_similarity(p2, t1, dim=1)
        ).mean()
        return loss, z1, z2

    @torch.no_grad()
    def after_step(self) -> None:
        pairs = [(self.target_encoder, self.encoder), (self.target_projector, self.projector)]
        for target, online in pairs:
            for pt, po in zip(target.parameters(), online.parameters()):
                pt.mul_(self.tau_ema).add_(po.detach(), alpha=1 - self.tau_ema)
            for bt, bo in zip(target.buffers(), online.buffers()):
                bt.copy_(bo)
