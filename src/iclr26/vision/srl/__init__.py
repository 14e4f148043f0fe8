"""SRL: synergistic representation learning for unsupervised video object-centric learning.

A SlotContrast-style video slot model over frozen features (:class:`SlotVideoModel`) trained
with two extra contrastive objectives that let the encoder and decoder teach each other: the
encoder's sharp slot assignments deblur the decoder's reconstruction (``L_dec``), the
decoder's spatially consistent masks denoise the encoder's features (``L_enc``), after a
warm-up slot-redundancy regularizer (``L_reg``) that gives every entity its own slot
(:class:`SRLLoss`). :class:`SlotContrastLoss` alone is the base model's objective.
"""

from iclr26.vision.srl.evaluation import boundary_sharpness, evaluate_discovery, mask_noise
from iclr26.vision.srl.losses import (
    SlotContrastLoss,
    SRLLoss,
    decoder_deblur_loss,
    encoder_denoise_loss,
    redundant_slots,
    slot_contrast_loss,
    slot_redundancy_loss,
)
from iclr26.vision.srl.model import MLPDecoder, SlotAttention, SlotVideoModel, backbone_tokens
from iclr26.vision.srl.training import lr_factor, train_slot_model

__all__ = [
    "MLPDecoder",
    "SRLLoss",
    "SlotAttention",
    "SlotContrastLoss",
    "SlotVideoModel",
    "backbone_tokens",
    "boundary_sharpness",
    "decoder_deblur_loss",
    "encoder_denoise_loss",
    "evaluate_discovery",
    "lr_factor",
    "mask_noise",
    "redundant_slots",
    "slot_contrast_loss",
    "slot_redundancy_loss",
    "train_slot_model",
]
