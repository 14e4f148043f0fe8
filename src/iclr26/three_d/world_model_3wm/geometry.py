"""Pinhole geometry shared by the data, the pathways and the baselines.

Conventions used everywhere in the room: pixel ``(i, j)`` (row, column) has its centre at
``u = (j + 0.5, i + 0.5)``; depth is the camera-space z (so a pixel's 3-D point is
``X = z K^-1 [u, 1]``); a relative camera pose ``(R, t)`` maps frame-0 camera coordinates to
frame-1 camera coordinates, ``X1 = R X0 + t``; optical flow is ``u1 - u0`` with channel 0 along
columns (x) and channel 1 along rows (y). Object motions act on frame-0 points about a pivot,
``X' = R_obj (X - pivot) + pivot + t_obj``.
"""

from __future__ import annotations

import torch

from iclr26 import validation as V

__all__ = [
    "axis_angle_to_matrix",
    "camera_flow",
    "composed_flow",
    "matrix_to_axis_angle",
    "object_flow",
    "pixel_grid",
    "triangulate_depth",
    "unproject",
]


def pixel_grid(height: int, width: int, dtype=torch.float32) -> torch.Tensor:
    """Homogeneous pixel centres ``(3, H, W)``: ``(j + 0.5, i + 0.5, 1)``."""
    height = V.check_int(height, "height", low=1)
    width = V.check_int(width, "width", low=1)
    i, j = torch.meshgrid(
        torch.arange(height, dtype=dtype), torch.arange(width, dtype=dtype), indexing="ij"
    )
    return torch.stack([j + 0.5, i + 0.5, torch.ones_like(i)], 0)


def axis_angle_to_matrix(axis_angle: torch.Tensor) -> torch.Tensor:
    """Rodrigues' formula: ``(..., 3)`` axis-angle vectors to ``(..., 3, 3)`` rotations."""
    w = V.check_tensor(axis_angle, "axis_angle", min_ndim=1, floating=True)
    if w.shape[-1] != 3:
        raise ValueError(f"axis_angle must have a last dimension of 3, got {tuple(w.shape)}")
    theta = w.norm(dim=-1, keepdim=True)
    small = theta < 1e-8
    k = w / torch.where(small, torch.ones_like(theta), theta)
    zero = torch.zeros_like(k[..., 0])
    kx, ky, kz = k.unbind(-1)
    cross = torch.stack([zero, -kz, ky, kz, zero, -kx, -ky, kx, zero], -1).reshape(
        *w.shape[:-1], 3, 3
    )
    eye = torch.eye(3, dtype=w.dtype).expand(*w.shape[:-1], 3, 3)
    s = torch.sin(theta)[..., None]
    c = torch.cos(theta)[..., None]
    rot = eye + s * cross + (1 - c) * cross @ cross
    # first-order expansion below 1e-8 rad (the unit axis is undefined there)
    first = torch.stack([zero, -w[..., 2], w[..., 1], w[..., 2], zero, -w[..., 0]], -1)
    first = torch.cat([first, torch.stack([-w[..., 1], w[..., 0], zero], -1)], -1)
    first = eye + first.reshape(*w.shape[:-1], 3, 3)
    return torch.where(small[..., None], first, rot)


