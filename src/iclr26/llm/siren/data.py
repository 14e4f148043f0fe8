"""Rating data for SIREN: the seeded ``topic_ratings`` generator (quick scale) and a loader for
MovieLens-100k from the ``recbole`` wheel (full scale), both split leave-last-out per user.

``topic_ratings`` follows the room's spec: latent topics with hand-written English keywords,
items described by one short sentence of topic keywords and filler (a share of them mixing two
topics), users with liked and disliked topics and a bias, long time-ordered histories and
``r = clip(round(3.1 + b_u + 1.2 pref(u, t_i) + q_i + eps), 1, 5)`` with a share of the
history ratings replaced by uniform noise.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr26 import validation as V

TOPIC_KEYWORDS: tuple[tuple[str, ...], ...] = (
    ("rocket", "orbit", "galaxy", "planet", "astronaut", "comet", "nebula", "telescope",
     "lunar", "satellite", "cosmos", "spaceship"),
    ("chef", "recipe", "kitchen", "baking", "flavor", "spice", "dinner", "pastry", "soup",
     "grill", "dessert", "bread"),
    ("guitar", "melody", "concert", "drummer", "album", "singer", "rhythm", "jazz", "piano",
     "chorus", "band", "violin"),
    ("detective", "murder", "clue", "suspect", "crime", "police", "alibi", "mystery", "witness",
     "inspector", "culprit", "case"),
    ("dragon", "wizard", "spell", "kingdom", "sword", "quest", "castle", "magic", "elf",
     "sorcerer", "prophecy", "throne"),
    ("football", "coach", "stadium", "league", "goal", "season", "champion", "tournament",
     "striker", "referee", "match", "trophy"),
    ("garden", "flower", "seed", "soil", "orchard", "harvest", "compost", "tulip", "greenhouse",
     "vegetable", "pruning", "blossom"),
    ("romance", "love", "wedding", "heart", "kiss", "courtship", "passion", "bride", "lover",
     "date", "affection", "sweetheart"),
    ("war", "soldier", "battle", "army", "general", "siege", "trench", "navy", "regiment",
     "veteran", "rifle", "campaign"),
    ("computer", "software", "algorithm", "robot", "network", "code", "laptop", "circuit",
     "program", "data", "server", "chip"),
    ("horror", "ghost", "haunted", "zombie", "vampire", "scream", "curse", "demon", "graveyard",
     "nightmare", "monster", "blood"),
    ("ocean", "sailor", "ship", "island", "pirate", "voyage", "storm", "harbor", "whale",
     "anchor", "reef", "captain"),
    ("travel", "journey", "passport", "tourist", "hotel", "backpack", "adventure", "map",
     "airport", "train", "road", "city"),
    ("history", "empire", "ancient", "pharaoh", "dynasty", "ruins", "medieval", "king",
     "revolution", "century", "archive", "monarch"),
    ("health", "fitness", "diet", "yoga", "exercise", "muscle", "workout", "nutrition",
     "running", "sleep", "wellness", "vitamin"),
    ("money", "investing", "stock", "market", "budget", "finance", "bank", "wealth", "trading",
     "savings", "economy", "profit"),
    ("child", "family", "parent", "school", "friendship", "puppy", "birthday", "toy",
     "playground", "teacher", "sibling", "bedtime"),
    ("cowboy", "ranch", "sheriff", "desert", "horse", "saloon", "outlaw", "frontier",
     "canyon", "cattle", "revolver", "prairie"),
    ("science", "physics", "chemistry", "experiment", "laboratory", "atom", "theory", "biology",
     "molecule", "microscope", "energy", "discovery"),
    ("art", "painting", "museum", "sculpture", "artist", "canvas", "gallery", "portrait",
     "sketch", "color", "brush", "design"),
)  # fmt: skip
FILLER = (
    "a", "the", "story", "about", "with", "of", "and", "new", "classic", "tale", "guide",
    "great", "little", "old", "modern", "book", "collection", "edition", "deep", "bright",
)  # fmt: skip


@dataclass
class RatingData:
    """A catalogue and time-ordered user histories, split leave-last-out.

    ``item_text[i]`` describes item ``i``; ``item_topic[i]`` is its latent topic (``-1`` when
    unknown). ``histories[u]`` is an int array ``(n_u, 2)`` of ``(item, rating)`` in time
    order. ``targets[split]`` is an int array ``(n, 4)`` of ``(user, item, rating, position)``:
    the target sits at ``histories[user][position]`` and its prompt may use only the rows
    before ``position`` (the last row per user is ``test``, the one before ``val``; ``train``
    holds earlier positions)."""

    item_text: list[str]
    item_topic: np.ndarray
    histories: list[np.ndarray]
    targets: dict[str, np.ndarray]
    name: str = "topic_ratings"

    @property
    def n_users(self) -> int:
        return len(self.histories)

    @property
    def n_items(self) -> int:
        return len(self.item_text)

    def history_before(self, user: int, position: int) -> np.ndarray:
        """The rows of ``user`` strictly before ``position`` (no target leakage)."""
        return self.histories[int(user)][: int(position)]

    def interactions_before(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Every ``(user, item)`` pair and rating that precedes the first target of ``split``
        for its user (the training set of a collaborative-filtering baseline)."""
        V.check_choice(split, "split", tuple(self.targets))
        first = {}
        for u, _, _, pos in self.targets[split]:
            first[int(u)] = min(first.get(int(u), 1 << 30), int(pos))
        pairs, ratings = [], []
        for u, pos in first.items():
            rows = self.histories[u][:pos]
            pairs.append(np.column_stack([np.full(len(rows), u), rows[:, 0]]))
            ratings.append(rows[:, 1])
        return np.concatenate(pairs).astype(np.int64), np.concatenate(ratings).astype(float)


