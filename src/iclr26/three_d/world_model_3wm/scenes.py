"""ToyScenes: rendered image pairs with exact geometry, and the real-image stereo probe.

A tiny batched ray caster in PyTorch renders a textured ground plane, a textured back wall and
2-4 boxes (yawed) or spheres resting on the ground, textured with crops of scikit-image's
``brick``, ``grass``, ``gravel``, ``coffee`` and ``astronaut``. Each pair is either a camera
motion (static scene), an object motion (static camera, one object moves rigidly) or both; the
pair carries the exact frame-0 depth, the exact flow ``u1 - u0`` of every frame-0 pixel, the
moved object's masks in both frames and the disocclusion mask of frame 1 (pixels whose surface
point is not visible from camera 0, found by casting a ray from camera 0 to that point). The
conventions are those of :mod:`.geometry`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.three_d.world_model_3wm.geometry import axis_angle_to_matrix, pixel_grid

__all__ = ["KINDS", "TEXTURES", "ToyScenes", "ray_cast", "stereo_motorcycle_pairs", "texture_bank"]

TEXTURES = ("brick", "grass", "gravel", "coffee", "astronaut")
KINDS = ("camera", "object", "both")
_TINTS = {"brick": (1.0, 0.55, 0.4), "grass": (0.45, 0.9, 0.35), "gravel": (0.75, 0.75, 0.85)}
_EPS = 1e-4
_SCENE_KEYS = (
    "ground", "wall", "ground_tex", "wall_tex", "center", "half", "yaw", "kind", "active",
    "tex", "tex_off",
)  # fmt: skip


@functools.cache
def _texture_bank_np(res: int) -> np.ndarray:
    import skimage.data
    from skimage.transform import resize

    out = []
    for name in TEXTURES:
        img = getattr(skimage.data, name)().astype(np.float64)
        img = img / 255.0 if img.max() > 1.5 else img
        if img.ndim == 2:
            img = img[..., None] * np.asarray(_TINTS[name])[None, None]
        h, w = img.shape[:2]
        side = min(h, w) // 2
        top, left = (h - side) // 2, (w - side) // 2
        crop = img[top : top + side, left : left + side]
        out.append(resize(crop, (res, res), anti_aliasing=True).transpose(2, 0, 1))
    return np.clip(np.stack(out), 0.0, 1.0).astype(np.float32)


def texture_bank(res: int = 32) -> torch.Tensor:
    """The five textures as a ``(5, 3, res, res)`` tensor in [0, 1] (centre crops, resized)."""
    res = V.check_int(res, "res", low=4, high=512)
    return torch.from_numpy(_texture_bank_np(res).copy())


def _sample(bank: torch.Tensor, tex: torch.Tensor, uv: torch.Tensor) -> torch.Tensor:
    """Bilinear, wrapping texture lookup: ``tex`` (N,) ids, ``uv`` (N, 2) -> (N, 3)."""
    res = bank.shape[-1]
    x = (uv[:, 0] % 1.0) * res - 0.5
    y = (uv[:, 1] % 1.0) * res - 0.5
    x0, y0 = torch.floor(x), torch.floor(y)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    x0, y0 = x0.long() % res, y0.long() % res
    x1, y1 = (x0 + 1) % res, (y0 + 1) % res
    flat = bank.permute(0, 2, 3, 1)

    def at(yy, xx):
        return flat[tex, yy, xx]

    top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx
    bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx
    return top * (1 - fy) + bottom * fy


def _yaw_matrix(yaw: torch.Tensor) -> torch.Tensor:
    c, s = torch.cos(yaw), torch.sin(yaw)
    z, o = torch.zeros_like(yaw), torch.ones_like(yaw)
    return torch.stack([c, z, s, z, o, z, -s, z, c], -1).reshape(*yaw.shape, 3, 3)


def ray_cast(scene: dict, origins: torch.Tensor, dirs: torch.Tensor, bank: torch.Tensor):
    """First hit of rays ``origins`` (B, 3) + lam * ``dirs`` (B, P, 3) in a batch of scenes.

    Returns ``lam`` (B, P), the primitive id (B, P; 0 ground, 1 wall, 2 + m object m) and the
    colour (B, P, 3). With ``dirs`` of unit camera z, ``lam`` is the camera-space depth.
    ``scene`` holds per-scene ``ground`` (y of the ground plane), ``wall`` (z of the back
    wall), ``ground_tex``, ``wall_tex`` and per-object ``center``, ``half``, ``yaw``,
    ``kind`` (0 sphere, 1 box), ``active``, ``tex``, ``tex_off`` (B, M, ...)."""
    if not isinstance(scene, dict):
        raise TypeError(f"scene must be a dict of tensors, got {type(scene).__name__}")
    missing = [k for k in _SCENE_KEYS if k not in scene]
    if missing:
        raise ValueError(f"scene is missing {', '.join(missing)}")
    dirs = V.check_tensor(dirs, "dirs", ndim=3, floating=True)
    b, p, _ = dirs.shape
    if dirs.shape[2] != 3:
        raise ValueError(f"dirs must have shape (B, P, 3), got {tuple(dirs.shape)}")
    origins = V.check_tensor(origins, "origins", shape=(b, 3), floating=True)
    for key in ("ground", "wall"):
        V.check_tensor(scene[key], f"scene[{key!r}]", shape=(b,), floating=True)
    V.check_tensor(scene["center"], "scene['center']", ndim=3, floating=True)
    V.check_tensor(scene["half"], "scene['half']", ndim=3, floating=True, low=0.0)
    if (scene["half"] <= 0).any():
        raise ValueError("scene['half'] sizes must be > 0")
    bank = V.check_tensor(bank, "bank", ndim=4, floating=True)
    o = origins[:, None, :]
    inf = torch.full((b, p), math.inf, dtype=dirs.dtype)
    lam, prim = inf.clone(), torch.zeros(b, p, dtype=torch.long)
    uv = torch.zeros(b, p, 2, dtype=dirs.dtype)
    shade = torch.ones(b, p, dtype=dirs.dtype)
    tex = torch.zeros(b, p, dtype=torch.long)

    def take(cand, cand_uv, cand_tex, cand_shade, pid):
        nonlocal lam, prim, uv, tex, shade
        better = cand < lam
        lam = torch.where(better, cand, lam)
        prim = torch.where(better, torch.full_like(prim, pid), prim)
        uv = torch.where(better[..., None], cand_uv, uv)
        tex = torch.where(better, cand_tex.expand(b, p), tex)
        shade = torch.where(better, cand_shade, shade)

    dy, dz = dirs[..., 1], dirs[..., 2]
    g = (scene["ground"][:, None] - o[..., 1]) / torch.where(dy > 1e-9, dy, torch.ones_like(dy))
    g = torch.where((dy > 1e-9) & (g > _EPS), g, inf)
    hit = o + g.nan_to_num(posinf=0.0)[..., None] * dirs
    take(g, hit[..., [0, 2]] / 4.0, scene["ground_tex"][:, None], torch.ones_like(g), 0)
    wl = (scene["wall"][:, None] - o[..., 2]) / torch.where(dz > 1e-9, dz, torch.ones_like(dz))
    wl = torch.where((dz > 1e-9) & (wl > _EPS), wl, inf)
    hit = o + wl.nan_to_num(posinf=0.0)[..., None] * dirs
    take(wl, hit[..., :2] / 4.0 + 0.5, scene["wall_tex"][:, None], torch.full_like(wl, 0.9), 1)

    for m in range(scene["center"].shape[1]):
        c = scene["center"][:, m][:, None, :]
        half = scene["half"][:, m][:, None, :]
        rot = _yaw_matrix(scene["yaw"][:, m])  # object -> world
        po = (o - c) @ rot  # world -> object: R^T v as row vectors
        dl = dirs @ rot
        active = scene["active"][:, m][:, None]
        # sphere
        r = half[..., 0]
        bq = 2 * (dl * po).sum(-1)
        aq = (dl * dl).sum(-1)
        cq = (po * po).sum(-1) - r * r
        disc = bq * bq - 4 * aq * cq
        ls = (-bq - torch.sqrt(disc.clamp(min=0))) / (2 * aq)
        ls = torch.where((disc > 0) & (ls > _EPS), ls, inf)
        hs = po + ls.nan_to_num(posinf=0.0)[..., None] * dl
        n = hs / r[..., None]
        s_uv = torch.stack(
            [torch.atan2(n[..., 0], n[..., 2]) / math.pi, torch.acos(n[..., 1].clamp(-1, 1))],
            -1,
        )
        # box (slab test in the object's frame)
        safe = torch.where(dl.abs() < 1e-9, torch.full_like(dl, 1e-9), dl)
        t1, t2 = (-half - po) / safe, (half - po) / safe
        near, axis = torch.minimum(t1, t2).max(-1)
        far = torch.maximum(t1, t2).min(-1).values
        lb = torch.where((near <= far) & (near > _EPS), near, inf)
        hb = po + lb.nan_to_num(posinf=0.0)[..., None] * dl
        q = hb / half
        b_uv = torch.where(
            (axis == 0)[..., None],
            q[..., [2, 1]],
            torch.where((axis == 1)[..., None], q[..., [0, 2]], q[..., [0, 1]]),
        )
        b_shade = torch.tensor([0.85, 1.0, 0.7], dtype=dirs.dtype)[axis]
        is_box = (scene["kind"][:, m] == 1)[:, None]
        cand = torch.where(is_box, lb, ls)
        cand = torch.where(active, cand, inf)
        cand_uv = torch.where(is_box[..., None], (b_uv + 1) / 2, s_uv)
        cand_uv = cand_uv * 0.5 + scene["tex_off"][:, m][:, None, :]
        cand_shade = torch.where(is_box, b_shade, torch.ones_like(b_shade))
        take(cand, cand_uv, scene["tex"][:, m][:, None], cand_shade, 2 + m)

    color = _sample(bank, tex.reshape(-1), uv.reshape(-1, 2)).reshape(b, p, 3)
    return lam, prim, color * shade[..., None]


def _layout(rng: np.random.Generator, n_objects: tuple[int, int], max_obj: int = 4) -> dict:
    """One scene's parameters (ground height, wall distance, objects) in frame-0 coordinates."""
    ground = rng.uniform(0.8, 1.2)
    wall = rng.uniform(7.0, 9.0)
    k = int(rng.integers(n_objects[0], n_objects[1] + 1))
    center = np.zeros((max_obj, 3))
    half = np.full((max_obj, 3), 0.3)
    kind = np.zeros(max_obj, np.int64)
    active = np.zeros(max_obj, bool)
    placed: list[tuple[float, float, float]] = []
    for m in range(k):
        for _ in range(30):
            is_box = rng.random() < 0.5
            hs = (
                rng.uniform([0.3, 0.3, 0.3], [0.55, 0.65, 0.55])
                if is_box
                else np.full(3, rng.uniform(0.3, 0.55))
            )
            z = rng.uniform(2.3, 4.5)
            x = rng.uniform(-0.3, 0.3) * z
            foot = float(np.hypot(hs[0], hs[2])) if is_box else float(hs[0])
            if all(np.hypot(x - px, z - pz) > foot + pf + 0.1 for px, pz, pf in placed):
                placed.append((x, z, foot))
                center[m] = (x, ground - hs[1], z)
                half[m] = hs
                kind[m] = int(is_box)
                active[m] = True
                break
    return dict(
        ground=ground,
        wall=wall,
        center=center,
        half=half,
        kind=kind,
        active=active,
        yaw=rng.uniform(-0.6, 0.6, max_obj),
        tex=rng.integers(0, len(TEXTURES), max_obj),
        tex_off=rng.uniform(0, 1, (max_obj, 2)),
        ground_tex=int(rng.integers(0, 3)),
        wall_tex=int(rng.integers(0, len(TEXTURES))),
    )


