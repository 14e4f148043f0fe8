"""SNC: a sparse-convolution autoencoder with a factorized entropy bottleneck that codes a SIR
end to end. Encoder: point-wise embedding 1 -> C, a residual block per scale, two stride-2
convolutions (latent at stride 4). Decoder: two transposed stride-2 convolutions, each followed
by a residual block and an occupancy classifier that keeps the top-k children (k, the true
count at that scale, is sent in the header), then a linear TSDF head. Loss R + lambda * D."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.three_d.sir_snc.entropy import (
    FactorizedPrior,
    decode_latent,
    decode_octree,
    encode_latent,
    encode_octree,
)
from iclr26.three_d.sir_snc.sir import SIR, sparse_marching_cubes
from iclr26.three_d.sir_snc.sparse import (
    DownConv3d,
    ResBlock,
    UpConv3d,
    lookup,
    neighbour_table,
)


def _check_sir(sir, name: str = "sir") -> SIR:
    if not isinstance(sir, SIR):
        raise TypeError(f"{name} must be a SIR, got {type(sir).__name__}")
    V.check_array(sir.coords, f"{name}.coords", ndim=2, shape=(None, 3), dtype=None)
    V.check_array(sir.tsdf, f"{name}.tsdf", ndim=1, n_rows=len(sir.coords), low=-1, high=1)
    return sir


class SNCCodec(nn.Module):
    """The SNC autoencoder; ``fit`` trains it under R + lmbda * D on a list of SIRs."""

    def __init__(self, channels: int = 16, lmbda: float = 2000.0, seed: int = 0):
        super().__init__()
        self.channels = V.check_int(channels, "channels", low=1, high=256)
        self.lmbda = V.check_scalar(lmbda, "lmbda", low=0.0, low_open=True)
        torch.manual_seed(V.check_int(seed, "seed", low=0))
        c = self.channels
        self.embed = nn.Linear(1, c)
        self.enc1, self.enc2 = ResBlock(c), ResBlock(c)
        self.down1, self.down2 = DownConv3d(c, c), DownConv3d(c, c)
        self.prior = FactorizedPrior(c)
        self.up1, self.up2 = UpConv3d(c, c), UpConv3d(c, c)
        self.dec1, self.dec2 = ResBlock(c), ResBlock(c)
        self.cls1, self.cls2 = nn.Linear(c, 1), nn.Linear(c, 1)
        self.head = nn.Linear(c, 1)

    @property
    def device(self) -> torch.device:
        """Where the codec's parameters live (``codec.to(device)`` moves it); inputs are moved
        there and bitstreams and decoded SIRs come back on the CPU."""
        return self.embed.weight.device

    def _tensors(self, sir: SIR) -> tuple[torch.Tensor, torch.Tensor]:
        dev = self.device
        return torch.from_numpy(sir.coords).to(dev), torch.from_numpy(sir.tsdf).to(dev)

    # -- the two halves --------------------------------------------------------------
    def encode(self, coords: torch.Tensor, tsdf: torch.Tensor):
        x = torch.relu(self.embed(tsdf[:, None]))
        x = self.enc1(x, neighbour_table(coords))
        c2, x = self.down1(coords, x)
        x = self.enc2(torch.relu(x), neighbour_table(c2))
        c4, y = self.down2(c2, x)
        return c4, y

    def _expand(self, up, block, cls, coords, feats, k, keep=None):
        child, x = up(coords, feats)
        x = block(torch.relu(x), neighbour_table(child))
        logit = cls(x).squeeze(1)
        if keep is None:  # decoding: the k most probable children
            keep = torch.topk(logit, min(int(k), len(logit))).indices
        return child, x, logit, keep

    def decode_features(self, c4, y_hat, k2: int, k1: int, targets=None):
        """Returns the stride-1 coordinates, their TSDF and the occupancy logits and labels
        used by the loss (training passes ``targets`` = (coords at stride 2, stride 1))."""
        keep2 = keep1 = None
        child2, x2, logit2, _ = self._expand(self.up1, self.dec1, self.cls1, c4, y_hat, k2, None)
        labels = []
        if targets is not None:  # train with the true children kept (teacher forcing)
            lab2 = lookup(targets[0], child2) >= 0
            keep2, labels = torch.nonzero(lab2).squeeze(1), [lab2]
        else:
            keep2 = torch.topk(logit2, min(int(k2), len(logit2))).indices
        c2, x2 = child2[keep2], x2[keep2]
        child1, x1, logit1, _ = self._expand(self.up2, self.dec2, self.cls2, c2, x2, k1, None)
        if targets is not None:
            lab1 = lookup(targets[1], child1) >= 0
            keep1 = torch.nonzero(lab1).squeeze(1)
            labels.append(lab1)
        else:
            keep1 = torch.topk(logit1, min(int(k1), len(logit1))).indices
        tsdf = self.head(x1[keep1]).squeeze(1)
        return child1[keep1], tsdf, (logit2, logit1), labels

    # -- training --------------------------------------------------------------------
    def loss(self, sir: SIR) -> tuple[torch.Tensor, dict]:
        coords, tsdf = self._tensors(sir)
        c4, y = self.encode(coords, tsdf)
        y_noisy = y + torch.empty_like(y).uniform_(-0.5, 0.5)
        bits = -torch.log2(self.prior.likelihood(y_noisy)).sum()
        c2_true = torch.unique(torch.div(coords, 2, rounding_mode="floor"), dim=0)
        out_c, out_t, logits, labels = self.decode_features(
            c4, y_noisy, 0, 0, targets=(c2_true, coords)
        )
        idx = lookup(coords, out_c)
        mse = F.mse_loss(out_t, tsdf[idx])
        bce = sum(
            F.binary_cross_entropy_with_logits(lg, lb.float()) for lg, lb in zip(logits, labels)
        )
        bpv = bits / len(coords)
        loss = bpv + self.lmbda * (mse + bce)
        return loss, {"bits": bits.item(), "mse": mse.item(), "bce": float(bce.item())}

    def fit(
        self, sirs: Sequence[SIR], steps: int = 800, lr: float = 1e-3, seed: int = 0
    ) -> SNCCodec:
        """Adam on R + lambda * D, one SIR per step (cycled in a seeded random order)."""
        if isinstance(sirs, SIR) or not isinstance(sirs, Sequence) or not len(sirs):
            raise ValueError("sirs must be a non-empty sequence of SIR")
        for i, s in enumerate(sirs):
            _check_sir(s, f"sirs[{i}]")
        steps = V.check_int(steps, "steps", low=1)
        lr = V.check_scalar(lr, "lr", low=0.0, low_open=True, high=1.0)
        rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        self.history = []
        for step in range(steps):
            sir = sirs[int(rng.integers(len(sirs)))]
            loss, parts = self.loss(sir)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the loss became {loss.item()} at step {step}; lower lr")
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.history.append(parts)
        self.eval()
        return self

    # -- the bitstream ---------------------------------------------------------------
    @torch.no_grad()
    def compress(self, sir: SIR) -> bytes:
        """Header (res, k at stride 2 and 1, latent count, coordinate-stream length) +
        octree-coded stride-4 coordinates + range-coded latent."""
        _check_sir(sir)
        if sir.res % 4:
            raise ValueError(f"sir.res must be divisible by 4, got {sir.res}")
        coords, tsdf = self._tensors(sir)
        c4, y = self.encode(coords, tsdf)
        k2 = len(torch.unique(torch.div(coords, 2, rounding_mode="floor"), dim=0))
        symbols = torch.round(y).to(torch.int64).cpu().numpy()
        coord_bytes = encode_octree(c4.cpu().numpy(), sir.res // 4)
        latent_bytes = encode_latent(self.prior, symbols)
        head = struct.pack("<HIIII", sir.res, k2, len(coords), len(c4), len(coord_bytes))
        return head + coord_bytes + latent_bytes

    @torch.no_grad()
    def decompress_sir(self, data: bytes) -> SIR:
        if not isinstance(data, bytes | bytearray) or len(data) < 18:
            raise ValueError("data must be a bitstream made by SNCCodec.compress")
        res, k2, k1, n4, nc = struct.unpack("<HIIII", data[:18])
        c4 = decode_octree(bytes(data[18 : 18 + nc]))
        if len(c4) != n4:
            raise ValueError("data is corrupt: the coordinate count does not match its header")
        sym = decode_latent(self.prior, bytes(data[18 + nc :]), n4)
        dev = self.device
        y_hat = torch.from_numpy(sym).float().to(dev)
        order = np.lexsort((c4[:, 2], c4[:, 1], c4[:, 0]))  # encoder's latent order is sorted
        c4_t = torch.from_numpy(np.ascontiguousarray(c4[order])).to(dev)
        coords, tsdf, _, _ = self.decode_features(c4_t, y_hat, k2, k1)
        keep = ((coords >= 0) & (coords < res)).all(1)
        tsdf = tsdf.clamp(-1, 1)[keep].cpu().numpy().astype(np.float32)
        return SIR(coords[keep].cpu().numpy(), tsdf, int(res), 0.0)

    def decompress(self, data: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Bitstream -> mesh (vertices in [-1, 1]^3, faces) by sparse marching cubes."""
        sir = self.decompress_sir(data)
        return sparse_marching_cubes(sir.coords, sir.tsdf, sir.res)
