"""Image metrics from scikit-image (no hand-written PSNR/SSIM)."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def _pair(restored, clean):
    clean = V.check_array(clean, "clean", ndim=3, dtype=np.float64, low=0.0, high=1.0)
    restored = V.check_array(
        restored, "restored", shape=clean.shape, dtype=np.float64, low=0.0, high=1.0
    )
    return restored, clean


def psnr(restored, clean) -> float:
    """Mean per-image PSNR (dB, data range 1) of ``(n, H, W)`` images in [0, 1]."""
    from skimage.metrics import peak_signal_noise_ratio

    restored, clean = _pair(restored, clean)
    return float(
        np.mean([peak_signal_noise_ratio(c, r, data_range=1.0) for r, c in zip(restored, clean)])
    )


def ssim(restored, clean) -> float:
    """Mean per-image SSIM (7x7 window, data range 1)."""
    from skimage.metrics import structural_similarity

    restored, clean = _pair(restored, clean)
    win = min(7, clean.shape[1] - (1 - clean.shape[1] % 2))
    return float(
        np.mean(
            [
                structural_similarity(c, r, data_range=1.0, win_size=win)
                for r, c in zip(restored, clean)
            ]
        )
    )
