"""Loaders for the two standard spurious-correlation benchmarks, read from a copy the user
already has on disk (nothing is downloaded):

- :func:`load_waterbirds`: the Waterbirds release of Sagawa et al. (group DRO, 2020), also
  distributed by WILDS: a folder with ``metadata.csv`` (columns ``img_id, img_filename, y,
  split, place, place_filename``; ``split`` 0 train / 1 val / 2 test; ``y`` 0 landbird /
  1 waterbird; ``place`` 0 land / 1 water background) and the images under the paths in
  ``img_filename``.
- :func:`load_celeba`: CelebA in the official layout (``list_attr_celeba.txt`` and
  ``list_eval_partition.txt``) or the CSV layout that group DRO and WILDS read
  (``list_attr_celeba.csv`` and ``list_eval_partition.csv``), with the aligned images in
  ``img_align_celeba/``. Attributes are -1/1 in the files and 0/1 here; partitions are
  0 train / 1 val / 2 test.

Both return the same dictionary: ``images`` float32 ``(n, 3, size, size)`` in [0, 1],
``y``, ``spurious`` and ``groups = 2 * y + spurious`` (int64), ``filenames`` as listed in the
metadata, ``class_names`` / ``spurious_names`` (for prompts), ``group_counts``, ``n_listed``
(rows of the split before ``max_n``) and ``skipped``. No listed image is dropped silently: a
missing or unreadable image raises an error that names it, unless ``on_error="skip"``, which
records every skipped file in ``skipped``.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from pathlib import Path

import numpy as np

from iclr26 import validation as V

__all__ = ["load_celeba", "load_waterbirds", "stratified_subset"]

SPLITS = {"train": 0, "val": 1, "test": 2}
ON_ERROR = ("raise", "skip")
WATERBIRDS_ENV = "ICLR26_WATERBIRDS"
CELEBA_ENV = "ICLR26_CELEBA"
WATERBIRDS_COLUMNS = ("img_filename", "y", "split", "place")
_LISTED = 10  # file names quoted in an error message before "... and N more"


def _quote(names: list[str]) -> str:
    head = ", ".join(names[:_LISTED])
    rest = len(names) - _LISTED
    return head + (f", ... and {rest} more" if rest > 0 else "")


def _check_root(root, env: str, what: str) -> Path:
    if root is None:
        root = os.environ.get(env)
        if not root:
            raise FileNotFoundError(f"root: no {what} folder given and ${env} is not set")
    if not isinstance(root, str | os.PathLike):
        raise TypeError(f"root must be a path (str or os.PathLike), got {type(root).__name__}")
    folder = Path(root)
    if not folder.is_dir():
        raise FileNotFoundError(f"root: no such folder {str(folder)!r} ({what} root)")
    return folder


def _check_common(split, size, max_n, on_error) -> tuple[int, int, int | None]:
    if not isinstance(split, str):
        raise TypeError(f"split must be a string, one of {', '.join(SPLITS)}; got {split!r}")
    V.check_choice(split, "split", tuple(SPLITS))
    size = V.check_int(size, "size", low=1)
    max_n = V.check_int(max_n, "max_n", low=1, allow_none=True)
    V.check_choice(on_error, "on_error", ON_ERROR)
    return SPLITS[split], size, max_n


def _binary(value: str, where: str, column: str, codes: dict[str, int]) -> int:
    key = value.strip()
    if key not in codes:
        allowed = " or ".join(codes)
        raise ValueError(f"{where}: column {column!r} must be {allowed}, got {value!r}")
    return codes[key]


def stratified_subset(groups, max_n: int | None) -> np.ndarray:
    """Row positions of a deterministic, group-stratified subset of at most ``max_n`` rows.

    Quotas fill the groups evenly: every group gets an equal share, a group with fewer rows
    than its share gives all of them and the rest is shared again among the others; rows that
    do not divide evenly go to the lowest group ids. Within a group the rows taken are evenly
    spaced over the group's rows in file order (position ``floor((i + 1/2) n_g / q_g)`` for
    ``i < q_g``), so a file sorted by, say, species is sampled across it. The positions come
    back in file order. ``max_n`` must be at least the number of groups present (otherwise a
    group would be lost); ``None`` or a ``max_n`` above the number of rows keeps every row.
    """
    groups = V.check_array(groups, "groups", ndim=1, dtype=np.int64)
    max_n = V.check_int(max_n, "max_n", low=1, allow_none=True)
    n = len(groups)
    if max_n is None or max_n >= n:
        return np.arange(n)
    ids, counts = np.unique(groups, return_counts=True)
    if max_n < len(ids):
        raise ValueError(
            f"max_n must be >= {len(ids)} (the number of groups present) so that every group "
            f"is kept, got {max_n}"
        )
    quota = np.zeros(len(ids), dtype=np.int64)
    remaining = max_n
    while remaining > 0:
        open_ = np.flatnonzero(quota < counts)
        share = max(1, remaining // len(open_))
        for j in open_:
            add = min(share, counts[j] - quota[j], remaining)
            quota[j] += add
            remaining -= add
            if remaining == 0:
                break
    keep = []
    for g, q in zip(ids, quota):
        rows = np.flatnonzero(groups == g)
        keep.append(rows[((np.arange(q) + 0.5) * len(rows) / q).astype(np.int64)])
    return np.sort(np.concatenate(keep))


def _prepare(image, size: int, crop: str):
    """Square RGB ``size x size`` from a PIL image (bilinear): ``"resize_crop"`` resizes to a
    square of ``int(size * 256 / 224)`` and crops the centre; ``"crop_resize"`` crops the
    central square of side ``min(W, H)`` and resizes it."""
    from PIL import Image

    image = image.convert("RGB")
    if crop == "resize_crop":
        big = max(size, int(size * 256 / 224))
        image = image.resize((big, big), Image.Resampling.BILINEAR)
        left = int(round((big - size) / 2.0))
        return image.crop((left, left, left + size, left + size))
    w, h = image.size
    side = min(w, h)
    left, top = int(round((w - side) / 2.0)), int(round((h - side) / 2.0))
    image = image.crop((left, top, left + side, top + side))
    return image.resize((size, size), Image.Resampling.BILINEAR)


def _read_images(folder: Path, files: list[str], size: int, crop: str, on_error: str, what: str):
    """Decode ``files`` (relative to ``folder``); returns (images, kept positions, skipped)."""
    from PIL import Image

    missing = [i for i, f in enumerate(files) if not (folder / f).is_file()]
    if missing and on_error == "raise":
        raise FileNotFoundError(
            f"root: {len(missing)} image(s) listed in the {what} metadata are missing under "
            f"{str(folder)!r}: {_quote([files[i] for i in missing])}"
        )
    skipped = [(i, "missing") for i in missing]
    absent = set(missing)
    out = np.empty((len(files), 3, size, size), dtype=np.float32)
    kept = []
    for i, name in enumerate(files):
        if i in absent:
            continue
        try:
            with Image.open(folder / name) as image:
                arr = np.asarray(_prepare(image, size, crop), dtype=np.float32)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            skipped.append((i, f"unreadable: {type(exc).__name__}: {exc}"))
            continue
        out[len(kept)] = arr.transpose(2, 0, 1) / 255.0
        kept.append(i)
    unreadable = [(files[i], r.removeprefix("unreadable: ")) for i, r in skipped if i not in absent]
    if unreadable and on_error == "raise":
        raise ValueError(
            f"root: {len(unreadable)} image(s) listed in the {what} metadata could not be read: "
            + _quote([f"{n} ({r})" for n, r in unreadable])
        )
    skipped = [{"filename": files[i], "reason": r} for i, r in sorted(skipped)]
    images = out if len(kept) == len(files) else out[: len(kept)].copy()
    return images, np.asarray(kept, dtype=np.int64), skipped


def _finish(folder, files, y, spur, split, size, max_n, on_error, crop, what, names) -> dict:
    """Select the split's rows (already filtered), subset them, read the images."""
    groups = 2 * y + spur
    n_listed = len(files)
    take = stratified_subset(groups, max_n)
    files = [files[i] for i in take]
    y, spur, groups = y[take], spur[take], groups[take]
    images, kept, skipped = _read_images(folder, files, size, crop, on_error, what)
    if len(kept) == 0:
        raise ValueError(
            f"root: every selected {what} image of split {split!r} was skipped "
            f"({len(skipped)} missing or unreadable); nothing to return"
        )
    y, spur, groups = y[kept], spur[kept], groups[kept]
    return {
        "images": images,
        "y": y,
        "spurious": spur,
        "groups": groups,
        "filenames": [files[i] for i in kept],
        "split": split,
        "class_names": names[0],
        "spurious_names": names[1],
        "group_counts": np.bincount(groups, minlength=4).tolist(),
        "n_listed": n_listed,
        "skipped": skipped,
    }


