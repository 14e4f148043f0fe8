"""Bad-input cases for the CompMarkGS room (read by tests/framework/test_bad_input.py)."""

import torch

from iclr26.three_d.gs_raster import orbit_cameras
from iclr26.three_d.gs_watermark import (
    AnchorGrowth,
    AnchorGS,
    BinaryHashGrid,
    CompMarkGS,
    ContextGSCodec,
    ExplicitWatermark,
    HACCodec,
    HACDecoded,
    HACLikeCompressor,
    MessageDecoder,
    MessageEncoder,
    QuantizationDistortionLayer,
    explicit_quantize,
    frequency_error,
    haar_dwt,
    haar_idwt,
    held_out_bit_accuracy,
    high_frequency_mask,
    high_pass,
    hsv_loss,
    hue_masks,
    message_bits,
    pixel_filter,
    pretrain_decoder,
    psnr,
    ssim,
    textured_scene,
)

NAN = float("nan")
PTS = torch.tensor([[0.0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]])
PTS_NAN = PTS.clone()
PTS_NAN[0, 0] = NAN
GS = AnchorGS(PTS, feature_dim=4, k=2, voxel=0.2)
DEC = MessageDecoder(4)
CAMS = orbit_cameras(2, width=8, height=8)
VIEWS = torch.rand(2, 8, 8, 3)
VIEWS_NAN = VIEWS.clone()
VIEWS_NAN[0, 0, 0, 0] = NAN
IMG = torch.rand(4, 4, 3)

