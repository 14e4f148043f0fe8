import functools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.three_d.world_model_3wm import (
    DepthUNet,
    LocalPatchQuantizer,
    PointerContentSerializer,
    RandomAccessTransformer,
    ToyScenes,
    WorldModel3WM,
    abs_rel,
    axis_angle_to_matrix,
    camera_flow,
    composed_flow,
    constant_median_depth,
    delta1,
    forward_warp,
    matrix_to_axis_angle,
    object_flow,
    patchify,
    psnr,
    ray_cast,
    stereo_motorcycle_pairs,
    texture_bank,
    triangulate_depth,
    unpatchify,
)


@functools.cache
def _scenes():
    return ToyScenes(16, 48, seed=3, kinds=("camera", "object", "both"))


@functools.cache
def _tiny_model():
    data = ToyScenes(8, 64, seed=1)
    torch.manual_seed(0)
    wm = WorldModel3WM(8, 4, d=16, layers=1, heads=2)
    return wm.fit(data, 40, batch=8, quantizer_steps=5, quantizer_batch=16), data


def _K(f=10.0, c=4.0):
    return torch.tensor([[f, 0, c], [0, f, c], [0, 0, 1.0]])


# ---------------------------------------------------------------- quantizer


@pytest.mark.parametrize("kind", ["rgb", "flow"])
def test_quantizer_is_strictly_patch_local(kind):
    torch.manual_seed(0)
    q = LocalPatchQuantizer(kind, patch=4, codebook=64, hidden=8)
    x = torch.rand(1, q.channels, 12, 12)
    q.fit(x.repeat(4, 1, 1, 1), steps=2, batch=4)
    y = x.clone()
    y[:, :, 4:8, 8:12] = torch.rand(1, q.channels, 4, 4)  # patch (1, 2) only
    zx, zy = q._encode_latent(x), q._encode_latent(y)
    changed = (zx - zy).abs().amax(-1) > 0
    assert changed.reshape(3, 3).nonzero().tolist() == [[1, 2]]
    cx, cy = q.encode(x), q.encode(y)
    other = torch.ones(3, 3, dtype=torch.bool)
    other[1, 2] = False
    assert torch.equal(cx[0][other], cy[0][other])
    # the decoder is per patch too: change one code, only its tile moves
    codes = cx.clone()
    codes[0, 0, 0] = (codes[0, 0, 0] + 1) % 64
    diff = (q.decode(codes) - q.decode(cx)).abs().sum(1)[0]
    assert diff[4:, :].max() == 0 and diff[:, 4:].max() == 0


def test_patchify_round_trip_and_order():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    p = patchify(x, 4)
    assert p.shape == (2, 4, 3, 4, 4)
    assert torch.equal(p[:, 1], x[:, :, :4, 4:])  # raster order: patch 1 is top-right
    assert torch.equal(unpatchify(p, 8, 8), x)


def test_quantizer_learns_and_ema_codebook_moves():
    data = _scenes()
    torch.manual_seed(0)
    q = LocalPatchQuantizer("rgb", codebook=32, hidden=8)
    _, _, loss0 = q(data.rgb0[:32])
    q.fit(torch.cat([data.rgb0, data.rgb1]), steps=40, batch=32, lr=3e-3)
    q.eval()
    with torch.no_grad():
        _, _, loss1 = q(data.rgb0[:32])
    assert float(loss1) < float(loss0.detach())
    rec = q.decode(q.encode(data.rgb1))
    assert psnr(rec, data.rgb1) > 12.0


# ---------------------------------------------------------------- serializer


