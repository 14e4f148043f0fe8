"""Local patch quantizer (component (a) of 3WM / LRAS): a small convolutional autoencoder that
sees exactly one patch at a time, with a vector-quantised bottleneck of one code per patch.

Each ``patch x patch`` tile is cut out *before* the first convolution and processed on its own
(zero padding inside the tile), so a patch's code and reconstruction depend on that patch's
pixels only — the strict patch independence that lets a sequence model address, give or
generate any subset of patches. The codebook is updated by exponential moving averages
(VQ-VAE-2 style) with a commitment loss of weight ``beta`` and a straight-through gradient.
RGB images are mapped to [-1, 1]; flow (2 channels, pixels) is divided by the patch size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

__all__ = ["LocalPatchQuantizer", "patchify", "unpatchify"]


def patchify(x: torch.Tensor, patch: int) -> torch.Tensor:
    """``(B, C, H, W)`` -> ``(B, N, C, p, p)`` with patches in raster order (pointer order)."""
    x = V.check_tensor(x, "x", ndim=4)
    patch = V.check_int(patch, "patch", low=1)
    b, c, h, w = x.shape
    if h % patch or w % patch:
        raise ValueError(f"x height and width must be multiples of patch={patch}, got {(h, w)}")
    x = x.reshape(b, c, h // patch, patch, w // patch, patch).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(b, (h // patch) * (w // patch), c, patch, patch)


def unpatchify(x: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Inverse of :func:`patchify`: ``(B, N, C, p, p)`` -> ``(B, C, H, W)``."""
    x = V.check_tensor(x, "x", ndim=5)
    height = V.check_int(height, "height", low=1)
    width = V.check_int(width, "width", low=1)
    b, n, c, p, _ = x.shape
    if height % p or width % p or (height // p) * (width // p) != n:
        raise ValueError(f"height and width must tile {n} patches of {p} x {p}")
    x = x.reshape(b, height // p, width // p, c, p, p).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(b, c, height, width)


class LocalPatchQuantizer(nn.Module):
    """Per-patch VQ autoencoder for ``kind="rgb"`` (3 channels) or ``"flow"`` (2 channels).

    ``codebook`` defaults to 256 codes for RGB and 128 for flow; ``latent`` is the code
    dimension, ``hidden`` the conv width, ``decay`` the EMA rate, ``beta`` the commitment
    weight (0.25). ``encode`` gives ``(B, H/p, W/p)`` codes, ``decode`` maps them back."""

    def __init__(
        self,
        kind: str = "rgb",
        patch: int = 4,
        codebook: int | None = None,
        *,
        latent: int = 16,
        hidden: int = 32,
        decay: float = 0.95,
        beta: float = 0.25,
    ):
        super().__init__()
        self.kind = V.check_choice(kind, "kind", ("rgb", "flow"))
        self.patch = V.check_int(patch, "patch", low=1, high=32)
        default = 256 if self.kind == "rgb" else 128
        self.codebook_size = V.check_int(
            default if codebook is None else codebook, "codebook", low=2
        )
        self.latent = V.check_int(latent, "latent", low=1)
        self.hidden = V.check_int(hidden, "hidden", low=1)
        self.decay = V.check_scalar(decay, "decay", low=0.0, high=1.0, high_open=True)
        self.beta = V.check_scalar(beta, "beta", low=0.0)
        self.channels = 3 if self.kind == "rgb" else 2
        p, h, c = self.patch, self.hidden, self.channels
        self.encoder = nn.Sequential(
            nn.Conv2d(c, h, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(h, h, 3, padding=1),
            nn.GELU(),
            nn.Flatten(),
            nn.Linear(h * p * p, self.latent),
        )
        self.decoder_in = nn.Sequential(nn.Linear(self.latent, h * p * p), nn.GELU())
        self.decoder = nn.Sequential(
            nn.Conv2d(h, h, 3, padding=1), nn.GELU(), nn.Conv2d(h, c, 3, padding=1)
        )
        self.register_buffer("embed", torch.randn(self.codebook_size, self.latent) * 0.1)
        self.register_buffer("cluster_size", torch.ones(self.codebook_size))
        self.register_buffer("embed_sum", self.embed.clone())
        self.register_buffer("initialised", torch.tensor(False))

    # ------------------------------------------------------------------ scaling
    def _to_unit(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 - 1 if self.kind == "rgb" else x / self.patch

    def _from_unit(self, y: torch.Tensor) -> torch.Tensor:
        return (y + 1) / 2 if self.kind == "rgb" else y * self.patch

    def _check_input(self, x: torch.Tensor, name: str = "x") -> torch.Tensor:
        x = V.check_tensor(x, name, ndim=4, floating=True)
        if x.shape[1] != self.channels:
            raise ValueError(
                f"{name} must have {self.channels} channels for kind={self.kind!r}, "
                f"got shape {tuple(x.shape)}"
            )
        if x.shape[2] % self.patch or x.shape[3] % self.patch:
            raise ValueError(
                f"{name} height and width must be multiples of patch={self.patch}, "
                f"got {tuple(x.shape[2:])}"
            )
        return x

    # ------------------------------------------------------------------ coding
    def _encode_latent(self, x: torch.Tensor) -> torch.Tensor:
        tiles = patchify(self._to_unit(x), self.patch)
        b, n = tiles.shape[:2]
        return self.encoder(tiles.reshape(b * n, *tiles.shape[2:])).reshape(b, n, self.latent)

    def _nearest(self, z: torch.Tensor) -> torch.Tensor:
        d = (z * z).sum(-1, keepdim=True) - 2 * z @ self.embed.T + (self.embed**2).sum(-1)
        return d.argmin(-1)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Codes ``(B, H/p, W/p)`` (long) of images/flows ``x`` (B, C, H, W)."""
        x = self._check_input(x)
        with torch.no_grad():
            codes = self._nearest(self._encode_latent(x))
        return codes.reshape(x.shape[0], x.shape[2] // self.patch, x.shape[3] // self.patch)

    def _decode_latent(self, q: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
        b, n, _ = q.shape
        p = self.patch
        hid = self.decoder_in(q.reshape(b * n, -1)).reshape(b * n, self.hidden, p, p)
        tiles = self.decoder(hid).reshape(b, n, self.channels, p, p)
        return self._from_unit(unpatchify(tiles, grid[0] * p, grid[1] * p))

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Images/flows ``(B, C, H, W)`` from codes ``(B, H/p, W/p)``."""
        codes = V.check_tensor(codes, "codes", ndim=3, integer=True)
        if codes.min() < 0 or codes.max() >= self.codebook_size:
            raise ValueError(f"codes must lie in [0, {self.codebook_size - 1}]")
        b, gh, gw = codes.shape
        with torch.no_grad():
            return self._decode_latent(self.embed[codes.reshape(b, -1)], (gh, gw))

    def forward(self, x: torch.Tensor):
        """``(reconstruction, codes, loss)``; in training mode the codebook is EMA-updated."""
        x = self._check_input(x)
        z = self._encode_latent(x)
        flat = z.reshape(-1, self.latent)
        if self.training and not bool(self.initialised):
            pick = torch.randint(0, flat.shape[0], (self.codebook_size,))
            self.embed.copy_(flat[pick].detach())
            self.embed_sum.copy_(self.embed)
            self.cluster_size.fill_(1.0)
            self.initialised.fill_(True)
        codes = self._nearest(flat.detach())
        q = self.embed[codes]
        if self.training:
            self._ema_update(flat.detach(), codes)
        commit = F.mse_loss(flat, q.detach())
        q_st = flat + (q - flat).detach()
        grid = (x.shape[2] // self.patch, x.shape[3] // self.patch)
        recon = self._decode_latent(q_st.reshape(z.shape), grid)
        loss = F.mse_loss(self._to_unit(recon), self._to_unit(x)) + self.beta * commit
        return recon, codes.reshape(x.shape[0], *grid), loss

    @torch.no_grad()
    def _ema_update(self, flat: torch.Tensor, codes: torch.Tensor) -> None:
        onehot = F.one_hot(codes, self.codebook_size).to(flat.dtype)
        counts = onehot.sum(0)
        self.cluster_size.mul_(self.decay).add_(counts, alpha=1 - self.decay)
        self.embed_sum.mul_(self.decay).add_(onehot.T @ flat, alpha=1 - self.decay)
        total = self.cluster_size.sum()
        size = (self.cluster_size + 1e-5) / (total + self.codebook_size * 1e-5) * total
        self.embed.copy_(self.embed_sum / size[:, None])
        # dead codes (EMA usage below 1e-2) restart at random encodings of this batch
        dead = self.cluster_size < 1e-2
        if dead.any():
            pick = torch.randint(0, flat.shape[0], (int(dead.sum()),))
            self.embed[dead] = flat[pick]
            self.embed_sum[dead] = flat[pick]
            self.cluster_size[dead] = 1.0

    def fit(
        self,
        data: torch.Tensor,
        steps: int = 300,
        *,
        batch: int = 64,
        lr: float = 2e-3,
        seed: int = 0,
    ) -> LocalPatchQuantizer:
        """Train on images/flows ``data`` (N, C, H, W) for ``steps`` Adam steps; returns self."""
        data = self._check_input(data, "data")
        steps = V.check_int(steps, "steps", low=0)
        batch = V.check_int(batch, "batch", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        for _ in range(steps):
            idx = torch.randint(0, data.shape[0], (min(batch, data.shape[0]),), generator=gen)
            _, _, loss = self(data[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return self.eval()