CASES = [
    ("AnchorGS", "nan", lambda: AnchorGS(PTS_NAN), ValueError, "points"),
    ("AnchorGS", "shape", lambda: AnchorGS(PTS[:, :2]), ValueError, "points"),
    ("AnchorGS", "range", lambda: AnchorGS(PTS, voxel=0.0), ValueError, "voxel"),
    ("AnchorGS", "range", lambda: AnchorGS(PTS, k=0), ValueError, "k"),
    ("AnchorGS", "nan", lambda: AnchorGS.fit(VIEWS_NAN, CAMS, PTS, steps=1), ValueError, "views"),
    (
        "AnchorGS",
        "shape",
        lambda: AnchorGS.fit(VIEWS, CAMS[:1], PTS, steps=1),
        ValueError,
        "length",
    ),
    ("AnchorGS", "type", lambda: GS.render("cam"), TypeError, "camera"),
    ("CompMarkGS", "other", lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0, 1, 1]), ValueError, "message"),
    ("CompMarkGS", "range", lambda: CompMarkGS(GS, DEC, [2, 0, 1, 0]), ValueError, "message"),
    ("CompMarkGS", "nan", lambda: CompMarkGS(GS, DEC, [NAN, 0, 1, 0]), ValueError, "message"),
    ("CompMarkGS", "type", lambda: CompMarkGS(GS, "decoder", [1, 0, 1, 0]), TypeError, "decoder"),
    (
        "CompMarkGS",
        "range",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0], qdl=(-1.0, "learned")),
        ValueError,
        "q0",
    ),
    (
        "CompMarkGS",
        "range",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0], lambdas={"msg": NAN}),
        ValueError,
        "lambdas",
    ),
    (
        "CompMarkGS",
        "nan",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS_NAN, CAMS, steps=1),
        ValueError,
        "views",
    ),
    (
        "CompMarkGS",
        "range",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS, CAMS, steps=0),
        ValueError,
        "steps",
    ),
    ("HACLikeCompressor", "range", lambda: HACLikeCompressor(0.0), ValueError, "step"),
    ("HACLikeCompressor", "nan", lambda: HACLikeCompressor(NAN), ValueError, "step"),
    (
        "HACLikeCompressor",
        "nan",
        lambda: HACLikeCompressor(0.1).encode(torch.tensor([[NAN]])),
        ValueError,
        "features",
    ),
    ("MessageDecoder", "range", lambda: MessageDecoder(0), ValueError, "bits"),
    ("MessageDecoder", "shape", lambda: DEC(torch.rand(2, 8, 8, 4)), ValueError, "images"),
    ("MessageDecoder", "nan", lambda: DEC(VIEWS_NAN), ValueError, "images"),
    (
        "QuantizationDistortionLayer",
        "range",
        lambda: QuantizationDistortionLayer(4, q0=NAN),
        ValueError,
        "q0",
    ),
    (
        "QuantizationDistortionLayer",
        "other",
        lambda: QuantizationDistortionLayer(4, mode="hac"),
        ValueError,
        "mode",
    ),
    (
        "QuantizationDistortionLayer",
        "shape",
        lambda: QuantizationDistortionLayer(4)(torch.zeros(3, 5)),
        ValueError,
        "f",
    ),
    ("haar_dwt", "shape", lambda: haar_dwt(torch.rand(3, 5)), ValueError, "image"),
    ("haar_dwt", "nan", lambda: haar_dwt(torch.full((2, 2), NAN)), ValueError, "image"),
    ("haar_idwt", "shape", lambda: haar_idwt(IMG, IMG, IMG, torch.rand(2, 2)), ValueError, "hh"),
    ("hsv_loss", "shape", lambda: hsv_loss(IMG, torch.rand(4, 5, 3)), ValueError, "target"),
    (
        "hsv_loss",
        "nan",
        lambda: hsv_loss(torch.full((2, 2, 3), NAN), torch.rand(2, 2, 3)),
        ValueError,
        "render",
    ),
    ("hue_masks", "shape", lambda: hue_masks(torch.rand(4, 4)), ValueError, "image"),
    ("message_bits", "range", lambda: message_bits(0), ValueError, "bits"),
    ("pretrain_decoder", "range", lambda: pretrain_decoder(4, steps=0), ValueError, "steps"),
    ("pretrain_decoder", "other", lambda: pretrain_decoder(4, size=9), ValueError, "size"),
    ("pretrain_decoder", "type", lambda: pretrain_decoder(4, device=0), TypeError, "device"),
    ("pretrain_decoder", "other", lambda: pretrain_decoder(4, device="gpu?"), ValueError, "device"),
    (
        "pretrain_decoder",
        "other",
        lambda: pretrain_decoder(4, attacks=("blur",)),
        ValueError,
        "attacks",
    ),
    (
        "pretrain_decoder",
        "range",
        lambda: pretrain_decoder(4, strength=0.0),
        ValueError,
        "strength",
    ),
    ("pretrain_decoder", "nan", lambda: pretrain_decoder(4, lr=NAN), ValueError, "lr"),
    ("MessageEncoder", "range", lambda: MessageEncoder(0), ValueError, "bits"),
    (
        "MessageEncoder",
        "shape",
        lambda: MessageEncoder(4)(torch.rand(2, 8, 8, 3), torch.ones(2, 5)),
        ValueError,
        "messages",
    ),
    (
        "MessageEncoder",
        "nan",
        lambda: MessageEncoder(4)(torch.full((1, 8, 8, 3), NAN), torch.ones(1, 4)),
        ValueError,
        "images",
    ),
    (
        "held_out_bit_accuracy",
        "type",
        lambda: held_out_bit_accuracy(DEC, DEC),
        TypeError,
        "encoder",
    ),
    (
        "held_out_bit_accuracy",
        "other",
        lambda: held_out_bit_accuracy(MessageEncoder(8), DEC),
        ValueError,
        "decoder",
    ),
    (
        "held_out_bit_accuracy",
        "range",
        lambda: held_out_bit_accuracy(MessageEncoder(4), DEC, n=0),
        ValueError,
        "n",
    ),
    # a decoder on another device than the model (the "meta" device stands in for a GPU)
    (
        "CompMarkGS",
        "other",
        lambda: CompMarkGS(GS, MessageDecoder(4).to("meta"), [1, 0, 1, 0]),
        ValueError,
        "decoder",
    ),
    ("psnr", "shape", lambda: psnr(IMG, torch.rand(4, 5, 3)), ValueError, "b"),
    ("psnr", "nan", lambda: psnr(torch.full((2, 2, 3), NAN), torch.rand(2, 2, 3)), ValueError, "a"),
    ("ssim", "nan", lambda: ssim(torch.full((8, 8, 3), NAN), torch.rand(8, 8, 3)), ValueError, "a"),
    ("ssim", "shape", lambda: ssim(torch.rand(8, 8, 3), torch.rand(8, 8)), ValueError, "b"),
    ("textured_scene", "range", lambda: textured_scene(1), ValueError, "n_views"),
    ("textured_scene", "range", lambda: textured_scene(4, 4), ValueError, "size"),
]
EXEMPT = {}
CASES += [
    (
        "frequency_error",
        "shape",
        lambda: frequency_error(IMG, torch.rand(4, 5, 3)),
        ValueError,
        "target",
    ),
    (
        "frequency_error",
        "nan",
        lambda: frequency_error(torch.full((8, 8, 3), NAN), torch.rand(8, 8, 3)),
        ValueError,
        "render",
    ),
    ("high_pass", "nan", lambda: high_pass(torch.full((4, 4), NAN)), ValueError, "gray"),
    ("high_pass", "shape", lambda: high_pass(torch.rand(4, 4, 3)), ValueError, "gray"),
]