class ToyScenes(torch.utils.data.Dataset):
    """``n`` rendered image pairs of ``size x size`` pixels with exact depth, flow and masks.

    ``kinds`` lists the pair types drawn uniformly: ``"camera"`` (relative camera pose, static
    scene), ``"object"`` (fixed camera, one object translated on the ground and yawed about its
    centre) and ``"both"``. Tensors (first axis ``n``): ``rgb0``, ``rgb1`` (3, H, W) in [0, 1];
    ``depth0``, ``depth1`` (H, W); ``flow`` (2, H, W) of frame-0 pixels; ``disoccluded``
    (frame-1 pixels not visible in frame 0); ``mask0``/``mask1`` (the moved object in frame 0
    / 1); ``K``; camera ``R``, ``t``; object ``R_obj``, ``t_obj``, ``pivot``; ``kind`` (index
    into :data:`KINDS`)."""

    def __init__(
        self,
        size: int = 16,
        n: int = 6000,
        seed: int = 0,
        *,
        kinds: tuple[str, ...] = ("camera", "object"),
        n_objects: tuple[int, int] = (2, 4),
        max_translation: float = 0.3,
        max_rotation: float = 0.05,
        max_object_shift: float = 0.5,
        max_object_yaw: float = 0.35,
        texture_res: int = 32,
    ):
        self.size = V.check_int(size, "size", low=4, high=256)
        self.n = V.check_int(n, "n", low=1)
        self.seed = V.check_int(seed, "seed", low=0)
        if isinstance(kinds, str) or not len(kinds):
            raise ValueError(f"kinds must be a non-empty tuple of {KINDS}, got {kinds!r}")
        self.kinds = tuple(V.check_choice(k, "kinds", KINDS) for k in kinds)
        if len(n_objects) != 2:
            raise ValueError(f"n_objects must be a (low, high) pair, got {n_objects!r}")
        lo = V.check_int(n_objects[0], "n_objects", low=1, high=4)
        hi = V.check_int(n_objects[1], "n_objects", low=lo, high=4)
        self.max_translation = V.check_scalar(max_translation, "max_translation", low=0.0, high=1.0)
        self.max_rotation = V.check_scalar(max_rotation, "max_rotation", low=0.0, high=0.5)
        self.max_object_shift = V.check_scalar(
            max_object_shift, "max_object_shift", low=0.0, high=1.5
        )
        self.max_object_yaw = V.check_scalar(max_object_yaw, "max_object_yaw", low=0.0, high=1.5)
        self.bank = texture_bank(texture_res)
        rng = np.random.default_rng(self.seed)
        layouts = [_layout(rng, (lo, hi)) for _ in range(self.n)]
        scene = {
            k: torch.as_tensor(np.stack([lay[k] for lay in layouts]))
            for k in ("ground", "wall", "center", "half", "kind", "active", "yaw", "tex")
        }
        scene.update(
            tex_off=torch.as_tensor(np.stack([lay["tex_off"] for lay in layouts])),
            ground_tex=torch.as_tensor([lay["ground_tex"] for lay in layouts]),
            wall_tex=torch.as_tensor([lay["wall_tex"] for lay in layouts]),
        )
        scene = {k: v.float() if v.is_floating_point() else v for k, v in scene.items()}
        self._render_all(scene, rng)

    # ------------------------------------------------------------------ rendering
    def _draw_motion(self, rng: np.random.Generator, scene: dict):
        n = self.n
        kind = rng.integers(0, len(self.kinds), n)
        kind = torch.as_tensor([KINDS.index(self.kinds[k]) for k in kind])
        cam_moves = (kind == 0) | (kind == 2)
        obj_moves = (kind == 1) | (kind == 2)
        tr = self.max_translation
        t = torch.as_tensor(rng.uniform(-1, 1, (n, 3)) * [tr, tr / 3, tr], dtype=torch.float32)
        w = rng.uniform(-1, 1, (n, 3)) * np.array([0.6, 1.0, 0.4]) * self.max_rotation
        R = axis_angle_to_matrix(torch.as_tensor(w, dtype=torch.float32))
        t = torch.where(cam_moves[:, None], t, torch.zeros_like(t))
        R = torch.where(cam_moves[:, None, None], R, torch.eye(3).expand(n, 3, 3))
        active = scene["active"]
        choice = torch.as_tensor(
            [rng.choice(np.flatnonzero(a.numpy())) for a in active], dtype=torch.long
        )
        sh = self.max_object_shift
        shift = rng.uniform(-1, 1, (n, 2)) * sh
        small = np.hypot(shift[:, 0], shift[:, 1]) < 0.3 * sh  # every object move is visible
        shift[small] *= 0.3 * sh / np.maximum(np.hypot(*shift[small].T), 1e-9)[:, None]
        t_obj = torch.zeros(n, 3)
        t_obj[:, 0] = torch.as_tensor(shift[:, 0], dtype=torch.float32)
        t_obj[:, 2] = torch.as_tensor(shift[:, 1], dtype=torch.float32)
        yaw = torch.as_tensor(rng.uniform(-1, 1, n) * self.max_object_yaw, dtype=torch.float32)
        t_obj = torch.where(obj_moves[:, None], t_obj, torch.zeros_like(t_obj))
        yaw = torch.where(obj_moves, yaw, torch.zeros_like(yaw))
        return kind, R, t, choice, obj_moves, t_obj, yaw

    def _render_all(self, scene: dict, rng: np.random.Generator) -> None:
        n, s = self.n, self.size
        f = torch.as_tensor(rng.uniform(0.9, 1.2, n) * s, dtype=torch.float32)
        K = torch.zeros(n, 3, 3)
        K[:, 0, 0], K[:, 1, 1], K[:, 0, 2], K[:, 1, 2], K[:, 2, 2] = f, f, s / 2, s / 2, 1.0
        kind, R, t, choice, obj_moves, t_obj, yaw = self._draw_motion(rng, scene)
        idx = torch.arange(n)
        pivot = scene["center"][idx, choice].clone()
        scene1 = {k: v.clone() for k, v in scene.items()}
        scene1["center"][idx, choice] = pivot + t_obj
        scene1["yaw"][idx, choice] = scene["yaw"][idx, choice] + yaw
        R_obj = _yaw_matrix(yaw)
        grid = pixel_grid(s, s).reshape(3, -1)
        keys = ("rgb0", "rgb1", "depth0", "depth1", "flow", "disoccluded", "mask0", "mask1")
        out: dict[str, list] = {k: [] for k in keys}
        for lo in range(0, n, 512):
            sl = slice(lo, min(lo + 512, n))
            sub0 = {k: v[sl] for k, v in scene.items()}
            sub1 = {k: v[sl] for k, v in scene1.items()}
            b = sl.stop - sl.start
            rays = (torch.linalg.inv(K[sl]) @ grid.expand(b, 3, -1)).transpose(1, 2)
            lam0, prim0, col0 = ray_cast(sub0, torch.zeros(b, 3), rays, self.bank)
            Rt = R[sl].transpose(1, 2)
            o1 = -(Rt @ t[sl][..., None])[..., 0]
            d1 = rays @ R[sl]  # R^T d as row vectors
            lam1, prim1, col1 = ray_cast(sub1, o1, d1, self.bank)
            moved_id = (2 + choice[sl])[:, None]
            m0 = (prim0 == moved_id) & obj_moves[sl][:, None]
            m1 = (prim1 == moved_id) & obj_moves[sl][:, None]
            # exact flow of frame-0 pixels
            X0 = rays * lam0[..., None]
            pv = pivot[sl][:, None, :]
            moved = (X0 - pv) @ R_obj[sl].transpose(1, 2) + pv + t_obj[sl][:, None, :]
            X0m = torch.where(m0[..., None], moved, X0)
            X1 = X0m @ R[sl].transpose(1, 2) + t[sl][:, None, :]
            uv1 = X1 @ K[sl].transpose(1, 2)
            flow = uv1[..., :2] / uv1[..., 2:] - grid[:2].T[None]
            # disocclusion: frame-1 surface points taken back to frame 0, seen from camera 0?
            P1 = o1[:, None, :] + lam1[..., None] * d1
            back = (P1 - pv - t_obj[sl][:, None, :]) @ R_obj[sl] + pv
            P0 = torch.where(m1[..., None], back, P1)
            z0 = P0[..., 2]
            ahead = z0 > 1e-3
            dirs0 = P0 / torch.where(ahead, z0, torch.ones_like(z0))[..., None]
            lam_vis, _, _ = ray_cast(sub0, torch.zeros(b, 3), dirs0, self.bank)
            pix = dirs0 @ K[sl].transpose(1, 2)
            inside = (pix[..., 0] >= 0) & (pix[..., 0] <= s) & (pix[..., 1] >= 0)
            inside = inside & (pix[..., 1] <= s)
            visible = ahead & inside & (lam_vis >= z0 * (1 - 1e-3))
            for key, val in (
                ("rgb0", col0.transpose(1, 2).reshape(b, 3, s, s)),
                ("rgb1", col1.transpose(1, 2).reshape(b, 3, s, s)),
                ("depth0", lam0.reshape(b, s, s)),
                ("depth1", lam1.reshape(b, s, s)),
                ("flow", flow.transpose(1, 2).reshape(b, 2, s, s)),
                ("disoccluded", (~visible).reshape(b, s, s)),
                ("mask0", m0.reshape(b, s, s)),
                ("mask1", m1.reshape(b, s, s)),
            ):
                out[key].append(val)
        for key, vals in out.items():
            setattr(self, key, torch.cat(vals).contiguous())
        self.rgb0 = self.rgb0.clamp(0, 1)
        self.rgb1 = self.rgb1.clamp(0, 1)
        self.K, self.R, self.t = K, R, t
        self.R_obj, self.t_obj, self.pivot = R_obj, t_obj, pivot
        self.kind = kind

    # ------------------------------------------------------------------ dataset protocol
    FIELDS = (
        "rgb0",
        "rgb1",
        "depth0",
        "depth1",
        "flow",
        "disoccluded",
        "mask0",
        "mask1",
        "K",
        "R",
        "t",
        "R_obj",
        "t_obj",
        "pivot",
        "kind",
    )

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict:
        index = V.check_int(index, "index", low=-self.n, high=self.n - 1)
        return {k: getattr(self, k)[index] for k in self.FIELDS}

    def select(self, kind: str) -> torch.Tensor:
        """Indices of the pairs of one kind."""
        kind = V.check_choice(kind, "kind", KINDS)
        return torch.nonzero(self.kind == KINDS.index(kind)).flatten()

    def batch(self, index) -> dict:
        """All fields of the pairs ``index`` (a LongTensor or a list of ints)."""
        idx = torch.as_tensor(index, dtype=torch.long)
        if idx.dim() != 1 or idx.numel() == 0:
            raise ValueError("index must be a non-empty 1-D list of pair indices")
        if (idx < 0).any() or (idx >= self.n).any():
            raise ValueError(f"index must lie in [0, {self.n - 1}]")
        return {k: getattr(self, k)[idx] for k in self.FIELDS}


