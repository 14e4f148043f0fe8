"""SASFMamba (paper): a bidirectional Mamba block whose per-token SSM states h_t are re-mixed
before the read-out y_t = C_t h_t + D x_t. SAF groups the states by the predicted semantic class
(stable sort), runs a large-kernel 1-D convolution over the regrouped sequence and restores the
order; SSF scatters the states to the sparse 3-D grid and applies axis-wise large-kernel
depth-wise convolutions (k x 1 x 1, 1 x k x 1, 1 x 1 x k, summed). The selective scan is written
here on top of ``mambapy``'s parallel scan so that the state sequence is exposed."""

from __future__ import annotations

import functools
import warnings

import torch
import torch.nn.functional as F
from mambapy.mamba import MambaBlock, MambaConfig
from mambapy.pscan import pscan
from torch import nn

from iclr26 import validation as V

SCANS = ("torch", "mamba_ssm")


@functools.cache
def mamba_ssm_scan():
    """``mamba_ssm``'s fused selective scan and an empty string, or ``None`` and the reason it
    is not available (not installed, or its CUDA extension does not load)."""
    try:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
    except Exception as exc:  # ImportError, or an OSError from a CUDA library
        return None, f"mamba_ssm does not import ({type(exc).__name__}: {exc})"
    return selective_scan_fn, ""


def _kernel_usable(x: torch.Tensor, needs_states: bool):
    """``(scan_fn, "")`` where the fused kernel can run on ``x``, else ``(None, reason)``."""
    if needs_states:
        return None, "SAF/SSF re-mix the SSM states, which the fused kernel does not expose"
    if not x.is_cuda:
        return None, f"the input is on {x.device}, and the fused kernel needs a CUDA device"
    return mamba_ssm_scan()


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
                shift = torch.zeros(3, dtype=torch.long, device=c.device)
                shift[axis] = off
                k = key(c + radius + shift)
                pos = torch.searchsorted(sorted_keys, k).clamp(max=len(base) - 1)
                found = sorted_keys[pos] == k
                cols.append(torch.where(found, order[pos], torch.full_like(pos, -1)))
            tables.append(torch.stack(cols, 1))
        self.table = torch.stack(tables, 0)  # (3, N, 2r+1)
        self.radius = radius
        self.n = len(c)
        # The off-centre neighbours that exist, as (output row, input row, flat tap) triples:
        # the convolution touches only these (empty neighbours would contribute zeros).
        dev = c.device
        taps = torch.arange(3 * (2 * radius + 1), device=dev).reshape(3, 1, -1)
        taps = taps.expand_as(self.table)
        rows = torch.arange(self.n, device=dev).reshape(1, -1, 1).expand_as(self.table)
        offc = torch.ones(2 * radius + 1, dtype=torch.bool, device=dev)
        offc[radius] = False
        hit = (self.table >= 0) & offc
        by_tap = torch.argsort(taps[hit], stable=True)  # grouped by tap: weights expand by count
        self.pair_rows, self.pair_cols = rows[hit][by_tap], self.table[hit][by_tap]
        self.pair_taps = taps[hit][by_tap]
        self.tap_counts = torch.bincount(self.pair_taps, minlength=3 * (2 * radius + 1))


def axis_sparse_conv(values: torch.Tensor, nb: SparseNeighbours, weight: torch.Tensor):
    """Sum over the three axes of depth-wise sparse convolutions: values (N, C), weight
    (3, 2r+1, C). Equal to dense conv3d with (k,1,1)/(1,k,1)/(1,1,k) kernels on a full grid.
    The three centre taps act on the voxel itself and are applied once, summed; the other taps
    only where the neighbour exists."""
    V.check_tensor(values, "values", ndim=2, shape=(nb.n, None), floating=True)
    V.check_tensor(
        weight, "weight", ndim=3, shape=(3, nb.table.shape[2], values.shape[1]), floating=True
    )
    return _axis_sparse_conv(values, nb, weight)


