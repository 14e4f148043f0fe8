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
from iclr26.three_d.fore_mamba3d.ssm import SCANS, SASFMamba, SparseNeighbours

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


class SparseDownsample(nn.Module):
    """Sparse strided convolution whose kernel equals its stride (2 x 2 x 1 by default: x and y
    halved, z kept), then LayerNorm and ReLU: every output voxel sums ``W[offset] x`` over its
    active children. ``forward(coords, feats)`` returns ``(coords', feats', parent)`` with
    ``parent[i]`` the output voxel of input voxel ``i``."""

    def __init__(self, c_in: int, c_out: int, stride=(2, 2, 1)):
        super().__init__()
        c_in = V.check_int(c_in, "c_in", low=1)
        c_out = V.check_int(c_out, "c_out", low=1)
        st = V.check_array(stride, "stride", ndim=1, shape=(3,))
        if (st < 1).any() or not np.all(st == np.round(st)):
            raise ValueError("stride must hold three integers >= 1")
        self.stride = tuple(int(s) for s in st)
        k = int(np.prod(self.stride))
        self.weight = nn.Parameter(torch.randn(k, c_in, c_out) / math.sqrt(c_in))
        self.bias = nn.Parameter(torch.zeros(c_out))
        self.norm = nn.LayerNorm(c_out)

    def out_shape(self, grid_shape) -> tuple[int, int, int]:
        """The grid after downsampling (ceil of grid / stride)."""
        return tuple(-(-int(g) // s) for g, s in zip(grid_shape, self.stride))

    def forward(self, coords: torch.Tensor, feats: torch.Tensor):
        _check_points(coords, feats, self.weight.shape[1])
        st = torch.tensor(self.stride, device=coords.device)
        c = coords.long()
        r = c % st
        off = (r[:, 0] * st[1] + r[:, 1]) * st[2] + r[:, 2]
        new_coords, parent = torch.unique(c // st, dim=0, return_inverse=True)
        out = feats.new_zeros(len(new_coords), self.weight.shape[2])
        for o in range(self.weight.shape[0]):
            m = torch.nonzero(off == o).squeeze(1)
            if m.numel():
                out = out.index_add(0, parent[m], feats[m] @ self.weight[o])
        return new_coords, F.relu(self.norm(out + self.bias)), parent


def _stage_layers(dim, n_rot, n_pass, d_state, use_saf, use_ssf, scan="torch"):
    return nn.ModuleList(
        nn.ModuleList(
            SASFMamba(dim, d_state=d_state, use_saf=use_saf, use_ssf=use_ssf, scan=scan)
            for _ in range(n_pass)
        )
        for _ in range(n_rot)
    )


class _Stage(nn.Module):
    """A later instance-selection stage: sparse downsampling, then the same parts as the first
    stage (sampler, semantic head, per-rotation RGSW/SASFMamba layers, local token, fusion MLP)."""

    def __init__(
        self, c_prev, dim, n_rot, n_pass, d_state, n_sem, use_saf, use_ssf, token, scan="torch"
    ):
        super().__init__()
        self.downsample = SparseDownsample(c_prev, dim)
        self.score_conv = SubmConv3d(dim, dim)
        self.score_out = nn.Linear(dim, 1)
        self.pos_enc = nn.Linear(3, dim)
        self.pre_conv = SubmConv3d(dim, dim)
        self.sem_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_sem))
        self.layers = _stage_layers(dim, n_rot, n_pass, d_state, use_saf, use_ssf, scan)
        self.token = nn.Parameter(torch.zeros(dim)) if token else None
        self.fuse = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))


