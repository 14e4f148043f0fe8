"""CompMarkGS (ICLR 2026): compression-tolerant watermarking of anchor-based 3DGS. The message
is embedded in anchor features (f^w = f + tanh(f')), trained through a quantization distortion
layer with a learned step, and read by a frozen decoder from the Haar LL band of renders."""

from .anchor import AnchorGS
from .losses import frequency_error, high_pass, hsv_loss, hue_masks, psnr, ssim
from .scene import textured_scene
from .watermark import (
    CompMarkGS,
    HACLikeCompressor,
    MessageDecoder,
    QuantizationDistortionLayer,
    message_bits,
    pretrain_decoder,
)
from .wavelet import haar_dwt, haar_idwt

__all__ = [
    "AnchorGS",
    "CompMarkGS",
    "HACLikeCompressor",
    "MessageDecoder",
    "QuantizationDistortionLayer",
    "frequency_error",
    "haar_dwt",
    "high_pass",
    "haar_idwt",
    "hsv_loss",
    "hue_masks",
    "message_bits",
    "pretrain_decoder",
    "psnr",
    "ssim",
    "textured_scene",
]