def _axis_sparse_conv(values, nb, weight):
    out = values * weight[:, nb.radius].sum(0)
    n_pairs = len(nb.pair_rows)
    if n_pairs:
        w = weight.reshape(-1, values.shape[1])  # (3 * K, C), the taps of the three axes
        w = torch.repeat_interleave(w, nb.tap_counts, dim=0, output_size=n_pairs)
        out = out.index_add(0, nb.pair_rows, values.index_select(0, nb.pair_cols) * w)
    return out


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
        scan: str = "torch",
    ):
        super().__init__()
        d_model = V.check_int(d_model, "d_model", low=1)
        d_state = V.check_int(d_state, "d_state", low=1)
        expand = V.check_int(expand, "expand", low=1)
        self.use_saf = V.check_bool(use_saf, "use_saf")
        self.use_ssf = V.check_bool(use_ssf, "use_ssf")
        self.bidirectional = V.check_bool(bidirectional, "bidirectional")
        self.scan = V.check_choice(scan, "scan", SCANS)
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
        all_valid = bool(valid.all())
        if not all_valid:
            u = u * valid[:, :, None]  # pads are invisible to the causal conv as well
        u = F.silu(cell.conv1d(u.transpose(1, 2))[:, :, :L].transpose(1, 2))
        A = -torch.exp(cell.A_log.float())
        dbc = cell.x_proj(u)
        delta, B, C = torch.split(dbc, [cell.config.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(F.linear(delta, cell.dt_proj.weight) + cell.dt_proj.bias)
        dA = torch.exp(delta.unsqueeze(-1) * A)
        BX = delta.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)
        if not all_valid:
            keep = valid[:, :, None, None]
            dA = torch.where(keep, dA, torch.ones_like(dA))  # pads leave the state untouched
            BX = torch.where(keep, BX, torch.zeros_like(BX))
        return pscan(dA, BX), C, u, z

    def _fuse(self, flat, token_id, sem, nb):
        """SAF then SSF on the states of the real voxels. ``flat`` (M*L, E*N) holds every
        position's state; returns the flat positions of the voxels (grouped by class where SAF
        runs) and their fused states, or ``None`` when there is nothing to fuse."""
        ids = token_id.reshape(-1)
        src = torch.nonzero(ids >= 0).squeeze(1)
        if src.numel() == 0 or not (self.use_saf or self.use_ssf):
            return None
        if self.use_saf:  # stable grouping by predicted class: sequence order kept in a class
            src = src[torch.argsort(sem[ids[src]], stable=True)]
        hv = flat.index_select(0, src)
        if self.use_saf:
            k = self.saf_weight.shape[-1]
            hv = F.conv1d(hv.t()[None], self.saf_weight, padding=k // 2, groups=hv.shape[1])
            hv = hv[0].t()
        if self.use_ssf:  # L2S, axis-wise depth-wise convolutions, S2L
            vid = ids[src]
            grid = hv.new_zeros(nb.n, hv.shape[1]).index_copy(0, vid, hv)
            hv = _axis_sparse_conv(grid, nb, self.ssf_weight).index_select(0, vid)
        return src, hv

    def _kernel(self, x):
        """The fused scan where ``scan="mamba_ssm"`` can use it; else ``None`` after a warning
        that names the reason (the torch scan then runs)."""
        scan_fn, reason = _kernel_usable(x, self.use_saf or self.use_ssf)
        if scan_fn is None:
            warnings.warn(
                f"scan='mamba_ssm' falls back to the torch scan: {reason}",
                RuntimeWarning,
                stacklevel=4,
            )
        return scan_fn

    def _direction_kernel(self, scan_fn, x, valid):
        """One scan direction through ``mamba_ssm``'s fused selective scan (plain Mamba: no
        state fusion). Pads get delta = 0, so they leave the state untouched as in the torch
        scan; the kernel adds D u and the silu(z) gate itself."""
        cell = self.cell
        L = x.shape[1]
        u, z = cell.in_proj(x).chunk(2, dim=-1)
        all_valid = bool(valid.all())
        if not all_valid:
            u = u * valid[:, :, None]
        u = F.silu(cell.conv1d(u.transpose(1, 2))[:, :, :L].transpose(1, 2))
        A = -torch.exp(cell.A_log.float())
        dbc = cell.x_proj(u)
        delta, B, C = torch.split(dbc, [cell.config.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(F.linear(delta, cell.dt_proj.weight) + cell.dt_proj.bias)
        if not all_valid:
            delta = delta * valid[:, :, None]
        y = scan_fn(
            u.transpose(1, 2).contiguous(),
            delta.transpose(1, 2).contiguous(),
            A,
            B.transpose(1, 2).contiguous(),
            C.transpose(1, 2).contiguous(),
            D=cell.D.float(),
            z=z.transpose(1, 2).contiguous(),
            delta_softplus=False,
        )
        return cell.out_proj(y.transpose(1, 2))

    def _direction(self, x, valid, token_id, sem, nb):
        if self.scan == "mamba_ssm":
            scan_fn = self._kernel(x)
            if scan_fn is not None:
                return self._direction_kernel(scan_fn, x, valid)
        h, C, u, z = self.scan_states(x, valid)
        M, L, E, N = h.shape
        y = (h @ C.unsqueeze(-1)).squeeze(-1)
        fused = self._fuse(h.reshape(M * L, E * N), token_id, sem, nb)
        if fused is not None:  # read the fused states out at their positions
            src, hv = fused
            c_src = C.reshape(M * L, N)[src]
            y_src = (hv.reshape(-1, E, N) @ c_src.unsqueeze(-1)).squeeze(-1)
            y = y.reshape(M * L, E).index_copy(0, src, y_src).reshape(M, L, E)
        y = y + self.cell.D * u
        return self.cell.out_proj(y * F.silu(z))

    def forward(self, x, valid=None, token_id=None, sem=None, nb=None):
        V.check_tensor(
            x, "x", ndim=3, shape=(None, None, self.norm.normalized_shape[0]), floating=True
        )
        M, L, _ = x.shape
        if valid is None:
            valid = torch.ones(M, L, dtype=torch.bool, device=x.device)
        if token_id is None:
            token_id = torch.full((M, L), -1, dtype=torch.long, device=x.device)
        V.check_tensor(valid, "valid", ndim=2, shape=(M, L))
        V.check_tensor(token_id, "token_id", ndim=2, shape=(M, L), integer=True)
        if valid.dtype != torch.bool:
            raise TypeError(f"valid must be a bool mask, got {valid.dtype}")
        n_ids = int(token_id.max()) + 1 if token_id.numel() else 0
        if n_ids > 0 and self.use_saf:
            if sem is None:
                raise ValueError("sem (predicted class per voxel) is required when use_saf=True")
            V.check_tensor(sem, "sem", ndim=1, integer=True, low=0)
            if len(sem) < n_ids:
                raise ValueError(f"sem must hold a class for every voxel id < {n_ids}")
        if n_ids > 0 and self.use_ssf:
            if not isinstance(nb, SparseNeighbours) or nb.n < n_ids:
                raise ValueError("nb must be the SparseNeighbours of the voxels token_id refers to")
            if nb.radius != self.ssf_radius:
                raise ValueError(f"nb must have radius {self.ssf_radius} (ssf_kernel // 2)")
        return self._forward(x, valid, token_id, sem, nb)

    def _forward(self, x, valid, token_id, sem, nb):
        xn = self.norm(x)
        out = self._direction(xn, valid, token_id, sem, nb)
        if self.bidirectional:
            rev = self._direction(xn.flip(1), valid.flip(1), token_id.flip(1), sem, nb)
            out = out + rev.flip(1)
        return x + out
