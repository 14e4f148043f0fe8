"""HAC (Chen et al., ECCV 2024): entropy coding of anchor attributes with a context read from a
binary hash grid. A multi-resolution hash grid with entries in {-1, +1} (a 3-D grid plus three
2-D planes xy, xz, yz) is interpolated at each anchor position; a context MLP maps that
feature to a Gaussian mean and scale for every dimension of the anchor feature, the activated
scaling exp(l) and the offsets, and to three per-anchor refinements of the quantization steps,
q = Q0 (1 + tanh(r)) (the adaptive quantization module). A quantized value x = k q costs
-log2(Phi((x + q/2 - mu) / sigma) - Phi((x - q/2 - mu) / sigma)) bits (the interval
probability, floored at 1e-6); the hash grid costs its binary entropy plus 32 bits. Fitting
minimises the rendering loss of the noisy attributes plus lambda_e times the bits per
parameter (HAC's L_scaffold + lambda_e (sum bits + bits_hash) / (N (D + 6 + 3K))), with the
scene frozen. ``encode`` writes a real bitstream: anchor positions on a 16-bit grid, the hash
grid range-coded with a Bernoulli model, the MLPs as float32, and the attribute symbols
range-coded (``constriction``) with the quantized Gaussians of the context model; ``decode``
rebuilds the renderable scene from the bytes alone."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .anchor import AnchorGS, check_views

MAGIC = b"HAC1"
#: anchor positions are coded on a grid of 2^16 steps per axis between their bounds (HAC)
ANCHOR_BITS = 16
#: HAC's floor of the interval probability
LIKELIHOOD_FLOOR = 1e-6
_PRIMES = (1, 2654435761, 805459861)  # the spatial hash of instant-NGP, which HAC's grid uses


class _BinarySTE(torch.autograd.Function):
    """sign (+1 for >= 0) forward; the gradient passes where |x| <= 1 (HAC's STE_binary)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype)


def _check_resolutions(value, name: str) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"{name} must be a tuple of ints, got {type(value).__name__}")
    return tuple(V.check_int(r, name, low=1) for r in value)


class BinaryHashGrid(nn.Module):
    """Multi-resolution grids on [0, 1]^3 with ``features`` binary entries per vertex: 3-D levels
    at ``resolutions`` and, for each of the planes xy, xz, yz, 2-D levels at
    ``resolutions_2d``. A level whose (R + 1)^d vertices exceed 2^``log2_size`` entries is
    hashed into that many. Output: the levels' d-linear interpolations, concatenated."""

    def __init__(
        self,
        resolutions=(4, 8, 16),
        resolutions_2d=(8, 16),
        *,
        features: int = 2,
        log2_size: int = 8,
        seed: int = 0,
    ):
        super().__init__()
        self.resolutions = _check_resolutions(resolutions, "resolutions")
        self.resolutions_2d = _check_resolutions(resolutions_2d, "resolutions_2d")
        self.features = V.check_int(features, "features", low=1)
        self.log2_size = V.check_int(log2_size, "log2_size", low=1, high=24)
        levels = [(3, r, (0, 1, 2)) for r in self.resolutions]
        for axes in ((0, 1), (0, 2), (1, 2)):
            levels += [(2, r, axes) for r in self.resolutions_2d]
        self.levels = levels
        sizes = [min((r + 1) ** d, 1 << self.log2_size) for d, r, _ in levels]
        self.offsets = [0, *np.cumsum(sizes).tolist()]
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        n = self.offsets[-1]
        self.latent = nn.Parameter((torch.rand(n, self.features, generator=g) - 0.5) * 2e-4)

    @property
    def output_dim(self) -> int:
        return len(self.levels) * self.features

    def binary(self) -> torch.Tensor:
        """The grid's entries in {-1, +1} (straight-through gradient to the latent)."""
        return _BinarySTE.apply(self.latent)

    def forward(self, x: torch.Tensor, table: torch.Tensor | None = None) -> torch.Tensor:
        """Interpolated features (N, output_dim) of positions ``x`` (N, 3) in [0, 1];
        ``table`` replaces the binarised latent (a decoded grid)."""
        table = self.binary() if table is None else table
        outs = []
        for (d, r, axes), start, stop in zip(
            self.levels, self.offsets[:-1], self.offsets[1:], strict=True
        ):
            p = x[:, list(axes)] * r
            i0 = p.floor().clamp(0, r - 1).long()
            frac = p - i0
            dense = (r + 1) ** d <= stop - start
            acc = 0.0
            for corner in range(1 << d):
                c = torch.tensor([(corner >> j) & 1 for j in range(d)], device=x.device)
                idx = i0 + c
                w = torch.where(c.bool(), frac, 1 - frac).prod(dim=1, keepdim=True)
                if dense:
                    flat = sum(idx[:, j] * (r + 1) ** j for j in range(d))
                else:
                    flat = idx[:, 0] * _PRIMES[0]
                    for j in range(1, d):
                        flat = torch.bitwise_xor(flat, idx[:, j] * _PRIMES[j])
                    flat = flat % (stop - start)
                acc = acc + w * table[start + flat]
            outs.append(acc)
        return torch.cat(outs, dim=1)


