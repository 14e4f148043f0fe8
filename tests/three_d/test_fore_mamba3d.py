import math

import numpy as np
import pytest
import torch
from mambapy.mamba import MambaBlock
from PIL import Image

from iclr26.three_d.fore_mamba3d import (
    CenterHead,
    ForeMamba3DBackbone,
    OpenPCDetForeMamba3D,
    SASFMamba,
    SparseDownsample,
    SparseNeighbours,
    SyntheticLidarScenes,
    VoxelMambaBackbone,
    average_precision,
    axis_sparse_conv,
    center_distance_map,
    hilbert_index,
    hilbert_order,
    rgsw_patches,
    rotate_coords,
    train_detector,
)

GRID = (16, 16, 8)


def _full_grid(n):
    return np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)


def test_hilbert_is_a_face_adjacent_permutation():
    cells = _full_grid(8)
    h = hilbert_index(cells, 3)
    assert sorted(h.tolist()) == list(range(512))
    walk = cells[np.argsort(h)]
    assert np.all(np.abs(np.diff(walk, axis=0)).sum(1) == 1)


def test_hilbert_keeps_neighbours_close_and_rotation_changes_order():
    cells = _full_grid(8)
    order = hilbert_order(cells, 0.0, (8, 8, 8))
    rank = np.empty(len(order), int)
    rank[order] = np.arange(len(order))
    key = {tuple(c): i for i, c in enumerate(cells)}
    pairs = [(key[tuple(c)], key[tuple(c + [1, 0, 0])]) for c in cells if c[0] < 7]
    gap = np.mean([abs(rank[a] - rank[b]) for a, b in pairs])
    rand = np.random.default_rng(0).permutation(len(cells))
    gap_rand = np.mean([abs(rand[a] - rand[b]) for a, b in pairs])
    assert gap < gap_rand / 3
    assert not np.array_equal(order, hilbert_order(cells, math.pi / 2, (8, 8, 8)))


def test_quarter_rotation_maps_grid_onto_itself():
    cells = _full_grid(6)
    rot = rotate_coords(cells, math.pi / 2, (6, 6, 6))
    assert {tuple(c) for c in rot} == {tuple(c) for c in cells}
    # (x, y) -> (y, -x) shifted: a hand check on one voxel
    assert rotate_coords(np.array([[1, 2, 3]]), math.pi / 2, (6, 6, 6)).tolist() == [[2, 4, 3]]


