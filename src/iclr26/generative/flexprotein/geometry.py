"""Rigid-body handling and structure metrics: centring, uniformly random proper rotations (the
paper's augmentation in place of equivariant layers), Kabsch-aligned Cα-RMSD (mirror images count
as errors), dRMSD over pairs closer than 15 Å, and AlphaFold 3's smooth-lDDT."""

from __future__ import annotations

import numpy as np
import torch

from iclr26 import validation as V

LDDT_CUTOFFS = (0.5, 1.0, 2.0, 4.0)


def centre(coords: np.ndarray) -> np.ndarray:
    """Coordinates ``(..., N, 3)`` minus their centroid (removes translation)."""
    x = V.check_array(coords, "coords", ndim=(2, 3), dtype=np.float64)
    if x.shape[-1] != 3:
        raise ValueError(f"coords must end in 3 (x, y, z), got shape {x.shape}")
    return x - x.mean(axis=-2, keepdims=True)


def random_rotations(n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """``n`` rotation matrices drawn uniformly (Haar) from SO(3): det = +1, never a reflection."""
    from scipy.spatial.transform import Rotation

    n = V.check_int(n, "n", low=1)
    if rng is not None and not isinstance(rng, (int, np.integer, np.random.Generator)):
        raise TypeError(f"rng must be an int seed or a numpy Generator, got {type(rng).__name__}")
    rng = np.random.default_rng(rng)
    return Rotation.random(n, random_state=rng).as_matrix()


def _pair(pred, true) -> tuple[np.ndarray, np.ndarray]:
    p = V.check_array(pred, "pred", ndim=(2, 3), dtype=np.float64)
    t = V.check_array(true, "true", ndim=(2, 3), dtype=np.float64)
    if p.shape != t.shape or p.shape[-1] != 3:
        raise ValueError(
            f"pred must have the shape of true (..., N, 3), got {p.shape} vs {t.shape}"
        )
    if p.shape[-2] < 3:
        raise ValueError(f"pred must have at least 3 residues, got {p.shape[-2]}")
    return p, t


def kabsch_rmsd(pred, true) -> np.ndarray | float:
    """Cα-RMSD after the best *proper* rotation + translation (Kabsch with the det correction, so
    a mirrored copy is not aligned onto the original). Works on ``(N, 3)`` or ``(B, N, 3)``."""
    p, t = _pair(pred, true)
    single = p.ndim == 2
    p, t = np.atleast_3d(p[None] if single else p), (t[None] if single else t)
    p = p - p.mean(1, keepdims=True)
    t = t - t.mean(1, keepdims=True)
    h = np.einsum("bni,bnj->bij", p, t)
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(np.einsum("bij,bjk->bik", u, vt)))
    fix = np.ones((len(p), 3))
    fix[:, 2] = d
    rot = np.einsum("bij,bj,bjk->bik", u, fix, vt)  # p @ rot aligns p onto t
    diff = np.einsum("bni,bij->bnj", p, rot) - t
    rmsd = np.sqrt((diff**2).sum(-1).mean(-1))
    return float(rmsd[0]) if single else rmsd


def drmsd(pred, true, cutoff: float = 15.0) -> np.ndarray | float:
    """RMS error of inter-residue distances over pairs i != j whose true distance < ``cutoff`` Å
    (alignment-free; a mirror image has dRMSD 0, so report it beside Kabsch RMSD)."""
    p, t = _pair(pred, true)
    cutoff = V.check_scalar(cutoff, "cutoff", low=0.0, low_open=True)
    single = p.ndim == 2
    p, t = (p[None], t[None]) if single else (p, t)
    dp = np.linalg.norm(p[:, :, None] - p[:, None], axis=-1)
    dt = np.linalg.norm(t[:, :, None] - t[:, None], axis=-1)
    eye = np.eye(p.shape[1], dtype=bool)[None]
    sel = (dt < cutoff) & ~eye
    err = np.where(sel, (dp - dt) ** 2, 0.0).sum((1, 2)) / np.maximum(sel.sum((1, 2)), 1)
    out = np.sqrt(err)
    return float(out[0]) if single else out


def smooth_lddt_loss(pred: torch.Tensor, true: torch.Tensor, cutoff: float = 15.0) -> torch.Tensor:
    """AlphaFold 3's smooth-lDDT loss, ``1 - mean_ij ¼ Σ_c sigmoid(c - |d̂_ij - d_ij|)`` over
    pairs i != j with true distance < ``cutoff``; coordinates ``(B, N, 3)`` in Å. Its minimum
    (a perfect prediction) is ``1 - ¼ Σ_c sigmoid(c)`` ≈ 0.196."""
    V.check_tensor(pred, "pred", ndim=3, floating=True)
    V.check_tensor(true, "true", ndim=3, floating=True, shape=tuple(pred.shape))
    cutoff = V.check_scalar(cutoff, "cutoff", low=0.0, low_open=True)
    dp = torch.cdist(pred, pred)
    dt = torch.cdist(true, true)
    n = pred.shape[1]
    sel = (dt < cutoff) & ~torch.eye(n, dtype=torch.bool, device=pred.device)[None]
    delta = (dp - dt).abs()
    score = sum(torch.sigmoid(c - delta) for c in LDDT_CUTOFFS) / len(LDDT_CUTOFFS)
    lddt = (score * sel).sum((1, 2)) / sel.sum((1, 2)).clamp_min(1)
    return 1.0 - lddt.mean()


def radius_of_gyration(coords) -> np.ndarray | float:
    """Radius of gyration of ``(N, 3)`` or ``(B, N, 3)`` coordinates."""
    x = V.check_array(coords, "coords", ndim=(2, 3), dtype=np.float64)
    if x.shape[-1] != 3:
        raise ValueError(f"coords must end in 3 (x, y, z), got shape {x.shape}")
    c = x - x.mean(-2, keepdims=True)
    rg = np.sqrt((c**2).sum(-1).mean(-1))
    return float(rg) if x.ndim == 2 else rg