def _gaussians(**change):
    g = dict(
        means=torch.zeros(2, 3),
        scales=torch.full((2, 3), 0.1),
        quats=torch.tensor([[1.0, 0, 0, 0], [1.0, 0, 0, 0]]),
        opacities=torch.full((2,), 0.5),
        colors=torch.full((2, 3), 0.5),
    )
    g.update(change)
    return g


G_NAN_MEANS = _gaussians(means=torch.tensor([[NAN, 0, 0], [0.0, 0, 0]]))
CASES += [
    ("AnchorGrowth", "type", lambda: AnchorGrowth("gs"), TypeError, "gs"),
    ("AnchorGrowth", "range", lambda: AnchorGrowth(GS, update_depth=0), ValueError, "update_depth"),
    ("AnchorGrowth", "range", lambda: AnchorGrowth(GS, max_anchors=0), ValueError, "max_anchors"),
    ("AnchorGrowth", "nan", lambda: AnchorGrowth(GS, voxel=NAN), ValueError, "voxel"),
    (
        "AnchorGrowth",
        "shape",
        lambda: AnchorGrowth(GS, inherit=[(GS, "mlp_color")]),
        ValueError,
        "inherit",
    ),
    (
        "AnchorGrowth",
        "range",
        lambda: AnchorGrowth(GS).adjust(
            None, grad_threshold=1e-3, success_threshold=1.5, min_opacity=0.0
        ),
        ValueError,
        "success_threshold",
    ),
    (
        "AnchorGrowth",
        "nan",
        lambda: AnchorGrowth(GS).adjust(
            None, grad_threshold=NAN, success_threshold=0.5, min_opacity=0.0
        ),
        ValueError,
        "grad_threshold",
    ),
    (
        "AnchorGS",
        "range",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=1, grow_every=0),
        ValueError,
        "grow_every",
    ),
    (
        "CompMarkGS",
        "range",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS, CAMS, steps=2, msg_from=2),
        ValueError,
        "msg_from",
    ),
    (
        "CompMarkGS",
        "type",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS, CAMS, steps=2, fag="yes"),
        TypeError,
        "fag",
    ),
    ("explicit_quantize", "nan", lambda: explicit_quantize(G_NAN_MEANS, 6), ValueError, "means"),
    ("explicit_quantize", "range", lambda: explicit_quantize(_gaussians(), 0), ValueError, "bits"),
    (
        "explicit_quantize",
        "range",
        lambda: explicit_quantize(_gaussians(opacities=torch.tensor([0.5, 1.5])), 6),
        ValueError,
        "opacities",
    ),
    (
        "explicit_quantize",
        "other",
        lambda: explicit_quantize({"means": torch.zeros(2, 3)}, 6),
        ValueError,
        "gaussians",
    ),
    (
        "ExplicitWatermark",
        "shape",
        lambda: ExplicitWatermark(_gaussians(colors=torch.rand(2, 4)), DEC, [1, 0, 1, 0]),
        ValueError,
        "colors",
    ),
    (
        "ExplicitWatermark",
        "other",
        lambda: ExplicitWatermark(_gaussians(), DEC, [1, 0, 1, 0, 1, 0]),
        ValueError,
        "message",
    ),
    (
        "ExplicitWatermark",
        "range",
        lambda: ExplicitWatermark(_gaussians(scales=torch.zeros(2, 3)), DEC, [1, 0, 1, 0]),
        ValueError,
        "scales",
    ),
    (
        "ExplicitWatermark",
        "other",
        lambda: ExplicitWatermark(_gaussians(), MessageDecoder(4).to("meta"), [1, 0, 1, 0]),
        ValueError,
        "decoder",
    ),
    (
        "ExplicitWatermark",
        "type",
        lambda: ExplicitWatermark.from_anchor("gs", CAMS[0], DEC, [1, 0, 1, 0]),
        TypeError,
        "gs",
    ),
    (
        "ExplicitWatermark",
        "nan",
        lambda: ExplicitWatermark(_gaussians(), DEC, [1, 0, 1, 0]).fit(VIEWS_NAN, CAMS, steps=1),
        ValueError,
        "views",
    ),
    (
        "ExplicitWatermark",
        "range",
        lambda: ExplicitWatermark(_gaussians(), DEC, [1, 0, 1, 0]).bit_accuracy(CAMS, bits=0),
        ValueError,
        "bits",
    ),
    (
        "high_frequency_mask",
        "nan",
        lambda: high_frequency_mask(torch.full((3, 3), NAN)),
        ValueError,
        "p_err",
    ),
    (
        "high_frequency_mask",
        "shape",
        lambda: high_frequency_mask(torch.rand(3)),
        ValueError,
        "p_err",
    ),
    (
        "high_frequency_mask",
        "range",
        lambda: high_frequency_mask(torch.rand(3, 3), low=0.3, high=0.1),
        ValueError,
        "high",
    ),
    (
        "pixel_filter",
        "shape",
        lambda: pixel_filter(torch.rand(3, 3), torch.ones(4, 4, dtype=torch.bool)),
        ValueError,
        "means2d",
    ),
    (
        "pixel_filter",
        "nan",
        lambda: pixel_filter(torch.full((1, 2), NAN), torch.ones(4, 4, dtype=torch.bool)),
        ValueError,
        "means2d",
    ),
    (
        "pixel_filter",
        "type",
        lambda: pixel_filter(torch.rand(3, 2), torch.ones(4, 4)),
        TypeError,
        "mask",
    ),
    (
        "textured_scene",
        "range",
        lambda: textured_scene(4, 16, init_points=0),
        ValueError,
        "init_points",
    ),
]
# quantization-noise options (HAC's training proxy) and the compressor's attribute steps
CASES += [
    (
        "AnchorGS",
        "range",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=1, feature_noise=0.0),
        ValueError,
        "feature_noise",
    ),
    (
        "AnchorGS",
        "nan",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=1, scaling_noise=NAN),
        ValueError,
        "scaling_noise",
    ),
    (
        "AnchorGS",
        "range",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=1, offset_noise=-0.2),
        ValueError,
        "offset_noise",
    ),
    (
        "AnchorGS",
        "range",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=4, feature_noise=0.2, noise_from=4),
        ValueError,
        "noise_from",
    ),
    (
        "AnchorGS",
        "range",
        lambda: AnchorGS.fit(VIEWS, CAMS, PTS, steps=4, feature_noise=0.2, grow_pause=-1),
        ValueError,
        "grow_pause",
    ),
    (
        "AnchorGS",
        "shape",
        lambda: GS.render(CAMS[0], scaling=torch.ones(3, 3)),
        ValueError,
        "scaling",
    ),
    (
        "AnchorGS",
        "shape",
        lambda: GS.render(CAMS[0], offset=torch.zeros(3, 3, 3)),
        ValueError,
        "offset",
    ),
    (
        "CompMarkGS",
        "nan",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS, CAMS, steps=2, scaling_noise=NAN),
        ValueError,
        "scaling_noise",
    ),
    (
        "CompMarkGS",
        "range",
        lambda: CompMarkGS(GS, DEC, [1, 0, 1, 0]).fit(VIEWS, CAMS, steps=2, offset_noise=0.0),
        ValueError,
        "offset_noise",
    ),
    (
        "HACLikeCompressor",
        "range",
        lambda: HACLikeCompressor(0.4, scaling_step=0.0),
        ValueError,
        "scaling_step",
    ),
    (
        "HACLikeCompressor",
        "nan",
        lambda: HACLikeCompressor(0.4, offset_step=NAN),
        ValueError,
        "offset_step",
    ),
    (
        "HACLikeCompressor",
        "type",
        lambda: HACLikeCompressor(0.4, scaling_step=0.001).attributes("gs"),
        TypeError,
        "gs",
    ),
]

