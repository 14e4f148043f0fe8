"""The FlexRibbon hierarchy scaled down: a pre-LN RoPE transformer over residue tokens (the
sequence module) feeding a residue-level structure DiT (adaLN on the per-residue noise level
c_noise = ¼ ln σ, attention biased by RBF features of the noisy Cα distances), with EDM
preconditioning D(X̃, σ) = c_skip X̃ + c_out F(c_in X̃, c_noise) and an amino-acid head read after
the structure module, so structure informs the recovered residues. ``arch="egnn"`` swaps the
DiT for an E(n)-equivariant graph network (Satorras et al. 2021) on a k-nearest-neighbour residue
graph, an ablation that is not in the paper. Coordinates are in 10 Å units inside the model; the
public methods take and return Å."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.generative.flexprotein.data import MASK, VOCAB, encode_sequence

UNIT = 10.0  # Å per model unit
SIGMA_MIN_COND = 1e-3  # floor of σ in c_noise for clean (σ = 0) residues


def edm_scalings(sigma: torch.Tensor, sigma_data: float):
    """EDM's c_skip, c_out, c_in (σ = 0 gives c_skip = 1, c_out = 0: the input is returned)."""
    V.check_tensor(sigma, "sigma", floating=True, low=0.0)
    sigma_data = V.check_scalar(sigma_data, "sigma_data", low=0.0, low_open=True)
    s2, d2 = sigma**2, sigma_data**2
    return d2 / (s2 + d2), sigma * sigma_data / (s2 + d2).sqrt(), 1.0 / (s2 + d2).sqrt()


