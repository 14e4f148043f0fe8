"""Backbones: Fore-Mamba3D (foreground sampler -> rotated Hilbert flattening -> RGSW encoding
with SASFMamba, one encoding per rotation, summed, MLP, re-joined with the bypassed background
voxels -> BEV), the all-voxel bidirectional Mamba baseline (Voxel-Mamba-like) and, through the
flags, the naive fore-only baseline (same sampler and rotations, plain Mamba, no RGSW/SAF/SSF)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.fore_mamba3d.serialize import hilbert_order
from iclr26.three_d.fore_mamba3d.ssm import SASFMamba, SparseNeighbours

_OFFSETS = torch.tensor([(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)])


def _check_points(coords, feats, in_ch: int):
    V.check_tensor(coords, "coords", ndim=2, shape=(None, 3), integer=True, low=0)
    V.check_tensor(feats, "feats", ndim=2, shape=(None, in_ch), floating=True)
    V.check_same_length(coords=coords, feats=feats)


class SubmConv3d(nn.Module):
    """3 x 3 x 3 submanifold sparse convolution (outputs only at active voxels)."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        c_in = V.check_int(c_in, "c_in", low=1)
        c_out = V.check_int(c_out, "c_out", low=1)
        self.weight = nn.Parameter(torch.randn(27, c_in, c_out) / math.sqrt(27 * c_in))
        self.bias = nn.Parameter(torch.zeros(c_out))

    def forward(self, coords: torch.Tensor, feats: torch.Tensor, table=None) -> torch.Tensor:
        _check_points(coords, feats, self.weight.shape[1])
        if table is None:
            table = neighbour27(coords)
        padded = torch.cat([feats, feats.new_zeros(1, feats.shape[1])], 0)
        idx = torch.where(table < 0, torch.full_like(table, len(feats)), table)
        return torch.einsum("nkc,kcd->nd", padded[idx], self.weight) + self.bias


def neighbour27(coords: torch.Tensor) -> torch.Tensor:
    """(N, 27) indices of the 3 x 3 x 3 neighbours of each active voxel (-1 where empty)."""
    V.check_tensor(coords, "coords", ndim=2, shape=(None, 3), integer=True)
    c = coords.long() + 1
    ext = c.max(0).values + 2
    key = lambda q: (q[..., 0] * ext[1] + q[..., 1]) * ext[2] + q[..., 2]  # noqa: E731
    base = key(c)
    order = torch.argsort(base)
    sk = base[order]
    k = key(c[:, None, :] + _OFFSETS.to(c.device)[None])
    pos = torch.searchsorted(sk, k).clamp(max=len(sk) - 1)
    return torch.where(sk[pos] == k, order[pos], torch.full_like(pos, -1))