# the real HAC codec
GS_NAN = AnchorGS(PTS, feature_dim=4, k=2, voxel=0.2)
with torch.no_grad():
    GS_NAN.feature[0, 0] = NAN
GS_EMPTY = AnchorGS(PTS, feature_dim=4, k=2, voxel=0.2)
GS_EMPTY.anchor = torch.nn.Parameter(torch.zeros(0, 3))
CODEC = HACCodec(4, 2)
CASES += [
    ("HACCodec", "range", lambda: HACCodec(4, 2, feature_step=0.0), ValueError, "feature_step"),
    ("HACCodec", "nan", lambda: HACCodec(4, 2, scaling_step=NAN), ValueError, "scaling_step"),
    ("HACCodec", "range", lambda: HACCodec(4, 2, offset_step=-1.0), ValueError, "offset_step"),
    ("HACCodec", "type", lambda: HACCodec(4, 2, resolutions=4), TypeError, "resolutions"),
    ("HACCodec", "type", lambda: CODEC.encode("gs"), TypeError, "gs"),
    ("HACCodec", "nan", lambda: CODEC.encode(GS_NAN), ValueError, "gs.feature"),
    (
        "HACCodec",
        "nan",
        lambda: CODEC.encode(GS, torch.full((GS.n_anchors, 4), NAN)),
        ValueError,
        "features",
    ),
    ("HACCodec", "shape", lambda: CODEC.encode(GS, torch.zeros(1, 4)), ValueError, "features"),
    ("HACCodec", "empty", lambda: CODEC.encode(GS_EMPTY), ValueError, "gs"),
    ("HACCodec", "other", lambda: HACCodec(8, 2).encode(GS), ValueError, "gs"),
    ("HACCodec", "range", lambda: CODEC.fit(GS, steps=-1), ValueError, "steps"),
    ("HACCodec", "nan", lambda: CODEC.fit(GS, VIEWS_NAN, CAMS, steps=1), ValueError, "views"),
    ("HACCodec", "other", lambda: CODEC.fit(GS, VIEWS, steps=1), ValueError, "cameras"),
    ("HACCodec", "type", lambda: CODEC.decode("bytes"), TypeError, "data"),
    ("HACCodec", "other", lambda: CODEC.decode(b"not a bitstream"), ValueError, "data"),
    ("HACCodec", "type", lambda: CODEC.steps(None), TypeError, "gs"),
    ("BinaryHashGrid", "range", lambda: BinaryHashGrid((0, 4)), ValueError, "resolutions"),
    ("BinaryHashGrid", "range", lambda: BinaryHashGrid(log2_size=0), ValueError, "log2_size"),
    (
        "HACDecoded",
        "type",
        lambda: HACDecoded("gs", torch.zeros(1, 4), torch.zeros(1, 6), torch.zeros(1, 2, 3)),
        TypeError,
        "gs",
    ),
    (
        "HACDecoded",
        "nan",
        lambda: HACDecoded(
            GS,
            torch.full((GS.n_anchors, 4), NAN),
            torch.ones(GS.n_anchors, 6),
            torch.zeros(GS.n_anchors, 2, 3),
        ),
        ValueError,
        "feature",
    ),
]
CASES += [
    (
        "HACCodec",
        "other",
        lambda: CODEC.decode(b"HAC1" + (2).to_bytes(4, "little") + b"{}"),
        ValueError,
        "data",
    ),
]