def stereo_motorcycle_pairs(n: int = 48, size: int = 16, scale: int = 16, seed: int = 0) -> dict:
    """The real-image probe: ``n`` random crops of ``size * scale`` pixels from scikit-image's
    rectified ``stereo_motorcycle`` pair, area-downscaled by ``scale`` to ``size x size``. The
    flow of the left crop is ``(-disparity / scale, 0)``. Returns rgb0 (left), rgb1 (right), flow, ``K`` (unit-free
    focal of ``size``) as tensors. Invalid disparities are filled from the nearest valid
    pixel; crops with more than 10 % invalid pixels are redrawn."""
    import skimage.data
    from scipy.ndimage import distance_transform_edt
    from skimage.transform import resize

    n = V.check_int(n, "n", low=1, high=4096)
    size = V.check_int(size, "size", low=4, high=128)
    scale = V.check_int(scale, "scale", low=1, high=64)
    left, right, disp = skimage.data.stereo_motorcycle()
    side = size * scale
    h, w = disp.shape
    if side > min(h, w):
        raise ValueError(f"size * scale must be <= {min(h, w)}, got {side}")
    bad = ~np.isfinite(disp)
    # invalid (infinite) disparities take the value of the nearest valid pixel
    _, (ni, nj) = distance_transform_edt(bad, return_indices=True)
    filled = disp[ni, nj]
    rng = np.random.default_rng(seed)
    rgb0, rgb1, flow = [], [], []
    tries = 0
    while len(rgb0) < n:
        tries += 1
        if tries > 100 * n:
            raise RuntimeError("could not find crops with a valid disparity")
        top, lo = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
        if bad[top : top + side, lo : lo + side].mean() > 0.1:
            continue
        d = filled[top : top + side, lo : lo + side]
        # the right crop is taken at the same place: pixels move left by the disparity
        for img, dst in ((left, rgb0), (right, rgb1)):
            crop = img[top : top + side, lo : lo + side] / 255.0
            dst.append(resize(crop, (size, size), anti_aliasing=True).transpose(2, 0, 1))
        fx = -resize(d, (size, size), anti_aliasing=True) / scale
        flow.append(np.stack([fx, np.zeros_like(fx)]))
    K = torch.tensor([[float(size), 0, size / 2], [0, float(size), size / 2], [0, 0, 1]])
    as_t = lambda a: torch.as_tensor(np.stack(a), dtype=torch.float32).clamp(-1e3, 1e3)  # noqa: E731
    return dict(rgb0=as_t(rgb0).clamp(0, 1), rgb1=as_t(rgb1).clamp(0, 1), flow=as_t(flow), K=K)
