"""Tests of the synthetic vision data: determinism, shapes, ranges, speed, mask consistency."""

import time

import numpy as np
import pytest

from iclr26.data import vision as D

GENERATORS = {
    "shapes32": lambda n, seed: D.make_shapes(n, 10, 32, seed=seed),
    "shapesB64": lambda n, seed: D.make_shapes(n, 20, 64, family="B", seed=seed),
    "scenes": lambda n, seed: D.make_scenes(n, seed=seed),
    "parts": lambda n, seed: D.make_part_objects(n, seed=seed),
    "spurious": lambda n, seed: D.make_spurious_shapes(n, 0.9, seed=seed)[:4],
    "hier": lambda n, seed: D.make_hier_shapes(n, 4, 3, seed=seed),
}


@pytest.mark.parametrize("name", GENERATORS)
def test_generator_is_deterministic_typed_and_fast(name):
    gen = GENERATORS[name]
    gen(8, 0)  # warm caches
    start = time.process_time()  # CPU time: the machine may be shared
    first = gen(256, 3)
    elapsed = time.process_time() - start
    again = gen(256, 3)
    other = gen(256, 4)
    images = first[0]
    assert images.dtype == np.float32 and images.ndim == 4 and images.shape[:2] == (256, 3)
    assert images.min() >= 0.0 and images.max() <= 1.0
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(images, other[0])
    for extra in first[1:]:
        assert extra.dtype == np.int64 and len(extra) == 256
    # the budget is 1 s; CPU time with a margin, so that the check does not flake
    assert elapsed < 2.0, f"{name} took {elapsed:.2f} s of CPU for n = 256"


def test_families_are_disjoint_and_sized():
    assert len(D.FAMILY_A) == 10 and len(D.FAMILY_B) == 20
    assert not set(D.FAMILY_A) & set(D.FAMILY_B)
    assert len(set(D.FAMILY_A + D.FAMILY_B)) == 30


def test_shapes_labels_balanced_and_every_shape_distinct():
    images, labels = D.make_shapes(200, 10, 32, seed=0)
    assert np.bincount(labels).tolist() == [20] * 10
    # flat backgrounds, no noise variation needed: the 30 masks are pairwise different
    from iclr26.data.vision import _draw

    u, v = _draw.local_coords(32, np.zeros(1), np.zeros(1), np.full(1, 0.8), np.zeros(1))
    masks = [_draw.shape_mask(s, u, v)[0] for s in D.FAMILY_A + D.FAMILY_B]
    for i in range(30):
        assert masks[i].sum() > 30
        for j in range(i):
            assert (masks[i] != masks[j]).sum() > 10


def test_changing_background_texture_keeps_the_shapes():
    a, ya = D.make_shapes(16, 10, 32, texture_bg=True, seed=1)
    b, yb = D.make_shapes(16, 10, 32, texture_bg=False, seed=1)
    np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(a, b)


def test_scene_objects_are_visible_and_masks_agree():
    images, semantic, instance = D.make_scenes(128, seed=0)
    assert semantic.shape == instance.shape == (128, 64, 64)
    for i in range(128):
        ids = np.unique(instance[i])
        ids = ids[ids > 0]
        assert 1 <= len(ids) <= 4
        assert list(ids) == list(range(1, len(ids) + 1))
        for k in ids:
            region = instance[i] == k
            assert region.sum() >= D.MIN_VISIBLE
            assert len(np.unique(semantic[i][region])) == 1 and semantic[i][region][0] > 0
        assert ((semantic[i] > 0) == (instance[i] > 0)).all()


def test_videos_keep_instance_ids_over_time():
    start = time.process_time()
    videos, semantic, instance = D.make_videos(64, frames=4, seed=0)
    assert time.process_time() - start < 2.0
    assert videos.shape == (64, 4, 3, 64, 64) and instance.shape == (64, 4, 64, 64)
    assert videos.dtype == np.float32 and 0 <= videos.min() and videos.max() <= 1
    for i in range(64):
        for k in np.unique(instance[i]):
            if k == 0:
                continue
            classes = np.unique(semantic[i][instance[i] == k])
            assert len(classes) == 1  # an id is one object (one class) in every frame
    assert (instance[:, 0] != instance[:, -1]).any()  # objects move


def test_part_masks_cover_the_object_and_classes_differ_in_one_part():
    images, labels, parts = D.make_part_objects(64, seed=0)
    assert parts.min() == 0 and parts.max() == 4
    for i in range(64):
        present = set(np.unique(parts[i]).tolist())
        assert {1, 2, 3, 4} <= present
    head, wing, tail = D.part_attributes(np.arange(16))
    codes = set(zip(head, wing, tail))
    assert len(codes) == 16
    for c in range(16):
        diffs = [
            sum(a != b for a, b in zip((head[c], wing[c], tail[c]), (head[d], wing[d], tail[d])))
            for d in range(16)
        ]
        assert 1 in diffs


def test_spurious_background_correlation_follows_rho():
    _, y, bg, groups, captions = D.make_spurious_shapes(2000, 0.9, seed=0)
    match = (bg == y % 2).mean()
    assert 0.87 < match < 0.93
    np.testing.assert_array_equal(groups, 2 * y + bg)
    assert captions[0].startswith("a photo of a ") and captions[0].endswith(D.BACKGROUNDS[bg[0]])


def test_hierarchy_labels_nest():
    _, y_sub, y_super = D.make_hier_shapes(120, 4, 3, seed=0)
    np.testing.assert_array_equal(y_sub // 3, y_super)
    assert set(y_sub.tolist()) == set(range(12))


def test_real_images():
    images = D.skimage_images()
    assert set(images) == set(D.SKIMAGE_RGB)
    for arr in images.values():
        assert arr.dtype == np.float32 and arr.shape[0] == 3 and 0 <= arr.min() and arr.max() <= 1
    crops = D.skimage_crops(16, 32, seed=0)
    assert crops.shape == (16, 3, 32, 32) and crops.dtype == np.float32
    np.testing.assert_array_equal(crops, D.skimage_crops(16, 32, seed=0))
    x, y = D.digits(16, channels=3)
    assert x.shape == (1797, 3, 16, 16) and x.max() <= 1 and y.max() == 9
    faces, labels = D.lfw_faces()
    assert faces.shape == (200, 1, 25, 25) and labels.sum() == 100


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: D.make_shapes(0), "n"),
        (lambda: D.make_shapes(4, n_classes=11), "n_classes"),
        (lambda: D.make_shapes(4, family="C"), "family"),
        (lambda: D.make_scenes(4, n_objects=(3, 2)), "n_objects"),
        (lambda: D.make_spurious_shapes(4, rho=1.5), "rho"),
        (lambda: D.make_spurious_shapes(4, rho=float("nan")), "rho"),
        (lambda: D.make_shapes(4, seed=-1), "seed"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