def _rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on ``(B, H, N, Dh)`` (Dh even)."""
    n, dh = x.shape[-2], x.shape[-1]
    freqs = 1.0 / (10000 ** (torch.arange(0, dh, 2, device=x.device, dtype=x.dtype) / dh))
    ang = torch.arange(n, device=x.device, dtype=x.dtype)[:, None] * freqs[None]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int, rope: bool) -> None:
        super().__init__()
        self.heads, self.rope = heads, rope
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = _rope(q), _rope(k)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class _Block(nn.Module):
    """Pre-LN transformer block with RoPE (the sequence module)."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = _Attention(d, heads, rope=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class _DiTBlock(nn.Module):
    """DiT block: adaLN-Zero modulation from the per-residue noise embedding, pair-biased attention."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d, elementwise_affine=False)
        self.ln2 = nn.LayerNorm(d, elementwise_affine=False)
        self.attn = _Attention(d, heads, rope=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ada = nn.Linear(d, 6 * d)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)

    def forward(self, x, cond, bias):
        s1, b1, g1, s2, b2, g2 = self.ada(cond).chunk(6, dim=-1)
        x = x + g1 * self.attn(self.ln1(x) * (1 + s1) + b1, bias)
        return x + g2 * self.mlp(self.ln2(x) * (1 + s2) + b2)


def rbf_pair_features(x: torch.Tensor, n_rbf: int = 16, max_dist: float = 2.0) -> torch.Tensor:
    """Gaussian RBFs of Cα distances ``(B, N, N, n_rbf)`` (distances in model units); a function
    of distances only, so invariant under rotation and translation."""
    V.check_tensor(x, "x", ndim=3, floating=True)
    if x.shape[-1] != 3:
        raise ValueError(f"x must have shape (B, N, 3), got {tuple(x.shape)}")
    n_rbf = V.check_int(n_rbf, "n_rbf", low=2)
    max_dist = V.check_scalar(max_dist, "max_dist", low=0.0, low_open=True)
    dist = torch.cdist(x, x)
    centres = torch.linspace(0.0, max_dist, n_rbf, device=x.device, dtype=x.dtype)
    width = max_dist / (n_rbf - 1)
    return torch.exp(-(((dist[..., None] - centres) / width) ** 2))


class _EGNNLayer(nn.Module):
    """One E(n)-equivariant layer: m_ij = φ_e(h_i, h_j, ‖x_i − x_j‖²),
    x_i += (1/k) Σ_j (x_i − x_j) φ_x(m_ij), h_i += φ_h(h_i, Σ_j m_ij), over each residue's
    neighbours ``nbr`` ``(B, N, k)``."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.phi_e = nn.Sequential(nn.Linear(2 * d + 1, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU())
        self.phi_x = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1, bias=False))
        nn.init.xavier_uniform_(self.phi_x[-1].weight, gain=1e-3)  # small first coordinate steps
        self.phi_h = nn.Sequential(nn.Linear(2 * d, d), nn.SiLU(), nn.Linear(d, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, h: torch.Tensor, x: torch.Tensor, nbr: torch.Tensor):
        b, n, k = nbr.shape
        flat = nbr.reshape(b, n * k, 1)
        h_j = torch.gather(h, 1, flat.expand(-1, -1, h.shape[-1])).view(b, n, k, -1)
        x_j = torch.gather(x, 1, flat.expand(-1, -1, 3)).view(b, n, k, 3)
        diff = x[:, :, None] - x_j
        d2 = (diff**2).sum(-1, keepdim=True)
        m = self.phi_e(torch.cat([h[:, :, None].expand(-1, -1, k, -1), h_j, d2], dim=-1))
        x = x + (diff * self.phi_x(m)).mean(2)
        h = h + self.phi_h(torch.cat([self.norm(h), m.sum(2)], dim=-1))
        return h, x


def knn_graph(x: torch.Tensor, k: int) -> torch.Tensor:
    """Indices ``(B, N, min(k, N - 1))`` of each residue's nearest other residues by Cα distance
    (a function of distances only, so unchanged by rotation, reflection and translation, and
    permuted with the residues)."""
    V.check_tensor(x, "x", ndim=3, floating=True)
    if x.shape[-1] != 3 or x.shape[1] < 2:
        raise ValueError(f"x must have shape (B, N >= 2, 3), got {tuple(x.shape)}")
    k = min(V.check_int(k, "k", low=1), x.shape[1] - 1)
    dist = torch.cdist(x, x) + torch.eye(x.shape[1], device=x.device, dtype=x.dtype) * 1e9
    return dist.topk(k, dim=-1, largest=False).indices


class EGNNStructure(nn.Module):
    """The ``arch="egnn"`` structure module: ``blocks`` E(n)-equivariant layers on the kNN graph
    of the input coordinates. ``forward(h, x)`` maps node features ``(B, N, d)`` and coordinates
    ``(B, N, 3)`` to updated ``(h, x)``: ``h`` invariant and ``x`` equivariant under rotations,
    reflections and translations of ``x``, and both permuted with the residues."""

    def __init__(self, d: int, blocks: int, k: int) -> None:
        super().__init__()
        self.k = V.check_int(k, "k_neighbors", low=1)
        d = V.check_int(d, "d", low=1)
        self.layers = nn.ModuleList(
            _EGNNLayer(d) for _ in range(V.check_int(blocks, "blocks", low=1))
        )

    def forward(self, h: torch.Tensor, x: torch.Tensor):
        V.check_tensor(h, "h", ndim=3, floating=True)
        V.check_tensor(x, "x", shape=(h.shape[0], h.shape[1], 3), floating=True)
        nbr = knn_graph(x, self.k)
        for layer in self.layers:
            h, x = layer(h, x, nbr)
        return h, x


def _as_tokens(seqs) -> torch.Tensor:
    if isinstance(seqs, str):
        seqs = [seqs]
    if isinstance(seqs, (list, tuple)) and seqs and isinstance(seqs[0], str):
        toks = [encode_sequence(s) for s in seqs]
        if len({len(t) for t in toks}) != 1:
            raise ValueError("seqs must all have the same length (call once per length)")
        arr = np.stack(toks)
    else:
        arr = V.check_array(seqs, "seqs", ndim=2, dtype=None)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"seqs must be strings or integer tokens, got dtype {arr.dtype}")
        if arr.min() < 0 or arr.max() >= VOCAB:
            raise ValueError(
                f"seqs tokens must be in [0, {VOCAB - 1}], got {arr.min()}..{arr.max()}"
            )
    return torch.as_tensor(arr, dtype=torch.long)


