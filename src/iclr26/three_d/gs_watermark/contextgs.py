"""ContextGS (Wang et al., NeurIPS 2024): entropy coding of anchor attributes with an
anchor-level context model. The anchors are divided into ``levels`` levels by voxel grids of
growing size: level 0 holds every anchor; level l keeps, of the anchors of level l - 1, the one
with the smallest index in each voxel of size ``voxel * s_l`` (the sizes s_l found by binary
search so that each level keeps about ``target_ratio`` of the one below, as the release does).
The coarsest level is coded first, its anchors predicted from their own position and a
per-anchor hyperprior latent z (width D / 4, integers, coded first with a factorised model);
the anchors that a finer level adds are predicted from the already decoded anchor that
represents them one level up (its position, decoded feature and decoded scaling) and their own
z. One MLP per level maps that to a Gaussian mean and scale per coded value and to three
adaptive step refinements, as in HAC. Symbols cost HAC's interval probabilities and are
range-coded (``constriction``) level after level; ``decode`` rebuilds the scene from the
bytes alone."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .anchor import AnchorGS, check_views
from .hac import (
    ANCHOR_BITS,
    HACDecoded,
    _bounds,
    _floats,
    _model_arrays,
    _range_code,
    _range_decode,
    _render_mlps,
    _split_floats,
    code_symbols,
    decoded_scene,
    gaussian_interval_bits,
    pack_bitstream,
    quantize_positions,
    render_distortion,
    unpack_bitstream,
)

MAGIC = b"CGS1"
_SECTION_ORDER = ("anchor", "mlp", "hyper", "feature", "scaling", "offset")
_WIDTH_KEYS = ("feature", "scaling", "offset")


def _group(points: torch.Tensor, cell: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchors ``points`` (n, 3) grouped by the voxel round(p / cell): the position (in
    ``points``) of each voxel's smallest-index anchor, and each anchor's voxel."""
    keys = torch.round(points.double() / cell)
    _, inverse = torch.unique(keys, dim=0, return_inverse=True)
    n_groups = int(inverse.max()) + 1 if len(inverse) else 0
    rep = torch.full((n_groups,), len(points), dtype=torch.long)
    rep = rep.scatter_reduce(0, inverse, torch.arange(len(points)), reduce="amin")
    return rep, inverse


def level_scales(points: torch.Tensor, voxel: float, levels: int, ratio: float) -> list[float]:
    """The voxel multipliers s_1 < s_2 < ... of the coarser levels: binary search between the
    previous level's multiplier and the scene's extent in voxels until a level keeps within
    0.01 of ``ratio`` of the anchors below it, or the bracket is under one voxel (as the
    release's ``find_divide_scale``)."""
    points = points.double()
    extent = float((points.max(0).values - points.min(0).values).max()) if len(points) else 0.0
    upper0 = max(extent / voxel, 1.0) + 1.0
    scales, lower, sub = [], 1.0, points
    for _ in range(levels - 1):
        lo, hi, mid = lower, upper0, lower
        for _ in range(64):
            mid = (lo + hi) / 2
            rep, _ = _group(sub, voxel * mid)
            r = len(rep) / max(len(sub), 1)
            if abs(r - ratio) < 0.01 or hi - lo < 1:
                break
            if r < ratio:
                hi = mid
            else:
                lo = mid
        rep, _ = _group(sub, voxel * mid)
        sub = sub[rep]
        scales.append(float(mid))
        lower = mid
    return scales


def divide_levels(
    points: torch.Tensor, voxel: float, scales
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The coding sets, coarsest first (anchor indices, ascending within a set), and each
    anchor's parent: the anchor one level up that represents its voxel (-1 in the coarsest
    set). Level l's voxels have size ``voxel * scales[l - 1]``."""
    n = len(points)
    parent = torch.full((n,), -1, dtype=torch.long)
    members = torch.arange(n)  # the anchors of the current level (level 0: all)
    added = []
    for s in scales:
        rep, inverse = _group(points[members], voxel * s)
        kept = torch.zeros(len(members), dtype=torch.bool)
        kept[rep] = True
        up = members[rep]
        parent[members[~kept]] = up[inverse[~kept]]
        added.append(members[~kept])  # the anchors this level adds to the next coarser one
        members = torch.sort(up).values  # so the next level's representatives are by index
    sets = [torch.sort(members).values, *(torch.sort(a).values for a in reversed(added))]
    return sets, parent