class ForeMamba3DBackbone(nn.Module):
    """Fore-Mamba3D instance-selection stage(s) + BEV projection. ``forward(coords, feats)``
    takes one scene (integer voxel coords (N, 3) in ``[0, grid_shape)``, features (N, in_ch))
    and returns ``dict(bev, fg_logits, sem_logits, fg_index, tokens_processed, stages,
    stage_voxels)`` (``fg_logits``/``sem_logits``/``fg_index`` of the first stage; ``stages``
    holds those of the later stages with ``parent``, the map from the previous stage's voxels).

    ``dims=(d0, d1, ...)`` builds one stage per entry with a sparse 2 x 2 x 1 downsampling
    (:class:`SparseDownsample`) between stages; the default is one stage of width ``dim``.
    ``rgsw=False, use_saf=False, use_ssf=False, local_token=False`` is the naive fore-only
    baseline (one sequence per rotation, plain bidirectional Mamba); ``fg_ratio=1.0`` encodes all
    voxels with the same network. ``scan="mamba_ssm"`` runs the layers without SAF/SSF through
    ``mamba_ssm``'s fused selective scan where it imports and the input is on a CUDA device,
    and otherwise falls back to the torch scan with a ``RuntimeWarning`` naming the reason."""

    def __init__(
        self,
        in_ch: int = 4,
        dim: int | None = None,
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
        dims=None,
        scan: str = "torch",
    ):
        super().__init__()
        self.in_ch = V.check_int(in_ch, "in_ch", low=1)
        if dims is None:
            dims = (32 if dim is None else V.check_int(dim, "dim", low=2),)
        else:
            if isinstance(dims, str) or not hasattr(dims, "__len__") or len(dims) == 0:
                raise TypeError(f"dims must be a non-empty sequence of stage widths, got {dims!r}")
            dims = tuple(V.check_int(d, "dims", low=2) for d in dims)
            if dim is not None and V.check_int(dim, "dim", low=2) != dims[0]:
                raise ValueError(f"dim ({dim}) and dims[0] ({dims[0]}) disagree; give one")
        self.dims = dims
        self.dim = dims[0]
        dim = self.dim
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
        self.n_sem = n_sem = V.check_int(n_sem, "n_sem", low=2)
        use_saf, use_ssf = V.check_bool(use_saf, "use_saf"), V.check_bool(use_ssf, "use_ssf")
        self.scan = scan = V.check_choice(scan, "scan", SCANS)
        # The first stage's parts are built first, in a fixed order, so that a one-stage model's
        # initial weights do not depend on the stage option.
        self.embed = nn.Sequential(nn.Linear(in_ch + 3, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.score_conv = SubmConv3d(dim, dim)
        self.score_out = nn.Linear(dim, 1)
        self.pos_enc = nn.Linear(3, dim)
        self.pre_conv = SubmConv3d(dim, dim)
        self.sem_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_sem))
        n_pass = 1 + self.slide_iters
        self.layers = _stage_layers(dim, self.n_rot, n_pass, d_state, use_saf, use_ssf, scan)
        self.token = nn.Parameter(torch.zeros(dim)) if self.local_token else None
        self.fuse = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.down = nn.Sequential(
            nn.Conv2d(dims[-1], dims[-1], 3, stride=2, padding=1),
            nn.BatchNorm2d(dims[-1]),
            nn.ReLU(),
        )
        self.stages = nn.ModuleList(
            _Stage(
                dims[s - 1],
                dims[s],
                self.n_rot,
                n_pass,
                d_state,
                n_sem,
                use_saf,
                use_ssf,
                self.local_token,
                scan,
            )
            for s in range(1, len(dims))
        )
        grids = [self.grid_shape]
        for st in self.stages:
            grids.append(st.downsample.out_shape(grids[-1]))
        self.stage_grids = grids
        self.out_ch = dims[-1]
        self.thetas = [i * math.pi / 2 for i in range(self.n_rot)]

    @property
    def n_stages(self) -> int:
        return len(self.dims)

    def _part(self, s: int):
        """The modules of stage ``s`` (the first stage's live on the backbone itself)."""
        return self if s == 0 else self.stages[s - 1]

    def _embed(self, coords, feats):
        pos = coords.float() / torch.tensor(
            self.grid_shape, dtype=torch.float32, device=coords.device
        )
        return self.embed(torch.cat([feats, pos], 1)), pos

    def _encode_rotation(self, layers, x, order, sem, nb, token=None):
        """RGSW over one ordering: patches + local tokens, broadcast, sliding passes."""
        n = len(order)
        order_t = torch.as_tensor(order, device=x.device)
        seq = x.index_select(0, order_t)
        layouts = {}
        for p, layer in enumerate(layers):
            shift = self.rgsw and p % 2 == 1
            if shift not in layouts:  # the base and the half-shifted layouts repeat
                layouts[shift] = self._layout(n, shift, order_t)
            seq = self._run_patches(layer, seq, layouts[shift], sem, nb, token)
        return torch.empty_like(seq).index_copy(0, order_t, seq)

    def _layout(self, n, shift, order_t):
        """Where the sequence goes in the (M, L) patch batch: patches are consecutive ranges,
        so the real positions in row-major order are the sequence itself."""
        if self.rgsw:
            patches = rgsw_patches(n, self.patch_content, shift=shift)
        else:
            patches = [np.arange(n)]
        extra = 1 if self.local_token else 0
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

    def _run_patches(self, layer, seq, lay, sem, nb, token=None):
        M, L, D = lay["M"], lay["L"], seq.shape[1]
        x = seq.new_zeros(M * L, D).index_copy(0, lay["real_flat"], seq)
        if token is not None:
            x = x.index_copy(0, lay["token_flat"], token.expand(M, D))
        y = layer._forward(x.reshape(M, L, D), lay["valid"], lay["token_id"], sem, nb)
        y = y.reshape(M * L, D)
        if token is not None:  # broadcast the encoded local token back to its patch
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
        """Diagnostic of response attenuation (spec C4; the first stage) from one backward
        pass: with ``A`` the object with most selected voxels and a fixed random probe ``r``,
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

    def _stage_counts(self, n_voxels) -> list[int]:
        if isinstance(n_voxels, list | tuple | np.ndarray):
            counts = [V.check_int(n, "n_voxels", low=1) for n in n_voxels]
            if len(counts) != self.n_stages:
                raise ValueError(
                    f"n_voxels must hold one voxel count per stage ({self.n_stages}), "
                    f"got {len(counts)}"
                )
            return counts
        n = V.check_int(n_voxels, "n_voxels", low=1)
        if self.n_stages > 1:
            raise ValueError(
                f"n_voxels must list the voxel count of each of the {self.n_stages} stages "
                "(forward returns them as 'stage_voxels'), got one number"
            )
        return [n]

    def tokens_per_layer(self, n_voxels) -> dict:
        """Load-free count of tokens pushed through SSM layers for a scene of ``n_voxels``
        (with several stages: a list, one voxel count per stage). ``selected`` and ``tokens``
        are summed over the stages; ``per_stage`` holds each stage's pair."""
        per_stage = []
        for n in self._stage_counts(n_voxels):
            k = self.n_selected(n)
            total = 0
            for p in range(1 + self.slide_iters):
                m = len(rgsw_patches(k, self.patch_content, shift=p % 2 == 1)) if self.rgsw else 1
                total += k + (m if self.local_token else 0)
            per_stage.append({"selected": k, "tokens": total * self.n_rot})
        return {
            "selected": sum(p["selected"] for p in per_stage),
            "tokens": sum(p["tokens"] for p in per_stage),
            "per_stage": per_stage,
        }

    def ssm_flops(self, n_voxels) -> float:
        """Analytic multiply-add FLOPs of all SSM layers (both scan directions, all stages) for
        a scene of ``n_voxels`` (a list per stage with several stages): projections, selective
        scan, read-out, and the SAF/SSF state convolutions."""
        total = 0.0
        for s, tokens in enumerate(self.tokens_per_layer(n_voxels)["per_stage"]):
            cell = self._part(s).layers[0][0]
            d, e = self.dims[s], cell.cell.config.d_inner
            n_st, r = cell.d_state, cell.cell.config.dt_rank
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
            total += dirs * (per_token * tokens["tokens"] + extra)
        return float(total)

    @property
    def patch_content(self) -> int:
        """Voxels per RGSW patch: ``patch_len`` minus the appended local token, so a patch with
        its token is ``patch_len`` long (the parallel scan pads to a power of two)."""
        return max(2, self.patch_len - (1 if self.local_token else 0))

    def n_selected(self, n_voxels: int) -> int:
        return int(min(n_voxels, max(self.k_min, math.ceil(self.fg_ratio * n_voxels))))

    def _check_scene(self, coords, feats):
        _check_points(coords, feats, self.in_ch)
        if (coords >= torch.tensor(self.grid_shape, device=coords.device)).any():
            raise ValueError(f"coords must lie inside grid_shape {self.grid_shape}")

    def _sample(self, part, coords, x, pos, table):
        """Foreground scores, positional encoding + sparse conv, semantic logits and the top-k
        selection of one stage."""
        if self.fg_ratio < 1.0:
            fg_logits = part.score_out(F.relu(part.score_conv(coords, x, table))).squeeze(1)
        else:  # all voxels are encoded: no sampler to score them
            fg_logits = None
        x = F.relu(part.pre_conv(coords, x + part.pos_enc(pos), table)) + x
        sem_logits = part.sem_head(x)
        n = len(coords)
        k = self.n_selected(n)
        if k < n:
            fg_index = torch.topk(fg_logits.detach(), k).indices
        else:
            fg_index = torch.arange(n, device=coords.device)
        return x, fg_logits, sem_logits, fg_index

    def _select(self, coords, feats):
        """Embedding, foreground scores, semantic logits and the top-k selection (first stage)."""
        table = neighbour27(coords)
        x, pos = self._embed(coords, feats)
        return self._sample(self, coords, x, pos, table)

    def _encode(self, fc, xf, sem, part=None, grid=None):
        """The rotated-Hilbert RGSW encodings of the selected voxels, summed over rotations."""
        part = self if part is None else part
        grid = self.grid_shape if grid is None else grid
        cell = part.layers[0][0]
        nb = SparseNeighbours(fc, cell.ssf_radius) if cell.use_ssf else None
        enc = 0
        for theta, layers in zip(self.thetas, part.layers):
            order = hilbert_order(fc.detach().cpu().numpy(), theta, grid)
            enc = enc + self._encode_rotation(layers, xf, order, sem, nb, part.token)
        return enc

    def _stage(self, part, coords, x, pos, table, grid):
        x, fg_logits, sem_logits, fg_index = self._sample(part, coords, x, pos, table)
        xf = x[fg_index]
        sem = sem_logits.detach()[fg_index].argmax(1)
        enc = self._encode(coords[fg_index], xf, sem, part, grid)
        x = x.index_copy(0, fg_index, part.fuse(enc) + xf)  # re-joined with the background
        return dict(
            coords=coords,
            feats=x,
            fg_logits=fg_logits,
            sem_logits=sem_logits,
            fg_index=fg_index,
            grid=grid,
        )

    def encode_voxels(self, coords: torch.Tensor, feats: torch.Tensor) -> list[dict]:
        """Per-voxel features of every stage (no BEV): a list, one dict per stage, with the
        stage's voxel ``coords``, ``feats`` (foreground encoded and re-joined with the bypassed
        background), ``fg_logits``, ``sem_logits``, ``fg_index``, ``grid`` and, after the first,
        ``parent`` (the stage voxel of each voxel of the previous stage)."""
        self._check_scene(coords, feats)
        table = neighbour27(coords)
        x, pos = self._embed(coords, feats)
        levels = [self._stage(self, coords, x, pos, table, self.grid_shape)]
        for s, part in enumerate(self.stages, start=1):
            prev = levels[-1]
            c, x, parent = part.downsample(prev["coords"], prev["feats"])
            grid = self.stage_grids[s]
            pos = c.float() / torch.tensor(grid, dtype=torch.float32, device=c.device)
            levels.append(self._stage(part, c, x, pos, neighbour27(c), grid))
            levels[-1]["parent"] = parent
        return levels

    def forward(self, coords: torch.Tensor, feats: torch.Tensor) -> dict:
        levels = self.encode_voxels(coords, feats)
        first, last = levels[0], levels[-1]
        stage_voxels = [len(lv["coords"]) for lv in levels]
        counts = stage_voxels if self.n_stages > 1 else stage_voxels[0]
        return dict(
            bev=self._bev(last["coords"], last["feats"], last["grid"]),
            fg_logits=first["fg_logits"],
            sem_logits=first["sem_logits"],
            fg_index=first["fg_index"],
            tokens_processed=self.tokens_per_layer(counts)["tokens"],
            stages=[
                {k: lv[k] for k in ("fg_logits", "sem_logits", "fg_index", "parent")}
                for lv in levels[1:]
            ],
            stage_voxels=stage_voxels,
        )

    def _bev(self, coords, x, grid=None):
        X, Y, _ = self.grid_shape if grid is None else grid
        flat = coords[:, 0] * Y + coords[:, 1]
        bev = x.new_zeros(X * Y, x.shape[1])
        bev = bev.scatter_reduce(
            0, flat[:, None].expand_as(x), x, reduce="amax", include_self=False
        )
        bev = bev.t().reshape(1, -1, X, Y)
        return self.down(bev)

    @classmethod
    def openpcdet_compatible(cls, model_cfg, input_channels, grid_size, **kwargs):
        """An OpenPCDet ``BACKBONE_3D`` module (``forward(batch_dict)``) around this backbone;
        see :class:`~iclr26.three_d.fore_mamba3d.openpcdet.OpenPCDetForeMamba3D`."""
        from iclr26.three_d.fore_mamba3d.openpcdet import OpenPCDetForeMamba3D

        return OpenPCDetForeMamba3D(model_cfg, input_channels, grid_size, **kwargs)


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
        scan: str = "torch",
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
            scan=scan,
        )
