"""Entropy coding: a factorized (per-channel, Balle et al. 2018) learned prior for the latent,
range-coded with ``constriction``; and a lossless octree coder for coordinates (8-bit child
masks under an adaptive categorical model per depth)."""

from __future__ import annotations

import struct

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V


class FactorizedPrior(nn.Module):
    """Per-channel monotone CDF c(x) = sigmoid(f(x)); f is a chain of 1 -> 3 -> 3 -> 1 affine
    maps with softplus-positive matrices and tanh-gated nonlinearities. The likelihood of an
    integer symbol y is c(y + 1/2) - c(y - 1/2); training replaces rounding by uniform noise."""

    def __init__(self, channels: int, filters: tuple[int, ...] = (3, 3)):
        super().__init__()
        self.channels = V.check_int(channels, "channels", low=1)
        for f in filters:
            V.check_int(f, "filters", low=1)
        dims = (1, *filters, 1)
        self.matrices = nn.ParameterList()
        self.biases = nn.ParameterList()
        self.factors = nn.ParameterList()
        for i in range(len(dims) - 1):
            init = np.log(np.expm1(1.0 / dims[i + 1]))
            self.matrices.append(nn.Parameter(torch.full((channels, dims[i + 1], dims[i]), init)))
            self.biases.append(nn.Parameter(torch.rand(channels, dims[i + 1], 1) - 0.5))
            if i < len(dims) - 2:
                self.factors.append(nn.Parameter(torch.zeros(channels, dims[i + 1], 1)))

    def logits_cdf(self, x: torch.Tensor) -> torch.Tensor:
        """x: (C, 1, n) -> (C, 1, n)."""
        for i, (m, b) in enumerate(zip(self.matrices, self.biases, strict=True)):
            x = F.softplus(m) @ x + b
            if i < len(self.factors):
                x = x + torch.tanh(self.factors[i]) * torch.tanh(x)
        return x

    def likelihood(self, y: torch.Tensor) -> torch.Tensor:
        """y: (N, C) (noisy or rounded) -> per-element likelihoods, floored at 1e-9."""
        x = y.t().unsqueeze(1)
        lower, upper = self.logits_cdf(x - 0.5), self.logits_cdf(x + 0.5)
        sign = -torch.sign(lower + upper).detach()  # evaluate in the flatter tail
        p = torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))
        return p.squeeze(1).t().clamp_min(1e-9)

    def pmf_table(self, low: int, high: int) -> np.ndarray:
        """(C, high - low + 1) probabilities of each integer symbol per channel."""
        sym = torch.arange(low, high + 1, dtype=torch.float32, device=self.biases[0].device)
        with torch.no_grad():
            p = self.likelihood(sym[:, None].expand(-1, self.channels))
        return p.t().double().cpu().numpy()


def _encoder():
    import constriction

    return constriction.stream.queue.RangeEncoder()


def _categorical():
    import constriction

    return constriction.stream.model.Categorical(perfect=False)


def encode_symbols(symbols: np.ndarray, probs: np.ndarray) -> bytes:
    """Range-code int symbols (n,) with a probability row (n, K) each."""
    enc = _encoder()
    enc.encode(symbols.astype(np.int32), _categorical(), np.ascontiguousarray(probs, np.float64))
    return enc.get_compressed().tobytes()


def decode_symbols(data: bytes, probs: np.ndarray) -> np.ndarray:
    import constriction

    words = np.frombuffer(data, dtype=np.uint32)
    dec = constriction.stream.queue.RangeDecoder(words)
    return dec.decode(_categorical(), np.ascontiguousarray(probs, np.float64))


def encode_latent(prior: FactorizedPrior, symbols: np.ndarray) -> bytes:
    """Header (min, max as int16) + range-coded (N, C) integer latent, channel by channel."""
    symbols = V.check_array(symbols, "symbols", ndim=2, shape=(None, prior.channels), dtype=None)
    if symbols.dtype.kind not in "iu":
        raise TypeError(f"symbols must be an integer array, got {symbols.dtype}")
    if symbols.min() < -32768 or symbols.max() > 32767:
        raise ValueError("symbols must fit in int16")
    low, high = int(symbols.min()), int(symbols.max())
    high = max(high, low + 1)  # the coder needs an alphabet of at least two symbols
    pmf = prior.pmf_table(low, high)  # (C, K)
    probs = pmf[np.tile(np.arange(prior.channels), len(symbols))]
    body = encode_symbols((symbols - low).reshape(-1), probs)
    return struct.pack("<hh", low, high) + body