def test_serializer_round_trip_for_any_permutation():
    ser = PointerContentSerializer(16, 32, 16, 8)
    g = torch.Generator().manual_seed(0)
    for node, width, hi in (("RGB0", 16, 32), ("RGB1", 16, 32), ("FLOW", 16, 16), ("CAM", 6, 8)):
        codes = torch.randint(0, hi, (3, width), generator=g)
        order = torch.argsort(torch.rand(3, width, generator=g), 1)
        toks = ser.node_tokens(node, codes, order)
        triples = ser.decode(toks)
        assert torch.equal(ser.encode(triples), toks)
        for row, (o, c) in enumerate(zip(order, codes)):
            assert [t[1] for t in triples[row]] == o.tolist()
            assert [t[2] for t in triples[row]] == c[o].tolist()
            assert {t[0] for t in triples[row]} == {node}
    assert ser.vocab_size == 4 + 16 + 6 + 32 + 16 + 8


def test_pose_bins_round_trip_within_one_bin():
    ser = PointerContentSerializer(4, max_translation=0.3, max_rotation=0.05)
    w = torch.tensor([[0.01, -0.03, 0.02]])
    t = torch.tensor([[0.1, -0.2, 0.05]])
    R, t_back = ser.bins_to_pose(ser.pose_to_bins(axis_angle_to_matrix(w), t))
    assert (t_back - t).abs().max() <= 0.3 / 64 + 1e-6
    assert (matrix_to_axis_angle(R) - w).abs().max() <= 0.05 / 64 + 1e-6


# ---------------------------------------------------------------- geometry


def test_axis_angle_round_trip():
    w = torch.tensor([[0.3, -0.2, 0.1], [0.0, 0.0, 0.0], [1e-9, 0, 0]])
    R = axis_angle_to_matrix(w)
    assert torch.allclose(R @ R.transpose(1, 2), torch.eye(3).expand(3, 3, 3), atol=1e-6)
    assert torch.allclose(matrix_to_axis_angle(R), w, atol=1e-5)


def test_identity_pose_gives_zero_flow():
    depth = torch.rand(2, 8, 8) + 1.0
    flow = camera_flow(depth, _K(), torch.eye(3), torch.zeros(3))
    assert flow.abs().max() < 1e-5


def test_translation_on_fronto_parallel_plane_gives_uniform_flow():
    z, f, tx, ty = 4.0, 10.0, 0.3, -0.1
    depth = torch.full((1, 8, 8), z, dtype=torch.float64)
    flow = camera_flow(depth, _K(f).double(), torch.eye(3).double(), torch.tensor([tx, ty, 0.0]))
    assert torch.allclose(flow[0, 0], torch.full((8, 8), f * tx / z, dtype=torch.float64))
    assert torch.allclose(flow[0, 1], torch.full((8, 8), f * ty / z, dtype=torch.float64))


def test_triangulation_of_exact_flow_recovers_depth():
    data = _scenes()
    idx = data.select("camera")
    b = data.batch(idx)
    # the renderer's own (float32) flow, with the pose it was rendered with
    z = triangulate_depth(b["flow"].double(), b["K"].double(), b["R"].double(), b["t"].double())
    rel = (z - b["depth0"].double()).abs() / b["depth0"].double()
    assert rel.median() < 1e-3
    # and exactly, in float64
    flow = camera_flow(b["depth0"].double(), b["K"].double(), b["R"].double(), b["t"].double())
    z = triangulate_depth(flow, b["K"].double(), b["R"].double(), b["t"].double())
    assert ((z - b["depth0"]).abs() / b["depth0"]).max() < 1e-3


def test_object_and_composed_flow():
    data = _scenes()
    b = data.batch(data.select("both"))
    args = (b["mask0"], b["R_obj"], b["t_obj"], b["pivot"])
    of = object_flow(b["depth0"], b["K"], *args)
    assert of.permute(1, 0, 2, 3)[:, ~b["mask0"]].abs().max() == 0
    # composition == the renderer's exact flow of object + camera motion
    cf = composed_flow(b["depth0"], b["K"], b["R"], b["t"], *args)
    assert (cf - b["flow"]).abs().max() < 1e-3
    # with a static object it reduces to the camera flow
    eye = torch.eye(3).expand(len(b["R"]), 3, 3)
    still = composed_flow(b["depth0"], b["K"], b["R"], b["t"], b["mask0"], eye, 0 * b["t"])
    assert torch.allclose(still, camera_flow(b["depth0"], b["K"], b["R"], b["t"]), atol=1e-5)


