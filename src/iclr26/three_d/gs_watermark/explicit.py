"""Baseline B1: a watermark hidden in the attributes of explicit 3D Gaussians (in the manner of
3D-GSW / GaussianMarker): the Gaussians of a fitted anchor model are baked into explicit ones,
their colours and opacities are fine-tuned with the image loss and the same frozen decoder's
message loss, and compression is uniform per-channel quantization of every attribute."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from .anchor import AnchorGS, check_same_device, check_views
from .losses import ssim

ATTRIBUTES = ("means", "scales", "quats", "opacities", "colors")


def _check_gaussians(gaussians) -> dict[str, torch.Tensor]:
    if not isinstance(gaussians, dict) or set(gaussians) != set(ATTRIBUTES):
        raise ValueError(f"gaussians must be a dict with keys {', '.join(ATTRIBUTES)}")
    n = gaussians["means"].shape[0] if isinstance(gaussians["means"], torch.Tensor) else None
    V.check_tensor(gaussians["means"], "gaussians['means']", ndim=2, shape=(None, 3), floating=True)
    V.check_tensor(gaussians["scales"], "gaussians['scales']", shape=(n, 3), floating=True)
    if bool((gaussians["scales"] <= 0).any()):
        raise ValueError("gaussians['scales'] must be > 0")
    V.check_tensor(gaussians["quats"], "gaussians['quats']", shape=(n, 4), floating=True)
    V.check_tensor(
        gaussians["opacities"], "gaussians['opacities']", shape=(n,), floating=True, low=0, high=1
    )
    V.check_tensor(
        gaussians["colors"], "gaussians['colors']", shape=(n, 3), floating=True, low=0, high=1
    )
    return gaussians


def explicit_quantize(gaussians: dict, bits: int) -> dict[str, torch.Tensor]:
    """Uniform per-channel quantization of every attribute to ``2**bits`` levels over its
    range (scales in the log domain; quaternions re-normalised by the renderer)."""
    g = _check_gaussians(gaussians)
    bits = V.check_int(bits, "bits", low=1, high=16)
    levels = 2**bits - 1

    def q(x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(x.shape[0], -1)
        lo, hi = x2.min(0).values, x2.max(0).values
        span = (hi - lo).clamp_min(1e-12)
        return (torch.round((x2 - lo) / span * levels) / levels * span + lo).reshape(x.shape)

    out = {k: q(g[k].detach()) for k in ("means", "quats", "opacities", "colors")}
    out["scales"] = torch.exp(q(torch.log(g["scales"].detach())))
    return out


class ExplicitWatermark(nn.Module):
    """Explicit Gaussians whose colours and opacities carry ``message`` for ``decoder``
    (logits of both are trained; positions, scales and rotations are fixed)."""

    def __init__(self, gaussians: dict, decoder, message, *, lambdas=None):
        super().__init__()
        from .watermark import MessageDecoder, check_message

        g = _check_gaussians(gaussians)
        if not isinstance(decoder, MessageDecoder):
            raise TypeError(f"decoder must be a MessageDecoder, got {type(decoder).__name__}")
        msg = check_message(message, decoder)
        lam = dict(img=10.0, msg=0.45)
        for key, v in (lambdas or {}).items():
            V.check_choice(key, "lambdas", tuple(lam))
            lam[key] = V.check_scalar(v, f"lambdas[{key!r}]", low=0)
        self.lambdas = lam
        self.decoder = decoder
        for p in decoder.parameters():
            p.requires_grad_(False)
        device = g["means"].device
        for p in decoder.parameters():
            check_same_device("decoder", p, device)
        self.register_buffer("message", msg.to(device))
        self.register_buffer("means", g["means"].detach().float().clone())
        self.register_buffer("scales", g["scales"].detach().float().clone())
        self.register_buffer("quats", g["quats"].detach().float().clone())
        eps = 1e-4
        self.opacity_logit = nn.Parameter(torch.logit(g["opacities"].detach().float(), eps))
        self.color_logit = nn.Parameter(torch.logit(g["colors"].detach().float(), eps))

    @classmethod
    def from_anchor(cls, gs: AnchorGS, camera, decoder, message, **kwargs) -> ExplicitWatermark:
        """Bake the neural Gaussians ``gs`` spawns for ``camera`` into explicit ones."""
        if not isinstance(gs, AnchorGS):
            raise TypeError(f"gs must be an AnchorGS, got {type(gs).__name__}")
        with torch.no_grad():
            g = gs.gaussians(camera)
        g["colors"] = g["colors"].clamp(0, 1)
        g["opacities"] = g["opacities"].clamp(0, 1)
        return cls(g, decoder, message, **kwargs)

    @property
    def n_gaussians(self) -> int:
        return int(self.means.shape[0])

    def gaussians(self) -> dict[str, torch.Tensor]:
        return dict(
            means=self.means,
            scales=self.scales,
            quats=self.quats,
            opacities=torch.sigmoid(self.opacity_logit),
            colors=torch.sigmoid(self.color_logit),
        )

    def render(self, camera, bits: int | None = None) -> torch.Tensor:
        """The (H, W, 3) image of ``camera``; ``bits`` quantizes the attributes first."""
        from iclr26.three_d.gs_raster import render

        g = self.gaussians()
        if bits is not None:
            g = explicit_quantize(g, bits)
        return render(**g, camera=camera, background=[0.0, 0.0, 0.0]).image

    def fit(self, views, cameras, *, steps: int = 100, lr: float = 0.01, seed: int = 0):
        """Fine-tune with lambda_img (0.65 L1 + 0.35 (1 - SSIM)) + lambda_msg BCE(10 logits, M)."""
        views, cameras = check_views(views, cameras)
        check_same_device("views", views, self.means.device)
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0, low_open=True)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        opt = torch.optim.Adam([self.opacity_logit, self.color_logit], lr=lr)
        self.decoder.eval()
        for _ in range(steps):
            i = int(torch.randint(len(cameras), (1,), generator=g))
            img = self.render(cameras[i])
            l_img = 0.65 * (img - views[i]).abs().mean() + 0.35 * (1 - ssim(img, views[i]))
            logits = self.decoder(img)[0]
            l_msg = F.binary_cross_entropy_with_logits(10 * logits, self.message)
            loss = self.lambdas["img"] * l_img + self.lambdas["msg"] * l_msg
            opt.zero_grad()
            loss.backward()
            opt.step()
        return self

    @torch.no_grad()
    def bit_accuracy(self, cameras, bits: int | None = None) -> float:
        """Mean bit accuracy over renders of ``cameras`` (``bits``: after quantization)."""
        if not isinstance(cameras, list | tuple) or not cameras:
            raise ValueError("cameras must be a non-empty list of cameras")
        if bits is not None:
            bits = V.check_int(bits, "bits", low=1, high=16)
        accs = []
        for cam in cameras:
            decoded = (self.decoder(self.render(cam, bits))[0] > 0).float()
            accs.append(float((decoded == self.message).float().mean()))
        return float(sum(accs) / len(accs))
