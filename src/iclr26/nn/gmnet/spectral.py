"""Frequency tools of the paper's analysis (Sec. 3): band-split images and spectral energy.

``radial_highpass``/``radial_lowpass`` split an image's centred 2-D spectrum at a radius
(the paper's "r = 12/24/36 High" evaluation); ``high_freq_energy_fraction`` measures how much
spectral energy lies above a normalised frequency; ``gate_spectrum_demo`` shows the convolution
theorem argument on band-limited signals: the product ``act(x) * x`` widens the spectrum, and
more so for a non-smooth activation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from iclr26 import validation as V


def _as_tensor(x, name: str) -> tuple[torch.Tensor, bool]:
    if isinstance(x, np.ndarray):
        V.check_array(x, name, dtype=None)
        return torch.from_numpy(x), True
    if isinstance(x, torch.Tensor):
        V.check_tensor(x, name)
        return x, False
    raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")


def _radius_grid(h: int, w: int, device=None) -> torch.Tensor:
    fy = torch.arange(h, device=device) - h // 2
    fx = torch.arange(w, device=device) - w // 2
    return torch.sqrt(fy[:, None].double() ** 2 + fx[None, :].double() ** 2)


def _radial_filter(images, r: float, keep_high: bool):
    x, was_numpy = _as_tensor(images, "images")
    if x.ndim < 2:
        raise ValueError("images must have at least 2 dimensions (..., H, W)")
    if x.is_complex():
        raise TypeError("images must be real, got a complex tensor")
    V.check_scalar(r, "r", low=0.0)
    h, w = x.shape[-2:]
    spectrum = torch.fft.fftshift(torch.fft.fft2(x), dim=(-2, -1))
    radius = _radius_grid(h, w, x.device)
    mask = radius >= r if keep_high else radius < r
    out = torch.fft.ifft2(torch.fft.ifftshift(spectrum * mask, dim=(-2, -1))).real.to(x.dtype)
    return out.numpy() if was_numpy else out


def radial_highpass(images, r: float):
    """Zero every centred-spectrum frequency with radius < r (per channel, last two axes)."""
    return _radial_filter(images, r, keep_high=True)


def radial_lowpass(images, r: float):
    """Keep only frequencies with radius < r; ``lowpass(r) + highpass(r)`` is the input."""
    return _radial_filter(images, r, keep_high=False)


def high_freq_energy_fraction(
    x, cutoff: float, ndim: int = 1, window: str | None = "hann", reduce: bool = True
):
    """Fraction of spectral energy at normalised frequency radius > ``cutoff`` (1 = Nyquist).

    ``x`` holds signals along its last ``ndim`` axes (1 for sequences, 2 for feature maps).
    ``window="hann"`` tapers non-periodic signals so edges do not leak into high frequencies;
    ``window=None`` is exact for periodic signals. With ``reduce`` the energies are summed over
    all leading axes before the ratio, else one fraction per signal is returned.
    """
    t, _ = _as_tensor(x, "x")
    V.check_choice(ndim, "ndim", (1, 2))
    if t.ndim < ndim:
        raise ValueError(f"x needs at least {ndim} dimensions, got {t.ndim}")
    V.check_scalar(cutoff, "cutoff", low=0.0)
    V.check_choice(window, "window", ("hann", None))
    V.check_bool(reduce, "reduce")
    t = t.double()
    dims = tuple(range(-ndim, 0))
    sizes = t.shape[-ndim:]
    if window == "hann":
        for axis, n in zip(dims, sizes):
            shape = [1] * t.ndim
            shape[axis] = n
            t = t * torch.hann_window(n, periodic=False, dtype=torch.float64).view(shape)
    power = torch.fft.fftn(t, dim=dims).abs() ** 2
    # |f| / Nyquist along each axis, then the radius.
    grids = [torch.fft.fftfreq(n, dtype=torch.float64).abs() * 2.0 for n in sizes]
    radius = grids[0] if ndim == 1 else torch.sqrt(grids[0][:, None] ** 2 + grids[1][None, :] ** 2)
    high = (power * (radius > cutoff)).sum(dim=dims)
    total = power.sum(dim=dims)
    if reduce:
        return float(high.sum() / total.sum().clamp_min(1e-300))
    frac = high / total.clamp_min(1e-300)
    return frac.numpy() if isinstance(x, np.ndarray) else frac


def band_limited_signals(
    n_signals: int = 64, n: int = 4096, band: float = 0.05, seed: int = 0
) -> torch.Tensor:
    """Periodic Gaussian signals with energy only below ``band * Nyquist``, standardised."""
    V.check_scalar(band, "band", low=0.0, high=1.0, low_open=True)
    V.check_int(n_signals, "n_signals", low=1)
    V.check_int(n, "n", low=8)
    V.check_int(seed, "seed", low=0)
    gen = torch.Generator().manual_seed(seed)
    white = torch.randn(n_signals, n, generator=gen, dtype=torch.float64)
    spectrum = torch.fft.rfft(white, dim=-1)
    freq = torch.fft.rfftfreq(n, dtype=torch.float64) * 2.0
    spectrum = spectrum * (freq <= band)
    signal = torch.fft.irfft(spectrum, n=n, dim=-1)
    signal = signal - signal.mean(dim=-1, keepdim=True)
    return signal / signal.std(dim=-1, keepdim=True)


def gate_spectrum_demo(
    act: Callable[[torch.Tensor], torch.Tensor],
    n: int = 4096,
    band: float = 0.05,
    n_signals: int = 64,
    seed: int = 0,
    beyond: float = 2.0,
) -> float:
    """High-frequency fraction of ``act(x) * x`` beyond ``beyond * band`` for band-limited x."""
    if not callable(act):
        raise TypeError(f"act must be callable, got {type(act).__name__}")
    V.check_scalar(beyond, "beyond", low=0.0, low_open=True)
    x = band_limited_signals(n_signals, n, band, seed)
    y = act(x) * x
    return high_freq_energy_fraction(y, cutoff=beyond * band, window=None)