def binary_bits(bits01: torch.Tensor) -> torch.Tensor:
    """HAC's size of a {0, 1} tensor: n1 (-log2 p) + n0 (-log2 (1 - p)) + 32 bits for p,
    with p the fraction of ones (clamped to [1e-6, 1 - 1e-6]); differentiable in ``bits01``."""
    n = bits01.numel()
    ones = bits01.sum()
    p = (ones / n).clamp(1e-6, 1 - 1e-6)
    return -ones * torch.log2(p) - (n - ones) * torch.log2(1 - p) + 32


def gaussian_interval_bits(x, mean, scale, step) -> torch.Tensor:
    """-log2 P(x) for x on the grid of ``step`` under N(mean, scale^2): the mass of
    [x - step/2, x + step/2], floored at 1e-6 (HAC's entropy_gaussian). The tail is taken on
    the side away from the mean, so small masses do not cancel."""
    side = torch.where(x >= mean, -1.0, 1.0)
    hi = side * (x + side * step / 2 - mean) / scale
    lo = side * (x - side * step / 2 - mean) / scale
    p = (torch.special.ndtr(hi) - torch.special.ndtr(lo)).abs()
    return -torch.log2(p.clamp_min(LIKELIHOOD_FLOOR))


@dataclass
class HACDecoded:
    """A decoded scene: ``gs`` (an :class:`AnchorGS` with the decoded anchors, features, log
    scalings, offsets and rendering MLPs), the exact dequantized ``feature``, ``scaling``
    (activated, exp(l)) and ``offset``, and the integer ``symbols`` per attribute."""

    gs: AnchorGS
    feature: torch.Tensor
    scaling: torch.Tensor
    offset: torch.Tensor
    symbols: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(self.gs).__name__}")
        n, k = self.gs.n_anchors, self.gs.k
        V.check_tensor(self.feature, "feature", shape=(n, self.gs.feature_dim), floating=True)
        V.check_tensor(self.scaling, "scaling", shape=(n, 6), floating=True)
        V.check_tensor(self.offset, "offset", shape=(n, k, 3), floating=True)

    def render(self, camera, background=(0.0, 0.0, 0.0)) -> torch.Tensor:
        """The (H, W, 3) image of ``camera`` from the exact decoded attributes."""
        return self.gs.render(
            camera, self.feature, background, scaling=self.scaling, offset=self.offset
        )