def test_rgsw_patches_cover_once_and_straddle():
    base = rgsw_patches(200, 64, shift=False)
    slide = rgsw_patches(200, 64, shift=True)
    for parts in (base, slide):
        assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(200))
    assert len(base) == math.ceil(200 / 64)
    for i in range(len(base) - 1):
        b, n = base[i], base[i + 1]
        s = slide[i + 1]
        assert s[0] == b[len(b) // 2] and s[-1] == n[len(n) // 2 - 1]


def _block(**kw):
    torch.manual_seed(0)
    return SASFMamba(8, d_state=4, **kw)


def test_exposed_states_reproduce_mambapy_block():
    blk = _block(use_saf=False, use_ssf=False, bidirectional=False)
    assert isinstance(blk.cell, MambaBlock)
    x = torch.randn(2, 11, 8)
    ref = x + blk.cell(blk.norm(x))
    assert torch.allclose(blk(x), ref, atol=1e-5)


def test_bidirectional_reverse_symmetry():
    blk = _block(use_saf=False, use_ssf=False)
    x = torch.randn(1, 13, 8)
    assert torch.allclose(blk(x.flip(1)), blk(x).flip(1), atol=1e-5)


def test_pads_leave_states_untouched():
    blk = _block(use_saf=False, use_ssf=False)
    x = torch.randn(1, 9, 8)
    xp = torch.cat([x, torch.randn(1, 4, 8)], 1)
    valid = torch.arange(13)[None] < 9
    assert torch.allclose(blk(xp, valid)[:, :9], blk(x), atol=1e-5)


def test_axis_sparse_conv_equals_dense_conv3d():
    torch.manual_seed(0)
    n, k, ch = 5, 3, 2
    coords = torch.from_numpy(_full_grid(n))
    vals = torch.randn(len(coords), ch)
    w = torch.randn(3, k, ch)
    out = axis_sparse_conv(vals, SparseNeighbours(coords, k // 2), w)
    dense = vals.t().reshape(1, ch, n, n, n)
    ref = 0
    for axis in range(3):
        shape = [1, 1, 1]
        shape[axis] = k
        kern = w[axis].t().reshape(ch, 1, *shape)
        pad = [s // 2 for s in shape]
        ref = ref + torch.nn.functional.conv3d(dense, kern, padding=pad, groups=ch)
    assert torch.allclose(out, ref.reshape(ch, -1).t(), atol=1e-5)


def test_saf_makes_scan_non_causal_through_same_class_states():
    blk = _block(use_saf=True, use_ssf=False, bidirectional=False)
    with torch.no_grad():
        blk.saf_weight.normal_()
    L = 10
    x = torch.randn(1, L, 8, requires_grad=True)
    ids = torch.arange(L)[None]
    sem = torch.tensor([1, 0, 0, 0, 0, 0, 0, 0, 0, 1])  # voxels 0 and 9 share a class
    y = blk(x, None, ids, sem, None)
    (g,) = torch.autograd.grad(y[0, 0].sum(), x)
    assert g[0, 9].abs().sum() > 0  # a later voxel of the same class reaches voxel 0
    plain = _block(use_saf=False, use_ssf=False, bidirectional=False)
    y = plain(x, None, ids, sem, None)
    (g,) = torch.autograd.grad(y[0, 0].sum(), x)
    assert g[0, 9].abs().sum() == 0  # a causal scan cannot


def test_saf_ssf_identity_at_init():
    x = torch.randn(2, 6, 8)
    ids = torch.arange(12).reshape(2, 6)
    coords = torch.from_numpy(_full_grid(3)[:12])
    sem = torch.randint(0, 3, (12,))
    nb = SparseNeighbours(coords, 3)
    a = _block(use_saf=True, use_ssf=True)(x, None, ids, sem, nb)
    b = _block(use_saf=False, use_ssf=False)(x, None, ids, sem, nb)
    assert torch.allclose(a, b, atol=1e-5)


@pytest.fixture(scope="module")
def scene():
    return SyntheticLidarScenes(2, grid_shape=GRID, seed=1)[0]


def _tiny(**kw):
    torch.manual_seed(0)
    return ForeMamba3DBackbone(dim=8, grid_shape=GRID, patch_len=16, d_state=4, **kw)


def test_scene_statistics(scene):
    assert len(scene.coords) > 50 and scene.fg.mean() < 0.5  # background dominates
    assert torch.equal(scene.fg > 0, scene.sem > 0)
    assert (scene.coords.max(0).values < torch.tensor(GRID)).all()


def test_sampler_keeps_ceil_alpha_n_and_bypass_restores(scene):
    bb = _tiny(fg_ratio=0.2).eval()
    with torch.no_grad():
        out = bb(scene.coords, scene.feats)
    n = len(scene.coords)
    k = math.ceil(0.2 * n)
    assert len(out["fg_index"]) == k == len(set(out["fg_index"].tolist()))
    assert out["fg_index"].tolist() == torch.topk(out["fg_logits"], k).indices.tolist()
    assert out["bev"].shape == (1, 8, GRID[0] // 2, GRID[1] // 2)
    counts = bb.tokens_per_layer(n)
    assert bb.patch_content == 15  # 16 with the local token
    m0, m1 = len(rgsw_patches(k, 15, False)), len(rgsw_patches(k, 15, True))
    assert out["tokens_processed"] == counts["tokens"] == 2 * (3 * k + 2 * m0 + m1)
    assert VoxelMambaBackbone(dim=8, grid_shape=GRID).tokens_per_layer(n)["tokens"] == 3 * n


def test_summed_rotations_invariant_to_rotation_order(scene):
    bb = _tiny().eval()
    with torch.no_grad():
        a = bb(scene.coords, scene.feats)["bev"]
        bb.thetas = bb.thetas[::-1]
        bb.layers = torch.nn.ModuleList(list(bb.layers)[::-1])
        b = bb(scene.coords, scene.feats)["bev"]
    assert torch.allclose(a, b, atol=1e-5)


def test_empty_point_cloud_is_a_clear_error():
    bb = _tiny()
    with pytest.raises(ValueError, match="coords"):
        bb(torch.zeros(0, 3, dtype=torch.long), torch.zeros(0, 4))


def test_average_precision_hand_values():
    assert average_precision([0.9, 0.8, 0.7], [True, False, True], 2) == pytest.approx(
        0.5 + 0.5 * 2 / 3
    )
    boxes = np.array([[2.0, 3.0, 0, 4, 2, 1.5, 0], [8.0, 8.0, 0, 0.6, 0.6, 1.7, 0]])
    labels = np.array([0, 1])
    perfect = [[(0, 0.9, 2.1, 3.0), (1, 0.8, 8.0, 8.4)]]
    assert center_distance_map(perfect, [(boxes, labels)]) == pytest.approx(1.0)
    off = [[(0, 0.9, 3.5, 3.0), (1, 0.8, 8.0, 8.4)]]  # car 1.5 m off: a hit only at 2 m
    assert center_distance_map(off, [(boxes, labels)]) == pytest.approx(0.75)


def test_tiny_training_lowers_heatmap_loss():
    data = SyntheticLidarScenes(3, grid_shape=GRID, seed=2)
    bb = _tiny()
    head = CenterHead(bb.out_ch, hidden=8)
    hist = train_detector(bb, head, data, steps=16, lr=5e-3)
    assert np.mean(hist[-4:]) < np.mean(hist[:4])


def test_scene_instances_match_boxes():
    scene = SyntheticLidarScenes(1, grid_shape=(32, 32, 8), seed=0)[0]
    assert len(scene.boxes) >= 2
    assert torch.equal(scene.instance > 0, scene.fg > 0)
    ids = scene.instance[scene.instance > 0] - 1
    assert ids.max() < len(scene.boxes)
    assert torch.equal(scene.sem[scene.instance > 0] - 1, torch.as_tensor(scene.labels)[ids])


def _two_object_scene():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (12, 3)) + np.array([1, 1, 0])
    b = rng.integers(0, 4, (12, 3)) + np.array([10, 9, 2])
    bg = rng.integers(0, 16, (30, 3)) * np.array([1, 1, 0]) // np.array([1, 1, 1])
    coords = np.unique(np.concatenate([a, b, bg]), axis=0)
    inst = np.zeros(len(coords), dtype=np.int64)
    inst[(coords[:, 0] < 6) & (coords[:, 1] < 6) & (coords[:, 2] > 0)] = 1
    inst[(coords[:, 0] >= 10) & (coords[:, 1] >= 9) & (coords[:, 2] > 1)] = 2
    coords = torch.from_numpy(coords)
    return coords, torch.rand(len(coords), 4, generator=torch.Generator().manual_seed(0)), inst


def test_cross_instance_influence_equals_the_jacobian_sum():
    coords, feats, inst = _two_object_scene()
    inst = torch.from_numpy(inst)
    bb = _tiny().eval()
    with torch.no_grad():  # SAF/SSF away from the identity, so they carry information
        for layers in bb.layers:
            for blk in layers:
                blk.saf_weight.normal_(0, 0.3)
                blk.ssf_weight.normal_(0, 0.3)
    got = bb.cross_instance_influence(coords, feats, inst, oracle_foreground=True)
    with torch.no_grad():
        x, _, sem_logits, _ = bb._select(coords, feats)
    idx = torch.nonzero(inst > 0).squeeze(1)
    sel = inst[idx]
    ids, counts = torch.unique(sel, return_counts=True)
    a = ids[counts.argmax()]
    probe = torch.randn(bb.dim, generator=torch.Generator().manual_seed(0))
    probe = probe / probe.norm()
    sem = sem_logits[idx].argmax(1)
    xf = x[idx].clone().requires_grad_(True)
    enc = bb._encode(coords[idx], xf, sem)
    g = 0  # the probed Jacobian rows of A, one voxel i at a time
    for i in torch.nonzero(sel == a).squeeze(1).tolist():
        g = g + torch.autograd.grad(enc[i] @ probe, xf, retain_graph=True)[0]
    norms = g.norm(dim=1) / int((sel == a).sum())
    assert got["cross"] == pytest.approx(float(norms[sel != a].mean()), rel=1e-4)
    assert got["within"] == pytest.approx(float(norms[sel == a].mean()), rel=1e-4)
    assert got["cross"] > 0 and got["n_other"] == int((sel != a).sum())
    one = inst.clone()
    one[one == 2] = 0  # a single object: nothing to measure
    assert math.isnan(bb.cross_instance_influence(coords, feats, one)["cross"])


@pytest.mark.parametrize(
    "name",
    [
        "C1-accuracy-at-lower-cost",
        "C2-fixes-beat-naive-fore-only",
        "C3-faster-than-all-voxel",
        "C4-cross-instance-influence",
        "C5-ablations",
    ],
)
def test_claims_run_at_smoke_scale(name, tmp_path):
    from iclr26.claims import run_claim

    record = run_claim("fore_mamba3d", name, "smoke", out_dir=tmp_path)
    assert record["verdict"] in ("reproduced", "not reproduced"), record.get("reason")
    assert record["metrics"] and record["baseline"]
    assert record["figures"], "every claim saves a figure"
    for fig in record["figures"]:
        with Image.open(tmp_path / fig) as im:
            im.verify()


def test_full_scale_path_runs_on_an_explicit_device(tmp_path, monkeypatch):
    """Full scale's code path (device from ctx, disk checkpoint keyed by the device) on a tiny
    setting, with device="cpu" passed explicitly."""
    from iclr26.claims import Context
    from iclr26.three_d.fore_mamba3d import claims

    assert claims._device(Context(scale="full", device="cuda:1")) == "cuda:1"
    assert claims._device(Context(scale="quick", device="cuda:1")) == "cpu"
    monkeypatch.setenv("ICLR26_CACHE", str(tmp_path))
    tiny = dict(grid=GRID, dim=4, n_train=1, n_test=1, steps=1, patch=16, seeds=1)
    exp = claims._build_experiment("full", 0, "cpu", cache=True, setting=tiny)
    (ckpt,) = (tmp_path / "fore_mamba3d").glob("experiment-*.pt")
    stored = torch.load(ckpt, weights_only=True)
    for name in claims._models(tiny):
        assert all(t.device.type == "cpu" for t in stored[name]["state"].values())
        assert all(p.device.type == "cpu" for p in exp[name]["model"].parameters())
        assert all(isinstance(m, float) for m in stored[name]["map"])
    assert exp["_device"] == "cpu"

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(claims, "_train_all", no_training)
    again = claims._build_experiment("full", 0, "cpu", cache=True, setting=tiny)  # loads
    assert again["fore_mamba3d"]["map"] == exp["fore_mamba3d"]["map"]
    with pytest.raises(AssertionError, match="trained again"):  # the device is in the key
        claims._build_experiment("full", 0, "meta", cache=True, setting=tiny)


# ----------------------------------------------------------------------------- stages


def test_default_is_one_stage_and_dims_of_one_builds_the_same_model(scene):
    a = _tiny()
    torch.manual_seed(0)
    b = ForeMamba3DBackbone(dims=(8,), grid_shape=GRID, patch_len=16, d_state=4)
    assert a.n_stages == b.n_stages == 1 and len(a.stages) == 0
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    with pytest.raises(ValueError, match="dim"):
        ForeMamba3DBackbone(dim=8, dims=(16, 32))


def test_sparse_downsample_equals_strided_dense_conv():
    torch.manual_seed(0)
    n, c_in, c_out = 4, 3, 5
    coords = torch.from_numpy(_full_grid(n))
    keep = torch.rand(len(coords)) < 0.6
    coords = coords[keep]
    feats = torch.randn(len(coords), c_in)
    ds = SparseDownsample(c_in, c_out)
    new, out, parent = ds(coords, feats)
    assert torch.equal(new[parent], coords // torch.tensor([2, 2, 1]))
    dense = torch.zeros(1, c_in, n, n, n)
    dense[0][:, coords[:, 0], coords[:, 1], coords[:, 2]] = feats.t()
    w = ds.weight.reshape(2, 2, 1, c_in, c_out).permute(4, 3, 0, 1, 2)  # (out, in, 2, 2, 1)
    ref = torch.nn.functional.conv3d(dense, w, stride=(2, 2, 1))[0]
    ref = ref[:, new[:, 0], new[:, 1], new[:, 2]].t() + ds.bias
    assert torch.allclose(out, torch.relu(ds.norm(ref)), atol=1e-5)
    assert ds.out_shape((5, 4, 3)) == (3, 2, 3)


def test_two_stages_downsample_between_stages(scene):
    torch.manual_seed(0)
    bb = ForeMamba3DBackbone(dims=(8, 12), grid_shape=GRID, patch_len=16, d_state=4).eval()
    assert bb.stage_grids == [GRID, (8, 8, 8)] and bb.out_ch == 12
    with torch.no_grad():
        out = bb(scene.coords, scene.feats)
    assert out["bev"].shape == (1, 12, 4, 4)
    n0, n1 = out["stage_voxels"]
    assert n0 == len(scene.coords)
    assert n1 == len(torch.unique(scene.coords // torch.tensor([2, 2, 1]), dim=0)) < n0
    (st,) = out["stages"]
    assert len(st["fg_logits"]) == n1 and len(st["fg_index"]) == math.ceil(0.2 * n1)
    assert len(st["parent"]) == n0 and int(st["parent"].max()) == n1 - 1
    counts = bb.tokens_per_layer([n0, n1])
    assert out["tokens_processed"] == counts["tokens"]
    one = _tiny()
    assert counts["per_stage"][0] == {
        k: one.tokens_per_layer(n0)[k] for k in ("selected", "tokens")
    }
    assert bb.ssm_flops([n0, n1]) > one.ssm_flops(n0)
    with pytest.raises(ValueError, match="n_voxels"):
        bb.tokens_per_layer(n0)


def test_two_stage_loss_supervises_every_sampler():
    from iclr26.three_d.fore_mamba3d import detection_loss

    scene = SyntheticLidarScenes(3, grid_shape=GRID, seed=1)[2]  # has objects
    assert len(scene.boxes) > 0
    torch.manual_seed(0)
    bb = ForeMamba3DBackbone(dims=(8, 8), grid_shape=GRID, patch_len=16, d_state=4)
    head = CenterHead(bb.out_ch, hidden=8)
    terms = detection_loss(bb, head, scene, 0.5)
    terms["total"].backward()
    for part in (bb, bb.stages[0]):
        assert part.score_out.weight.grad.abs().sum() > 0
        assert part.sem_head[0].weight.grad.abs().sum() > 0


# ----------------------------------------------------------------------------- OpenPCDet


def _batch_dict(n=2, seed=1):
    """An OpenPCDet-style batch: voxel_coords [batch_idx, z, y, x] as a float tensor (as
    OpenPCDet's load_data_to_gpu leaves it), gt_boxes (B, M, 8) with 1-based classes."""
    data = SyntheticLidarScenes(n + 1, grid_shape=GRID, seed=seed)
    scenes = [data[i + 1] for i in range(n)]  # scene 0 of seed 1 has no object
    coords = torch.cat(
        [
            torch.cat([torch.full((len(s.coords), 1), b), s.coords[:, [2, 1, 0]]], 1)
            for b, s in enumerate(scenes)
        ]
    ).float()
    feats = torch.cat([s.feats for s in scenes]).requires_grad_(True)
    m = max(len(s.boxes) for s in scenes)
    gt = torch.zeros(n, m, 8)
    for b, s in enumerate(scenes):
        gt[b, : len(s.boxes), :7] = torch.as_tensor(s.boxes, dtype=torch.float32)
        gt[b, : len(s.boxes), 7] = torch.as_tensor(s.labels, dtype=torch.float32) + 1
    batch = dict(voxel_features=feats, voxel_coords=coords, batch_size=n, gt_boxes=gt)
    return batch, scenes


CFG = {"NAME": "ForeMamba3D", "DIMS": [8], "PATCH_LEN": 16, "D_STATE": 4, "NUM_SEM_CLASSES": 3}
PCDET = dict(
    input_channels=4,
    grid_size=np.array([16, 16, 8]),
    voxel_size=[0.5, 0.5, 0.5],
    point_cloud_range=[0.0, 0.0, 0.0, 8.0, 8.0, 4.0],
)


def test_openpcdet_adapter_follows_the_backbone_contract():
    torch.manual_seed(0)
    net = ForeMamba3DBackbone.openpcdet_compatible(CFG, **PCDET)
    assert isinstance(net, OpenPCDetForeMamba3D)
    assert net.num_point_features == 8 and net.backbone_channels == {"x_conv1": 8}
    batch, scenes = _batch_dict()
    out = net(batch)
    assert out is batch  # OpenPCDet modules update and return the batch dict
    enc = out["encoded_spconv_tensor"]
    assert out["encoded_spconv_tensor_stride"] == 1 and enc.spatial_shape == [1, 16, 16]
    assert enc.indices.dtype == torch.int32 and (enc.indices[:, 1] == 0).all()
    # HeightCompression: dense (B, C, D, H, W) viewed as (B, C * D, H, W)
    spatial = enc.dense()
    assert spatial.shape == (2, 8, 1, 16, 16)
    spatial = spatial.view(2, 8, 16, 16)
    x1 = out["multi_scale_3d_features"]["x_conv1"]
    assert out["multi_scale_3d_strides"] == {"x_conv1": 1}
    assert x1.features.shape == (len(batch["voxel_coords"]), 8) and x1.spatial_shape == [8, 16, 16]
    # sample 1's pillars are the z-max of the backbone's own voxel features
    net.eval()
    with torch.no_grad():
        spatial = net(dict(batch))["encoded_spconv_tensor"].dense()
        s = scenes[1]
        (lv,) = net.backbone.encode_voxels(s.coords, s.feats)
        ref = lv["feats"].new_full((16, 16, lv["feats"].shape[1]), -float("inf"))  # (y, x, C)
        for (x, y, _), f in zip(s.coords.tolist(), lv["feats"]):
            ref[y, x] = torch.maximum(ref[y, x], f)
        occupied = torch.isfinite(ref[..., 0])
        assert torch.allclose(spatial[1, :, 0][:, occupied].t(), ref[occupied], atol=1e-5)
        assert (spatial[1, :, 0][:, ~occupied] == 0).all()
    net.train()
    out = net(dict(batch, voxel_features=batch["voxel_features"]))
    out["encoded_spconv_tensor"].dense().square().sum().backward()
    g = batch["voxel_features"].grad
    assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0
    assert net.backbone.fuse[0].weight.grad.abs().sum() > 0


def test_openpcdet_adapter_two_stages_pillar_output_and_aux_loss():
    torch.manual_seed(0)
    cfg = dict(CFG, DIMS=[8, 12], OUTPUT="pillar")
    net = ForeMamba3DBackbone.openpcdet_compatible(cfg, **PCDET)
    assert net.num_point_features == 12
    assert net.backbone_channels == {"x_conv1": 8, "x_conv2": 12}
    batch, scenes = _batch_dict()
    n_in = len(batch["voxel_coords"])
    out = net(batch)
    assert out["encoded_spconv_tensor_stride"] == 2
    assert out["multi_scale_3d_strides"] == {"x_conv1": 1, "x_conv2": 2}
    assert out["multi_scale_3d_features"]["x_conv2"].spatial_shape == [8, 8, 8]
    pf, pc = out["pillar_features"], out["voxel_coords"]
    assert out["voxel_features"] is pf and pf.shape == (len(pc), 12) and len(pc) < n_in
    assert (pc[:, 1] == 0).all() and int(pc[:, 2].max()) < 8 and int(pc[:, 3].max()) < 8
    # PointPillarScatter3d's index (z + y * nx + x) is unique per sample
    for b in range(2):
        this = pc[pc[:, 0] == b].long()
        key = this[:, 1] + this[:, 2] * 8 + this[:, 3]
        assert len(torch.unique(key)) == len(key)
    # the labels the adapter derives from gt_boxes are the scenes' own
    for b, s in enumerate(scenes):
        assert len(s.boxes) > 0
        fg, sem = net._labels(s.coords, batch["gt_boxes"][b], 1)
        assert (sem == s.sem).float().mean() > 0.99 and torch.equal(fg > 0, sem > 0)
    loss, tb = net.get_loss()
    assert loss.ndim == 0 and torch.isfinite(loss) and loss > 0
    assert set(tb) == {"fore_loss_fg", "fore_loss_sem", "fore_loss_aux"}
    loss.backward()
    assert net.backbone.stages[0].score_out.weight.grad.abs().sum() > 0


def test_openpcdet_adapter_refuses_a_malformed_batch_dict():
    net = ForeMamba3DBackbone.openpcdet_compatible(CFG, **PCDET)
    batch, _ = _batch_dict()
    bad = {k: v for k, v in batch.items() if k != "voxel_coords"}
    with pytest.raises(ValueError, match="voxel_coords"):
        net(bad)
    with pytest.raises(ValueError, match="voxel_features"):
        net(dict(batch, voxel_features=batch["voxel_features"][:, :3]))
    with pytest.raises(ValueError, match="voxel_coords"):
        net(dict(batch, voxel_coords=batch["voxel_coords"] + 0.5))
    with pytest.raises(ValueError, match="voxel_coords.*x out of range"):
        net(dict(batch, voxel_coords=batch["voxel_coords"] * torch.tensor([1, 1, 1, 3.0])))
    with pytest.raises(ValueError, match="voxel_coords.*batch_idx"):
        net(dict(batch, batch_size=1))
    with pytest.raises(ValueError, match="batch_size"):
        net(dict(batch, batch_size=0))
    with pytest.raises(TypeError, match="batch_dict"):
        net([batch])
    with pytest.raises(ValueError, match="model_cfg"):
        ForeMamba3DBackbone.openpcdet_compatible(dict(CFG, FG_RATI=0.3), **PCDET)


def test_alpha_sweep_is_reported_at_full_scale_only():
    from iclr26.claims import Context
    from iclr26.three_d.fore_mamba3d import claims

    assert "alphas" not in claims._setting(Context(scale="quick"))
    assert claims._setting(Context(scale="full"))["alphas"] == (0.1, 0.5, 1.0)
    tiny = dict(grid=GRID, dim=4, n_train=1, n_test=1, steps=1, patch=16, seeds=1, alphas=(1.0,))
    exp = claims._build_experiment("full", 0, "cpu", cache=False, setting=tiny)
    sweep = claims._alpha_sweep(exp)
    assert list(sweep) == ["0.2", "1"]
    assert sweep["1"]["tokens"] > sweep["0.2"]["tokens"]
    assert sweep["0.2"]["paper_map_nds"] == [68.4, 72.3]
    assert claims._alpha_sweep({"_setting": {}}) == {}


# ----------------------------------------------------------------------------- mamba-ssm


def _ref_selective_scan(u, delta, A, B, C, D=None, z=None, delta_softplus=False):
    """A sequential reference with the signature and semantics of mamba_ssm's
    selective_scan_fn (u, delta, z: (b, d, L); A: (d, n); B, C: (b, n, L)); the wiring to the
    fused kernel is checked against it, since the kernel itself cannot run here."""
    assert not delta_softplus
    h = u.new_zeros(u.shape[0], u.shape[1], A.shape[1])
    ys = []
    for t in range(u.shape[2]):
        h = torch.exp(delta[:, :, t, None] * A) * h
        h = h + delta[:, :, t, None] * B[:, None, :, t] * u[:, :, t, None]
        ys.append((h * C[:, None, :, t]).sum(-1))
    y = torch.stack(ys, -1) + u * D[None, :, None]
    return y * torch.nn.functional.silu(z)


def test_mamba_ssm_scan_falls_back_with_a_clear_message():
    x = torch.randn(2, 9, 8)
    ref = _block(use_saf=False, use_ssf=False)
    blk = _block(use_saf=False, use_ssf=False, scan="mamba_ssm")
    with pytest.warns(RuntimeWarning, match="falls back to the torch scan: .*CUDA device"):
        y = blk(x)
    assert torch.allclose(y, ref(x))
    with pytest.warns(RuntimeWarning, match="SAF/SSF re-mix the SSM states"):
        _block(scan="mamba_ssm")(x)
    bb = ForeMamba3DBackbone(dim=8, grid_shape=GRID, patch_len=16, d_state=4, scan="mamba_ssm")
    assert all(blk.scan == "mamba_ssm" for layers in bb.layers for blk in layers)


def test_mamba_ssm_wiring_matches_the_torch_scan(monkeypatch):
    import warnings

    from iclr26.three_d.fore_mamba3d import ssm

    monkeypatch.setattr(ssm, "_kernel_usable", lambda x, needs_states: (_ref_selective_scan, ""))
    x = torch.randn(2, 9, 8)
    valid = torch.arange(9)[None].expand(2, 9) < torch.tensor([[9], [6]])
    ref = _block(use_saf=False, use_ssf=False)
    blk = _block(use_saf=False, use_ssf=False, scan="mamba_ssm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the (stand-in) kernel runs: no fallback
        y = blk(x, valid)
    assert torch.allclose(y[valid], ref(x, valid)[valid], atol=1e-5)


def test_a_scene_without_objects_trains(scene):
    from iclr26.three_d.fore_mamba3d import center_targets, detection_loss

    assert len(scene.boxes) == 0  # the fixture scene (16 x 16 grid, seed 1) has no object
    heat, reg, cells = center_targets(scene.boxes, scene.labels, (8, 8), 1.0)
    assert heat.shape == (2, 8, 8) and heat.sum() == 0 and reg.shape == (0, 6) and len(cells) == 0
    bb = _tiny()
    terms = detection_loss(bb, CenterHead(bb.out_ch, hidden=8), scene, 0.5)
    assert torch.isfinite(terms["total"]) and terms["reg"] == 0
    terms["total"].backward()