def load_waterbirds(
    root=None,
    split: str = "test",
    size: int = 224,
    max_n: int | None = None,
    on_error: str = "raise",
) -> dict:
    """Waterbirds (Sagawa et al., 2020) from ``root`` (or ``$ICLR26_WATERBIRDS``): the folder
    that holds ``metadata.csv`` and the bird folders, e.g. ``waterbird_complete95_forest2water2``.

    ``metadata.csv`` needs the columns ``img_filename`` (relative to ``root``), ``y`` (0
    landbird, 1 waterbird), ``split`` (0 train, 1 val, 2 test) and ``place`` (0 land, 1 water
    background); ``img_id`` and ``place_filename`` are read past. Every row is checked; a
    malformed one raises ``ValueError`` naming its line. ``split`` is ``"train"``, ``"val"``
    or ``"test"``.

    Images are resized (bilinear) to a square of ``int(size * 256 / 224)`` and centre-cropped
    to ``size`` (group DRO's evaluation transform; the aspect ratio is not kept), then scaled
    to [0, 1]: float32 ``(n, 3, size, size)``; a full test split at 224 holds about 3.5 GB,
    so ``max_n`` (a subset from :func:`stratified_subset`) keeps small runs small.

    Returns ``images``, ``y``, ``place`` (= ``spurious``), ``groups = 2 * y + place`` (0
    landbird/land, 1 landbird/water, 2 waterbird/land, 3 waterbird/water), ``filenames``,
    ``class_names = ("landbird", "waterbird")``, ``spurious_names = ("land", "water")``,
    ``group_counts``, ``n_listed`` and ``skipped``. A listed image that is missing raises
    ``FileNotFoundError``, one that cannot be decoded ``ValueError``, each naming the files;
    with ``on_error="skip"`` they are left out and listed in ``skipped`` instead (after the
    ``max_n`` subset is drawn, so ``group_counts`` then counts what was actually loaded).
    """
    code, size, max_n = _check_common(split, size, max_n, on_error)
    folder = _check_root(root, WATERBIRDS_ENV, "Waterbirds")
    meta = folder / "metadata.csv"
    if not meta.is_file():
        raise FileNotFoundError(
            f"root: {str(folder)!r} has no metadata.csv (the Waterbirds metadata file)"
        )
    files, ys, places = [], [], []
    with meta.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, [])]
        absent = [c for c in WATERBIRDS_COLUMNS if c not in header]
        if absent:
            raise ValueError(
                f"root: metadata.csv lacks the column(s) {', '.join(absent)} "
                f"(header: {', '.join(header) or 'empty'})"
            )
        col = {c: header.index(c) for c in WATERBIRDS_COLUMNS}
        split_codes = {str(v): v for v in SPLITS.values()}
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            where = f"root: metadata.csv line {line}"
            if len(row) != len(header):
                raise ValueError(f"{where}: {len(row)} fields, the header has {len(header)}")
            name = row[col["img_filename"]].strip()
            if not name:
                raise ValueError(f"{where}: empty img_filename")
            y = _binary(row[col["y"]], where, "y", {"0": 0, "1": 1})
            place = _binary(row[col["place"]], where, "place", {"0": 0, "1": 1})
            if _binary(row[col["split"]], where, "split", split_codes) == code:
                files.append(name)
                ys.append(y)
                places.append(place)
    if not files:
        raise ValueError(f"split: metadata.csv has no rows of split {split!r} (code {code})")
    data = _finish(folder, files, np.asarray(ys, np.int64), np.asarray(places, np.int64),
                   split, size, max_n, on_error, "resize_crop", "Waterbirds",
                   (("landbird", "waterbird"), ("land", "water")))  # fmt: skip
    data["place"] = data["spurious"]
    return data


