"""The project's "pretrained" tiny backbones: fixed recipes, trained once, cached on disk.

No pretrained weights can be downloaded, so :func:`pretrained_tiny` trains a named recipe on
first use (fixed seed, 2 torch threads) and caches the weights under
``$ICLR26_CACHE/vision/<name>-<recipe hash>-torch<major.minor>.pt`` (default cache
``~/.cache/iclr26``, as for the tiny LM). The hash covers the architecture, the objective,
the data, the schedule, the seed and a data-generator version, so a changed recipe or torch
version never reuses stale weights. ``recipe="test"`` is a 20-step version of each recipe
for the test suite. :func:`warmup` trains every recipe (``iclr26 warmup vision``).

Step counts: the spec's 600-800 steps at batch 64 cost 5-10 minutes per recipe on 2 cores.
Measured single-thread CPU per training step of 32 images (on a shared, loaded machine):
0.25 s for the 64-px patch-8 D-128 ViT (a SimCLR step embeds 64 views: 0.5 s), 0.36 s for
the 64-px D-96 depth-6 ViT, 0.23 s for the 32-px patch-4 ViT and 0.31 s for the stride-8
TinyConvNet at 64 px. The step counts below are set so that each recipe needs at most about
60 s of single-thread CPU, hence at most 60 s on 2 cores; see ``RECIPES``. Supervised training
on the shapes sits at chance-level loss for its first 200-300 steps, so ``tinycnn_s8_sup``
trains at 32 px (about 0.03 s per step) for 3,000 steps and is used at 64 px (about a minute
on 2 cores, measured).

The exception is ``tinyvit_p4_sup`` (SMoPE's source backbone): with a patchify stem and 250
steps its class token gave chance-level linear probes on the unseen family-B shapes (as did
every patchify recipe tried), so it uses a convolutional stem (:func:`~iclr26.models.vision.vit.conv_stem`)
and 2,000 steps of batch 64 on 20,000 family-A images, several minutes on 2 cores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V
from iclr26.claims import build_lock
from iclr26.models.vision.convnet import TinyConvNet
from iclr26.models.vision.train import torch_threads, train_simclr, train_supervised
from iclr26.models.vision.vit import TinyViT

DATA_VERSION = 1  # bump when a generator used by a recipe changes its output
THREADS = 2


@dataclass(frozen=True)
class Recipe:
    """How one tiny backbone is built and trained."""

    arch: str  # "tinyvit" | "tinycnn"
    arch_kwargs: dict[str, Any]
    objective: str  # "supervised" | "simclr" | "none"
    data: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    used_by: tuple[str, ...] = ()

    def test_version(self) -> Recipe:
        """The same architecture and objective, 20 steps of batch 8 on a small pool."""
        data = dict(self.data)
        if "n" in data:
            data["n"] = min(int(data["n"]), 64)
        steps = 20 if self.objective != "none" else 0
        return dataclasses.replace(self, steps=steps, batch=8, data=data)


RECIPES: dict[str, Recipe] = {
    "tinyvit_p8_ssl": Recipe(
        "tinyvit", dict(img_size=64, patch=8, dim=128, depth=4, heads=4), "simclr",
        dict(source="scenes+skimage", n=2000, size=64, temperature=0.2), steps=120, batch=32,
        lr=1e-3, used_by=("anyup", "srl"),
    ),
    "tinyvit_p8_sup": Recipe(
        "tinyvit", dict(img_size=64, patch=8, dim=96, depth=6, heads=4, num_classes=10),
        "supervised", dict(source="shapes", family="A", n=2000, size=64, n_classes=10),
        steps=160, batch=32, lr=1e-3, used_by=("ivpt",),
    ),
    "tinyvit_p4_sup": Recipe(
        "tinyvit",
        dict(img_size=32, patch=4, dim=96, depth=6, heads=4, num_classes=10, stem="conv"),
        "supervised", dict(source="shapes", family="A", n=20000, size=32, n_classes=10),
        steps=2000, batch=64, lr=1e-3, used_by=("smope",),
    ),
    "tinycnn_s8_sup": Recipe(
        "tinycnn", dict(width=32, out_dim=64, stride=8, num_classes=10), "supervised",
        dict(source="shapes", family="A", n=5000, size=32, n_classes=10), steps=3000,
        batch=32, lr=3e-3, used_by=("anyup",),
    ),
    "randconv_s8": Recipe(
        "tinycnn", dict(width=32, out_dim=96, stride=8), "none", {}, steps=0,
        used_by=("anyup",),
    ),
}  # fmt: skip
RECIPE_KINDS = ("default", "test")


def cache_dir(root: str | os.PathLike | None = None) -> Path:
    """``<root or $ICLR26_CACHE or ~/.cache/iclr26>/vision``, created on first use."""
    if root is None:
        root = os.environ.get("ICLR26_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "iclr26"
        )
    path = Path(root) / "vision"
    path.mkdir(parents=True, exist_ok=True)
    return path


def torch_tag() -> str:
    return "torch" + ".".join(torch.__version__.split("+")[0].split(".")[:2])


def get_recipe(name: str, recipe: str = "default") -> Recipe:
    """The :class:`Recipe` of backbone ``name`` (``recipe="test"``: its 20-step version)."""
    V.check_choice(name, "name", tuple(RECIPES))
    V.check_choice(recipe, "recipe", RECIPE_KINDS)
    base = RECIPES[name]
    return base.test_version() if recipe == "test" else base


def recipe_hash(recipe: Recipe) -> str:
    payload = dataclasses.asdict(recipe)
    payload.pop("used_by")
    payload["data_version"] = DATA_VERSION
    payload["torch"] = torch_tag()
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_path(
    name: str, recipe: str = "default", cache_dir_: str | os.PathLike | None = None
) -> Path:
    """Where backbone ``name`` trained with ``recipe`` is (or will be) cached."""
    rec = get_recipe(name, recipe)
    tag = "" if recipe == "default" else f"-{recipe}"
    return cache_dir(cache_dir_) / f"{name}{tag}-{recipe_hash(rec)}-{torch_tag()}.pt"


def build(recipe: Recipe) -> nn.Module:
    """The untrained architecture of a recipe."""
    if recipe.arch == "tinyvit":
        return TinyViT(**recipe.arch_kwargs)
    if recipe.arch == "tinycnn":
        return TinyConvNet(**recipe.arch_kwargs)
    raise ValueError(f"unknown architecture {recipe.arch!r}")


def _training_images(recipe: Recipe) -> tuple[np.ndarray, np.ndarray | None]:
    from iclr26.data.vision import make_scenes, make_shapes, skimage_crops

    d = recipe.data
    if d["source"] == "shapes":
        return make_shapes(d["n"], d["n_classes"], d["size"], family=d["family"], seed=recipe.seed)
    if d["source"] == "scenes+skimage":
        half = d["n"] // 2
        scenes = make_scenes(half, size=d["size"], seed=recipe.seed)[0]
        crops = skimage_crops(d["n"] - half, size=d["size"], seed=recipe.seed)
        return np.concatenate([scenes, crops]), None
    raise ValueError(f"unknown data source {d['source']!r}")


def _train(
    recipe: Recipe, progress: Callable[[int, float], None] | None
) -> tuple[nn.Module, list[float]]:
    torch.manual_seed(recipe.seed)
    model = build(recipe)
    if recipe.objective == "none":
        return model, []
    images, labels = _training_images(recipe)
    if recipe.objective == "supervised":
        losses = train_supervised(
            model, images, labels, recipe.steps, recipe.batch, recipe.lr, recipe.seed, progress
        )
    elif recipe.objective == "simclr":
        losses = train_simclr(
            model, images, recipe.steps, recipe.batch, recipe.lr,
            recipe.data.get("temperature", 0.2), recipe.seed, progress,
        )  # fmt: skip
    else:
        raise ValueError(f"unknown objective {recipe.objective!r}")
    return model, losses


def _frozen(model: nn.Module, meta: dict[str, Any]) -> nn.Module:
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    model.pretrained_meta = meta
    return model


def pretrained_tiny(
    name: str,
    recipe: str = "default",
    cache_dir: str | os.PathLike | None = None,
    progress: Callable[[int, float], None] | None = None,
    threads: int | None = THREADS,
) -> nn.Module:
    """The frozen backbone ``name`` (one of :data:`RECIPES`), in eval mode with
    ``requires_grad=False``; trained on first use (with ``threads`` torch threads) and then
    read from the cache. ``recipe="test"`` trains the 20-step version. The model carries
    ``model.pretrained_meta`` (recipe, hash, seconds, losses). The global torch random state
    is the same afterwards whether the cache was warm or cold. Supervised recipes keep their
    10-way source head (``forward`` returns logits; ``forward_features`` or
    ``reset_classifier(0)`` give features)."""
    rec = get_recipe(name, recipe)
    if threads is not None:
        threads = V.check_int(threads, "threads", low=1)
    path = cache_path(name, recipe, cache_dir)
    if path.exists():
        return _load(rec, path)
    with build_lock(path):  # one builder; a second caller waits, then loads
        if path.exists():
            return _load(rec, path)
        return _train_and_save(name, recipe, rec, path, progress, threads)


def _load(rec: Recipe, path: Path) -> nn.Module:
    with torch.random.fork_rng(devices=[]):  # the caller's random state is left untouched
        model = build(rec)
    saved = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(saved["state_dict"])
    return _frozen(model, saved["meta"])


def _train_and_save(
    name: str,
    recipe: str,
    rec: Recipe,
    path: Path,
    progress: Callable[[int, float], None] | None,
    threads: int | None,
) -> nn.Module:
    started = time.perf_counter()
    cpu0 = time.process_time()
    with torch_threads(threads), torch.random.fork_rng(devices=[]):
        model, losses = _train(rec, progress)
    meta = {
        "name": name,
        "recipe": recipe,
        "hash": recipe_hash(rec),
        "spec": dataclasses.asdict(rec),
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(time.process_time() - cpu0, 2),
        "threads": threads,
        "losses": losses,
        "torch": torch.__version__,
        "params": sum(p.numel() for p in model.parameters()),
    }
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save({"state_dict": model.state_dict(), "meta": meta}, tmp)
    tmp.replace(path)
    return _frozen(model, meta)


def warmup(
    progress: Callable[[str, int, int], None] | None = None, recipe: str = "default"
) -> dict[str, Path]:
    """Train and cache every recipe (a no-op for those already cached); returns
    ``{name: cache file}``. ``progress(name, index, total)`` is called before each recipe."""
    V.check_choice(recipe, "recipe", RECIPE_KINDS)
    out = {}
    for i, name in enumerate(RECIPES):
        if progress is not None:
            progress(name, i, len(RECIPES))
        pretrained_tiny(name, recipe=recipe)
        out[name] = cache_path(name, recipe)
    if progress is not None:
        progress("done", len(RECIPES), len(RECIPES))
    return out
