"""The message decoder: a HiDDeN encoder/decoder pair in the form that Stable Signature
retrained and CompMarkGS ships. Blocks of Conv3x3-BatchNorm-GELU, a decoder that pools to
``bits`` logits and a linear layer, an encoder that concatenates the +-1 message with its
features and the image and adds ``strength * tanh(.)`` to the image. Training minimises
only the message BCE (no image loss). Each batch passes through one attack drawn from
identity, horizontal flip, crop, resize and JPEG (straight-through). At the end the decoder's
logits are whitened on unmarked pictures (Stable Signature's ``_whit`` checkpoints). As in
CompMarkGS the decoder reads the Haar LL band of the image."""

from __future__ import annotations

import io

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from .wavelet import haar_dwt

TRAIN_PICTURES = (
    "astronaut",
    "coffee",
    "chelsea",
    "immunohistochemistry",
    "brick",
    "grass",
    "gravel",
    "coins",
    "moon",
)
HELD_OUT_PICTURES = ("rocket", "camera")
ATTACKS = ("identity", "hflip", "crop0.3", "crop0.7", "resize0.3", "resize0.7", "jpeg50", "jpeg80")


def _block(c_in: int, c_out: int) -> nn.Sequential:
    """HiDDeN's ConvBNRelu (GELU in Stable Signature's version, BatchNorm eps 1e-3)."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out, eps=1e-3), nn.GELU()
    )


def _channels_first(images: torch.Tensor, name: str) -> torch.Tensor:
    V.check_tensor(images, name, ndim=(3, 4), floating=True)
    x = images[None] if images.dim() == 3 else images
    if x.shape[-1] != 3:
        raise ValueError(f"{name} must have 3 channels last, got shape {tuple(images.shape)}")
    return x.permute(0, 3, 1, 2)


class MessageDecoder(nn.Module):
    """HiDDeN decoder of ``bits`` logits from the Haar LL band of an RGB image: ``depth``
    blocks of ``channels``, a block to ``bits`` channels, global average pooling, a linear
    layer, then a fixed whitening (identity until :func:`pretrain_decoder` sets it)."""

    def __init__(self, bits: int = 16, channels: int = 32, depth: int = 4):
        super().__init__()
        self.bits = V.check_int(bits, "bits", low=1, high=256)
        self.channels = V.check_int(channels, "channels", low=1)
        self.depth = V.check_int(depth, "depth", low=1)
        layers = [_block(3, channels)]
        layers += [_block(channels, channels) for _ in range(depth - 1)]
        layers += [_block(channels, bits), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)
        self.linear = nn.Linear(bits, bits)
        self.register_buffer("whiten_weight", torch.eye(bits))
        self.register_buffer("whiten_bias", torch.zeros(bits))

    def raw_logits(self, ll: torch.Tensor) -> torch.Tensor:
        """(B, 3, h, w) LL band -> (B, bits) logits before whitening."""
        return self.linear(self.net(ll))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, H, W, 3) or (H, W, 3) images in [0, 1] -> (B, bits) logits."""
        ll = haar_dwt(_channels_first(images, "images"))[0]
        return self.raw_logits(ll) @ self.whiten_weight.T + self.whiten_bias