class HACCodec(nn.Module):
    """HAC's context model and entropy coder for an :class:`AnchorGS` of ``feature_dim``-wide
    features and ``k`` offsets per anchor. Base steps ``feature_step``, ``scaling_step`` (on
    exp(l)) and ``offset_step``; ``context=False`` is the factorised baseline (no hash grid:
    one learned Gaussian per dimension, the same MLP on a constant input). ``lmbda`` is
    lambda_e of the rate term."""

    def __init__(
        self,
        feature_dim: int = 16,
        k: int = 4,
        *,
        feature_step: float = 0.2,
        scaling_step: float = 0.001,
        offset_step: float = 0.2,
        context: bool = True,
        resolutions=(4, 8, 16),
        resolutions_2d=(8, 16),
        grid_features: int = 2,
        log2_size: int = 8,
        lmbda: float = 2e-3,
        seed: int = 0,
    ):
        super().__init__()
        self.feature_dim = V.check_int(feature_dim, "feature_dim", low=1)
        self.k = V.check_int(k, "k", low=1)
        self.feature_step = V.check_scalar(feature_step, "feature_step", low=0, low_open=True)
        self.scaling_step = V.check_scalar(scaling_step, "scaling_step", low=0, low_open=True)
        self.offset_step = V.check_scalar(offset_step, "offset_step", low=0, low_open=True)
        self.context = V.check_bool(context, "context")
        self.lmbda = V.check_scalar(lmbda, "lmbda", low=0)
        self.seed = V.check_int(seed, "seed", low=0)
        self.grid = (
            BinaryHashGrid(
                resolutions,
                resolutions_2d,
                features=grid_features,
                log2_size=log2_size,
                seed=self.seed,
            )
            if self.context
            else None
        )
        d_in = self.grid.output_dim if self.context else 1
        d = self.feature_dim
        self.n_params = d + 6 + 3 * self.k  # coded values per anchor
        g = torch.Generator().manual_seed(self.seed)
        with torch.random.fork_rng(devices=[]):  # leave torch's global generator as it was
            self.mlp = nn.Sequential(
                nn.Linear(d_in, 2 * d), nn.ReLU(), nn.Linear(2 * d, 2 * self.n_params + 3)
            )
        with torch.no_grad():  # a draw of our own, so every process starts from the same MLP
            for lin in (self.mlp[0], self.mlp[2]):
                bound = 1 / lin.in_features**0.5
                lin.weight.copy_((torch.rand(lin.weight.shape, generator=g) * 2 - 1) * bound)
                lin.bias.copy_((torch.rand(lin.bias.shape, generator=g) * 2 - 1) * bound)
        self.history: list[dict] = []

    # ---- the context model -------------------------------------------------------------
    def config(self) -> dict:
        grid = self.grid
        return dict(
            feature_dim=self.feature_dim,
            k=self.k,
            feature_step=self.feature_step,
            scaling_step=self.scaling_step,
            offset_step=self.offset_step,
            context=self.context,
            resolutions=list(grid.resolutions) if grid else [],
            resolutions_2d=list(grid.resolutions_2d) if grid else [],
            grid_features=grid.features if grid else 2,
            log2_size=grid.log2_size if grid else 8,
            lmbda=self.lmbda,
        )

    def parameters_of(self, x01: torch.Tensor, table: torch.Tensor | None = None) -> dict:
        """Per anchor at normalised positions ``x01`` (N, 3): Gaussian means and scales of the
        feature (N, D), scaling (N, 6) and offsets (N, 3K), and the adaptive steps (N, 1)."""
        ctx = self.grid(x01, table) if self.context else torch.ones(len(x01), 1)
        out = self.mlp(ctx)
        d, k3 = self.feature_dim, 3 * self.k
        sizes = [d, d, 6, 6, k3, k3, 1, 1, 1]
        mf, sf, ms, ss, mo, so, rf, rs, ro = torch.split(out, sizes, dim=1)
        scale = nn.functional.softplus
        return dict(
            feature=(mf, scale(sf).clamp_min(1e-9), self.feature_step * (1 + torch.tanh(rf))),
            scaling=(ms, scale(ss).clamp_min(1e-9), self.scaling_step * (1 + torch.tanh(rs))),
            offset=(mo, scale(so).clamp_min(1e-9), self.offset_step * (1 + torch.tanh(ro))),
        )

    @torch.no_grad()
    def steps(self, gs: AnchorGS) -> dict[str, torch.Tensor]:
        """The adaptive quantization steps (N,) of the feature, scaling and offsets of each
        anchor of ``gs`` (those :meth:`encode` uses)."""
        self._check_scene(gs, None)
        _, x01 = quantize_positions(gs.anchor.detach().cpu().float())
        params = self.parameters_of(x01)
        return {key: v[2].reshape(-1) for key, v in params.items()}

    def hash_bits(self) -> torch.Tensor:
        if not self.context:
            return torch.zeros(())
        return binary_bits((self.grid.binary() + 1) / 2)

    @staticmethod
    def _attributes(gs: AnchorGS, features) -> dict[str, torch.Tensor]:
        f = gs.feature if features is None else features
        return dict(
            feature=f.detach().cpu().float(),
            scaling=torch.exp(gs.scaling.detach()).cpu().float(),
            offset=gs.offset.detach().cpu().float().reshape(gs.n_anchors, -1),
        )

    def _check_scene(self, gs, features) -> torch.Tensor | None:
        if not isinstance(gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(gs).__name__}")
        if gs.n_anchors == 0:
            raise ValueError("gs has no anchors (an empty scene)")
        if (gs.feature_dim, gs.k) != (self.feature_dim, self.k):
            raise ValueError(
                f"gs has feature_dim {gs.feature_dim} and k {gs.k}; the codec was built for "
                f"{self.feature_dim} and {self.k}"
            )
        for name in ("anchor", "feature", "scaling", "offset"):
            V.check_tensor(getattr(gs, name).detach(), f"gs.{name}", floating=True)
        if features is not None:
            V.check_tensor(
                features, "features", ndim=2, shape=(gs.n_anchors, gs.feature_dim), floating=True
            )
        return features

    # ---- rate ----------------------------------------------------------------------------
    def estimate_bits(self, gs: AnchorGS, features: torch.Tensor | None = None) -> dict:
        """Estimated bits of the rounded attributes under the context model (per attribute
        and the hash grid), the quantity the range coder should meet."""
        features = self._check_scene(gs, features)
        with torch.no_grad():
            _, x01 = quantize_positions(gs.anchor.detach().cpu().float())
            bits = self._rate(self._attributes(gs, features), x01)
            out = {key: float(v.sum()) for key, v in bits.items()}
            out["hash"] = float(self.hash_bits())
        return out

    def _rate(self, attrs, x01) -> dict:
        """Bits of each value of each attribute rounded to its adaptive step."""
        params = self.parameters_of(x01)
        out = {}
        for key, x in attrs.items():
            mean, scale, q = params[key]
            out[key] = gaussian_interval_bits(torch.round(x / q) * q, mean, scale, q)
        return out

    def fit(
        self,
        gs: AnchorGS,
        views=None,
        cameras=None,
        *,
        features: torch.Tensor | None = None,
        steps: int = 100,
        lr: float = 0.005,
        seed: int = 0,
    ) -> HACCodec:
        """Fit the hash grid and context MLP to a trained scene (frozen). With ``views`` and
        ``cameras``: HAC's objective, 0.65 L1 + 0.35 (1 - SSIM) of a render with U(-q/2, q/2)
        noise on the features, exp(l) and offsets, plus lambda_e (sum bits + bits_hash) /
        (N (D + 6 + 3K)), so the adaptive steps trade rate against distortion. Without views:
        the rate alone, with the steps kept at their bases (nothing would oppose larger
        steps). ``features`` replaces the scene's features (e.g. CompMarkGS's f^w)."""
        features = self._check_scene(gs, features)
        if (views is None) != (cameras is None):
            raise ValueError("views and cameras must be given together")
        if views is not None:
            views, cameras = check_views(views, cameras)
        steps = V.check_int(steps, "steps", low=0)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        attrs = self._attributes(gs, features)
        _, x01 = quantize_positions(gs.anchor.detach().cpu().float())
        denom = gs.n_anchors * self.n_params
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        adaptive = views is not None
        self.history = []
        for _ in range(steps):
            params = self.parameters_of(x01)
            noisy, bits = {}, 0.0
            for key, x in attrs.items():
                mean, scale, q = params[key]
                if not adaptive:
                    q = torch.full_like(q, getattr(self, f"{key}_step"))
                xn = x + (torch.rand(x.shape, generator=g) - 0.5) * q
                noisy[key] = xn
                bits = bits + gaussian_interval_bits(xn, mean, scale, q).sum()
            rate = (bits + self.hash_bits()) / denom
            loss = self.lmbda * rate
            dist = None
            if adaptive:
                dist = render_distortion(gs, noisy, views, cameras, g)
                loss = loss + dist.cpu()
            opt.zero_grad()
            # gradients for the codec only: the scene's own .grad stays untouched
            grads = torch.autograd.grad(loss, list(self.parameters()), allow_unused=True)
            for p, gr in zip(self.parameters(), grads, strict=True):
                p.grad = gr
            opt.step()
            self.history.append(
                dict(
                    bits_per_param=float(rate.detach()),
                    distortion=None if dist is None else float(dist.detach()),
                )
            )
        return self

    # ---- the bitstream ---------------------------------------------------------------------
    @torch.no_grad()
    def encode(self, gs: AnchorGS, features: torch.Tensor | None = None) -> bytes:
        """The bitstream of ``gs`` (with ``features`` in place of its own, if given). Sizes of
        its parts in bytes land in ``self.sizes``."""
        features = self._check_scene(gs, features)
        anchors = gs.anchor.detach().cpu().float()
        grid16, x01 = quantize_positions(anchors)
        lo, span = _bounds(anchors)
        attrs = self._attributes(gs, features)
        table = self.grid.binary() if self.context else None
        params = self.parameters_of(x01, table)
        sections, ranges = {}, {}
        for key, x in attrs.items():
            mean, scale, q = params[key]
            sym = torch.round(x / q).long()
            if sym.abs().max() > 2**30:
                raise ValueError(f"gs's {key} is too large for its quantization step")
            low, high = int(sym.min()), int(sym.max())
            ranges[key] = [low, max(high, low + 1)]
            sections[key] = _range_code(sym, mean, scale, q, *ranges[key])
        p_one = None
        if self.context:
            bits01 = ((table + 1) / 2).reshape(-1).long().numpy()
            p_one = float(np.float32(np.clip(bits01.mean(), 1e-6, 1 - 1e-6)))
            sections["hash"] = _bernoulli_code(bits01, p_one)
        sections["anchor"] = grid16.numpy().astype("<u2").tobytes()
        sections["mlp"] = _floats(self.mlp.state_dict()) + _floats(_render_mlps(gs))
        header = dict(
            codec=self.config(),
            n=gs.n_anchors,
            voxel=gs.voxel,
            lo=lo.tolist(),
            span=span.tolist(),
            ranges=ranges,
            p_one=p_one,
        )
        data, self.sizes = pack_bitstream(MAGIC, header, sections, _SECTION_ORDER)
        return data

    @torch.no_grad()
    def decode(self, data) -> HACDecoded:
        """The scene from a bitstream of :meth:`encode` (everything is read from ``data``:
        the codec's configuration and weights, the hash grid, the MLPs and the symbols)."""
        need = ("codec", "n", "voxel", "lo", "span", "ranges", "p_one")
        header, sections = unpack_bitstream(data, MAGIC, "HAC", need, _SECTION_ORDER)
        cfg = dict(header["codec"])
        codec = HACCodec(**cfg)
        n, d, k = header["n"], codec.feature_dim, codec.k
        grid16 = torch.from_numpy(
            np.frombuffer(sections["anchor"], dtype="<u2").astype(np.int64).reshape(n, 3)
        )
        lo, span = torch.tensor(header["lo"]), torch.tensor(header["span"])
        x01 = grid16.float() / (2**ANCHOR_BITS - 1)
        anchors = lo + x01 * span
        mlp_state, render_state = _split_floats(sections["mlp"], codec.mlp.state_dict())
        codec.mlp.load_state_dict(mlp_state)
        table = None
        if codec.context:
            bits01 = _bernoulli_decode(sections["hash"], header["p_one"], codec.grid.latent.numel())
            table = torch.from_numpy(bits01.astype(np.float32) * 2 - 1).reshape(
                codec.grid.latent.shape
            )
        params = codec.parameters_of(x01, table)
        values, symbols = {}, {}
        widths = dict(feature=d, scaling=6, offset=3 * k)
        for key in ("feature", "scaling", "offset"):
            mean, scale, q = params[key]
            low, high = header["ranges"][key]
            sym = _range_decode(sections[key], mean, scale, q, low, high, (n, widths[key]))
            symbols[key] = sym
            values[key] = sym.float() * q
        return decoded_scene(anchors, values, k, header["voxel"], render_state, symbols)