# the ContextGS codec
CGS = ContextGSCodec(4, 2)
CGS_FITTED = ContextGSCodec(4, 2).fit(GS, steps=1)
GS_MORE = AnchorGS(torch.rand(12, 3), feature_dim=4, k=2, voxel=0.05)
CASES += [
    (
        "ContextGSCodec",
        "range",
        lambda: ContextGSCodec(4, 2, feature_step=0.0),
        ValueError,
        "feature_step",
    ),
    (
        "ContextGSCodec",
        "nan",
        lambda: ContextGSCodec(4, 2, offset_step=NAN),
        ValueError,
        "offset_step",
    ),
    ("ContextGSCodec", "range", lambda: ContextGSCodec(4, 2, levels=0), ValueError, "levels"),
    (
        "ContextGSCodec",
        "range",
        lambda: ContextGSCodec(4, 2, target_ratio=1.0),
        ValueError,
        "target_ratio",
    ),
    ("ContextGSCodec", "range", lambda: ContextGSCodec(4, 2, hyper_dim=0), ValueError, "hyper_dim"),
    ("ContextGSCodec", "type", lambda: ContextGSCodec(4, 2, context="yes"), TypeError, "context"),
    ("ContextGSCodec", "type", lambda: CGS.encode("gs"), TypeError, "gs"),
    ("ContextGSCodec", "nan", lambda: CGS.encode(GS_NAN), ValueError, "gs.feature"),
    (
        "ContextGSCodec",
        "nan",
        lambda: CGS.encode(GS, torch.full((GS.n_anchors, 4), NAN)),
        ValueError,
        "features",
    ),
    ("ContextGSCodec", "shape", lambda: CGS.encode(GS, torch.zeros(1, 4)), ValueError, "features"),
    ("ContextGSCodec", "empty", lambda: CGS.encode(GS_EMPTY), ValueError, "gs"),
    ("ContextGSCodec", "other", lambda: ContextGSCodec(8, 2).encode(GS), ValueError, "gs"),
    ("ContextGSCodec", "other", lambda: CGS_FITTED.encode(GS_MORE), ValueError, "gs"),
    ("ContextGSCodec", "range", lambda: CGS.fit(GS, steps=-1), ValueError, "steps"),
    ("ContextGSCodec", "nan", lambda: CGS.fit(GS, VIEWS_NAN, CAMS, steps=1), ValueError, "views"),
    ("ContextGSCodec", "other", lambda: CGS.fit(GS, VIEWS, steps=1), ValueError, "cameras"),
    ("ContextGSCodec", "type", lambda: CGS.decode("bytes"), TypeError, "data"),
    ("ContextGSCodec", "other", lambda: CGS.decode(b"not a bitstream"), ValueError, "data"),
    (
        "ContextGSCodec",
        "other",
        lambda: CGS.decode(b"CGS1" + (2).to_bytes(4, "little") + b"{}"),
        ValueError,
        "data",
    ),
    ("ContextGSCodec", "type", lambda: CGS.steps(None), TypeError, "gs"),
    ("ContextGSCodec", "type", lambda: CGS.levels_of(None), TypeError, "gs"),
]
