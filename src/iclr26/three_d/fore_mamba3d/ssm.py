"""SASFMamba (paper): a bidirectional Mamba block whose per-token SSM states h_t are re-mixed
before the read-out y_t = C_t h_t + D x_t. SAF groups the states by the predicted semantic class
(stable sort), runs a large-kernel 1-D convolution over the regrouped sequence and restores the
order; SSF scatters the states to the sparse 3-D grid and applies axis-wise large-kernel
depth-wise convolutions (k x 1 x 1, 1 x k x 1, 1 x 1 x k, summed). The selective scan is written
here on top of ``mambapy``'s parallel scan so that the state sequence is exposed."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from mambapy.mamba import MambaBlock, MambaConfig
from mambapy.pscan import pscan
from torch import nn

from iclr26 import validation as V


class SparseNeighbours:
    """Neighbour table of active voxels along each axis for offsets -r..r (-1 where the
    neighbour is empty): submanifold sparse convolution by gathering."""

    def __init__(self, coords: torch.Tensor, radius: int):
        V.check_tensor(coords, "coords", ndim=2, shape=(None, 3), integer=True)
        radius = V.check_int(radius, "radius", low=0)
        c = coords.long()
        lo = c.min(0).values
        c = c - lo
        ext = c.max(0).values + 2 * radius + 1
        key = lambda q: ((q[:, 0] * ext[1]) + q[:, 1]) * ext[2] + q[:, 2]  # noqa: E731
        base = key(c + radius)
        order = torch.argsort(base)
        sorted_keys = base[order]
        tables = []
        for axis in range(3):
            cols = []
            for off in range(-radius, radius + 1):
                shift = torch.zeros(3, dtype=torch.long)
                shift[axis] = off
                k = key(c + radius + shift)
                pos = torch.searchsorted(sorted_keys, k).clamp(max=len(base) - 1)
                found = sorted_keys[pos] == k
                cols.append(torch.where(found, order[pos], torch.full_like(pos, -1)))
            tables.append(torch.stack(cols, 1))
        self.table = torch.stack(tables, 0)  # (3, N, 2r+1)
        self.radius = radius
        self.n = len(c)


def axis_sparse_conv(values: torch.Tensor, nb: SparseNeighbours, weight: torch.Tensor):
    """Sum over the three axes of depth-wise sparse convolutions: values (N, C), weight
    (3, 2r+1, C). Equal to dense conv3d with (k,1,1)/(1,k,1)/(1,1,k) kernels on a full grid."""
    V.check_tensor(values, "values", ndim=2, shape=(nb.n, None), floating=True)
    V.check_tensor(
        weight, "weight", ndim=3, shape=(3, nb.table.shape[2], values.shape[1]), floating=True
    )
    padded = torch.cat([values, values.new_zeros(1, values.shape[1])], 0)
    idx = torch.where(nb.table < 0, torch.full_like(nb.table, values.shape[0]), nb.table)
    gathered = padded[idx.permute(1, 0, 2).reshape(-1)].reshape(idx.shape[1], -1, values.shape[1])
    w = weight.reshape(-1, values.shape[1])  # (3 * K, C), the taps of the three axes
    return (gathered * w).sum(1)


class SASFMamba(nn.Module):
    """One bidirectional (shared-weight, forward + reversed scans summed) Mamba layer with the
    SAF and SSF state fusions. ``forward(x, valid, token_id, sem, nb)`` takes patches
    ``x`` (M, L, D), a mask of non-pad positions, the voxel id of every position (-1 for local
    tokens and pads), predicted classes per voxel and the voxel neighbour table."""

    def __init__(
        self,
        d_model: int,
        d_state: int = 8,
        expand: int = 2,
        use_saf: bool = True,
        use_ssf: bool = True,
        saf_kernel: int = 7,
        ssf_kernel: int = 7,
        bidirectional: bool = True,
    ):
        super().__init__()
        d_model = V.check_int(d_model, "d_model", low=1)
        d_state = V.check_int(d_state, "d_state", low=1)
        expand = V.check_int(expand, "expand", low=1)
        self.use_saf = V.check_bool(use_saf, "use_saf")
        self.use_ssf = V.check_bool(use_ssf, "use_ssf")
        self.bidirectional = V.check_bool(bidirectional, "bidirectional")
        saf_kernel = V.check_int(saf_kernel, "saf_kernel", low=1)
        ssf_kernel = V.check_int(ssf_kernel, "ssf_kernel", low=1)
        if saf_kernel % 2 == 0 or ssf_kernel % 2 == 0:
            raise ValueError("saf_kernel and ssf_kernel must be odd")
        self.cell = MambaBlock(
            MambaConfig(d_model=d_model, n_layers=1, d_state=d_state, expand_factor=expand)
        )
        self.norm = nn.LayerNorm(d_model)
        ch = self.cell.config.d_inner * d_state
        self.d_state = d_state
        self.ssf_radius = ssf_kernel // 2
        saf = torch.zeros(ch, 1, saf_kernel)
        saf[:, 0, saf_kernel // 2] = 1.0  # identity at initialisation
        self.saf_weight = nn.Parameter(saf)
        ssf = torch.zeros(3, ssf_kernel, ch)
        ssf[:, ssf_kernel // 2] = 1.0 / 3.0
        self.ssf_weight = nn.Parameter(ssf)

    def scan_states(self, x: torch.Tensor, valid: torch.Tensor):
        """In-projection, causal conv, selective scan: returns (states (M,L,E,N), C, u, z)."""
        cell = self.cell
        L = x.shape[1]
        u, z = cell.in_proj(x).chunk(2, dim=-1)
        u = u * valid[:, :, None]  # pads are invisible to the causal conv as well
        u = F.silu(cell.conv1d(u.transpose(1, 2))[:, :, :L].transpose(1, 2))
        A = -torch.exp(cell.A_log.float())
        dbc = cell.x_proj(u)
        delta, B, C = torch.split(dbc, [cell.config.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(F.linear(delta, cell.dt_proj.weight) + cell.dt_proj.bias)
        dA = torch.exp(delta.unsqueeze(-1) * A)
        BX = delta.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)
        keep = valid[:, :, None, None]
        dA = torch.where(keep, dA, torch.ones_like(dA))  # pads leave the state untouched
        BX = torch.where(keep, BX, torch.zeros_like(BX))
        return pscan(dA, BX), C, u, z

    def _fuse(self, h, token_id, sem, nb):
        M, L, E, N = h.shape
        flat = h.reshape(M * L, E * N)
        ids = token_id.reshape(-1)
        real = torch.nonzero(ids >= 0).squeeze(1)
        if real.numel() == 0 or not (self.use_saf or self.use_ssf):
            return h
        hv = flat[real]
        if self.use_saf:
            cls = sem[ids[real]]
            perm = torch.argsort(cls, stable=True)
            grouped = hv[perm].t().unsqueeze(0)
            mixed = F.conv1d(
                grouped, self.saf_weight, padding=self.saf_weight.shape[-1] // 2, groups=E * N
            )
            out = torch.empty_like(hv)
            out[perm] = mixed.squeeze(0).t()
            hv = out
        if self.use_ssf:
            grid = hv.new_zeros(nb.n, E * N)
            grid = grid.index_copy(0, ids[real], hv)
            conv = axis_sparse_conv(grid, nb, self.ssf_weight)
            hv = conv[ids[real]]
        flat = flat.index_copy(0, real, hv)
        return flat.reshape(M, L, E, N)

    def _direction(self, x, valid, token_id, sem, nb):
        h, C, u, z = self.scan_states(x, valid)
        h = self._fuse(h, token_id, sem, nb)
        y = (h @ C.unsqueeze(-1)).squeeze(-1) + self.cell.D * u
        return self.cell.out_proj(y * F.silu(z))

    def forward(self, x, valid=None, token_id=None, sem=None, nb=None):
        V.check_tensor(x, "x", ndim=3, floating=True)
        M, L, _ = x.shape
        if valid is None:
            valid = torch.ones(M, L, dtype=torch.bool)
        if token_id is None:
            token_id = torch.full((M, L), -1, dtype=torch.long)
        xn = self.norm(x)
        out = self._direction(xn, valid, token_id, sem, nb)
        if self.bidirectional:
            rev = self._direction(xn.flip(1), valid.flip(1), token_id.flip(1), sem, nb)
            out = out + rev.flip(1)
        return x + out
