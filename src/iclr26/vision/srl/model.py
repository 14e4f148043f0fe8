"""The video slot model that SRL builds on (the SlotContrast recipe).

A frozen backbone gives patch features F_t (N x D) per frame; a trainable two-layer MLP maps
them to X_t (N x d_s); Slot Attention groups X_t into K slots (more iterations on the first
frame), and a one-block transformer predicts the next frame's initial slots from the current
ones. An MLP broadcast decoder turns every (slot, patch) pair into a feature vector and an
alpha logit; the softmax over slots of the alpha logits gives the decoder masks M_t and the
reconstruction F^_t = sum_k M_t[k] * feat_k. The encoder masks A_t are the slot-attention
weights (a softmax over slots per patch). With ``srl_heads=True`` the model also carries the
two projectors of SRL: P1 (D -> d_s) on the reconstruction and on the stop-gradient backbone
features, P2 (d_s -> d_s) on X_t.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import PROTOCOL_ATTRS, forward_tokens

__all__ = ["MLPDecoder", "SlotAttention", "SlotVideoModel", "backbone_tokens"]


def _mlp(
    inp: int, out: int, hidden: tuple[int, ...], initial_layer_norm: bool = False
) -> nn.Sequential:
    layers: list[nn.Module] = [nn.LayerNorm(inp)] if initial_layer_norm else []
    dims = (inp, *hidden)
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(dims[-1], out))
    return nn.Sequential(*layers)


def _is_vit(module: nn.Module) -> bool:
    return all(hasattr(module, a) for a in PROTOCOL_ATTRS) and hasattr(module, "blocks")


def backbone_tokens(backbone: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Patch features (B, N, D) of ``images`` (B, 3, H, W). A ViT on the timm attribute
    protocol gives the output of its last block without the final norm (the official code
    reconstructs ``vit_block12``); any other module may return (B, N, D) tokens or a
    (B, D, h, w) map."""
    V.check_tensor(images, "images", ndim=4, floating=True)
    if _is_vit(backbone):
        tokens = forward_tokens(backbone, images, norm=False)
        return tokens[:, backbone.num_prefix_tokens :]
    out = backbone(images)
    if not isinstance(out, torch.Tensor) or out.dim() not in (3, 4):
        raise TypeError(
            "backbone must return (B, N, D) tokens or a (B, D, h, w) map, got "
            f"{getattr(out, 'shape', type(out).__name__)}"
        )
    return out.flatten(2).transpose(1, 2) if out.dim() == 4 else out


class SlotAttention(nn.Module):
    """Slot Attention with a GRU update and a residual MLP.

    ``forward(slots, inputs, n_iters)`` returns the updated slots (B, K, d_s), the attention
    of the last iteration as a softmax over slots per input (``masks``, (B, K, N)), and the
    softmax over inputs per slot averaged over the iterations (``attn_patches``, used by the
    slot-redundancy regularizer)."""

    def __init__(self, inp_dim: int, slot_dim: int, n_iters: int = 2, eps: float = 1e-8):
        super().__init__()
        self.inp_dim = V.check_int(inp_dim, "inp_dim", low=1)
        self.slot_dim = V.check_int(slot_dim, "slot_dim", low=1)
        self.n_iters = V.check_int(n_iters, "n_iters", low=1)
        self.eps = V.check_scalar(eps, "eps", low=0.0, low_open=True, high=1e-2)
        self.to_q = nn.Linear(slot_dim, slot_dim, bias=False)
        self.to_k = nn.Linear(inp_dim, slot_dim, bias=False)
        self.to_v = nn.Linear(inp_dim, slot_dim, bias=False)
        self.gru = nn.GRUCell(slot_dim, slot_dim)
        self.mlp = _mlp(slot_dim, slot_dim, (4 * slot_dim,), initial_layer_norm=True)
        self.norm_inputs = nn.LayerNorm(inp_dim)
        self.norm_slots = nn.LayerNorm(slot_dim)
        self.scale = slot_dim**-0.5

    def forward(
        self, slots: torch.Tensor, inputs: torch.Tensor, n_iters: int | None = None
    ) -> dict[str, torch.Tensor]:
        V.check_tensor(slots, "slots", ndim=3, floating=True)
        V.check_tensor(inputs, "inputs", ndim=3, floating=True)
        if slots.shape[-1] != self.slot_dim:
            raise ValueError(f"slots must have {self.slot_dim} channels, got {slots.shape[-1]}")
        if inputs.shape[-1] != self.inp_dim:
            raise ValueError(f"inputs must have {self.inp_dim} channels, got {inputs.shape[-1]}")
        if inputs.shape[0] != slots.shape[0]:
            raise ValueError("inputs and slots must have the same batch size")
        n_iters = self.n_iters if n_iters is None else V.check_int(n_iters, "n_iters", low=1)
        inputs = self.norm_inputs(inputs)
        keys, values = self.to_k(inputs), self.to_v(inputs)
        attn_patches = torch.zeros(())
        for _ in range(n_iters):
            queries = self.to_q(self.norm_slots(slots))
            dots = torch.einsum("bkd,bnd->bkn", queries, keys) * self.scale
            masks = dots.softmax(dim=1)  # competition of the slots for every input
            attn_patches = attn_patches + dots.softmax(dim=-1)
            weights = masks + self.eps
            weights = weights / weights.sum(-1, keepdim=True)  # weighted mean over inputs
            updates = torch.einsum("bkn,bnd->bkd", weights, values)
            b, k, d = slots.shape
            slots = self.gru(updates.reshape(b * k, d), slots.reshape(b * k, d)).reshape(b, k, d)
            slots = slots + self.mlp(slots)
        return {"slots": slots, "masks": masks, "attn_patches": attn_patches / n_iters}