class MessageEncoder(nn.Module):
    """HiDDeN encoder: ``depth`` blocks of ``channels`` on the image, concatenated with the
    +-1 message (broadcast over the pixels) and the image, one more block, a 1x1 convolution
    to RGB and tanh; the marked image is ``image + strength * tanh(.)``."""

    def __init__(self, bits: int = 16, channels: int = 32, depth: int = 2, strength: float = 0.1):
        super().__init__()
        self.bits = V.check_int(bits, "bits", low=1, high=256)
        self.strength = V.check_scalar(strength, "strength", low=0, low_open=True)
        channels = V.check_int(channels, "channels", low=1)
        depth = V.check_int(depth, "depth", low=1)
        layers = [_block(3, channels)] + [_block(channels, channels) for _ in range(depth - 1)]
        self.features = nn.Sequential(*layers)
        self.after_concat = _block(channels + 3 + bits, channels)
        self.final = nn.Conv2d(channels, 3, 1)

    def residual(self, x: torch.Tensor, messages: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) images, (B, bits) 0/1 messages -> (B, 3, H, W) in [-1, 1]."""
        m = (2 * messages - 1)[:, :, None, None].expand(-1, -1, *x.shape[-2:])
        return torch.tanh(self.final(self.after_concat(torch.cat([m, self.features(x), x], 1))))

    def forward(self, images: torch.Tensor, messages: torch.Tensor) -> torch.Tensor:
        """(B, H, W, 3) images and (B, bits) 0/1 messages -> marked (B, H, W, 3) images."""
        x = _channels_first(images, "images")
        V.check_tensor(messages, "messages", shape=(x.shape[0], self.bits), low=0, high=1)
        return (x + self.strength * self.residual(x, messages.to(x.dtype))).permute(0, 2, 3, 1)


def _jpeg(x: torch.Tensor, quality: int) -> torch.Tensor:
    """JPEG at ``quality`` with a straight-through gradient (Stable Signature's DiffJPEG)."""
    from PIL import Image

    with torch.no_grad():
        arr = (x.clamp(0, 1) * 255).round().byte().permute(0, 2, 3, 1).cpu().numpy()
        out = []
        for a in arr:  # PIL codes one picture at a time
            buf = io.BytesIO()
            Image.fromarray(a).save(buf, format="JPEG", quality=quality)
            out.append(np.asarray(Image.open(buf).convert("RGB")))
        y = torch.as_tensor(np.stack(out)).to(x.device, x.dtype).permute(0, 3, 1, 2) / 255
    return x + (y - x).detach()


def _even(n: float) -> int:
    return max(2, 2 * int(n / 2))


def attack(x: torch.Tensor, kind: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """One of HiDDeN's attacks (Stable Signature's replicate recipe) on (B, 3, H, W) images:
    identity, horizontal flip, a random crop keeping 30 % / 70 % of the area, a resize to
    30 % / 70 % of the area, JPEG at quality 50 / 80. Sides are kept even for the Haar DWT."""
    kind = V.check_choice(kind, "kind", ATTACKS)
    h, w = x.shape[-2:]
    if kind == "identity":
        return x
    if kind == "hflip":
        return x.flip(-1)
    if kind.startswith("jpeg"):
        return _jpeg(x, int(kind[4:]))
    side = float(kind[-3:]) ** 0.5
    ch, cw = _even(h * side), _even(w * side)
    if kind.startswith("crop"):
        y0 = int(torch.randint(h - ch + 1, (1,), generator=generator))
        x0 = int(torch.randint(w - cw + 1, (1,), generator=generator))
        return x[..., y0 : y0 + ch, x0 : x0 + cw]
    return F.interpolate(x, size=(ch, cw), mode="bilinear", align_corners=False, antialias=True)


class PicturePool:
    """Random resized crops (area 25-100 %, aspect 3/4-4/3, flips, brightness / contrast /
    saturation jitter of 0.2) of scikit-image pictures, kept at twice the crop size."""

    def __init__(self, names=TRAIN_PICTURES, size: int = 32):
        from skimage.transform import resize

        from iclr26.data.images import load_image

        self.size = V.check_int(size, "size", low=2)
        pics = []
        for name in names:
            img = load_image(name)
            img = np.repeat(img[..., None], 3, axis=2) if img.ndim == 2 else img[..., :3]
            s = min(img.shape[:2])
            y0, x0 = (img.shape[0] - s) // 2, (img.shape[1] - s) // 2
            sq = resize(img[y0 : y0 + s, x0 : x0 + s], (2 * size, 2 * size), anti_aliasing=True)
            pics.append(torch.as_tensor(sq, dtype=torch.float32).permute(2, 0, 1))
        self.pictures = torch.stack(pics)

    def sample(self, n: int, generator: torch.Generator, jitter: bool = True) -> torch.Tensor:
        """(n, 3, size, size) crops in [0, 1] (all draws from ``generator``, on the CPU)."""
        g = generator
        idx = torch.randint(len(self.pictures), (n,), generator=g)
        area = 0.25 + 0.75 * torch.rand(n, generator=g)
        ratio = torch.exp(np.log(3 / 4) + np.log(16 / 9) * torch.rand(n, generator=g))
        sx = (area * ratio).sqrt().clamp(max=1.0)
        sy = (area / ratio).sqrt().clamp(max=1.0)
        tx = (1 - sx) * (2 * torch.rand(n, generator=g) - 1)
        ty = (1 - sy) * (2 * torch.rand(n, generator=g) - 1)
        flip = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0)
        theta = torch.zeros(n, 2, 3)
        theta[:, 0, 0], theta[:, 0, 2] = sx * flip, tx
        theta[:, 1, 1], theta[:, 1, 2] = sy, ty
        grid = F.affine_grid(theta, (n, 3, self.size, self.size), align_corners=False)
        x = F.grid_sample(self.pictures[idx], grid, mode="bilinear", align_corners=False)
        if jitter:
            b, c, s = (1 + 0.4 * (torch.rand(3, n, 1, 1, 1, generator=g) - 0.5)).unbind(0)
            grey = x.mean(1, keepdim=True)
            x = grey + s * (x - grey)  # saturation
            x = x.mean((1, 2, 3), keepdim=True) + c * (x - x.mean((1, 2, 3), keepdim=True))
            x = b * x  # brightness
        return x.clamp(0, 1)


def _check_pair(encoder, decoder) -> None:
    if not isinstance(encoder, MessageEncoder):
        raise TypeError(f"encoder must be a MessageEncoder, got {type(encoder).__name__}")
    if not isinstance(decoder, MessageDecoder):
        raise TypeError(f"decoder must be a MessageDecoder, got {type(decoder).__name__}")
    if encoder.bits != decoder.bits:
        raise ValueError(f"encoder has {encoder.bits} bits but decoder has {decoder.bits}")


def check_device(device) -> torch.device:
    """``device`` as a ``torch.device`` (a string such as ``"cpu"``/``"cuda:0"`` or a device)."""
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be a string or torch.device, got {type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device must name a torch device, got {device!r}") from err


def pretrain_decoder(
    bits: int = 16,
    *,
    steps: int = 600,
    size: int = 32,
    batch: int = 16,
    channels: int = 32,
    depth: int = 4,
    encoder_channels: int = 32,
    encoder_depth: int = 2,
    strength: float = 0.1,
    lr: float = 2e-3,
    attacks: tuple[str, ...] = ATTACKS,
    seed: int = 0,
    device="cpu",
    return_encoder: bool = False,
):
    """Train a HiDDeN encoder/decoder pair on random crops of scikit-image pictures with
    random messages, one attack per batch (``attacks``, default all of :data:`ATTACKS`),
    and the message BCE only, with Adam and a cosine learning rate. Then re-estimate the
    BatchNorm statistics over 8 batches, whiten the logits on 256 unmarked crops, and
    freeze the decoder (eval mode) on ``device``. ``return_encoder`` also returns the
    (frozen) encoder. The random draws come from a CPU generator, so the data are the same
    on every device."""
    bits = V.check_int(bits, "bits", low=1, high=256)
    steps = V.check_int(steps, "steps", low=1)
    size = V.check_int(size, "size", low=8)
    if size % 2:
        raise ValueError(f"size must be even, got {size}")
    batch = V.check_int(batch, "batch", low=2)
    strength = V.check_scalar(strength, "strength", low=0, low_open=True)
    lr = V.check_scalar(lr, "lr", low=0, low_open=True)
    if not isinstance(attacks, tuple | list) or not attacks:
        raise ValueError("attacks must be a non-empty tuple of attack names")
    attacks = tuple(V.check_choice(a, "attacks", ATTACKS) for a in attacks)
    seed = V.check_int(seed, "seed", low=0)
    device = check_device(device)
    return_encoder = V.check_bool(return_encoder, "return_encoder")
    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        dec = MessageDecoder(bits, channels, depth)
        enc = MessageEncoder(bits, encoder_channels, encoder_depth, strength)
    dec, enc = dec.to(device), enc.to(device)
    pool = PicturePool(TRAIN_PICTURES, size)
    params = [*dec.parameters(), *enc.parameters()]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps, eta_min=lr / 100)
    dec.train()
    enc.train()

    def marked_batch():
        x = pool.sample(batch, g).to(device)
        m = torch.randint(0, 2, (batch, bits), generator=g).float().to(device)
        kind = attacks[int(torch.randint(len(attacks), (1,), generator=g))]
        return attack(x + enc.strength * enc.residual(x, m), kind, g), m

    for _ in range(steps):
        y, m = marked_batch()
        loss = F.binary_cross_entropy_with_logits(dec.raw_logits(haar_dwt(y)[0]), m)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():  # exact BatchNorm statistics of the final networks
        bns = [mod for mod in [*dec.modules(), *enc.modules()] if isinstance(mod, nn.BatchNorm2d)]
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # a cumulative average
        for _ in range(8):
            y, _ = marked_batch()
            dec.raw_logits(haar_dwt(y)[0])
        dec.eval()
        enc.eval()
        clean = pool.sample(256, g).to(device)
        whiten(dec, clean.permute(0, 2, 3, 1))
    for p in [*dec.parameters(), *enc.parameters()]:
        p.requires_grad_(False)
    return (enc, dec) if return_encoder else dec


@torch.no_grad()
def whiten(decoder: MessageDecoder, images: torch.Tensor, eps: float = 1e-4) -> MessageDecoder:
    """Set the decoder's whitening so that its logits on ``images`` (unmarked, (N, H, W, 3))
    have zero mean and identity covariance (ZCA): W = C^(-1/2), b = -W mu (C gets a ridge of
    ``eps`` times its mean variance)."""
    if not isinstance(decoder, MessageDecoder):
        raise TypeError(f"decoder must be a MessageDecoder, got {type(decoder).__name__}")
    x = _channels_first(images, "images")
    if x.shape[0] < 2:
        raise ValueError(f"images must hold at least 2 pictures, got {x.shape[0]}")
    eps = V.check_scalar(eps, "eps", low=0, low_open=True)
    y = decoder.raw_logits(haar_dwt(x)[0]).double()
    mu = y.mean(0)
    cov = (y - mu).T @ (y - mu) / (len(y) - 1)
    ridge = eps * cov.diagonal().mean()  # relative, so the scale of the logits does not matter
    ev, u = torch.linalg.eigh(cov + ridge * torch.eye(len(mu), dtype=cov.dtype, device=cov.device))
    w = u @ torch.diag(ev.rsqrt()) @ u.T
    decoder.whiten_weight.copy_(w.to(decoder.whiten_weight.dtype))
    decoder.whiten_bias.copy_((-w @ mu).to(decoder.whiten_bias.dtype))
    return decoder


@torch.no_grad()
def held_out_bit_accuracy(
    encoder: MessageEncoder,
    decoder: MessageDecoder,
    *,
    n: int = 128,
    size: int = 32,
    seed: int = 1,
) -> dict[str, float]:
    """Bit accuracy of ``decoder`` on ``n`` crops of the held-out pictures
    (:data:`HELD_OUT_PICTURES`) marked by ``encoder`` with random messages, after each
    attack (key = attack name), and on the same crops unmarked (``"unmarked"``, about 0.5
    for a decoder that reads only the mark)."""
    _check_pair(encoder, decoder)
    n = V.check_int(n, "n", low=1)
    size = V.check_int(size, "size", low=8)
    if size % 2:
        raise ValueError(f"size must be even, got {size}")
    g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
    device = decoder.whiten_weight.device
    x = PicturePool(HELD_OUT_PICTURES, size).sample(n, g, jitter=False).to(device)
    m = torch.randint(0, 2, (n, decoder.bits), generator=g).float().to(device)
    y = x + encoder.strength * encoder.residual(x, m)

    def acc(images):
        bits = decoder(images.permute(0, 2, 3, 1)) > 0
        return float((bits == m.bool()).float().mean())

    out = {kind: acc(attack(y, kind, g)) for kind in ATTACKS}
    out["unmarked"] = acc(x)
    return out
