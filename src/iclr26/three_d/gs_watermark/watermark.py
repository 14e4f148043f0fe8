"""CompMarkGS: the watermark embedding f^w = f + tanh(f') on anchor features, the quantization
distortion layer (QDL) f~ = f^w + u * q with a learned per-anchor, per-channel step
q = Q0 (1 + tanh(MLP_q(f^w))), a frozen message decoder on the Haar LL band of renders, the
message loss BCE(10 * logits, M) ramped in, the hue-masked HSV loss, optional uniform noise on
the anchor scalings and offsets during training (HAC's quantization proxy), and a HAC-like
quantizer of the anchor features (and optionally of the scalings and offsets) as the
compressor; the real HAC codec (:mod:`.hac`) can take its place in evaluation."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from .anchor import AnchorGS, check_noise_step, check_same_device, check_views, uniform_noise
from .growing import high_frequency_mask
from .hidden import MessageDecoder, check_device, pretrain_decoder  # noqa: F401 (re-exported)
from .losses import frequency_error, hsv_loss, ssim


class QuantizationDistortionLayer(nn.Module):
    """Training: f + u * q, u ~ U(-1/2, 1/2); eval: identity. ``mode`` "learned" predicts q,
    "uniform" uses the fixed step ``q0``; q is floored at ``q0 / 4``."""

    def __init__(self, feature_dim: int, q0: float = 0.2, mode: str = "learned"):
        super().__init__()
        self.feature_dim = V.check_int(feature_dim, "feature_dim", low=1)
        self.q0 = V.check_scalar(q0, "q0", low=0, low_open=True)
        self.mode = V.check_choice(mode, "mode", ("learned", "uniform"))
        self.mlp = nn.Sequential(
            nn.Linear(feature_dim, feature_dim), nn.ReLU(), nn.Linear(feature_dim, feature_dim)
        )

    def step(self, f: torch.Tensor) -> torch.Tensor:
        if self.mode == "uniform":
            return torch.full_like(f, self.q0)
        return (self.q0 * (1 + torch.tanh(self.mlp(f)))).clamp_min(self.q0 / 4)

    def forward(self, f: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        V.check_tensor(f, "f", ndim=2, shape=(None, self.feature_dim), floating=True)
        if not self.training:
            return f
        # drawn on the CPU (a CPU generator): the same noise stream on every device
        u = torch.rand(f.shape, generator=generator, dtype=f.dtype).to(f.device) - 0.5
        return f + u * self.step(f)


class HACLikeCompressor:
    """Stand-in for HAC's anchor-feature coding: f -> round(f / step) * step; the rate is the
    empirical entropy of the symbols (bits). ``scaling_step`` / ``offset_step`` (None: kept
    exact) also round the activated anchor scalings exp(l) and the offsets O, as HAC's decoder
    does (its training noise simulates the same rounding)."""

    def __init__(
        self,
        step: float = 0.2,
        *,
        scaling_step: float | None = None,
        offset_step: float | None = None,
    ):
        self.step = V.check_scalar(step, "step", low=0, low_open=True)
        self.scaling_step = check_noise_step(scaling_step, "scaling_step")
        self.offset_step = check_noise_step(offset_step, "offset_step")

    def attributes(self, gs: AnchorGS) -> dict[str, torch.Tensor | None]:
        """Keyword arguments ``scaling`` / ``offset`` of :meth:`AnchorGS.render`: the rounded
        exp(l) and O, or None where no step is set."""
        if not isinstance(gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(gs).__name__}")
        out = dict(scaling=None, offset=None)
        if self.scaling_step is not None:
            s = torch.exp(gs.scaling.detach())
            out["scaling"] = torch.round(s / self.scaling_step) * self.scaling_step
        if self.offset_step is not None:
            o = gs.offset.detach()
            out["offset"] = torch.round(o / self.offset_step) * self.offset_step
        return out

    def encode(self, features: torch.Tensor) -> torch.Tensor:
        V.check_tensor(features, "features", ndim=2, floating=True)
        return torch.round(features / self.step).long()

    def decode(self, symbols: torch.Tensor) -> torch.Tensor:
        V.check_tensor(symbols, "symbols", ndim=2, integer=True)
        return symbols.float() * self.step

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(features))

    def rate_bits(self, features: torch.Tensor) -> float:
        s = self.encode(features).reshape(-1)
        _, counts = torch.unique(s, return_counts=True)
        p = counts.double() / s.numel()
        return float(-(p * torch.log2(p)).sum() * s.numel())


def check_message(message, decoder: MessageDecoder) -> torch.Tensor:
    """``message`` as a float 0/1 vector of the decoder's bit count; ValueError naming it."""
    msg = torch.as_tensor(message, dtype=torch.float32)
    V.check_tensor(msg, "message", ndim=1, low=0, high=1)
    if not bool(((msg == 0) | (msg == 1)).all()):
        raise ValueError("message must hold only 0 and 1")
    if msg.numel() != decoder.bits:
        raise ValueError(
            f"message has {msg.numel()} bits but the decoder was trained for {decoder.bits}"
        )
    return msg


