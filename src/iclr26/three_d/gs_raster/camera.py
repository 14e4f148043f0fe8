"""Pinhole cameras for the rasterizer (OpenCV convention: x right, y down, z forward).

A camera holds the world-to-camera rigid transform ``[R | t]`` (``x_cam = R x_world + t``), the
focal lengths and principal point in pixels, the image size and the near/far planes. Pixel
``(u, v)`` covers ``[u, u+1) x [v, v+1)``; its centre is ``(u + 0.5, v + 0.5)``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from iclr26 import validation as V


def _vec3(value, name: str) -> torch.Tensor:
    """A length-3 real vector as a float64 tensor (checked through ``check_tensor``)."""
    try:
        vec = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be a length-3 sequence of numbers, got {value!r}") from err
    return V.check_tensor(vec, name, shape=(3,), floating=True)


@dataclass(frozen=True)
class Camera:
    """A pinhole camera. ``rotation`` (3, 3) and ``translation`` (3,) map world to camera
    coordinates; ``fx, fy, cx, cy`` are in pixels; ``near``/``far`` bound the visible depth."""

    rotation: torch.Tensor
    translation: torch.Tensor
    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int
    near: float = 0.01
    far: float = 1e10

    def __post_init__(self) -> None:
        V.check_tensor(self.rotation, "rotation", shape=(3, 3), floating=True)
        V.check_tensor(self.translation, "translation", shape=(3,), floating=True)
        eye = torch.eye(3, dtype=self.rotation.dtype)
        rtr = self.rotation.detach().cpu() @ self.rotation.detach().cpu().T
        if not torch.allclose(rtr, eye, atol=1e-4) or torch.det(self.rotation.detach()) < 0:
            raise ValueError("rotation must be a proper rotation matrix (R R^T = I, det R = +1)")
        object.__setattr__(self, "fx", V.check_scalar(self.fx, "fx", low=0, low_open=True))
        object.__setattr__(self, "fy", V.check_scalar(self.fy, "fy", low=0, low_open=True))
        object.__setattr__(self, "cx", V.check_scalar(self.cx, "cx"))
        object.__setattr__(self, "cy", V.check_scalar(self.cy, "cy"))
        object.__setattr__(self, "width", V.check_int(self.width, "width", low=1))
        object.__setattr__(self, "height", V.check_int(self.height, "height", low=1))
        near = V.check_scalar(self.near, "near", low=0, low_open=True)
        far = V.check_scalar(self.far, "far", low=near, low_open=True)
        object.__setattr__(self, "near", near)
        object.__setattr__(self, "far", far)

    @property
    def center(self) -> torch.Tensor:
        """The camera centre in world coordinates, ``-R^T t``."""
        return -(self.rotation.T @ self.translation)

    def to(self, dtype: torch.dtype | None = None, device=None) -> Camera:
        return Camera(
            self.rotation.to(dtype=dtype, device=device),
            self.translation.to(dtype=dtype, device=device),
            self.fx,
            self.fy,
            self.cx,
            self.cy,
            self.width,
            self.height,
            self.near,
            self.far,
        )

    def intrinsics(self) -> torch.Tensor:
        """The 3x3 matrix K."""
        k = torch.zeros(3, 3, dtype=self.rotation.dtype, device=self.rotation.device)
        k[0, 0], k[1, 1], k[0, 2], k[1, 2], k[2, 2] = self.fx, self.fy, self.cx, self.cy, 1.0
        return k

    def viewmat(self) -> torch.Tensor:
        """The 4x4 world-to-camera matrix."""
        m = torch.eye(4, dtype=self.rotation.dtype, device=self.rotation.device)
        m[:3, :3] = self.rotation
        m[:3, 3] = self.translation
        return m

    @classmethod
    def look_at(
        cls,
        eye,
        target=(0.0, 0.0, 0.0),
        up=(0.0, 0.0, 1.0),
        *,
        width: int = 64,
        height: int = 64,
        fov_deg: float = 50.0,
        near: float = 0.01,
        far: float = 1e10,
        dtype: torch.dtype = torch.float32,
    ) -> Camera:
        """A camera at ``eye`` looking at ``target``; ``up`` (world) appears upwards in the
        image; ``fov_deg`` is the horizontal field of view; square pixels, centred principal
        point."""
        eye_t, tgt, up_t = _vec3(eye, "eye"), _vec3(target, "target"), _vec3(up, "up")
        fov = V.check_scalar(fov_deg, "fov_deg", low=0, high=180, low_open=True, high_open=True)
        forward = tgt - eye_t
        if forward.norm() < 1e-12:
            raise ValueError("eye must differ from target")
        forward = forward / forward.norm()
        right = torch.linalg.cross(forward, up_t)
        if right.norm() < 1e-9:
            raise ValueError("up must not be parallel to the viewing direction")
        right = right / right.norm()
        down = torch.linalg.cross(forward, right)
        rot = torch.stack([right, down, forward])  # rows: camera axes in world coordinates
        trans = -(rot @ eye_t)
        width = V.check_int(width, "width", low=1)
        height = V.check_int(height, "height", low=1)
        focal = 0.5 * width / math.tan(math.radians(fov) / 2)
        return cls(
            rot.to(dtype),
            trans.to(dtype),
            focal,
            focal,
            width / 2,
            height / 2,
            width,
            height,
            near,
            far,
        )


def orbit_cameras(
    n: int,
    *,
    radius: float = 3.0,
    elevation_deg: float = 20.0,
    arc_deg: float = 360.0,
    start_deg: float = 0.0,
    target=(0.0, 0.0, 0.0),
    width: int = 64,
    height: int = 64,
    fov_deg: float = 50.0,
    dtype: torch.dtype = torch.float32,
) -> list[Camera]:
    """``n`` cameras on a horizontal circle (z up) of ``radius`` around ``target``, at
    ``elevation_deg`` above it, spread over ``arc_deg`` degrees from ``start_deg``, all
    looking at ``target``. A full circle does not repeat its first view."""
    n = V.check_int(n, "n", low=1)
    radius = V.check_scalar(radius, "radius", low=0, low_open=True)
    elev = V.check_scalar(elevation_deg, "elevation_deg", low=-89.0, high=89.0)
    arc = V.check_scalar(arc_deg, "arc_deg", low=0, high=360.0)
    start = V.check_scalar(start_deg, "start_deg")
    tgt = _vec3(target, "target").tolist()
    steps = n if arc >= 360.0 else max(n - 1, 1)
    cams = []
    for i in range(n):
        az = math.radians(start + arc * i / steps)
        el = math.radians(elev)
        eye = [
            tgt[0] + radius * math.cos(el) * math.cos(az),
            tgt[1] + radius * math.cos(el) * math.sin(az),
            tgt[2] + radius * math.sin(el),
        ]
        cams.append(
            Camera.look_at(eye, tgt, width=width, height=height, fov_deg=fov_deg, dtype=dtype)
        )
    return cams
