import numpy as np
import pytest

from iclr26 import data


def test_stdlib_splits_are_deterministic_and_disjoint():
    keys = {s: [t.key for t in data.stdlib_texts(s, max_files=None)] for s in data.stdlib.SPLITS}
    assert keys["train"] and keys["val"] and keys["test"]
    assert not set(keys["train"]) & set(keys["test"])
    assert not set(keys["val"]) & set(keys["test"])
    assert not set(keys["train"]) & set(keys["val"])
    again = [t.key for t in data.stdlib_texts("test")]
    assert again == keys["test"] and again == sorted(again)
    total = sum(len(v) for v in keys.values())
    assert 0.02 < len(keys["test"]) / total < 0.09


def test_split_rule_is_crc32_mod_20():
    import zlib

    for key in ["json/decoder.py", "os.py", "zipfile/__init__.py"]:
        bucket = zlib.crc32(key.encode()) % 20
        expected = "test" if bucket == 0 else "val" if bucket == 1 else "train"
        assert data.split_of(key) == expected


def test_fingerprint_is_stable_hex():
    fp = data.corpus_fingerprint()
    assert fp == data.corpus_fingerprint() and len(fp) == 64


def test_prose_and_docstrings_kinds():
    prose = data.stdlib_texts("train", kinds=("prose",))
    assert prose and all(t.kind == "prose" for t in prose)
    docs = data.stdlib_texts("test", kinds=("docstrings",), max_files=3)
    assert docs and all(t.kind == "docstrings" for t in docs)
    mixed = data.stdlib_corpus("val", kinds=("code", "prose"), max_files=2)
    assert all(isinstance(t, str) for t in mixed) and len(mixed) <= 4


def test_bad_corpus_arguments():
    with pytest.raises(ValueError, match="split"):
        data.stdlib_corpus("dev")
    with pytest.raises(ValueError, match="kinds"):
        data.stdlib_corpus("train", kinds=("poetry",))
    with pytest.raises(ValueError):
        data.stdlib_corpus("train", max_files=0)


def test_bundled_sets():
    digits = data.load("digits")
    assert digits.X.shape == (1797, 64) and digits.n_classes == 10
    faces = data.load("lfw_subset")
    assert faces.X.shape == (200, 625) and set(np.unique(faces.y)) == {0, 1}
    with pytest.raises(ValueError, match="valid"):
        data.load("mnist")


def test_images_and_synthetic():
    cam = data.load_image("camera")
    assert cam.ndim == 2 and 0 <= cam.min() and cam.max() <= 1
    assert data.load_image("astronaut", gray=True).ndim == 2
    X1, y1 = data.gaussian_classes(200, [[0, 0], [3, 3]], seed=1)
    X2, y2 = data.gaussian_classes(200, [[0, 0], [3, 3]], seed=1)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    tr, te = data.train_test_indices(100, 0.2, seed=0)
    assert len(te) == 20 and not set(tr) & set(te)
    with pytest.raises(ValueError):
        data.gaussian_classes(200, [[0, 0]], cov=np.eye(3))
