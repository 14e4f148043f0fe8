"""Anchor-based 3DGS (Scaffold-GS): each anchor (position p, feature f, scaling l in R^6,
K offsets O) spawns K neural Gaussians whose opacity, colour and covariance come from three
MLPs of [f, view direction]; positions p + O * exp(l[:3]), scales sigmoid(.) * exp(l[3:]).
Neural Gaussians with non-positive opacity are dropped (tanh opacity head). ``fit`` runs
Scaffold-GS training with its anchor growing and pruning (:mod:`.growing`) and, optionally,
HAC's training proxy for quantization: uniform noise U(-q/2, q/2) with a fixed step q on the
anchor features (from 3/10 of the run, as from step 3k of the first 10k) and on the anchor
scalings and offsets (every step, as in the CompMarkGS release)."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.gs_raster import Camera, project, render


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


def check_views(views, cameras) -> tuple[torch.Tensor, list[Camera]]:
    """Views (V, H, W, 3) in [0, 1] and one camera per view of matching size."""
    V.check_tensor(
        views, "views", ndim=4, shape=(None, None, None, 3), floating=True, low=0, high=1
    )
    if not isinstance(cameras, list | tuple) or not all(isinstance(c, Camera) for c in cameras):
        raise TypeError("cameras must be a list of gs_raster.Camera")
    V.check_same_length(views=views, cameras=cameras)
    for c in cameras:
        if (c.height, c.width) != tuple(views.shape[1:3]):
            raise ValueError(f"cameras must match the views' size {tuple(views.shape[1:3])}")
    return views, list(cameras)


def check_noise_step(value, name: str) -> float | None:
    """A quantization step for training noise: None (no noise) or a finite number > 0."""
    return V.check_scalar(value, name, low=0, low_open=True, allow_none=True)


def uniform_noise(
    x: torch.Tensor, step: float | torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``x + u * step`` with u ~ U(-1/2, 1/2) per entry: HAC's differentiable stand-in for
    rounding to multiples of ``step``. u is drawn on the CPU (the same stream on every
    device) and then moved to ``x``."""
    u = torch.rand(x.shape, generator=generator, dtype=x.dtype).to(x.device) - 0.5
    return x + u * step


def check_same_device(name: str, tensor: torch.Tensor, device: torch.device) -> None:
    """``tensor`` must live on ``device`` (the model's): a clear error instead of a deep one."""
    if tensor.device != device:
        raise ValueError(f"{name} must be on the model's device {device}, got {tensor.device}")