class CompMarkGS(nn.Module):
    """Watermark a fitted :class:`AnchorGS` with ``message`` (0/1 vector of the decoder's length).

    ``qdl``: (q0, "learned" | "uniform") or None (no feature noise, the ablation)."""

    def __init__(
        self, gs: AnchorGS, decoder: MessageDecoder, message, *, qdl=(0.2, "learned"), lambdas=None
    ):
        super().__init__()
        if not isinstance(gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(gs).__name__}")
        if not isinstance(decoder, MessageDecoder):
            raise TypeError(f"decoder must be a MessageDecoder, got {type(decoder).__name__}")
        msg = check_message(message, decoder)
        lam = dict(img=10.0, freq=0.1, hsv=0.6, msg=0.45)
        for key, v in (lambdas or {}).items():
            V.check_choice(key, "lambdas", tuple(lam))
            lam[key] = V.check_scalar(v, f"lambdas[{key!r}]", low=0)
        self.lambdas = lam
        self.gs, self.decoder = gs, decoder
        self.register_buffer("message", msg)
        self.embedding = nn.Parameter(torch.zeros_like(gs.feature))
        if qdl is None:
            self.qdl = None
        else:
            if not isinstance(qdl, tuple | list) or len(qdl) != 2:
                raise TypeError("qdl must be (q0, mode) or None")
            self.qdl = QuantizationDistortionLayer(gs.feature_dim, qdl[0], qdl[1])
        for p in decoder.parameters():
            p.requires_grad_(False)
        device = gs.anchor.device
        for p in decoder.parameters():
            check_same_device("decoder", p, device)
        self.to(device)  # the message, f' and the QDL live beside the anchors

    def watermarked_features(self) -> torch.Tensor:
        """f^w = f + tanh(f')."""
        return self.gs.feature + torch.tanh(self.embedding)

    def fit(
        self,
        views,
        cameras,
        *,
        steps: int = 200,
        lr: float = 0.005,
        msg_from: int | None = None,
        ramp: int | None = None,
        grow_every: int | None = None,
        grow_until: int | None = None,
        fag: bool = True,
        max_anchors: int | None = None,
        grow_voxel: float | None = None,
        scaling_noise: float | None = None,
        offset_noise: float | None = None,
        seed: int = 0,
    ) -> CompMarkGS:
        """Phases 2 and 3 of the paper's run on a fitted anchor model. Steps up to
        ``msg_from`` (default ``steps // 2``): L_scaffold + lambda_freq L_freq with the QDL, and
        anchor growing every ``grow_every`` steps (None: none) until ``grow_until`` (default
        ``msg_from // 2``, as the paper's growing stops half-way through this phase) by the
        frequency-aware rule (``fag=True``) or the ordinary Scaffold-GS rule. Later steps:
        lambda_img (L_scaffold + lambda_freq L_freq + lambda_hsv L_hsv) + lambda_msg ramp L_msg,
        the ramp linear over ``ramp`` steps (default a third of the phase). ``max_anchors`` and
        ``grow_voxel`` go to :class:`.growing.AnchorGrowth`. ``scaling_noise`` and
        ``offset_noise`` (None: off) add U(-q/2, q/2) noise of that step q to the activated anchor
        scaling exp(l) and to the offsets O on every step, as the release does throughout
        training. The QDL's and this noise come from their own generator, so the camera order
        does not depend on them."""
        from iclr26.three_d.gs_raster import render

        from .growing import HIGH_FREQUENCY, ORDINARY, AnchorGrowth, check_growth_schedule

        views, cameras = check_views(views, cameras)
        check_same_device("views", views, self.gs.anchor.device)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        msg_from = steps // 2 if msg_from is None else V.check_int(msg_from, "msg_from", low=0)
        if msg_from >= steps:
            raise ValueError(f"msg_from must be < steps ({steps}), got {msg_from}")
        ramp = max(1, (steps - msg_from) // 3) if ramp is None else V.check_int(ramp, "ramp", low=1)
        grow_every, _, grow_until = check_growth_schedule(
            grow_every, 0, msg_from // 2 if grow_until is None else grow_until, steps
        )
        fag = V.check_bool(fag, "fag")
        scaling_noise = check_noise_step(scaling_noise, "scaling_noise")
        offset_noise = check_noise_step(offset_noise, "offset_noise")
        seed = V.check_int(seed, "seed", low=0)
        g = torch.Generator().manual_seed(seed)
        g_noise = torch.Generator().manual_seed(seed + 1)
        groups = [
            dict(params=[self.embedding], lr=0.2 * lr * 10),
            dict(params=list(self.gs.parameters()), lr=lr),
        ]
        if self.qdl is not None:
            groups.append(dict(params=list(self.qdl.parameters()), lr=1e-3))
        opt = torch.optim.Adam(groups)
        growth = None
        if grow_every is not None:
            growth = AnchorGrowth(
                self.gs,
                inherit=[(self, "embedding")],
                generator=g,
                max_anchors=max_anchors,
                voxel=grow_voxel,
            )
        self.growth = growth
        rule = HIGH_FREQUENCY if fag else ORDINARY
        self.train()
        self.decoder.eval()
        for t in range(1, steps + 1):
            i = int(torch.randint(len(cameras), (1,), generator=g))
            cam, target = cameras[i], views[i]
            gathering = growth is not None and t <= grow_until
            f = self.watermarked_features()
            if self.qdl is not None:
                f = self.qdl(f, generator=g_noise)
            sc = off = None
            if scaling_noise is not None:
                sc = uniform_noise(torch.exp(self.gs.scaling), scaling_noise, g_noise)
            if offset_noise is not None:
                off = uniform_noise(self.gs.offset, offset_noise, g_noise)
            info = self.gs.neural_gaussians(cam, f, scaling=sc, offset=off)
            out = render(
                **{k: info[k] for k in ("means", "scales", "quats", "opacities", "colors")},
                camera=cam,
                background=[0.0, 0.0, 0.0],
            )
            if gathering:
                out.means2d.retain_grad()
            img = out.image
            vol = torch.exp(self.gs.scaling[:, 3:]).prod(dim=1).mean()
            p_err = frequency_error(img, target)
            l_img = (
                0.65 * (img - target).abs().mean()
                + 0.35 * (1 - ssim(img, target))
                + 0.01 * vol
                + self.lambdas["freq"] * p_err.mean()
            )
            if t > msg_from:
                logits = self.decoder(img)[0]
                l_msg = F.binary_cross_entropy_with_logits(10 * logits, self.message)
                weight = min(1.0, (t - msg_from) / ramp)
                loss = (
                    self.lambdas["img"] * (l_img + self.lambdas["hsv"] * hsv_loss(img, target))
                    + self.lambdas["msg"] * weight * l_msg
                )
            else:
                loss = l_img
            opt.zero_grad()
            loss.backward()
            if gathering:
                mask = None
                if fag:  # P_err is the valid-region SSIM map: pad back to the image
                    pad = (img.shape[0] - p_err.shape[0]) // 2
                    mask = torch.zeros(img.shape[:2], dtype=torch.bool, device=img.device)
                    hf = high_frequency_mask(p_err.detach())
                    mask[pad : pad + hf.shape[0], pad : pad + hf.shape[1]] = hf
                growth.accumulate(info, out, self.gs.visible_anchors(cam), cam, pixel_mask=mask)
                if t % grow_every == 0:
                    growth.adjust(opt, **rule, check_interval=grow_every)
            opt.step()
        self.eval()
        return self

    def _compressed(self, compressor) -> tuple[torch.Tensor, dict]:
        """f^w and the render's scaling / offset overrides after ``compressor`` (None: exact;
        training noise never reaches evaluation)."""
        if compressor is not None and not isinstance(compressor, HACLikeCompressor):
            raise TypeError("compressor must be a HACLikeCompressor or None")
        f = self.watermarked_features()
        if compressor is None:
            return f, {}
        return compressor(f), compressor.attributes(self.gs)

    def _renderer(self, compressor):
        """camera -> image of the scene after ``compressor``: None (exact), a
        :class:`HACLikeCompressor` (rounding), or a :class:`.hac.HACCodec` or
        :class:`.contextgs.ContextGSCodec` (the scene with f^w
        encoded to bytes and decoded back, rendered on the model's device)."""
        from .contextgs import ContextGSCodec
        from .hac import HACCodec

        if isinstance(compressor, HACCodec | ContextGSCodec):
            decoded = compressor.decode(compressor.encode(self.gs, self.watermarked_features()))
            device = self.gs.anchor.device
            gs = decoded.gs.to(device)
            f, s, o = (t.to(device) for t in (decoded.feature, decoded.scaling, decoded.offset))
            return lambda cam: gs.render(cam, f, scaling=s, offset=o)
        if compressor is not None and not isinstance(compressor, HACLikeCompressor):
            raise TypeError(
                "compressor must be a HACLikeCompressor, a HACCodec, a ContextGSCodec or None"
            )
        f, attrs = self._compressed(compressor)
        return lambda cam: self.gs.render(cam, f, **attrs)

    @torch.no_grad()
    def bit_accuracy(self, cameras, compressor=None) -> float:
        """Mean bit accuracy over renders of ``cameras`` (optionally after compressing f^w,
        and the scalings and offsets where a :class:`HACLikeCompressor` has steps for them,
        or after a real encode -> decode by a fitted :class:`.hac.HACCodec`)."""
        render = self._renderer(compressor)
        if not isinstance(cameras, list | tuple) or not cameras:
            raise ValueError("cameras must be a non-empty list of cameras")
        accs = []
        for cam in cameras:
            bits = (self.decoder(render(cam))[0] > 0).float()
            accs.append(float((bits == self.message).float().mean()))
        return float(sum(accs) / len(accs))

    @torch.no_grad()
    def render(self, camera, compressor=None) -> torch.Tensor:
        """The image of ``camera`` (after ``compressor``, as in :meth:`bit_accuracy`)."""
        return self._renderer(compressor)(camera)


def message_bits(bits: int, seed: int = 0) -> torch.Tensor:
    """A random 0/1 message of ``bits`` bits."""
    bits = V.check_int(bits, "bits", low=1)
    g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
    return torch.randint(0, 2, (bits,), generator=g).float()
