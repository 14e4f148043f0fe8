"""Sparse 3-D convolution in plain PyTorch (a CPU stand-in for MinkowskiEngine): coordinates
are hashed to int64 keys, neighbours found with ``torch.searchsorted`` on the sorted keys, and
a submanifold 3x3x3 convolution is one gather plus one matmul over the 27 offsets. Stride-2
convolutions (kernel 2) merge each 2x2x2 block into its parent; transposed ones expand every
parent into its 8 children."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

_OFF = 1 << 19
_M = 1 << 20
OFFSETS27 = torch.tensor(
    [[i, j, k] for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)], dtype=torch.int64
)
CHILD8 = torch.tensor(
    [[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=torch.int64
)


def coord_keys(coords: torch.Tensor) -> torch.Tensor:
    """Pack (N, 3) integer coordinates (|c| < 2^19) into sortable int64 keys."""
    c = coords + _OFF
    return (c[..., 0] * _M + c[..., 1]) * _M + c[..., 2]


def lookup(coords: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Row index in ``coords`` of every query coordinate, -1 where absent."""
    keys = coord_keys(coords)
    order = torch.argsort(keys)
    sorted_keys = keys[order]
    q = coord_keys(queries)
    pos = torch.searchsorted(sorted_keys, q).clamp(max=len(keys) - 1)
    found = sorted_keys[pos] == q
    return torch.where(found, order[pos], torch.full_like(pos, -1))


def neighbour_table(coords: torch.Tensor) -> torch.Tensor:
    """(N, 27) index of each voxel's 3x3x3 neighbours (-1 where not stored)."""
    V.check_tensor(coords, "coords", ndim=2, shape=(None, 3), integer=True)
    if coords.abs().max() >= _OFF:
        raise ValueError(f"coords must satisfy |c| < {_OFF}")
    q = coords[:, None, :] + OFFSETS27.to(coords.device)[None]
    return lookup(coords, q.reshape(-1, 3)).reshape(len(coords), 27)


class SubmanifoldConv3d(nn.Module):
    """3x3x3 sparse convolution whose output lives on the input coordinates."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.in_channels = V.check_int(in_channels, "in_channels", low=1)
        self.out_channels = V.check_int(out_channels, "out_channels", low=1)
        bound = 1.0 / (27 * in_channels) ** 0.5
        self.weight = nn.Parameter(
            torch.empty(27 * in_channels, out_channels).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, feats: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        padded = torch.cat([feats, feats.new_zeros(1, feats.shape[1])], 0)
        gathered = padded[table]  # index -1 picks the zero row
        return gathered.reshape(len(feats), -1) @ self.weight + self.bias


class DownConv3d(nn.Module):
    """Kernel-2 stride-2 sparse convolution: output coordinates are the unique parents c // 2."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        V.check_int(in_channels, "in_channels", low=1)
        V.check_int(out_channels, "out_channels", low=1)
        bound = 1.0 / (8 * in_channels) ** 0.5
        self.out_channels = out_channels
        self.weight = nn.Parameter(
            torch.empty(in_channels, 8 * out_channels).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, coords: torch.Tensor, feats: torch.Tensor):
        parents = torch.div(coords, 2, rounding_mode="floor")
        child = coords - 2 * parents
        which = child[:, 0] * 4 + child[:, 1] * 2 + child[:, 2]
        out_coords, inverse = torch.unique(parents, dim=0, return_inverse=True)
        per_child = (feats @ self.weight).reshape(len(feats), 8, self.out_channels)
        contrib = per_child[torch.arange(len(feats), device=feats.device), which]
        out = feats.new_zeros(len(out_coords), self.out_channels).index_add_(0, inverse, contrib)
        return out_coords, out + self.bias


class UpConv3d(nn.Module):
    """Kernel-2 stride-2 transposed sparse convolution: every parent emits its 8 children."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        V.check_int(in_channels, "in_channels", low=1)
        V.check_int(out_channels, "out_channels", low=1)
        bound = 1.0 / in_channels**0.5
        self.out_channels = out_channels
        self.weight = nn.Parameter(
            torch.empty(in_channels, 8 * out_channels).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, coords: torch.Tensor, feats: torch.Tensor):
        children = (2 * coords[:, None, :] + CHILD8.to(coords.device)[None]).reshape(-1, 3)
        out = (feats @ self.weight).reshape(-1, self.out_channels) + self.bias
        return children, out


class ResBlock(nn.Module):
    """Five submanifold convolutions: one entry convolution and two residual units."""

    def __init__(self, channels: int):
        super().__init__()
        V.check_int(channels, "channels", low=1)
        self.convs = nn.ModuleList(SubmanifoldConv3d(channels, channels) for _ in range(5))

    def forward(self, feats: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.convs[0](feats, table))
        for a, b in ((1, 2), (3, 4)):
            x = x + self.convs[b](torch.relu(self.convs[a](x, table)), table)
        return x