def rgsw_patches(n: int, patch_len: int, shift: bool) -> list[np.ndarray]:
    """Index ranges of the RGSW patches of a length-``n`` sequence: ``M = ceil(n / patch_len)``
    near-equal patches; with ``shift`` the sliding patches are the second half of patch i plus
    the first half of patch i+1 (the two unpaired half-patches at the ends stay short patches)."""
    n = V.check_int(n, "n", low=1)
    patch_len = V.check_int(patch_len, "patch_len", low=2)
    m = max(1, math.ceil(n / patch_len))
    bounds = np.linspace(0, n, m + 1).round().astype(int)
    if not shift:
        return [np.arange(bounds[i], bounds[i + 1]) for i in range(m)]
    mids = [(bounds[i] + bounds[i + 1]) // 2 for i in range(m)]
    cuts = [0, *mids, n]
    return [np.arange(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1) if cuts[i + 1] > cuts[i]]


class ForeMamba3DBackbone(nn.Module):
    """Fore-Mamba3D instance-selection stage + BEV projection. ``forward(coords, feats)`` takes
    one scene (integer voxel coords (N, 3) in ``[0, grid_shape)``, features (N, in_ch)) and
    returns ``dict(bev, fg_logits, sem_logits, fg_index, tokens_processed)``.

    ``rgsw=False, use_saf=False, use_ssf=False, local_token=False`` is the naive fore-only
    baseline (one sequence per rotation, plain bidirectional Mamba); ``fg_ratio=1.0`` encodes all
    voxels with the same network."""

    def __init__(
        self,
        in_ch: int = 4,
        dim: int = 32,
        grid_shape=(64, 64, 8),
        fg_ratio: float = 0.2,
        n_rot: int = 2,
        patch_len: int = 64,
        slide_iters: int = 2,
        local_token: bool = True,
        rgsw: bool = True,
        use_saf: bool = True,
        use_ssf: bool = True,
        d_state: int = 8,
        n_sem: int = 3,
        k_min: int = 1,
    ):
        super().__init__()
        self.in_ch = V.check_int(in_ch, "in_ch", low=1)
        self.dim = V.check_int(dim, "dim", low=2)
        gs = V.check_array(grid_shape, "grid_shape", ndim=1, shape=(3,))
        if (gs < 2).any():
            raise ValueError("grid_shape must be >= 2 in every axis")
        self.grid_shape = tuple(int(g) for g in gs)
        self.fg_ratio = V.check_scalar(fg_ratio, "fg_ratio", low=0, high=1, low_open=True)
        self.n_rot = V.check_int(n_rot, "n_rot", low=1, high=4)
        self.patch_len = V.check_int(patch_len, "patch_len", low=2)
        self.slide_iters = V.check_int(slide_iters, "slide_iters", low=0)
        self.local_token = V.check_bool(local_token, "local_token")
        self.rgsw = V.check_bool(rgsw, "rgsw")
        self.k_min = V.check_int(k_min, "k_min", low=1)
        n_sem = V.check_int(n_sem, "n_sem", low=2)
        self.embed = nn.Sequential(nn.Linear(in_ch + 3, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.score_conv = SubmConv3d(dim, dim)
        self.score_out = nn.Linear(dim, 1)
        self.pos_enc = nn.Linear(3, dim)
        self.pre_conv = SubmConv3d(dim, dim)
        self.sem_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_sem))
        n_pass = 1 + self.slide_iters
        self.layers = nn.ModuleList(
            nn.ModuleList(
                SASFMamba(dim, d_state=d_state, use_saf=use_saf, use_ssf=use_ssf)
                for _ in range(n_pass)
            )
            for _ in range(self.n_rot)
        )
        self.token = nn.Parameter(torch.zeros(dim)) if self.local_token else None
        self.fuse = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.down = nn.Sequential(
            nn.Conv2d(dim, dim, 3, stride=2, padding=1), nn.BatchNorm2d(dim), nn.ReLU()
        )
        self.out_ch = dim
        self.thetas = [i * math.pi / 2 for i in range(self.n_rot)]

    def _embed(self, coords, feats):
        pos = coords.float() / torch.tensor(
            self.grid_shape, dtype=torch.float32, device=coords.device
        )
        return self.embed(torch.cat([feats, pos], 1)), pos

    def _encode_rotation(self, layers, x, order, sem, nb):
        """RGSW over one ordering: patches + local tokens, broadcast, sliding passes."""
        n = len(order)
        order_t = torch.as_tensor(order, device=x.device)
        seq = x.index_select(0, order_t)
        layouts = {}
        for p, layer in enumerate(layers):
            shift = self.rgsw and p % 2 == 1
            if shift not in layouts:  # the base and the half-shifted layouts repeat
                layouts[shift] = self._layout(n, shift, order_t)
            seq = self._run_patches(layer, seq, layouts[shift], sem, nb)
        return torch.empty_like(seq).index_copy(0, order_t, seq)

    def _layout(self, n, shift, order_t):
        """Where the sequence goes in the (M, L) patch batch: patches are consecutive ranges,
        so the real positions in row-major order are the sequence itself."""
        if self.rgsw:
            patches = rgsw_patches(n, self.patch_content, shift=shift)
        else:
            patches = [np.arange(n)]
        extra = 1 if self.token is not None else 0
        dev = order_t.device
        lengths = torch.tensor([len(p) for p in patches], device=dev)
        M, L = len(patches), int(lengths.max()) + extra
        col = torch.arange(L, device=dev)[None]
        real = (col < lengths[:, None]).reshape(-1)
        real_flat = torch.nonzero(real).squeeze(1)
        token_id = torch.full((M * L,), -1, dtype=torch.long, device=dev)
        token_id = token_id.index_copy(0, real_flat, order_t)
        return dict(
            M=M,
            L=L,
            lengths=lengths,
            real_flat=real_flat,
            token_flat=torch.arange(M, device=dev) * L + lengths,
            valid=col < (lengths[:, None] + extra),
            token_id=token_id.reshape(M, L),
        )

    def _run_patches(self, layer, seq, lay, sem, nb):
        M, L, D = lay["M"], lay["L"], seq.shape[1]
        x = seq.new_zeros(M * L, D).index_copy(0, lay["real_flat"], seq)
        if self.token is not None:
            x = x.index_copy(0, lay["token_flat"], self.token.expand(M, D))
        y = layer._forward(x.reshape(M, L, D), lay["valid"], lay["token_id"], sem, nb)
        y = y.reshape(M * L, D)
        if self.token is not None:  # broadcast the encoded local token back to its patch
            t = y.index_select(0, lay["token_flat"]).repeat_interleave(L, dim=0)
            cos = F.cosine_similarity(y, t, dim=-1).unsqueeze(-1)
            y = y + cos * t
        return y.index_select(0, lay["real_flat"])

    def cross_instance_influence(
        self,
        coords: torch.Tensor,
        feats: torch.Tensor,
        instance,
        seed: int = 0,
        oracle_foreground: bool = False,
    ) -> dict[str, float]:
        """Diagnostic of response attenuation (spec C4) from one backward pass: with ``A`` the
        object with most selected voxels and a fixed random probe ``r``,
        ``g_j = d(sum_{i in A} <y_i, r>) / dx_j`` for the encoder input ``x`` and output ``y``
        of the selected voxels. ``cross`` is the mean ``|g_j|`` over selected voxels ``j`` of
        the other objects divided by ``|A|`` (a mean Jacobian-probe norm per pair); ``within``
        the same over ``j`` in ``A`` (self terms included). NaN when fewer than two objects
        are selected. ``instance`` (N,) holds 0 for background and an object id otherwise.
        ``oracle_foreground`` encodes the voxels with ``instance > 0`` instead of the sampler's
        top-k, so that two encoders are compared on the same voxel set."""
        self._check_scene(coords, feats)
        V.check_tensor(instance, "instance", ndim=1, shape=(len(coords),), integer=True, low=0)
        seed = V.check_int(seed, "seed", low=0)
        oracle_foreground = V.check_bool(oracle_foreground, "oracle_foreground")
        with torch.no_grad():
            x, _, sem_logits, fg_index = self._select(coords, feats)
        if oracle_foreground:
            fg_index = torch.nonzero(instance > 0).squeeze(1)
        inst = instance[fg_index]
        ids, counts = torch.unique(inst[inst > 0], return_counts=True)
        out = dict(cross=float("nan"), within=float("nan"), n_a=0, n_other=0)
        if len(ids) < 2 or len(fg_index) < 2:
            return out
        a = ids[counts.argmax()]
        in_a, other = inst == a, (inst > 0) & (inst != a)
        xf = x[fg_index].detach().requires_grad_(True)
        sem = sem_logits[fg_index].argmax(1)
        enc = self._encode(coords[fg_index], xf, sem)
        gen = torch.Generator().manual_seed(seed)  # a CPU stream: the same probe on any device
        probe = torch.randn(enc.shape[1], generator=gen).to(enc.device)
        probe = probe / probe.norm()
        (grad,) = torch.autograd.grad((enc[in_a] @ probe).sum(), xf)
        norms = grad.norm(dim=1) / int(in_a.sum())
        out.update(
            cross=float(norms[other].mean()),
            within=float(norms[in_a].mean()),
            n_a=int(in_a.sum()),
            n_other=int(other.sum()),
        )
        return out

    def tokens_per_layer(self, n_voxels: int) -> dict[str, int]:
        """Load-free count of tokens pushed through SSM layers for a scene of ``n_voxels``."""
        n_voxels = V.check_int(n_voxels, "n_voxels", low=1)
        k = self.n_selected(n_voxels)
        total = 0
        for p in range(1 + self.slide_iters):
            m = len(rgsw_patches(k, self.patch_content, shift=p % 2 == 1)) if self.rgsw else 1
            total += k + (m if self.token is not None else 0)
        return {"selected": k, "tokens": total * self.n_rot}

    def ssm_flops(self, n_voxels: int) -> float:
        """Analytic multiply-add FLOPs of all SSM layers (both scan directions) for a scene of
        ``n_voxels``: projections, selective scan, read-out, and the SAF/SSF state convolutions."""
        tokens = self.tokens_per_layer(n_voxels)
        cell = self.layers[0][0]
        d, e, n_st, r = self.dim, cell.cell.config.d_inner, cell.d_state, cell.cell.config.dt_rank
        per_token = (
            2 * d * 2 * e
            + 2 * e * 4
            + 2 * e * (r + 2 * n_st)
            + 2 * r * e
            + 8 * e * n_st
            + 2 * e * d
        )
        fused = tokens["selected"] * (1 + self.slide_iters) * self.n_rot
        extra = 0.0
        if cell.use_saf:
            extra += 2 * cell.saf_weight.shape[-1] * e * n_st * fused
        if cell.use_ssf:
            extra += 2 * 3 * (2 * cell.ssf_radius + 1) * e * n_st * fused
        dirs = 2 if cell.bidirectional else 1
        return float(dirs * (per_token * tokens["tokens"] + extra))

    @property
    def patch_content(self) -> int:
        """Voxels per RGSW patch: ``patch_len`` minus the appended local token, so a patch with
        its token is ``patch_len`` long (the parallel scan pads to a power of two)."""
        return max(2, self.patch_len - (1 if self.token is not None else 0))

    def n_selected(self, n_voxels: int) -> int:
        return int(min(n_voxels, max(self.k_min, math.ceil(self.fg_ratio * n_voxels))))

    def _check_scene(self, coords, feats):
        _check_points(coords, feats, self.in_ch)
        if (coords >= torch.tensor(self.grid_shape, device=coords.device)).any():
            raise ValueError(f"coords must lie inside grid_shape {self.grid_shape}")

    def _select(self, coords, feats):
        """Embedding, foreground scores, semantic logits and the top-k selection."""
        table = neighbour27(coords)
        x, pos = self._embed(coords, feats)
        if self.fg_ratio < 1.0:
            fg_logits = self.score_out(F.relu(self.score_conv(coords, x, table))).squeeze(1)
        else:  # all voxels are encoded: no sampler to score them
            fg_logits = None
        x = F.relu(self.pre_conv(coords, x + self.pos_enc(pos), table)) + x
        sem_logits = self.sem_head(x)
        n = len(coords)
        k = self.n_selected(n)
        if k < n:
            fg_index = torch.topk(fg_logits.detach(), k).indices
        else:
            fg_index = torch.arange(n, device=coords.device)
        return x, fg_logits, sem_logits, fg_index

    def _encode(self, fc, xf, sem):
        """The rotated-Hilbert RGSW encodings of the selected voxels, summed over rotations."""
        cell = self.layers[0][0]
        nb = SparseNeighbours(fc, cell.ssf_radius) if cell.use_ssf else None
        enc = 0
        for theta, layers in zip(self.thetas, self.layers):
            order = hilbert_order(fc.detach().cpu().numpy(), theta, self.grid_shape)
            enc = enc + self._encode_rotation(layers, xf, order, sem, nb)
        return enc

    def forward(self, coords: torch.Tensor, feats: torch.Tensor) -> dict:
        self._check_scene(coords, feats)
        x, fg_logits, sem_logits, fg_index = self._select(coords, feats)
        n = len(coords)
        xf = x[fg_index]
        sem = sem_logits.detach()[fg_index].argmax(1)
        enc = self._encode(coords[fg_index], xf, sem)
        x = x.index_copy(0, fg_index, self.fuse(enc) + xf)
        return dict(
            bev=self._bev(coords, x),
            fg_logits=fg_logits,
            sem_logits=sem_logits,
            fg_index=fg_index,
            tokens_processed=self.tokens_per_layer(n)["tokens"],
        )

    def _bev(self, coords, x):
        X, Y, _ = self.grid_shape
        flat = coords[:, 0] * Y + coords[:, 1]
        bev = x.new_zeros(X * Y, x.shape[1])
        bev = bev.scatter_reduce(
            0, flat[:, None].expand_as(x), x, reduce="amax", include_self=False
        )
        bev = bev.t().reshape(1, -1, X, Y)
        return self.down(bev)


class VoxelMambaBackbone(ForeMamba3DBackbone):
    """All-voxel baseline (Voxel-Mamba-like, group-free): every non-empty voxel in one Hilbert
    sequence, plain bidirectional Mamba layers, the same embedding, BEV and downsampling."""

    def __init__(
        self,
        in_ch: int = 4,
        dim: int = 32,
        grid_shape=(64, 64, 8),
        n_layers: int = 3,
        d_state: int = 8,
    ):
        n_layers = V.check_int(n_layers, "n_layers", low=1)
        super().__init__(
            in_ch=in_ch,
            dim=dim,
            grid_shape=grid_shape,
            fg_ratio=1.0,
            n_rot=1,
            slide_iters=n_layers - 1,
            local_token=False,
            rgsw=False,
            use_saf=False,
            use_ssf=False,
            d_state=d_state,
        )