class MLPDecoder(nn.Module):
    """Broadcast MLP decoder: every slot plus a learned position embedding per patch goes
    through one MLP to ``out_dim`` features and an alpha logit; the alpha softmax over slots
    gives the masks and the mask-weighted sum the reconstruction."""

    def __init__(self, slot_dim: int, out_dim: int, hidden: tuple[int, ...], n_patches: int):
        super().__init__()
        self.slot_dim = V.check_int(slot_dim, "slot_dim", low=1)
        self.out_dim = V.check_int(out_dim, "out_dim", low=1)
        self.n_patches = V.check_int(n_patches, "n_patches", low=1)
        hidden = tuple(V.check_int(h, "decoder_hidden", low=1) for h in hidden)
        self.mlp = _mlp(slot_dim, out_dim + 1, hidden)
        self.pos_emb = nn.Parameter(torch.randn(1, 1, n_patches, slot_dim) * slot_dim**-0.5)

    def forward(self, slots: torch.Tensor) -> dict[str, torch.Tensor]:
        """``slots`` (..., K, d_s) -> ``recon`` (..., N, out_dim), ``masks`` (..., K, N)."""
        V.check_tensor(slots, "slots", min_ndim=2, floating=True)
        lead, (k, d) = slots.shape[:-2], slots.shape[-2:]
        flat = slots.reshape(-1, k, 1, d) + self.pos_emb
        feats, alpha = self.mlp(flat).split((self.out_dim, 1), dim=-1)
        masks = alpha.softmax(dim=1)
        recon = (feats * masks).sum(1)
        return {
            "recon": recon.reshape(*lead, self.n_patches, self.out_dim),
            "masks": masks.squeeze(-1).reshape(*lead, k, self.n_patches),
            "slot_feats": feats.reshape(*lead, k, self.n_patches, self.out_dim),
        }


