"""Baselines trained with the same network, initialisation and budget as the restorer.

:class:`FlowMatchingRestorer` (B1) is conditional flow matching from pure noise (the full
reference process, ``t in [0, 1]``, ``y`` as condition) sampled by the Euler ODE solver with
``nfe`` steps. :class:`BrownianBridgeRestorer` (B2) is the plain (I2SB-style) bridge
``x_t = (1 - t) x0 + t y + sqrt(t (1 - t)) sigma_b eps`` with an ``x0``-predicting network,
which at 1 NFE maps ``y`` to ``x0_hat`` directly."""

from __future__ import annotations

import copy

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.generative.cgb.network import TinyUNet, as_batch, to_signed, to_unit
from iclr26.generative.cgb.restorer import Y_RANGE, degrade_signed


class _Trained(torch.nn.Module):
    def __init__(self, velocity_model, width):
        super().__init__()
        if velocity_model is not None:
            V.check_module_attrs(velocity_model, "velocity_model", ["forward"])
            self.net = copy.deepcopy(velocity_model).train()
        else:
            self.net = TinyUNet(width=V.check_int(width, "width", low=8))
        self.size: int | None = None
        self.losses: list[float] = []

    def fit(self, clean, degrade="sr4", steps=600, lr=2e-4, batch_size=64, sigma=0.2, seed=0):
        """Train on ``(n, H, W)`` clean [0, 1] patches degraded by ``degrade``; returns self."""
        x_all = to_signed(as_batch(clean, "clean"))
        task = V.check_choice(degrade, "degrade", ("denoise", "sr4"))
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True, high=1.0)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        sigma = V.check_scalar(sigma, "sigma", low=0.0, low_open=True, high=1.0)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        torch.manual_seed(seed)
        self.size = x_all.shape[-1]
        dev = next(self.net.parameters()).device
        x_all = x_all.to(dev)
        opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.net.train()
        for _ in range(steps):
            x0 = x_all[torch.randint(0, x_all.shape[0], (batch_size,), generator=g).to(dev)]
            y = degrade_signed(x0, task, sigma, g)
            eps = torch.randn(x0.shape, generator=g).to(dev)
            t = torch.rand(batch_size, generator=g).to(dev)
            loss = self._loss(x0, y, eps, t)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            self.losses.append(float(loss.detach()))
        self.net.eval()
        return self

    def _check(self, y, nfe, seed):
        if self.size is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit() first")
        yb = to_signed(as_batch(y, "y", size=self.size, low=Y_RANGE[0], high=Y_RANGE[1]))
        nfe = V.check_int(nfe, "nfe", low=1)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        return yb.to(next(self.net.parameters()).device), nfe, g


class FlowMatchingRestorer(_Trained):
    """B1: ``v(z_t, t; y) ~ eps - x0`` on ``z_t = (1 - t) x0 + t eps``; Euler from noise."""

    def __init__(self, velocity_model: torch.nn.Module | None = None, width: int = 32):
        super().__init__(velocity_model, width)

    def _loss(self, x0, y, eps, t):
        tt = t[:, None, None, None]
        z = (1 - tt) * x0 + tt * eps
        return (self.net(z, t, y) - (eps - x0)).pow(2).mean()

    @torch.no_grad()
    def restore(self, y, nfe: int = 10, seed: int = 0) -> np.ndarray:
        """``nfe`` Euler steps of ``dz/dt = v`` from ``t = 1`` (noise) to 0; [0, 1] output."""
        yb, nfe, g = self._check(y, nfe, seed)
        z = torch.randn(yb.shape, generator=g).to(yb.device)
        ts = torch.linspace(1.0, 0.0, nfe + 1)
        for i in range(nfe):
            t = torch.full((yb.shape[0],), float(ts[i]), device=yb.device)
            z = z + float(ts[i + 1] - ts[i]) * self.net(z, t, yb)
        return to_unit(z).clamp(0, 1)[:, 0].cpu().numpy()


class BrownianBridgeRestorer(_Trained):
    """B2: the plain bridge from ``y`` (t = 1) to ``x0`` (t = 0), ``x0``-prediction."""

    def __init__(
        self, velocity_model: torch.nn.Module | None = None, sigma_b: float = 1.0, width: int = 32
    ):
        super().__init__(velocity_model, width)
        self.sigma_b = V.check_scalar(sigma_b, "sigma_b", low=0.0)

    def _marginal(self, x0, y, eps, t):
        tt = t[:, None, None, None]
        return (1 - tt) * x0 + tt * y + (tt * (1 - tt)).sqrt() * self.sigma_b * eps

    def _loss(self, x0, y, eps, t):
        return (self.net(self._marginal(x0, y, eps, t), t, y) - x0).pow(2).mean()

    @torch.no_grad()
    def restore(self, y, nfe: int = 1, seed: int = 0) -> np.ndarray:
        """``nfe`` deterministic (DDIM-like) bridge steps from ``x_1 = y``; [0, 1] output."""
        yb, nfe, g = self._check(y, nfe, seed)
        x = yb.clone()
        ts = torch.linspace(1.0, 0.0, nfe + 1)
        x0_hat = x
        for i in range(nfe):
            t = torch.full((yb.shape[0],), float(ts[i]), device=yb.device)
            x0_hat = self.net(x, t, yb)
            tn = float(ts[i + 1])
            if tn > 0:
                ti = float(ts[i])
                spread = (ti * (1 - ti)) ** 0.5 * self.sigma_b
                eps_hat = (x - (1 - ti) * x0_hat - ti * yb) / spread if spread > 0 else 0 * x
                x = (1 - tn) * x0_hat + tn * yb + (tn * (1 - tn)) ** 0.5 * self.sigma_b * eps_hat
        return to_unit(x0_hat).clamp(0, 1)[:, 0].cpu().numpy()
