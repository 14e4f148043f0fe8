"""Evaluation metrics shared by the vision rooms.

``linear_probe`` (logistic regression on standardised frozen features), ``fg_ari``
(adjusted Rand index over ground-truth foreground pixels, per image or per video),
``mbo`` (mean best overlap), ``miou`` (mean intersection over union of semantic classes),
``part_nmi_ari`` (part discovery over foreground pixels) and ``frechet_distance`` (between
two Gaussian fits of feature sets).
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V

__all__ = ["fg_ari", "frechet_distance", "linear_probe", "mbo", "miou", "part_nmi_ari"]


def _labels(value, name: str, ndim=None) -> np.ndarray:
    arr = V.check_array(value, name, ndim=ndim, dtype=None)
    if arr.dtype.kind == "f":
        V.check_finite(arr, name)
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer labels")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _same_shape(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{na} and {nb} must have the same shape, got {a.shape} and {b.shape}")


def linear_probe(
    Ztr, ytr, Zte, yte, C: float = 1.0, max_iter: int = 2000, return_model: bool = False
):
    """Top-1 test accuracy of ``LogisticRegression(C, max_iter)`` trained on standardised
    ``Ztr`` (the scaler is fitted on the training features only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    Ztr = V.check_array(Ztr, "Ztr", ndim=2, dtype=np.float64)
    ytr = _labels(ytr, "ytr", ndim=1)
    Zte = V.check_array(Zte, "Zte", ndim=2, dtype=np.float64)
    yte = _labels(yte, "yte", ndim=1)
    V.check_same_length(Ztr=Ztr, ytr=ytr)
    V.check_same_length(Zte=Zte, yte=yte)
    if Zte.shape[1] != Ztr.shape[1]:
        raise ValueError(f"Zte must have {Ztr.shape[1]} features like Ztr, got {Zte.shape[1]}")
    if len(np.unique(ytr)) < 2:
        raise ValueError("ytr must contain at least two classes")
    C = V.check_scalar(C, "C", low=0.0, low_open=True)
    max_iter = V.check_int(max_iter, "max_iter", low=1)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    model.fit(Ztr, ytr)
    acc = float((model.predict(Zte) == yte).mean())
    return (acc, model) if return_model else acc


def _ari(a: np.ndarray, b: np.ndarray) -> float:
    from sklearn.metrics import adjusted_rand_score

    if a.size == 0:
        return float("nan")
    return float(adjusted_rand_score(a, b))


def fg_ari(pred, gt, video: bool = False) -> float:
    """Mean over images of the ARI between ``pred`` and ``gt`` segment ids, counted on the
    pixels where ``gt > 0`` (0 is background). Shapes (N, H, W); with ``video=True``, (N, T,
    H, W) and each video's frames are scored jointly. Images with no foreground are skipped;
    if none has foreground the result is NaN."""
    pred = _labels(pred, "pred", ndim=4 if video else 3)
    gt = _labels(gt, "gt", ndim=4 if video else 3)
    _same_shape(pred, gt, "pred", "gt")
    scores = []
    for p, g in zip(pred, gt):
        fg = g > 0
        if fg.any():
            scores.append(_ari(g[fg], p[fg]))
    return float(np.mean(scores)) if scores else float("nan")


def _iou_table(p: np.ndarray, g: np.ndarray):
    """IoU of every (gt id, pred id) pair in one image; ids from np.unique."""
    g_ids, g_inv = np.unique(g, return_inverse=True)
    p_ids, p_inv = np.unique(p, return_inverse=True)
    inter = np.zeros((len(g_ids), len(p_ids)))
    np.add.at(inter, (g_inv.ravel(), p_inv.ravel()), 1)
    union = inter.sum(1, keepdims=True) + inter.sum(0, keepdims=True) - inter
    return g_ids, p_ids, inter / np.maximum(union, 1)


def mbo(pred, gt, ignore_background: bool = True) -> float:
    """Mean best overlap: for each ground-truth segment (id 0 excluded when
    ``ignore_background``), the best IoU with any predicted segment, averaged over the
    segments of an image, then over images. Shapes (N, H, W) (or (N, T, H, W), scored per
    video)."""
    pred = _labels(pred, "pred", ndim=(3, 4))
    gt = _labels(gt, "gt", ndim=(3, 4))
    _same_shape(pred, gt, "pred", "gt")
    scores = []
    for p, g in zip(pred, gt):
        g_ids, _, iou = _iou_table(p, g)
        keep = g_ids > 0 if ignore_background else np.ones(len(g_ids), bool)
        if keep.any():
            scores.append(iou[keep].max(1).mean())
    return float(np.mean(scores)) if scores else float("nan")


def miou(pred, gt, n_classes: int, ignore_index: int | None = None) -> float:
    """Mean IoU over the classes ``0..n_classes-1`` that occur in ``gt`` or ``pred``,
    accumulated over the whole set; pixels whose ``gt`` is ``ignore_index`` are skipped."""
    pred = _labels(pred, "pred")
    gt = _labels(gt, "gt")
    _same_shape(pred, gt, "pred", "gt")
    n_classes = V.check_int(n_classes, "n_classes", low=1)
    keep = np.ones(gt.shape, bool) if ignore_index is None else gt != ignore_index
    p, g = pred[keep], gt[keep]
    for arr, name in ((p, "pred"), (g, "gt")):
        if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
            raise ValueError(
                f"{name} labels must lie in [0, {n_classes}), got {arr.min()}..{arr.max()}"
            )
    conf = np.bincount(g * n_classes + p, minlength=n_classes**2).reshape(n_classes, n_classes)
    inter = np.diag(conf).astype(float)
    union = conf.sum(0) + conf.sum(1) - inter
    present = union > 0
    return float((inter[present] / union[present]).mean()) if present.any() else float("nan")


def part_nmi_ari(pred_parts, gt_parts, fg_mask=None) -> tuple[float, float]:
    """(NMI, ARI) between predicted part ids and ground-truth part ids over the foreground
    pixels of the whole set (``fg_mask``, default ``gt_parts > 0``)."""
    from sklearn.metrics import normalized_mutual_info_score

    pred = _labels(pred_parts, "pred_parts")
    gt = _labels(gt_parts, "gt_parts")
    _same_shape(pred, gt, "pred_parts", "gt_parts")
    if fg_mask is None:
        fg = gt > 0
    else:
        fg = V.check_array(fg_mask, "fg_mask", dtype=None).astype(bool)
        _same_shape(fg, gt, "fg_mask", "gt_parts")
    if not fg.any():
        raise ValueError("fg_mask selects no pixel")
    return float(normalized_mutual_info_score(gt[fg], pred[fg])), _ari(gt[fg], pred[fg])


def frechet_distance(feats_a, feats_b) -> float:
    """||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2)) between Gaussian fits of two
    feature sets (N, D) (the FID formula)."""
    from scipy import linalg

    a = V.check_array(feats_a, "feats_a", ndim=2, dtype=np.float64, min_rows=2)
    b = V.check_array(feats_b, "feats_b", ndim=2, dtype=np.float64, min_rows=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"feats_a and feats_b must have the same width, got {a.shape[1]} and {b.shape[1]}"
        )
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.atleast_2d(np.cov(a, rowvar=False)), np.atleast_2d(np.cov(b, rowvar=False))
    covmean, _ = linalg.sqrtm(s_a @ s_b, disp=False)
    if not np.isfinite(covmean).all():
        eps = 1e-6 * np.eye(len(s_a))
        covmean = linalg.sqrtm((s_a + eps) @ (s_b + eps))
    covmean = np.real(covmean)
    value = float(
        ((mu_a - mu_b) ** 2).sum() + np.trace(s_a) + np.trace(s_b) - 2 * np.trace(covmean)
    )
    return max(value, 0.0)