# ---------------------------------------------------------------- renderer


def _plane_scene(d, b=1):
    return dict(
        ground=torch.full((b,), 1e4),
        wall=torch.full((b,), d),
        ground_tex=torch.zeros(b, dtype=torch.long),
        wall_tex=torch.zeros(b, dtype=torch.long),
        center=torch.zeros(b, 1, 3),
        half=torch.ones(b, 1, 3),
        yaw=torch.zeros(b, 1),
        kind=torch.zeros(b, 1, dtype=torch.long),
        active=torch.zeros(b, 1, dtype=torch.bool),
        tex=torch.zeros(b, 1, dtype=torch.long),
        tex_off=torch.zeros(b, 1, 2),
    )


def test_ray_caster_plane_seen_head_on_has_constant_depth():
    grid = torch.stack(torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="xy"), -1)
    rays = torch.cat([(grid.reshape(-1, 2) + 0.5 - 4) / 10, torch.ones(64, 1)], 1)[None]
    lam, prim, col = ray_cast(_plane_scene(3.7), torch.zeros(1, 3), rays, texture_bank(8))
    assert torch.allclose(lam, torch.full_like(lam, 3.7))
    assert (prim == 1).all() and col.shape == (1, 64, 3)


def test_ray_caster_sphere_and_box_depths():
    s = _plane_scene(10.0)
    s["active"][:] = True
    s["center"][0, 0] = torch.tensor([0.0, 0.0, 5.0])
    rays = torch.tensor([[[0.0, 0.0, 1.0]]])
    lam, prim, _ = ray_cast(s, torch.zeros(1, 3), rays, texture_bank(8))
    assert lam.item() == pytest.approx(4.0) and prim.item() == 2  # sphere radius 1
    s["kind"][:] = 1
    s["half"][0, 0] = torch.tensor([0.5, 0.5, 0.25])
    lam, _, _ = ray_cast(s, torch.zeros(1, 3), rays, texture_bank(8))
    assert lam.item() == pytest.approx(4.75)


def test_toy_scenes_geometry_is_consistent():
    data = _scenes()
    cam = data.batch(data.select("camera"))
    assert torch.allclose(
        camera_flow(cam["depth0"], cam["K"], cam["R"], cam["t"]), cam["flow"], atol=1e-3
    )
    obj = data.batch(data.select("object"))
    assert obj["mask0"].flatten(1).any(1).float().mean() > 0.5
    assert obj["flow"].permute(1, 0, 2, 3)[:, ~obj["mask0"]].abs().max() < 1e-4
    # an object pair's unmoved background is identical in both frames
    still = ~(obj["mask0"] | obj["mask1"] | obj["disoccluded"])
    diff = (obj["rgb0"] - obj["rgb1"]).abs().amax(1)
    assert diff[still].max() < 1e-5
    assert data.rgb0.min() >= 0 and data.rgb0.max() <= 1


def test_stereo_crops():
    m = stereo_motorcycle_pairs(3, size=8, scale=32)
    assert m["rgb0"].shape == (3, 3, 8, 8) and m["flow"].shape == (3, 2, 8, 8)
    assert (m["flow"][:, 0] < 0).all() and (m["flow"][:, 1] == 0).all()


# ---------------------------------------------------------------- transformer


