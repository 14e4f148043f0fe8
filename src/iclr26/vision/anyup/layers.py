"""AnyUp's building blocks: the feature-agnostic layer, residual blocks, 2-D RoPE and the
windowed cross-attention whose values are the input features.

- :class:`LearnedFeatureUnification` (LFU, the paper's feature-agnostic layer): every input
  channel is convolved with a shared learned basis of ``M`` k x k filters (zero padding,
  divided by the number of valid pixels under the kernel), a softmax over the basis index
  turns each channel's responses into a distribution, and the mean over channels gives an
  ``M``-channel descriptor whatever the input channel count is:
  f_j(x) = (1/C) sum_i softmax_j((p_i * psi_j)(x)).
- :func:`window_mask`: which low-resolution positions each high-resolution query may attend
  to, the box [u - r, u + r] around its normalised centre u, floored/ceiled onto the grid.
- :class:`WindowCrossAttention`: RMS-normalised, projected multi-head queries and keys, the
  attention weights averaged over heads and applied to the raw features (V = P), so every
  output is a convex combination of input feature vectors inside the window.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


class ResBlock(nn.Module):
    """Pre-activation residual block: (GroupNorm, SiLU, conv) twice, plus a 1x1 shortcut
    when the channel count changes."""

    def __init__(self, in_ch: int, out_ch: int, kernel_size: int = 1, groups: int = 8):
        super().__init__()
        pad = kernel_size // 2
        mode = "reflect" if pad else "zeros"
        self.block = nn.Sequential(
            nn.GroupNorm(math.gcd(groups, in_ch), in_ch),
            nn.SiLU(),
            nn.Conv2d(in_ch, out_ch, kernel_size, padding=pad, padding_mode=mode, bias=False),
            nn.GroupNorm(math.gcd(groups, out_ch), out_ch),
            nn.SiLU(),
            nn.Conv2d(out_ch, out_ch, kernel_size, padding=pad, padding_mode=mode, bias=False),
        )
        self.shortcut = (
            nn.Identity() if in_ch == out_ch else nn.Conv2d(in_ch, out_ch, 1, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) + self.shortcut(x)


def conv_encoder(in_ch: int, out_ch: int, kernel_size: int, n_blocks: int = 2) -> nn.Sequential:
    """A k x k conv (reflect padding, no bias) followed by ``n_blocks`` 1x1 residual blocks."""
    pad = kernel_size // 2
    first = nn.Conv2d(
        in_ch,
        out_ch,
        kernel_size,
        padding=pad,
        padding_mode="reflect" if pad else "zeros",
        bias=False,
    )
    return nn.Sequential(first, *[ResBlock(out_ch, out_ch) for _ in range(n_blocks)])


def gaussian_derivative_basis(n: int, kernel_size: int) -> torch.Tensor:
    """``n`` k x k filters: Gaussian derivatives d^a/dx^a d^b/dy^b of increasing order
    (a + b = 0, 1, 2, ...), each scaled to unit L2 norm; shape (n, 1, k, k)."""
    half = (kernel_size - 1) / 2
    grid = torch.arange(kernel_size, dtype=torch.float64) - half
    sigma = max(half / 2, 0.5)
    g = torch.exp(-(grid**2) / (2 * sigma**2))
    # 1-D derivatives via probabilists' Hermite polynomials: d^n g = (-1/sigma)^n He_n(x/s) g
    t = grid / sigma
    hermite = [torch.ones_like(t), t]
    while len(hermite) <= kernel_size:
        k = len(hermite) - 1
        hermite.append(t * hermite[k] - k * hermite[k - 1])
    filters = []
    order = 0
    while len(filters) < n:
        for a in range(order + 1):
            b = order - a
            fx = (-1 / sigma) ** a * hermite[a] * g
            fy = (-1 / sigma) ** b * hermite[b] * g
            f = torch.outer(fy, fx)
            filters.append(f / f.norm().clamp_min(1e-12))
            if len(filters) == n:
                break
        order += 1
    return torch.stack(filters).float()[:, None]


class LearnedFeatureUnification(nn.Module):
    """The feature-agnostic layer: (B, C, h, w) with any C -> (B, M, h, w).

    Each channel is filtered by the shared basis {psi_j} (zero padding, border
    renormalisation by the valid-pixel count), a softmax over j is taken per channel and
    position, and the mean over channels is returned. The result does not depend on the
    order of the channels, nor on duplicating all of them."""

    def __init__(
        self, out_channels: int = 32, kernel_size: int = 5, init_gaussian_derivatives: bool = False
    ):
        super().__init__()
        self.out_channels = V.check_int(out_channels, "out_channels", low=1)
        self.kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
        if self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        if V.check_bool(init_gaussian_derivatives, "init_gaussian_derivatives"):
            basis = gaussian_derivative_basis(self.out_channels, self.kernel_size)
        else:
            basis = torch.randn(self.out_channels, 1, self.kernel_size, self.kernel_size)
        self.basis = nn.Parameter(basis)

    def responses(self, features: torch.Tensor) -> torch.Tensor:
        """(p_i * psi_j) / (valid pixels), shaped (B, C, M, h, w)."""
        b, c, h, w = features.shape
        pad = self.kernel_size // 2
        x = F.conv2d(features.reshape(b * c, 1, h, w), self.basis.to(features.dtype), padding=pad)
        ones = torch.ones(1, 1, h, w, dtype=features.dtype, device=features.device)
        window = torch.ones(1, 1, self.kernel_size, self.kernel_size, dtype=features.dtype)
        count = F.conv2d(ones, window.to(features.device), padding=pad)
        return (x / count).reshape(b, c, self.out_channels, h, w)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.responses(features).softmax(dim=2).mean(dim=1)


class RoPE2d(nn.Module):
    """2-D rotary position encoding of a (B, N, D) sequence at coordinates (N, 2) in [0, 1]:
    the first half of the channels rotates with the row, the second half with the column,
    at frequencies theta^-linspace(0, 1) (learnable, initialised as in the paper's code)."""

    def __init__(self, dim: int, theta: float = 100.0):
        super().__init__()
        self.dim = V.check_int(dim, "dim", low=4)
        if self.dim % 4:
            raise ValueError(f"dim must be a multiple of 4 for 2-D RoPE, got {dim}")
        theta = V.check_scalar(theta, "theta", low=1.0)
        freqs_1d = theta ** torch.linspace(0, -1, self.dim // 4)
        freqs_1d = torch.cat([freqs_1d, freqs_1d])
        freqs = torch.zeros(2, self.dim)
        freqs[0, : self.dim // 2] = freqs_1d
        freqs[1, self.dim // 2 :] = freqs_1d
        self.freqs = nn.Parameter(2 * math.pi * freqs)

    @staticmethod
    def rotate_half(x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=-1)
        return torch.cat((-b, a), dim=-1)

    def forward(self, x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        angle = coords.to(x.dtype) @ self.freqs.to(x.dtype)
        return x * angle.cos() + self.rotate_half(x) * angle.sin()

    def encode_map(self, enc: torch.Tensor) -> torch.Tensor:
        """RoPE of a (B, D, H, W) map at a [0, 1] x [0, 1] coordinate grid."""
        b, d, h, w = enc.shape
        rows = torch.linspace(0, 1, h, device=enc.device, dtype=enc.dtype)
        cols = torch.linspace(0, 1, w, device=enc.device, dtype=enc.dtype)
        coords = torch.stack(torch.meshgrid(rows, cols, indexing="ij"), -1).reshape(h * w, 2)
        seq = enc.permute(0, 2, 3, 1).reshape(b, h * w, d)
        return self(seq, coords).reshape(b, h, w, d).permute(0, 3, 1, 2)


def window_bounds(
    high: tuple[int, int], low: tuple[int, int], ratio: float
) -> tuple[torch.Tensor, ...]:
    """Per high-resolution pixel (H, W): the [start, end) rows and columns of its window on
    the low-resolution grid, from the box of half-width ``ratio`` around its centre."""
    (hh, ww), (lh, lw) = high, low
    r = (torch.arange(hh, dtype=torch.float32) + 0.5) / hh
    c = (torch.arange(ww, dtype=torch.float32) + 0.5) / ww
    r0 = ((r - ratio).clamp(0, 1) * lh).floor().long()
    r1 = ((r + ratio).clamp(0, 1) * lh).ceil().long()
    c0 = ((c - ratio).clamp(0, 1) * lw).floor().long()
    c1 = ((c + ratio).clamp(0, 1) * lw).ceil().long()
    return r0, r1, c0, c1


@functools.lru_cache(maxsize=64)
def _window_mask_cpu(high: tuple[int, int], low: tuple[int, int], ratio: float) -> torch.Tensor:
    r0, r1, c0, c1 = window_bounds(high, low, ratio)
    rows = torch.arange(low[0])
    cols = torch.arange(low[1])
    row_ok = (rows[None] >= r0[:, None]) & (rows[None] < r1[:, None])  # (H, lh)
    col_ok = (cols[None] >= c0[:, None]) & (cols[None] < c1[:, None])  # (W, lw)
    allowed = row_ok[:, None, :, None] & col_ok[None, :, None, :]  # (H, W, lh, lw)
    return allowed.reshape(high[0] * high[1], low[0] * low[1])


def window_mask(
    high: tuple[int, int], low: tuple[int, int], ratio: float, device=None
) -> torch.Tensor:
    """Boolean (H*W, h*w): True where query (row-major over H x W) may attend to key
    (row-major over h x w). ``ratio <= 0`` means global attention (all True)."""
    from iclr26.vision.anyup.model import check_size

    high, low = check_size(high, "high"), check_size(low, "low")
    ratio = V.check_scalar(ratio, "ratio", low=0.0, high=1.0)
    if ratio <= 0:
        return torch.ones(high[0] * high[1], low[0] * low[1], dtype=torch.bool, device=device)
    return _window_mask_cpu(high, low, float(ratio)).to(device)


class WindowCrossAttention(nn.Module):
    """Queries (B, D, H, W) attend to keys (B, D, h, w) inside their windows; the head-averaged
    weights combine the raw values (B, C, h, w) for any C. A 3x3 conv refines the queries
    first, as in the paper's code."""

    def __init__(self, qk_dim: int, num_heads: int, window_ratio: float):
        super().__init__()
        self.qk_dim, self.num_heads, self.window_ratio = qk_dim, num_heads, window_ratio
        self.query_conv = nn.Conv2d(qk_dim, qk_dim, 3, padding=1, bias=False)
        self.norm_q = nn.RMSNorm(qk_dim)
        self.norm_k = nn.RMSNorm(qk_dim)
        self.proj_q = nn.Linear(qk_dim, qk_dim)
        self.proj_k = nn.Linear(qk_dim, qk_dim)

    def attention(self, q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """Head-averaged weights (B, Nq, Nk) of sequences q (B, Nq, D), k (B, Nk, D)."""
        b, nq, d = q.shape
        nk = k.shape[1]
        hd = d // self.num_heads
        qh = self.proj_q(self.norm_q(q)).reshape(b, nq, self.num_heads, hd).transpose(1, 2)
        kh = self.proj_k(self.norm_k(k)).reshape(b, nk, self.num_heads, hd).transpose(1, 2)
        logits = qh @ kh.transpose(-1, -2) / math.sqrt(hd)  # (B, heads, Nq, Nk)
        logits = logits.masked_fill(~allowed, float("-inf"))
        return logits.softmax(-1).mean(1)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        q_chunk_size: int | None = None,
        return_attention: bool = False,
    ):
        q = self.query_conv(q)
        b, d, hh, ww = q.shape
        lh, lw = k.shape[-2:]
        c = v.shape[1]
        allowed = window_mask((hh, ww), (lh, lw), self.window_ratio, device=q.device)
        qs = q.flatten(2).transpose(1, 2)
        ks = k.flatten(2).transpose(1, 2)
        vs = v.flatten(2).transpose(1, 2)
        step = qs.shape[1] if q_chunk_size is None else int(q_chunk_size)
        outs, attns = [], []
        for start in range(0, qs.shape[1], step):  # query chunks only save memory
            a = self.attention(qs[:, start : start + step], ks, allowed[start : start + step])
            outs.append(a @ vs.to(a.dtype))
            if return_attention:
                attns.append(a)
        out = torch.cat(outs, 1).transpose(1, 2).reshape(b, c, hh, ww)
        if return_attention:
            return out, torch.cat(attns, 1)
        return out