_SECTION_ORDER = ("anchor", "hash", "mlp", "feature", "scaling", "offset")


# ---- pieces the HAC and ContextGS codecs share ---------------------------------------------


def render_distortion(gs: AnchorGS, noisy: dict, views, cameras, g: torch.Generator):
    """HAC's rendering loss, 0.65 L1 + 0.35 (1 - SSIM), of one view drawn from ``g``,
    rendered with the ``noisy`` feature, scaling and offset attributes."""
    from iclr26.three_d.gs_raster import render

    from .losses import ssim

    device = gs.anchor.device
    i = int(torch.randint(len(cameras), (1,), generator=g))
    info = gs.neural_gaussians(
        cameras[i],
        noisy["feature"].to(device),
        scaling=noisy["scaling"].to(device),
        offset=noisy["offset"].reshape(gs.n_anchors, gs.k, 3).to(device),
    )
    keys = ("means", "scales", "quats", "opacities", "colors")
    img = render(**{key: info[key] for key in keys}, camera=cameras[i], background=[0.0] * 3).image
    target = views[i]
    return 0.65 * (img - target).abs().mean() + 0.35 * (1 - ssim(img, target))


def pack_bitstream(
    magic: bytes, header: dict, sections: dict[str, bytes], order
) -> tuple[bytes, dict[str, int]]:
    """``magic``, the header's length, the header as JSON (the sections' lengths added last)
    and the sections in ``order``; also the size in bytes of every part, the header and the
    total."""
    header = dict(header, lengths={key: len(v) for key, v in sections.items()})
    head = json.dumps(header, separators=(",", ":")).encode()
    sizes = {key: len(v) for key, v in sections.items()}
    sizes["header"] = len(magic) + 4 + len(head)
    sizes["total"] = sum(sizes.values())
    body = b"".join(sections[key] for key in order if key in sections)
    return magic + struct.pack("<I", len(head)) + head + body, sizes