class AnchorGS(nn.Module):
    """Scaffold-GS anchors with ``k`` neural Gaussians each (feature width ``feature_dim``).
    The model lives on the device of ``points`` (parameters are drawn on the CPU first, so the
    initial model is the same on every device)."""

    def __init__(
        self,
        points: torch.Tensor,
        *,
        feature_dim: int = 16,
        k: int = 4,
        voxel: float = 0.05,
        seed: int = 0,
    ):
        super().__init__()
        V.check_tensor(points, "points", ndim=2, shape=(None, 3), floating=True)
        self.feature_dim = V.check_int(feature_dim, "feature_dim", low=1)
        self.k = V.check_int(k, "k", low=1)
        voxel = V.check_scalar(voxel, "voxel", low=0, low_open=True)
        self.voxel = voxel
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        cpu_points = points.detach().cpu()
        anchors = torch.unique(torch.round(cpu_points.double() / voxel), dim=0).float() * voxel
        n = anchors.shape[0]
        self.anchor = nn.Parameter(anchors)
        self.feature = nn.Parameter(torch.zeros(n, feature_dim))
        self.scaling = nn.Parameter(torch.full((n, 6), float(torch.log(torch.tensor(voxel)))))
        self.offset = nn.Parameter(0.1 * torch.randn(n, k, 3, generator=g))
        d = feature_dim + 3
        self.mlp_opacity = _mlp(d, feature_dim, k)
        self.mlp_color = _mlp(d, feature_dim, 3 * k)
        self.mlp_cov = _mlp(d, feature_dim, 7 * k)
        with torch.no_grad():  # start near Scaffold-GS's anchor opacity 0.1
            self.mlp_opacity[2].bias.fill_(0.1)
        self.to(points.device)

    @property
    def n_anchors(self) -> int:
        return int(self.anchor.shape[0])

    def neural_gaussians(
        self,
        camera: Camera,
        features: torch.Tensor | None = None,
        *,
        keep_all: bool = False,
        scaling: torch.Tensor | None = None,
        offset: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Neural Gaussians for ``camera`` from ``features`` (default: the anchor features),
        with ``keep`` (N*K,) the mask of positive opacity and ``opacity_all`` (N*K,) the raw
        tanh opacities that the growing statistics read. ``scaling`` (N, 6) replaces the
        activated anchor scaling exp(l) and ``offset`` (N, K, 3) the offsets (noisy or rounded
        copies; default: the model's own)."""
        f = self.feature if features is None else features
        if scaling is not None and tuple(scaling.shape) != (self.n_anchors, 6):
            raise ValueError(f"scaling must have shape ({self.n_anchors}, 6)")
        if offset is not None and tuple(offset.shape) != (self.n_anchors, self.k, 3):
            raise ValueError(f"offset must have shape ({self.n_anchors}, {self.k}, 3)")
        view = self.anchor - camera.center.to(self.anchor)
        view = view / view.norm(dim=1, keepdim=True).clamp_min(1e-8)
        x = torch.cat([f, view], dim=1)
        n, k = self.n_anchors, self.k
        opacity = torch.tanh(self.mlp_opacity(x)).reshape(n * k)
        color = torch.sigmoid(self.mlp_color(x)).reshape(n * k, 3)
        cov = self.mlp_cov(x).reshape(n, k, 7)
        s = torch.exp(self.scaling) if scaling is None else scaling
        o = self.offset if offset is None else offset
        scales = torch.sigmoid(cov[..., :3]) * s[:, None, 3:]
        quats = nn.functional.normalize(cov[..., 3:], dim=-1)
        means = self.anchor[:, None, :] + o * s[:, None, :3]
        keep = opacity > 0
        return dict(
            means=means.reshape(n * k, 3)[keep],
            scales=scales.reshape(n * k, 3)[keep].clamp_min(1e-6),
            quats=quats.reshape(n * k, 4)[keep],
            opacities=opacity[keep],
            colors=color[keep],
            keep=keep,
            opacity_all=opacity,
        )

    def gaussians(
        self,
        camera: Camera,
        features: torch.Tensor | None = None,
        *,
        scaling: torch.Tensor | None = None,
        offset: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Neural Gaussians for ``camera`` from ``features`` (default: the anchor features),
        as keyword arguments of ``gs_raster.render`` (``scaling``, ``offset``: as in
        :meth:`neural_gaussians`)."""
        g = self.neural_gaussians(camera, features, scaling=scaling, offset=offset)
        del g["keep"], g["opacity_all"]
        return g

    @torch.no_grad()
    def visible_anchors(self, camera: Camera) -> torch.Tensor:
        """(N,) bool: anchors whose Gaussian of scale exp(l[:3]) lands on the image (the
        view-frustum prefilter of Scaffold-GS)."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a gs_raster.Camera, got {type(camera).__name__}")
        quats = torch.zeros(self.n_anchors, 4, dtype=self.anchor.dtype, device=self.anchor.device)
        quats[:, 0] = 1.0
        return project(self.anchor, torch.exp(self.scaling[:, :3]), quats, camera).radii > 0

    def render(
        self,
        camera: Camera,
        features: torch.Tensor | None = None,
        background=(0.0, 0.0, 0.0),
        *,
        scaling: torch.Tensor | None = None,
        offset: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The (H, W, 3) image of ``camera`` (``scaling``, ``offset``: as in
        :meth:`neural_gaussians`)."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a gs_raster.Camera, got {type(camera).__name__}")
        g = self.gaussians(camera, features, scaling=scaling, offset=offset)
        return render(**g, camera=camera, background=list(background)).image

    @classmethod
    def fit(
        cls,
        views,
        cameras,
        points,
        *,
        steps: int = 200,
        lr: float = 0.01,
        seed: int = 0,
        grow_every: int | None = None,
        grow_from: int = 0,
        grow_until: int | None = None,
        max_anchors: int | None = None,
        grow_voxel: float | None = None,
        feature_noise: float | None = None,
        noise_from: int | None = None,
        grow_pause: int | None = None,
        scaling_noise: float | None = None,
        offset_noise: float | None = None,
        **kwargs,
    ) -> AnchorGS:
        """Fit anchors to ``views`` with L_scaffold = 0.65 L1 + 0.35 (1 - SSIM) + 0.01 volume.

        ``grow_every`` (None: a fixed anchor set) runs Scaffold-GS growing and pruning with its
        ordinary thresholds (:data:`.growing.ORDINARY`) every that many steps, statistics
        gathered from step ``grow_from`` to ``grow_until`` (default: the last step), on a growing
        grid whose finest voxel is ``grow_voxel`` (default ``voxel``).

        Quantization noise (HAC / CompMarkGS, training only; None: off): ``feature_noise`` is a
        fixed step q, and the anchor features get U(-q/2, q/2) noise on steps t > ``noise_from``
        (default ``3 * steps // 10``: the paper's steps 3k-10k of this 10k-step phase). Growing
        events at ``noise_from <= t < noise_from + grow_pause`` are skipped so the model adapts
        to the noise (default ``steps // 10`` with feature noise, as 3k-4k; 0 without); the
        statistics keep accumulating. ``scaling_noise`` and ``offset_noise`` add such noise on
        every step to the activated anchor scaling exp(l) and to the offsets O."""
        from .growing import ORDINARY, AnchorGrowth, check_growth_schedule
        from .losses import ssim

        views, cameras = check_views(views, cameras)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        grow_every, grow_from, grow_until = check_growth_schedule(
            grow_every, grow_from, grow_until, steps
        )
        feature_noise = check_noise_step(feature_noise, "feature_noise")
        scaling_noise = check_noise_step(scaling_noise, "scaling_noise")
        offset_noise = check_noise_step(offset_noise, "offset_noise")
        noise_from = (3 * steps) // 10 if noise_from is None else noise_from
        noise_from = V.check_int(noise_from, "noise_from", low=0, high=steps - 1)
        if grow_pause is None:
            grow_pause = steps // 10 if feature_noise is not None else 0
        grow_pause = V.check_int(grow_pause, "grow_pause", low=0)
        model = cls(points, seed=seed, **kwargs)
        check_same_device("views", views, model.anchor.device)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        g = torch.Generator().manual_seed(seed)
        # the noise has its own stream: switching it on leaves the camera order unchanged
        g_noise = torch.Generator().manual_seed(seed + 1)
        growth = None
        if grow_every is not None:
            growth = AnchorGrowth(model, generator=g, max_anchors=max_anchors, voxel=grow_voxel)
        model.growth_log = []
        for t in range(1, steps + 1):
            i = int(torch.randint(len(cameras), (1,), generator=g))
            cam, target = cameras[i], views[i]
            gathering = growth is not None and grow_from <= t <= grow_until
            f, s, o = model.feature, None, None
            if feature_noise is not None and t > noise_from:
                f = uniform_noise(f, feature_noise, g_noise)
            if scaling_noise is not None:
                s = uniform_noise(torch.exp(model.scaling), scaling_noise, g_noise)
            if offset_noise is not None:
                o = uniform_noise(model.offset, offset_noise, g_noise)
            info = model.neural_gaussians(cam, f, scaling=s, offset=o)
            out = render(
                **{k: info[k] for k in ("means", "scales", "quats", "opacities", "colors")},
                camera=cam,
                background=[0.0, 0.0, 0.0],
            )
            if gathering:
                out.means2d.retain_grad()
            img = out.image
            vol = torch.exp(model.scaling[:, 3:]).prod(dim=1).mean()
            loss = 0.65 * (img - target).abs().mean() + 0.35 * (1 - ssim(img, target)) + 0.01 * vol
            opt.zero_grad()
            loss.backward()
            if gathering:
                growth.accumulate(info, out, model.visible_anchors(cam), cam)
                paused = 0 <= t - noise_from < grow_pause
                if t % grow_every == 0 and not paused:
                    model.growth_log.append(
                        growth.adjust(opt, **ORDINARY, check_interval=grow_every)
                    )
            opt.step()
        return model
