"""Rating data for SIREN: the seeded ``topic_ratings`` generator (quick scale; it lives in the
shared :mod:`iclr26.data.synth`, module ``ratings``, and is re-exported here) and a loader for
MovieLens-100k from the ``recbole`` wheel (full scale), both split leave-last-out per user.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np

from iclr26 import validation as V
from iclr26.data.synth.ratings import (  # noqa: F401
    FILLER,
    TOPIC_KEYWORDS,
    RatingData,
    _describe,
    topic_ratings,
)


def movielens100k(path: str | Path | None = None, train_targets: int = 4) -> RatingData:
    """MovieLens-100k (943 users, 1682 films) as :class:`RatingData`, leave-last-out by
    timestamp; item text ``"Title (year). Genres: a, b"``. ``path`` is a folder with
    ``ml-100k.inter`` and ``ml-100k.item`` (RecBole's atomic files); by default the copy
    inside the ``recbole`` wheel (``pip install --no-deps recbole==1.2.1``)."""
    train_targets = V.check_int(train_targets, "train_targets", low=0)
    if path is None:
        spec = importlib.util.find_spec("recbole")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                "path: MovieLens-100k not found; install the recbole wheel "
                "(pip install --no-deps recbole==1.2.1) or pass the ml-100k folder"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / "dataset_example" / "ml-100k"
    folder = Path(path)
    inter, item = folder / "ml-100k.inter", folder / "ml-100k.item"
    if not inter.is_file() or not item.is_file():
        raise FileNotFoundError(f"path: {folder} has no ml-100k.inter / ml-100k.item")

    def rows(p: Path, needed: tuple[str, ...]) -> tuple[dict[str, int], list[tuple[int, list]]]:
        lines = p.read_text(encoding="latin-1").splitlines()
        if not lines:
            raise ValueError(f"path: {p} is empty")
        head = [h.split(":")[0] for h in lines[0].split("\t")]
        lacking = [h for h in needed if h not in head]
        if lacking:
            raise ValueError(f"path: {p} has no column {', '.join(lacking)} (header {head})")
        body = []
        for n, ln in enumerate(lines[1:], start=2):
            if not ln:
                continue
            fields = ln.split("\t")
            if len(fields) != len(head):
                raise ValueError(
                    f"path: {p} line {n} has {len(fields)} fields, the header {len(head)}"
                )
            body.append((n, fields))
        return {h: k for k, h in enumerate(head)}, body

    col, body = rows(item, ("item_id", "movie_title"))
    ids: dict[str, int] = {}
    texts = []
    for n, r in body:
        if r[col["item_id"]] in ids:
            raise ValueError(f"path: {item} line {n} repeats item {r[col['item_id']]}")
        ids[r[col["item_id"]]] = len(texts)
        year = r[col["release_year"]] if "release_year" in col else ""
        genres = r[col["class"]].replace(" ", ", ") if "class" in col else ""
        title = r[col["movie_title"]] + (f" ({year})" if year else "")
        texts.append(f"{title}. Genres: {genres}")
    col, body = rows(inter, ("user_id", "item_id", "rating", "timestamp"))
    per_user: dict[str, list[tuple[float, int, int]]] = {}
    for n, r in body:
        if r[col["item_id"]] not in ids:
            raise ValueError(
                f"path: {inter} line {n} rates item {r[col['item_id']]}, not in {item}"
            )
        try:
            stamp, rating = float(r[col["timestamp"]]), float(r[col["rating"]])
        except ValueError:
            raise ValueError(f"path: {inter} line {n} has a non-numeric rating or time") from None
        if not (math.isfinite(stamp) and rating.is_integer() and 1 <= rating <= 5):
            raise ValueError(
                f"path: {inter} line {n}: rating {r[col['rating']]} is not an integer in "
                f"1..5 or its time is not finite"
            )
        per_user.setdefault(r[col["user_id"]], []).append(
            (stamp, ids[r[col["item_id"]]], int(rating))
        )
    histories, targets = [], {"train": [], "val": [], "test": []}
    short = 0
    for u, events in enumerate(per_user.values()):
        events.sort(key=lambda e: e[0])
        hist = np.asarray([(i, r) for _, i, r in events], dtype=np.int64)
        histories.append(hist)
        n = len(hist)
        if n < 3:
            short += 1  # kept in ``histories``; too short for a test and a validation target
            continue
        targets["test"].append((u, *hist[-1], n - 1))
        targets["val"].append((u, *hist[-2], n - 2))
        for pos in range(max(1, n - 2 - train_targets), n - 2):
            targets["train"].append((u, *hist[pos], pos))
    if short:
        warnings.warn(
            f"movielens100k: {short} user(s) with fewer than 3 ratings have no test or "
            "validation target (their ratings stay in the histories)",
            stacklevel=2,
        )
    return RatingData(
        item_text=texts,
        item_topic=np.full(len(texts), -1, dtype=np.int64),
        histories=histories,
        targets={k: np.asarray(v, dtype=np.int64).reshape(-1, 4) for k, v in targets.items()},
        name="ml-100k",
    )
