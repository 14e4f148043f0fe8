"""IVPT: prompts built from category-agnostic concept prototypes at several layers.

Before each of the last ``len(n_pro) - 1`` blocks of a frozen ViT, a set of ``n_pro[i]``
prototypes softly claims the patch grid (a softmax over negative squared distances plus a
learned spatial prior), the patch features of each claimed region are pooled, and a learned soft
assignment ``Q_i`` maps the fine prototypes onto the ``N = n_pro[-1] - 1`` final parts; the
``N`` prompts of that block are the Q-weighted mean of the region features, normalised and
projected, so each prompt *is* "the features of part n" and can be drawn as a region. The
aggregated maps ``Q_i^T A_i`` are pulled towards the final part maps by the cross-layer
consistency loss (:mod:`iclr26.vision.ivpt.losses`). Classification pools the final features
over the final parts (PDiscoFormer's head: modulation LayerNorm, one linear classifier per part,
logits averaged over the foreground parts). The last prototype of every level is background.

Follows the paper's Sec. 3 and the official ``IndividualLandmarkViT`` (read for facts): maps
from ``LN(sg(X))``, region features from hard-argmax masks weighted by the detached soft maps,
detached ``Q`` in the prompt pooling but not in the aggregated maps.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images, check_vit, embed_tokens

__all__ = [
    "IVPT",
    "aggregate_maps",
    "prototype_maps",
    "region_features",
]


def prototype_maps(features: torch.Tensor, prototypes: torch.Tensor, bias: torch.Tensor):
    """Soft region maps ``A[j, h, w] = softmax_j(-||x(h, w) - p_j||^2 + b[j, h, w])``.

    ``features`` (B, D, H, W), ``prototypes`` (n, D), ``bias`` (n, H, W) -> (B, n, H, W)."""
    V.check_tensor(features, "features", ndim=4, floating=True)
    V.check_tensor(prototypes, "prototypes", ndim=2, floating=True)
    V.check_tensor(bias, "bias", ndim=3, floating=True)
    if prototypes.shape[1] != features.shape[1]:
        raise ValueError(
            f"prototypes must have {features.shape[1]} columns like features, got "
            f"{prototypes.shape[1]}"
        )
    if bias.shape != (prototypes.shape[0], *features.shape[-2:]):
        raise ValueError(
            f"bias must have shape ({prototypes.shape[0]}, {features.shape[-2]}, "
            f"{features.shape[-1]}), got {tuple(bias.shape)}"
        )
    return _maps(features, prototypes, bias)


def _maps(features: torch.Tensor, prototypes: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    cross = torch.einsum("bchw,nc->bnhw", features, prototypes)
    dist = (
        features.pow(2).sum(1, keepdim=True) - 2 * cross + prototypes.pow(2).sum(1)[:, None, None]
    )
    return torch.softmax(bias - dist, dim=1)


def region_features(maps: torch.Tensor, features: torch.Tensor):
    """Pooled features of each prototype's region: the pixels where prototype j wins the argmax,
    weighted by its soft score. Returns ``(pooled (B, n, D), counts (B, n))``; a region with no
    pixel gets count 0 and pooled features 0 (its divisor is set to 1)."""
    V.check_tensor(maps, "maps", ndim=4, floating=True)
    V.check_tensor(features, "features", ndim=4, floating=True)
    if maps.shape[0] != features.shape[0] or maps.shape[-2:] != features.shape[-2:]:
        raise ValueError(
            f"maps must match features in batch and grid, got {tuple(maps.shape)} and "
            f"{tuple(features.shape)}"
        )
    return _region(maps, features)


def _region(maps: torch.Tensor, features: torch.Tensor):
    n = maps.shape[1]
    hard = F.one_hot(maps.argmax(1), n).permute(0, 3, 1, 2).to(maps.dtype)
    weights = hard * maps  # (B, n, H, W)
    pooled = torch.einsum("bnhw,bdhw->bnd", weights, features)
    counts = weights.sum((2, 3))
    return pooled / (counts + (counts == 0).to(counts.dtype))[..., None], counts


def aggregate_maps(maps: torch.Tensor, assignment: torch.Tensor) -> torch.Tensor:
    """The part maps of a finer level: ``A_hat[n] = sum_j Q[j, n] A[j]`` over the foreground
    prototypes, with the background map ``A[-1]`` appended. ``maps`` (B, n, H, W),
    ``assignment`` (B, n - 1, N) -> (B, N + 1, H, W)."""
    V.check_tensor(maps, "maps", ndim=4, floating=True)
    V.check_tensor(assignment, "assignment", ndim=3, floating=True)
    if assignment.shape[:2] != (maps.shape[0], maps.shape[1] - 1):
        raise ValueError(
            f"assignment must have shape ({maps.shape[0]}, {maps.shape[1] - 1}, N), got "
            f"{tuple(assignment.shape)}"
        )
    return _aggregate(maps, assignment)


def _aggregate(maps: torch.Tensor, assignment: torch.Tensor) -> torch.Tensor:
    parts = torch.einsum("bjn,bjhw->bnhw", assignment, maps[:, :-1])
    return torch.cat([parts, maps[:, -1:]], 1)


def _grid_size(vit) -> tuple[int, int]:
    pe = vit.patch_embed
    grid = getattr(pe, "grid_size", None)
    if grid is None:
        img, patch = getattr(pe, "img_size", None), getattr(pe, "patch_size", None)
        if img is None or patch is None:
            raise TypeError(
                "vit.patch_embed must expose grid_size (or img_size and patch_size) to fix the "
                "patch grid of the spatial priors"
            )
        img = (img, img) if isinstance(img, int) else tuple(img)
        patch = (patch, patch) if isinstance(patch, int) else tuple(patch)
        grid = (img[0] // patch[0], img[1] // patch[1])
    return int(grid[0]), int(grid[1])


def _check_n_pro(n_pro, depth: int, min_levels: int) -> tuple[int, ...]:
    if isinstance(n_pro, str):
        n_pro = tuple(int(v) for v in n_pro.split(","))
    if not isinstance(n_pro, Sequence) or isinstance(n_pro, str):
        raise TypeError(f"n_pro must be a sequence of integers, got {type(n_pro).__name__}")
    n_pro = tuple(V.check_int(v, f"n_pro[{i}]", low=2) for i, v in enumerate(n_pro))
    if len(n_pro) < min_levels:
        raise ValueError(f"n_pro must have at least {min_levels} level(s), got {len(n_pro)}")
    if len(n_pro) - 1 > depth:
        raise ValueError(
            f"n_pro asks for {len(n_pro) - 1} prompted blocks but the backbone has {depth}"
        )
    return n_pro


class _PartModel(nn.Module):
    """Shared machinery of :class:`IVPT` and the part-prototype baseline: frozen backbone,
    per-level prototypes and spatial priors, the final part pooling and the part-wise head."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        n_pro,
        part_dropout: float,
        gumbel_tau: float,
        gumbel_hard: bool,
        gumbel: bool,
        freeze_backbone: bool,
        min_levels: int,
    ):
        super().__init__()
        check_vit(vit, "vit")
        self.num_classes = V.check_int(num_classes, "num_classes", low=2)
        self.n_pro = _check_n_pro(n_pro, len(vit.blocks), min_levels)
        self.part_dropout = V.check_probability(part_dropout, "part_dropout", open_high=True)
        self.gumbel_tau = V.check_scalar(gumbel_tau, "gumbel_tau", low=0.0, low_open=True)
        self.gumbel_hard = V.check_bool(gumbel_hard, "gumbel_hard")
        self.gumbel = V.check_bool(gumbel, "gumbel")
        self.freeze_backbone = V.check_bool(freeze_backbone, "freeze_backbone")
        self.vit = vit
        if self.freeze_backbone:
            for p in vit.parameters():
                p.requires_grad_(False)
        self.embed_dim = d = int(vit.embed_dim)
        self.grid = _grid_size(vit)
        self.num_parts = n = self.n_pro[-1] - 1
        self.n_prompted = len(self.n_pro) - 1
        self.first_prompted = len(vit.blocks) - self.n_prompted
        h, w = self.grid
        self.prototypes = nn.ParameterList(
            nn.Parameter(torch.randn(k, d) * 0.05) for k in self.n_pro
        )
        self.prior_bias = nn.ParameterList(nn.Parameter(torch.zeros(k, h, w)) for k in self.n_pro)
        self.part_classifier = nn.ModuleList(nn.Linear(d, n) for _ in range(self.n_prompted))
        self.prompt_norm = nn.ModuleList(nn.LayerNorm([n, d]) for _ in range(self.n_prompted))
        self.prompt_proj = nn.ModuleList(nn.Linear(d, d) for _ in range(self.n_prompted))
        for layer in self.prompt_proj:
            nn.init.trunc_normal_(layer.weight, std=0.02)
            nn.init.zeros_(layer.bias)
        self.modulation = nn.LayerNorm([d, n + 1])
        self.dropout_parts = nn.Dropout1d(self.part_dropout)
        self.head = nn.Linear(d, self.num_classes, bias=False)
        nn.init.trunc_normal_(self.head.weight, std=0.02)

    # -------------------------------------------------------------- plumbing

    def train(self, mode: bool = True):
        super().train(mode)
        if self.freeze_backbone:
            self.vit.eval()  # a frozen backbone keeps its eval behaviour (dropout, BN)
        return self

    def finer_parameters(self) -> list[nn.Parameter]:
        """The prototypes and spatial priors (the official code's "finer" learning-rate group)."""
        return [*self.prototypes, *self.prior_bias]

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def param_count(self) -> int:
        """Learnable parameters (the frozen backbone excluded)."""
        return sum(p.numel() for p in self.trainable_parameters())

    def _check_x(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, "x", channels=None)
        pe = self.vit.patch_embed
        patch = getattr(pe, "patch_size", None)
        if patch is not None:
            patch = (patch, patch) if isinstance(patch, int) else tuple(patch)
            got = (x.shape[-2] // patch[0], x.shape[-1] // patch[1])
            if got != self.grid or x.shape[-2] % patch[0] or x.shape[-1] % patch[1]:
                raise ValueError(
                    f"x must be {self.grid[0] * patch[0]}x{self.grid[1] * patch[1]} images "
                    f"(the {self.grid[0]}x{self.grid[1]} patch grid the spatial priors were "
                    f"built for), got {x.shape[-2]}x{x.shape[-1]}"
                )
        return x

    def _grid_features(self, tokens: torch.Tensor) -> torch.Tensor:
        """Patch tokens (B, P + HW, D) -> (B, D, H, W)."""
        patches = tokens[:, self.vit.num_prefix_tokens :]
        b, _, d = patches.shape
        return patches.transpose(1, 2).reshape(b, d, *self.grid)

    def _level_maps(self, level: int, features: torch.Tensor) -> torch.Tensor:
        return _maps(features, self.prototypes[level], self.prior_bias[level])

    @torch.no_grad()
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The frozen part of the pass: embeddings and the blocks before the first prompted
        one, (B, P + HW, D). Cache it to train without re-running those blocks."""
        self._check_x(x)
        tokens = embed_tokens(self.vit, x)
        for block in self.vit.blocks[: self.first_prompted]:
            tokens = block(tokens)
        return tokens

    def forward(self, x: torch.Tensor) -> dict:
        """See :meth:`forward_from`; ``x`` are images (B, C, H, W) on the backbone's grid."""
        self._check_x(x)
        if self.freeze_backbone:
            tokens = self.embed(x)
        else:
            tokens = embed_tokens(self.vit, x)
            for block in self.vit.blocks[: self.first_prompted]:
                tokens = block(tokens)
        return self._forward_from(tokens)

    def forward_from(self, tokens: torch.Tensor) -> dict:
        """The trainable part of the pass from :meth:`embed`'s tokens. Returns a dict:
        ``logits`` (B, classes); ``part_features`` (B, D, N + 1), modulated; ``part_maps_final``
        (B, N + 1, H, W); ``part_maps_layers``, the maps of every level (prompted levels
        (B, n_pro[i], H, W), then the final one); ``aggregated_maps`` (B, N + 1, H, W) per
        prompted level; ``assignments`` Q_i (B, n_pro[i] - 1, N); ``prompts`` (B, N, D)."""
        n_tok = self.vit.num_prefix_tokens + self.grid[0] * self.grid[1]
        V.check_tensor(tokens, "tokens", ndim=3, shape=(None, n_tok, self.embed_dim), floating=True)
        return self._forward_from(tokens)

    def _forward_from(self, tokens: torch.Tensor) -> dict:
        n_tok = tokens.shape[1]
        level_maps, aggregated, assignments, prompts_out = [], [], [], []
        for level, block in enumerate(self.vit.blocks[self.first_prompted :]):
            x = tokens[:, :n_tok]  # the previous block's prompts are dropped
            feats = self._grid_features(self.vit.norm(x.detach()))
            maps = self._level_maps(level, feats)
            regions, counts = _region(maps.detach(), feats)
            part_logits = self.part_classifier[level](regions[:, :-1])  # (B, n - 1, N)
            if self.gumbel and self.training:
                q = F.gumbel_softmax(part_logits, tau=self.gumbel_tau, hard=self.gumbel_hard)
            else:
                q = torch.softmax(part_logits, dim=-1)
            q = q.masked_fill((counts[:, :-1] == 0)[..., None], 1.0 / self.num_parts)
            q_sg = q.detach()
            pooled = torch.einsum("bjn,bjd->bnd", q_sg, regions[:, :-1]) / q_sg.sum(1)[..., None]
            prompts = self.prompt_proj[level](self.prompt_norm[level](pooled))
            aggregated.append(_aggregate(maps, q))
            assignments.append(q)
            prompts_out.append(prompts)
            level_maps.append(_renormalise(maps))
            tokens = block(torch.cat([x, prompts], 1))
        x = tokens[:, :n_tok]
        maps = _renormalise(self._level_maps(-1, self._grid_features(self.vit.norm(x.detach()))))
        level_maps.append(maps)
        features = self._grid_features(self.vit.norm(x))
        parts = _region(maps, features)[0].transpose(1, 2)  # (B, D, N + 1)
        parts = self.modulation(parts)
        foreground = parts[..., :-1].transpose(1, 2)  # (B, N, D)
        if self.training and self.part_dropout > 0:
            foreground = self.dropout_parts(foreground)  # drops whole parts
        logits = self.head(foreground).mean(1)
        return {
            "logits": logits,
            "part_features": parts,
            "part_maps_final": maps,
            "part_maps_layers": level_maps,
            "aggregated_maps": aggregated,
            "assignments": assignments,
            "prompts": prompts_out,
        }

    @torch.no_grad()
    def explain(self, x: torch.Tensor) -> dict:
        """What each prompt means for images ``x`` (eval mode, no Gumbel noise): per prompted
        layer, ``prompt_regions`` (B, N, H, W) (the aggregated map of prompt n),
        ``prototype_regions`` (B, n_pro[i], H, W), ``region_ids`` (B, H, W) (argmax over the
        prototypes) and ``assignment`` (B, n_pro[i] - 1, N) (prototype -> part); and the final
        ``part_maps`` (B, N + 1, H, W) with ``part_ids`` (B, H, W)."""
        was_training = self.training
        self.eval()
        try:
            out = self.forward(x)
        finally:
            self.train(was_training)
        layers = []
        for i in range(self.n_prompted):
            maps = out["part_maps_layers"][i]
            layers.append(
                {
                    "block": self.first_prompted + i,
                    "prompt_regions": out["aggregated_maps"][i][:, :-1],
                    "prototype_regions": maps,
                    "region_ids": maps.argmax(1),
                    "assignment": out["assignments"][i],
                }
            )
        final = out["part_maps_final"]
        return {"layers": layers, "part_maps": final, "part_ids": final.argmax(1)}


def _renormalise(maps: torch.Tensor) -> torch.Tensor:
    maps = maps + 1e-6
    return maps / maps.sum(1, keepdim=True)


class IVPT(_PartModel):
    """Interpretable visual prompt tuning on any timm-protocol ViT ``vit``.

    ``n_pro``: prototypes per level, finest first, the last level the final parts (its last
    prototype is background); ``len(n_pro) - 1`` last blocks are prompted with
    ``N = n_pro[-1] - 1`` prompts each. ``part_dropout`` drops whole part features before the
    head in training; ``gumbel`` samples the prototype -> part assignment with Gumbel-softmax
    (temperature ``gumbel_tau``, straight-through when ``gumbel_hard``) in training, softmax in
    eval. The backbone is frozen in place when ``freeze_backbone``."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        n_pro=(17, 14, 11, 8, 5),
        part_dropout: float = 0.3,
        gumbel_tau: float = 1.0,
        gumbel_hard: bool = False,
        gumbel: bool = True,
        freeze_backbone: bool = True,
    ):
        super().__init__(
            vit, num_classes, n_pro, part_dropout, gumbel_tau, gumbel_hard, gumbel,
            freeze_backbone, min_levels=2,
        )  # fmt: skip