def test_loss_mask_covers_exactly_generated_content_tokens():
    wm, data = _tiny_model()
    codes = wm._codes(data)
    g = torch.Generator().manual_seed(0)
    for template in ("nvs", "depth", "manipulation", "reconstruction"):
        toks, mask = wm.training_sequence({k: v[:4] for k, v in codes.items()}, template, g)
        lo, hi = wm.serializer.content_range("FLOW" if template == "depth" else "RGB1")
        assert ((toks[mask] >= lo) & (toks[mask] < hi)).all()
        pos = mask.nonzero()[:, 1]
        assert (pos % 3 == 2).all()  # content slots of triples, never node or pointer
        n_gen = 4 * wm.n_patches if template != "reconstruction" else int(mask.sum())
        assert int(mask.sum()) == n_gen
        # generated tokens come last
        assert mask[:, -1].all()
    # the loss is the CE of those tokens only
    toks, mask = wm.training_sequence({k: v[:2] for k, v in codes.items()}, "nvs", g)
    logits = wm.transformer(toks[:, :-1])
    manual = F.cross_entropy(logits[mask[:, 1:]], toks[:, 1:][mask[:, 1:]])
    assert torch.allclose(wm.transformer.loss(toks, mask), manual)


def test_transformer_is_causal_and_cache_matches_full_pass():
    torch.manual_seed(0)
    tr = RandomAccessTransformer(50, d=16, layers=2, heads=2).eval()
    toks = torch.randint(0, 50, (2, 20))
    later = toks.clone()
    later[:, 12:] = torch.randint(0, 50, (2, 8))
    with torch.no_grad():
        a, b = tr(toks), tr(later)
        assert torch.allclose(a[:, :12], b[:, :12], atol=1e-6)
        assert not torch.allclose(a[:, 12:], b[:, 12:])
        cache = tr.new_cache()
        parts = [tr(toks[:, :7], cache), tr(toks[:, 7:9], cache), tr(toks[:, 9:], cache)]
        assert torch.allclose(torch.cat(parts, 1), a, atol=1e-5)


def test_rope_preserves_norm_and_relative_position():
    from iclr26.three_d.world_model_3wm import rope

    q = torch.randn(1, 1, 6, 8)
    assert torch.allclose(rope(q).norm(dim=-1), q.norm(dim=-1), atol=1e-5)
    k = torch.randn(1, 1, 1, 8)
    s1 = (rope(q[:, :, :1], 2) * rope(k, 0)).sum()
    s2 = (rope(q[:, :, :1], 5) * rope(k, 3)).sum()
    assert torch.allclose(s1, s2, atol=1e-5)


# ---------------------------------------------------------------- model and pathways


def test_fit_lowers_loss_and_pathways_run(tmp_path):
    wm, data = _tiny_model()
    assert isinstance(wm, torch.nn.Module) and len(wm.history) == 40
    assert np.mean(wm.history[-8:]) < np.mean(wm.history[:8])
    b = data.batch(data.select("camera")[:3])
    out = wm.nvs(b["rgb0"], depth=b["depth0"], cam=(b["R"], b["t"]), K=b["K"])
    assert out.shape == (3, 3, 8, 8) and 0 <= out.min() and out.max() <= 1
    assert torch.equal(out, wm.nvs(b["rgb0"], b["flow"]))  # same flow, same greedy output
    man = wm.manipulate(b["rgb0"], b["depth0"] > 3, torch.eye(3), torch.tensor([0.2, 0, 0]),
                        b["depth0"], K=b["K"])  # fmt: skip
    assert man.shape == out.shape
    probe = (torch.eye(3), torch.tensor([0.24, 0.0, 0.0]))
    d = wm.depth(b["rgb0"], probe, b["K"])
    lo, hi = wm.depth_range.tolist()
    assert d.shape == (3, 8, 8) and d.min() >= lo and d.max() <= hi
    path = wm.save_pretrained(tmp_path / "wm.pt")
    again = WorldModel3WM.from_pretrained(path)
    assert torch.equal(again.nvs(b["rgb0"], b["flow"]), out)


