"""AnyUp's crop-based self-supervised training (the paper's objective and augmentations).

For an image I of side H, the frozen backbone f gives the low-resolution input
P = f(resize_S(I)) (S = crop_frac * H, the backbone's input size) and, for each of
``num_local_crops`` random S x S crops R aligned to the backbone's stride in I, the target
P_R = f(crop_R(I)) on the backbone's native grid. The upsampler upsamples P, guided by
resize_S(I), to H / stride, the size at which each crop spans exactly its target grid; the
crop's slice is compared with P_R by

    L(F, T) = CosineEmbedding(F, T) + MSE(norm_T(F), norm_T(T)),

norm_T being the per-pixel min-max normalisation by the *target* vector's min and max.
Two regularisers (weight 0.1 each): the output for a colour-augmented guidance image must
match the (detached) output for the clean one at the guidance resolution, and the
area-downsampled output must match P. AdamW optimises the sum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision import augment as A
from iclr26.vision.anyup.model import AnyUp


def reconstruction_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cosine embedding loss plus the MSE of the target-min-max normalised maps, over all
    pixels of (B, C, H, W) maps of the same shape."""
    V.check_tensor(pred, "pred", ndim=4, floating=True)
    V.check_tensor(target, "target", shape=tuple(pred.shape), floating=True)
    p = pred.permute(0, 2, 3, 1).reshape(-1, pred.shape[1])
    t = target.permute(0, 2, 3, 1).reshape(-1, target.shape[1])
    cosine = (1 - F.cosine_similarity(p, t, dim=1, eps=1e-8)).mean()
    lo = t.min(1, keepdim=True).values
    span = t.max(1, keepdim=True).values - lo + 1e-6
    return cosine + F.mse_loss((p - lo) / span, (t - lo) / span)


def as_feature_map(backbone) -> Callable[[torch.Tensor], torch.Tensor]:
    """A callable images -> dense features (B, C, h, w) for a backbone: a timm-protocol ViT
    (its patch tokens as a map), a module with ``forward_features`` returning a 4-D map
    (e.g. ``TinyConvNet``), or any callable that already returns (B, C, h, w)."""
    from iclr26.models.vision import feature_map

    if all(hasattr(backbone, a) for a in ("patch_embed", "blocks", "num_prefix_tokens")):
        return lambda x: feature_map(backbone, x)
    if hasattr(backbone, "forward_features"):
        return backbone.forward_features
    if callable(backbone):
        return backbone
    raise TypeError(f"backbone must be callable, got {type(backbone).__name__}")


def guidance_augment(images: torch.Tensor, generator: torch.Generator | None = None):
    """The photometric augmentation of the guidance image (the subset of the paper's list
    that has a torch counterpart here): colour jitter (0.2, 0.2, 0.3, 0.05) with p = 0.5,
    grayscale p = 0.1, Gaussian blur (sigma 0.3-1.5, kernel 5) p = 0.35, Gaussian noise
    (sigma 0.03, clipped) p = 0.6."""
    out = A.color_jitter(images, 0.2, 0.2, 0.3, 0.05, p=0.5, generator=generator)
    out = A.random_grayscale(out, p=0.1, generator=generator)
    out = A.gaussian_blur(out, (0.3, 1.5), p=0.35, kernel_size=5, generator=generator)
    noisy = torch.rand(len(out), generator=generator)[:, None, None, None] < 0.6
    noise = 0.03 * torch.randn(out.shape, generator=generator)
    return torch.where(noisy.to(out.device), (out + noise.to(out.device)).clamp(0, 1), out)


def backbone_stride(extract: Callable, size: int, device=None) -> tuple[int, int]:
    """(grid side h, stride) of a backbone at an S x S input (S must be a multiple of h)."""
    with torch.no_grad():
        probe = extract(torch.zeros(1, 3, size, size, device=device))
    if not isinstance(probe, torch.Tensor) or probe.dim() != 4:
        raise ValueError("backbones must return dense feature maps (B, C, h, w)")
    h, w = probe.shape[-2:]
    if h != w or size % h:
        raise ValueError(f"backbone grid {h}x{w} must be square and divide its input size {size}")
    return h, size // h


