"""Geodesic guidance, the consistency restorer and its training (paper Eq. 9, 10).

The restorer's network predicts the flow-style velocity ``v ~ eps - x0`` of the bridge state;
the one-step map is the analytic inversion ``F = (x_t - A y - B v) / C`` of the bridge equation
(:meth:`CGBBridge.solve`), so ``F(x, y, 0) = x`` holds by construction. Training is
consistency training along the bridge: the continuous objective (sCM-style, default) pulls
``F`` towards ``sg[F - c dF/dt]`` with the total derivative taken by ``torch.func.jvp`` along
the tangent ``(u_t, 1)``; the discrete one matches ``F`` at adjacent times with an EMA teacher.
Sampling starts at ``(1 - T0) y + T0 eps0`` and re-uses ``eps0`` at every step."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from iclr26 import validation as V
from iclr26.generative.cgb.bridge import CGBBridge, _bcast, check_T0
from iclr26.generative.cgb.network import TinyUNet, as_batch, to_signed, to_unit

TANGENTS = ("mix", "pair", "teacher")
OBJECTIVES = ("continuous", "discrete")
RENOISE = ("start", "fresh")
Y_RANGE = (-1.0, 2.0)  # degraded [0, 1] images: noise may leave [0, 1], not this band


class GeodesicGuidance:
    """The pretrained rectified-flow network as the guidance field: at a bridge state it gives
    ``x0_hat = x - t v`` and ``eps_hat = x + (1 - t) v``. With ``strength`` g the tangent's
    clean image is ``(1 - lambda_t) x0 + lambda_t x0_hat``, ``lambda_t = g t / T0``; g = 0 is
    the plain bridge."""

    def __init__(self, velocity_model: torch.nn.Module | None, strength: float = 1.0):
        self.strength = V.check_scalar(strength, "strength", low=0.0, high=1.0)
        if velocity_model is not None and not callable(velocity_model):
            raise TypeError("velocity_model must be a callable network v(x, t)")
        self.velocity_model = velocity_model

    @torch.no_grad()
    def estimate(self, x: torch.Tensor, t: torch.Tensor):
        v = self.velocity_model(x, t)
        tt = _bcast(t, x)
        return x - tt * v, x + (1 - tt) * v

    def tangent(self, bridge: CGBBridge, x, x0, y, eps, t, mode: str = "mix") -> torch.Tensor:
        """``d x_t / dt`` used by the consistency objective (``mode`` in mix/pair/teacher)."""
        mode = V.check_choice(mode, "tangent", TANGENTS)
        if mode == "pair" or self.strength == 0.0 or self.velocity_model is None:
            return bridge.velocity(x0, y, eps, t)
        x0_hat, eps_hat = self.estimate(x, t)
        if mode == "teacher":
            return bridge.velocity(x0_hat, y, eps_hat, t)
        lam = self.strength * _bcast(t, x) / bridge.T0
        return bridge.velocity((1 - lam) * x0 + lam * x0_hat, y, eps, t)


def degrade_signed(x: torch.Tensor, task: str, sigma: float, generator=None) -> torch.Tensor:
    """The degradations of :mod:`degrade` on [-1, 1] images (both are affine-equivariant)."""
    if task == "denoise":
        return x + 2 * sigma * torch.randn(x.shape, generator=generator).to(x.device)
    low = F.avg_pool2d(x, 4)
    return F.interpolate(low, scale_factor=4, mode="bicubic", align_corners=False)


def bridge_sample(
    velocity_fn: Callable,
    y: torch.Tensor,
    bridge: CGBBridge,
    nfe: int = 1,
    eps0: torch.Tensor | None = None,
    renoise: str = "start",
    generator=None,
    return_states: bool = False,
    shift_mu: float | None = None,
):
    """The few-step bridge sampler on the grid ``t_i = T0 (1 - i / nfe)``: predict ``v``, form
    ``x0_hat = F(x_ti)``, move to the marginal at ``t_{i+1}`` built from ``x0_hat``, ``y`` and
    the start noise ``eps0`` (``renoise="fresh"``: new noise). ``shift_mu`` passes the grid
    ``1 - i / nfe`` through Flux's time shift ``e^mu / (e^mu + 1/s - 1)`` before scaling by
    ``T0`` (the released sampler); ``None`` keeps it uniform. Exactly ``nfe`` calls of
    ``velocity_fn(x, t)``; returns ``x0_hat`` (and the visited states)."""
    nfe = V.check_int(nfe, "nfe", low=1)
    renoise = V.check_choice(renoise, "renoise", RENOISE)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {generator!r}")
    if shift_mu is not None:
        shift_mu = V.check_scalar(shift_mu, "shift_mu", low=-10.0, high=10.0)
    if eps0 is None:
        eps0 = torch.randn(y.shape, generator=generator, dtype=y.dtype).to(y.device)
    ts = [bridge.T0 * time_shift(1 - i / nfe, shift_mu) for i in range(nfe + 1)]
    x = bridge.start(y, eps0)
    states = [x]
    x0_hat = x
    for i in range(nfe):
        t = torch.full((y.shape[0],), ts[i], dtype=y.dtype, device=y.device)
        x0_hat = bridge.solve(x, y, velocity_fn(x, t), t)
        if i + 1 < nfe:
            eps = (
                eps0
                if renoise == "start"
                else torch.randn(y.shape, generator=generator).to(y.device)
            )
            x = bridge.marginal(x0_hat, y, eps, ts[i + 1])
            states.append(x)
    return (x0_hat, states) if return_states else x0_hat


def time_shift(s: float, mu: float | None) -> float:
    """Flux's resolution-dependent shift ``e^mu / (e^mu + 1/s - 1)`` of a grid point ``s`` in
    [0, 1] (``mu=None``: the identity); it fixes 0 and 1."""
    if mu is None or s <= 0.0 or s >= 1.0:
        return float(s)
    return math.exp(mu) / (math.exp(mu) + 1.0 / s - 1.0)


class CGBRestorer(torch.nn.Module):
    """The consistency geodesic bridge restorer.

    ``velocity_model``: the pretrained rectified-flow network (its weights initialise the
    restorer's; ``None`` starts from a fresh :class:`TinyUNet`). ``guidance``: the geodesic
    guidance strength g; ``tangent``: how the objective's ``dx_t/dt`` is formed; ``kappa``: the
    bridge curvature; ``objective``: ``"continuous"`` (JVP) or ``"discrete"`` (EMA teacher,
    ``n_discrete`` steps); ``T0_range``: training horizons (the network sees ``T0``);
    ``T0``: the default horizon for :meth:`restore`; ``tangent_norm``: sCM's
    ``g / (||g|| + 0.1)`` normalisation of the consistency step; ``c``: its size."""

    def __init__(
        self,
        velocity_model: torch.nn.Module | None = None,
        guidance: float = 1.0,
        tangent: str = "mix",
        kappa: float = 1.0,
        objective: str = "continuous",
        T0_range: tuple[float, float] = (0.1, 0.9),
        T0: float = 0.7,
        tangent_norm: bool = True,
        c: float = 1.0,
        n_discrete: int = 18,
        ema: float = 0.999,
        renoise: str = "start",
        width: int = 32,
    ):
        super().__init__()
        self._set_options(
            velocity_model, guidance, tangent, kappa, objective, T0_range, T0, tangent_norm, c
        )
        self.n_discrete = V.check_int(n_discrete, "n_discrete", low=1)
        self.ema = V.check_scalar(ema, "ema", low=0.0, high=1.0, high_open=True)
        self.renoise = V.check_choice(renoise, "renoise", RENOISE)
        if velocity_model is not None:
            V.check_module_attrs(velocity_model, "velocity_model", ["forward"])
            self.net = copy.deepcopy(velocity_model).train()
        else:
            self.net = TinyUNet(width=V.check_int(width, "width", low=8))

    def _set_options(
        self, velocity_model, guidance, tangent, kappa, objective, T0_range, T0, tangent_norm, c
    ):
        guidance = V.check_scalar(guidance, "guidance", low=0.0, high=1.0)
        self.guidance = GeodesicGuidance(velocity_model, guidance)
        self.tangent = V.check_choice(tangent, "tangent", TANGENTS)
        self.kappa = V.check_scalar(kappa, "kappa", low=0.0, low_open=True, high=10.0)
        self.objective = V.check_choice(objective, "objective", OBJECTIVES)
        lo, hi = (check_T0(v, "T0_range") for v in _pair_of(T0_range, "T0_range"))
        if lo > hi:
            raise ValueError(f"T0_range must be increasing, got {T0_range}")
        self.T0_range = (lo, hi)
        self.T0 = check_T0(T0)
        self.tangent_norm = V.check_bool(tangent_norm, "tangent_norm")
        self.c = V.check_scalar(c, "c", low=0.0, low_open=True)
        self.size: int | None = None
        self.task: str | None = None
        self.losses: list[float] = []

    @classmethod
    def from_diffusers(
        cls,
        transformer="black-forest-labs/FLUX.1-dev",
        adapter: str = "controlnet",
        vae=None,
        controlnet=None,
        torch_dtype: torch.dtype | None = None,
        device: str | torch.device = "cpu",
        prompt: str | None = None,
        **options,
    ):
        """The full-scale restorer on FLUX.1 (paper): a diffusers ``FluxTransformer2DModel``
        as the velocity network and guidance prior, a Flux ControlNet on the latent of ``y``
        (``adapter="controlnet"``, the only adapter) and the ``AutoencoderKL`` latent space.

        ``transformer``, ``vae``, ``controlnet``: built diffusers modules, or hub ids / local
        folders (``vae=None``: the ``vae`` sub-folder of ``transformer``'s; ``controlnet=None``:
        a fresh ControlNet copied from the transformer). With modules it returns a
        :class:`~iclr26.generative.cgb.flux.FluxConsistencyRestorer` on ``device`` (cast to
        ``torch_dtype`` when given); with any id or path a
        :class:`~iclr26.generative.cgb.flux.LazyFluxRestorer`, which loads with
        ``from_pretrained`` (``torch_dtype``) at its first call. ``prompt``: a text condition
        encoded by the pipeline's text encoders (ids / paths only); ``options``: the keywords
        of ``FluxConsistencyRestorer``. Needs ``diffusers``; FLUX.1-dev needs its weights
        and a GPU."""
        from iclr26.generative.cgb.flux import from_diffusers

        return from_diffusers(
            transformer, adapter, vae, controlnet, torch_dtype, device, prompt, **options
        )

    # -- the one-step map -------------------------------------------------------
    def consistency_fn(self, x, y, t, T0, net=None) -> torch.Tensor:
        """``F_theta(x_t, y, t; T0)`` on [-1, 1] tensors (``t``, ``T0`` one per row)."""
        net = self.net if net is None else net
        bridge = CGBBridge.batched(_bcast(T0, x), self.kappa)
        return bridge.solve(x, y, net(x, t, y, T0), t)

    def forward(self, x, y, t, T0) -> torch.Tensor:
        """The one-step map :meth:`consistency_fn` (``[-1, 1]`` tensors, one t / T0 per row)."""
        return self.consistency_fn(x, y, t, T0)

    # -- training ---------------------------------------------------------------
    def fit(
        self,
        clean,
        degrade: str = "sr4",
        steps: int = 600,
        lr: float = 2e-4,
        batch_size: int = 64,
        sigma: float = 0.2,
        seed: int = 0,
    ) -> CGBRestorer:
        """Consistency training on ``(n, H, W)`` clean [0, 1] patches degraded by ``degrade``
        (``"sr4"`` or ``"denoise"`` with noise ``sigma``). Returns ``self``."""
        x_all = self._images(clean, "clean")
        self.task = V.check_choice(degrade, "degrade", ("denoise", "sr4"))
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True, high=1.0)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        sigma = V.check_scalar(sigma, "sigma", low=0.0, low_open=True, high=1.0)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        torch.manual_seed(seed)
        self.size = x_all.shape[-1]
        dev = self._device()
        x_all = x_all.to(dev)
        self.net.train()
        params = [p for p in self.net.parameters() if p.requires_grad]
        teacher = _copy_sharing_frozen(self.net).eval() if self.objective == "discrete" else None
        opt = torch.optim.Adam(params, lr=lr)
        lo, hi = self.T0_range
        for _ in range(steps):
            x0 = x_all[torch.randint(0, x_all.shape[0], (batch_size,), generator=g).to(dev)]
            y = degrade_signed(x0, self.task, sigma, g)
            x0, y = self._to_bridge(x0), self._to_bridge(y)
            T0 = (lo + (hi - lo) * torch.rand(batch_size, generator=g)).to(dev)
            t = T0 * torch.rand(batch_size, generator=g).clamp_min(1e-3).to(dev)
            eps = torch.randn(x0.shape, generator=g).to(dev)
            loss = self._loss(x0, y, eps, t, T0, teacher)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            if teacher is not None:
                with torch.no_grad():
                    for p_t, p in zip(teacher.parameters(), self.net.parameters(), strict=True):
                        if p.requires_grad:
                            p_t.lerp_(p, 1 - self.ema)
            self.losses.append(float(loss.detach()))
        self.net.eval()
        return self

    def _loss(self, x0, y, eps, t, T0, teacher) -> torch.Tensor:
        bridge = CGBBridge.batched(_bcast(T0, x0), self.kappa)
        x_t = bridge.marginal(x0, y, eps, t)
        u = self.guidance.tangent(bridge, x_t, x0, y, eps, t, self.tangent)
        if self.objective == "continuous":
            with torch.no_grad():
                f_minus, dfdt = self.total_derivative(x_t, y, t, T0, u)
                step = dfdt
                if self.tangent_norm:
                    norm = step.flatten(1).norm(dim=1)
                    step = step / _bcast(norm + 0.1, step)
                target = f_minus - self.c * step
        else:
            t_prev = (t - T0 / self.n_discrete).clamp_min(0.0)
            x_prev = x_t - (_bcast(t, x0) - _bcast(t_prev, x0)) * u
            with torch.no_grad():
                target = self.consistency_fn(x_prev, y, t_prev, T0, net=teacher)
        return (self.consistency_fn(x_t, y, t, T0) - target).pow(2).mean()

    def total_derivative(self, x_t, y, t, T0, u, net=None):
        """``(F, dF/dt)`` with ``dF/dt = dF/dx . u + dF/dt`` by forward-mode AD."""

        def f(x, tt):
            return self.consistency_fn(x, y, tt, T0, net=net)

        # fused attention kernels have no forward-mode derivative; the math kernel has one
        with sdpa_kernel([SDPBackend.MATH]):
            return torch.func.jvp(f, (x_t, t), (u, torch.ones_like(t)))

    # -- restoration ------------------------------------------------------------
    @torch.no_grad()
    def restore(self, y, nfe: int = 1, T0: float | None = None, seed: int = 0) -> np.ndarray:
        """Restore ``(n, H, W)`` degraded images (values in [-1, 2], the training size) with
        ``nfe`` network evaluations at horizon ``T0`` (default ``self.T0``). Returns
        ``(n, H, W)`` float32 images clipped to [0, 1]."""
        self._check_ready()
        y_pix = self._images(y, "y", size=self.size, low=Y_RANGE[0], high=Y_RANGE[1])
        nfe = V.check_int(nfe, "nfe", low=1)
        T0 = self.T0 if T0 is None else check_T0(T0)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        self.net.eval()
        yb = self._to_bridge(y_pix.to(self._device()))
        T0_rows = torch.full((yb.shape[0],), T0, device=yb.device)
        out = bridge_sample(
            lambda x, t: self.net(x, t, yb, T0_rows),
            yb,
            CGBBridge(T0, self.kappa),
            nfe=nfe,
            renoise=self.renoise,
            generator=g,
            shift_mu=self._shift_mu(yb),
        )
        return self._output(to_unit(self._from_bridge(out)).clamp(0, 1), y)

    predict = restore

    # -- hooks: pixel images <-> the space the bridge runs in (pixels here) -------
    def _check_ready(self):
        if self.size is None:
            raise RuntimeError("CGBRestorer is not fitted; call fit() first")

    def _device(self):
        return next(self.net.parameters()).device

    def _images(self, images, name, size=None, low=0.0, high=1.0) -> torch.Tensor:
        """Validated images as a ``[-1, 1]``-scaled ``(n, 1, H, W)`` tensor."""
        return to_signed(as_batch(images, name, size=size, low=low, high=high))

    def _to_bridge(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def _from_bridge(self, z: torch.Tensor) -> torch.Tensor:
        return z

    def _shift_mu(self, yb: torch.Tensor) -> float | None:
        return None

    def _output(self, x: torch.Tensor, like) -> np.ndarray:
        return x[:, 0].cpu().numpy()

    def tune_T0(self, val_clean, grid=None, nfe: int = 1, sigma: float = 0.2, seed: int = 0):
        """The horizon on ``grid`` (default 9 points in [0.1, 0.9]) with the best mean PSNR
        on ``val_clean`` degraded like the training data; sets ``self.T0`` and returns it."""
        from iclr26.generative.cgb.degrade import degrade as degrade_fn
        from iclr26.generative.cgb.evaluate import psnr

        if self.size is None:
            raise RuntimeError("CGBRestorer is not fitted; call fit() first")
        clean = as_batch(val_clean, "val_clean", size=self.size)[:, 0].numpy()
        grid = np.linspace(0.1, 0.9, 9) if grid is None else grid
        grid = V.check_array(grid, "grid", ndim=1, low=0.0, high=1.0)
        for value in grid:
            check_T0(value, "grid")
        y = degrade_fn(clean, self.task, sigma=sigma, seed=seed + 1)
        scores = [psnr(self.restore(y, nfe=nfe, T0=float(v), seed=seed), clean) for v in grid]
        self.T0 = float(grid[int(np.argmax(scores))])
        self.tune_scores = dict(zip(map(float, grid), scores, strict=True))
        return self.T0


def _copy_sharing_frozen(net: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``net`` whose frozen parameters (and buffers) are shared, not copied: the
    EMA teacher of an adapter on a frozen foundation model costs only the adapter's memory."""
    memo = {id(p): p for p in net.parameters() if not p.requires_grad}
    memo.update({id(b): b for b in net.buffers()})
    return copy.deepcopy(net, memo)


def _pair_of(value, name):
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (low, high), got {value!r}")
    return value