def test_sampling_respects_pointer_order_and_node_vocabulary():
    wm, data = _tiny_model()
    b = data.batch(torch.arange(2))
    c0 = wm.rgb_quantizer.encode(b["rgb0"]).reshape(2, -1)
    prefix = wm._prompt([("RGB0", c0)], 0)
    order = torch.tensor([[3, 1, 0, 2], [0, 1, 2, 3]])
    codes = wm.generate(prefix, "FLOW", order, top_k=5, seed=1)
    assert codes.shape == (2, 4) and codes.max() < wm.flow_quantizer.codebook_size


# ---------------------------------------------------------------- baselines and metrics


def test_forward_warp_shift_holes_and_zbuffer():
    img = torch.rand(1, 3, 6, 6)
    same, valid = forward_warp(img, torch.zeros(1, 2, 6, 6))
    assert torch.equal(same, img) and valid.all()
    flow = torch.zeros(1, 2, 6, 6)
    flow[:, 0] = 1.0  # everything one pixel right: column 0 is a hole, filled from column 1
    out, valid = forward_warp(img, flow)
    assert torch.equal(out[..., 1:], img[..., :-1]) and not valid[0, :, 0].any()
    assert torch.equal(out[..., 0], out[..., 1])
    # two sources on one target: the nearer wins
    flow = torch.zeros(1, 2, 6, 6)
    flow[0, 0, 2, 2] = 1.0  # pixel (2,2) lands on (2,3)
    z = torch.ones(1, 6, 6)
    z[0, 2, 2] = 0.5
    out, _ = forward_warp(img, flow, z)
    assert torch.equal(out[0, :, 2, 3], img[0, :, 2, 2])
    z[0, 2, 2] = 2.0
    out, _ = forward_warp(img, flow, z)
    assert torch.equal(out[0, :, 2, 3], img[0, :, 2, 3])


def test_metrics_by_hand():
    a = torch.zeros(1, 3, 4, 4)
    assert psnr(a + 0.1, a) == pytest.approx(20.0, abs=1e-4)
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[0, 0, 0] = True
    b = a.clone()
    b[..., 1:, :] = 0.5
    assert psnr(b, a, mask) == pytest.approx(100.0)  # exact where the mask looks
    gt = torch.tensor([1.0, 2.0, 4.0])
    assert abs_rel(torch.tensor([1.5, 2.0, 2.0]), gt) == pytest.approx((0.5 + 0 + 0.5) / 3)
    assert delta1(torch.tensor([1.2, 2.0, 2.0]), gt) == pytest.approx(2 / 3)
    assert constant_median_depth(gt, (2, 2)).unique().item() == 2.0


def test_depth_unet_fits():
    data = _scenes()
    torch.manual_seed(0)
    net = DepthUNet(width=8).fit(data, steps=30, batch=16, lr=3e-3)
    assert np.mean(net.history[-5:]) < np.mean(net.history[:5])
    with torch.no_grad():
        d = net(data.rgb0[:2], data.R[:2], data.t[:2])
    assert d.shape == (2, 16, 16) and (d > 0).all() and math.isfinite(float(d.sum()))


# ---------------------------------------------------------------- claims


@pytest.mark.parametrize(
    "name",
    [
        "C1-unified-nvs",
        "C2-zero-shot-depth",
        "C3-manipulation",
        "C4-composition",
        "C5-real-image-transfer",
    ],
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    from iclr26.claims import run_claim

    record = run_claim("world_model_3wm", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced"), record.get("reason")
    assert record["metrics"] and record["baseline"] and record["checks"]
    # every claim saves at least one figure (titled with its verdict), and each is a PNG
    assert record["figures"], name
    for figure in record["figures"]:
        assert (tmp_path / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the experiment's times come from the timing helper, with load-free counts beside them
    timing = record["metrics"]["experiment_timing"]
    assert timing["train"]["count_transformer_steps"] == 2 * 3  # 3WM and S2, 3 steps each
    assert timing["evaluate"]["count_transformer_calls"] > 0
    assert timing["train"]["cpu_s"] > 0 and timing["train"]["repeat"] == 1
