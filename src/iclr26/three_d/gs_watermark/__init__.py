"""CompMarkGS (ICLR 2026): compression-tolerant watermarking of anchor-based 3DGS. The message
is embedded in anchor features (f^w = f + tanh(f')), trained through a quantization distortion
layer with a learned step, and read by a frozen decoder from the Haar LL band of renders;
anchors grow by Scaffold-GS's rule or by frequency-aware anchor growing (FAG). HAC's codec
(binary hash-grid context, adaptive steps, range-coded bitstream) and ContextGS's (anchor levels
coded coarse to fine with a hyperprior) compress the scene."""

from .anchor import AnchorGS
from .contextgs import ContextGSCodec
from .explicit import ExplicitWatermark, explicit_quantize
from .growing import HIGH_FREQUENCY, ORDINARY, AnchorGrowth, high_frequency_mask, pixel_filter
from .hac import BinaryHashGrid, HACCodec, HACDecoded
from .hidden import MessageEncoder, held_out_bit_accuracy
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
    "HIGH_FREQUENCY",
    "ORDINARY",
    "AnchorGS",
    "AnchorGrowth",
    "ExplicitWatermark",
    "explicit_quantize",
    "high_frequency_mask",
    "pixel_filter",
    "CompMarkGS",
    "BinaryHashGrid",
    "ContextGSCodec",
    "HACCodec",
    "HACDecoded",
    "HACLikeCompressor",
    "MessageDecoder",
    "MessageEncoder",
    "held_out_bit_accuracy",
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