def decode_latent(prior: FactorizedPrior, data: bytes, n: int) -> np.ndarray:
    if not isinstance(data, bytes | bytearray) or len(data) < 4:
        raise ValueError("data must be a bitstream made by encode_latent")
    n = V.check_int(n, "n", low=1)
    low, high = struct.unpack("<hh", data[:4])
    pmf = prior.pmf_table(low, high)
    probs = pmf[np.tile(np.arange(prior.channels), n)]
    return decode_symbols(data[4:], probs).reshape(n, prior.channels).astype(np.int64) + low


def _adaptive_probs(symbols: np.ndarray) -> np.ndarray:
    """Row i: 1 + counts of each of the 256 masks among symbols[:i] (the decoder's view)."""
    onehot = np.zeros((len(symbols), 256))
    onehot[np.arange(len(symbols)), symbols] = 1.0
    return 1.0 + np.cumsum(onehot, 0) - onehot


def octree_depth(grid: int) -> int:
    return max(1, int(np.ceil(np.log2(grid))))


def encode_octree(coords, grid: int) -> bytes:
    """Losslessly code a set of integer coordinates in [0, grid)^3: breadth-first 8-bit child
    masks, an adaptive model per depth. Header: the depth (uint8)."""
    grid = V.check_int(grid, "grid", low=1, high=1 << 16)
    c = V.check_array(coords, "coords", ndim=2, shape=(None, 3), dtype=None)
    if c.dtype.kind not in "iu":
        raise TypeError(f"coords must be an integer array, got {c.dtype}")
    if c.min() < 0 or c.max() >= grid:
        raise ValueError(f"coords must lie in [0, {grid}), got {c.min()}..{c.max()}")
    depth = octree_depth(grid)
    c = np.unique(c.astype(np.int64), axis=0)
    symbols = []
    for d in range(depth):
        shift = depth - d - 1
        node = c >> (shift + 1)
        child = (c >> shift) & 1
        bit = child[:, 0] * 4 + child[:, 1] * 2 + child[:, 2]
        nodes, inv = np.unique(node, axis=0, return_inverse=True)
        masks = np.zeros(len(nodes), dtype=np.int64)
        np.bitwise_or.at(masks, inv.reshape(-1), 1 << bit)
        symbols.append(masks)
    enc = _encoder()
    for masks in symbols:
        enc.encode(masks.astype(np.int32), _categorical(), _adaptive_probs(masks))
    return struct.pack("<B", depth) + enc.get_compressed().tobytes()


def decode_octree(data: bytes) -> np.ndarray:
    """Inverse of ``encode_octree``: the sorted unique coordinates (M, 3)."""
    import constriction

    if not isinstance(data, bytes | bytearray) or len(data) < 1:
        raise ValueError("data must be a bitstream made by encode_octree")
    (depth,) = struct.unpack("<B", data[:1])
    dec = constriction.stream.queue.RangeDecoder(np.frombuffer(data[1:], dtype=np.uint32))
    nodes = np.zeros((1, 3), dtype=np.int64)
    bits = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=np.int64)
    for _ in range(depth):
        counts = np.ones(256)
        masks = np.empty(len(nodes), dtype=np.int64)
        for i in range(len(nodes)):
            m = int(dec.decode(constriction.stream.model.Categorical(counts, perfect=False)))
            masks[i] = m
            counts[m] += 1.0
        has = (masks[:, None] >> np.arange(8)[None]) & 1
        parent, which = np.nonzero(has)
        nodes = 2 * nodes[parent] + bits[which]
        order = np.lexsort((nodes[:, 2], nodes[:, 1], nodes[:, 0]))
        nodes = nodes[order]
    return nodes