def crop_batch(
    images: torch.Tensor,
    crop: int,
    stride: int,
    num_crops: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(guidance (B, 3, S, S), crops (B * K, 3, S, S), offsets (B * K, 2) in feature cells)
    for square images (B, 3, H, H): the guidance is the whole image resized to S (antialiased
    bilinear); the crops start at multiples of ``stride`` pixels, so the crop at cell
    (r, c) covers cells r..r + S/stride of the H/stride upsampling grid exactly."""
    b, _, side, _ = images.shape
    n_pos = (side - crop) // stride + 1
    offsets = torch.randint(0, n_pos, (b * num_crops, 2), generator=generator)
    rows = offsets[:, 0] * stride
    cols = offsets[:, 1] * stride
    owner = torch.arange(b).repeat_interleave(num_crops)
    idx = torch.arange(crop)
    r_idx = (rows[:, None] + idx[None]).to(images.device)
    c_idx = (cols[:, None] + idx[None]).to(images.device)
    src = images[owner.to(images.device)]  # (B*K, 3, H, H)
    crops = src.gather(2, r_idx[:, None, :, None].expand(-1, 3, -1, side))
    crops = crops.gather(3, c_idx[:, None, None, :].expand(-1, 3, crop, -1))
    guidance = F.interpolate(images, size=(crop, crop), mode="bilinear", antialias=True)
    return guidance.clamp(0, 1), crops, offsets


def training_losses(
    model: nn.Module,
    extract: Callable[[torch.Tensor], torch.Tensor],
    images: torch.Tensor,
    crop: int,
    stride: int,
    num_crops: int = 4,
    w_aug: float = 0.1,
    w_down: float = 0.1,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """The three terms of one training step on square images (B, 3, H, H): ``hr`` (crop
    reconstruction), ``aug`` (augmentation consistency, weighted), ``down`` (downsampling
    consistency, weighted) and their sum ``total``."""
    guidance, crops, offsets = crop_batch(images, crop, stride, num_crops, generator)
    with torch.no_grad():
        lr_feats = extract(guidance)
        targets = extract(crops)
    h = lr_feats.shape[-1]
    up_side = images.shape[-1] // stride
    side = guidance.shape[-1]
    if not hasattr(model, "encode"):  # a plain upsampler module: three full passes
        up = model(guidance, lr_feats, (up_side, up_side))
        clean = None
    else:  # share the clean guidance's encoding between the crop term and the target
        query_map, keys = model.encode(guidance, lr_feats)
        up = model.decode(query_map, keys, lr_feats, (up_side, up_side))
        clean = (query_map, keys)
    dev = up.device
    owner = torch.arange(len(guidance), device=dev).repeat_interleave(num_crops)
    cells = torch.arange(h, device=dev)[None]
    rows = offsets[:, 0, None].to(dev) + cells  # (B*K, h)
    cols = offsets[:, 1, None].to(dev) + cells
    rep = up[owner]
    sliced = rep.gather(2, rows[:, None, :, None].expand(-1, rep.shape[1], -1, up_side))
    sliced = sliced.gather(3, cols[:, None, None, :].expand(-1, rep.shape[1], h, -1))
    losses = {"hr": reconstruction_loss(sliced, targets)}
    zero = up.new_zeros(())
    losses["aug"] = zero
    if w_aug > 0:
        pred = model(guidance_augment(guidance, generator), lr_feats, (side, side))
        with torch.no_grad():
            if clean is None:
                target = model(guidance, lr_feats, (side, side))
            else:
                target = model.decode(clean[0], clean[1], lr_feats, (side, side))
        losses["aug"] = w_aug * reconstruction_loss(pred, target)
    losses["down"] = zero
    if w_down > 0:
        down = F.interpolate(up, size=lr_feats.shape[-2:], mode="area")
        losses["down"] = w_down * reconstruction_loss(down, lr_feats)
    losses["total"] = losses["hr"] + losses["aug"] + losses["down"]
    return losses


def _images(images, name: str = "images") -> torch.Tensor:
    if not isinstance(images, torch.Tensor):
        images = torch.from_numpy(V.check_array(images, name, ndim=4, dtype=np.float32))
    V.check_tensor(images, name, ndim=4, floating=True, low=0.0, high=1.0)
    if images.shape[1] != 3:
        raise ValueError(f"{name} must have 3 channels (N, 3, H, H), got {images.shape[1]}")
    if images.shape[2] != images.shape[3]:
        raise ValueError(f"{name} must be square (N, 3, H, H), got {tuple(images.shape[2:])}")
    return images.float()


def train_anyup(
    backbones: Mapping[str, Callable] | Callable,
    images,
    steps: int = 400,
    batch_size: int = 8,
    crop_frac: float = 0.5,
    num_local_crops: int = 4,
    w_aug: float = 0.1,
    w_down: float = 0.1,
    lr: float = 1e-3,
    weight_decay: float = 1e-5,
    model: nn.Module | None = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable[[int, float], None] | None = None,
    **model_kwargs,
) -> nn.Module:
    """Train an upsampler with the crop objective on frozen ``backbones`` ({name: backbone};
    one backbone is drawn per step, so several can be mixed) and square ``images``
    (N, 3, H, H) in [0, 1] (numpy or torch). ``model`` defaults to ``AnyUp(**model_kwargs)``;
    a :class:`~iclr26.vision.anyup.baselines.SpecificUpsampler` trains the same way. Returns
    the model in eval mode with ``model.history_`` ({"total", "hr", "aug", "down"} per step).
    """
    if not isinstance(backbones, Mapping):
        backbones = {"backbone": backbones}
    if len(backbones) == 0:
        raise ValueError("backbones must name at least one backbone")
    images = _images(images)
    steps = V.check_int(steps, "steps", low=1)
    batch_size = V.check_int(batch_size, "batch_size", low=1)
    crop_frac = V.check_scalar(crop_frac, "crop_frac", low=0.0, high=1.0, low_open=True)
    num_local_crops = V.check_int(num_local_crops, "num_local_crops", low=1)
    w_aug = V.check_scalar(w_aug, "w_aug", low=0.0)
    w_down = V.check_scalar(w_down, "w_down", low=0.0)
    lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
    weight_decay = V.check_scalar(weight_decay, "weight_decay", low=0.0)
    seed = V.check_int(seed, "seed", low=0)
    side = images.shape[-1]
    crop = round(crop_frac * side)
    if crop < 1:
        raise ValueError(f"crop_frac * image side must be at least 1 pixel, got {crop_frac * side}")
    device = torch.device(device)
    names = list(backbones)
    extract = {n: as_feature_map(backbones[n]) for n in names}
    strides = {}
    for n in names:
        _, stride = backbone_stride(extract[n], crop, device)
        if side % stride:
            raise ValueError(
                f"images side {side} must be a multiple of backbone {n!r}'s stride {stride}"
            )
        strides[n] = stride
    if model is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AnyUp(**model_kwargs)
    elif model_kwargs:
        raise TypeError("pass either model or model keyword arguments, not both")
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    history: dict[str, list[float]] = {"total": [], "hr": [], "aug": [], "down": []}
    for step in range(steps):
        name = names[int(torch.randint(len(names), (1,), generator=gen))]
        idx = torch.randint(len(images), (batch_size,), generator=gen)
        batch = images[idx].to(device)
        losses = training_losses(
            model, extract[name], batch, crop, strides[name], num_local_crops, w_aug, w_down, gen
        )
        opt.zero_grad(set_to_none=True)
        losses["total"].backward()
        opt.step()
        for key in history:
            history[key].append(float(losses[key].detach()))
        if progress is not None:
            progress(step, history["total"][-1])
    model.eval()
    model.history_ = history
    return model


OFFICIAL = ("anyup", "anyup_multi_backbone")


def load_official(name: str = "anyup_multi_backbone", device: str = "cpu") -> nn.Module:
    """The authors' released upsampler through ``torch.hub.load("wimmerth/anyup", name)``
    (needs internet and torchvision-free hub code; never called by the tests).

    It returns the authors' own module, which expects ImageNet-normalised images. Its
    checkpoints do not load into :class:`AnyUp` here: the official feature-agnostic layer
    reshapes its grouped-conv output channel-major as (basis, channel) before the softmax,
    which mixes channels and basis filters when C != M, whereas this room implements the
    paper's formula (softmax over the basis per channel, mean over channels)."""
    V.check_choice(name, "name", OFFICIAL)
    return torch.hub.load("wimmerth/anyup", name, pretrained=True, device=device)