def _first(folder: Path, stem: str) -> Path:
    for ext in (".txt", ".csv"):
        if (folder / (stem + ext)).is_file():
            return folder / (stem + ext)
    raise FileNotFoundError(
        f"root: {str(folder)!r} has neither {stem}.txt nor {stem}.csv (CelebA metadata)"
    )


def _celeba_attributes(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """(attribute names, file names, int8 values in {0, 1}) from either layout."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".txt":
        lines = [(k + 1, ln) for k, ln in enumerate(text.splitlines()) if ln.strip()]
        if len(lines) < 2:
            raise ValueError(f"root: {path.name} needs a count line and a header line")
        try:
            count = int(lines[0][1].strip())
        except ValueError:
            raise ValueError(
                f"root: {path.name} line 1 must be the number of images, got {lines[0][1]!r}"
            ) from None
        names = lines[1][1].split()
        rows = [(k, ln.split()) for k, ln in lines[2:]]
        if count != len(rows):
            raise ValueError(f"root: {path.name} announces {count} images but lists {len(rows)}")
    else:
        reader = list(csv.reader(text.splitlines()))
        if not reader:
            raise ValueError(f"root: {path.name} is empty")
        header = [h.strip() for h in reader[0]]
        if not header or header[0] != "image_id":
            raise ValueError(f"root: {path.name} must start with an image_id column")
        names = header[1:]
        rows = [(k + 1, [c.strip() for c in r]) for k, r in enumerate(reader) if k and any(r)]
    files = []
    values = np.empty((len(rows), len(names)), dtype=np.int8)
    codes = {"-1": 0, "1": 1}
    for i, (line, parts) in enumerate(rows):
        where = f"root: {path.name} line {line}"
        if len(parts) != len(names) + 1:
            raise ValueError(f"{where}: {len(parts)} fields, expected {len(names) + 1}")
        files.append(parts[0])
        for j, cell in enumerate(parts[1:]):
            if cell not in codes:
                raise ValueError(f"{where}: attribute {names[j]!r} must be -1 or 1, got {cell!r}")
            values[i, j] = codes[cell]
    if len(set(files)) != len(files):
        twice = [f for f, count in Counter(files).items() if count > 1]
        raise ValueError(f"root: {path.name} lists image(s) more than once: {_quote(twice)}")
    return names, files, values


def _celeba_partition(path: Path) -> dict[str, int]:
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".txt":
        rows = [(k + 1, ln.split()) for k, ln in enumerate(text.splitlines()) if ln.strip()]
    else:
        reader = list(csv.reader(text.splitlines()))
        header = [h.strip() for h in reader[0]] if reader else []
        if header != ["image_id", "partition"]:
            raise ValueError(f"root: {path.name} must have the header image_id,partition")
        rows = [(k + 1, [c.strip() for c in r]) for k, r in enumerate(reader) if k and any(r)]
    out: dict[str, int] = {}
    codes = {str(v): v for v in SPLITS.values()}
    for line, parts in rows:
        where = f"root: {path.name} line {line}"
        if len(parts) != 2:
            raise ValueError(f"{where}: expected a file name and a partition, got {parts!r}")
        if parts[0] in out:
            raise ValueError(f"{where}: {parts[0]} is listed twice")
        out[parts[0]] = _binary(parts[1], where, "partition", codes)
    return out


def load_celeba(
    root=None,
    split: str = "test",
    target: str = "Blond_Hair",
    spurious: str = "Male",
    size: int = 224,
    max_n: int | None = None,
    on_error: str = "raise",
) -> dict:
    """CelebA from ``root`` (or ``$ICLR26_CELEBA``): the folder holding the attribute list
    (``list_attr_celeba.txt``, the official file, or ``list_attr_celeba.csv``), the partition
    list (``list_eval_partition.txt`` or ``.csv``; the ``.txt`` is read when both exist) and
    the aligned images in ``img_align_celeba/`` (or ``img_align_celeba/img_align_celeba/`` as
    the CSV download unpacks).

    ``target`` and ``spurious`` are attribute names from the file's header (group DRO's
    benchmark: ``Blond_Hair`` against ``Male``); -1/1 become 0/1, ``groups = 2 * y +
    spurious``. Every row of both files is checked (a malformed one raises ``ValueError``
    naming its line) and every attribute row needs a partition and vice versa.

    Images: the central square (side ``min(W, H)``, 178 for the aligned 178 x 218 crops) is
    cut out and resized (bilinear) to ``size`` (group DRO's evaluation transform), scaled to
    [0, 1]. The return dictionary is that of :func:`load_waterbirds` without ``place``;
    ``class_names`` and ``spurious_names`` are the attribute names in words with "not "
    before the 0 value (``("not blond hair", "blond hair")``).
    """
    code, size, max_n = _check_common(split, size, max_n, on_error)
    for value, arg in ((target, "target"), (spurious, "spurious")):
        if not isinstance(value, str):
            raise TypeError(f"{arg} must be a CelebA attribute name, got {value!r}")
    if target == spurious:
        raise ValueError(f"spurious must differ from target, both are {target!r}")
    folder = _check_root(root, CELEBA_ENV, "CelebA")
    names, files, values = _celeba_attributes(_first(folder, "list_attr_celeba"))
    V.check_choice(target, "target", names)
    V.check_choice(spurious, "spurious", names)
    partition = _celeba_partition(_first(folder, "list_eval_partition"))
    unlisted = [f for f in files if f not in partition]
    if unlisted:
        raise ValueError(f"root: {len(unlisted)} image(s) have no partition: {_quote(unlisted)}")
    if len(partition) != len(files):
        extra = sorted(set(partition) - set(files))
        raise ValueError(f"root: {len(extra)} partitioned image(s) have no attributes: "
                         f"{_quote(extra)}")  # fmt: skip
    rows = np.flatnonzero(np.array([partition[f] for f in files], dtype=np.int64) == code)
    if len(rows) == 0:
        raise ValueError(f"split: CelebA has no images in split {split!r} (partition {code})")
    images = folder / "img_align_celeba"
    if (images / "img_align_celeba").is_dir():
        images = images / "img_align_celeba"
    if not images.is_dir():
        raise FileNotFoundError(f"root: {str(folder)!r} has no img_align_celeba folder")

    def words(attr: str) -> tuple[str, str]:
        w = attr.replace("_", " ").lower()
        return (f"not {w}", w)

    y = values[rows, names.index(target)].astype(np.int64)
    s = values[rows, names.index(spurious)].astype(np.int64)
    return _finish(images, [files[i] for i in rows], y, s, split, size, max_n, on_error,
                   "crop_resize", "CelebA", (words(target), words(spurious)))  # fmt: skip
