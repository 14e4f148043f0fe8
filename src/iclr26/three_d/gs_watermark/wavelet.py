"""Level-1 Haar DWT (orthonormal) and its inverse in torch, differentiable; the message decoder
reads the LL band (the paper's decoder input)."""

from __future__ import annotations

import torch

from iclr26 import validation as V


def haar_dwt(image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(..., H, W) with even H, W -> (LL, LH, HL, HH), each (..., H/2, W/2)."""
    V.check_tensor(image, "image", min_ndim=2, floating=True)
    if image.shape[-1] % 2 or image.shape[-2] % 2:
        raise ValueError(f"image must have even height and width, got {tuple(image.shape[-2:])}")
    a = image[..., 0::2, 0::2]
    b = image[..., 0::2, 1::2]
    c = image[..., 1::2, 0::2]
    d = image[..., 1::2, 1::2]
    return (a + b + c + d) / 2, (a - b + c - d) / 2, (a + b - c - d) / 2, (a - b - c + d) / 2


def haar_idwt(ll, lh, hl, hh) -> torch.Tensor:
    """Inverse of :func:`haar_dwt`."""
    for n, t in (("ll", ll), ("lh", lh), ("hl", hl), ("hh", hh)):
        V.check_tensor(t, n, min_ndim=2, floating=True)
        if t.shape != ll.shape:
            raise ValueError(
                f"{n} must have the shape of ll {tuple(ll.shape)}, got {tuple(t.shape)}"
            )
    a = (ll + lh + hl + hh) / 2
    b = (ll - lh + hl - hh) / 2
    c = (ll + lh - hl - hh) / 2
    d = (ll - lh - hl + hh) / 2
    out = ll.new_zeros(*ll.shape[:-2], 2 * ll.shape[-2], 2 * ll.shape[-1])
    out[..., 0::2, 0::2], out[..., 0::2, 1::2] = a, b
    out[..., 1::2, 0::2], out[..., 1::2, 1::2] = c, d
    return out
