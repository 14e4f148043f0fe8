"""``AnyUp``: a feature-agnostic, image-guided feature upsampler (an ``nn.Module``).

The image is encoded (a k x k conv and two residual blocks) and rotary-position encoded;
queries are the query encoder's output pooled to the output size, keys are the key
encoder's output pooled to the feature grid, concatenated with the feature-agnostic
descriptor of the L2-normalised features (LFU and two residual blocks) and aggregated
(a 3x3 conv and two residual blocks). Windowed cross-attention then combines the *raw*
input features, so any channel count works and outputs stay in the span of the inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision.anyup.layers import (
    LearnedFeatureUnification,
    ResBlock,
    RoPE2d,
    WindowCrossAttention,
    conv_encoder,
)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def check_size(size, name: str = "output_size") -> tuple[int, int]:
    """An (H, W) pair of positive integers (an int means a square)."""
    if isinstance(size, int) and not isinstance(size, bool):
        size = (size, size)
    if isinstance(size, torch.Size):
        size = tuple(size)
    if not isinstance(size, tuple | list) or len(size) != 2:
        raise TypeError(f"{name} must be an int or an (H, W) pair, got {size!r}")
    return (V.check_int(size[0], f"{name}[0]", low=1), V.check_int(size[1], f"{name}[1]", low=1))


def check_inputs(
    image, features, output_size, unit_range: bool = True
) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int]]:
    """Validate an (image, features, output_size) triple of an upsampler.

    ``image`` (B, 3, H, W) float, finite (values in [0, 1] when ``unit_range``); ``features``
    (B, C, h, w) float, finite, any C, whose grid has the image's aspect (H * w == W * h) and
    divides the image (H % h == W % w == 0, so image and grid cover the same field of view);
    ``output_size`` (default (H, W)) no smaller than (h, w)."""
    V.check_tensor(image, "image", ndim=4, floating=True)
    if image.shape[1] != 3:
        raise ValueError(f"image must have 3 channels (B, 3, H, W), got {image.shape[1]}")
    if unit_range:
        V.check_tensor(image, "image", low=0.0, high=1.0)
    V.check_tensor(features, "features", ndim=4, floating=True)
    if features.shape[0] != image.shape[0]:
        raise ValueError(
            f"features must have the image batch size {image.shape[0]}, got {features.shape[0]}"
        )
    (hh, ww), (lh, lw) = image.shape[-2:], features.shape[-2:]
    if hh * lw != ww * lh:
        raise ValueError(
            f"features grid {lh}x{lw} does not match the aspect of the image {hh}x{ww} "
            f"(features {lh}:{lw} vs image {hh}:{ww}; one stride on both axes is required)"
        )
    if hh % lh or ww % lw:
        raise ValueError(
            f"features grid {lh}x{lw} must divide the image size {hh}x{ww} (same field of view)"
        )
    size = (hh, ww) if output_size is None else check_size(output_size)
    if size[0] < lh or size[1] < lw:
        raise ValueError(
            f"output_size {size} must not be smaller than the features grid ({lh}, {lw})"
        )
    return image, features, size


def check_chunk(q_chunk_size) -> int | None:
    return None if q_chunk_size is None else V.check_int(q_chunk_size, "q_chunk_size", low=1)


class AnyUp(nn.Module):
    """Feature-agnostic upsampler: ``up(image, features, output_size=None, q_chunk_size=None)``
    maps features (B, C, h, w) of any C, from any encoder, to (B, C, H_out, W_out) guided by
    the image (B, 3, H, W); the output size defaults to the image size.

    ``normalize_image=True`` (default) expects images in [0, 1] and applies the ImageNet
    normalisation inside; with ``False`` the image is used as given (e.g. already normalised).
    Defaults are the paper's (qk_dim 128, 4 heads, window ratio 0.1, LFU kernel 5,
    ``lfu_dim = qk_dim``, image-encoder kernel 1)."""

    def __init__(
        self,
        qk_dim: int = 128,
        num_heads: int = 4,
        window_ratio: float = 0.1,
        kernel_size_lfu: int = 5,
        lfu_dim: int | None = None,
        init_gaussian_derivatives: bool = False,
        kernel_size: int = 1,
        normalize_image: bool = True,
    ):
        super().__init__()
        self.qk_dim = V.check_int(qk_dim, "qk_dim", low=4)
        self.num_heads = V.check_int(num_heads, "num_heads", low=1)
        if self.qk_dim % self.num_heads:
            raise ValueError(f"qk_dim ({qk_dim}) must be divisible by num_heads ({num_heads})")
        if self.qk_dim % 4:
            raise ValueError(f"qk_dim must be a multiple of 4 (2-D RoPE), got {qk_dim}")
        self.window_ratio = V.check_scalar(window_ratio, "window_ratio", low=0.0, high=1.0)
        self.kernel_size_lfu = V.check_int(kernel_size_lfu, "kernel_size_lfu", low=1)
        if self.kernel_size_lfu % 2 == 0:
            raise ValueError(f"kernel_size_lfu must be odd, got {kernel_size_lfu}")
        self.lfu_dim = self.qk_dim if lfu_dim is None else V.check_int(lfu_dim, "lfu_dim", low=1)
        self.kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
        if self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")
        self.normalize_image = V.check_bool(normalize_image, "normalize_image")
        init_gd = V.check_bool(init_gaussian_derivatives, "init_gaussian_derivatives")
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), False)

        qk = self.qk_dim
        self.image_encoder = conv_encoder(3, qk, self.kernel_size)
        self.rope = RoPE2d(qk)
        self.query_encoder = conv_encoder(qk, qk, 1)
        self.key_encoder = conv_encoder(qk, qk, 1)
        self.feature_encoder = self._feature_encoder(init_gd)
        self.aggregation = conv_encoder(2 * qk, qk, 3)
        self.cross_attention = WindowCrossAttention(qk, self.num_heads, self.window_ratio)

    def _feature_encoder(self, init_gaussian_derivatives: bool) -> nn.Module:
        """LFU (the feature-agnostic layer) followed by two residual blocks."""
        lfu = LearnedFeatureUnification(
            self.lfu_dim, self.kernel_size_lfu, init_gaussian_derivatives
        )
        return nn.Sequential(
            lfu, ResBlock(self.lfu_dim, self.qk_dim), ResBlock(self.qk_dim, self.qk_dim)
        )

    def _check_features(self, features: torch.Tensor) -> None:
        """Hook for feature-specific variants (any channel count is fine here)."""

    def encode_image(self, image: torch.Tensor) -> torch.Tensor:
        """E_I(I) with RoPE: (B, qk_dim, H, W)."""
        if self.normalize_image:
            image = (image - self.mean.to(image.dtype)) / self.std.to(image.dtype)
        return self.rope.encode_map(self.image_encoder(image))

    def keys(self, encoded: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """Agg([pool_{h x w}(E_K(E_I(I))) ; encoder(normalize_C(P))]): (B, qk_dim, h, w)."""
        k_img = F.adaptive_avg_pool2d(self.key_encoder(encoded), features.shape[-2:])
        k_feat = self.feature_encoder(F.normalize(features, dim=1))
        return self.aggregation(torch.cat([k_img, k_feat], 1))

    def encode(self, image: torch.Tensor, features: torch.Tensor):
        """The output-size-independent part of the forward pass: (query map at the image
        resolution, keys (B, qk_dim, h, w)). Inputs are not validated here."""
        encoded = self.encode_image(image)
        return self.query_encoder(encoded), self.keys(encoded, features)

    def decode(
        self,
        query_map: torch.Tensor,
        keys: torch.Tensor,
        features: torch.Tensor,
        size: tuple[int, int],
        q_chunk_size: int | None = None,
        return_attention: bool = False,
    ):
        """Queries pooled to ``size``, then windowed cross-attention over the raw features."""
        queries = F.adaptive_avg_pool2d(query_map, size)
        return self.cross_attention(queries, keys, features, q_chunk_size, return_attention)

    def forward(
        self,
        image: torch.Tensor,
        features: torch.Tensor,
        output_size: tuple[int, int] | int | None = None,
        q_chunk_size: int | None = None,
        return_attention: bool = False,
    ):
        image, features, size = check_inputs(image, features, output_size, self.normalize_image)
        q_chunk_size = check_chunk(q_chunk_size)
        self._check_features(features)
        query_map, keys = self.encode(image, features)
        return self.decode(query_map, keys, features, size, q_chunk_size, return_attention)

    def upsample(
        self,
        image: torch.Tensor,
        features: torch.Tensor,
        size: tuple[int, int] | int | None = None,
        q_chunk_size: int | None = None,
    ) -> torch.Tensor:
        """``self(image, features, size)`` without gradients, in eval mode."""
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad():
                return self(image, features, size, q_chunk_size)
        finally:
            self.train(was_training)