def unpack_bitstream(data, magic: bytes, name: str, need, order) -> tuple[dict, dict[str, bytes]]:
    """The header and the sections of a :func:`pack_bitstream` stream, with a clear error for
    data that is not bytes, another magic, a corrupt header, a header without the fields
    ``need`` or a length that disagrees with the header."""
    if not isinstance(data, bytes | bytearray):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < 8 or data[:4] != magic:
        raise ValueError(f"data is not a {name} bitstream (bad magic)")
    (n_head,) = struct.unpack("<I", data[4:8])
    try:
        header = json.loads(data[8 : 8 + n_head])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"data has a corrupt header: {e}") from None
    if not isinstance(header, dict) or any(key not in header for key in (*need, "lengths")):
        raise ValueError("data has a header without the codec's fields")
    pos, sections = 8 + n_head, {}
    for key in order:
        if key in header["lengths"]:
            size = header["lengths"][key]
            sections[key] = data[pos : pos + size]
            pos += size
    if pos != len(data):
        raise ValueError(f"data has {len(data)} bytes, its header says {pos}")
    return header, sections


def decoded_scene(anchors, values: dict, k: int, voxel, render_state, symbols) -> HACDecoded:
    """A renderable :class:`AnchorGS` from decoded anchors, attribute values and rendering
    MLPs (building the skeleton leaves torch's global generator untouched)."""
    n, d = anchors.shape[0], values["feature"].shape[1]
    with torch.random.fork_rng(devices=[]):  # the skeleton's MLPs draw from it
        gs = AnchorGS(anchors[:1], feature_dim=d, k=k, voxel=voxel)
    gs.anchor = nn.Parameter(anchors)
    gs.feature = nn.Parameter(values["feature"].clone())
    gs.scaling = nn.Parameter(torch.log(values["scaling"].clamp_min(1e-12)))
    offset = values["offset"].reshape(n, k, 3)
    gs.offset = nn.Parameter(offset.clone())
    _load_render_mlps(gs, render_state)
    return HACDecoded(gs, values["feature"], values["scaling"], offset, symbols)


