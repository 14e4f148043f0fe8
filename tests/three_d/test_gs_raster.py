"""Tests of the shared Gaussian-splatting rasterizer: tiled renderer against a brute-force
per-pixel reference, gradients, SH colour, symmetry, culling and bad input."""

from __future__ import annotations

import math

import pytest
import torch

from iclr26.three_d import gs_raster as G
from iclr26.three_d.gs_raster import gsplat_backend

D = torch.float64


def _scene(n, seed=0, sh_degree=2, **kw):
    return G.random_scene(n, seed=seed, sh_degree=sh_degree, dtype=D, **kw)


def _cam(eye=(3.0, 0.4, 0.6), w=37, h=29, **kw):
    return G.Camera.look_at(eye, width=w, height=h, dtype=D, **kw)


@pytest.mark.parametrize("tile_size", [16, 8, 5])
def test_tiled_matches_brute_force_reference(tile_size):
    scene = _scene(60, seed=3, sh_degree=3, scale_range=(0.02, 0.4))
    cam = _cam(fov_deg=60.0)
    bg = torch.tensor([0.2, 0.1, 0.7], dtype=D)
    out = G.render(**scene.as_kwargs(), camera=cam, background=bg, tile_size=tile_size)
    ref = G.render_reference(**scene.as_kwargs(), camera=cam, background=bg)
    assert out.image.shape == (29, 37, 3)
    assert out.alpha.min() >= 0 and out.alpha.max() <= 1
    assert out.alpha.max() > 0.9  # the scene is really there
    torch.testing.assert_close(out.image, ref.image, atol=1e-10, rtol=0)
    torch.testing.assert_close(out.alpha, ref.alpha, atol=1e-10, rtol=0)
    torch.testing.assert_close(out.depth, ref.depth, atol=1e-9, rtol=0)


def test_opaque_scene_matches_reference_with_early_stop():
    # near-opaque overlapping Gaussians: the 0.99 clamp and the 1e-4 transmittance stop act
    scene = _scene(
        40, seed=5, sh_degree=0, extent=0.3, scale_range=(0.2, 0.4), opacity_range=(0.97, 1.0)
    )
    cam = _cam(w=24, h=24)
    out = G.render(**scene.as_kwargs(), camera=cam, max_batch_elements=500)
    ref = G.render_reference(**scene.as_kwargs(), camera=cam)
    assert out.alpha.max() > 0.999
    torch.testing.assert_close(out.image, ref.image, atol=1e-10, rtol=0)


def test_reference_gradients_agree_and_gradcheck():
    scene = _scene(
        4, seed=1, sh_degree=1, extent=0.4, scale_range=(0.15, 0.35), opacity_range=(0.3, 0.6)
    )
    cam = _cam(w=11, h=9, fov_deg=40.0)
    params = [t.clone().requires_grad_(True) for t in scene.as_kwargs().values()]

    def f(means, scales, quats, opac, sh, fn=G.render):
        out = fn(means, scales, quats, opac, cam, sh=sh, background=0.3)
        return out.image, out.alpha, out.depth

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=True)
    g1 = torch.autograd.grad(sum(t.sum() for t in f(*params)), params)
    g2 = torch.autograd.grad(sum(t.sum() for t in f(*params, fn=G.render_reference)), params)
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-7)
    assert all(g.abs().sum() > 0 for g in g1)


def test_sh_degree0_is_a_constant_colour_and_peak_is_opacity_times_colour():
    rgb = torch.tensor([[0.8, 0.3, 0.1]], dtype=D)
    sh = G.rgb_to_sh0(rgb)[:, None, :]
    means = torch.zeros(1, 3, dtype=D)
    scales = torch.full((1, 3), 0.3, dtype=D)
    quats = torch.tensor([[1.0, 0, 0, 0]], dtype=D)
    opac = torch.tensor([0.7], dtype=D)
    for cam in G.orbit_cameras(5, radius=3.0, elevation_deg=25.0, width=20, height=20, dtype=D):
        out = G.render(means, scales, quats, opac, cam, sh=sh)
        a = out.alpha
        torch.testing.assert_close(out.image, a[..., None] * rgb[0], atol=1e-12, rtol=0)
        # the mean projects to the corner shared by the 4 centre pixels: peak at distance sqrt(.5)
        assert a.max() <= 0.7 and a.max() > 0.6
    colors = G.sh_to_color(sh, torch.randn(1, 3, dtype=D), 0)
    torch.testing.assert_close(colors, rgb)


