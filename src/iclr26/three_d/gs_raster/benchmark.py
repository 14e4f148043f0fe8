"""Forward + backward time of the tiled renderer per 64x64 image against the number of
Gaussians, beside load-free counts and the brute-force reference (not a claim)."""

from __future__ import annotations

import math

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.claims import timeit

from .camera import Camera
from .rasterize import render
from .reference import render_reference
from .scenes import random_scene


def _fwd_bwd(fn, scene, camera):
    params = {k: v.detach().clone().requires_grad_(True) for k, v in scene.as_kwargs().items()}

    def run():
        out = fn(
            params["means"],
            params["scales"],
            params["quats"],
            params["opacities"],
            camera,
            sh=params["sh"],
        )
        out.image.sum().backward()
        return out

    return run


def benchmark(
    sizes=(100, 300, 1000, 3000),
    *,
    image_size: int = 64,
    reference_max: int = 300,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    """Time forward + backward of :func:`render` (and of :func:`render_reference` for
    ``n <= reference_max``) on random scenes of each size in ``sizes`` seen from a camera at
    distance 3 with a 50 degree field of view; returns per-size timings (``timeit`` dicts with
    the counts ``gaussians``, ``visible``, ``tile_pairs``, ``tiles_touched``, ``pixel_pairs``),
    the log-log slope of CPU time against N and the reference/tiled time ratios."""
    sizes = [V.check_int(s, "sizes", low=1) for s in sizes]
    if len(sizes) < 1:
        raise ValueError("sizes must not be empty")
    image_size = V.check_int(image_size, "image_size", low=8, high=1024)
    reference_max = V.check_int(reference_max, "reference_max", low=0)
    repeat = V.check_int(repeat, "repeat", low=1)
    camera = Camera.look_at((3.0, 0.0, 0.0), width=image_size, height=image_size)
    rows = []
    for n in sizes:
        scene = random_scene(n, seed=seed)
        tiled = timeit(_fwd_bwd(render, scene, camera), repeat=repeat, threads=1)
        tiled.count(**tiled.value.stats)
        row = {"n": n, "tiled": tiled.to_dict()}
        row["tiled"].pop("value", None)
        if n <= reference_max:
            ref = timeit(_fwd_bwd(render_reference, scene, camera), repeat=1, threads=1)
            ref.count(pixel_pairs=n * image_size * image_size)
            row["reference"] = ref.to_dict()
            row["reference_over_tiled"] = ref.cpu_s / max(tiled.cpu_s, 1e-12)
        rows.append(row)
    slope = float("nan")
    if len(rows) >= 2:
        x = np.log([r["n"] for r in rows])
        y = np.log([r["tiled"]["cpu_s"] for r in rows])
        slope = float(np.polyfit(x, y, 1)[0])
    pairs = [r["tiled"]["count_pixel_pairs"] for r in rows]
    pair_slope = (
        float(np.polyfit(np.log(sizes), np.log(np.maximum(pairs, 1)), 1)[0])
        if len(rows) >= 2
        else float("nan")
    )
    return {
        "image_size": image_size,
        "rows": rows,
        "loglog_slope_cpu_time": slope,
        "loglog_slope_pixel_pairs": pair_slope,
        "threads": 1,
        "finite": all(math.isfinite(r["tiled"]["cpu_s"]) for r in rows),
        "torch": torch.__version__,
    }