def _bounds(anchors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lo = anchors.min(dim=0).values
    span = (anchors.max(dim=0).values - lo).clamp_min(1e-6)
    return lo, span


def quantize_positions(anchors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchor positions on a 2^16-step grid between their bounds (HAC's 16-bit anchors):
    the integer grid (N, 3) and the normalised positions in [0, 1] the context reads."""
    lo, span = _bounds(anchors)
    top = 2**ANCHOR_BITS - 1
    grid16 = torch.round((anchors - lo) / span * top).clamp(0, top).long()
    return grid16, grid16.float() / top


def _render_mlps(gs: AnchorGS) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": v
        for name in ("mlp_opacity", "mlp_color", "mlp_cov")
        for key, v in getattr(gs, name).state_dict().items()
    }


def _floats(state: dict[str, torch.Tensor]) -> bytes:
    """float32 little-endian, in the state's key order (HAC counts MLPs at 32 bits)."""
    return b"".join(
        v.detach().cpu().float().numpy().astype("<f4").tobytes() for v in state.values()
    )


def _split_floats(raw: bytes, mlp_state: dict) -> tuple[dict, dict]:
    """The context MLP's state (shaped as ``mlp_state``) and the rendering MLPs' (flat)."""
    arr = np.frombuffer(raw, dtype="<f4")
    pos, mlp = 0, {}
    for key, v in mlp_state.items():
        mlp[key] = torch.from_numpy(arr[pos : pos + v.numel()].copy()).reshape(v.shape)
        pos += v.numel()
    return mlp, arr[pos:]


def _unflatten_render(gs: AnchorGS, arr: np.ndarray) -> dict[str, torch.Tensor]:
    out, pos = {}, 0
    for key, v in _render_mlps(gs).items():
        out[key] = torch.from_numpy(arr[pos : pos + v.numel()].copy()).reshape(v.shape)
        pos += v.numel()
    if pos != len(arr):
        raise ValueError("data's MLP section does not match the scene's MLP sizes")
    return out


def _load_render_mlps(gs: AnchorGS, arr) -> None:
    flat = _unflatten_render(gs, np.asarray(arr))
    for name in ("mlp_opacity", "mlp_color", "mlp_cov"):
        mod = getattr(gs, name)
        mod.load_state_dict({key: flat[f"{name}.{key}"] for key in mod.state_dict()})


def _model_arrays(mean, scale, q) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation in units of the step, per symbol (float64), broadcast
    to the symbols' shape: the arguments of constriction's QuantizedGaussian."""
    q = q.expand_as(mean)
    mu = (mean / q).double().reshape(-1).numpy()
    sd = (scale / q).double().clamp_min(1e-6).reshape(-1).numpy()
    return np.ascontiguousarray(mu), np.ascontiguousarray(sd)


def _range_code(sym, mean, scale, q, low, high) -> bytes:
    return code_symbols(sym, *_model_arrays(mean, scale, q), low, high)


def code_symbols(sym, mu: np.ndarray, sd: np.ndarray, low: int, high: int) -> bytes:
    """Range-code the integer symbols ``sym`` with quantized Gaussians (means ``mu``,
    deviations ``sd``, in units of the step, one per symbol) on ``[low, high]``."""
    import constriction

    enc = constriction.stream.queue.RangeEncoder()
    model = constriction.stream.model.QuantizedGaussian(low, high)
    enc.encode(np.ascontiguousarray(sym.reshape(-1).numpy().astype(np.int32)), model, mu, sd)
    return enc.get_compressed().astype("<u4").tobytes()


def _range_decode(raw, mean, scale, q, low, high, shape) -> torch.Tensor:
    import constriction

    mu, sd = _model_arrays(mean, scale, q)
    dec = constriction.stream.queue.RangeDecoder(np.frombuffer(raw, dtype="<u4").copy())
    model = constriction.stream.model.QuantizedGaussian(low, high)
    return torch.from_numpy(dec.decode(model, mu, sd).astype(np.int64)).reshape(shape)


def _bernoulli_code(bits01: np.ndarray, p_one: float) -> bytes:
    import constriction

    enc = constriction.stream.queue.RangeEncoder()
    model = constriction.stream.model.Bernoulli(p_one, perfect=False)
    enc.encode(bits01.astype(np.int32), model)
    return enc.get_compressed().astype("<u4").tobytes()


def _bernoulli_decode(raw: bytes, p_one: float, n: int) -> np.ndarray:
    import constriction

    dec = constriction.stream.queue.RangeDecoder(np.frombuffer(raw, dtype="<u4").copy())
    model = constriction.stream.model.Bernoulli(p_one, perfect=False)
    return dec.decode(model, n)