class SlotVideoModel(nn.Module):
    """Slot Attention over a frozen backbone with a recurrent slot predictor and an MLP
    decoder (SlotContrast), with SRL's projectors when ``srl_heads``.

    ``forward(video)`` takes videos (B, T, 3, H, W) with T >= 2 and returns a dict with
    ``feats`` (B, T, N, D, frozen), ``x`` (the output transform, (B, T, N, d_s)), ``slots``
    (B, T, K, d_s), ``enc_masks`` and ``enc_attn_patches`` (B, T, K, N), ``dec_masks``
    (B, T, K, N), ``recon`` (B, T, N, D) and, with ``srl_heads``, ``proj_recon`` = P1(recon),
    ``proj_feats`` = sg(P1(feats)) and ``proj_x`` = P2(x). ``forward_features`` does the same
    from precomputed backbone features (B, T, N, D). ``segment(video, size)`` gives hard
    decoder masks at pixel resolution."""

    def __init__(
        self,
        backbone: nn.Module,
        feat_dim: int,
        n_slots: int = 11,
        slot_dim: int = 64,
        n_iters: int = 2,
        first_iters: int = 3,
        decoder_hidden: tuple[int, ...] = (1024, 1024, 1024),
        n_patches: int | None = None,
        predictor_heads: int = 4,
        srl_heads: bool = True,
    ):
        super().__init__()
        if not isinstance(backbone, nn.Module):
            raise TypeError(f"backbone must be an nn.Module, got {type(backbone).__name__}")
        self.feat_dim = V.check_int(feat_dim, "feat_dim", low=1)
        self.n_slots = V.check_int(n_slots, "n_slots", low=1)
        self.slot_dim = V.check_int(slot_dim, "slot_dim", low=1)
        self.n_iters = V.check_int(n_iters, "n_iters", low=1)
        self.first_iters = V.check_int(first_iters, "first_iters", low=1)
        self.predictor_heads = V.check_int(predictor_heads, "predictor_heads", low=1)
        if slot_dim % predictor_heads:
            raise ValueError(
                f"slot_dim ({slot_dim}) must be divisible by predictor_heads ({predictor_heads})"
            )
        if not isinstance(decoder_hidden, tuple | list) or not decoder_hidden:
            raise TypeError(f"decoder_hidden must be a non-empty tuple, got {decoder_hidden!r}")
        self.srl_heads = V.check_bool(srl_heads, "srl_heads")
        if n_patches is None:
            n_patches = getattr(getattr(backbone, "patch_embed", None), "num_patches", None)
            if n_patches is None:
                raise ValueError("n_patches must be given for a backbone without patch_embed")
        self.n_patches = V.check_int(n_patches, "n_patches", low=1)
        self.backbone = backbone
        for p in backbone.parameters():
            p.requires_grad_(False)
        self.output_transform = _mlp(feat_dim, slot_dim, (2 * feat_dim,), initial_layer_norm=True)
        self.slots_init = nn.Parameter(torch.randn(1, n_slots, slot_dim) * slot_dim**-0.5)
        self.grouper = SlotAttention(slot_dim, slot_dim, n_iters)
        self.predictor = nn.TransformerEncoderLayer(
            slot_dim, predictor_heads, 4 * slot_dim, dropout=0.0, batch_first=True,
            norm_first=True,
        )  # fmt: skip
        self.decoder = MLPDecoder(slot_dim, feat_dim, tuple(decoder_hidden), self.n_patches)
        # created last, so that a base model and an SRL model with the same seed share weights
        if self.srl_heads:
            self.proj_dec = nn.Linear(feat_dim, slot_dim, bias=False)  # P1
            self.proj_enc = nn.Linear(slot_dim, slot_dim, bias=False)  # P2

    def train(self, mode: bool = True) -> SlotVideoModel:
        super().train(mode)
        self.backbone.eval()  # frozen: no dropout or statistics updates
        return self

    def _check_video(self, video) -> torch.Tensor:
        V.check_tensor(video, "video", ndim=5, floating=True)
        if video.shape[1] < 2:
            raise ValueError(
                f"video must have at least 2 frames (B, T, 3, H, W), got T = {video.shape[1]}: "
                "the slot predictor and the temporal slot contrast need consecutive frames"
            )
        if video.shape[2] != 3:
            raise ValueError(f"video must have 3 channels (B, T, 3, H, W), got {video.shape[2]}")
        return video

    @torch.no_grad()
    def extract(self, video: torch.Tensor, chunk: int = 256) -> torch.Tensor:
        """Frozen backbone features (B, T, N, D) of ``video`` (B, T, 3, H, W)."""
        video = self._check_video(video)
        chunk = V.check_int(chunk, "chunk", low=1)
        b, t = video.shape[:2]
        frames = video.reshape(b * t, *video.shape[2:])
        was = self.backbone.training
        self.backbone.eval()
        feats = torch.cat([backbone_tokens(self.backbone, frames[i : i + chunk])
                           for i in range(0, len(frames), chunk)])  # fmt: skip
        self.backbone.train(was)
        if feats.shape[1:] != (self.n_patches, self.feat_dim):
            raise ValueError(
                f"backbone gives {tuple(feats.shape[1:])} features per frame; the model was "
                f"built for (n_patches, feat_dim) = ({self.n_patches}, {self.feat_dim})"
            )
        return feats.reshape(b, t, self.n_patches, self.feat_dim)

    def forward(self, video: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.forward_features(self.extract(video))

    def forward_features(self, feats: torch.Tensor) -> dict[str, torch.Tensor]:
        """The model's outputs from backbone features (B, T, N, D)."""
        V.check_tensor(feats, "feats", ndim=4, floating=True)
        if feats.shape[1] < 2:
            raise ValueError(f"feats must have at least 2 frames, got T = {feats.shape[1]}")
        if feats.shape[2:] != (self.n_patches, self.feat_dim):
            raise ValueError(
                f"feats must be (B, T, {self.n_patches}, {self.feat_dim}), got {tuple(feats.shape)}"
            )
        feats = feats.detach()
        b, t = feats.shape[:2]
        x = self.output_transform(feats)
        state = self.slots_init.expand(b, -1, -1)
        slots, enc_masks, attn_patches = [], [], []
        for step in range(t):
            out = self.grouper(state, x[:, step], self.first_iters if step == 0 else None)
            slots.append(out["slots"])
            enc_masks.append(out["masks"])
            attn_patches.append(out["attn_patches"])
            state = self.predictor(out["slots"])
        slots = torch.stack(slots, 1)
        dec = self.decoder(slots)
        result = {
            "feats": feats,
            "x": x,
            "slots": slots,
            "enc_masks": torch.stack(enc_masks, 1),
            "enc_attn_patches": torch.stack(attn_patches, 1),
            "dec_masks": dec["masks"],
            "recon": dec["recon"],
        }
        if self.srl_heads:
            result["proj_recon"] = self.proj_dec(dec["recon"])
            result["proj_feats"] = self.proj_dec(feats).detach()
            result["proj_x"] = self.proj_enc(x)
        return result

    def grid(self) -> tuple[int, int]:
        """The (rows, cols) patch grid, taken from the backbone or assumed square."""
        grid = getattr(getattr(self.backbone, "patch_embed", None), "grid_size", None)
        if grid is not None:
            return int(grid[0]), int(grid[1])
        side = math.isqrt(self.n_patches)
        if side * side != self.n_patches:
            raise ValueError(f"n_patches = {self.n_patches} is not a square grid")
        return side, side

    def masks_to_pixels(self, masks: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """Soft masks (B, T, K, N) resized bilinearly to (B, T, K, H, W)."""
        V.check_tensor(masks, "masks", ndim=4, floating=True)
        b, t, k, n = masks.shape
        rows, cols = self.grid()
        maps = masks.reshape(b * t, k, rows, cols)
        maps = F.interpolate(maps, size=size, mode="bilinear", align_corners=False)
        return maps.reshape(b, t, k, *size)

    @torch.no_grad()
    def segment(
        self, video: torch.Tensor, size: tuple[int, int] | None = None, which: str = "decoder"
    ) -> torch.Tensor:
        """Hard masks (B, T, H, W) (int64 slot ids): the soft decoder (or encoder) masks
        resized to ``size`` (default: the video's) and arg-maxed over slots."""
        video = self._check_video(video)
        V.check_choice(which, "which", ("decoder", "encoder"))
        if size is None:
            size = tuple(video.shape[-2:])
        if not isinstance(size, tuple | list) or len(size) != 2:
            raise TypeError(f"size must be an (H, W) pair, got {size!r}")
        size = (V.check_int(size[0], "size", low=1), V.check_int(size[1], "size", low=1))
        was = self.training
        self.eval()
        out = self(video)
        self.train(was)
        masks = out["dec_masks"] if which == "decoder" else out["enc_masks"]
        return self.masks_to_pixels(masks, size).argmax(2)
