"""Consistency Geodesic Bridge (CGB, camera-ready name E-Bridge; Hou, Zhu & Hou, ICLR 2026).

Image restoration by a bridge over a truncated horizon [0, T0] that starts from the
entropy-regularised point ``(1 - T0) y + T0 eps``, keeps the noise level of a pretrained
rectified flow so that network serves as the geodesic guidance field, and inverts the bridge
equation in closed form; consistency training along the bridge makes 1 network evaluation
enough. Here the "foundation" flow is a small UNet trained on scikit-image patches; the
full-scale path (``ConsistencyRestorer.from_diffusers``) runs the same trainer and sampler on a
diffusers Flux transformer, a Flux ControlNet and the VAE latent space."""

from iclr26.generative.cgb.baselines import BrownianBridgeRestorer, FlowMatchingRestorer
from iclr26.generative.cgb.bridge import CGBBridge, RectifiedFlowSchedule
from iclr26.generative.cgb.degrade import degrade, image_patches
from iclr26.generative.cgb.evaluate import psnr, ssim
from iclr26.generative.cgb.flux import FluxConsistencyRestorer, FluxVelocity
from iclr26.generative.cgb.network import TinyUNet, train_velocity_model
from iclr26.generative.cgb.restorer import CGBRestorer, GeodesicGuidance, bridge_sample

ConsistencyRestorer = CGBRestorer

__all__ = [
    "BrownianBridgeRestorer",
    "CGBBridge",
    "CGBRestorer",
    "ConsistencyRestorer",
    "FlowMatchingRestorer",
    "FluxConsistencyRestorer",
    "FluxVelocity",
    "GeodesicGuidance",
    "RectifiedFlowSchedule",
    "TinyUNet",
    "bridge_sample",
    "degrade",
    "image_patches",
    "psnr",
    "ssim",
    "train_velocity_model",
]