def _describe(rng: np.random.Generator, topics: list[int], n_words: int) -> str:
    words = []
    for _ in range(n_words):
        if rng.random() < 0.55:
            words.append(str(rng.choice(TOPIC_KEYWORDS[int(rng.choice(topics))])))
        else:
            words.append(str(rng.choice(FILLER)))
    words[0] = words[0].capitalize()
    return " ".join(words)


def topic_ratings(
    seed: int = 0,
    n_users: int = 500,
    n_items: int = 2500,
    n_topics: int = 20,
    history: tuple[int, int] = (60, 300),
    words: tuple[int, int] = (6, 10),
    mixed_share: float = 0.15,
    noise_share: float = 0.10,
    train_targets: int = 4,
) -> RatingData:
    """The synthetic catalogue and histories (see the module docstring); deterministic per
    ``seed``. ``words`` bounds the description length in words (the spec's 10-16 is shortened
    to 6-10 by default so that CPU-scale prompts stay short; see README: Deviations)."""
    V.check_int(seed, "seed", low=0)
    n_users = V.check_int(n_users, "n_users", low=1)
    n_topics = V.check_int(n_topics, "n_topics", low=2, high=len(TOPIC_KEYWORDS))
    n_items = V.check_int(n_items, "n_items", low=n_topics)
    train_targets = V.check_int(train_targets, "train_targets", low=0)
    lo, hi = (V.check_int(h, "history", low=3 + train_targets) for h in history)
    if hi < lo:
        raise ValueError(f"history must be (low, high) with low <= high, got {history}")
    wlo, whi = (V.check_int(w, "words", low=2) for w in words)
    if whi < wlo:
        raise ValueError(f"words must be (low, high) with low <= high, got {words}")
    V.check_probability(mixed_share, "mixed_share")
    V.check_probability(noise_share, "noise_share")
    if n_topics < 7:
        raise ValueError("n_topics must be >= 7 (3 liked + 3 disliked + a neutral topic)")
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, n_topics, size=n_items)
    quality = rng.normal(0.0, 0.4, size=n_items)
    texts = []
    for i in range(n_items):
        mix = [int(topic[i])]
        if rng.random() < mixed_share:
            mix.append(int(rng.choice([t for t in range(n_topics) if t != topic[i]])))
        texts.append(_describe(rng, mix, int(rng.integers(wlo, whi + 1))))
    by_topic = [np.flatnonzero(topic == t) for t in range(n_topics)]
    histories, targets = [], {"train": [], "val": [], "test": []}
    for u in range(n_users):
        perm = rng.permutation(n_topics)
        liked, disliked = perm[:3], perm[3:6]
        pref = np.zeros(n_topics)
        pref[liked], pref[disliked] = 1.0, -1.0
        bias = rng.normal(0.0, 0.3)
        length = min(int(rng.integers(lo, hi + 1)), n_items)
        allowed = np.concatenate([by_topic[t] for t in range(n_topics) if pref[t] >= 0])
        picks: list[int] = []
        seen: set[int] = set()
        while len(picks) < length:
            pool = allowed if rng.random() < 0.75 and len(allowed) else np.arange(n_items)
            item = int(rng.choice(pool))
            if item in seen and len(seen) < n_items:
                continue
            seen.add(item)
            picks.append(item)
        items = np.asarray(picks)
        eps = rng.normal(0.0, 0.5, size=length)
        raw = 3.1 + bias + 1.2 * pref[topic[items]] + quality[items] + eps
        ratings = np.clip(np.round(raw), 1, 5).astype(np.int64)
        # noisy history ratings; the val/test targets keep their model rating
        noisy = rng.random(length) < noise_share
        noisy[-2:] = False
        ratings[noisy] = rng.integers(1, 6, size=int(noisy.sum()))
        histories.append(np.column_stack([items, ratings]).astype(np.int64))
        targets["test"].append((u, items[-1], ratings[-1], length - 1))
        targets["val"].append((u, items[-2], ratings[-2], length - 2))
        for pos in range(length - 2 - train_targets, length - 2):
            targets["train"].append((u, items[pos], ratings[pos], pos))
    return RatingData(
        item_text=texts,
        item_topic=topic.astype(np.int64),
        histories=histories,
        targets={k: np.asarray(v, dtype=np.int64).reshape(-1, 4) for k, v in targets.items()},
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
