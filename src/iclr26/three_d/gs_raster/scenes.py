"""Synthetic Gaussian scenes for tests, claims and benchmarks: random blobs around the origin
and textured planes whose Gaussians take their colours from scikit-image pictures."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

from .camera import _vec3
from .sh import rgb_to_sh0

TEXTURES = ("astronaut", "coffee", "brick", "chelsea", "grass", "camera", "rocket", "gravel")


@dataclass
class GaussianScene:
    """Gaussian parameters in the form :func:`render` takes them (``sh`` (N, K, 3))."""

    means: torch.Tensor
    scales: torch.Tensor
    quats: torch.Tensor
    opacities: torch.Tensor
    sh: torch.Tensor

    def __len__(self) -> int:
        return int(self.means.shape[0])

    def as_kwargs(self) -> dict[str, torch.Tensor]:
        return {
            "means": self.means,
            "scales": self.scales,
            "quats": self.quats,
            "opacities": self.opacities,
            "sh": self.sh,
        }

    def cat(self, other: GaussianScene) -> GaussianScene:
        k = max(self.sh.shape[1], other.sh.shape[1])

        def pad(s):
            return torch.nn.functional.pad(s, (0, 0, 0, k - s.shape[1]))

        return GaussianScene(
            torch.cat([self.means, other.means]),
            torch.cat([self.scales, other.scales]),
            torch.cat([self.quats, other.quats]),
            torch.cat([self.opacities, other.opacities]),
            torch.cat([pad(self.sh), pad(other.sh)]),
        )


def random_scene(
    n: int,
    *,
    seed: int = 0,
    extent: float = 1.0,
    scale_range: tuple[float, float] = (0.03, 0.15),
    opacity_range: tuple[float, float] = (0.3, 0.9),
    sh_degree: int = 0,
    sh_noise: float = 0.1,
    dtype: torch.dtype = torch.float32,
) -> GaussianScene:
    """``n`` Gaussians with means uniform in the cube ``[-extent, extent]^3``, log-uniform
    anisotropic scales in ``scale_range``, uniformly random rotations, uniform opacities and
    random colours (higher SH bands ~ N(0, sh_noise^2))."""
    n = V.check_int(n, "n", low=0)
    extent = V.check_scalar(extent, "extent", low=0, low_open=True)
    lo, hi = (V.check_scalar(v, "scale_range", low=0, low_open=True) for v in scale_range)
    if hi < lo:
        raise ValueError("scale_range must be (low, high) with low <= high")
    o_lo, o_hi = (V.check_probability(v, "opacity_range") for v in opacity_range)
    sh_degree = V.check_int(sh_degree, "sh_degree", low=0, high=3)
    sh_noise = V.check_scalar(sh_noise, "sh_noise", low=0)
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    means = rng.uniform(-extent, extent, (n, 3))
    scales = np.exp(rng.uniform(math.log(lo), math.log(hi), (n, 3)))
    quats = rng.normal(size=(n, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    opac = rng.uniform(min(o_lo, o_hi), max(o_lo, o_hi), n)
    k = (sh_degree + 1) ** 2
    sh = rng.normal(0, sh_noise, (n, k, 3))
    sh[:, 0] = rgb_to_sh0(torch.as_tensor(rng.uniform(0.1, 0.9, (n, 3)))).numpy()

    def t(a):
        return torch.as_tensor(a, dtype=dtype)

    return GaussianScene(t(means), t(scales), t(quats), t(opac), t(sh))


def texture(name: str, size: int = 64, *, seed: int = 0) -> torch.Tensor:
    """A (size, size, 3) float texture in [0, 1]: a random square crop of the scikit-image
    picture ``name`` (grey pictures repeated over three channels), resized."""
    from skimage import data
    from skimage.transform import resize

    name = V.check_choice(name, "name", TEXTURES)
    size = V.check_int(size, "size", low=2, high=512)
    img = np.asarray(getattr(data, name)(), dtype=np.float64)
    if img.max() > 1.0:
        img = img / 255.0
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    img = img[..., :3]
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    side = min(img.shape[0], img.shape[1]) // 2
    y0 = int(rng.integers(0, img.shape[0] - side + 1))
    x0 = int(rng.integers(0, img.shape[1] - side + 1))
    crop = img[y0 : y0 + side, x0 : x0 + side]
    return torch.as_tensor(resize(crop, (size, size, 3), anti_aliasing=True), dtype=torch.float32)


def textured_plane(
    tex: torch.Tensor,
    *,
    center=(0.0, 0.0, 0.0),
    size: float = 2.0,
    normal_axis: int = 2,
    opacity: float = 0.95,
    dtype: torch.dtype = torch.float32,
) -> GaussianScene:
    """A square plane of flat Gaussians (one per texel of ``tex`` (R, R, 3)), perpendicular to
    world axis ``normal_axis``, side ``size``, centred at ``center``; colours from the texture."""
    V.check_tensor(tex, "tex", ndim=3, shape=(None, None, 3), floating=True, low=0.0, high=1.0)
    if tex.shape[0] != tex.shape[1]:
        raise ValueError(f"tex must be square, got shape {tuple(tex.shape)}")
    c = _vec3(center, "center")
    size = V.check_scalar(size, "size", low=0, low_open=True)
    normal_axis = V.check_int(normal_axis, "normal_axis", low=0, high=2)
    opacity = V.check_probability(opacity, "opacity")
    r = tex.shape[0]
    step = size / r
    coords = (torch.arange(r, dtype=torch.float64) + 0.5) * step - size / 2
    gv, gu = torch.meshgrid(coords, coords, indexing="ij")
    axes = [a for a in range(3) if a != normal_axis]
    means = torch.zeros(r * r, 3, dtype=torch.float64)
    means[:, axes[0]] = gu.reshape(-1)
    means[:, axes[1]] = -gv.reshape(-1)
    means += c
    scales = torch.full((r * r, 3), 0.6 * step, dtype=torch.float64)
    scales[:, normal_axis] = 0.02 * step
    quats = torch.zeros(r * r, 4, dtype=torch.float64)
    quats[:, 0] = 1.0
    sh = rgb_to_sh0(tex.reshape(-1, 3).to(torch.float64))[:, None, :]
    opac = torch.full((r * r,), opacity, dtype=torch.float64)
    return GaussianScene(
        means.to(dtype), scales.to(dtype), quats.to(dtype), opac.to(dtype), sh.to(dtype)
    )
