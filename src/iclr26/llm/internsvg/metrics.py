"""SArena-style evaluation (§3.2.1): render predictions and references and compare pixels.

Understanding is multiple-choice accuracy (with per-category sub-scores). Editing,
image-to-SVG and text-to-SVG render the predicted and the reference SVG and report PSNR, SSIM
and MSE (scikit-image; PSNR of identical images is capped at 100 dB and SSIM uses an 11-pixel
window over the RGB channels, as in the released evaluation), the success rate (SR: the share
of predictions that parse and render) and, given a tokenizer, the mean output tokens. A
prediction that fails to render is scored as an all-black image, never skipped. The animation
tasks (text-to-SANI, video-to-SANI) average the image metrics over frames sampled from the
SMIL timeline. DINO / LPIPS / CLIP / FID need weights this package does not ship; a
``feature_fn`` hook (images -> feature rows) adds a cosine feature similarity instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from iclr26 import validation as V
from iclr26.llm.internsvg.render import animation_duration, render_svg, sample_animation_frames

IMAGE_TASKS = ("editing", "image_to_svg", "text_to_svg")
VIDEO_TASKS = ("text_to_sani", "video_to_sani")
SARENA_TASKS = ("understanding", *IMAGE_TASKS, *VIDEO_TASKS)
PSNR_CAP = 100.0


def _check_images(images, name: str) -> np.ndarray:
    arr = V.check_array(images, name, ndim=4, dtype=None)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers (uint8 pixels), got dtype {arr.dtype}")
    if arr.shape[-1] != 3:
        raise ValueError(f"{name} must have 3 colour channels last, got shape {arr.shape}")
    if arr.dtype != np.uint8:
        arr = V.check_array(arr, name, ndim=4, dtype=np.float64, low=0.0, high=255.0)
        arr = np.rint(arr).astype(np.uint8)
    return arr


def image_metrics(pred_images, ref_images) -> dict[str, np.ndarray]:
    """Per-image ``psnr`` (capped at 100 dB), ``ssim`` and ``mse`` of two ``[N, H, W, 3]``
    uint8 batches (H, W >= 11)."""
    from skimage.metrics import mean_squared_error, peak_signal_noise_ratio, structural_similarity

    pred = _check_images(pred_images, "pred_images")
    ref = _check_images(ref_images, "ref_images")
    if pred.shape != ref.shape:
        raise ValueError(f"pred_images has shape {pred.shape} but ref_images has {ref.shape}")
    if min(pred.shape[1:3]) < 11:
        raise ValueError(f"pred_images must be at least 11x11 pixels, got {pred.shape[1:3]}")
    psnr, ssim, mse = [], [], []
    for p, r in zip(pred, ref):
        err = mean_squared_error(r, p)
        mse.append(err)
        psnr.append(PSNR_CAP if err == 0 else min(peak_signal_noise_ratio(r, p), PSNR_CAP))
        ssim.append(structural_similarity(r, p, win_size=11, channel_axis=-1))
    return {"psnr": np.array(psnr), "ssim": np.array(ssim), "mse": np.array(mse)}


def _feature_similarity(feature_fn: Callable, pred: np.ndarray, ref: np.ndarray) -> float:
    fp = np.asarray(feature_fn(pred), dtype=np.float64).reshape(len(pred), -1)
    fr = np.asarray(feature_fn(ref), dtype=np.float64).reshape(len(ref), -1)
    V.check_array(fp, "feature_fn(pred)", ndim=2)
    V.check_array(fr, "feature_fn(ref)", ndim=2)
    num = (fp * fr).sum(1)
    den = np.linalg.norm(fp, axis=1) * np.linalg.norm(fr, axis=1)
    return float(np.mean(num / np.maximum(den, 1e-12)))


def _answer_index(pred) -> int | None:
    if isinstance(pred, bool | np.bool_):
        return None
    if isinstance(pred, int | np.integer):
        return int(pred) if 0 <= int(pred) < 4 else None
    if isinstance(pred, str):
        text = pred.strip().upper()
        return "ABCD".index(text[0]) if text and text[0] in "ABCD" else None
    return None


def _understanding(preds, refs, categories) -> dict:
    gold = [_answer_index(r) for r in refs]
    if any(g is None for g in gold):
        raise ValueError("refs must be answer letters A-D or indices 0-3")
    hits = np.array([_answer_index(p) == g for p, g in zip(preds, gold)], dtype=float)
    out = {"accuracy": float(hits.mean()), "n": len(hits)}
    out["answered_rate"] = float(np.mean([_answer_index(p) is not None for p in preds]))
    if categories is not None:
        V.check_same_length(preds=preds, categories=categories)
        for cat in sorted(set(categories)):
            mask = np.array([c == cat for c in categories])
            out[f"accuracy_{cat}"] = float(hits[mask].mean())
    return out


def _token_counts(tokenizer, preds: Sequence[str]) -> float:
    V.check_module_attrs(tokenizer, "tokenizer", ("encode",))
    return float(np.mean([len(tokenizer.encode(p, add_special_tokens=False)) for p in preds]))


def _refs_as_images(refs, size: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(refs, np.ndarray) and refs.ndim == 4:
        images = _check_images(refs, "refs")
        return images, np.ones(len(images), dtype=bool)
    rendered = [render_svg(r, size, return_ok=True) for r in refs]
    return np.stack([im for im, _ in rendered]), np.array([ok for _, ok in rendered])


def sarena_metrics(
    task: str,
    preds: Sequence,
    refs,
    *,
    size: int = 128,
    tokenizer=None,
    feature_fn: Callable | None = None,
    categories: Sequence[str] | None = None,
    n_frames: int = 8,
) -> dict:
    """SArena metrics of ``preds`` against ``refs`` for ``task`` (one of
    :data:`SARENA_TASKS`).

    ``understanding``: ``preds`` and ``refs`` are answer letters (or indices 0-3); returns the
    accuracy (and ``accuracy_<category>`` given ``categories``). The image tasks take SVG text
    as ``preds`` and SVG text or a ``[N, H, W, 3]`` uint8 array as ``refs``; the video tasks
    take animated SVG text for both and sample ``n_frames`` frames over the reference's
    timeline. Returns ``success_rate``, ``n_failed``, mean ``psnr`` / ``ssim`` / ``mse``
    (failures scored as black images), ``psnr_success`` over rendered ones, and
    ``mean_pred_tokens`` given ``tokenizer`` / ``feature_similarity`` given ``feature_fn``."""
    V.check_choice(task, "task", SARENA_TASKS)
    if isinstance(preds, str) or not isinstance(preds, Sequence) or len(preds) == 0:
        raise ValueError("preds must be a non-empty list")
    if isinstance(refs, str):
        raise TypeError("refs must be a list or an image array, not a string")
    V.check_same_length(preds=preds, refs=refs)
    size = V.check_int(size, "size", low=16, high=2048)
    n_frames = V.check_int(n_frames, "n_frames", low=1, high=256)
    if feature_fn is not None and not callable(feature_fn):
        raise TypeError("feature_fn must be callable")
    if task == "understanding":
        return _understanding(preds, refs, categories)
    for i, p in enumerate(preds):
        if not isinstance(p, str):
            raise TypeError(f"preds[{i}] must be SVG text (a string), got {type(p).__name__}")
    out: dict = {"n": len(preds)}
    if task in IMAGE_TASKS:
        rendered = [render_svg(p, size, return_ok=True) for p in preds]
        pred_img = np.stack([im for im, _ in rendered])
        ok = np.array([k for _, k in rendered])
        ref_img, ref_ok = _refs_as_images(refs, size)
    else:
        pred_frames, ref_frames, ok, ref_ok = [], [], [], []
        for p, r in zip(preds, refs):
            if not isinstance(r, str):
                raise TypeError("refs of an animation task must be SVG text")
            dur = animation_duration(r)
            times = np.arange(n_frames) * dur / n_frames
            fp, okp = sample_animation_frames(p, times, size)
            fr, okr = sample_animation_frames(r, times, size)
            pred_frames.append(fp)
            ref_frames.append(fr)
            ok.append(bool(okp.all()))
            ref_ok.append(bool(okr.all()))
        pred_img = np.concatenate(pred_frames)
        ref_img = np.concatenate(ref_frames)
        ok, ref_ok = np.array(ok), np.array(ref_ok)
    if not ref_ok.all():
        raise ValueError(f"refs hold {int((~ref_ok).sum())} reference(s) that do not render")
    per = image_metrics(pred_img, ref_img)
    if task in VIDEO_TASKS:  # average the frames of each sample first
        per = {k: v.reshape(len(preds), n_frames).mean(1) for k, v in per.items()}
    out.update(
        success_rate=float(ok.mean()),
        n_failed=int((~ok).sum()),
        psnr=float(per["psnr"].mean()),
        ssim=float(per["ssim"].mean()),
        mse=float(per["mse"].mean()),
        psnr_success=float(per["psnr"][ok].mean()) if ok.any() else None,
    )
    if tokenizer is not None:
        out["mean_pred_tokens"] = _token_counts(tokenizer, preds)
    if feature_fn is not None:
        out["feature_similarity"] = _feature_similarity(feature_fn, pred_img, ref_img)
    return out


def tiny_ssl_feature_fn(model=None, img_size: int = 64, pool: str = "token", batch: int = 64):
    """A ``feature_fn`` for :func:`sarena_metrics`: pooled features of the shared
    self-supervised ``tinyvit_p8_ssl`` backbone (loaded from the cache, trained on first use),
    or of any backbone on the shared ViT protocol passed as ``model``. It stands in for the
    paper's DINO score and is reported as "tiny-SSL feature similarity", not DINO."""
    import torch
    import torch.nn.functional as F

    from iclr26.models.vision import pooled

    img_size = V.check_int(img_size, "img_size", low=8, high=1024)
    V.check_choice(pool, "pool", ("token", "avg"))
    batch = V.check_int(batch, "batch", low=1)
    if model is None:
        from iclr26.models.vision import pretrained_tiny

        model = pretrained_tiny("tinyvit_p8_ssl")
    V.check_module_attrs(model, "model", ("patch_embed", "blocks"))
    model.eval()

    def features(images: np.ndarray) -> np.ndarray:
        arr = _check_images(images, "images")
        out = []
        with torch.no_grad():
            for start in range(0, len(arr), batch):
                x = torch.from_numpy(arr[start : start + batch]).permute(0, 3, 1, 2).float() / 255
                x = F.interpolate(x, size=(img_size, img_size), mode="bilinear", antialias=True)
                out.append(pooled(model, x, pool).float().numpy())
        return np.concatenate(out)

    return features
