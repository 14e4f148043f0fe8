"""Anchor-based 3DGS (Scaffold-GS): each anchor (position p, feature f, scaling l in R^6,
K offsets O) spawns K neural Gaussians whose opacity, colour and covariance come from three
MLPs of [f, view direction]; positions p + O * exp(l[:3]), scales sigmoid(.) * exp(l[3:]).
Neural Gaussians with non-positive opacity are dropped (tanh opacity head)."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.gs_raster import Camera, render


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


class AnchorGS(nn.Module):
    """Scaffold-GS anchors with ``k`` neural Gaussians each (feature width ``feature_dim``)."""

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
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        anchors = torch.unique(torch.round(points.double() / voxel), dim=0).float() * voxel
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

    @property
    def n_anchors(self) -> int:
        return int(self.anchor.shape[0])

    def gaussians(
        self, camera: Camera, features: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Neural Gaussians for ``camera`` from ``features`` (default: the anchor features)."""
        f = self.feature if features is None else features
        view = self.anchor - camera.center.to(self.anchor)
        view = view / view.norm(dim=1, keepdim=True).clamp_min(1e-8)
        x = torch.cat([f, view], dim=1)
        n, k = self.n_anchors, self.k
        opacity = torch.tanh(self.mlp_opacity(x)).reshape(n * k)
        color = torch.sigmoid(self.mlp_color(x)).reshape(n * k, 3)
        cov = self.mlp_cov(x).reshape(n, k, 7)
        s = torch.exp(self.scaling)
        scales = torch.sigmoid(cov[..., :3]) * s[:, None, 3:]
        quats = nn.functional.normalize(cov[..., 3:], dim=-1)
        means = self.anchor[:, None, :] + self.offset * s[:, None, :3]
        keep = opacity > 0
        return dict(
            means=means.reshape(n * k, 3)[keep],
            scales=scales.reshape(n * k, 3)[keep].clamp_min(1e-6),
            quats=quats.reshape(n * k, 4)[keep],
            opacities=opacity[keep],
            colors=color[keep],
        )

    def render(
        self, camera: Camera, features: torch.Tensor | None = None, background=(0.0, 0.0, 0.0)
    ) -> torch.Tensor:
        """The (H, W, 3) image of ``camera``."""
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a gs_raster.Camera, got {type(camera).__name__}")
        g = self.gaussians(camera, features)
        return render(**g, camera=camera, background=list(background)).image

    @classmethod
    def fit(
        cls, views, cameras, points, *, steps: int = 200, lr: float = 0.01, seed: int = 0, **kwargs
    ) -> AnchorGS:
        """Fit anchors to ``views`` with L_scaffold = 0.65 L1 + 0.35 (1 - SSIM) + 0.01 volume."""
        from .losses import scaffold_loss

        views, cameras = check_views(views, cameras)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        model = cls(points, seed=seed, **kwargs)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        g = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            i = int(torch.randint(len(cameras), (1,), generator=g))
            loss = scaffold_loss(model, cameras[i], views[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return model