def matrix_to_axis_angle(rotation: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`axis_angle_to_matrix` for rotations of angle below pi."""
    rot = V.check_tensor(rotation, "rotation", min_ndim=2, floating=True)
    if tuple(rot.shape[-2:]) != (3, 3):
        raise ValueError(f"rotation must end in (3, 3), got {tuple(rot.shape)}")
    trace = rot.diagonal(dim1=-2, dim2=-1).sum(-1)
    cos = ((trace - 1) / 2).clamp(-1 + 1e-7, 1 - 1e-7)
    theta = torch.acos(cos)
    vee = torch.stack(
        [
            rot[..., 2, 1] - rot[..., 1, 2],
            rot[..., 0, 2] - rot[..., 2, 0],
            rot[..., 1, 0] - rot[..., 0, 1],
        ],
        -1,
    )
    sin = torch.sin(theta)
    scale = torch.where(sin.abs() < 1e-7, torch.full_like(theta, 0.5), theta / (2 * sin))
    return vee * scale[..., None]


def _batch_K(K: torch.Tensor, batch: int) -> torch.Tensor:
    K = V.check_tensor(K, "K", ndim=(2, 3), floating=True)
    if tuple(K.shape[-2:]) != (3, 3):
        raise ValueError(f"K must have shape (3, 3) or ({batch}, 3, 3), got {tuple(K.shape)}")
    if K.dim() == 2:
        K = K.expand(batch, 3, 3)
    if K.shape[0] != batch:
        raise ValueError(f"K must have shape (3, 3) or ({batch}, 3, 3), got {tuple(K.shape)}")
    if (K[:, 0, 0] <= 0).any() or (K[:, 1, 1] <= 0).any():
        raise ValueError("K must have positive focal lengths")
    return K


def _batch_pose(R: torch.Tensor, t: torch.Tensor, batch: int, name: str = "cam"):
    R = V.check_tensor(R, f"{name} rotation", ndim=(2, 3), floating=True)
    t = V.check_tensor(t, f"{name} translation", ndim=(1, 2), floating=True)
    if tuple(R.shape[-2:]) != (3, 3):
        raise ValueError(f"{name} rotation must have shape (3, 3) or ({batch}, 3, 3)")
    if t.shape[-1] != 3:
        raise ValueError(f"{name} translation must have shape (3,) or ({batch}, 3)")
    if R.dim() == 2:
        R = R.expand(batch, 3, 3)
    if t.dim() == 1:
        t = t.expand(batch, 3)
    if tuple(R.shape) != (batch, 3, 3):
        raise ValueError(f"{name} rotation must have shape (3, 3) or ({batch}, 3, 3)")
    if tuple(t.shape) != (batch, 3):
        raise ValueError(f"{name} translation must have shape (3,) or ({batch}, 3)")
    return R, t


def _check_depth(depth: torch.Tensor) -> torch.Tensor:
    depth = V.check_tensor(depth, "depth", ndim=(2, 3), floating=True)
    if depth.dim() == 2:
        depth = depth[None]
    if (depth <= 0).any():
        raise ValueError("depth must be > 0 everywhere")
    return depth


def unproject(depth: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """Camera-space points ``(B, 3, H, W)`` of every pixel: ``X = z K^-1 u``."""
    depth = _check_depth(depth)
    b, h, w = depth.shape
    K = _batch_K(K, b).to(depth.dtype)
    rays = torch.linalg.solve(K, pixel_grid(h, w, depth.dtype).reshape(3, -1).expand(b, 3, -1))
    return (rays * depth.reshape(b, 1, -1)).reshape(b, 3, h, w)


def _project_flow(points: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """Flow ``u1 - u0`` of points ``(B, 3, H, W)`` given in frame-1 camera coordinates."""
    b, _, h, w = points.shape
    proj = K @ points.reshape(b, 3, -1)
    z = proj[:, 2:]
    # a point that crossed behind the camera gets z = 1e-6: its flow is huge, never NaN
    z = torch.where(z.abs() < 1e-6, torch.full_like(z, 1e-6), z)
    uv = (proj[:, :2] / z).reshape(b, 2, h, w)
    return uv - pixel_grid(h, w, points.dtype)[:2]


def camera_flow(depth: torch.Tensor, K: torch.Tensor, R: torch.Tensor, t: torch.Tensor):
    """Dense flow of a static scene under the camera motion ``(R, t)`` (the NVS prompt):
    unproject with the depth, ``X' = R X + t``, reproject; ``(B, 2, H, W)``."""
    depth = _check_depth(depth)
    b = depth.shape[0]
    K = _batch_K(K, b).to(depth.dtype)
    R, t = _batch_pose(R, t, b)
    X = unproject(depth, K).reshape(b, 3, -1)
    X1 = R.to(depth.dtype) @ X + t.to(depth.dtype)[..., None]
    return _project_flow(X1.reshape(b, 3, *depth.shape[1:]), K)


def _as_bool_mask(mask, b: int, h: int, w: int) -> torch.Tensor:
    mask = V.check_tensor(mask, "mask", ndim=(2, 3))
    if mask.dim() == 2:
        mask = mask[None]
    if tuple(mask.shape) != (b, h, w):
        raise ValueError(f"mask must have the depth's shape {(b, h, w)}, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        V.check_tensor(mask.float(), "mask", low=0.0, high=1.0)
        mask = mask > 0.5
    return mask


def _object_points(depth, K, mask, R_obj, t_obj, pivot):
    depth = _check_depth(depth)
    b, h, w = depth.shape
    K = _batch_K(K, b).to(depth.dtype)
    mask = _as_bool_mask(mask, b, h, w)
    R_obj, t_obj = _batch_pose(R_obj, t_obj, b, "object")
    X = unproject(depth, K).reshape(b, 3, -1)
    m = mask.reshape(b, 1, -1).to(depth.dtype)
    if pivot is None:
        # default pivot: centroid of the object's visible points
        pivot = (X * m).sum(-1) / m.sum(-1).clamp(min=1.0)
    else:
        pivot = V.check_tensor(pivot, "pivot", ndim=(1, 2), floating=True)
        pivot = pivot.expand(b, 3) if pivot.dim() == 1 else pivot
        if tuple(pivot.shape) != (b, 3):
            raise ValueError(f"pivot must have shape (3,) or ({b}, 3)")
    pv = pivot.to(depth.dtype)[..., None]
    moved = R_obj.to(depth.dtype) @ (X - pv) + pv + t_obj.to(depth.dtype)[..., None]
    return X, torch.where(m > 0, moved, X), K, (b, h, w)


def object_flow(depth, K, mask, R_obj, t_obj, pivot=None) -> torch.Tensor:
    """Sparse flow of a rigid object motion (the manipulation prompt): inside ``mask`` the
    flow of ``X' = R_obj (X - pivot) + pivot + t_obj`` (camera fixed), 0 outside. ``pivot``
    defaults to the centroid of the masked points."""
    _, moved, K, (b, h, w) = _object_points(depth, K, mask, R_obj, t_obj, pivot)
    flow = _project_flow(moved.reshape(b, 3, h, w), K)
    inside = _as_bool_mask(mask, b, h, w)[:, None]
    return torch.where(inside, flow, torch.zeros_like(flow))  # exactly 0 off the object


def composed_flow(depth, K, R, t, mask, R_obj, t_obj, pivot=None) -> torch.Tensor:
    """Composition of the two pathways: the object moves (inside ``mask``), then the camera
    moves; every point is reprojected once, so the flow of a pixel is the camera flow of its
    moved point (object flow and camera flow added through the 3-D point)."""
    _, moved, K, (b, h, w) = _object_points(depth, K, mask, R_obj, t_obj, pivot)
    R, t = _batch_pose(R, t, b)
    X1 = R.to(moved.dtype) @ moved + t.to(moved.dtype)[..., None]
    return _project_flow(X1.reshape(b, 3, h, w), K)


def triangulate_depth(flow: torch.Tensor, K: torch.Tensor, R: torch.Tensor, t: torch.Tensor):
    """Depth of every frame-0 pixel from its flow and the known relative pose: the least
    squares meeting point of the ray ``z d0`` (``d0 = K^-1 u0``, moved into frame 1 as
    ``z R d0 + t``) and the frame-1 ray ``s d1`` (``d1 = K^-1 (u0 + flow)``), solved per pixel
    in closed form from the 2x2 normal equations. Returns ``(B, H, W)`` (raw, may be <= 0
    where the flow disagrees with the pose)."""
    flow = V.check_tensor(flow, "flow", ndim=(3, 4), floating=True)
    if flow.dim() == 3:
        flow = flow[None]
    if flow.shape[1] != 2:
        raise ValueError(f"flow must have 2 channels, got shape {tuple(flow.shape)}")
    b, _, h, w = flow.shape
    K = _batch_K(K, b).to(flow.dtype)
    R, t = _batch_pose(R, t, b)
    R, t = R.to(flow.dtype), t.to(flow.dtype)
    grid = pixel_grid(h, w, flow.dtype).reshape(3, -1).expand(b, 3, -1)
    Kinv = torch.linalg.inv(K)
    d0 = R @ (Kinv @ grid)
    u1 = torch.cat([grid[:, :2] + flow.reshape(b, 2, -1), grid[:, 2:]], 1)
    d1 = Kinv @ u1
    # minimise |z a - s d1 + t|^2 with a = R d0
    aa = (d0 * d0).sum(1)
    bb = (d1 * d1).sum(1)
    ab = (d0 * d1).sum(1)
    at = (d0 * t[..., None]).sum(1)
    bt = (d1 * t[..., None]).sum(1)
    det = aa * bb - ab * ab
    det = torch.where(det.abs() < 1e-12, torch.full_like(det, 1e-12), det)
    z = (ab * bt - bb * at) / det
    return z.reshape(b, h, w)