def test_sh_basis_is_orthonormal_on_the_sphere():
    dirs = torch.randn(200000, 3, dtype=D, generator=torch.Generator().manual_seed(0))
    dirs = dirs / dirs.norm(dim=1, keepdim=True)
    basis = G.sh_basis(3, dirs)
    gram = 4 * math.pi * basis.T @ basis / dirs.shape[0]
    torch.testing.assert_close(gram, torch.eye(16, dtype=D), atol=0.03, rtol=0)


def test_isotropic_blob_is_symmetric_and_translation_invariant():
    means = torch.zeros(1, 3, dtype=D)
    scales = torch.full((1, 3), 0.25, dtype=D)
    quats = torch.tensor([[0.3, -0.2, 0.5, 0.1]], dtype=D)  # irrelevant for an isotropic blob
    opac = torch.tensor([0.9], dtype=D)
    colors = torch.tensor([[1.0]], dtype=D)
    cam = G.Camera.look_at((0.0, -3.0, 0.0), width=16, height=16, dtype=D)
    img = G.render(means, scales, quats, opac, cam, colors=colors).image[..., 0]
    torch.testing.assert_close(img, img.flip(0))
    torch.testing.assert_close(img, img.flip(1))
    torch.testing.assert_close(img, img.T)
    shift = torch.tensor([0.4, -1.0, 2.5], dtype=D)
    cam2 = G.Camera.look_at(
        (shift + torch.tensor([0.0, -3.0, 0.0], dtype=D)).tolist(),
        shift.tolist(),
        width=16,
        height=16,
        dtype=D,
    )
    img2 = G.render(means + shift, scales, quats, opac, cam2, colors=colors).image[..., 0]
    torch.testing.assert_close(img, img2, atol=1e-10, rtol=0)


def test_order_invariance_and_front_layer_wins():
    scene = _scene(30, seed=7)
    cam = _cam()
    perm = torch.randperm(30, generator=torch.Generator().manual_seed(0))
    a = G.render(**scene.as_kwargs(), camera=cam).image
    b = G.render(**{k: v[perm] for k, v in scene.as_kwargs().items()}, camera=cam).image
    torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    # two large opaque layers on the optical axis: the front colour is what is seen
    means = torch.tensor([[0.0, 0.0, 0.5], [0.0, 0.0, 1.5]], dtype=D)
    scales = torch.full((2, 3), 2.0, dtype=D)
    quats = torch.tensor([[1.0, 0, 0, 0]] * 2, dtype=D)
    opac = torch.ones(2, dtype=D)
    colors = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=D)
    cam = G.Camera(torch.eye(3, dtype=D), torch.zeros(3, dtype=D), 10.0, 10.0, 4.0, 4.0, 8, 8)
    img = G.render(means, scales, quats, opac, cam, colors=colors).image
    assert img[..., 0].min() > 0.98 and img[..., 1].max() < 0.011


def test_non_normalised_quaternions_equal_normalised():
    scene = _scene(20, seed=2, scale_range=(0.05, 0.3))
    cam = _cam()
    a = G.render(**scene.as_kwargs(), camera=cam).image
    kw = scene.as_kwargs()
    kw["quats"] = kw["quats"] * torch.linspace(0.1, 7.0, 20, dtype=D)[:, None]
    torch.testing.assert_close(G.render(**kw, camera=cam).image, a, atol=1e-12, rtol=0)
    r = G.quat_to_rotmat(kw["quats"])
    torch.testing.assert_close(r @ r.transpose(1, 2), torch.eye(3, dtype=D).expand(20, 3, 3))


def test_camera_facing_away_and_empty_scene_give_the_background():
    scene = _scene(50, seed=0)
    bg = torch.tensor([0.3, 0.5, 0.7], dtype=D)
    away = G.Camera.look_at((3.0, 0.0, 0.0), (6.0, 0.0, 0.0), width=16, height=16, dtype=D)
    out = G.render(**scene.as_kwargs(), camera=away, background=bg, return_visibility=True)
    assert torch.equal(out.image, bg.expand(16, 16, 3))
    assert torch.equal(out.alpha, torch.zeros(16, 16, dtype=D))
    assert int(out.radii.sum()) == 0 and int(out.visibility.sum()) == 0
    assert out.stats["tile_pairs"] == 0
    empty = G.random_scene(0, dtype=D)
    out = G.render(**empty.as_kwargs(), camera=_cam(), background=bg)
    assert torch.equal(out.image, bg.expand(29, 37, 3))
    # a Gaussian behind the camera is culled (no wrap-around through z < 0)
    cam = G.Camera(torch.eye(3, dtype=D), torch.zeros(3, dtype=D), 20.0, 20.0, 8.0, 8.0, 16, 16)
    behind = G.render(
        torch.tensor([[0.0, 0.0, -1.0]], dtype=D),
        torch.full((1, 3), 0.5, dtype=D),
        torch.tensor([[1.0, 0, 0, 0]], dtype=D),
        torch.ones(1, dtype=D),
        cam,
        colors=torch.ones(1, 3, dtype=D),
    )
    assert behind.alpha.abs().max() == 0