class FlexProteinModel(nn.Module):
    """Sequence module (``layers`` RoPE blocks) -> structure DiT (``dit_blocks``) -> heads.

    ``forward(tokens, x_noisy, sigma)``: tokens ``(B, N)`` (0..21, 21 = MASK), noisy Cα
    coordinates ``(B, N, 3)`` in model units, per-residue noise ``sigma`` ``(B, N)`` (0 = clean).
    Returns the denoised coordinates ``(B, N, 3)``, amino-acid logits ``(B, N, 20)`` and the
    sequence representation ``h`` ``(B, N, d)``. ``pair_bias`` adds the RBF distance bias to the
    DiT's attention (R: the notes do not state it). ``fold`` and ``design`` sample with EDM's
    Heun sampler on the noise levels (σ_max^(1/ρ) + i/(n−1)·(σ_min^(1/ρ) − σ_max^(1/ρ)))^ρ, then 0,
    with ``rho`` and ``sigma_min`` (EDM's defaults 7 and 0.002; the sampler is R). Each residue
    is conditioned on its own σ through c_noise = ¼ ln max(σ, ``cond_floor``), so clean
    residues (σ = 0) get the floor's embedding (R).

    ``arch="egnn"`` (ablation, not in the paper) replaces the DiT by :class:`EGNNStructure`
    (``dit_blocks`` layers on the ``k_neighbors``-nearest-neighbour graph of the noisy Cα); its
    nodes start from h_i plus the noise embedding (no coordinate embedding, so they are
    invariant), it runs in the frame centred on the input's centroid μ, and the denoiser is
    D = μ + c_skip (X̃ − μ) + c_out x_out with x_out its equivariant output coordinates (input
    c_in (X̃ − μ)). The whole model is then exactly E(3)-equivariant in the coordinates (logits
    invariant); the same heads, losses and trainer apply."""

    def __init__(
        self,
        d: int = 128,
        layers: int = 4,
        *,
        heads: int = 4,
        dit_blocks: int = 2,
        sigma_data: float = 1.0,
        sigma_max: float = 8.0,
        pair_bias: bool = True,
        n_rbf: int = 16,
        arch: str = "dit",
        k_neighbors: int = 16,
        rho: float = 7.0,
        sigma_min: float = 0.002,
        cond_floor: float = SIGMA_MIN_COND,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.d = V.check_int(d, "d", low=8)
        self.layers = V.check_int(layers, "layers", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        if self.d % self.heads or (self.d // self.heads) % 2:
            raise ValueError(f"d must be a multiple of 2 * heads, got d={d}, heads={heads}")
        self.dit_blocks = V.check_int(dit_blocks, "dit_blocks", low=1)
        self.sigma_data = V.check_scalar(sigma_data, "sigma_data", low=0.0, low_open=True)
        self.sigma_max = V.check_scalar(sigma_max, "sigma_max", low=0.0, low_open=True)
        self.pair_bias = V.check_bool(pair_bias, "pair_bias")
        self.n_rbf = V.check_int(n_rbf, "n_rbf", low=2)
        self.arch = V.check_choice(arch, "arch", ("dit", "egnn"))
        self.k_neighbors = V.check_int(k_neighbors, "k_neighbors", low=1)
        self.rho = V.check_scalar(rho, "rho", low=0.0, low_open=True)
        self.sigma_min = V.check_scalar(sigma_min, "sigma_min", low=0.0, low_open=True)
        if self.sigma_min >= self.sigma_max:
            raise ValueError(f"sigma_min must be below sigma_max={self.sigma_max}, got {sigma_min}")
        self.cond_floor = V.check_scalar(cond_floor, "cond_floor", low=0.0, low_open=True)
        self.config = dict(
            d=self.d, layers=self.layers, heads=self.heads, dit_blocks=self.dit_blocks,
            sigma_data=self.sigma_data, sigma_max=self.sigma_max, pair_bias=self.pair_bias,
            n_rbf=self.n_rbf, arch=self.arch, k_neighbors=self.k_neighbors, rho=self.rho,
            sigma_min=self.sigma_min, cond_floor=self.cond_floor,
        )  # fmt: skip
        torch.manual_seed(V.check_int(seed, "seed", low=0))
        self.embed_tokens = nn.Embedding(VOCAB, self.d)
        self.seq_blocks = nn.ModuleList(_Block(self.d, self.heads) for _ in range(self.layers))
        self.seq_norm = nn.LayerNorm(self.d)
        if self.arch == "dit":  # creation order kept as before the EGNN option (same seeded init)
            self.coord_in = nn.Linear(3, self.d)
        self.noise_embed = nn.Sequential(nn.Linear(1, self.d), nn.SiLU(), nn.Linear(self.d, self.d))
        if self.arch == "dit":
            self.rbf_to_bias = nn.Linear(self.n_rbf, self.heads) if self.pair_bias else None
            self.dit = nn.ModuleList(_DiTBlock(self.d, self.heads) for _ in range(self.dit_blocks))
        else:
            self.egnn = EGNNStructure(self.d, self.dit_blocks, self.k_neighbors)
        self.out_norm = nn.LayerNorm(self.d)
        if self.arch == "dit":  # the EGNN outputs coordinates itself
            self.coord_out = nn.Linear(self.d, 3)
        self.aa_head = nn.Linear(self.d, 20)

    # ------------------------------------------------------------------ core
    def sequence_features(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed_tokens(tokens)
        for blk in self.seq_blocks:
            h = blk(h)
        return self.seq_norm(h)

    def forward(self, tokens: torch.Tensor, x_noisy: torch.Tensor, sigma: torch.Tensor):
        V.check_tensor(tokens, "tokens", ndim=2, integer=True, low=0, high=VOCAB - 1)
        b, n = tokens.shape
        V.check_tensor(x_noisy, "x_noisy", shape=(b, n, 3), floating=True)
        V.check_tensor(sigma, "sigma", shape=(b, n), floating=True, low=0.0)
        h = self.sequence_features(tokens)
        c_skip, c_out, c_in = (s[..., None] for s in edm_scalings(sigma, self.sigma_data))
        c_noise = 0.25 * torch.log(sigma.clamp_min(self.cond_floor))[..., None]
        cond = self.noise_embed(c_noise)
        if self.arch == "egnn":
            mu = x_noisy.mean(1, keepdim=True)
            t, x_out = self.egnn(h + cond, c_in * (x_noisy - mu))
            t = self.out_norm(t)
            denoised = mu + c_skip * (x_noisy - mu) + c_out * x_out
            return denoised, self.aa_head(t), h
        x_in = c_in * x_noisy
        t = h + self.coord_in(x_in)
        bias = None
        if self.rbf_to_bias is not None:
            bias = self.rbf_to_bias(rbf_pair_features(x_in, self.n_rbf)).permute(0, 3, 1, 2)
        for blk in self.dit:
            t = blk(t, cond, bias)
        t = self.out_norm(t)
        denoised = c_skip * x_noisy + c_out * self.coord_out(t)
        return denoised, self.aa_head(t), h

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def embed(self, seqs, batch_size: int = 256) -> np.ndarray:
        """Mean-pooled sequence-module features ``(B, d)`` of sequences alone (no structure)."""
        tokens = _as_tokens(seqs)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        dev = next(self.parameters()).device
        self.eval()
        out = [
            self.sequence_features(tokens[i : i + batch_size].to(dev)).mean(1).cpu()
            for i in range(0, len(tokens), batch_size)
        ]
        return torch.cat(out).numpy()

    def _schedule(self, steps: int) -> torch.Tensor:
        rho, sigma_min = self.rho, self.sigma_min
        i = torch.arange(steps, dtype=torch.float64)
        s = (
            self.sigma_max ** (1 / rho)
            + i / max(steps - 1, 1) * (sigma_min ** (1 / rho) - self.sigma_max ** (1 / rho))
        ) ** rho
        return torch.cat([s, torch.zeros(1, dtype=torch.float64)]).float()

    @torch.no_grad()
    def _sample(self, tokens, x_ctx, region, steps: int, generator):
        """EDM Heun sampler; only ``region`` residues are diffused (the rest stay clean at σ=0).
        Returns final coordinates (model units) and the last logits."""
        dev = next(self.parameters()).device
        tokens, region = tokens.to(dev), region.to(dev)
        sched = self._schedule(steps).to(dev)
        noise = torch.randn(x_ctx.shape, generator=generator).to(dev)
        x = torch.where(region[..., None], noise * sched[0], x_ctx.to(dev))
        logits = None
        for k in range(steps):
            s_cur, s_next = sched[k], sched[k + 1]
            sig = region.float() * s_cur
            den, logits, _ = self(tokens, x, sig)
            d_cur = torch.where(region[..., None], (x - den) / s_cur, 0.0)
            x_next = x + (s_next - s_cur) * d_cur
            if s_next > 0:
                den2, logits, _ = self(tokens, x_next, region.float() * s_next)
                d_next = torch.where(region[..., None], (x_next - den2) / s_next, 0.0)
                x_next = x + (s_next - s_cur) * 0.5 * (d_cur + d_next)
            x = x_next
        return x, logits

    def fold(self, seqs, steps: int = 20, seed: int = 0) -> np.ndarray:
        """Cα coordinates ``(B, N, 3)`` in Å by reverse diffusion from σ_max, conditioned on the
        clean sequence (the Mode 1 situation); EDM Heun with ``steps`` noise levels."""
        tokens = _as_tokens(seqs)
        steps = V.check_int(steps, "steps", low=1)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        self.eval()
        region = torch.ones(tokens.shape, dtype=torch.bool)
        x, _ = self._sample(tokens, torch.zeros(*tokens.shape, 3), region, steps, gen)
        return x.cpu().numpy().astype(np.float64) * UNIT

    def design(self, seqs, structs, region, steps: int = 20, seed: int = 0) -> np.ndarray:
        """Co-design of a masked segment (the paper's CDR setting): ``region`` ``(B, N)`` residues
        are masked, their coordinates start from σ_max noise and are diffused jointly with the
        clean context (sequence and Å coordinates ``structs`` ``(B, N, 3)``); returns designed
        tokens ``(B, N)`` (context tokens unchanged)."""
        tokens = _as_tokens(seqs)
        b, n = tokens.shape
        xyz = V.check_array(structs, "structs", shape=(b, n, 3), dtype=np.float32)
        reg = V.check_array(region, "region", shape=(b, n), dtype=None)
        if reg.dtype != bool:
            raise TypeError(f"region must be a boolean mask, got dtype {reg.dtype}")
        if not reg.any(axis=1).all():
            raise ValueError("region must select at least one residue per chain")
        steps = V.check_int(steps, "steps", low=1)
        gen = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        self.eval()
        reg_t = torch.as_tensor(reg)
        masked = torch.where(reg_t, torch.full_like(tokens, MASK), tokens)
        x_ctx = torch.as_tensor(xyz - xyz.mean(1, keepdims=True)) / UNIT
        _, logits = self._sample(masked, x_ctx, reg_t, steps, gen)
        pred = logits.argmax(-1).cpu()
        return torch.where(reg_t, pred, tokens).numpy()

    # ------------------------------------------------------------------ io
    def save(self, path) -> Path:
        path = Path(path)
        torch.save({"config": self.config, "state": self.state_dict()}, path)
        return path

    @classmethod
    def from_pretrained(cls, path) -> FlexProteinModel:
        """Load a checkpoint written by :meth:`save` (official weights are not released)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: no such file {path}")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        model = cls(**blob["config"])
        model.load_state_dict(blob["state"])
        return model

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def count_forward_flops(model: FlexProteinModel, length: int) -> float:
    """Approximate multiply-add FLOPs of one forward pass of one chain (matmuls only)."""
    d, n = model.d, length
    per_block = 2 * n * (3 * d * d + d * d + 8 * d * d) + 2 * 2 * n * n * d
    if model.arch == "egnn":  # per edge φ_e (2d+1→d→d) and φ_x (d→d→1); per node φ_h (2d→d→d)
        k = min(model.k_neighbors, n - 1)
        egnn = 2 * n * k * ((2 * d + 1) * d + 2 * d * d + d) + 2 * n * 3 * d * d
        return float(model.layers * per_block + model.dit_blocks * egnn + 2 * n * d * 21)
    dit = (
        per_block
        + 2 * n * 6 * d * d
        + (2 * n * n * model.n_rbf * model.heads if model.pair_bias else 0)
    )
    return float(model.layers * per_block + model.dit_blocks * dit + 2 * n * d * 23)