class ContextGSCodec(nn.Module):
    """ContextGS's context model and entropy coder for an :class:`AnchorGS` of
    ``feature_dim``-wide features and ``k`` offsets per anchor. Base steps as
    :class:`.hac.HACCodec`. ``levels`` levels of anchors, each coarser one keeping about
    ``target_ratio`` of the one below; ``hyperprior`` adds the per-anchor latent z of width
    ``hyper_dim`` (default D / 4). ``context=False`` is the factorised baseline (no levels, no
    hyperprior: one learned Gaussian per dimension, an MLP on a constant input)."""

    def __init__(
        self,
        feature_dim: int = 16,
        k: int = 4,
        *,
        feature_step: float = 0.2,
        scaling_step: float = 0.001,
        offset_step: float = 0.2,
        context: bool = True,
        hyperprior: bool = True,
        levels: int = 3,
        target_ratio: float = 0.2,
        hyper_dim: int | None = None,
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
        self.hyperprior = V.check_bool(hyperprior, "hyperprior") and self.context
        self.levels = V.check_int(levels, "levels", low=1, high=8) if self.context else 1
        self.target_ratio = V.check_scalar(
            target_ratio, "target_ratio", low=0, high=1, low_open=True, high_open=True
        )
        if hyper_dim is None:
            hyper_dim = max(self.feature_dim // 4, 1)
        self.hyper_dim = V.check_int(hyper_dim, "hyper_dim", low=1) if self.hyperprior else 0
        self.lmbda = V.check_scalar(lmbda, "lmbda", low=0)
        self.seed = V.check_int(seed, "seed", low=0)
        d, dz = self.feature_dim, self.hyper_dim
        self.n_params = d + 6 + 3 * self.k  # coded values per anchor
        if self.context:  # level 0 (finest) ... levels - 1 (coarsest, no parent)
            d_ins = [3 + d + 6 + dz] * (self.levels - 1) + [3 + dz]
        else:
            d_ins = [1]
        g = torch.Generator().manual_seed(self.seed)
        with torch.random.fork_rng(devices=[]):  # leave torch's global generator as it was
            self.mlps = nn.ModuleList(
                nn.Sequential(
                    nn.Linear(d_in, 2 * d), nn.ReLU(), nn.Linear(2 * d, 2 * self.n_params + 3)
                )
                for d_in in d_ins
            )
        with torch.no_grad():  # a draw of our own, so every process starts from the same MLPs
            for mlp in self.mlps:
                for lin in (mlp[0], mlp[2]):
                    bound = 1 / lin.in_features**0.5
                    lin.weight.copy_((torch.rand(lin.weight.shape, generator=g) * 2 - 1) * bound)
                    lin.bias.copy_((torch.rand(lin.bias.shape, generator=g) * 2 - 1) * bound)
        # the hyperprior's factorised model (one Gaussian per channel, unit step) and the
        # per-anchor latents, sized to a scene by ``fit``
        self.hyper_mean = nn.Parameter(torch.zeros(dz))
        self.hyper_scale = nn.Parameter(torch.zeros(dz))
        self.hyper_latent = nn.Parameter(torch.zeros(0, dz))
        self.history: list[dict] = []

    def config(self) -> dict:
        return dict(
            feature_dim=self.feature_dim,
            k=self.k,
            feature_step=self.feature_step,
            scaling_step=self.scaling_step,
            offset_step=self.offset_step,
            context=self.context,
            hyperprior=self.hyperprior,
            levels=self.levels,
            target_ratio=self.target_ratio,
            hyper_dim=self.hyper_dim if self.hyperprior else None,
            lmbda=self.lmbda,
        )

    # ---- checks and inputs -----------------------------------------------------------------
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

    def _latents(self, n: int) -> torch.Tensor:
        """The hyperprior latents of an ``n``-anchor scene (zeros before ``fit``)."""
        if len(self.hyper_latent) == 0:
            return torch.zeros(n, self.hyper_dim)
        if len(self.hyper_latent) != n:
            raise ValueError(
                f"gs has {n} anchors; the codec's hyperprior latents were fitted to "
                f"{len(self.hyper_latent)} (fit it to this scene)"
            )
        return self.hyper_latent

    def _layout(self, gs: AnchorGS):
        """The decoded positions (normalised) and the level division of ``gs``'s anchors."""
        anchors = gs.anchor.detach().cpu().float()
        grid16, x01 = quantize_positions(anchors)
        lo, span = _bounds(anchors)
        scales = self._scales(lo + x01 * span, gs.voxel)
        return grid16, x01, lo, span, scales

    def _scales(self, points, voxel) -> list[float]:
        if not self.context or self.levels == 1:
            return []
        return level_scales(points, voxel, self.levels, self.target_ratio)

    def _division(self, points, voxel, scales):
        if not self.context:
            return [torch.arange(len(points))], torch.full((len(points),), -1)
        return divide_levels(points, voxel, scales)

    @staticmethod
    def _attributes(gs: AnchorGS, features) -> dict[str, torch.Tensor]:
        f = gs.feature if features is None else features
        return dict(
            feature=f.detach().cpu().float(),
            scaling=torch.exp(gs.scaling.detach()).cpu().float(),
            offset=gs.offset.detach().cpu().float().reshape(gs.n_anchors, -1),
        )

    # ---- the context model -----------------------------------------------------------------
    def _level_params(self, level: int, inputs: torch.Tensor) -> dict:
        out = self.mlps[level](inputs)
        d, k3 = self.feature_dim, 3 * self.k
        sizes = [d, d, 6, 6, k3, k3, 1, 1, 1]
        mf, sf, ms, ss, mo, so, rf, rs, ro = torch.split(out, sizes, dim=1)
        scale = nn.functional.softplus
        return dict(
            feature=(mf, scale(sf).clamp_min(1e-9), self.feature_step * (1 + torch.tanh(rf))),
            scaling=(ms, scale(ss).clamp_min(1e-9), self.scaling_step * (1 + torch.tanh(rs))),
            offset=(mo, scale(so).clamp_min(1e-9), self.offset_step * (1 + torch.tanh(ro))),
        )

    def _walk(self, sets, parent, x01, z, value_of):
        """Code the levels coarsest first. ``value_of(idx, params)`` gives the coded (noisy,
        rounded or decoded) attributes of anchors ``idx``; the feature and scaling of the
        coded anchors are the context of the finer levels. Returns (idx, params, values) per
        nonempty set, in coding order."""
        n = len(x01)
        feat = torch.zeros(n, self.feature_dim)
        scal = torch.zeros(n, 6)
        out = []
        for i, idx in enumerate(sets):
            if len(idx) == 0:
                continue
            level = self.levels - 1 - i
            if not self.context:
                inputs = torch.ones(len(idx), 1)
            elif i == 0:
                inputs = torch.cat([x01[idx], z[idx]], dim=1)
            else:
                p = parent[idx]
                inputs = torch.cat([x01[p], feat[p], scal[p], z[idx]], dim=1)
            params = self._level_params(level, inputs)
            values = value_of(idx, params)
            feat = feat.index_copy(0, idx, values["feature"])
            scal = scal.index_copy(0, idx, values["scaling"])
            out.append((idx, params, values))
        return out

    def _hyper_model(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.hyper_mean, nn.functional.softplus(self.hyper_scale).clamp_min(1e-2)

    def _rounded(self, attrs):
        def value_of(idx, params):
            return {key: torch.round(attrs[key][idx] / params[key][2]) * params[key][2]
                    for key in _WIDTH_KEYS}  # fmt: skip

        return value_of

    @torch.no_grad()
    def steps(self, gs: AnchorGS) -> dict[str, torch.Tensor]:
        """The adaptive quantization steps (N,) of the feature, scaling and offsets of each
        anchor of ``gs`` (those :meth:`encode` uses)."""
        self._check_scene(gs, None)
        _, x01, lo, span, scales = self._layout(gs)
        sets, parent = self._division(lo + x01 * span, gs.voxel, scales)
        z = torch.round(self._latents(gs.n_anchors))
        attrs = self._attributes(gs, None)
        out = {key: torch.zeros(gs.n_anchors) for key in _WIDTH_KEYS}
        for idx, params, _ in self._walk(sets, parent, x01, z, self._rounded(attrs)):
            for key in _WIDTH_KEYS:
                out[key][idx] = params[key][2].reshape(-1)
        return out

    @torch.no_grad()
    def levels_of(self, gs: AnchorGS) -> list[int]:
        """How many anchors of ``gs`` each coding set holds, coarsest first."""
        self._check_scene(gs, None)
        _, x01, lo, span, scales = self._layout(gs)
        sets, _ = self._division(lo + x01 * span, gs.voxel, scales)
        return [len(s) for s in sets]

    # ---- rate ------------------------------------------------------------------------------
    def estimate_bits(self, gs: AnchorGS, features: torch.Tensor | None = None) -> dict:
        """Estimated bits of the rounded attributes under the context model (per attribute
        and the hyperprior), the quantity the range coder should meet."""
        features = self._check_scene(gs, features)
        with torch.no_grad():
            _, x01, lo, span, scales = self._layout(gs)
            sets, parent = self._division(lo + x01 * span, gs.voxel, scales)
            z = torch.round(self._latents(gs.n_anchors))
            attrs = self._attributes(gs, features)
            out = {key: 0.0 for key in _WIDTH_KEYS}
            for _, params, values in self._walk(sets, parent, x01, z, self._rounded(attrs)):
                for key in _WIDTH_KEYS:
                    mean, scale, q = params[key]
                    out[key] += float(gaussian_interval_bits(values[key], mean, scale, q).sum())
            out["hyper"] = float(self._hyper_bits(z).sum()) if self.hyperprior else 0.0
        return out

    def _hyper_bits(self, z: torch.Tensor) -> torch.Tensor:
        mean, scale = self._hyper_model()
        return gaussian_interval_bits(z, mean.expand_as(z), scale.expand_as(z), 1.0)

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
    ) -> ContextGSCodec:
        """Fit the level MLPs, the hyperprior latents and their model to a trained scene
        (frozen), as :meth:`.hac.HACCodec.fit`: with ``views`` and ``cameras`` the rendering
        loss of the noisy attributes plus lambda_e (sum bits + hyperprior bits) /
        (N (D + 6 + 3K)), adaptive steps; without, the rate alone at the base steps. In
        training the finer levels read the noisy attributes of their parents and z gets
        U(-1/2, 1/2) noise, as in the release."""
        features = self._check_scene(gs, features)
        if (views is None) != (cameras is None):
            raise ValueError("views and cameras must be given together")
        if views is not None:
            views, cameras = check_views(views, cameras)
        steps = V.check_int(steps, "steps", low=0)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        n = gs.n_anchors
        if self.hyperprior and len(self.hyper_latent) != n:
            self.hyper_latent = nn.Parameter(torch.zeros(n, self.hyper_dim))
        attrs = self._attributes(gs, features)
        _, x01, lo, span, scales = self._layout(gs)
        sets, parent = self._division(lo + x01 * span, gs.voxel, scales)
        denom = n * self.n_params
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        adaptive = views is not None
        self.history = []
        for _ in range(steps):
            z = self._latents(n)
            z = z + torch.rand(z.shape, generator=g) - 0.5
            bits = self._hyper_bits(z).sum() if self.hyperprior else torch.zeros(())

            def value_of(idx, params):
                out = {}
                for key in _WIDTH_KEYS:
                    q = params[key][2]
                    if not adaptive:
                        q = torch.full_like(q, getattr(self, f"{key}_step"))
                    x = attrs[key][idx]
                    out[key] = x + (torch.rand(x.shape, generator=g) - 0.5) * q
                    out[f"{key}_q"] = q
                return out

            noisy = {key: torch.zeros_like(v) for key, v in attrs.items()}
            for idx, params, values in self._walk(sets, parent, x01, z, value_of):
                for key in _WIDTH_KEYS:
                    mean, scale, _ = params[key]
                    q = values[f"{key}_q"]
                    bits = bits + gaussian_interval_bits(values[key], mean, scale, q).sum()
                    noisy[key] = noisy[key].index_copy(0, idx, values[key])
            rate = bits / denom
            loss = self.lmbda * rate
            dist = None
            if adaptive:
                dist = render_distortion(gs, noisy, views, cameras, g)
                loss = loss + dist.cpu()
            params = [p for p in self.parameters() if p.numel()]
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            opt.zero_grad()
            for p, gr in zip(params, grads, strict=True):
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
    def _weights(self) -> dict[str, torch.Tensor]:
        """The codec's own weights that the bitstream carries (not the per-anchor latents)."""
        return {k: v for k, v in self.state_dict().items() if k != "hyper_latent"}

    @torch.no_grad()
    def encode(self, gs: AnchorGS, features: torch.Tensor | None = None) -> bytes:
        """The bitstream of ``gs`` (with ``features`` in place of its own, if given). Sizes of
        its parts in bytes land in ``self.sizes``."""
        features = self._check_scene(gs, features)
        n = gs.n_anchors
        grid16, x01, lo, span, scales = self._layout(gs)
        sets, parent = self._division(lo + x01 * span, gs.voxel, scales)
        z = torch.round(self._latents(n))
        attrs = self._attributes(gs, features)
        symbols = {key: [] for key in _WIDTH_KEYS}
        models = {key: [] for key in _WIDTH_KEYS}

        def value_of(idx, params):
            out = {}
            for key in _WIDTH_KEYS:
                mean, scale, q = params[key]
                sym = torch.round(attrs[key][idx] / q)
                if sym.abs().max() > 2**30:
                    raise ValueError(f"gs's {key} is too large for its quantization step")
                symbols[key].append(sym.long())
                models[key].append(_model_arrays(mean, scale, q))
                out[key] = sym * q
            return out

        self._walk(sets, parent, x01, z, value_of)
        sections, ranges = {}, {}
        for key in _WIDTH_KEYS:
            sym = torch.cat(symbols[key])
            low, high = int(sym.min()), int(sym.max())
            ranges[key] = [low, max(high, low + 1)]
            mu = np.concatenate([m[0] for m in models[key]])
            sd = np.concatenate([m[1] for m in models[key]])
            sections[key] = code_symbols(sym, mu, sd, *ranges[key])
        if self.hyperprior:
            zs = z.long()
            if zs.abs().max() > 2**30:
                raise ValueError("the codec's hyperprior latents are too large")
            ranges["hyper"] = [int(zs.min()), max(int(zs.max()), int(zs.min()) + 1)]
            mean, scale = self._hyper_model()
            sections["hyper"] = _range_code(
                zs, mean.expand_as(z), scale.expand_as(z), torch.ones(()), *ranges["hyper"]
            )
        sections["anchor"] = grid16.numpy().astype("<u2").tobytes()
        sections["mlp"] = _floats(self._weights()) + _floats(_render_mlps(gs))
        header = dict(
            codec=self.config(),
            n=n,
            voxel=gs.voxel,
            lo=lo.tolist(),
            span=span.tolist(),
            scales=scales,
            ranges=ranges,
        )
        data, self.sizes = pack_bitstream(MAGIC, header, sections, _SECTION_ORDER)
        return data

    @torch.no_grad()
    def decode(self, data) -> HACDecoded:
        """The scene from a bitstream of :meth:`encode` (everything is read from ``data``:
        the configuration, the level scales, the MLPs, the hyperprior latents and the
        symbols, decoded level after level)."""
        import constriction

        need = ("codec", "n", "voxel", "lo", "span", "scales", "ranges")
        header, sections = unpack_bitstream(data, MAGIC, "ContextGS", need, _SECTION_ORDER)
        codec = ContextGSCodec(**header["codec"])
        n, d, k = header["n"], codec.feature_dim, codec.k
        grid16 = torch.from_numpy(
            np.frombuffer(sections["anchor"], dtype="<u2").astype(np.int64).reshape(n, 3)
        )
        lo, span = torch.tensor(header["lo"]), torch.tensor(header["span"])
        x01 = grid16.float() / (2**ANCHOR_BITS - 1)
        anchors = lo + x01 * span
        weights, render_state = _split_floats(sections["mlp"], codec._weights())
        codec.load_state_dict(weights, strict=False)
        z = torch.zeros(n, codec.hyper_dim)
        if codec.hyperprior:
            mean, scale = codec._hyper_model()
            low, high = header["ranges"]["hyper"]
            ones = torch.ones(())
            z = _range_decode(
                sections["hyper"], mean.expand_as(z), scale.expand_as(z), ones, low, high, z.shape
            ).float()
        sets, parent = codec._division(anchors, header["voxel"], header["scales"])
        decoders = {
            key: constriction.stream.queue.RangeDecoder(
                np.frombuffer(sections[key], dtype="<u4").copy()
            )
            for key in _WIDTH_KEYS
        }
        widths = dict(feature=d, scaling=6, offset=3 * k)
        values = {key: torch.zeros(n, w) for key, w in widths.items()}
        symbols = {key: torch.zeros(n, w, dtype=torch.long) for key, w in widths.items()}

        def value_of(idx, params):
            out = {}
            for key in _WIDTH_KEYS:
                mean, scale, q = params[key]
                mu, sd = _model_arrays(mean, scale, q)
                model = constriction.stream.model.QuantizedGaussian(*header["ranges"][key])
                sym = torch.from_numpy(decoders[key].decode(model, mu, sd).astype(np.int64))
                sym = sym.reshape(len(idx), widths[key])
                symbols[key][idx] = sym
                out[key] = sym.float() * q
                values[key][idx] = out[key]
            return out

        codec._walk(sets, parent, x01, z, value_of)
        symbols["hyper"] = z.long()
        return decoded_scene(anchors, values, k, header["voxel"], render_state, symbols)