def test_visibility_counts_and_stats():
    scene = _scene(25, seed=4)
    cam = _cam()
    out = G.render(**scene.as_kwargs(), camera=cam, return_visibility=True)
    assert out.visibility.shape == (25,)
    assert torch.all(out.visibility[out.radii == 0] == 0)
    assert out.stats["pixel_pairs"] == out.stats["tile_pairs"] * 256
    assert 0 < out.stats["tiles_touched"] <= 3 * 2


def test_orbit_cameras_look_at_the_origin():
    cams = G.orbit_cameras(6, radius=2.5, elevation_deg=30.0, width=32, height=24, dtype=D)
    for cam in cams:
        p = cam.rotation @ torch.zeros(3, dtype=D) + cam.translation
        u = cam.fx * p[0] / p[2] + cam.cx
        v = cam.fy * p[1] / p[2] + cam.cy
        assert abs(u - 16) < 1e-9 and abs(v - 12) < 1e-9
        assert abs(float(cam.center.norm()) - 2.5) < 1e-9
        # world up (z) appears upwards: a point above the origin has smaller v
        q = cam.rotation @ torch.tensor([0.0, 0.0, 0.5], dtype=D) + cam.translation
        assert cam.fy * q[1] / q[2] + cam.cy < v


def test_textured_plane_shows_its_texture():
    tex = G.texture("astronaut", 16)
    assert tex.shape == (16, 16, 3) and 0 <= tex.min() and tex.max() <= 1
    plane = G.textured_plane(tex, size=2.0, normal_axis=0, dtype=D)
    cam = G.Camera.look_at((4.0, 0.0, 0.0), width=32, height=32, fov_deg=40.0, dtype=D)
    out = G.render(**plane.as_kwargs(), camera=cam)
    img = out.image
    assert out.alpha[8:24, 8:24].min() > 0.9
    # same orientation as the texture: correlation of downsampled channels is high
    small = torch.nn.functional.avg_pool2d(img.permute(2, 0, 1)[None], 2)[0].mean(0)
    ref = tex.to(D).mean(2)
    crop = small[4:12, 4:12]
    t = ref[4:12, 4:12]
    corr = torch.corrcoef(torch.stack([crop.reshape(-1), t.reshape(-1)]))[0, 1]
    assert corr > 0.7


def test_benchmark_smoke():
    res = G.benchmark((10, 40), image_size=16, reference_max=10, repeat=1)
    assert len(res["rows"]) == 2 and math.isfinite(res["loglog_slope_cpu_time"])
    assert res["rows"][0]["reference_over_tiled"] > 0
    assert res["rows"][1]["tiled"]["count_gaussians"] == 40


def test_gsplat_backend_is_never_used_silently():
    scene = _scene(5)
    if not gsplat_backend.available():
        with pytest.raises(ImportError, match="gsplat"):
            G.render(**scene.as_kwargs(), camera=_cam(), backend="gsplat")
    out = G.render(**scene.as_kwargs(), camera=_cam(), backend="auto")
    assert "tile_pairs" in out.stats  # the PyTorch path ran on CPU tensors


def _bad(**over):
    kw = _scene(3).as_kwargs()
    kw.update(over)
    return kw


@pytest.mark.parametrize(
    "over, match",
    [
        ({"means": torch.tensor([[0.0, float("nan"), 0.0]] * 3, dtype=D)}, "means"),
        ({"means": torch.zeros(3, 2, dtype=D)}, "means"),
        ({"scales": torch.tensor([[0.1, 0.0, 0.1]] * 3, dtype=D)}, "scales"),
        ({"scales": torch.tensor([[0.1, -1.0, 0.1]] * 3, dtype=D)}, "scales"),
        ({"scales": torch.tensor([[0.1, float("inf"), 0.1]] * 3, dtype=D)}, "scales"),
        ({"quats": torch.zeros(3, 4, dtype=D)}, "quats"),
        ({"quats": torch.full((3, 4), float("nan"), dtype=D)}, "quats"),
        ({"opacities": torch.full((3,), 1.5, dtype=D)}, "opacities"),
        ({"opacities": torch.ones(4, dtype=D)}, "opacities"),
        ({"sh": torch.zeros(3, 5, 3, dtype=D)}, "sh"),
        ({"sh": None}, "colors and sh"),
        ({"colors": torch.ones(3, 3, dtype=D)}, "colors and sh"),
        ({"sh_degree": 4}, "sh_degree"),
        ({"background": [0.1, 0.2]}, "background"),
        ({"tile_size": 0}, "tile_size"),
        ({"sigma_cutoff": float("nan")}, "sigma_cutoff"),
        ({"backend": "cuda"}, "backend"),
    ],
)
def test_bad_input_is_refused(over, match):
    with pytest.raises((ValueError, TypeError), match=match):
        G.render(**_bad(**over), camera=_cam())


def test_bad_camera_and_generators():
    with pytest.raises((ValueError, TypeError), match="fx"):
        G.Camera(torch.eye(3), torch.zeros(3), -1.0, 1.0, 0.0, 0.0, 8, 8)
    with pytest.raises(ValueError, match="rotation"):
        G.Camera(2 * torch.eye(3), torch.zeros(3), 1.0, 1.0, 0.0, 0.0, 8, 8)
    with pytest.raises(ValueError, match="far"):
        G.Camera(torch.eye(3), torch.zeros(3), 1.0, 1.0, 0.0, 0.0, 8, 8, near=1.0, far=0.5)
    with pytest.raises(ValueError, match="eye"):
        G.Camera.look_at((0.0, 0.0, 0.0))
    with pytest.raises(TypeError, match="camera"):
        G.render(**_bad(), camera="cam")
    with pytest.raises((ValueError, TypeError), match="n"):
        G.random_scene(-1)
    with pytest.raises(ValueError, match="name"):
        G.texture("nope")
    with pytest.raises((ValueError, TypeError), match="radius"):
        G.orbit_cameras(3, radius=float("nan"))
    with pytest.raises(ValueError, match="sizes"):
        G.benchmark(())


def test_projection_matches_the_linearised_perspective_map():
    from scipy.spatial.transform import Rotation

    scene = _scene(6, seed=9, extent=0.5)
    cam = _cam(w=40, h=30)
    # covariance from (w, x, y, z) quaternions agrees with scipy's rotation (x, y, z, w order)
    rot = torch.as_tensor(Rotation.from_quat(scene.quats[:, [1, 2, 3, 0]].numpy()).as_matrix())
    cov = rot @ torch.diag_embed(scene.scales**2) @ rot.transpose(1, 2)
    torch.testing.assert_close(G.covariance_3d(scene.scales, scene.quats), cov)
    proj = G.project(scene.means, scene.scales, scene.quats, cam)

    def to_pixels(p):
        q = cam.rotation @ p + cam.translation
        return torch.stack([cam.fx * q[0] / q[2] + cam.cx, cam.fy * q[1] / q[2] + cam.cy])

    for i in range(6):
        jac = torch.autograd.functional.jacobian(to_pixels, scene.means[i])  # (2, 3) world
        expect = jac @ cov[i] @ jac.T + 0.3 * torch.eye(2, dtype=D)
        torch.testing.assert_close(proj.cov2d[i], expect, atol=1e-9, rtol=1e-9)
        torch.testing.assert_close(proj.means2d[i], to_pixels(scene.means[i]))
        conic = torch.linalg.inv(expect)
        torch.testing.assert_close(proj.conics[i], conic.reshape(-1)[[0, 1, 3]])
    assert torch.all(proj.radii > 0)


def test_sh_degree_truncates_and_means2d_gradient_is_available():
    scene = _scene(15, seed=11, sh_degree=3, sh_noise=0.3)
    cam = _cam()
    kw = scene.as_kwargs()
    low = G.render(**kw, camera=cam, sh_degree=1).image
    kw1 = dict(kw, sh=kw["sh"][:, :4])
    torch.testing.assert_close(low, G.render(**kw1, camera=cam).image, atol=1e-12, rtol=0)
    full = G.render(**kw, camera=cam).image
    assert (full - low).abs().max() > 1e-3  # the higher bands are used
    means = kw["means"].clone().requires_grad_(True)
    out = G.render(**dict(kw, means=means), camera=cam)
    out.means2d.retain_grad()
    out.image.sum().backward()
    assert out.means2d.grad is not None and out.means2d.grad.abs().sum() > 0
